"""One piece of a policy x scenario cell: its seeds run, each case written as it finishes, and a tally returned.

A cell with many seeds is split into pieces that processes run side by side; the parent adds up their
tallies and never holds a case's report. Each case's record goes to disk when the case finishes: a
``recovery.json`` per case, or, for large cells, one compact line per case in ``records-<piece>.jsonl.gz``
plus a ``recovery.json`` for every case that is not correct, or for as many as ``--failing-files`` allows (see
``harness.run.files``).
"""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, TypeAdapter
from typing_extensions import TypedDict

from harness.check.registry import METRICS
from harness.model import FAILING, CaseReport, MetricValue
from harness.run.case import failed_report, run_case
from harness.run.files import (
    Deferred,
    RecordWriter,
    case_path,
    recovery_json,
    summary_row,
    write_atomic,
)
from harness.run.pictures import draw_timelines
from harness.run.plan import Grid, load_grid
from harness.scenario import FaultBase, OperatorEvent
from harness.scenario.faults import CONNECTOR_PHASES

__all__ = [
    "NOTABLE_MAX",
    "CaseLine",
    "CellJob",
    "CellResult",
    "FaultCoverage",
    "MetricTally",
    "cell_scenario",
    "describe",
    "describe_event",
    "execute_cell",
]

RecordMode = Literal["full", "compact"]
#: Harness errors a piece reports by name (each with its reproduce command); summary.csv has every one.
NOTABLE_MAX = 20
_LOGGED = tuple(m.name for m in METRICS if m.logged)


@dataclass(frozen=True, slots=True)
class CellJob:
    """Everything one worker process needs to run and write one piece of a policy x scenario cell."""

    policy_spec: str
    scenario_spec: str
    seeds: Sequence[int]
    out: Path
    #: Which piece of its cell this is (pieces of a cell run side by side; their files never collide).
    part: int = 0
    #: How many pieces its cell was split into.
    parts: int = 1
    #: ``full``: a recovery.json per case; ``compact``: a record line per case, recovery.json only for the rest.
    records: RecordMode = "full"
    #: Draw ``timeline.png`` beside the case report.html shows for each failing outcome (the lowest seed): set
    #: on the piece that holds its cell's lowest seeds, so the pictures are drawn while the run goes on.
    timelines: bool = False
    #: Cases of this piece not to run again, by position in it, each with why it failed: a case over its
    #: wall-clock budget, or one whose worker process died. They are written as ``harness_error`` cases.
    failed: tuple[tuple[int, str], ...] = ()
    #: The wall-clock budget of one case (``--case-timeout``), named in the reproduce command of a failed case.
    case_timeout_s: float | None = None
    #: With compact records, a recovery.json for at most this many of the piece's cases that are not correct, the
    #: first it runs (None: every one); the others are in its records only.
    failing_files: int | None = None


@dataclass(frozen=True, slots=True)
class FaultCoverage:
    """How one declared fault of a scenario, or one of its operator events, fared over a set of cases."""

    scenario: str
    #: Its place among what the scenario declares: its faults first, then its operator events.
    index: int
    #: The fault or event in one line (``describe``, ``describe_event``).
    fault: str
    #: Cases in which the fault's site (its boundary, action and occurrence) was reached; for an operator event,
    #: in which its trigger came (its time, or the nth record it waits for).
    reached: int
    #: Cases in which it fired (an operator event: acted).
    fired: int
    kind: Literal["fault", "operator"] = "fault"

    def plus(self, other: FaultCoverage) -> FaultCoverage:
        return FaultCoverage(
            self.scenario, self.index, self.fault, self.reached + other.reached, self.fired + other.fired, self.kind
        )

    @property
    def noun(self) -> str:
        return "fault" if self.kind == "fault" else "operator event"

    @property
    def what(self) -> str:
        """``fault <it>`` or ``operator event <it>``, as messages name it."""
        return f"{self.noun} {self.fault}"

    @property
    def reach(self) -> str:
        """What ``reached`` counts, in words."""
        return "its site was reached" if self.kind == "fault" else "its trigger came"

    @property
    def reached_in(self) -> str:
        """``its site was reached in 3 cases``."""
        return f"{self.reach} in {self.reached} case{'' if self.reached == 1 else 's'}"

    @property
    def fix(self) -> str:
        """What to do when it fired in no case."""
        if self.kind == "fault" and self.reached == 0:
            # No policy of the run got there: a cautious policy that never sends a second request meets no fault
            # on it, and is not at fault; the scenario tests it only beside one that does.
            return (
                "fix: run beside these policies one that gets there (none did: a policy that never does what the "
                "fault waits for, a second request or a read, say, never meets it), or make the fault reachable"
            )
        if self.kind == "fault":
            return "fix: make the fault reachable, or run a policy that reaches it"
        return (
            "fix: give it a trigger the run reaches, early enough that it acts before the recovery deadline (an "
            "event acts only before it), or run a policy that gets there"
        )


