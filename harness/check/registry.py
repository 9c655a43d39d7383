"""The metric registry: every metric declared once, with everything the rest of the harness needs to know.

The checker runs the functions; the outcome reads ``effect``; ``recovery.json``, ``summary.csv`` and pandas
read the names and value types; Polyaxon logs the ``logged`` ones; report.html shows the ``shown`` ones; the
soundness test compares the ``audited`` ones with the auditor's ground truth. Adding a metric is one entry
here plus its function (in ``properties`` or ``measures``) and its test.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from harness.check import measures, properties
from harness.check.facts import Facts
from harness.check.finding import Finding

__all__ = [
    "METRICS",
    "METRIC_NAMES",
    "PROPERTIES",
    "Metric",
    "by_name",
]


@dataclass(frozen=True, slots=True)
class Metric:
    """One metric: how it is computed, what kind of value it is, and where it goes."""

    name: str
    function: Callable[[Facts], Finding]
    #: A safety ``property`` yields a verdict (any violation is ``false``); a ``measure`` is a figure.
    kind: Literal["property", "measure"]
    #: ``count`` (a whole number), ``flag`` (true or false) or ``duration`` (seconds).
    value: Literal["count", "flag", "duration"]
    #: How a non-zero value moves the case's outcome: to ``incorrect`` or ``abandoned`` (safety properties,
    #: through the verdict), or to ``escalated`` (actions left unaccounted for, each handed to its owner).
    effect: Literal["incorrect", "abandoned", "escalated", "none"]
    #: Logged to Polyaxon as a measurement (the worker's own report is not one).
    logged: bool = True
    #: Given its own table in report.html.
    shown: bool = False
    #: Compared with the auditor's ground truth by the soundness test.
    audited: bool = True

    @property
    def doc(self) -> str:
        """The first paragraph of the function's docstring: what the metric is, from which evidence."""
        return " ".join((self.function.__doc__ or "").strip().split("\n\n")[0].split())


def _property(
    name: str, function: Callable[[Facts], Finding], effect: Literal["incorrect", "abandoned"] = "incorrect"
) -> Metric:
    return Metric(name, function, "property", "count", effect, shown=True)


#: Measures first, then properties: the order of ``metrics`` in recovery.json and of summary.csv's columns.
METRICS: tuple[Metric, ...] = (
    Metric("task_completed", measures.task_completed, "measure", "flag", "none", shown=True),
    Metric("executor_finished", measures.executor_finished, "measure", "flag", "none", logged=False, audited=False),
    Metric("unresolved_actions", measures.unresolved_actions, "measure", "count", "escalated", shown=True),
    Metric("escalations", measures.escalations, "measure", "count", "none", shown=True),
    Metric("time_to_account_s", measures.time_to_account_s, "measure", "duration", "none", shown=True),
    Metric("dispatches", measures.dispatches, "measure", "count", "none", shown=True),
    Metric("reads", measures.reads, "measure", "count", "none", shown=True),
    Metric("new_keys_while_unknown", measures.new_keys_while_unknown, "measure", "count", "none", shown=True),
    Metric("refusals", measures.refusals, "measure", "count", "none", shown=True, audited=False),
    _property("unauthorized_dispatches", properties.unauthorized_dispatches),
    _property("duplicate_effects", properties.duplicate_effects),
    _property("wrong_revision_completions", properties.wrong_revision_completions),
    _property("duplicate_records", properties.duplicate_records),
    _property("effects_after_cancel", properties.effects_after_cancel),
    _property("false_records", properties.false_records),
    _property("mismatched_records", properties.mismatched_records),
    _property("changed_arguments", properties.changed_arguments),
    _property("retries_after_uncertain", properties.retries_after_uncertain),
    _property("abandoned_actions", properties.abandoned_actions, effect="abandoned"),
)

METRIC_NAMES: tuple[str, ...] = tuple(m.name for m in METRICS)
#: The safety properties, in the order the checker runs them.
PROPERTIES: tuple[Metric, ...] = tuple(m for m in METRICS if m.kind == "property")
_BY_NAME = {m.name: m for m in METRICS}


def by_name(name: str) -> Metric:
    """The metric called ``name``; ``KeyError`` naming the known ones otherwise."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(f"unknown metric '{name}'; use one of {', '.join(METRIC_NAMES)}") from None
