"""Input the harness refuses: one exception family, each message one line naming the file, the field and the fix.

The command line catches ``InputError`` and exits with status 2; nothing else in the harness prints these.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic import ValidationError

__all__ = ["InputError", "RunFailed", "one_line", "wrong_field"]


class InputError(ValueError):
    """Input that cannot be used; the message is one line naming what is wrong and how to fix it."""


class RunFailed(InputError):
    """The harness cannot go on with a run (its folder cannot be written, a worker keeps dying outside any
    case); one line saying how to resume it. The command line exits with status 1."""


def one_line(text: object, limit: int = 200) -> str:
    """``text`` with its whitespace (newlines included) collapsed, cut to ``limit`` characters."""
    return " ".join(str(text).split())[:limit]


def wrong_field(error: ValidationError) -> str:
    """The first wrong field a validation of a file found: ``field 'a.0.b': what it should be (+N more)``, the
    names pydantic gives the members of a union (``list[constrained-int]``, a TypedDict's) left out of the path."""
    first = error.errors()[0]
    parts = [str(p) for p in first["loc"] if not (isinstance(p, str) and ("[" in p or p.startswith("_")))]
    more = f" (+{error.error_count() - 1} more)" if error.error_count() > 1 else ""
    return f"field '{'.'.join(parts) or '(top level)'}': {first['msg']}{more}"
