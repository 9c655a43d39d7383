"""One case: simulate it, judge its evidence, and build its report."""

from __future__ import annotations

from typing import TypedDict

from harness.check import Judgement, check
from harness.model import SCHEMA_VERSION, CaseReport, entries
from harness.model.events import WorkerReported, event_data
from harness.run.plan import Case, reproduce_command
from harness.sim import SimResult, simulate
from harness.version import __version__

__all__ = ["failed_report", "run_case"]


def run_case(case: Case) -> tuple[CaseReport, SimResult | None]:
    """Simulate and judge one case. A failure of the harness itself becomes a ``harness_error`` report."""
    try:
        result = simulate(case.scenario, case.policy, case.seed)
        judgement = check(result.evidence)
    except Exception as exc:  # the case still counts: it is reported, not dropped
        return failed_report(case, f"{type(exc).__name__}: {exc}"), None
    return _judged(case, result, judgement), result


class _Identity(TypedDict):
    """What names a case in its report, whatever happened to it."""

    harness_version: str
    scenario: str
    scenario_revision: str
    policy: str
    policy_revision: str
    seed: int
    task_id: str
    action_id: str
    reproduce: str


def _identity(case: Case, case_timeout_s: float | None = None) -> _Identity:
    return _Identity(
        harness_version=__version__,
        scenario=case.scenario.name,
        scenario_revision=case.scenario.revision,
        policy=case.policy.name,
        policy_revision=case.policy.revision,
        seed=case.seed,
        task_id=case.scenario.task.task_id,
        action_id=case.scenario.action_id,
        reproduce=reproduce_command(case, case_timeout_s),
    )


def _judged(case: Case, result: SimResult, judgement: Judgement) -> CaseReport:
    # The worker's last report: what it claimed.
    report = next((e for e in reversed(result.evidence.history) if isinstance(e, WorkerReported)), None)
    identity = _identity(case)
    # Built without validation, every field in order: each value is already typed (the identity from a loaded
    # case, the rest from the checker and the trusted records). tests/test_scale.py proves it equals its
    # validated form for every case of the grid.
    return CaseReport.trusted(
        schema_version=SCHEMA_VERSION,
        harness_version=identity["harness_version"],
        scenario=identity["scenario"],
        scenario_revision=identity["scenario_revision"],
        policy=identity["policy"],
        policy_revision=identity["policy_revision"],
        seed=identity["seed"],
        task_id=identity["task_id"],
        action_id=identity["action_id"],
        attempts=result.attempts,
        outcome=judgement.outcome,
        verdict=judgement.verdict,
        metrics=judgement.metrics,
        unknown=judgement.unknown,
        checks=judgement.checks,
        anomalies=judgement.anomalies,
        claimed=event_data(report) if report is not None else {},
        timeline=entries(result.evidence.history),
        reproduce=identity["reproduce"],
        error=None,
    )


def failed_report(case: Case, error: str, case_timeout_s: float | None = None) -> CaseReport:
    """The report of a case the harness could not judge: ``harness_error``, with why, and how to reproduce it
    (under ``case_timeout_s``, the wall-clock budget it ran under, when there was one)."""
    return CaseReport(
        **_identity(case, case_timeout_s),
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
