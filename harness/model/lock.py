"""A run folder's lock: a run holds it for as long as it writes there (the kernel lets it go when the process
ends, however it ends); a reader asks whether it is held, without writing anything in the folder."""

from __future__ import annotations

import fcntl
import time
from pathlib import Path
from typing import IO

__all__ = ["LOCK_FILE", "held", "take"]

LOCK_FILE = ".lock"
#: Tries at a lock before a folder is said to be in use, a few milliseconds apart: ``held`` holds a shared
#: lock for an instant, and a run starting at that instant must not take it for another run.
_LOCK_TRIES = 5


def take(handle: IO[str], kind: int) -> bool:
    """Take ``kind`` (shared or exclusive) on ``handle`` without waiting long; whether it was taken."""
    for attempt in range(_LOCK_TRIES):
        try:
            fcntl.flock(handle, kind | fcntl.LOCK_NB)
            return True
        except OSError:
            if attempt + 1 < _LOCK_TRIES:
                time.sleep(0.01)
    return False


def held(folder: Path) -> bool:
    """Whether a harness run holds ``folder`` now. Raises ``OSError`` when its lock file is there and cannot be
    read (another user's run, say)."""
    try:
        handle = open(folder / LOCK_FILE, encoding="utf-8")  # noqa: SIM115 (closed below)
    except FileNotFoundError:
        return False  # no run ever held it
    try:
        return not take(handle, fcntl.LOCK_SH)
    finally:
        handle.close()  # closing releases a shared lock taken
