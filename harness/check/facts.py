"""Typed views of a history, built once per check: the history's records sorted by type.

The views are plain lists of what the trusted records say: dispatches sent, claims, task revisions and
cancellations, approvals, ledger writes, completions, escalations, and (when visible) the destination's
applied effects. Each record keeps its ``index``, so anomalies can cite witnesses.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar, cast

from harness.model import Evidence
from harness.model.commands import DISPATCHING
from harness.model.events import (
    AbsenceRecorded,
    Accepted,
    ActionRecorded,
    Applied,
    ApprovalExpired,
    ApprovalGranted,
    ApprovalRevoked,
    AttemptRecorded,
    CancelRequested,
    ClaimDecided,
    CommandGiven,
    CommandRefused,
    DispatchHeld,
    DispatchSent,
    EffectRecorded,
    Escalated,
    Event,
    JobFollowSent,
    LookupAnswered,
    LookupSent,
    RecordConflict,
    Rejected,
    RejectionRecorded,
    ReplyReceived,
    ReplyUndeliverable,
    StillInFlight,
    StillPending,
    TaskCompleted,
    TaskRevisionRecorded,
    VerifySent,
    WorkerCrashed,
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
    #: The target's answers to reads (a verification's too), each as it left the target.
    answers: list[LookupAnswered] = field(default_factory=list)
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
    #: The destination's rejections: an accepted operation that ended without effect.
    rejections: list[Rejected] = field(default_factory=list)
    accepts: list[Accepted] = field(default_factory=list)
    #: Replies that reached the caller (what the caller could know, and when).
    replies: list[ReplyReceived] = field(default_factory=list)
    #: Replies that came back after the caller stopped waiting (or was gone): what the destination answered,
    #: though no one heard it.
    unheard: list[ReplyUndeliverable] = field(default_factory=list)
    reports: list[WorkerReported] = field(default_factory=list)
    #: The policies' commands, as each worker was about to carry one out.
    commands: list[CommandGiven] = field(default_factory=list)
    #: Commands refused besides claims: guarded ledger writes the ledger contradicted, records of receipts the
    #: worker never observed.
    refused: list[RecordConflict | CommandRefused] = field(default_factory=list)
    #: What the case's end cut off: dispatches still on their way, operations accepted and not yet applied.
    unsettled: list[StillInFlight | StillPending] = field(default_factory=list)

    #: Built on first use, so that every question below costs a lookup or a binary search, never a rescan of
    #: the history per dispatch (a case with a thousand retries would otherwise cost a million steps).
    _by_action: dict[str, _Sorted[ClaimDecided]] | None = field(default=None, init=False, repr=False)
    _grants: dict[str, _Sorted[ApprovalGranted]] | None = field(default=None, init=False, repr=False)
    _first_record: dict[str, LedgerWrite] | None = field(default=None, init=False, repr=False)
    _first_hold: dict[str, DispatchHeld] | None = field(default=None, init=False, repr=False)
    _dispatches_by_action: dict[str, list[DispatchSent]] | None = field(default=None, init=False, repr=False)
    _revision_indexes: list[int] | None = field(default=None, init=False, repr=False)
    _cancel_indexes: list[int] | None = field(default=None, init=False, repr=False)
    _owners: dict[str, str] | None = field(default=None, init=False, repr=False)
    _effects_by_action: dict[str, list[Applied]] | None = field(default=None, init=False, repr=False)
    _decisions: dict[int, CommandGiven] | None = field(default=None, init=False, repr=False)
    _answered: dict[tuple[str, int], int] | None = field(default=None, init=False, repr=False)
    _read_sent: dict[tuple[str, int], int] | None = field(default=None, init=False, repr=False)

    @property
    def destination_visible(self) -> bool:
        return self.evidence.destination_visible

    def action_of_execution(self) -> dict[str, str]:
        """Execution ID -> logical action ID, from the dispatches the caller sent (built on first use; read only)."""
        if self._owners is None:
            self._owners = {d.execution_id: d.action_id for d in self.dispatches}
        return self._owners

    def effects_by_action(self) -> dict[str, list[Applied]]:
        """The destination's applied effects, traced to logical actions through their execution IDs; effects of an
        execution no dispatch names are kept apart under ``(unknown action)`` (built on first use; read only)."""
        if self._effects_by_action is None:
            owner = self.action_of_execution()
            grouped: dict[str, list[Applied]] = {}
            for effect in self.effects:
                grouped.setdefault(owner.get(effect.execution_id, "(unknown action)"), []).append(effect)
            self._effects_by_action = grouped
        return self._effects_by_action

    def unsettled_by_action(self) -> dict[str, list[str]]:
        """Per logical action, the execution IDs whose effect the case's end cut off (a dispatch on its way, an
        operation not yet applied): whether they would have applied is not in the evidence. An operation the
        destination accepted and never applied nor rejected is pending when the case ends, whether or not the
        end recorded it as such (one that stalled after acceptance may still apply, as ``false_records`` holds
        for an absence recorded over it)."""
        owner = self.action_of_execution()
        cut: dict[str, list[str]] = {}
        for u in self.unsettled:
            action = u.action_id if isinstance(u, StillInFlight) else owner.get(u.execution_id, "(unknown action)")
            cut.setdefault(action, []).append(u.execution_id)
        ended = {e.execution_id for e in self.effects} | {r.execution_id for r in self.rejections}
        for a in self.accepts:
            if a.execution_id not in ended:
                ids = cut.setdefault(owner.get(a.execution_id, "(unknown action)"), [])
                if a.execution_id not in ids:
                    ids.append(a.execution_id)
        return cut

    def _revision_index(self) -> list[int]:
        """The entry index of every task revision, in order (built on first use)."""
        if self._revision_indexes is None:
            self._revision_indexes = [r.index for r in self.revisions]
        return self._revision_indexes

    def revision_at(self, index: int) -> TaskRevisionRecorded | None:
        """The task revision in force just before entry ``index``."""
        i = bisect_left(self._revision_index(), index)
        return self.revisions[i - 1] if i > 0 else None

    def approval_before(self, approval_id: str, index: int) -> ApprovalGranted | None:
        """The latest grant of ``approval_id`` recorded before entry ``index``."""
        if self._grants is None:
            self._grants = _sorted_by(self.approvals, lambda a: a.approval_id)
        grants = self._grants.get(approval_id)
        return grants.latest_before(index) if grants else None

    def claim_before(self, action_id: str, index: int) -> ClaimDecided | None:
        """The latest successful claim of ``action_id`` recorded before entry ``index``."""
        if self._by_action is None:
            self._by_action = _sorted_by([c for c in self.claims if c.ok], lambda c: c.action_id)
        claims = self._by_action.get(action_id)
        return claims.latest_before(index) if claims else None

    def cancel_before(self, index: int) -> CancelRequested | None:
        """The first cancellation, if it was recorded before entry ``index``."""
        return self.cancels[0] if self.cancels and self.cancels[0].index < index else None

    def record_before(self, action_id: str, index: int) -> LedgerWrite | None:
        """The first ledger write for ``action_id``, if it was recorded before entry ``index``."""
        if self._first_record is None:
            self._first_record = _first_of(self.records)
        first = self._first_record.get(action_id)
        return first if first is not None and first.index < index else None

    def accounted_for(self, action_id: str) -> bool:
        """Whether the action ledger recorded ``action_id``'s outcome by the recovery deadline."""
        if self._first_record is None:
            self._first_record = _first_of(self.records)
        first = self._first_record.get(action_id)
        return first is not None and first.at_s <= self.evidence.recovery_deadline_s

    def escalated_in_time(self, action_id: str) -> bool:
        """Whether ``action_id`` was handed to its owner by the recovery deadline, and left with them: by an
        escalation that no dispatch of the action followed. One sent after it makes the owner's account stale
        (what it applies, the owner was never told of), so only a later escalation hands the action over."""
        dispatches = self.dispatches_of(action_id)
        last_sent = dispatches[-1].index if dispatches else -1
        deadline = self.evidence.recovery_deadline_s
        return any(e.action_id == action_id and e.index > last_sent and e.at_s <= deadline for e in self.escalations)

    def hold_before(self, action_id: str, index: int) -> DispatchHeld | None:
        """The first hold of ``action_id``'s dispatch, if it was recorded before entry ``index``."""
        if self._first_hold is None:
            self._first_hold = _first_of(self.holds)
        first = self._first_hold.get(action_id)
        return first if first is not None and first.index < index else None

    def change_between(self, after: int, before: int) -> TaskRevisionRecorded | CancelRequested | None:
        """A change of the task strictly between entries ``after`` and ``before``: the first new revision, else
        the first cancellation."""
        if self._cancel_indexes is None:
            self._cancel_indexes = [c.index for c in self.cancels]
        i = bisect_right(self._revision_index(), after)
        if i < len(self.revisions) and self.revisions[i].index < before:
            return self.revisions[i]
        j = bisect_right(self._cancel_indexes, after)
        if j < len(self.cancels) and self.cancels[j].index < before:
            return self.cancels[j]
        return None

    def answered_at(self, reply: ReplyReceived) -> int:
        """Where in the history the target answered the read ``reply`` carries back: a read speaks for the ledger
        as it was then, however long its answer took to come back. A reply the target did not give (a dispatch's,
        a connector's job follow) is placed where it arrived."""
        if reply.kind == "dispatch":
            return reply.index
        if self._answered is None:
            key_of = {(r.action_id, r.n): r.idempotency_key for r in self.reads}
            answered = {(a.idempotency_key, a.n): a.index for a in self.answers}
            self._answered = {
                (action_id, n): answered[(key, n)] for (action_id, n), key in key_of.items() if (key, n) in answered
            }
        return self._answered.get((reply.action_id, reply.n), reply.index)

    def answered_between(self, reply: ReplyReceived) -> tuple[int, int]:
        """Where in the history the target may have answered the read ``reply`` carries back, earliest and latest:
        where it did (``answered_at``), or, with the destination's ledger withheld (its answers with it), anywhere
        from the read's send to the answer's arrival (a lookup's or a verification's; a reply the target did not give
        is placed where it arrived)."""
        if self.destination_visible or reply.kind not in ("lookup", "verify"):
            at = self.answered_at(reply)
            return at, at
        if self._read_sent is None:
            self._read_sent = {(r.action_id, r.n): r.index for r in self.reads}
        return self._read_sent.get((reply.action_id, reply.n), reply.index), reply.index

    def decision_of(self, dispatch: DispatchSent) -> CommandGiven | None:
        """The command that decided ``dispatch`` (``None``: none did, as for the dispatcher's first send)."""
        if self._decisions is None:
            self._decisions = _decisions(self.evidence.history)
        return self._decisions.get(dispatch.index)

    def dispatches_of(self, action_id: str) -> list[DispatchSent]:
        if self._dispatches_by_action is None:
            self._dispatches_by_action = {}
            for d in self.dispatches:
                self._dispatches_by_action.setdefault(d.action_id, []).append(d)
        return list(self._dispatches_by_action.get(action_id, ()))


