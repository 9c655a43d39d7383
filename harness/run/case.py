"""One case: simulate it, judge its evidence, and build its report."""

from __future__ import annotations

from harness.check import check
from harness.model import CaseReport, entries
from harness.model.events import WorkerReported, event_data
from harness.run.plan import Case, reproduce_command
from harness.sim import SimResult, simulate
from harness.version import __version__

__all__ = ["run_case"]


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
    reports = [e for e in result.evidence.history if isinstance(e, WorkerReported)]
    report = CaseReport(
        **common,
        attempts=result.attempts,
        outcome=judgement.outcome,
        verdict=judgement.verdict,
        metrics=judgement.metrics,
        unknown=judgement.unknown,
        checks=judgement.checks,
        anomalies=judgement.anomalies,
        claimed=event_data(reports[-1]) if reports else {},
        timeline=entries(result.evidence.history),
    )
    return report, result
