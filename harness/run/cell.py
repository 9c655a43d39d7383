"""One policy x scenario cell: every seed's case run, written, and recorded as one Polyaxon run."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from harness.model import CaseReport
from harness.plx.tracking import Tracked, TrackingMode
from harness.run.case import run_case
from harness.run.files import case_path, recovery_json, write_atomic
from harness.run.plan import load_grid
from harness.scenario.faults import CONNECTOR_PHASES

__all__ = ["CellJob", "CellResult", "execute_cell"]


@dataclass(frozen=True, slots=True)
class CellJob:
    """Everything one worker process needs to run, write and track one policy x scenario cell."""

    policy_spec: str
    scenario_spec: str
    seeds: tuple[int, ...]
    out: Path
    tracking: TrackingMode
    project: str
    #: Draw ``timeline.png`` beside the recovery.json of each incorrect or unresolved case (for the report).
    timelines: bool = False


@dataclass(frozen=True, slots=True)
class CellResult:
    reports: tuple[CaseReport, ...]
    tracked: Tracked | None


def execute_cell(job: CellJob) -> CellResult:
    """Run every seed of one cell, write each recovery.json, and record the cell as one Polyaxon run.

    Module-level and picklable so a process pool can run cells side by side. Pictures and Polyaxon are
    imported only when asked for: each costs about a second to import.
    """
    grid = load_grid([job.policy_spec], [job.scenario_spec], job.seeds)
    reports, texts = [], []
    for case in grid.cases:
        report, _ = run_case(case)
        text = recovery_json(report, secrets=[case.scenario.approval.token.get_secret_value()])
        path = case_path(job.out, report)
        write_atomic(path, text)
        if job.timelines:
            from harness.present.html_report import TIMELINE_OUTCOMES, render_timeline

            if report.outcome in TIMELINE_OUTCOMES:
                render_timeline(path)
        reports.append(report)
        texts.append(text)
    tracked = None
    if job.tracking != "none":
        from harness.plx.tracking import CellRecord, track_cell

        cell = CellRecord(grid.policies[0], _cell_scenario(grid.scenarios), tuple(reports), tuple(texts))
        tracked = track_cell(cell, job.out, job.project, write_atomic)
    return CellResult(tuple(reports), tracked)


def _cell_scenario(scenarios: tuple[str, ...]) -> str:
    """The cell's scenario: its one scenario, or the name its variants share (they are ``<name>-<phase>``)."""
    if len(scenarios) == 1:
        return scenarios[0]
    first = scenarios[0]
    return next((first.removesuffix(f"-{p}") for p in CONNECTOR_PHASES if first.endswith(f"-{p}")), first)
