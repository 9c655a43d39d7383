"""Typed views of a history, built once per check: the only place that knows the history's vocabulary.

The views are plain lists of what the trusted records say: dispatches sent, claims, task revisions and
cancellations, approvals, ledger writes, completions, escalations, and (when visible) the destination's
applied effects. Each view keeps the index of the entry it came from, so anomalies can cite witnesses.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harness.model import Entry, Evidence

__all__ = ["Facts", "facts"]


@dataclass(frozen=True, slots=True)
class Fact:
    """One history entry's data, with its index and time."""

    index: int
    at_s: float
    event: str
    data: dict[str, Any]

    def __getitem__(self, key: str) -> Any:
        return self.data.get(key)


@dataclass(slots=True)
class Facts:
    evidence: Evidence
    dispatches: list[Fact] = field(default_factory=list)
    lookups: list[Fact] = field(default_factory=list)
    revisions: list[Fact] = field(default_factory=list)
    approvals: list[Fact] = field(default_factory=list)
    approval_revocations: dict[str, Fact] = field(default_factory=dict)
    cancels: list[Fact] = field(default_factory=list)
    actions: dict[str, Fact] = field(default_factory=dict)
    claims: list[Fact] = field(default_factory=list)
    records: list[Fact] = field(default_factory=list)
    completions: list[Fact] = field(default_factory=list)
    escalations: list[Fact] = field(default_factory=list)
    effects: list[Fact] = field(default_factory=list)
    reports: list[Fact] = field(default_factory=list)

    @property
    def destination_visible(self) -> bool:
        return self.evidence.destination_visible

    def action_of_execution(self) -> dict[str, str]:
        """Execution ID -> logical action ID, from the dispatches the caller sent."""
        return {d["execution_id"]: d["action_id"] for d in self.dispatches}

    def revision_at(self, index: int) -> Fact | None:
        """The task revision in force just before entry ``index``."""
        return _latest_before(self.revisions, index)

    def approval_before(self, approval_id: str, index: int) -> Fact | None:
        """The latest grant of ``approval_id`` recorded before entry ``index``."""
        return _latest_before(self.approvals, index, approval_id=approval_id)

    def claim_before(self, action_id: str, index: int) -> Fact | None:
        """The latest successful claim of ``action_id`` recorded before entry ``index``."""
        return _latest_before(self.claims, index, action_id=action_id, ok=True)

    def cancel_before(self, index: int) -> Fact | None:
        return next((c for c in self.cancels if c.index < index), None)


def _latest_before(facts: list[Fact], index: int, **match: Any) -> Fact | None:
    """The last of ``facts`` (in history order) recorded before entry ``index`` whose data match ``match``."""
    found = None
    for fact in facts:
        if fact.index >= index:
            break
        if all(fact[key] == value for key, value in match.items()):
            found = fact
    return found


_ROUTES: dict[tuple[str, str], str] = {
    ("controller", "task_revision"): "revisions",
    ("controller", "cancel_requested"): "cancels",
    ("controller", "claim"): "claims",
    ("controller", "effect_recorded"): "records",
    ("controller", "rejection_recorded"): "records",
    ("controller", "held"): "records",
    ("controller", "task_completed"): "completions",
    ("controller", "escalated"): "escalations",
    ("destination", "applied"): "effects",
    ("worker", "report"): "reports",
}


def facts(evidence: Evidence) -> Facts:
    """Sort the history's entries into typed views; entries of other kinds are kept only in the history."""
    out = Facts(evidence)
    for entry in evidence.history:
        fact = _fact(entry)
        key = (entry.actor, entry.event)
        if key == ("transport", "send"):
            (out.dispatches if entry.data.get("kind") == "dispatch" else out.lookups).append(fact)
        elif key == ("controller", "approval_granted"):
            out.approvals.append(fact)
        elif key == ("controller", "approval_expired"):
            out.approval_revocations.setdefault(str(entry.data["approval_id"]), fact)
        elif key == ("controller", "action_recorded"):
            out.actions[str(entry.data["action_id"])] = fact
        elif key in _ROUTES:
            getattr(out, _ROUTES[key]).append(fact)
    return out


def _fact(entry: Entry) -> Fact:
    return Fact(entry.index, entry.at_s, entry.event, dict(entry.data))