@dataclass(frozen=True, slots=True)
class CaseLine:
    """What the parent keeps of a case worth naming: enough to print it, never its report."""

    policy: str
    scenario: str
    seed: int
    outcome: str
    reproduce: str
    error: str | None = None
    #: What the policy raised (or returned that was not a command), when it failed so: an abandoned case whose
    #: policy crashed is not one whose policy gave up, and the line that names the case says which.
    policy_error: str | None = None


@dataclass(slots=True)
class MetricTally:
    """The sum of one metric over the cases that established it, and how many did."""

    total: float = 0.0
    known: int = 0

    def add(self, value: MetricValue) -> None:
        if value is not None:
            self.total += float(value)
            self.known += 1

    def plus(self, other: MetricTally) -> MetricTally:
        return MetricTally(self.total + other.total, self.known + other.known)


@dataclass(slots=True)
class CellResult:
    """One piece's tally: outcome counts per (policy, scenario), the cases to name, coverage and metric sums."""

    counts: dict[tuple[str, str], Counter[str]] = field(default_factory=dict)
    #: The first case of each (policy, scenario) and outcome in ``FAILING``, and every harness error up to
    #: ``NOTABLE_MAX``.
    notable: list[CaseLine] = field(default_factory=list)
    errors: int = 0
    coverage: tuple[FaultCoverage, ...] = ()
    metrics: dict[str, MetricTally] = field(default_factory=dict)
    #: Revisions and identities of what ran (the same for every piece of a cell).
    identity: dict[str, str] = field(default_factory=dict)
    #: The rows of summary.csv for these cases, in seed order (written by the parent, in grid order).
    summary_part: Path | None = None
    #: Every file the piece wrote (its cases, its compact records, its rows), relative to the run's folder, with
    #: its size: a resumed run runs a piece again when one is missing or of another size (deleted, cut short).
    files: dict[str, int] = field(default_factory=dict)

    @property
    def cases(self) -> int:
        return sum(sum(c.values()) for c in self.counts.values())

    def to_json(self) -> str:
        """The tally as JSON, so a resumed run can add up the pieces that finished before it was stopped."""
        return json.dumps(
            {
                "format": TALLY_FORMAT,
                "counts": [[p, s, dict(c)] for (p, s), c in self.counts.items()],
                "notable": [asdict(n) for n in self.notable],
                "errors": self.errors,
                "coverage": [asdict(c) for c in self.coverage],
                "metrics": {name: [t.total, t.known] for name, t in self.metrics.items()},
                "identity": self.identity,
                "summary_part": str(self.summary_part) if self.summary_part else None,
                "files": self.files,
            },
            sort_keys=True,
        )

    @classmethod
    def from_json(cls, text: str) -> CellResult:
        """The tally ``to_json`` wrote; raises ``ValueError`` (a pydantic ``ValidationError``) for text of
        another shape, so that a damaged tally is never added into a run's counts."""
        data = _TALLY.validate_json(text)
        return cls(
            counts={(p, s): Counter(c) for p, s, c in data["counts"]},
            notable=data["notable"],
            errors=data["errors"],
            coverage=tuple(data["coverage"]),
            metrics={name: MetricTally(total, known) for name, (total, known) in data["metrics"].items()},
            identity=data["identity"],
            summary_part=Path(data["summary_part"]) if data["summary_part"] else None,
            files=data["files"],
        )

    def merge(self, other: CellResult) -> None:
        """Add ``other`` (another piece of the same cell) into this tally."""
        for key, counter in other.counts.items():
            self.counts.setdefault(key, Counter()).update(counter)
        # Pieces finish in any order: of two first cases with the same outcome, the lower seed is kept, so a
        # run names the same case however its pieces were scheduled.
        seen = {(n.policy, n.scenario, n.outcome): i for i, n in enumerate(self.notable) if n.error is None}
        errors = sum(1 for n in self.notable if n.error is not None)
        for n in other.notable:
            which = (n.policy, n.scenario, n.outcome)
            if n.error is not None:
                if errors < NOTABLE_MAX:
                    self.notable.append(n)
                    errors += 1
            elif which not in seen:
                seen[which] = len(self.notable)
                self.notable.append(n)
            elif n.seed < self.notable[seen[which]].seed:
                self.notable[seen[which]] = n
        self.errors += other.errors
        merged = {(c.scenario, c.index): c for c in self.coverage}
        for c in other.coverage:
            site = (c.scenario, c.index)
            merged[site] = merged[site].plus(c) if site in merged else c
        self.coverage = tuple(merged.values())
        for name, tally in other.metrics.items():
            self.metrics[name] = self.metrics[name].plus(tally) if name in self.metrics else tally
        self.identity = self.identity or other.identity
        self.files.update(other.files)


