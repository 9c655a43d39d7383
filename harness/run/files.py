"""The files a run writes, each atomically: a ``recovery.json`` per case (or compact records for large cells)
and ``summary.csv``, streamed together from the rows each piece of a cell wrote as its cases finished."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from harness.check.registry import METRIC_NAMES
from harness.errors import one_line
from harness.model import RECORDS_GLOB, CaseReport
from harness.run.plan import UsageError

__all__ = [
    "SUMMARY_COLUMNS",
    "Deferred",
    "RecordWriter",
    "case_path",
    "check_new_or_empty",
    "iter_reports",
    "read_reports",
    "record_line",
    "recovery_json",
    "summary_row",
    "write_atomic",
    "write_summary",
]


def recovery_json(report: CaseReport) -> str:
    """The exact bytes of one ``recovery.json``: key order fixed, no wall-clock time in it.

    Secrets stay out by construction: no record the harness keeps has a secret field (the approval token
    lives only in the scenario and in the dispatch message, and neither is ever serialized), so nothing has
    to be scrubbed from the text afterwards. pydantic's encoder gives the same bytes as ``json.dumps`` with
    ``indent=2``, about twelve times faster.
    """
    return report.model_dump_json(indent=2) + "\n"


def record_line(report: CaseReport) -> str:
    """One case as a compact record: the same JSON as its recovery.json, on one line."""
    return report.model_dump_json() + "\n"


class RecordWriter:
    """Appends compact records to ``<folder>/records-<piece>.jsonl.gz``, made visible only when complete."""

    def __init__(self, folder: Path, part: int) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / f"records-{part:06d}.jsonl.gz"
        self._tmp = folder / f".{self.path.name}.tmp"
        # mtime=0: the same cases give the same bytes; level 1: a record compresses about tenfold either way.
        self._raw = open(self._tmp, "wb")  # noqa: SIM115 (closed in __exit__)
        self._gzip = gzip.GzipFile(filename="", mode="wb", fileobj=self._raw, compresslevel=1, mtime=0)

    def write(self, report: CaseReport) -> None:
        self._gzip.write(record_line(report).encode())

    def __enter__(self) -> RecordWriter:
        return self

    def __exit__(self, kind: object, *_: object) -> None:
        self._gzip.close()
        self._raw.close()
        if kind is None:
            os.chmod(self._tmp, 0o666 & ~_UMASK)
            os.replace(self._tmp, self.path)
        else:
            self._tmp.unlink(missing_ok=True)


class Deferred:
    """Files a compact piece writes beside its records (a recovery.json per case that is not correct), held in
    a temporary file until the piece ends, then written in place together with its records: a piece stopped
    midway leaves none of them, so a stopped run's folder shows its finished pieces only. (Left there, its
    failing cases counted without its correct ones, whose record file was never finished: a stopped run's
    report and notebook showed a correct rate several points too low.)"""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._handle = open(path, "w", encoding="utf-8")  # noqa: SIM115 (closed in __exit__)

    def write(self, path: Path, text: str) -> None:
        self._handle.write(json.dumps([str(path), text]) + "\n")

    def __enter__(self) -> Deferred:
        return self

    def __exit__(self, kind: object, *_: object) -> None:
        self._handle.close()
        try:
            if kind is None:
                with open(self.path, encoding="utf-8") as lines:
                    for line in lines:
                        path, text = json.loads(line)
                        write_atomic(Path(path), text)
        finally:
            self.path.unlink(missing_ok=True)


def iter_reports(out: Path) -> Iterator[CaseReport]:
    """Every case a run folder holds, once each and one at a time: its recovery.json files, then its compact
    records (a case in both, one that is not correct, is read from its recovery.json). What the gate and the
    JUnit judge a run by: a report is about 33 KB in memory, so a consumer keeps what it needs of each, not it."""
    whole: set[tuple[str, str, int]] = set()
    for path in sorted((out / "cases").rglob("recovery.json")):
        report = CaseReport.model_validate_json(path.read_bytes())
        whole.add((report.policy, report.scenario, report.seed))
        yield report
    for path in sorted((out / "cases").rglob(RECORDS_GLOB)):
        with gzip.open(path, "rb") as lines:
            for line in lines:
                report = CaseReport.model_validate_json(line)
                if (report.policy, report.scenario, report.seed) not in whole:
                    yield report


def read_reports(out: Path) -> dict[tuple[str, str, int], CaseReport]:
    """Every case a run folder holds, by (policy, scenario, seed) (``iter_reports``), all in memory: for a
    consumer that looks cases up as it goes (the pytest plugin's items)."""
    return {(r.policy, r.scenario, r.seed): r for r in iter_reports(out)}


_UMASK = os.umask(0)
os.umask(_UMASK)


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file and a rename, so no reader sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
        os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp makes it private; outputs are ordinary files
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def check_new_or_empty(out: Path, option: str = "--out") -> None:
    """Refuse an output folder that is a file or holds anything: a run's files never mix with another's."""
    if out.exists() and not out.is_dir():
        raise UsageError(f"{option} {out}: is a file; fix: give a folder")
    if out.exists() and any(out.iterdir()):
        raise UsageError(f"{option} {out}: is not empty; fix: give a new or empty folder")


def _unwritable(folder: Path, prefix: str) -> str | None:
    """Why a scratch file cannot be written in ``folder`` (it is removed at once), or ``None`` when it can."""
    try:
        fd, scratch = tempfile.mkstemp(dir=folder, prefix=prefix, suffix=".tmp")
        os.close(fd)
        os.unlink(scratch)
    except OSError as exc:
        return str(exc.strerror or exc)
    return None


def check_writable_folder(out: Path, option: str) -> None:
    """Refuse, before anything runs, an output folder that cannot be made or written in: a scratch file is tried
    in it, or in the nearest folder on its path that exists (where making it would start), and nothing is left."""
    nearest = next(p for p in (out.absolute(), *out.absolute().parents) if p.exists())
    why = _unwritable(nearest, ".harness-")
    if why is not None:
        raise UsageError(f"{option} {out}: cannot be written ({why}); fix: give a writable folder")


def check_writable(path: Path, option: str) -> None:
    """Refuse, before anything runs, an output file that cannot be written where it is asked for, so that a run
    does not end in an error after its work: a scratch file is tried in the nearest folder that exists on its path
    (where writing it would make the rest), and nothing is left behind."""
    if path.is_dir():
        raise UsageError(f"{option} {path}: is a folder; fix: give a file name")
    nearest = next(p for p in path.absolute().parents if p.exists())
    if not nearest.is_dir():
        raise UsageError(f"{option} {path}: {nearest} is a file, not a folder; fix: give another path")
    why = _unwritable(nearest, f".{path.name}.")
    if why is not None:
        raise UsageError(f"{option} {path}: cannot be written ({why}); fix: give a path in a writable folder")


def case_path(out: Path, report: CaseReport) -> Path:
    """Where a case's ``recovery.json`` lives: ``<out>/cases/<policy>/<scenario>/seed-<n>/recovery.json``."""
    return out / "cases" / report.policy / report.scenario / f"seed-{report.seed}" / "recovery.json"


SUMMARY_COLUMNS = (
    "policy",
    "policy_revision",
    "scenario",
    "scenario_revision",
    "seed",
    "outcome",
    "verdict",
    *METRIC_NAMES,
    "unknown",
    "error",
    "reproduce",
)


def summary_row(r: CaseReport) -> list[object]:
    """One case's row of ``summary.csv``: an unknown metric is an empty cell, its reason in ``unknown``;
    ``error`` is why the harness could not judge the case, or what the policy raised, in one line."""
    metrics = [("" if r.metrics.get(m) is None else r.metrics[m]) for m in METRIC_NAMES]
    unknown = "; ".join(f"{k}: {v}" for k, v in r.unknown.items())
    error = r.error if r.outcome == "harness_error" else r.policy_error
    return [
        r.policy,
        r.policy_revision,
        r.scenario,
        r.scenario_revision,
        r.seed,
        r.outcome,
        r.verdict,
        *metrics,
        unknown,
        "" if error is None else one_line(error, len(error)),  # all of it (a policy's text is bounded already)
        r.reproduce,
    ]


def write_summary(out: Path, parts: Sequence[Path]) -> Path:
    """``summary.csv``: the header, then the rows of ``parts`` in the order given, streamed (never all in
    memory)."""
    path = out / "summary.csv"
    fd, tmp = tempfile.mkstemp(dir=out, prefix=".summary.csv.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(",".join(SUMMARY_COLUMNS) + "\n")
            for part in parts:
                with open(part, encoding="utf-8", newline="") as rows:
                    shutil.copyfileobj(rows, handle)
        os.chmod(tmp, 0o666 & ~_UMASK)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
