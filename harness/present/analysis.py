"""Saved ``recovery.json`` files into pandas, and the comparison tables people read.

``load`` takes any mix of run folders and folders of ``recovery.json`` files (a Polyaxon run, offline or
pushed, carries no case file: its ``outputs.cases_path`` names the folder that does), and returns one row per
case. An unknown metric stays a missing value (``<NA>``), never 0, and its
reason is in the ``unknown`` column. Files that cannot be read are skipped and listed, with the reason, in
``frame.attrs["skipped"]``.

``load_explorations`` does the same for ``explore.json`` files (a local exploration's, or each Polyaxon run's):
one row per (policy, scenario) explored, with the shards of a sharded exploration summed, and one row per
distinct finding.
"""

from __future__ import annotations

import contextlib
import fnmatch
import functools
import gc
import gzip
import hashlib
import json
import math
import os
import re
import shlex
import time
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NotRequired, ParamSpec, TypeVar

import pandas as pd
from pydantic import ConfigDict, TypeAdapter, ValidationError, with_config
from pydantic_core import from_json, to_json
from typing_extensions import TypedDict

from harness.check.registry import METRIC_NAMES, METRICS, PROPERTIES, by_name
from harness.errors import wrong_field
from harness.model import (
    MANIFEST,
    OUTCOMES,
    PASSING,
    RECORDS_GLOB,
    REPORT_HTML,
    REQUEST,
    RUN_RECORD,
    needed_findings,
    record_ref,
)
from harness.model.lock import held
from harness.present.shape import INPUT_COLUMNS, MalformedCase, checked_case

__all__ = [
    "INPUT_COLUMNS",
    "PASSING",
    "POLICY_VERDICTS",
    "RATE_MIN_CASES",
    "Explorations",
    "Reading",
    "Skipped",
    "compare_runs",
    "load",
    "load_explorations",
    "metric_table",
    "order_policies",
    "outcome_counts",
    "pass_k",
    "percent",
    "policy_verdicts",
    "rate_table",
    "rates",
    "read_case",
    "undecided",
    "undecided_cases",
    "violated_in",
    "wilson_interval",
]

#: pandas' nullable dtype for each kind of metric value: an unknown value stays <NA>, never 0.
_DTYPES = {"count": "Int64", "flag": "boolean", "duration": "Float64"}


@dataclass(frozen=True, slots=True)
class Skipped:
    path: str
    reason: str


@dataclass(frozen=True, slots=True)
class Reading:
    """How far ``load`` has got: files read of all it found, the cases kept so far, and the seconds it took."""

    files_read: int
    files: int
    cases: int
    elapsed_s: float


def _files(root: Path) -> list[str]:
    """Every recovery.json and compact record file under ``root`` (``root`` itself if it is a file), in the
    order their cases are kept: case folders before Polyaxon copies, recovery.json before compact records, then
    by path with its numbers read as numbers (seed-9 before seed-10). One walk of the tree, paths kept as text
    (pathlib's two ``rglob`` and a ``Path`` per file took half the time of loading 100,000 case folders); each
    is written as ``str(Path)`` writes it."""
    top = str(root)
    if root.is_file():
        return [top]
    found = [
        os.path.join(folder, name)
        for folder, _, names in os.walk(top)
        for name in names
        if name == "recovery.json" or fnmatch.fnmatchcase(name, RECORDS_GLOB)
    ]
    if top == ".":  # os.walk says ./cases/..., pathlib cases/...
        found = [path[2:] for path in found]
    return sorted(found, key=lambda p: (_polyaxon_run(p) is not None, p.endswith(".gz"), _numbers_as_numbers(p), p))


def _numbers_as_numbers(path: str) -> list[str | int]:
    """``path`` as text and numbers in turn (text first, so any two compare part by part): ``seed-10`` sorts
    after ``seed-9``, as a reader expects."""
    parts: list[str | int] = re.split(r"(\d+)", path)
    parts[1::2] = [int(n) for n in parts[1::2]]
    return parts


def _cases(path: str) -> Iterator[tuple[Any, str, bytes]]:
    """The case dicts a file holds, each with where it is and a digest of its content: one for a recovery.json,
    one per line of a compact record file (its path ``<file>#seed-<n>``). Raises OSError or ValueError for a
    file that cannot be read.

    The digest is of the case's compact JSON, what a compact record holds, so a case digests the same in
    either kind of file (a recovery.json is the same JSON, indented) or written again by another tool."""
    if path.endswith(".jsonl.gz"):
        with gzip.open(path, "rb") as lines:
            # A corrupt file is skipped, not half-kept (gzip checks every byte of it as the last line is read);
            # each case's timeline, most of its size and needed by no column, is left unparsed (a file of 5,000
            # cases held whole took 300 MB).
            found = [(_line(line), _digest(line.rstrip(b"\n"))) for line in lines]
        for n, (data, digest) in enumerate(found, 1):
            if isinstance(data, Unreadable):  # one line damaged: that case is skipped, not the file's others
                yield data, f"{path} line {n}", digest
                continue
            seed = data.get("seed") if isinstance(data, dict) else None
            yield data, f"{path}#seed-{seed}", digest
    else:
        # Parsed whole: nothing else checks a recovery.json's timeline, and one damaged is a damaged file.
        with open(path, "rb") as handle:
            text = handle.read()
        data = _parsed(text)
        try:
            digest = _digest(to_json(data))
        except ValueError:  # text pydantic cannot write (a lone surrogate the standard library read): its bytes
            digest = _digest(text)
        if isinstance(data, dict):
            data.pop("timeline", None)
        yield data, path, digest


