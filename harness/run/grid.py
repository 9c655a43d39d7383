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
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from harness.model import CaseReport
from harness.plx.tracking import (
    DEFAULT_PROJECT,
    Tracked,
    TrackingMode,
    is_managed,
    offline_root,
    push_runs,
    split_project,
)
from harness.run.cell import CellJob, CellResult, FaultCoverage, execute_cell
from harness.run.files import write_atomic, write_summary
from harness.run.plan import Plan, UsageError, load_grid

__all__ = ["GridOptions", "GridSummary", "TrackingNote", "check_project", "new_out", "run_grid", "tracking_note"]

_PROJECT = re.compile(r"^([a-z0-9][a-z0-9_-]*/)?[a-z0-9][a-z0-9_-]*$")


@dataclass(frozen=True, slots=True)
class GridOptions:
    out: Path | None = None
    tracking: TrackingMode = "offline"
    project: str = DEFAULT_PROJECT
    report: bool = True


@dataclass(frozen=True, slots=True)
class TrackingNote:
    """What happened to the Polyaxon runs, said once: ``ok`` false means the exit status is 3."""

    ok: bool
    message: str | None


@dataclass(frozen=True, slots=True)
class GridSummary:
    out: Path
    reports: tuple[CaseReport, ...]
    policies: tuple[str, ...]
    scenarios: tuple[str, ...]
    summary_csv: Path
    tracking: TrackingNote
    report_html: Path | None
    #: Every declared fault of every scenario run, with the cases that reached it and those it fired in.
    coverage: tuple[FaultCoverage, ...] = ()

    @property
    def errors(self) -> tuple[CaseReport, ...]:
        return tuple(r for r in self.reports if r.outcome == "harness_error")

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
    called once per finished cell.
    """
    tracking = options.tracking
    if tracking != "none" and is_managed() and len(plan.cells) != 1:
        raise UsageError(
            f"inside a Polyaxon job the harness logs into that job's one run, but {len(plan.cells)} cells were "
            "asked for; fix: pass one --policy and one --scenario (as polyaxonfiles/component.yaml does)"
        )
    # Load everything once before writing anything, so bad input fails with nothing half-written.
    grid = load_grid(
        [c.policy_spec for c in plan.cells],
        [c.scenario_spec for c in plan.cells],
        sorted({s for c in plan.cells for s in c.seeds}),
    )
    check_project(options.project)
    out = new_out(options.out)
    jobs = [
        CellJob(c.policy_spec, c.scenario_spec, c.seeds, out, tracking, options.project, timelines=options.report)
        for c in plan.cells
    ]
    started = time.perf_counter()
    results = _execute(jobs, plan.concurrency, progress)
    reports = tuple(r for result in results for r in result.reports)
    summary = write_summary(out, reports)
    coverage = merge_coverage(c for result in results for c in result.coverage)
    write_atomic(out / "coverage.json", coverage_json(coverage))
    tracked = [(job, result.tracked) for job, result in zip(jobs, results, strict=True) if result.tracked]
    write_atomic(
        out / "run.json",
        json.dumps(
            {
                "cells": len(jobs),
                "cases": len(reports),
                "concurrency": plan.concurrency,
                "wall_time_s": round(time.perf_counter() - started, 3),
                "tracking": tracking,
                "project": options.project,
                "polyaxon_runs": {f"{j.policy_spec} x {j.scenario_spec}": t.run_uuid for j, t in tracked if t},
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
    return GridSummary(out, reports, grid.policies, grid.scenarios, summary, note, page, coverage)


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


def _execute(
    jobs: Sequence[CellJob], concurrency: int, progress: Callable[[int, int, CellJob, CellResult], None] | None
) -> list[CellResult]:
    """Run the cells, ``concurrency`` at a time, and return their results in grid order."""
    results: dict[int, CellResult] = {}

    def done(i: int, result: CellResult) -> None:
        results[i] = result
        if progress is not None:
            progress(len(results), len(jobs), jobs[i], result)

    if concurrency <= 1 or len(jobs) <= 1:
        for i, job in enumerate(jobs):
            done(i, execute_cell(job))
    else:
        # spawn, not fork: Polyaxon's tracking keeps threads and process-wide state that must not be forked.
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=concurrency, mp_context=context) as pool:
            futures = {pool.submit(execute_cell, job): i for i, job in enumerate(jobs)}
            for future in as_completed(futures):
                done(futures[future], future.result())
    return [results[i] for i in range(len(jobs))]


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