#: The tally's format. A tally of another (an earlier version's, which counted no operator events, wrote summary
#: rows without their ``error`` column, listed no files, or came beside a manifest that kept no digest) no longer
#: reads as one, so its piece runs again on resume rather than leave its cases out of the coverage, its rows a
#: column short or its files unchecked. One that reads beside a manifest without a digest means the digest was
#: deleted (``Manifest.check_unedited``).
TALLY_FORMAT = 5


class _TallyShape(TypedDict):
    """What ``CellResult.to_json`` writes, typed."""

    format: Literal[5]
    counts: list[tuple[str, str, dict[str, int]]]
    notable: list[CaseLine]
    errors: int
    coverage: list[FaultCoverage]
    metrics: dict[str, tuple[float, int]]
    identity: dict[str, str]
    summary_part: str | None
    files: dict[str, Annotated[int, Field(ge=0)]]


_TALLY = TypeAdapter(_TallyShape)


def describe_event(event: OperatorEvent) -> str:
    """An operator event in one line: what it does, its trigger and the fields it sets
    (``request_cancel after=worker.crashed nth=1``, ``expire_approval at_s=30.0 delay_s=5.0``)."""
    when, after = event.when, event.when.after
    trigger = f"at_s={when.at_s}" if after is None else f"after={after.actor}.{after.event} nth={after.nth}"
    fields = event.model_dump(exclude={"do", "when"}, exclude_defaults=True)
    delay = [f"delay_s={when.delay_s}"] if when.delay_s else []
    return " ".join([event.do, trigger, *delay, *(f"{k}={'null' if v is None else v}" for k, v in fields.items())])


def describe(fault: FaultBase) -> str:
    """A fault in one line: its boundary and the fields it sets (``request_delayed nth=2 delay_s=30.0``)."""
    fields = fault.model_dump(exclude={"boundary"}, exclude_defaults=True)
    return " ".join([fault.boundary, *(f"{k}={'null' if v is None else v}" for k, v in fields.items())])


def summary_part_path(out: Path, job: CellJob, cell: int) -> Path:
    """Where a piece's summary rows wait for the parent: ``<out>/.parts/<cell>-<part>.csv``."""
    return out / ".parts" / f"{cell:06d}-{job.part:06d}.csv"


