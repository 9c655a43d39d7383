"""Input the harness refuses: one exception family, each message one line naming the file, the field and the fix.

The command line catches ``InputError`` and exits with status 2; nothing else in the harness prints these.
"""

from __future__ import annotations

__all__ = ["InputError", "RunFailed", "one_line"]


class InputError(ValueError):
    """Input that cannot be used; the message is one line naming what is wrong and how to fix it."""


class RunFailed(InputError):
    """The harness cannot go on with a run (its folder cannot be written, a worker keeps dying outside any
    case); one line saying how to resume it. The command line exits with status 1."""


def one_line(text: object, limit: int = 200) -> str:
    """``text`` with its whitespace (newlines included) collapsed, cut to ``limit`` characters."""
    return " ".join(str(text).split())[:limit]
