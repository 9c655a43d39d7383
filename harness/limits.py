"""Every bound the harness puts on its own work and output, in one place, each with why.

Valid input can ask for unbounded work (a policy's million-character reason, a scenario that takes ten
thousand commands, a thousand processes on two cores); these caps keep a run's time, memory and files
bounded. Over a cap, the harness says so: a one-line error, or a cut marked as one in the text itself.
"""

from __future__ import annotations

__all__ = [
    "CASE_TIMEOUT_MAX_S",
    "COMPACT_ABOVE",
    "DEFAULT_CASE_TIMEOUT_S",
    "REPORT_LISTED_MAX",
    "SEED_COUNT_MAX",
    "STRING_MAX",
    "TIMELINE_DRAWN_MAX",
    "cut",
]

#: Seeds per cell of ``harness run --seed-count``: a million in flat memory (seeds are a range, cases stream).
SEED_COUNT_MAX = 1_000_000
#: A cell with more seeds than this writes compact records (``--records auto``): one gzipped JSON line per case
#: in ``records-<piece>.jsonl.gz``, and a recovery.json only for the cases that are not correct.
COMPACT_ABOVE = 1000
#: Wall-clock seconds one case may take (``--case-timeout``); a case of the shipped grid takes milliseconds.
DEFAULT_CASE_TIMEOUT_S = 60.0
#: The most ``--case-timeout`` may be (a day), wherever a case's budget is given: the command line, the pytest
#: plugin, a reproduce command that replay reads.
CASE_TIMEOUT_MAX_S = 86_400.0
#: Characters kept of any text a policy gives (a reason, an owner, an error it raises), and of its revision.
STRING_MAX = 2000
#: Timeline entries drawn in one timeline picture; the rest are counted in its title.
TIMELINE_DRAWN_MAX = 200
#: The failing cases report.html lists under each drawn timeline (the other cases of that policy, scenario and
#: outcome); the rest are counted, and summary.csv lists every one. The page draws one timeline per such group,
#: so its size grows with the grid's cells, not with its seeds (300 failing seeds drawn one by one made 25 MB).
REPORT_LISTED_MAX = 20


def cut(text: str, limit: int = STRING_MAX) -> str:
    """``text`` within ``limit`` characters, the cut said in the text: ``...[cut: N more characters]``; a lone
    surrogate in it (text no UTF-8 file can hold: bytes a policy decoded with ``surrogateescape``, say) is
    written as its escape, ``\\udcff``."""
    if not text.isascii():
        text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    if len(text) <= limit:
        return text
    return f"{text[:limit]}...[cut: {len(text) - limit} more characters]"
