"""Running a whole grid: the output folder, the cells side by side, summary.csv, run.json, Polyaxon, the report.

``run_grid`` does the work and returns a ``GridSummary``; the command line only prints it and turns it into
an exit status. Progress is reported through a callback, one call per finished cell.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import ConfigDict, Field, TypeAdapter, ValidationError, with_config
from typing_extensions import TypedDict

from harness.errors import NotWritten, wrong_field
from harness.limits import CASE_TIMEOUT_MAX_S, COMPACT_ABOVE, DEFAULT_CASE_TIMEOUT_S, SEED_COUNT_MAX
from harness.model import MANIFEST, REPORT_HTML, RUN_RECORD
from harness.plx.tracking import (
    DEFAULT_PROJECT,
    Tracked,
    TrackingMode,
    is_managed,
    offline_root,
    push_runs,
)
from harness.run.cell import (
    CaseLine,
    CellJob,
    CellResult,
    FaultCoverage,
    Piece,
    cell_scenario,
    execute_cell,
    files_in_place,
    summary_part_path,
)
from harness.run.files import check_new_or_empty, write_atomic, write_summary
from harness.run.folder import (
    LOCK_FILE,
    REQUEST,
    Claim,
    Manifest,
    Request,
    changed_since,
    checked_here,
    claim,
    fingerprints,
    not_empty,
    stray_temporaries,
)
from harness.run.plan import Cell, Grid, Plan, UsageError, load_grid
from harness.scenario import scenario_cases

if TYPE_CHECKING:  # pandas is imported only by a run that writes its report
    from harness.present.analysis import Reading

__all__ = [
    "PIECE_MAX",
    "PIECE_MIN",
    "GridOptions",
    "GridSummary",
    "Progress",
    "RunInterrupted",
    "RunNotWritten",
    "TrackingNote",
    "abandon",
    "begin",
    "check_project",
    "new_out",
    "pieces",
    "resume_grid",
    "run_grid",
    "tracking_note",
]

_PROJECT = re.compile(r"([a-z0-9][a-z0-9_-]*/)?[a-z0-9][a-z0-9_-]*")  # whole: fullmatch, not "$" (a newline)


RecordsMode = Literal["auto", "full", "compact"]
UnfiredMode = Literal["fail", "note"]
#: A piece of a cell holds at most this many seeds: large cells are split so that processes share them.
PIECE_MAX = 5000
#: A cell is split among processes only into pieces of at least this many seeds: a piece costs a job, a tally
#: and a progress line, more than a few cases do. Every 3-seed cell of the default grid was two pieces: 720
#: progress lines for 360 cells, and the grid took 4 to 14% longer than kept whole (four timings of each,
#: each pair run one after the other: 19.1, 20.3, 20.5, 23.8 s split against 18.1, 18.3, 18.9, 20.9 s).
PIECE_MIN = 100


@dataclass(frozen=True, slots=True)
class GridOptions:
    out: Path | None = None
    tracking: TrackingMode = "offline"
    project: str = DEFAULT_PROJECT
    report: bool = True
    #: ``auto``: compact records for cells of more than ``COMPACT_ABOVE`` seeds, a recovery.json per case otherwise.
    records: RecordsMode = "auto"
    #: In a cell of compact records, a recovery.json for at most this many cases that are not correct (None: all).
    failing_files: int | None = None
    #: Wall-clock seconds a case may take before it is stopped and counted as a harness error (None: no limit).
    case_timeout_s: float | None = DEFAULT_CASE_TIMEOUT_S
    #: Run the cases in worker processes the run supervises. Off only for tests that patch the harness in place.
    isolate: bool = True
    #: ``fail``: a declared fault or operator event that fired in no case makes the exit status 4; ``note``: it is
    #: said, and the status is what it would be had it fired (a run of one cell cannot know whether another
    #: policy fires it: a Polyaxon grid's job, say).
    unfired: UnfiredMode = "fail"
    #: Where the gate's JUnit XML goes once the run is complete (written by the CLI; kept in the manifest so that
    #: a resumed run writes it too).
    junit: Path | None = None
    #: The cases of a gate (``harness check``, the pytest plugin): the folder is not resumable as a run, which would
    #: end without the gate's verdict, repro files or JUnit file.
    check: bool = False


#: Called with a run's outcome counts per (policy, scenario) and the grid's order once every case is counted.
Tallied = Callable[[dict[tuple[str, str], Counter[str]], tuple[str, ...], tuple[str, ...]], None]


@dataclass(frozen=True, slots=True)
class TrackingNote:
    """What happened to the Polyaxon runs, said once: ``ok`` false means the exit status is 3."""

    ok: bool
    message: str | None


@dataclass(frozen=True, slots=True)
class GridSummary:
    """What a finished grid says: counts per cell, the cases worth naming, and where everything is."""

    out: Path
    policies: tuple[str, ...]
    scenarios: tuple[str, ...]
    #: Outcome counts per (policy, scenario), over every seed.
    counts: dict[tuple[str, str], Counter[str]]
    #: The first incorrect case of each (policy, scenario) and the first harness errors (see ``NOTABLE_MAX``).
    notable: tuple[CaseLine, ...]
    summary_csv: Path
    tracking: TrackingNote
    report_html: Path | None
    #: Every declared fault of every scenario run, with the cases that reached it and those it fired in.
    coverage: tuple[FaultCoverage, ...] = ()
    #: Harness errors over the whole grid (``errors`` names at most ``NOTABLE_MAX`` per cell).
    error_count: int = 0
    #: The recovery.json files written beside compact records (cases that are not correct) and their bytes, when
    #: no ``--failing-files`` bounded them.
    failing_files: tuple[int, int] = (0, 0)

    @property
    def cases(self) -> int:
        return sum(sum(c.values()) for c in self.counts.values())

    @property
    def errors(self) -> tuple[CaseLine, ...]:
        return tuple(n for n in self.notable if n.outcome == "harness_error")

    @property
    def unfired(self) -> tuple[FaultCoverage, ...]:
        """Declared faults (and operator events) that fired in no case of the run: scenarios that tested nothing
        they claim to. Counted over the cases that finished (``finished``): a fault listed here may have fired in
        a case that ended in harness_error, which is why a run with any exits 1 (before 4) and says to mend those
        first."""
        return unfired(self.coverage)

    def finished(self, scenario: str) -> tuple[int, int]:
        """How many cases of ``scenario`` (over every policy run on it) finished, and how many ended in
        ``harness_error``. The latter count toward no fault's ``reached`` or ``fired``: their worker may have died
        after a fault fired, so their coverage is unknown and a fault's counts are over the cases that finished."""
        errors = harness_errors(self.counts)[scenario]
        cases = sum(sum(outcomes.values()) for (_, name), outcomes in self.counts.items() if name == scenario)
        return cases - errors, errors


