"""Running a whole grid: the output folder, the cells side by side, summary.csv, run.json, Polyaxon, the report.

``run_grid`` does the work and returns a ``GridSummary``; the command line only prints it and turns it into
an exit status. Progress is reported through a callback, one call per finished cell.
"""

from __future__ import annotations

import json
import multiprocessing
import re
import shlex
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Literal

from harness.plx.tracking import (
    DEFAULT_PROJECT,
    Tracked,
    TrackingMode,
    is_managed,
    offline_root,
    push_runs,
    split_project,
)
from harness.run.cell import CaseLine, CellJob, CellResult, FaultCoverage, cell_scenario, execute_cell
from harness.run.files import write_atomic, write_summary
from harness.run.plan import Cell, Plan, UsageError, load_grid
from harness.seeds import COMPACT_ABOVE

__all__ = [
    "PIECE_MAX",
    "GridOptions",
    "GridSummary",
    "TrackingNote",
    "check_project",
    "new_out",
    "pieces",
    "run_grid",
    "tracking_note",
]

_PROJECT = re.compile(r"^([a-z0-9][a-z0-9_-]*/)?[a-z0-9][a-z0-9_-]*$")


RecordsMode = Literal["auto", "full", "compact"]
#: A piece of a cell holds at most this many seeds: large cells are split so that processes share them.
PIECE_MAX = 5000


@dataclass(frozen=True, slots=True)
class GridOptions:
    out: Path | None = None
    tracking: TrackingMode = "offline"
    project: str = DEFAULT_PROJECT
    report: bool = True
    #: ``auto``: compact records for cells of more than ``COMPACT_ABOVE`` seeds, a recovery.json per case otherwise.
    records: RecordsMode = "auto"


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

    @property
    def cases(self) -> int:
        return sum(sum(c.values()) for c in self.counts.values())

    @property
    def errors(self) -> tuple[CaseLine, ...]:
        return tuple(n for n in self.notable if n.outcome == "harness_error")

    @property
    def unfired(self) -> tuple[FaultCoverage, ...]:
        """Declared faults that fired in no case of the run: scenarios that tested nothing they claim to."""
        return tuple(c for c in self.coverage if c.fired == 0)


def check_project(project: str) -> None:
    if not _PROJECT.match(project):
        raise UsageError(f"--project '{project}': not a Polyaxon project name; fix: use [owner/]name in lower case")


def new_out(out: Path | None) -> Path:
    """Create the output folder: the given one (new or empty), or a new ``reports/runs/<UTC time>[-n]``."""
    if out is not None:
        if out.exists() and not out.is_dir():
            raise UsageError(f"--out {out}: is a file; fix: give a folder")
        if out.exists() and any(out.iterdir()):
            raise UsageError(f"output folder {out} is not empty; fix: pass another --out")
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UsageError(f"--out {out}: cannot create it ({exc.strerror}); fix: give a writable folder") from exc
        return out
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    base = Path("reports") / "runs"
    base.mkdir(parents=True, exist_ok=True)
    for n in range(1000):
        candidate = base / (stamp if n == 0 else f"{stamp}-{n}")
        try:
            candidate.mkdir()  # atomic: two runs started in the same second get different folders
            return candidate
        except FileExistsError:
            continue
    raise UsageError(f"too many runs named {stamp} in {base}; fix: pass --out")


