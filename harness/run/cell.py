"""One policy x scenario cell: every seed's case run, written, and recorded as one Polyaxon run."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from harness.model import CaseReport
from harness.plx.tracking import Tracked, TrackingMode
from harness.run.case import run_case
from harness.run.files import case_path, recovery_json, write_atomic
from harness.run.plan import load_grid
from harness.scenario import FaultBase
from harness.scenario.faults import CONNECTOR_PHASES

__all__ = ["CellJob", "CellResult", "FaultCoverage", "describe", "execute_cell"]


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
class FaultCoverage:
    """How one declared fault of a scenario fared over a set of cases."""

    scenario: str
    index: int
    fault: str
    #: Cases in which the fault's site (its boundary, action and occurrence) was reached.
    reached: int
    #: Cases in which it fired.
    fired: int

    def plus(self, other: FaultCoverage) -> FaultCoverage:
        return FaultCoverage(
            self.scenario, self.index, self.fault, self.reached + other.reached, self.fired + other.fired
        )


@dataclass(frozen=True, slots=True)
class CellResult:
    reports: tuple[CaseReport, ...]
    tracked: Tracked | None
    coverage: tuple[FaultCoverage, ...] = ()


def describe(fault: FaultBase) -> str:
    """A fault in one line: its boundary and the fields it sets (``request_delayed nth=2 delay_s=30.0``)."""
    fields = fault.model_dump(exclude={"boundary"}, exclude_defaults=True)
    return " ".join([fault.boundary, *(f"{k}={'null' if v is None else v}" for k, v in fields.items())])


def execute_cell(job: CellJob) -> CellResult:
    """Run every seed of one cell, write each recovery.json, and record the cell as one Polyaxon run.

    Module-level and picklable so a process pool can run cells side by side. Pictures and Polyaxon are
    imported only when asked for: each costs about a second to import.
    """
    grid = load_grid([job.policy_spec], [job.scenario_spec], job.seeds)
    reports, texts = [], []
    coverage: dict[tuple[str, int], FaultCoverage] = {}
    for case in grid.cases:
        report, result = run_case(case)
        for i, fault in enumerate(case.scenario.faults):
            reached, fired = result.coverage[i] if result is not None else (0, 0)
            seen = FaultCoverage(case.scenario.name, i, describe(fault), int(reached > 0), int(fired > 0))
            key = (case.scenario.name, i)
            coverage[key] = coverage[key].plus(seen) if key in coverage else seen
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
    return CellResult(tuple(reports), tracked, tuple(coverage.values()))


def _cell_scenario(scenarios: tuple[str, ...]) -> str:
    """The cell's scenario: its one scenario, or the name its variants share (they are ``<name>-<phase>``)."""
    if len(scenarios) == 1:
        return scenarios[0]
    first = scenarios[0]
    return next((first.removesuffix(f"-{p}") for p in CONNECTOR_PHASES if first.endswith(f"-{p}")), first)
