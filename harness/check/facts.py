"""Typed views of a history, built once per check: the history's records sorted by type.

The views are plain lists of what the trusted records say: dispatches sent, claims, task revisions and
cancellations, approvals, ledger writes, completions, escalations, and (when visible) the destination's
applied effects. Each record keeps its ``index``, so anomalies can cite witnesses.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar, cast

from harness.model import Evidence
from harness.model.events import (
    AbsenceRecorded,
    Accepted,
    ActionRecorded,
    Applied,
    ApprovalExpired,
    ApprovalGranted,
    ApprovalRevoked,
    CancelRequested,
    ClaimDecided,
    DispatchHeld,
    DispatchSent,
    EffectRecorded,
    Escalated,
    Event,
    JobFollowSent,
    LookupSent,
    RejectionRecorded,
    ReplyReceived,
    TaskCompleted,
    TaskRevisionRecorded,
    VerifySent,
    WorkerReported,
)

__all__ = ["Facts", "LedgerWrite", "facts"]

#: A write to the action ledger: an effect, a rejection, or an absence.
LedgerWrite = EffectRecorded | RejectionRecorded | AbsenceRecorded
E = TypeVar("E", bound=Event)


@dataclass(slots=True)
class Facts:
    evidence: Evidence
    dispatches: list[DispatchSent] = field(default_factory=list)
    #: Reads the caller sent: lookups of the target, job follows, verifications.
    reads: list[LookupSent | JobFollowSent | VerifySent] = field(default_factory=list)
    revisions: list[TaskRevisionRecorded] = field(default_factory=list)
    approvals: list[ApprovalGranted] = field(default_factory=list)
    approval_revocations: dict[str, ApprovalExpired | ApprovalRevoked] = field(default_factory=dict)
    cancels: list[CancelRequested] = field(default_factory=list)
    actions: dict[str, ActionRecorded] = field(default_factory=dict)
    claims: list[ClaimDecided] = field(default_factory=list)
    records: list[LedgerWrite] = field(default_factory=list)
    holds: list[DispatchHeld] = field(default_factory=list)
    completions: list[TaskCompleted] = field(default_factory=list)
    escalations: list[Escalated] = field(default_factory=list)
    effects: list[Applied] = field(default_factory=list)
    accepts: list[Accepted] = field(default_factory=list)
    #: Replies that reached the caller (what the caller could know, and when).
    replies: list[ReplyReceived] = field(default_factory=list)
    reports: list[WorkerReported] = field(default_factory=list)

    @property
    def destination_visible(self) -> bool:
        return self.evidence.destination_visible

    def action_of_execution(self) -> dict[str, str]:
        """Execution ID -> logical action ID, from the dispatches the caller sent."""
        return {d.execution_id: d.action_id for d in self.dispatches}

    def revision_at(self, index: int) -> TaskRevisionRecorded | None:
        """The task revision in force just before entry ``index``."""
        return _latest_before(self.revisions, index)

    def approval_before(self, approval_id: str, index: int) -> ApprovalGranted | None:
        """The latest grant of ``approval_id`` recorded before entry ``index``."""
        return _latest_before(self.approvals, index, lambda a: a.approval_id == approval_id)

    def claim_before(self, action_id: str, index: int) -> ClaimDecided | None:
        """The latest successful claim of ``action_id`` recorded before entry ``index``."""
        return _latest_before(self.claims, index, lambda c: c.action_id == action_id and c.ok)

    def cancel_before(self, index: int) -> CancelRequested | None:
        return next((c for c in self.cancels if c.index < index), None)

    def record_before(self, action_id: str, index: int) -> LedgerWrite | None:
        """The first ledger write for ``action_id`` recorded before entry ``index``."""
        return next((r for r in self.records if r.action_id == action_id and r.index < index), None)

    def dispatches_of(self, action_id: str) -> list[DispatchSent]:
        return [d for d in self.dispatches if d.action_id == action_id]


def _latest_before(records: Sequence[E], index: int, match: Callable[[E], bool] = lambda _: True) -> E | None:
    """The last of ``records`` (in history order) recorded before entry ``index`` that ``match`` accepts."""
    found = None
    for record in records:
        if record.index >= index:
            break
        if match(record):
            found = record
    return found


def facts(evidence: Evidence) -> Facts:
    """Sort the history's records into typed views; records of other types are kept only in the history."""
    out = Facts(evidence)
    for event in evidence.history:
        view = _VIEW.get(type(event))
        if view is not None:
            cast("list[Event]", getattr(out, view)).append(event)
        elif isinstance(event, ApprovalExpired | ApprovalRevoked):
            out.approval_revocations.setdefault(event.approval_id, event)
        elif isinstance(event, ActionRecorded):
            out.actions[event.action_id] = event
    return out


#: The list each record type is appended to (one dictionary lookup per record, not a chain of type tests);
#: revocations and actions are keyed by ID instead. Every type a view holds, and no other.
_VIEW: dict[type[Event], str] = {
    DispatchSent: "dispatches",
    LookupSent: "reads",
    JobFollowSent: "reads",
    VerifySent: "reads",
    TaskRevisionRecorded: "revisions",
    ApprovalGranted: "approvals",
    CancelRequested: "cancels",
    ClaimDecided: "claims",
    EffectRecorded: "records",
    RejectionRecorded: "records",
    AbsenceRecorded: "records",
    DispatchHeld: "holds",
    TaskCompleted: "completions",
    Escalated: "escalations",
    Applied: "effects",
    Accepted: "accepts",
    ReplyReceived: "replies",
    WorkerReported: "reports",
}