#: Where a compact record's timeline begins and ends: the record is pydantic's JSON of a case report on one
#: line, its timeline the list before ``reproduce``. In JSON text a quote inside a string is always escaped,
#: so neither can be met inside a value.
_TIMELINE, _AFTER_TIMELINE = b'"timeline":[', b'],"reproduce":'


@dataclass(frozen=True, slots=True)
class Unreadable:
    """A line of a compact record file that is not JSON: why."""

    reason: str


def _line(line: bytes) -> Any:
    """One compact record's case without its timeline, or ``Unreadable`` when the line is not JSON."""
    try:
        return _without_timeline(line)
    except (ValueError, RecursionError) as exc:
        reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)[:120]
        return Unreadable(f"malformed: {type(exc).__name__}: {reason}")


def _run_of(file: str) -> str:
    """The run folder a case file is in: the folder above its ``cases/`` (the file's own folder if none)."""
    path = Path(file)
    parts = path.parts
    for i in range(len(parts) - 1, -1, -1):
        if parts[i] == "cases":
            return str(Path(*parts[:i]))
    return str(path.parent)


def _without_timeline(line: bytes) -> Any:
    """One compact record's case, parsed without its timeline (most of its bytes, needed by no column); a line
    that does not have the shape of one is parsed whole, its timeline then dropped."""
    start, end = line.find(_TIMELINE), line.rfind(_AFTER_TIMELINE)
    if 0 < start < end:
        with contextlib.suppress(ValueError):
            return from_json(line[:start] + line[end + 2 :])
    data = _parsed(line)
    if isinstance(data, dict):
        data.pop("timeline", None)
    return data


def _parsed(text: bytes) -> Any:
    """JSON text parsed by pydantic's parser (twice as fast as the standard library's); what it refuses (a
    byte-order mark, UTF-16, a lone surrogate) is parsed by the standard library, which says why when it too
    cannot."""
    try:
        return from_json(text)
    except ValueError:
        return json.loads(text)


def read_case(path: Path | str) -> dict[str, Any]:
    """The case a frame row's ``path`` names, whole: a recovery.json, or one line of a compact record file
    (``<file>#seed-<n>``), the lines of the file that are not JSON passed over. Raises OSError or ValueError when
    it cannot be read, or is not there."""
    record = record_ref(path)
    data: Any = None
    if record is None:
        data = json.loads(Path(path).read_bytes())
    else:
        file, seed = record
        with gzip.open(file, "rb") as lines:
            for line in lines:
                try:
                    case = json.loads(line)
                except ValueError:  # a damaged line is not the case: load() skips it and keeps the file's others
                    continue
                if isinstance(case, dict) and str(case.get("seed")) == seed:
                    data = case
                    break
    if not isinstance(data, dict):
        raise ValueError(f"{path}: no such case")
    return data


def _digest(text: bytes) -> bytes:
    """A case's digest, over all it holds but its reproduce command: that says how the run was asked for (a
    scenario by its name or by a path, from one folder or another), not what the case showed, and two runs of
    one case asked for two ways are the same case."""
    return hashlib.blake2b(_REPRODUCE.sub(b"", text, count=1), digest_size=_DIGEST_SIZE).digest()


#: The reproduce command in a case's compact JSON (the only place ``,"reproduce":"`` can stand: within a string,
#: every quote is escaped).
_REPRODUCE = re.compile(rb',"reproduce":"(?:[^"\\]|\\.)*"')


_DIGEST_SIZE = 16


def _holds(digests: bytes, digest: bytes) -> bool:
    """Whether ``digests`` (digests end to end; almost always one) holds ``digest``."""
    return digests == digest or any(
        digests[i : i + _DIGEST_SIZE] == digest for i in range(0, len(digests), _DIGEST_SIZE)
    )


def _polyaxon_run(path: Path | str) -> str | None:
    """The Polyaxon run a file belongs to, for ``.../runs/<uuid>/outputs/...`` paths."""
    parts = path.parts if isinstance(path, Path) else path.split(os.sep)
    for i in range(len(parts) - 2):
        if parts[i] == "runs" and parts[i + 2] == "outputs":
            return parts[i + 1]
    return None


