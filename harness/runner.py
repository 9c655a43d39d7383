"""Runs cases: expands the policy x scenario x seed grid, simulates and judges each case, builds its report.

Everything a grid needs is loaded and validated before the first case runs, so bad input fails before
anything is written.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from harness import __version__
from harness.check import check
from harness.model import CaseReport
from harness.policy import Policy, PolicyError, load_policy
from harness.report import case_path, recovery_json, write_atomic
from harness.scenario import SAFE_NAME, Scenario, load_scenario, resolve_scenario
from harness.sim import SimResult, simulate
from harness.tracking import CellRecord, Tracked, TrackingMode, track_cell

__all__ = ["Case", "CellJob", "CellResult", "Grid", "execute_cell", "load_grid", "reproduce_command", "run_case"]


@dataclass(frozen=True, slots=True)
class Case:
    """One cell of the grid at one seed, with the specs it was asked for by (for the reproduce command)."""

    policy_spec: str
    scenario_spec: str
    seed: int
    policy: Policy
    scenario: Scenario


@dataclass(frozen=True, slots=True)
class Grid:
    cases: tuple[Case, ...]
    policies: tuple[str, ...]
    scenarios: tuple[str, ...]
    seeds: tuple[int, ...]


def load_grid(policy_specs: Sequence[str], scenario_specs: Sequence[str], seeds: Sequence[int]) -> Grid:
    """Load every policy and scenario, check names, and expand the grid; raise on the first bad input."""
    policies = {spec: load_policy(spec) for spec in dict.fromkeys(policy_specs)}
    for spec, policy in policies.items():
        if not re.match(SAFE_NAME, policy.name):
            raise PolicyError(
                f"policy '{spec}': name '{policy.name}' is not safe for file and run names; "
                "fix: use lower case letters, digits, '_' or '-'"
            )
    scenarios = {spec: load_scenario(resolve_scenario(spec)) for spec in dict.fromkeys(scenario_specs)}
    _unique("policy", {s: p.name for s, p in policies.items()})
    _unique("scenario", {s: sc.name for s, sc in scenarios.items()})
    seeds = tuple(dict.fromkeys(seeds))
    cases = tuple(
        Case(p_spec, s_spec, seed, policy, scenario)
        for p_spec, policy in policies.items()
        for s_spec, scenario in scenarios.items()
        for seed in seeds
    )
    return Grid(
        cases=cases,
        policies=tuple(p.name for p in policies.values()),
        scenarios=tuple(s.name for s in scenarios.values()),
        seeds=seeds,
    )


def _unique(what: str, names: dict[str, str]) -> None:
    seen: dict[str, str] = {}
    for spec, name in names.items():
        if name in seen:
            raise PolicyError(
                f"{what} '{spec}' and '{seen[name]}' are both named '{name}'; fix: give one of them another name"
            )
        seen[name] = spec


def reproduce_command(case: Case) -> str:
    """The exact command that re-runs this one case."""
    return (
        f"python -m harness run --policy {shlex.quote(case.policy_spec)} "
        f"--scenario {shlex.quote(case.scenario_spec)} --seed {case.seed}"
    )


def run_case(case: Case) -> tuple[CaseReport, SimResult | None]:
    """Simulate and judge one case. A failure of the harness itself becomes a ``harness_error`` report."""
    scenario, policy = case.scenario, case.policy
    common = {
        "harness_version": __version__,
        "scenario": scenario.name,
        "scenario_revision": scenario.revision,
        "policy": policy.name,
        "policy_revision": policy.revision,
        "seed": case.seed,
        "task_id": scenario.task.task_id,
        "action_id": scenario.action_id,
        "reproduce": reproduce_command(case),
    }
    try:
        result = simulate(scenario, policy, case.seed)
        judgement = check(result.evidence)
    except Exception as exc:  # the case still counts: it is reported, not dropped
        error = f"{type(exc).__name__}: {exc}"
        report = CaseReport(
            **common,
            attempts=(),
            outcome="harness_error",
            verdict="unknown",
            metrics={},
            unknown={"*": f"the harness failed: {error}"},
            checks={},
            anomalies=(),
            claimed={},
            timeline=(),
            error=error,
        )
        return report, None
    reports = [e for e in result.evidence.history if e.actor == "worker" and e.event == "report"]
    report = CaseReport(
        **common,
        attempts=result.attempts,
        outcome=judgement.outcome,
        verdict=judgement.verdict,
        metrics=judgement.metrics,
        unknown=judgement.unknown,
        checks=judgement.checks,
        anomalies=judgement.anomalies,
        claimed=dict(reports[-1].data) if reports else {},
        timeline=result.evidence.history,
    )
    return report, result


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

    Module-level and picklable so a process pool can run cells side by side.
    """
    grid = load_grid([job.policy_spec], [job.scenario_spec], job.seeds)
    if job.timelines:
        # pandas and matplotlib cost a second to import: only when pictures are wanted.
        from harness.html_report import TIMELINE_OUTCOMES, render_timeline
    reports, texts = [], []
    for case in grid.cases:
        report, _ = run_case(case)
        text = recovery_json(report, secrets=[case.scenario.approval.token.get_secret_value()])
        path = case_path(job.out, report)
        write_atomic(path, text)
        if job.timelines and report.outcome in TIMELINE_OUTCOMES:
            render_timeline(path)
        reports.append(report)
        texts.append(text)
    tracked = None
    if job.tracking != "none":
        cell = CellRecord(grid.policies[0], grid.scenarios[0], tuple(reports), tuple(texts))
        tracked = track_cell(cell, job.out, job.project, write_atomic)
    return CellResult(tuple(reports), tracked)