@dataclass(slots=True)
class _Sorted(Generic[E]):
    """Records of one key in history order, with their indexes beside them for a binary search."""

    records: list[E]
    indexes: list[int]

    def latest_before(self, index: int) -> E | None:
        i = bisect_left(self.indexes, index)
        return self.records[i - 1] if i > 0 else None


def _sorted_by(records: Sequence[E], key: Callable[[E], str]) -> dict[str, _Sorted[E]]:
    grouped: dict[str, _Sorted[E]] = {}
    for record in records:
        group = grouped.setdefault(key(record), _Sorted([], []))
        group.records.append(record)
        group.indexes.append(record.index)
    return grouped


class _OfAction(Protocol):
    @property
    def action_id(self) -> str: ...


A = TypeVar("A", bound=_OfAction)


def _first_of(records: Sequence[A]) -> dict[str, A]:
    first: dict[str, A] = {}
    for record in records:
        first.setdefault(record.action_id, record)
    return first


def _decisions(history: Sequence[Event]) -> dict[int, CommandGiven]:
    """Each dispatch's own decision: the ``CommandGiven`` that decided it, by the dispatch's index (an index is not a
    place in the history: with the destination's ledger withheld, its entries are left out).

    A worker records a dispatching command, then, ``worker.retry_send_s`` later, its claim (if it asks for one),
    and at once (nothing else is recorded between them) the attempt and the send. Two workers recovering side by
    side interleave theirs: the send that follows a decision is not always that decision's, and the last decision
    before a send may be another worker's. The link is rebuilt in one pass: a decision stays open until it is
    claimed (refused, or granted: then the next attempt of the action is its own), attempted without a claim, or
    its worker gives another command or ends; decisions are claimed in the order they were made (every worker
    sends a decided dispatch the same delay after deciding it). A send with no attempt recorded before it (a
    hand-written history) takes the granted claim, else the oldest open decision."""
    #: Per action: its open decisions (index, incarnation), oldest first; closed ones are dropped as they surface.
    queues: dict[str, deque[tuple[int, int]]] = {}
    #: The open decision of each (action, incarnation).
    open_: dict[tuple[str, int], int] = {}
    #: Per action: the decision whose claim was just granted, awaiting its attempt.
    granted: dict[str, int] = {}
    attempted: dict[tuple[str, str], int | None] = {}
    linked: dict[int, int] = {}
    #: The dispatching decisions, by their index.
    given: dict[int, CommandGiven] = {}

    def oldest(action_id: str) -> int | None:
        queue = queues.get(action_id)
        while queue:
            index, incarnation = queue.popleft()
            if open_.get((action_id, incarnation)) == index:
                del open_[action_id, incarnation]
                return index
        return None

    for event in history:
        kind = type(event)
        if kind is CommandGiven:
            assert isinstance(event, CommandGiven)
            open_.pop((event.action_id, event.incarnation), None)  # its last command was carried out
            if event.command.kind in DISPATCHING:
                given[event.index] = event
                open_[event.action_id, event.incarnation] = event.index
                queues.setdefault(event.action_id, deque()).append((event.index, event.incarnation))
        elif kind is ClaimDecided:
            assert isinstance(event, ClaimDecided)
            decided = oldest(event.action_id)
            if decided is not None and event.ok:
                granted[event.action_id] = decided
        elif kind is AttemptRecorded:
            assert isinstance(event, AttemptRecorded)
            decided = granted.pop(event.action_id, None)
            attempted[event.action_id, event.execution_id] = decided if decided is not None else oldest(event.action_id)
        elif kind is DispatchSent:
            assert isinstance(event, DispatchSent)
            key = (event.action_id, event.execution_id)
            if key in attempted:
                decided = attempted.pop(key)
            else:
                decided = granted.pop(event.action_id, None)
                decided = decided if decided is not None else oldest(event.action_id)
            if decided is not None:
                linked[event.index] = decided
        elif kind is WorkerCrashed or kind is WorkerReported:
            assert isinstance(event, WorkerCrashed | WorkerReported)
            open_.pop((event.action_id, event.incarnation), None)
    return {dispatch: given[decided] for dispatch, decided in linked.items()}


def facts(evidence: Evidence) -> Facts:
    """Sort the history's records into typed views; records of other types are kept only in the history."""
    out = Facts(evidence)
    for event in evidence.history:
        view = _VIEW.get(type(event))
        if view is None:
            continue  # about half a case's records: one lookup each, not a chain of type tests
        if view:
            cast("list[Event]", getattr(out, view)).append(event)
        elif isinstance(event, ApprovalExpired | ApprovalRevoked):
            out.approval_revocations.setdefault(event.approval_id, event)
        elif isinstance(event, ActionRecorded):
            out.actions[event.action_id] = event
    return out


#: The list each record type is appended to (one dictionary lookup per record, not a chain of type tests);
#: revocations and actions (``""``) are keyed by ID instead. Every type a view holds, and no other.
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
    Rejected: "rejections",
    Accepted: "accepts",
    ReplyReceived: "replies",
    LookupAnswered: "answers",
    ReplyUndeliverable: "unheard",
    WorkerReported: "reports",
    CommandGiven: "commands",
    RecordConflict: "refused",
    CommandRefused: "refused",
    StillInFlight: "unsettled",
    StillPending: "unsettled",
    ApprovalExpired: "",
    ApprovalRevoked: "",
    ActionRecorded: "",
}