@dataclass(frozen=True, slots=True)
class Piece:
    """One piece of a cell, as a job the worker processes run under supervision (``harness.run.pool``)."""

    cell: int
    job: CellJob

    def execute(self, on_case: Callable[[int], None]) -> CellResult:
        return execute_cell(self.job, self.cell, on_case)

    def without(self, position: int, reason: str) -> Piece:
        """The piece again, the case at ``position`` written as a ``harness_error`` case instead of run."""
        return Piece(self.cell, replace(self.job, failed=(*self.job.failed, (position, reason))))


def execute_cell(job: CellJob, cell: int = 0, on_case: Callable[[int], None] | None = None) -> CellResult:
    """Run every seed of one piece of a cell, write each case as it finishes, and return the tally.

    ``on_case(position)`` is called before each case (its position in the piece) and with -1 after it, so a
    supervisor knows which case a stuck or dead worker was running. The tally is also written beside the
    piece's summary rows, so a resumed run knows the piece is done. A piece with ``timelines`` then draws the
    timeline of its lowest seed of each failing outcome; the report draws any it still lacks at the end.
    """
    grid = load_grid([job.policy_spec], [job.scenario_spec], job.seeds)
    result = CellResult()
    # Per (scenario, index, fault or event, kind): [cases that reached its site or trigger, cases it fired in].
    coverage: dict[tuple[str, int, str, Literal["fault", "operator"]], list[int]] = {}
    metrics = {name: result.metrics.setdefault(name, MetricTally()) for name in _LOGGED}
    rows = io.StringIO()
    writer = csv.writer(rows, lineterminator="\n")
    # Per (scenario, failing outcome): the lowest seed that ended so, and its recovery.json.
    shown: dict[tuple[str, str], tuple[int, Path]] = {}
    failing_left = job.failing_files
    with ExitStack() as stack:
        compact: dict[str, RecordWriter] = {}
        # Entered first, so left last: its files appear once every record file of the piece is in place.
        deferred = None
        if job.records == "compact":
            part = summary_part_path(job.out, job, cell)
            deferred = stack.enter_context(Deferred(part.with_name(f".{part.stem}.pending.tmp")))
        for report, faults, events in _cases(grid, dict(job.failed), on_case, job.case_timeout_s):
            result.identity = result.identity or _identity(report)
            counter = result.counts.setdefault((report.policy, report.scenario), Counter())
            counter[report.outcome] += 1
            _note(result, report)
            # The scenario's faults, then its operator events, numbered in that order.
            declared: list[tuple[Literal["fault", "operator"], str, int, int]] = [
                *(("fault", name, reached, fired) for name, reached, fired in faults),
                *(("operator", name, reached, fired) for name, reached, fired in events),
            ]
            for i, (kind, name, reached, fired) in enumerate(declared):
                seen = coverage.setdefault((report.scenario, i, name, kind), [0, 0])
                seen[0] += reached > 0
                seen[1] += fired > 0
            for name, tally in metrics.items():
                tally.add(report.metrics.get(name))
            writer.writerow(summary_row(report))
            if job.records == "compact":
                if report.scenario not in compact:
                    folder = job.out / "cases" / report.policy / report.scenario
                    compact[report.scenario] = stack.enter_context(RecordWriter(folder, job.part))
                compact[report.scenario].write(report)
                if report.outcome == "correct":
                    continue
                if failing_left is not None:
                    if failing_left == 0:
                        continue
                    failing_left -= 1
            path = case_path(job.out, report)
            text = recovery_json(report)
            if deferred is not None:
                deferred.write(path, text)
            else:
                write_atomic(path, text)
            result.files[_within(job.out, path)] = len(text.encode())
            if job.timelines and report.outcome in FAILING:
                lowest = shown.setdefault((report.scenario, report.outcome), (report.seed, path))
                if report.seed < lowest[0]:
                    shown[report.scenario, report.outcome] = (report.seed, path)
        written = list(compact.values())
    for records in written:  # closed: complete, in place
        result.files[_within(job.out, records.path)] = records.path.stat().st_size
    if shown:
        draw_timelines([path for _, path in shown.values()], 1)  # what it cannot draw is left to the report
    result.coverage = tuple(FaultCoverage(sc, i, name, n[0], n[1], kind) for (sc, i, name, kind), n in coverage.items())
    result.summary_part = summary_part_path(job.out, job, cell)
    text = rows.getvalue()
    write_atomic(result.summary_part, text)
    result.files[_within(job.out, result.summary_part)] = len(text.encode())
    write_atomic(result.summary_part.with_suffix(".json"), result.to_json())
    return result