def _row(data: dict[str, Any], source: str, path: str) -> dict[str, Any]:
    row: dict[str, Any] = {"source": source, "path": path, "polyaxon_run": _polyaxon_run(path)}
    for column in INPUT_COLUMNS:
        row[column] = data[column]
    row["outcome"], row["verdict"] = data["outcome"], data["verdict"]
    metrics = data["metrics"]
    for name in METRIC_NAMES:
        row[name] = metrics.get(name)
    unknown = data.get("unknown") or {}
    row["unknown_metrics"] = ", ".join(sorted(unknown))
    checks = data.get("checks") or {}
    # A property can be violated with its count unknown (a duplicate the replies witness under a hidden ledger):
    # its metric is <NA>, and this says it is false all the same.
    row["violated"] = ", ".join(name for name in _PROPERTY_ORDER if checks.get(name) == "false")
    row["unknown"] = "; ".join(f"{k}: {v}" for k, v in sorted(unknown.items()))
    row["anomalies"] = len(data.get("anomalies") or ())
    row["attempts"] = len(data.get("attempts") or ())
    row["reproduce"] = data.get("reproduce")
    row["error"] = data.get("error")
    return row


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _without_cycle_collection(function: Callable[_P, _R]) -> Callable[_P, _R]:
    """``function`` with Python's cycle collector paused while it runs (as it was, after).

    Loading builds millions of small objects and no cycles: the collector's full passes, each over every object
    kept so far, were a third of the time of loading 300,000 compact records (17.1 s, 12.2 s without), and
    more the more cases a run holds."""

    def paused(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        enabled = gc.isenabled()
        gc.disable()
        try:
            return function(*args, **kwargs)
        finally:
            if enabled:
                gc.enable()

    # Not ``@functools.wraps``: mutmut 3.8.1 leaves a decorated function's body unmutated.
    functools.update_wrapper(paused, function)
    return paused


#: The files a run writes beside its cases: given to ``load`` in place of the run's folder, each is said to be one.
_RUN_FILES = frozenset({"summary.csv", "coverage.json", MANIFEST, RUN_RECORD, REQUEST, REPORT_HTML, "explore.json"})


@_without_cycle_collection
def load(
    paths: Path | str | Iterable[Path | str], *, quiet: bool = True, progress: Callable[[Reading], object] | None = None
) -> pd.DataFrame:
    """One row per case from every ``recovery.json`` and compact record file (``records-*.jsonl.gz``) under
    ``paths``.

    A case is known by its policy, scenario, their revisions and its seed, and by its content (its compact
    JSON, whichever kind of file holds it). Within one run folder, a case present twice (a compact record and
    the recovery.json written beside it for a case that is not correct) is kept once; within one given path,
    another case under the same name (two runs of one cell in one folder, say) is kept too, and listed in
    ``attrs["clashes"]``. ``source`` says which given path a row came from, so two runs can be
    loaded and compared. Safe to compare:

    - an exact copy of a case already loaded from another run folder or given path (same identity, same content
      but for its reproduce command, in either kind of file) is dropped, and counted in ``attrs["duplicates"]``:
      two copies of one run do not count twice, whether given as two paths or found under one;
    - a policy loaded at several revisions is kept apart: its rows are labelled ``name@revision`` in ``policy``
      (``attrs["relabelled"]`` lists them), so no table merges two revisions into one cell; so is a scenario
      (``scenario``, ``attrs["relabelled_scenarios"]``): a file edited between two runs, or a user's file named
      like a shipped one, with a revision of its own;
    - cases of one identity that another given path loaded with other results (a file changed without a new
      revision, or the harness changed) are kept, and said once per cell and pair of paths in
      ``attrs["conflicts"]``;
    - run folders that began and did not end (a manifest, no run.json) are listed in ``attrs["incomplete"]``,
      and those a run is still writing in ``attrs["running"]`` too.

    ``progress`` is told how far the loading has got after each file (a compact record file holds up to 5,000
    cases), the last time once every file is read: a million compact records take about 40 s here.
    """
    return _load(paths, quiet=quiet, progress=progress)


def _load(
    paths: Path | str | Iterable[Path | str], *, quiet: bool, progress: Callable[[Reading], object] | None
) -> pd.DataFrame:
    """``load``'s work, undecorated: mutmut 3.8.1 leaves a decorated function's body unmutated."""
    started = time.perf_counter()
    if isinstance(paths, str | Path):
        paths = [paths]
    # Column by column, not a dict per row (a dict per row held three times the finished frame's memory), and
    # the strings that repeat (names, revisions, outcomes) held once each.
    columns: dict[str, list[Any]] = {name: [] for name in _columns()}
    shared: dict[str, str] = {}
    skipped: list[Skipped] = []
    loaded: dict[tuple[Any, ...], bytes] = {}
    # Which given path first loaded each identity, and how many cases of a cell a later path holds with other
    # results under the same identity (a file changed without a new revision, or the harness changed).
    first_given: dict[tuple[Any, ...], int] = {}
    differing: Counter[tuple[str, str, str, str, int, int]] = Counter()
    duplicates = 0
    clashes: list[Skipped] = []
    incomplete: list[str] = []
    running: list[str] = []
    # Every file first, so that progress can say how many there are.
    listed: list[tuple[Path | str, list[str]]] = []
    for given in paths:
        root = Path(given)
        if not str(given).strip():  # Path("") is the current folder: an unset variable would load all under it
            skipped.append(Skipped(str(given), "an empty path (not the current folder): give a run folder"))
            continue
        if not root.exists():
            skipped.append(Skipped(str(root), "no such file or folder"))
            continue
        if root.is_file() and root.name in _RUN_FILES:  # a run's own file, not a case: "malformed" said nothing
            skipped.append(Skipped(str(root), f"the run's {root.name}, not a case: load its run folder, {root.parent}"))
            continue
        stopped, writing = _incomplete(root)
        incomplete += stopped
        running += writing
        # Case folders before Polyaxon copies, recovery.json before compact records: the kept path is the
        # stable one, and a case that is not correct keeps the file its timeline is drawn beside.
        case_files = _files(root)
        if not case_files:  # a folder that is no run (a scenario folder, a Polyaxon run's, a typo's neighbour): said
            if writing:
                why = "no case written yet: a harness run is writing it now (listed as incomplete)"
            elif stopped:
                why = "no case written yet: the run was stopped before its first case (listed as incomplete)"
            elif (root / "explore.json").is_file():
                why = "an exploration (explore.json), not a run: load its findings with load_explorations"
            elif (root / "run.plx.json").is_file():
                why = (
                    "a Polyaxon run tracked by harness run, which holds no case file: load the folder its "
                    "outputs.cases_path names (the run folder's cases/<policy>)"
                )
            else:
                why = "no recovery.json or compact records under it: not a run folder"
            skipped.append(Skipped(str(root), why))
        listed.append((given, case_files))
    files, files_read = sum(len(found) for _, found in listed), 0
    several = len(listed) > 1
    # The digests of the cases kept under each identity: from this path, and from every path so far.
    seen: dict[tuple[Any, ...], bytes] = {}
    # The same, within each run folder (by the folder): a case's recovery.json and its compact record are one case.
    in_run: dict[str, dict[tuple[Any, ...], bytes]] = {}
    for number, (given, found_files) in enumerate(listed):
        seen, in_run = {}, {}
        for path in found_files:
            if progress is not None and files_read:
                progress(Reading(files_read, files, len(columns["seed"]), time.perf_counter() - started))
            files_read += 1
            try:
                found = list(_cases(path))
            except (OSError, ValueError, EOFError, zlib.error) as exc:  # zlib: a damaged compact record file
                skipped.append(Skipped(path, f"malformed: {type(exc).__name__}: {str(exc)[:120]}"))
                continue
            # Every case of a file is of one run (a compact file holds up to 5,000).
            of_run = in_run.setdefault(_run_of(path), {})
            for data, where, digest in found:
                if isinstance(data, Unreadable):
                    skipped.append(Skipped(where, data.reason))
                    continue
                try:
                    data = checked_case(data)
                except MalformedCase as exc:
                    skipped.append(Skipped(where, str(exc)))
                    continue
                key = (
                    data["policy"],
                    data["policy_revision"],
                    data["scenario"],
                    data["scenario_revision"],
                    data["seed"],
                )
                if _holds(of_run.get(key, b""), digest):  # the case's other file in its run (its compact record)
                    continue
                of_run[key] = of_run.get(key, b"") + digest
                elsewhere = loaded.get(key, b"")
                if _holds(elsewhere, digest):  # the very case, from another copy of the run
                    duplicates += 1
                    continue
                loaded[key] = elsewhere + digest
                if several:  # (a dict entry per case: 63 MB a million, kept only when there is another path)
                    earlier = first_given.setdefault(key, number)
                    if earlier != number:
                        differing[(*key[:4], earlier, number)] += 1
                here = seen.get(key, b"")
                seen[key] = here + digest
                if here:  # kept: it is another case, under the same name (two runs in one folder, say)
                    clashes.append(
                        Skipped(
                            where,
                            f"{data['policy']} (revision {data['policy_revision']}) x {data['scenario']} (revision "
                            f"{data['scenario_revision']}) seed {data['seed']} is also another case under {given}, "
                            "with other results: both kept; load the runs as separate paths to tell them apart",
                        )
                    )
                for name, value in _row(data, str(given), where).items():
                    if name in _REPEATED and isinstance(value, str):
                        value = shared.setdefault(value, value)
                    columns[name].append(value)
    if progress is not None and files:
        progress(Reading(files, files, len(columns["seed"]), time.perf_counter() - started))
    conflicts = [
        Skipped(
            str(listed[later][0]),
            f"{n} {'case' if n == 1 else 'cases'} of {policy} (revision {p_rev}) x {scenario} (revision {s_rev}) "
            f"{'has' if n == 1 else 'have'} other results "
            f"than under {listed[earlier][0]}, under the same revisions: a policy or scenario file changed without a "
            "new revision, or the harness changed; both kept, in one cell: load the runs apart and compare them "
            "with compare_runs, or give the changed file a new revision",
        )
        for (policy, p_rev, scenario, s_rev, earlier, later), n in differing.items()
    ]
    relabelled = _keep_revisions_apart(columns, "policy")
    # A scenario file edited between two runs, or a user's file named like a shipped one, is another world:
    # merged under one name, its seeds would be counted as more cases of one cell.
    relabelled_scenarios = _keep_revisions_apart(columns, "scenario")
    # What only the reading needed (about 300 bytes a case) goes before the frame is built.
    for index in (loaded, first_given, seen, in_run):
        index.clear()
    frame = _frame(columns)
    frame.attrs.update(
        skipped=skipped,
        duplicates=duplicates,
        relabelled=relabelled,
        relabelled_scenarios=relabelled_scenarios,
        incomplete=incomplete,
        running=running,
        clashes=clashes,
        conflicts=conflicts,
    )
    if not quiet:
        for s in skipped:
            print(f"skipped {s.path}: {s.reason}")
        for s in [*clashes, *conflicts]:
            print(f"{s.path}: {s.reason}")
        if duplicates:
            print(f"dropped {duplicates} cases loaded twice (exact copies from another run folder or given path)")
        for name in relabelled:
            print(f"policy {name} was loaded at several revisions: its rows are labelled {name}@<revision>")
        for name in relabelled_scenarios:
            print(f"scenario {name} was loaded at several revisions: its rows are labelled {name}@<revision>")
        for folder in incomplete:
            if folder in running:
                print(f"{folder}: incomplete (a harness run is still writing it)")
            else:
                again = shlex.quote(str(Path(folder).absolute()))  # a command that runs from any folder
                print(f"{folder}: incomplete (the run was stopped); resume: python -m harness run --resume {again}")
    return frame


def _incomplete(root: Path) -> tuple[list[str], list[str]]:
    """Run folders at or under ``root`` that began and did not end: a manifest, or only the request a run writes
    before it plans its grid, and no run.json; and those of them a run is writing now (its lock held)."""
    if root.is_file():
        return [], []
    folders = {f.parent for name in (MANIFEST, REQUEST) for f in [root / name, *root.glob(f"*/{name}")] if f.is_file()}
    unfinished = [f for f in sorted(folders) if not (f / RUN_RECORD).is_file()]
    return [str(f) for f in unfinished], [str(f) for f in unfinished if _held(f)]


def _held(folder: Path) -> bool:
    try:
        return held(folder)
    except OSError:  # its lock cannot be read (another user's run): whether it runs cannot be told; said stopped
        return False


def _keep_revisions_apart(columns: dict[str, list[Any]], column: str) -> list[str]:
    """Label the rows of a policy (``column`` ``policy``) or a scenario (``scenario``) loaded at several revisions
    ``name@revision``; return those names."""
    names, revisions = columns[column], columns[f"{column}_revision"]
    seen: dict[str, set[str]] = {}
    for name, revision in zip(names, revisions, strict=True):
        seen.setdefault(name, set()).add(revision)
    mixed = sorted(name for name, kept in seen.items() if len(kept) > 1)
    if mixed:
        columns[column] = [f"{n}@{r}" if n in mixed else n for n, r in zip(names, revisions, strict=True)]
    return mixed


#: The columns whose strings repeat from case to case.
_REPEATED = frozenset(
    {"source", *INPUT_COLUMNS, "outcome", "verdict", "violated", "unknown_metrics", "unknown", "error"}
)


def _columns() -> list[str]:
    return [
        "source",
        "path",
        "polyaxon_run",
        *INPUT_COLUMNS,
        "outcome",
        "verdict",
        *METRIC_NAMES,
        "violated",
        "unknown_metrics",
        "unknown",
        "anomalies",
        "attempts",
        "reproduce",
        "error",
    ]


def _frame(columns: dict[str, list[Any]]) -> pd.DataFrame:
    """The columns as a frame, in nullable dtypes, so an unknown metric is <NA> and never silently becomes 0 or
    NaN-as-float. Each list is let go as soon as its column is built, straight in its final dtype: the lists
    held beside the whole frame, and 19 columns converted twice, made the peak of loading a run about three
    times the frame it left (tracemalloc, 30,000 compact cases: 2,227 bytes a case against 755)."""
    dtypes: dict[str, str] = {m.name: _DTYPES[m.value] for m in METRICS}
    dtypes.update(seed="Int64", outcome="string", verdict="string", anomalies="int64", attempts="int64")
    built = {name: pd.Series(columns.pop(name), dtype=dtypes.get(name)) for name in _columns()}
    return pd.DataFrame(built, copy=False)


def wilson_interval(successes: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion (95% by default); (nan, nan) when ``n`` is 0."""
    if n == 0:
        return (math.nan, math.nan)
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    # At p = 0 or 1 the bound on that side is exactly 0 or 1; computed, it comes out a rounding error short (an
    # interval of 100,000 correct cases of 100,000 read [99.996%->99.999%], leaving out its own estimate).
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return (low, high)


def pass_k(successes: int, n: int, k: int) -> float:
    """The chance that k runs drawn without replacement from these n all succeed: C(c, k) / C(n, k).

    The unbiased estimate of pass^k from n observed runs; nan when fewer than k runs were observed.
    """
    if k < 1 or n < k:
        return math.nan
    return math.comb(successes, k) / math.comb(n, k)


_PROPERTY_NAMES = frozenset(m.name for m in PROPERTIES)
_PROPERTY_ORDER = tuple(m.name for m in PROPERTIES)


def violated_in(frame: pd.DataFrame, name: str) -> pd.Series:
    """Per case, whether property ``name`` was judged violated (its ``violated`` cell names it), its count known
    or not."""
    return frame["violated"].fillna("").str.split(", ").map(lambda names: name in names).astype(bool)


def undecided(unknown_metrics: str, violated: str = "") -> bool:
    """Whether a case left some safety property unknown (its ``unknown_metrics`` cell lists it, or ``*``: a case
    the harness could not judge gives one reason for every metric at once). A property its ``violated`` cell
    names was decided, false, though its count is unknown."""
    judged = violated.split(", ")
    return any((name in _PROPERTY_NAMES and name not in judged) or name == "*" for name in unknown_metrics.split(", "))


def undecided_cases(frame: pd.DataFrame) -> int:
    """How many of the frame's cases left some safety property undecided (``undecided``)."""
    violated = frame["violated"].fillna("") if "violated" in frame else [""] * len(frame)
    return sum(undecided(u, v) for u, v in zip(frame["unknown_metrics"], violated, strict=True))


def _counted(outcome: str | Iterable[str]) -> tuple[str, tuple[str, ...]]:
    """The column a rate's hits go in, and the outcomes it counts: one (``"correct"``), or several
    (``PASSING``: ``"correct or escalated"``, what the gate passes). An outcome no case can have is refused."""
    given = (outcome,) if isinstance(outcome, str) else tuple(outcome)
    wrong = [o for o in given if o not in OUTCOMES]
    if wrong or not given:
        shown = repr(wrong[0]) if wrong else "()"
        raise ValueError(f"outcome {shown} is not an outcome; the outcomes: {', '.join(OUTCOMES)}")
    chosen = tuple(o for o in OUTCOMES if o in given)  # in the outcomes' order, whatever order a set gives
    return " or ".join(chosen), chosen


def rates(frame: pd.DataFrame, outcome: str | Iterable[str] = "correct", k: int = 3) -> pd.DataFrame:
    """Per policy x scenario: cases, how many ended ``outcome`` (or any of several: ``PASSING`` counts the cases
    the gate passes, correct or escalated), the rate with its Wilson 95% interval, pass^k, and how many cases left
    a safety property unknown (no evidence is not the same as no problem)."""
    label, chosen = _counted(outcome)
    records = []
    for (policy, scenario), group in frame.groupby(["policy", "scenario"], sort=False):
        n = len(group)
        hits = int(group["outcome"].isin(chosen).sum())
        low, high = wilson_interval(hits, n)
        records.append(
            {
                "policy": policy,
                "scenario": scenario,
                "cases": n,
                label: hits,
                "rate": hits / n if n else math.nan,
                "wilson_low": low,
                "wilson_high": high,
                f"pass^{k}": pass_k(hits, n, k),
                "unknown": undecided_cases(group),
            }
        )
    return pd.DataFrame.from_records(records)


#: Fewer cases than this in a cell: the rate is shown as a count (``3/3``), without an interval that would say
#: little (three cases give [44%-100%] for a perfect score).
RATE_MIN_CASES = 20


def rate_table(frame: pd.DataFrame, outcome: str | Iterable[str] = "correct", k: int = 3) -> pd.DataFrame:
    """A policy x scenario table of readable cells: ``67% [51%-80%] pass^3 0.30 · 1 unknown`` where a cell has
    ``RATE_MIN_CASES`` cases or more; ``2/3`` below that, with ``· same at every seed`` when the seeds changed
    nothing in the outcome or the metrics (near-deterministic: more seeds would say no more). The rate is of
    ``outcome``: by default ``correct``, where a safe escalation counts as a miss as an unsafe case does; with
    ``PASSING``, of the cases the gate passes (correct or escalated)."""
    label, _ = _counted(outcome)
    if frame.empty:  # nothing loaded (a folder without cases): an empty table, as the other tables give
        return pd.DataFrame()
    r = rates(frame, outcome, k)
    steady = _steady(frame)

    def cell(row: pd.Series) -> str:
        if row["cases"] < RATE_MIN_CASES:
            text = f"{row[label]}/{row['cases']}"
            if row["cases"] > 1 and steady.get((row["policy"], row["scenario"]), False):
                text += " · same at every seed"
            if row["unknown"]:
                text += f" · {row['unknown']} unknown"
            return text
        text = f"{percent(row['rate'])} [{percent(row['wilson_low'])}-{percent(row['wilson_high'])}]"
        value = row[f"pass^{k}"]
        text += f" pass^{k} {value:.2f}" if not math.isnan(value) else f" pass^{k} n<{k}"
        if row["unknown"]:
            text += f" · {row['unknown']} unknown"
        return text

    r["cell"] = r.apply(cell, axis=1)
    return _pivot(r, frame)


def percent(x: float) -> str:
    """``x`` as a whole percentage, or with as many decimals (up to 3) as it takes not to read as 0% or 100% when
    it is neither: the interval of 3,000 correct cases of 3,000 is ``[99.9%-100%]``, not ``[100%-100%]``."""
    for decimals in range(4):
        text = f"{x:.{decimals}%}"
        if not 0 < x < 1 or text not in (f"{0:.{decimals}%}", f"{1:.{decimals}%}"):
            return text
    return "<0.001%" if x < 0.5 else ">99.999%"


def _steady(frame: pd.DataFrame) -> dict[tuple[str, str], bool]:
    """Per (policy, scenario): whether every seed gave the same outcome and the same counts and flags (durations
    move with the latencies a seed draws, and say nothing about what happened)."""
    columns = ["outcome", *(m.name for m in METRICS if m.value != "duration")]
    # Every case the same, column by column (an unknown value is a value of its own).
    distinct = frame.groupby(["policy", "scenario"], sort=False)[columns].nunique(dropna=False)
    return {key: bool(same) for key, same in (distinct == 1).all(axis=1).items()}


#: How a policy fares over the cases run: no violation and every action accounted for or escalated; a safety
#: property violated (or an action abandoned); or no violation seen but some case the evidence could not decide.
POLICY_VERDICTS = ("safe", "unsafe", "undecided")


#: The outcomes a verdict's first failure is taken from, worst first (a harness error last: the harness failed,
#: not the policy, but it is what keeps the policy undecided).
_FIRST_FAILURE = ("incorrect", "abandoned", "unresolved", "harness_error")


def policy_verdicts(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per policy (in the frame's policy order): its verdict over every case run, the properties it
    violated, its cases by outcome (escalated and abandoned apart), and its first failure: the case the run
    named first, that is its worst outcome, then its first scenario (in the frame's order), then its lowest
    seed."""
    records = []
    for policy, group in frame.groupby("policy", sort=False):
        outcomes = group["outcome"]
        violated = [
            m.name
            for m in PROPERTIES
            if (group[m.name].fillna(0).astype(float) > 0).any() or violated_in(group, m.name).any()
        ]
        if outcomes.isin(("incorrect", "abandoned")).any():
            verdict = "unsafe"
        elif outcomes.isin(("unresolved", "harness_error")).any():
            verdict = "undecided"
        else:
            verdict = "safe"
        failing = group[outcomes.isin(_FIRST_FAILURE)]
        first = None
        if not failing.empty:
            scenario_rank = {name: i for i, name in enumerate(dict.fromkeys(group["scenario"]))}
            ranked = failing.assign(
                _worst=failing["outcome"].map(_FIRST_FAILURE.index), _scenario=failing["scenario"].map(scenario_rank)
            )
            first = ranked.sort_values(["_worst", "_scenario", "seed"], kind="stable").iloc[0]
        record: dict[str, Any] = {
            "policy": policy,
            "verdict": verdict,
            "scenarios": group["scenario"].nunique(),
            "cases": len(group),
            **{o: int((outcomes == o).sum()) for o in OUTCOMES},
            "violated": ", ".join(violated) or "-",
            "first_failure": (
                f"{first['scenario']} seed {first['seed']}: {first['outcome']}" if first is not None else "-"
            ),
            "first_failure_path": str(first["path"]) if first is not None else None,
        }
        records.append(record)
    return pd.DataFrame.from_records(records)


def order_policies(frame: pd.DataFrame, order: Iterable[str], scenarios: Iterable[str] = ()) -> pd.DataFrame:
    """The frame with its policies in ``order`` and, within each, its scenarios in ``scenarios`` (the grid's, as
    the run's printed table has them), any others after them in their own order."""
    ranks = {
        column: {name: i for i, name in enumerate(dict.fromkeys([*given, *frame[column]]))}
        for column, given in (("policy", order), ("scenario", scenarios))
    }
    return frame.sort_values(
        ["policy", "scenario"], key=lambda s: s.map(ranks[str(s.name)]), kind="stable"
    ).reset_index(drop=True)


def metric_table(frame: pd.DataFrame, metric: str) -> pd.DataFrame:
    """A policy x scenario table of one metric over the seeds: its mean (min-max when they differ), and how
    many cases left it unknown. A cell with no known value says ``unknown``, never 0. A property judged violated
    with its count unknown (a duplicate the replies witness under a hidden ledger) is counted apart, as
    ``violated x3, count unknown``: unknown is only the count."""
    by_name(metric)  # a KeyError naming the known metrics
    # One grouped pass (a group at a time cost 0.15 s a table on the default grid); the statistics skip <NA>.
    keys = [frame["policy"], frame["scenario"]]
    cells = frame[metric].astype("Float64").groupby(keys, sort=False)
    stats = pd.DataFrame({"mean": cells.mean(), "low": cells.min(), "high": cells.max(), "known": cells.count()})
    stats["unknown"] = cells.size() - stats["known"]
    # Of the unknown counts, those of a property judged violated all the same: "violated", not merely unknown.
    witnessed = frame[metric].isna() & violated_in(frame, metric) if metric in _PROPERTY_NAMES else None
    stats["witnessed"] = 0 if witnessed is None else witnessed.groupby(keys, sort=False).sum()
    records = []
    for (policy, scenario), mean, low, high, known, unknown, violated in stats.itertuples():
        if known == 0:
            said = [f"violated x{violated}, count unknown"] if violated else []
            text = " · ".join([*said, f"unknown x{unknown - violated}"] if unknown > violated else said)
        else:
            text = f"{mean:.3g}"
            apart = _apart(low, high)
            if apart is not None:
                text += f" ({apart})"
            if violated:
                text += f" · {violated} violated, count unknown"
            if unknown > violated:
                text += f" · {unknown - violated} unknown"
        records.append({"policy": policy, "scenario": scenario, "cell": text})
    return _pivot(pd.DataFrame.from_records(records), frame)


def _apart(low: float, high: float) -> str | None:
    """``low-high`` with as many significant digits as it takes (3 to 9) for them to read apart: three made
    14.77 and 14.76 both ``14.8``, a range that read as one number. ``None`` when nine do not (equal, or apart
    by a rounding error): no range."""
    for digits in range(3, 10):
        shown = f"{low:.{digits}g}", f"{high:.{digits}g}"
        if shown[0] != shown[1]:
            return "-".join(shown)
    return None


def outcome_counts(frame: pd.DataFrame) -> pd.DataFrame:
    """A policy x scenario table of outcomes over the seeds: ``correct 3`` or ``correct 2, unresolved 1``."""
    records = []
    for (policy, scenario), group in frame.groupby(["policy", "scenario"], sort=False):
        counts = group["outcome"].value_counts()
        text = ", ".join(f"{o} {int(counts[o])}" for o in OUTCOMES if o in counts)
        records.append({"policy": policy, "scenario": scenario, "cell": text})
    return _pivot(pd.DataFrame.from_records(records), frame)


def _pivot(records: pd.DataFrame, frame: pd.DataFrame) -> pd.DataFrame:
    if records.empty:
        return pd.DataFrame()
    policies = list(dict.fromkeys(frame["policy"]))
    scenarios = list(dict.fromkeys(frame["scenario"]))
    table = records.pivot(index="policy", columns="scenario", values="cell")
    table = table.reindex(index=policies, columns=scenarios).fillna("-")
    # Rows are policies and columns scenarios; axis names would only add an empty header row.
    table.index.name = table.columns.name = None
    return table


def compare_runs(before: pd.DataFrame, after: pd.DataFrame) -> pd.DataFrame:
    """Case by case, what changed between two runs: outcome, verdict and revisions, before and after.

    ``present`` says where a case is: ``both`` runs, ``before`` only or ``after`` only; ``changed`` is true for a
    case of both runs whose outcome differs (a case only one run has did not change: it is new, or gone)."""
    keys = ["policy", "scenario", "seed"]
    cols = [*keys, "policy_revision", "scenario_revision", "outcome", "verdict", *(m.name for m in PROPERTIES)]
    merged = before[cols].merge(after[cols], on=keys, how="outer", suffixes=("_before", "_after"), indicator=True)
    merged["present"] = merged.pop("_merge").map({"both": "both", "left_only": "before", "right_only": "after"})
    both = merged["present"] == "both"
    merged["changed"] = (both & (merged["outcome_before"] != merged["outcome_after"])).astype(bool)
    return merged.sort_values(keys).reset_index(drop=True)


@dataclass(frozen=True, slots=True)
class Explorations:
    """Explorations loaded from ``explore.json`` files: one row per (policy, scenario), one per finding."""

    explorations: pd.DataFrame
    findings: pd.DataFrame
    skipped: tuple[Skipped, ...]


_EXPLORED_BY = ("policy", "policy_revision", "scenario", "scenario_revision", "depth", "swarm", "seeds", "shards")
_EXPLORE_KEYS = ("explorations", "findings", "depth", "swarm", "seeds", "shard", "shards")


@with_config(ConfigDict(strict=True))
class _ExploredShape(TypedDict):
    policy: str
    policy_revision: str
    scenario: str
    scenario_revision: str
    schedules: int
    cases: int
    violating_cases: int
    violations_by_property: dict[str, int]


@with_config(ConfigDict(strict=True))
class _FindingShape(TypedDict):
    policy: str
    scenario: str
    template: str
    outcome: str
    seed: int
    shape: str
    properties: list[str]
    schedule: list[str]
    file: str
    #: Written since findings are chosen over every shard (an older file has neither: its findings are all kept).
    first_seen: NotRequired[int]
    kept: NotRequired[str | None]


@with_config(ConfigDict(strict=True))
class _ExploreShape(TypedDict):
    """What the loader reads of an explore.json, typed: one of another shape is skipped naming the field."""

    depth: int
    swarm: int
    seeds: list[int]
    shard: int
    shards: int
    explorations: list[_ExploredShape]
    findings: list[_FindingShape]


_EXPLORE_SHAPE = TypeAdapter(_ExploreShape)


def load_explorations(paths: Path | str | Iterable[Path | str]) -> Explorations:
    """Every ``explore.json`` under ``paths``, merged: the shards of one exploration are summed (each shard
    counted once, however many copies of it there are), and a finding met by several shards is kept once.

    ``shards_seen`` says how many of an exploration's shards were found; ``complete`` is true when all were.
    """
    if isinstance(paths, str | Path):
        paths = [paths]
    skipped: list[Skipped] = []
    parts: dict[tuple[Any, ...], dict[str, Any]] = {}
    copies: list[dict[str, Any]] = []
    for given in paths:
        root = Path(given)
        if not root.exists():
            skipped.append(Skipped(str(root), "no such file or folder"))
            continue
        files = [root] if root.is_file() else sorted(root.rglob("explore.json"))
        if not files:
            run = (root / MANIFEST).is_file() or next(root.rglob("recovery.json"), None) is not None
            why = "a run, not an exploration: load its cases with load()" if run else "no explore.json under it"
            skipped.append(Skipped(str(root), why))
            continue
        for path in sorted(files, key=lambda p: (_polyaxon_run(p) is not None, str(p))):
            try:
                data = json.loads(path.read_bytes())
            except (OSError, ValueError) as exc:
                skipped.append(Skipped(str(path), f"malformed: {type(exc).__name__}: {str(exc)[:120]}"))
                continue
            missing = [k for k in _EXPLORE_KEYS if not isinstance(data, dict) or k not in data]
            if missing:
                skipped.append(Skipped(str(path), f"not an explore.json: missing keys: {', '.join(missing)}"))
                continue
            try:
                _EXPLORE_SHAPE.validate_python(data)  # only checked: the rows keep every key the file has
            except ValidationError as exc:
                skipped.append(Skipped(str(path), f"malformed: {wrong_field(exc)}"))
                continue
            settings = {"depth": data["depth"], "swarm": data["swarm"], "seeds": tuple(data["seeds"])}
            for row in data["explorations"]:
                merged = {**{k: row[k] for k in _EXPLORED_BY if k in row}, **settings, "shards": data["shards"]}
                key = (*(merged[k] for k in _EXPLORED_BY), data["shard"])
                parts.setdefault(key, {**row, **merged, "shard": data["shard"]})
            for finding in data["findings"]:
                copies.append(
                    {
                        **{k: v for k, v in finding.items() if k != "file"},
                        "properties": ", ".join(finding["properties"]),
                        "schedule": "; ".join(finding["schedule"]),
                        "file": str(path.parent / finding["file"]),
                        "first_seen": finding.get("first_seen", 0),
                        "kept": finding.get("kept"),
                    }
                )
    # A finding met by several shards (or copied) is one: its first copy, in the order files were read.
    chosen = needed_findings(
        sorted(copies, key=lambda f: (f["policy"], f["template"], f["first_seen"], f["seed"])),
        key=lambda f: (f["policy"], f["template"], f["shape"]),
        group=lambda f: (f["policy"], f["template"]),
        kept=lambda f: f["kept"],
        properties=lambda f: f["properties"].split(", "),
    )
    return Explorations(_merge_shards(parts.values()), _findings_frame(chosen), tuple(skipped))


def _merge_shards(parts: Iterable[dict[str, Any]]) -> pd.DataFrame:
    names = [m.name for m in PROPERTIES]
    rows: dict[tuple[Any, ...], dict[str, Any]] = {}
    for part in parts:
        key = tuple(part[k] for k in _EXPLORED_BY)
        row = rows.setdefault(
            key,
            {
                **{k: part[k] for k in _EXPLORED_BY},
                "shards_seen": 0,
                "schedules": 0,
                "cases": 0,
                "violating_cases": 0,
                **{f"violations_{n}": 0 for n in names},
            },
        )
        row["shards_seen"] += 1
        for column in ("schedules", "cases", "violating_cases"):
            row[column] += part[column]
        for name, count in part["violations_by_property"].items():
            row[f"violations_{name}"] = row.get(f"violations_{name}", 0) + count
    frame = pd.DataFrame(list(rows.values()))
    if frame.empty:
        return pd.DataFrame(columns=[*_EXPLORED_BY, "shards_seen", "complete", "schedules", "cases", "violating_cases"])
    frame["seeds"] = frame["seeds"].map(list)
    frame.insert(frame.columns.get_loc("shards_seen") + 1, "complete", frame["shards_seen"] == frame["shards"])
    return frame.sort_values(["policy", "scenario"], kind="stable").reset_index(drop=True)


def _findings_frame(findings: Iterable[dict[str, Any]]) -> pd.DataFrame:
    columns = ["policy", "scenario", "template", "outcome", "properties", "seed", "schedule", "shape", "file"]
    frame = pd.DataFrame(list(findings), columns=columns)
    return frame.sort_values(["policy", "scenario"], kind="stable").reset_index(drop=True)
