"""Frozen records shared by every stage: the history, evidence, findings and the case report.

This module imports nothing of ours. Everything downstream (simulator, checker, report, tracking) speaks in
these types, so the arrows between stages stay one-way.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "OUTCOMES",
    "SCHEMA_VERSION",
    "Actor",
    "Anomaly",
    "CaseReport",
    "CheckResult",
    "Entry",
    "Evidence",
    "Frozen",
    "MetricValue",
    "Outcome",
    "Scalar",
    "Verdict",
]

#: Bumped whenever a key of ``recovery.json`` changes meaning or disappears.
SCHEMA_VERSION = 1

Scalar = str | int | float | bool | None
MetricValue = int | float | bool | None

#: Who recorded an entry. ``injector`` records faults in the same history as the operations they disturb.
Actor = Literal["worker", "transport", "destination", "controller", "operator", "injector"]

#: Jepsen-style verdicts: composing them, false beats unknown beats true.
Verdict = Literal["true", "false", "unknown"]

#: ``unresolved`` means the case cannot be judged correct: an action stayed unaccounted for, or the evidence
#: needed to judge it is missing (see ``unknown``). ``harness_error`` means the harness itself failed.
Outcome = Literal["correct", "incorrect", "unresolved", "harness_error"]
OUTCOMES: tuple[Outcome, ...] = ("correct", "incorrect", "unresolved", "harness_error")


class Frozen(BaseModel):
    """Base for every record: immutable, and unknown fields are an error rather than silently kept."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class Entry(Frozen):
    """One thing that happened, as the actor that saw it recorded it.

    ``index`` is the entry's position in the history; anomalies cite these indexes as witnesses.
    ``at_s`` is virtual (simulated) time, never wall-clock time, so histories replay byte for byte.
    """

    index: int
    at_s: float
    actor: Actor
    event: str
    data: dict[str, Scalar] = Field(default_factory=dict)


class Evidence(Frozen):
    """What the checker may look at: the history as the trusted records show it.

    When ``destination_visible`` is false, the destination's own entries (what it received, applied and
    answered) have been withheld, exactly as when the service's ledger cannot be read after the fact.
    """

    task_id: str
    action_ids: tuple[str, ...]
    recovery_deadline_s: float
    destination_visible: bool
    history: tuple[Entry, ...]


class Anomaly(Frozen):
    """One violation of a property: which property, the witnessing entry indexes, then prose."""

    kind: str
    witnesses: tuple[int, ...]
    detail: str


class CheckResult(Frozen):
    """The result of one checker function.

    ``value`` is the measured figure (a count, a duration or a flag); it is ``None`` exactly when the
    evidence cannot establish it, and then ``reason`` says why and ``verdict`` is ``unknown``.
    """

    name: str
    verdict: Verdict
    value: MetricValue
    reason: str | None = None
    anomalies: tuple[Anomaly, ...] = ()


class CaseReport(Frozen):
    """The sanitized content of one ``recovery.json``: one policy, one scenario, one seed."""

    schema_version: int = SCHEMA_VERSION
    harness_version: str
    scenario: str
    scenario_revision: str
    policy: str
    policy_revision: str
    seed: int
    task_id: str
    action_id: str
    attempts: tuple[str, ...]
    outcome: Outcome
    verdict: Verdict
    metrics: dict[str, MetricValue]
    unknown: dict[str, str]
    checks: dict[str, Verdict]
    anomalies: tuple[Anomaly, ...]
    claimed: dict[str, Scalar]
    timeline: tuple[Entry, ...]
    reproduce: str
    error: str | None = None