def _within(out: Path, path: Path) -> str:
    """``path`` relative to the run's folder, as a tally lists it."""
    return path.relative_to(out).as_posix()


def files_in_place(out: Path, files: dict[str, int]) -> bool:
    """Whether every file a piece wrote is still there, of the size it was written."""
    for name, size in files.items():
        try:
            if (out / name).stat().st_size != size:
                return False
        except OSError:
            return False
    return True


def _cases(
    grid: Grid, failed: dict[int, str], on_case: Callable[[int], None] | None, case_timeout_s: float | None = None
) -> Iterator[tuple[CaseReport, list[tuple[str, int, int]], list[tuple[str, int, int]]]]:
    """Each case's report, with (fault, reached, fired) for every fault its scenario declares, and the same
    for every operator event."""
    described: dict[str, list[str]] = {}
    events_described: dict[str, list[str]] = {}
    for position, case in enumerate(grid.cases):
        if position in failed:
            report, sim = failed_report(case, failed[position], case_timeout_s), None
        else:
            if on_case is not None:
                on_case(position)
            report, sim = run_case(case)
            if on_case is not None:
                on_case(-1)
        names = described.get(case.scenario.name)
        if names is None:
            names = described[case.scenario.name] = [describe(f) for f in case.scenario.faults]
        counts = sim.coverage if sim is not None else [(0, 0)] * len(names)
        events = events_described.get(case.scenario.name)
        if events is None:
            events = events_described[case.scenario.name] = [describe_event(e) for e in case.scenario.operator]
        acted = sim.operator_coverage if sim is not None else [(0, 0)] * len(events)
        yield (
            report,
            [(name, reached, fired) for name, (reached, fired) in zip(names, counts, strict=True)],
            [(name, reached, fired) for name, (reached, fired) in zip(events, acted, strict=True)],
        )


def _identity(report: CaseReport) -> dict[str, str]:
    return {
        "policy_revision": report.policy_revision,
        "scenario_revision": report.scenario_revision,
        "task_id": report.task_id,
        "action_id": report.action_id,
    }


def _note(result: CellResult, report: CaseReport) -> None:
    """Keep the case of each (policy, scenario) and failing outcome at the lowest seed (seeds may be given in any
    order), and harness errors up to the cap."""
    if report.outcome == "harness_error":
        result.errors += 1
        if sum(1 for n in result.notable if n.error is not None) < NOTABLE_MAX:
            result.notable.append(
                CaseLine(report.policy, report.scenario, report.seed, report.outcome, report.reproduce, report.error)
            )
        return
    if report.outcome not in FAILING:
        return
    line = CaseLine(
        report.policy, report.scenario, report.seed, report.outcome, report.reproduce, policy_error=report.policy_error
    )
    for i, n in enumerate(result.notable):
        if n.error is None and (n.policy, n.scenario, n.outcome) == (report.policy, report.scenario, report.outcome):
            if report.seed < n.seed:
                result.notable[i] = line
            return
    result.notable.append(line)


def cell_scenario(scenarios: Sequence[str]) -> str:
    """The cell's scenario: its one scenario, or the name its variants share (they are ``<name>-<phase>``)."""
    if len(scenarios) == 1:
        return scenarios[0]
    first = scenarios[0]
    return next((first.removesuffix(f"-{p}") for p in CONNECTOR_PHASES if first.endswith(f"-{p}")), first)
