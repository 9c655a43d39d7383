"""The checker: derives every verdict from evidence alone, with pure functions, one per metric.

Safety properties each yield a verdict: ``false`` when a violation is witnessed, ``unknown`` when the
evidence cannot decide, ``true`` otherwise. They compose as false > unknown > true, and a checker function
that raises yields ``unknown``, never ``true``. Measures are figures reported beside them. The outcome adds
liveness: every action must be accounted for by the deadline. What each metric is, and how it moves the
outcome, is declared once in ``harness.check.registry``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial

from harness.check.facts import Facts, facts
from harness.check.finding import Finding
from harness.check.registry import METRIC_NAMES, METRICS, PROPERTIES, Metric
from harness.model import Anomaly, CheckResult, Evidence, MetricValue, Outcome, Verdict
from harness.model.base import fast_frozen_init

__all__ = ["METRICS", "METRIC_NAMES", "PROPERTIES", "Judgement", "Metric", "check", "compose"]

Checker = Callable[[Facts], Finding]


@dataclass(frozen=True, slots=True)
class Judgement:
    """Everything the checker concluded about one case."""

    results: tuple[CheckResult, ...]
    verdict: Verdict
    outcome: Outcome
    #: The names of the results that are safety properties (their verdicts compose into ``verdict``).
    properties: tuple[str, ...]

    @property
    def metrics(self) -> dict[str, MetricValue]:
        by_name = {r.name: r.value for r in self.results}
        return {name: by_name[name] for name in METRIC_NAMES if name in by_name}

    @property
    def unknown(self) -> dict[str, str]:
        return {r.name: r.reason or "not established" for r in self.results if r.value is None}

    @property
    def checks(self) -> dict[str, Verdict]:
        return {r.name: r.verdict for r in self.results if r.name in self.properties}

    @property
    def anomalies(self) -> tuple[Anomaly, ...]:
        return tuple(a for r in self.results for a in r.anomalies)


# One per case: built as the history's records are, each slot set directly.
fast_frozen_init(Judgement)


def compose(verdicts: Iterable[Verdict]) -> Verdict:
    """false beats unknown beats true; no verdicts at all is ``true`` (nothing was violated)."""
    seen = set(verdicts)
    if "false" in seen:
        return "false"
    if "unknown" in seen:
        return "unknown"
    return "true"


def _run(checkers: Iterable[tuple[str, Checker]], f: Facts, is_property: bool) -> list[CheckResult]:
    """Each checker's result, in order: one loop rather than a call per checker (a case runs nineteen)."""
    results = []
    for name, checker in checkers:
        try:
            found = checker(f)
        except Exception as exc:  # a crashing checker proves nothing: unknown, never true
            results.append(CheckResult(name, "unknown", None, f"checker raised {type(exc).__name__}: {exc}"))
            continue
        value = found.value
        verdict: Verdict
        if value is None:
            # A violation witnessed whose count the evidence cannot finish (more may hide where it cannot see) is
            # still a violation: false beats unknown, and the count stays null, with its reason.
            verdict = "false" if is_property and found.anomalies else "unknown"
        elif is_property:
            verdict = "false" if value else "true"
        else:
            verdict = "true"
        results.append(_result((name, verdict, value, found.reason, found.anomalies)))
    return results


#: ``CheckResult(...)`` as the named tuple's own ``__new__`` builds it, without the call of that Python function
#: (nineteen results a case, and the call cost more than the tuple).
_result: Callable[[tuple[str, Verdict, MetricValue, str | None, tuple[Anomaly, ...]]], CheckResult] = partial(
    tuple.__new__, CheckResult
)


def check(evidence: Evidence, properties: dict[str, Checker] | None = None) -> Judgement:
    """Judge one case from its evidence: the properties first, then the measures.

    ``properties`` replaces the registry's safety properties (for tests of composition).
    """
    f = facts(evidence)
    chosen = _PROPERTIES if properties is None else properties
    results = _run(chosen.items(), f, True)
    verdict = compose(r.verdict for r in results)
    results += _run(_MEASURES, f, False)
    return Judgement(tuple(results), verdict, _outcome(results, verdict), tuple(chosen))


_PROPERTIES: dict[str, Checker] = {m.name: m.function for m in PROPERTIES}
_MEASURES = tuple((m.name, m.function) for m in METRICS if m.kind == "measure")


def _outcome(results: list[CheckResult], verdict: Verdict) -> Outcome:
    """The worst effect any metric has on the case, with an undecided verdict between abandoned and escalated."""
    violated = {_effect(r.name) for r in results if r.verdict == "false"}
    if "incorrect" in violated:
        return "incorrect"
    if "abandoned" in violated:
        return "abandoned"
    if verdict == "unknown":
        return "unresolved"
    if any(r.value != 0 for r in results if r.name in _ESCALATED):
        return "escalated"
    return "correct"


_EFFECTS = {m.name: m.effect for m in METRICS}
_ESCALATED = frozenset(name for name, effect in _EFFECTS.items() if effect == "escalated")


def _effect(name: str) -> str:
    """The registry's effect of metric ``name``; a property the registry does not know counts as incorrect."""
    return _EFFECTS.get(name, "incorrect")
