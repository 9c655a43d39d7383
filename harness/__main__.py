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
if status == 130:  # interrupted: said, and exiting as documented
    # CPython exits by SIGINT instead, whatever status it is given, once a KeyboardInterrupt has ended code it
    # was given as text to run (``exec`` of a string: dataclasses and namedtuples build their methods so, as
    # modules are imported). A Ctrl-C that lands there comes on to the harness as usual, caught and said, yet
    # leaves that mark: a caller saw -2, not 130, for about one interrupt in six at start-up. A line run the same
    # way that ends well clears the mark.
    try:
        import ctypes

        ctypes.pythonapi.PyRun_SimpleString(b"pass")
    except Exception:  # a Python without ctypes: it exits as it would have
        pass
raise SystemExit(status)