def run_grid(
    plan: Plan, options: GridOptions, progress: Callable[[int, int, CellJob, CellResult], None] | None = None
) -> GridSummary:
    """Check everything, then run every cell of ``plan``, write the run's files, and track it.

    Raises ``InputError`` (before writing anything) for bad input. ``progress(done, total, job, result)`` is
    called once per finished piece of a cell. Memory stays flat in the number of seeds: each case is written
    as it finishes, and only tallies come back.
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
    out = new_out(options.out)
    jobs = [
        (i, job)
        for i, cell in enumerate(plan.cells)
        for job in pieces(cell, out, plan.concurrency, _records(options.records, len(cell.seeds)), options.report)
    ]
    started = time.perf_counter()
    results = _execute(jobs, plan.concurrency, progress, partial(_track, plan=plan, out=out, options=options))
    cells = [results[i] for i in range(len(plan.cells))]
    parts = [r.summary_part for i in range(len(plan.cells)) for r in results.pieces[i] if r.summary_part]
    summary = write_summary(out, parts)
    coverage = merge_coverage(c for cell in cells for c in cell.coverage)
    write_atomic(out / "coverage.json", coverage_json(coverage))
    tracked = [(cell, results.tracked.get(i)) for i, cell in enumerate(plan.cells)]
    write_atomic(
        out / "run.json",
        json.dumps(
            {
                "cells": len(plan.cells),
                "cases": sum(c.cases for c in cells),
                "concurrency": plan.concurrency,
                "wall_time_s": round(time.perf_counter() - started, 3),
                "tracking": tracking,
                "project": options.project,
                "polyaxon_runs": {f"{c.policy_spec} x {c.scenario_spec}": t.run_uuid for c, t in tracked if t},
            },
            indent=2,
        )
        + "\n",
    )
    note = tracking_note(tracking, options.project, out, [t for _, t in tracked if t])
    page = None
    if options.report:
        from harness.present.html_report import write_report

        page = write_report(out)
    counts: dict[tuple[str, str], Counter[str]] = {}
    for cell in cells:
        for key, counter in cell.counts.items():
            counts.setdefault(key, Counter()).update(counter)
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
    )


def _records(mode: RecordsMode, seeds: int) -> Literal["full", "compact"]:
    if mode == "auto":
        return "compact" if seeds > COMPACT_ABOVE else "full"
    return mode


def pieces(
    cell: Cell, out: Path, concurrency: int, records: Literal["full", "compact"], timelines: bool
) -> list[CellJob]:
    """Split a cell's seeds into pieces: enough for every process to share a large cell, none over ``PIECE_MAX``."""
    seeds = cell.seeds
    size = max(1, min(PIECE_MAX, -(-len(seeds) // max(1, concurrency))))
    return [
        CellJob(
            cell.policy_spec,
            cell.scenario_spec,
            seeds[start : start + size],
            out,
            part=n,
            records=records,
            timelines=timelines,
        )
        for n, start in enumerate(range(0, len(seeds), size))
    ]


def merge_coverage(parts: Iterable[FaultCoverage]) -> tuple[FaultCoverage, ...]:
    """One entry per (scenario, declared fault), summed over cells, in the order first seen."""
    merged: dict[tuple[str, int], FaultCoverage] = {}
    for c in parts:
        key = (c.scenario, c.index)
        merged[key] = merged[key].plus(c) if key in merged else c
    return tuple(merged.values())


def coverage_json(coverage: Sequence[FaultCoverage]) -> str:
    """``coverage.json``: for every declared fault, the cases that reached its site and those it fired in."""
    rows = [
        {"scenario": c.scenario, "fault": c.fault, "index": c.index, "reached": c.reached, "fired": c.fired}
        for c in coverage
    ]
    return json.dumps({"faults": rows, "unfired": sum(1 for c in coverage if c.fired == 0)}, indent=2) + "\n"


@dataclass(slots=True)
class _Results:
    """The pieces' tallies as they arrive, each cell's merged tally, and each cell's Polyaxon run."""

    expected: Counter[int]
    pieces: dict[int, list[CellResult]] = field(default_factory=dict)
    merged: dict[int, CellResult] = field(default_factory=dict)
    tracked: dict[int, Tracked] = field(default_factory=dict)

    def add(self, cell: int, result: CellResult) -> bool:
        """Record one piece; True when it was the cell's last."""
        self.pieces.setdefault(cell, []).append(result)
        self.merged.setdefault(cell, CellResult()).merge(result)
        return len(self.pieces[cell]) == self.expected[cell]

    def __getitem__(self, cell: int) -> CellResult:
        return self.merged[cell]


def _execute(
    jobs: Sequence[tuple[int, CellJob]],
    concurrency: int,
    progress: Callable[[int, int, CellJob, CellResult], None] | None,
    track: Callable[[int, CellResult], Tracked | None],
) -> _Results:
    """Run the pieces, ``concurrency`` at a time; track each cell once its last piece is in."""
    results = _Results(Counter(i for i, _ in jobs))
    done = 0

    def finished(index: int, result: CellResult) -> int | None:
        nonlocal done
        cell, job = jobs[index]
        last = results.add(cell, result)
        done += 1
        if progress is not None:
            progress(done, len(jobs), job, result)
        return cell if last else None

    if concurrency <= 1 or len(jobs) <= 1:
        for index, (n, job) in enumerate(jobs):
            if finished(index, execute_cell(job, n)) is not None:
                _keep(results, n, track(n, results[n]))
    else:
        # spawn, not fork: Polyaxon's tracking keeps threads and process-wide state that must not be forked.
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=concurrency, mp_context=context) as pool:
            futures = {pool.submit(execute_cell, job, n): index for index, (n, job) in enumerate(jobs)}
            tracking: dict[Future[Tracked | None], int] = {}
            for piece in as_completed(futures):
                last = finished(futures[piece], piece.result())
                if last is not None:
                    tracking[pool.submit(track, last, results[last])] = last
            for run in as_completed(tracking):
                _keep(results, tracking[run], run.result())
    for parts in results.pieces.values():
        parts.sort(key=lambda r: str(r.summary_part))  # piece order: the summary rows come out in seed order
    return results


def _keep(results: _Results, cell: int, tracked: Tracked | None) -> None:
    if tracked is not None:
        results.tracked[cell] = tracked


def _track(cell: int, result: CellResult, plan: Plan, out: Path, options: GridOptions) -> Tracked | None:
    """Record one finished cell as one Polyaxon run (in a worker process when there is a pool)."""
    if options.tracking == "none":
        return None
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
    return track_cell(record, out, options.project)


def tracking_note(tracking: TrackingMode, project: str, out: Path, tracked: Sequence[Tracked]) -> TrackingNote:
    """Say once what happened to the Polyaxon runs; push them in server mode."""
    if tracking == "none":
        return TrackingNote(True, None)
    root = offline_root(out)
    push_later = f"polyaxon ops push -p {split_project(project)[1]} --path {shlex.quote(str(root))} -a"
    broken = [t for t in tracked if t.status == "error"]
    if broken:
        return TrackingNote(
            False,
            f"harness: Polyaxon tracking failed for {len(broken)} runs ({broken[0].error}); "
            f"the files are complete in {out}",
        )
    if is_managed():
        return TrackingNote(True, f"Polyaxon: logged into this job's run {tracked[0].run_uuid if tracked else ''}")
    uuids = [t.run_uuid for t in tracked if t.run_uuid]
    if tracking == "offline":
        return TrackingNote(
            True,
            f"Polyaxon: {len(uuids)} offline runs in {root}; browse: python -m harness view {out}; "
            f"send to a server: {push_later}",
        )
    result = push_runs(root, uuids, project)
    if result.error:
        return TrackingNote(
            False,
            f"harness: could not send runs to Polyaxon ({result.error}); {len(result.pushed)} of {len(uuids)} "
            f"sent; nothing local is lost: the runs are in {root}; send them later: {push_later}",
        )
    return TrackingNote(True, f"Polyaxon: {len(result.pushed)} runs sent to project {project}")
