"""Input the harness refuses: one exception family, each message one line naming the file, the field and the fix.

The command line catches ``InputError`` and exits with status 2; nothing else in the harness prints these.
"""

from __future__ import annotations

import contextlib
import difflib
import errno
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic import ValidationError

__all__ = [
    "InputError",
    "NotWritten",
    "OutlivesReader",
    "RunFailed",
    "no_room",
    "one_line",
    "one_of",
    "wrong_field",
]


class InputError(ValueError):
    """Input that cannot be used; the message is one line naming what is wrong and how to fix it."""


class RunFailed(InputError):
    """The harness cannot go on with a run (its folder cannot be written, a worker keeps dying outside any
    case); one line saying how to resume it. The command line exits with status 1."""


class NotWritten(RunFailed):
    """A command's files could not be written in ``folder`` (a full disk, say): its message says what to do, and
    ``reason`` is the system's word, for a caller that words it for its own command."""

    def __init__(self, message: str, folder: Path, reason: str) -> None:
        super().__init__(message)
        self.folder, self.reason = folder, reason


#: What the system answers when a file cannot be written for want of room or permission: the user's to mend. Any
#: other error (a file missing, say) may be the harness's own bug, and is reported as one.
#: EPERM is what an immutable folder (``chattr +i``) or a filesystem that refuses a rename answers, even to root.
_NO_ROOM = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM})


def no_room(exc: OSError) -> bool:
    """Whether ``exc`` says a file cannot be written there (no room, a quota, a read-only disk, no permission)."""
    return exc.errno in _NO_ROOM


def one_line(text: object, limit: int = 200) -> str:
    """``text`` with its whitespace (newlines included) collapsed, cut to ``limit`` characters."""
    return " ".join(str(text).split())[:limit]


#: What ``cut_keeping_place`` keeps of an error at the least, before where the policy raised it.
ERROR_KEPT = 27
#: How a policy's error ends when the harness knows where the policy raised it (see ``harness.sim.worker``).
_PLACE = " (at line "


def cut_keeping_place(text: object, limit: int) -> str:
    """``text`` on one line, at most ``limit`` characters: a long one is cut in its middle, marked ``...``, so that
    where the policy raised it (`` (at line N of MODULE, in FUNCTION)``, its end) is kept whole, as long as that
    leaves ``ERROR_KEPT`` characters of the error before it."""
    line = " ".join(str(text).split())
    if len(line) <= limit:
        return line
    at = line.rfind(_PLACE)
    place = line[at:] if at >= 0 and line.endswith(")") else ""
    if not place or len(place) > limit - 3 - ERROR_KEPT:
        return f"{line[: limit - 3]}..."
    return f"{line[: limit - 3 - len(place)]}...{place}"


#: Names an error lists in full as the ones to choose from; of more, it says where they are all listed.
LISTED_MAX = 12


def nearly(given: str, known: Sequence[str]) -> str | None:
    """The one of ``known`` that ``given`` nearly spells, if any: close to it (difflib's ratio 0.8 or more), or,
    for a name too short for a ratio to tell, the only one it begins (``at`` for ``at_s``: a unit left off) or the
    only one of the same letters in another order (``nht`` for ``nth``)."""
    close = difflib.get_close_matches(given, known, n=1, cutoff=0.8)
    if close:
        return close[0]
    for alike in (lambda name: len(given) >= 2 and name.startswith(given), lambda name: sorted(name) == sorted(given)):
        found = [name for name in known if alike(name)]
        if len(found) == 1:
            return found[0]
    return None


def one_of(given: str, known: Sequence[str], listed: str) -> str:
    """The fix for a name that is none of ``known``: ``did you mean X?`` when one is close to ``given`` (a typo),
    then the names themselves, a dozen at most (``listed`` says where to see more than that)."""
    folded = {name.casefold(): name for name in known}  # Retry_New_Key is retry_new_key mistyped too
    close = difflib.get_close_matches(given.casefold(), list(folded), n=1, cutoff=0.8)
    mean = f"did you mean {folded[close[0]]}? Else use " if close else "use "
    if len(known) > LISTED_MAX:
        return f"{mean}one of the {len(known)} {listed}"
    return f"{mean}one of {', '.join(known) or '(none)'}"


def wrong_field(error: ValidationError) -> str:
    """The first wrong field a validation of a file found: ``field 'a.0.b': what it should be (+N more)``, the
    names pydantic gives the members of a union (``list[constrained-int]``, a TypedDict's) left out of the path."""
    first = error.errors()[0]
    parts = [str(p) for p in first["loc"] if not (isinstance(p, str) and ("[" in p or p.startswith("_")))]
    more = f" (+{error.error_count() - 1} more)" if error.error_count() > 1 else ""
    return f"field '{'.'.join(parts) or '(top level)'}': {first['msg']}{more}"


class OutlivesReader:
    """A stream (standard error, or a worker's output) that outlives its reader: once the program reading it goes
    away (``2>&1 | head -1``), what is still to say goes nowhere and the command carries on to its own end and exit
    status. A long run's first progress line must not stop it half-written (it did, and exited 0), nor a policy's
    print in a worker end its case as a policy error."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self._gone = False

    def write(self, text: str) -> int:
        if not self._gone:
            try:
                return int(self._stream.write(text))
            except BrokenPipeError:
                self._lost()
        return len(text)

    def flush(self) -> None:
        if not self._gone:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._lost()

    def _lost(self) -> None:
        self._gone = True
        # What the stream still buffers goes nowhere too, so that Python's flush at exit does not complain.
        with contextlib.suppress(OSError, ValueError, AttributeError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), self._stream.fileno())

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)
