"""``python -m harness``: the command line."""

import os
import sys

from harness.cli import main

try:
    status = main()
    sys.stdout.flush()
except BrokenPipeError:
    # The reader went away (``harness list | head``) while the last lines were written: not an error of ours; say
    # nothing more, and exit as a command whose reader went away does (it was 0, as if it had all been read).
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    status = 141
raise SystemExit(status)
