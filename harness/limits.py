"""Every bound the harness puts on its own work and output, in one place, each with why.

Valid input can ask for unbounded work (a policy's million-character reason, a scenario that takes ten
thousand commands, a thousand processes on two cores); these caps keep a run's time, memory and files
bounded. Over a cap, the harness says so: a one-line error, or a cut marked as one in the text itself.
"""

from __future__ import annotations

__all__ = [
    "CASE_TIMEOUT_MAX_S",
    "COMPACT_ABOVE",
    "COUNT_MAX",
    "DEFAULT_CASE_TIMEOUT_S",
    "EXPLORE_SEED_COUNT_MAX",
    "FILE_SIZE_MAX_BYTES",
    "NAME_MAX",
    "NESTING_DEPTH_MAX",
    "PLACE_MAX",
    "REPORT_LISTED_MAX",
    "REVISION_MAX",
    "SEED_COUNT_MAX",
    "STRING_MAX",
    "TEXT_MAX",
    "TIMELINE_DRAWN_MAX",
    "VALUE_COUNT_MAX",
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
#: Characters kept of any text a policy gives (a reason, an owner, an error it raises).
STRING_MAX = 2000
#: The longest text a scenario gives the world (an operation, a target, a model, a digest, an owner, a reason):
#: each is copied into every record that names it, so a 50,000-character model made a case's recovery.json 1.2
#: MB. An OCI reference with its sha256 digest fits in 256.
TEXT_MAX = 256
#: Characters kept of where a policy raised its error, said after it (a module's dotted name and a function's are
#: not bounded).
PLACE_MAX = 300
#: The longest name (a policy's, a scenario's: lower-case letters, digits, ``_`` and ``-``) and revision (a
#: policy's, a scenario's): each goes into every case report and reproduce line, and names go into file names.
NAME_MAX = REVISION_MAX = 64
#: Other counts from the command line (``check --seed-count``, ``--concurrency``, ``explore --swarm``, a
#: ``--shard``'s count) and the pytest plugin's ``--harness-seed-count``: far above use, far below harm.
COUNT_MAX = 10_000
#: Seeds per schedule of ``harness explore --seed-count``: each multiplies every schedule's cases.
EXPLORE_SEED_COUNT_MAX = 100
#: Largest scenario file read, in bytes (1 MiB). The shipped scenarios are under 4 KB; a finding written by
#: ``harness explore`` is a scenario plus a few faults. The file is refused before it is parsed. Its aliases may
#: not unfold it into more characters of text than this either.
FILE_SIZE_MAX_BYTES = 1_048_576
#: Deepest nesting of lists and mappings in a scenario file (the top-level mapping is depth 1). A scenario needs
#: 5 (an operator event's trigger); Python's own stack, which the YAML composer and pydantic use, holds about 1,000.
NESTING_DEPTH_MAX = 50
#: Most values (scalars, lists, mappings) in one scenario file, an alias counting as every value it repeats. The
#: shipped scenarios hold under 100; this bounds the time spent parsing and validating a file.
VALUE_COUNT_MAX = 10_000
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