@dataclass(frozen=True, slots=True)
class Ended:
    """What a complete run's exit status was made of, as its run.json keeps it (a run.json written before these
    were kept reads as nothing wrong)."""

    harness_errors: int
    unfired: int
    tracking_ok: bool

    @classmethod
    def read(cls, out: Path) -> Ended:
        path = out / RUN_RECORD
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            return cls(
                int(data.get("harness_errors", 0)), int(data.get("unfired", 0)), data.get("tracking_ok") is not False
            )
        except (OSError, ValueError, TypeError, AttributeError) as exc:
            raise UsageError(
                f"{path}: not a run record the harness wrote ({type(exc).__name__}); fix: start a new run with "
                "another --out"
            ) from None


def unfired(coverage: Iterable[FaultCoverage]) -> tuple[FaultCoverage, ...]:
    """The declared faults and operator events that fired in none of the cases counted."""
    return tuple(c for c in coverage if c.fired == 0)


def unfired_or_unknown(coverage: Iterable[FaultCoverage], errors: Mapping[str, int]) -> tuple[int, int]:
    """How many declared faults and operator events fired in no case where every case of their scenario
    finished (unfired), and how many fired in no finished case of a scenario some of whose cases did not (unknown:
    they may have fired there); ``errors`` is ``harness_errors``'s count per scenario."""
    never = unfired(coverage)
    unknown = sum(1 for c in never if errors.get(c.scenario, 0))
    return len(never) - unknown, unknown


def harness_errors(counts: Mapping[tuple[str, str], Counter[str]]) -> Counter[str]:
    """Per scenario, the cases (over every policy run on it) that ended in ``harness_error``."""
    errors = Counter[str]()
    for (_, scenario), outcomes in counts.items():
        errors[scenario] += outcomes["harness_error"]
    return errors


def check_project(project: str) -> None:
    if not _PROJECT.fullmatch(project):
        raise UsageError(f"--project '{project}': not a Polyaxon project name; fix: use [owner/]name in lower case")


#: Where a run without ``--out`` goes, under the folder it is started from.
DEFAULT_RUNS = Path("reports") / "runs"


