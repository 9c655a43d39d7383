"""The checker: derives every verdict from evidence alone, with pure functions, one per property.

Safety properties (``INVARIANTS``) each yield a verdict: ``false`` when a violation is witnessed,
``unknown`` when the evidence cannot decide, ``true`` otherwise. They compose as false > unknown > true,
and a checker function that raises yields ``unknown``, never ``true``. Measures (``MEASURES``) are figures
reported beside them. The outcome adds liveness: every action must be accounted for by the deadline.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from harness.check import invariants as inv
from harness.check.facts import Facts, facts
from harness.model import Anomaly, CheckResult, Evidence, MetricValue, Outcome, Verdict

__all__ = ["INVARIANTS", "MEASURES", "METRIC_NAMES", "Judgement", "check", "compose"]

Checker = Callable[[Facts], inv.Finding]

#: Safety properties: a non-zero count is a violation.
INVARIANTS: dict[str, Checker] = {
    "unauthorized_dispatches": inv.unauthorized_dispatches,
    "duplicate_effects": inv.duplicate_effects,
    "wrong_revision_completions": inv.wrong_revision_completions,
    "duplicate_records": inv.duplicate_records,
    "effects_after_cancel": inv.effects_after_cancel,
    "false_records": inv.false_records,
}

#: Figures measured from the same evidence.
MEASURES: dict[str, Checker] = {
    "task_completed": inv.task_completed,
    "executor_finished": inv.executor_finished,
    "unresolved_actions": inv.unresolved_actions,
    "escalations": inv.escalations,
    "time_to_account_s": inv.time_to_account_s,
    "dispatches": inv.dispatches,
    "lookups": inv.lookups,
}

METRIC_NAMES: tuple[str, ...] = (*MEASURES, *INVARIANTS)


@dataclass(frozen=True, slots=True)
class Judgement:
    """Everything the checker concluded about one case."""

    results: tuple[CheckResult, ...]
    verdict: Verdict
    outcome: Outcome

    @property
    def metrics(self) -> dict[str, MetricValue]:
        by_name = {r.name: r.value for r in self.results}
        return {name: by_name[name] for name in METRIC_NAMES if name in by_name}

    @property
    def unknown(self) -> dict[str, str]:
        return {r.name: r.reason or "not established" for r in self.results if r.value is None}

    @property
    def checks(self) -> dict[str, Verdict]:
        return {r.name: r.verdict for r in self.results if r.name in INVARIANTS}

    @property
    def anomalies(self) -> tuple[Anomaly, ...]:
        return tuple(a for r in self.results for a in r.anomalies)


def compose(verdicts: Iterable[Verdict]) -> Verdict:
    """false beats unknown beats true; no verdicts at all is ``true`` (nothing was violated)."""
    seen = set(verdicts)
    if "false" in seen:
        return "false"
    if "unknown" in seen:
        return "unknown"
    return "true"


def _run(name: str, checker: Checker, f: Facts, invariant: bool) -> CheckResult:
    try:
        found = checker(f)
    except Exception as exc:  # a crashing checker proves nothing: unknown, never true
        return CheckResult(
            name=name, verdict="unknown", value=None, reason=f"checker raised {type(exc).__name__}: {exc}"
        )
    if found.value is None:
        verdict: Verdict = "unknown"
    elif invariant:
        verdict = "false" if found.value else "true"
    else:
        verdict = "true"
    return CheckResult(name=name, verdict=verdict, value=found.value, reason=found.reason, anomalies=found.anomalies)


def check(evidence: Evidence, checkers: dict[str, Checker] | None = None) -> Judgement:
    """Judge one case from its evidence. ``checkers`` replaces the invariants (for tests of composition)."""
    f = facts(evidence)
    invariants = INVARIANTS if checkers is None else checkers
    results = [_run(name, fn, f, invariant=True) for name, fn in invariants.items()]
    results += [_run(name, fn, f, invariant=False) for name, fn in MEASURES.items()]
    verdict = compose(r.verdict for r in results[: len(invariants)])
    unresolved = next(r for r in results if r.name == "unresolved_actions")
    if verdict == "false":
        outcome: Outcome = "incorrect"
    elif verdict == "unknown" or unresolved.value != 0:
        outcome = "unresolved"
    else:
        outcome = "correct"
    return Judgement(tuple(results), verdict, outcome)
