"""``python -m harness``: the command line."""

import os
import sys

from harness.cli import main

try:
    status = main()
    sys.stdout.flush()
except BrokenPipeError:
    # The reader went away (``harness list | head``): not an error of ours; say nothing more.
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    status = 0
raise SystemExit(status)