def new_out(out: Path | None) -> Path:
    """Create the output folder: the given one (new or empty), or a new ``reports/runs/<UTC time>[-n]``."""
    if out is not None:
        if out.is_dir() and any(out.iterdir()):
            raise UsageError(not_empty(out))
        check_new_or_empty(out)
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UsageError(f"--out {out}: cannot create it ({exc.strerror}); fix: give a writable folder") from exc
        return out
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    base = DEFAULT_RUNS
    try:
        base.mkdir(parents=True, exist_ok=True)
        for n in range(1000):
            candidate = base / (stamp if n == 0 else f"{stamp}-{n}")
            try:
                candidate.mkdir()  # atomic: two runs started in the same second get different folders
                return candidate.absolute()  # every command printed about it runs from any folder
            except FileExistsError:
                continue
    except OSError as exc:  # a file named reports or reports/runs in the way, a folder not writable, a full disk
        raise UsageError(
            f"{base.absolute()}: cannot create the default output folder ({exc.strerror or exc}); fix: give "
            "--out DIR, or run from a folder where reports/runs can be made"
        ) from exc
    raise UsageError(f"too many runs named {stamp} in {base}; fix: pass --out")


class RunNotWritten(NotWritten):
    """The run's files could not be written (a full disk, a folder made read-only): it can be resumed."""

    def __init__(self, out: Path, reason: str) -> None:
        super().__init__(
            f"cannot write the run's files in {out} ({reason}); fix: make room or give a writable folder, then "
            f"resume: python -m harness run --resume {shlex.quote(str(out))}",
            out,
            reason,
        )


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C (or SIGTERM) stopped the run; every worker is stopped and the folder can be resumed."""

    def __init__(self, out: Path) -> None:
        super().__init__(f"interrupted; {out} is resumable: python -m harness run --resume {shlex.quote(str(out))}")
        self.out = out


def begin(out: Path | None, argv: Sequence[str]) -> Claim:
    """Claim the run's folder (a new one, or the given one if new or empty) and record the command line in it,
    first thing, so that even a run killed while it plans can be resumed."""
    folder = new_out(out)
    hold = claim(folder, fresh=True)
    try:
        Request(tuple(argv), os.getcwd()).write(folder)
    except OSError as exc:
        hold.release()
        raise UsageError(f"--out {folder}: cannot write in it ({exc.strerror}); fix: give a writable folder") from None
    return hold


def abandon(hold: Claim, created: bool) -> None:
    """Undo ``begin`` after bad input: nothing of the run is left (the folder too, if this run made it, and the
    default folder's ``reports/runs`` when nothing else is in them)."""
    hold.release()
    for name in (REQUEST, LOCK_FILE):
        (hold.out / name).unlink(missing_ok=True)
    if created:
        made = [hold.out]
        runs = DEFAULT_RUNS.absolute()
        if hold.out.parent == runs:
            made += [runs, runs.parent]
        with contextlib.suppress(OSError):  # one that holds anything stays, and so do those above it
            for folder in made:
                folder.rmdir()


@dataclass(frozen=True, slots=True)
class Progress:
    """How far a run has come as one piece of a cell finishes: pieces and cases this run has to do (a resumed
    run counts only what it runs), and the wall time since it began running them."""

    pieces_done: int
    pieces: int
    cases_done: int
    cases: int
    elapsed_s: float
    #: Processes running pieces side by side.
    concurrency: int = 1

    @property
    def rate(self) -> float | None:
        """Cases per second so far (start-up included), or ``None`` before any time has passed, and until as many
        pieces have finished as run side by side: the first of two pieces to finish counts only its own cases,
        though the other is about as far along (the rate read half what it was, and the time left twice)."""
        if self.elapsed_s <= 0 or self.pieces_done < min(self.concurrency, self.pieces):
            return None
        return self.cases_done / self.elapsed_s

    @property
    def remaining_s(self) -> float | None:
        """The time the remaining cases take at the rate so far, or ``None`` while there is no rate."""
        rate = self.rate
        return (self.cases - self.cases_done) / rate if rate else None


def run_grid(
    plan: Plan,
    options: GridOptions,
    progress: Callable[[Progress, CellJob, CellResult], None] | None = None,
    begun: Claim | None = None,
    checked: Callable[[], None] | None = None,
    reading: Callable[[Reading], object] | None = None,
    tallied: Tallied | None = None,
    processes: int | None = None,
) -> GridSummary:
    """Check everything, then run every cell of ``plan``, write the run's files, and track it.

    Raises ``InputError`` (before writing anything) for bad input. ``progress(progress, job, result)`` is
    called once per finished piece of a cell, ``reading`` as the report reads the cases back (see ``load``), and
    ``tallied`` with the outcome counts once every case is counted, before the report is drawn. ``processes``
    (a run planned again from its request by ``--resume --concurrency N``) runs the pieces in that many processes
    instead of ``plan.concurrency``, which still splits the cells (see ``_complete``).
    Memory stays flat in the number of seeds: each case is written as it finishes, and only tallies come back.
    The folder is claimed for this run alone, and its manifest is written before any case runs, so a run that
    is stopped can be resumed (``resume_grid``).
    """
    tracking = options.tracking
    if tracking != "none" and is_managed() and len(plan.cells) != 1:
        raise UsageError(
            f"inside a Polyaxon job the harness logs into that job's one run, but {len(plan.cells)} cells were "
            "asked for; fix: pass one --policy and one --scenario (as polyaxonfiles/component.yaml does)"
        )
    # Load every policy and scenario once before writing anything, so bad input fails with nothing
    # half-written (the seeds change nothing in what is loaded: one is enough).
    grid = load_grid([c.policy_spec for c in plan.cells], [c.scenario_spec for c in plan.cells], [0])
    check_project(options.project)
    if checked is not None:  # the input is good: what the caller had to say can be said now
        checked()
    if begun is None:
        out = new_out(options.out)
        hold = claim(out, fresh=True)
    else:
        out, hold = begun.out, begun
    try:
        manifest = Manifest(plan.cells, plan.concurrency, _options_json(options), fingerprints(grid))
        try:
            write_atomic(out / MANIFEST, manifest.to_json())
        except OSError as exc:  # the request it began with is there: a resume plans the run again
            raise RunNotWritten(out, exc.strerror or str(exc)) from None
        return _complete(out, plan, options, grid, progress, reading, tallied, processes)
    finally:
        hold.release()


def resume_grid(
    out: Path,
    progress: Callable[[Progress, CellJob, CellResult], None] | None = None,
    report: bool = True,
    reading: Callable[[Reading], object] | None = None,
    tallied: Tallied | None = None,
    processes: int | None = None,
    checked: Callable[[], None] | None = None,
) -> GridSummary | None:
    """Complete a run that was stopped: run only the pieces and Polyaxon runs that are missing, then write the
    summary, run.json and the report (``report`` false: no report, whatever the run began with; ``reading`` and
    ``tallied`` as for ``run_grid``). ``processes`` (``--resume --concurrency N``) runs the missing pieces in that
    many processes; the pieces are still the ones the manifest's concurrency planned (see ``_complete``), and
    ``checked`` is called once the run is known to be resumable, before any of them runs. None when the run is
    already complete (its report written: a run stopped while writing it completes again from its pieces' parts).
    Raises ``UsageError`` when a scenario, a policy or the harness's own code changed since the run began (its
    results would mix two inputs)."""
    manifest = Manifest.read(out)
    if manifest.options.get("check") is True:
        raise UsageError(checked_here(out))
    hold = claim(out, fresh=False)
    try:
        # run.json is written before the report; the pieces' parts are removed once the report is written too.
        # Stopped in between, the run is complete on disk but for its report (and the JUnit file after it).
        # An edited manifest is refused even for a complete run: the JUnit file is written from it.
        manifest.check_unedited(out, kept_by_now=not manifest.digested and _any_tally(out))
        if (out / RUN_RECORD).is_file() and not (out / ".parts").exists():
            return None
        plan = Plan(manifest.cells, manifest.concurrency)
        options = _options_of(manifest.options, out)
        if not report:
            options = replace(options, report=False)
        grid = load_grid([c.policy_spec for c in plan.cells], [c.scenario_spec for c in plan.cells], [0])
        changed = changed_since(grid, manifest.fingerprints)
        if changed is not None:
            raise UsageError(
                f"{changed}: changed since the run began in {out}, so its cases would mix two inputs; fix: start a "
                "new run with another --out (or restore what changed)"
            )
        if not manifest.digested:  # begun before digests were kept: its pieces are written as now, so it keeps one
            write_atomic(out / MANIFEST, manifest.to_json())
        stray_temporaries(out)
        if checked is not None:  # the run is resumable: what the caller had to say can be said now
            checked()
        return _complete(out, plan, options, grid, progress, reading, tallied, processes)
    finally:
        hold.release()


#: Beside the pieces' tallies in ``.parts/``: the wall time the run has taken so far, over every invocation that
#: worked on it (a resume adds its own to it). Not ``.json``: it is no tally.
WALL_NOTE = "wall-time"


def _earlier_wall_s(out: Path) -> float:
    """The wall time invocations before this one spent on the run in ``out`` (0 for a new run, or a note damaged)."""
    try:
        value = float((out / ".parts" / WALL_NOTE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return 0.0
    return value if 0 <= value < float("inf") else 0.0


def _note_wall_s(out: Path, wall_s: float) -> None:
    (out / ".parts").mkdir(exist_ok=True)
    write_atomic(out / ".parts" / WALL_NOTE, f"{wall_s:.3f}\n")


def _any_tally(out: Path) -> bool:
    """Whether some finished piece of the run in ``out`` left a tally that reads as one of this harness's format
    (written alongside a manifest's digest)."""
    for path in sorted((out / ".parts").glob("*.json")):
        try:
            CellResult.from_json(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        return True
    return False


#: The options a run's manifest keeps, so ``--resume`` completes the run as it began.
_PERSISTED = (
    "tracking",
    "project",
    "report",
    "records",
    "failing_files",
    "case_timeout_s",
    "unfired",
    "junit",
    "check",
)


def _options_json(options: GridOptions) -> dict[str, object]:
    values = {name: getattr(options, name) for name in _PERSISTED}
    values["junit"] = str(options.junit) if options.junit is not None else None
    return values


class _TrackedNote(TypedDict):
    """What ``_Tracker`` notes in ``.parts/`` once a cell's Polyaxon run is recorded."""

    run_uuid: str | None
    status: Literal["succeeded", "failed", "error"]
    error: str | None


_TRACKED_NOTE = TypeAdapter(_TrackedNote)


@with_config(ConfigDict(strict=True))
class _OptionsShape(TypedDict, total=False):
    """The options a manifest keeps, typed as ``GridOptions`` types them (``junit`` as text); a manifest from
    before "junit" or "unfired" lacks it."""

    tracking: TrackingMode
    project: str
    report: bool
    records: RecordsMode
    failing_files: Annotated[int, Field(ge=0, le=SEED_COUNT_MAX)] | None
    case_timeout_s: Annotated[float, Field(ge=0, le=CASE_TIMEOUT_MAX_S)] | None
    unfired: UnfiredMode
    junit: str | None
    check: bool


_OPTIONS_SHAPE = TypeAdapter(_OptionsShape)


def _options_of(data: dict[str, Any], out: Path) -> GridOptions:
    try:
        checked = _OPTIONS_SHAPE.validate_python(data)
    except ValidationError as exc:
        raise UsageError(
            f"{out / MANIFEST}: options {wrong_field(exc)}; fix: start the run anew with another --out (the "
            "manifest was edited or damaged)"
        ) from None
    project = checked.get("project")
    if project is not None and not _PROJECT.fullmatch(project):
        raise UsageError(
            f"{out / MANIFEST}: options field 'project': '{project}' is not a Polyaxon project name; fix: start "
            "the run anew with another --out (the manifest was edited or damaged)"
        )
    values: dict[str, Any] = {name: checked[name] for name in _PERSISTED if name in checked}  # type: ignore[literal-required]
    junit = checked.get("junit")
    values["junit"] = Path(junit) if junit else None
    return GridOptions(out=out, **values)


def begun_as(out: Path) -> tuple[Plan, GridOptions]:
    """The plan and the options the run in ``out`` began with, from its manifest."""
    manifest = Manifest.read(out)
    return Plan(manifest.cells, manifest.concurrency), _options_of(manifest.options, out)


def _complete(
    out: Path,
    plan: Plan,
    options: GridOptions,
    grid: Grid,
    progress: Callable[[Progress, CellJob, CellResult], None] | None,
    reading: Callable[[Reading], object] | None,
    tallied: Tallied | None = None,
    processes: int | None = None,
) -> GridSummary:
    """Run what is missing of the run in ``out`` (everything, for a new run), then write its files.

    The cells are split into pieces by ``plan.concurrency`` alone (for a resumed run, the manifest's), so a piece
    that finished before the run was stopped is found by its tally under the same name, and the pieces still
    missing are exactly the rest. ``processes`` (default ``plan.concurrency``) is only how many of them run side
    by side: each piece is a job of its own, whatever process runs it and whenever, so the cases, summary.csv and
    the counts are the same for any number of processes. Split anew by ``processes``, a cell would not be safe to
    resume: a piece is found by its cell and its index alone (``.parts/<cell>-<part>``), so piece k of the new
    split would be taken for the finished piece k of the old one though it holds other seeds (cases left out, or
    run and counted twice), and the shares of ``--failing-files`` and the compact records' files would not be a
    clean run's."""
    workers = processes or plan.concurrency
    side_by_side = workers if options.isolate else 1  # a test's run in this process runs one piece at a time
    jobs = [
        (i, job)
        for i, cell in enumerate(plan.cells)
        for job in pieces(
            cell,
            out,
            plan.concurrency,
            _records(options.records, len(cell.seeds)),
            options.report,
            options.case_timeout_s,
            options.failing_files,
        )
    ]
    results = _Results(Counter(i for i, _ in jobs))
    todo: list[int] = []
    for index, (cell, job) in enumerate(jobs):
        tally = summary_part_path(out, job, cell).with_suffix(".json")
        try:
            found = CellResult.from_json(tally.read_text(encoding="utf-8"))
        except (OSError, ValueError):  # not run, or its tally damaged since: it runs (again), as a clean run would
            todo.append(index)
            continue
        if not files_in_place(out, found.files):  # a file of it deleted or cut short since: it runs again
            todo.append(index)
            continue
        results.add(cell, found)
    tracker = _Tracker(out, plan, options)
    for cell in range(len(plan.cells)):
        if results.complete(cell):
            tracker.track(cell, results[cell])  # finished before the run was stopped, maybe not tracked
    started = time.perf_counter()
    earlier_s = _earlier_wall_s(out)
    done = cases_done = 0
    # A scenario of variants (a crash-point scenario: one per boundary) is that many cases a seed.
    variants = {spec: len(scenario_cases(spec)) for spec in dict.fromkeys(jobs[i][1].scenario_spec for i in todo)}
    cases = sum(len(jobs[i][1].seeds) * variants[jobs[i][1].scenario_spec] for i in todo)

    def finished(index: int, result: CellResult) -> None:
        nonlocal done, cases_done
        cell, job = jobs[index]
        done += 1
        cases_done += len(job.seeds) * variants[job.scenario_spec]
        if progress is not None:
            elapsed_s = time.perf_counter() - started
            progress(Progress(done, len(todo), cases_done, cases, elapsed_s, side_by_side), job, result)
        if results.add(cell, result):
            tracker.track(cell, results[cell])
        _note_wall_s(out, earlier_s + time.perf_counter() - started)

    try:
        if options.isolate:
            from harness.run.pool import supervise

            chosen = [Piece(*jobs[i]) for i in todo]
            supervise(chosen, workers, options.case_timeout_s, lambda k, r: finished(todo[k], r))
        else:
            for index in todo:
                cell, job = jobs[index]
                finished(index, execute_cell(job, cell))
        cells: list[CellResult] = [results[i] for i in range(len(plan.cells))]
        summary = write_summary(out, [summary_part_path(out, job, cell) for cell, job in jobs])
        counts: dict[tuple[str, str], Counter[str]] = {}
        for merged in cells:
            for key, counter in merged.counts.items():
                counts.setdefault(key, Counter()).update(counter)
        coverage = merge_coverage(c for cell in cells for c in cell.coverage)
        errors = harness_errors(counts)
        write_atomic(out / "coverage.json", coverage_json(coverage, errors))
        never, unknown = unfired_or_unknown(coverage, errors)  # as coverage.json counts them
        tracked = [(cell, tracker.tracked.get(i)) for i, cell in enumerate(plan.cells)]
        note = tracking_note(options.tracking, options.project, out, [t for _, t in tracked if t])
        write_atomic(
            out / RUN_RECORD,
            json.dumps(
                {
                    "cells": len(plan.cells),
                    "cases": sum(c.cases for c in cells),
                    # The grid's order, which the printed table and report.html both follow.
                    "policies": list(grid.policies),
                    "scenarios": list(grid.scenarios),
                    # How the cells were split (the manifest's), and the processes that ran this invocation's
                    # pieces: another only for a run resumed with --concurrency.
                    "concurrency": plan.concurrency,
                    "processes": side_by_side,
                    # Every invocation's that worked on the run (up to its last finished piece, for one stopped).
                    "wall_time_s": round(earlier_s + time.perf_counter() - started, 3),
                    "tracking": options.tracking,
                    "project": options.project,
                    "polyaxon_runs": {f"{c.policy_spec} x {c.scenario_spec}": t.run_uuid for c, t in tracked if t},
                    # What the exit status was made of, for a resume of the complete run to give it again.
                    "harness_errors": sum(c.errors for c in cells),
                    "unfired": never,
                    "unknown": unknown,
                    "tracking_ok": note.ok,
                },
                indent=2,
            )
            + "\n",
        )
        # After run.json, so the page does not call its own run incomplete (a run stopped while drawing it
        # is complete on disk: `harness report` draws the page again).
        page = None
        # A page drawn while the run was stopped (``harness report``) calls it incomplete: drawn again, even under
        # --no-report, so that no page in the folder tells less than the folder holds.
        if options.report or (out / REPORT_HTML).is_file():
            if tallied is not None:  # what the run found, said before the page takes its seconds to draw
                tallied(counts, grid.policies, grid.scenarios)
            from harness.present.html_report import write_report
            from harness.run.pictures import draw_timelines

            page = write_report(
                out, order=grid.policies, draw=lambda paths: draw_timelines(paths, side_by_side), progress=reading
            )
    except KeyboardInterrupt:
        with contextlib.suppress(OSError):
            _note_wall_s(out, earlier_s + time.perf_counter() - started)
        raise RunInterrupted(out) from None
    except OSError as exc:
        raise RunNotWritten(out, exc.strerror or str(exc)) from None
    shutil.rmtree(out / ".parts", ignore_errors=True)
    # What a run without --failing-files wrote beside its compact records (its end says so when it is a lot).
    compact = {cell for cell, job in jobs if job.records == "compact"} if options.failing_files is None else set()
    beside = [size for i in compact for name, size in cells[i].files.items() if name.endswith("/recovery.json")]
    return GridSummary(
        out,
        grid.policies,
        grid.scenarios,
        counts,
        tuple(n for cell in cells for n in cell.notable),
        summary,
        note,
        page,
        coverage,
        sum(c.errors for c in cells),
        (len(beside), sum(beside)),
    )


@dataclass(slots=True)
class _Tracker:
    """Records each finished cell as one Polyaxon run, once, in this process, noting it in the run folder so
    a resumed run neither repeats a run nor leaves a half-written one behind."""

    out: Path
    plan: Plan
    options: GridOptions
    tracked: dict[int, Tracked] = field(default_factory=dict)

    def track(self, cell: int, result: CellResult) -> None:
        if self.options.tracking == "none":
            return
        notes = self.out / ".parts"
        done, begun = notes / f"{cell:06d}.plx.json", notes / f"{cell:06d}.plx-begun"
        try:
            data = _TRACKED_NOTE.validate_json(done.read_bytes())
        except (OSError, ValueError):  # not tracked yet, or its note damaged since: the cell is tracked anew
            pass
        else:
            self.tracked[cell] = Tracked(data["run_uuid"], data["status"], data["error"])
            return
        if begun.is_file():  # stopped half-way: that run is incomplete, so it goes, and the cell is tracked anew
            shutil.rmtree(
                offline_root(self.out) / "runs" / begun.read_text(encoding="utf-8").strip(), ignore_errors=True
            )
        run_uuid = uuid.uuid4().hex
        write_atomic(begun, run_uuid)
        tracked = _track(cell, result, self.plan, self.out, self.options, run_uuid)
        write_atomic(done, json.dumps({"run_uuid": tracked.run_uuid, "status": tracked.status, "error": tracked.error}))
        self.tracked[cell] = tracked


def _records(mode: RecordsMode, seeds: int) -> Literal["full", "compact"]:
    if mode == "auto":
        return "compact" if seeds > COMPACT_ABOVE else "full"
    return mode


def pieces(
    cell: Cell,
    out: Path,
    concurrency: int,
    records: Literal["full", "compact"],
    timelines: bool = False,
    case_timeout_s: float | None = None,
    failing_files: int | None = None,
) -> list[CellJob]:
    """Split a cell's seeds into pieces: enough for every process to share a large cell, none under ``PIECE_MIN``
    (a smaller cell is one piece) and none over ``PIECE_MAX``.

    With ``timelines``, the first piece draws its cell's timelines for the report as it ends (the pictures are
    drawn while the parent tracks other cells), if it holds the cell's lowest seeds, as it does when they are
    given in increasing order; the report draws whatever is still missing at the end. ``failing_files`` (compact
    records only) is shared among the pieces as evenly as their seeds, the first pieces taking one more."""
    seeds = cell.seeds
    shared = max(1, min(concurrency, len(seeds) // PIECE_MIN))  # pieces for the processes to share
    parts = max(shared, -(-len(seeds) // PIECE_MAX))
    # As even as they come: sizes differ by one at most, so the last is never a remainder under PIECE_MIN.
    size, longer = divmod(len(seeds), parts)
    starts = [n * size + min(n, longer) for n in range(parts + 1)]
    drawn_first = timelines and (parts == 1 or max(seeds[: starts[1]]) < min(seeds[starts[1] :]))
    return [
        CellJob(
            cell.policy_spec,
            cell.scenario_spec,
            seeds[starts[n] : starts[n + 1]],
            out,
            part=n,
            parts=parts,
            records=records,
            timelines=drawn_first and n == 0,
            case_timeout_s=case_timeout_s,
            failing_files=None if failing_files is None else failing_files // parts + (n < failing_files % parts),
        )
        for n in range(parts)
    ]


def merge_coverage(parts: Iterable[FaultCoverage]) -> tuple[FaultCoverage, ...]:
    """One entry per (scenario, declared fault), summed over cells, in the order first seen."""
    merged: dict[tuple[str, int], FaultCoverage] = {}
    for c in parts:
        key = (c.scenario, c.index)
        merged[key] = merged[key].plus(c) if key in merged else c
    return tuple(merged.values())


def coverage_json(coverage: Sequence[FaultCoverage], errors: Mapping[str, int]) -> str:
    """``coverage.json``: for every declared fault, the cases that reached its site and those it fired in, and
    the cases of its scenario that ended in ``harness_error`` (counted in neither: their coverage is unknown);
    for every declared operator event, the cases in which its trigger came and those in which it acted.

    ``unfired`` counts the faults and operator events that fired in no case where every case of their scenario
    finished; ``unknown`` those that fired in no finished case of a scenario some of whose cases did not finish
    (they may have fired there)."""

    def rows(kind: str, name: str) -> list[dict[str, object]]:
        return [
            {
                "scenario": c.scenario,
                name: c.fault,
                "index": c.index,
                "reached": c.reached,
                "fired": c.fired,
                "harness_errors": errors.get(c.scenario, 0),
            }
            for c in coverage
            if c.kind == kind
        ]

    never, unknown = unfired_or_unknown(coverage, errors)
    document = {
        "faults": rows("fault", "fault"),
        "operator_events": rows("operator", "event"),
        "unfired": never,
        "unknown": unknown,
    }
    return json.dumps(document, indent=2) + "\n"


@dataclass(slots=True)
class _Results:
    """Each cell's merged tally, as its pieces come in."""

    expected: Counter[int]
    merged: dict[int, CellResult] = field(default_factory=dict)
    seen: Counter[int] = field(default_factory=Counter)

    def add(self, cell: int, result: CellResult) -> bool:
        """Record one piece; True when it was the cell's last."""
        self.seen[cell] += 1
        self.merged.setdefault(cell, CellResult()).merge(result)
        return self.complete(cell)

    def complete(self, cell: int) -> bool:
        return self.seen[cell] == self.expected[cell]

    def __getitem__(self, cell: int) -> CellResult:
        return self.merged[cell]


def _track(cell: int, result: CellResult, plan: Plan, out: Path, options: GridOptions, run_uuid: str) -> Tracked:
    """Record one finished cell as one Polyaxon run."""
    from harness.plx.tracking import CellRecord, track_cell

    spec = plan.cells[cell]
    scenarios = sorted({s for _, s in result.counts}, key=lambda s: s)
    record = CellRecord(
        policy=next(iter(result.counts))[0] if result.counts else spec.policy_spec,
        scenario=cell_scenario(scenarios) if scenarios else spec.scenario_spec,
        seeds=spec.seeds,
        identity=result.identity,
        counts=dict(result.counts),
        metrics={name: t.total / t.known for name, t in result.metrics.items() if t.known},
        first_error=next((n for n in result.notable if n.error is not None), None),
    )
    return track_cell(record, out, options.project, run_uuid)


def tracking_note(tracking: TrackingMode, project: str, out: Path, tracked: Sequence[Tracked]) -> TrackingNote:
    """Say once what happened to the Polyaxon runs; push them in server mode."""
    if tracking == "none":
        return TrackingNote(True, None)
    root = offline_root(out)
    # The harness's own push: one request at a time, each retried, the project created, and the runs the server has
    # already skipped, so that it can be given again after a failure (Polyaxon's `ops push` re-sends those, and
    # exits 0 when the server refuses a run). The project as given, owner and all.
    named = "" if project == DEFAULT_PROJECT else f" --project {shlex.quote(project)}"
    push_later = f"python -m harness push {shlex.quote(str(out))}{named}"
    broken = [t for t in tracked if t.status == "error"]
    if broken:
        return TrackingNote(
            False,
            f"harness: Polyaxon tracking failed for {len(broken)} {'run' if len(broken) == 1 else 'runs'} "
            f"({broken[0].error}); "
            f"the files are complete in {out}",
        )
    if is_managed():
        return TrackingNote(True, f"Polyaxon: logged into this job's run {tracked[0].run_uuid if tracked else ''}")
    uuids = [t.run_uuid for t in tracked if t.run_uuid]
    if tracking == "offline":
        return TrackingNote(
            True,
            f"Polyaxon: {len(uuids)} offline run{'' if len(uuids) == 1 else 's'} in {root}; "
            f"browse: python -m harness view {out}; send to a server: {push_later}",
        )
    result = push_runs(root, uuids, project)
    if result.error:
        # Unset, Polyaxon's client tries its own default (localhost:8000), and the error says only that it was refused.
        unset = "" if os.environ.get("POLYAXON_HOST") else "; POLYAXON_HOST is not set: set it to the server's address"
        return TrackingNote(
            False,
            f"harness: could not send runs to Polyaxon ({result.error}{unset}); {len(result.pushed)} of {len(uuids)} "
            f"sent; nothing local is lost: the runs are in {root}; send the rest later: {push_later}",
        )
    sent = len(result.pushed)
    return TrackingNote(True, f"Polyaxon: {sent} run{'' if sent == 1 else 's'} sent to project {project}")
