"""The history's vocabulary: one frozen record type per event, the tagged union of them all, and their JSON form.

Every actor records what happened as one of these records; the history is the ordered sequence of them,
faults included (Jepsen's history, typed). Each type names the ``actor`` that records it and its ``event``
name; everything that needs the vocabulary (operator triggers, the checker's facts, the timeline pictures,
``recovery.json``) derives it from ``AnyEvent``, never from a hand-written list.

A record is created by its actor and stamped once by the history with its ``index`` (its position, which
anomalies cite as a witness) and ``at_s`` (virtual time, never wall-clock time). In ``recovery.json`` an entry
is ``{"index", "at_s", "actor", "event", "data"}``: the record's own fields, with an ``Artifact`` spread into
its four keys and a command into its own fields.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, NamedTuple

from pydantic import BaseModel

from harness.model.base import Actor, RequestKind, Scalar, compiled, fast_frozen_init
from harness.model.commands import _COMMAND, Command
from harness.model.records import Artifact

__all__ = [
    "AT_END",
    "EVENT_TYPES",
    "VOCABULARY",
    "AbsenceRecorded",
    "Accepted",
    "ActionRecorded",
    "AnyEvent",
    "Applied",
    "ApprovalExpired",
    "ApprovalExpiryFired",
    "ApprovalGranted",
    "ApprovalRevoked",
    "AttemptRecorded",
    "BridgeRestarted",
    "CallBlocked",
    "CallConflict",
    "CallForwarded",
    "CallReplayed",
    "CancelRequestFired",
    "CancelRequested",
    "ChangeTaskFired",
    "ClaimDecided",
    "CommandBudgetExhausted",
    "CommandGiven",
    "CommandRefused",
    "Conflicted",
    "ConnectionBroken",
    "ConnectorCrashed",
    "ConnectorRestarted",
    "DeadlineReached",
    "DestinationRestarted",
    "DispatchHeld",
    "DispatchSent",
    "EffectRecorded",
    "EntryShape",
    "Escalated",
    "Event",
    "EventError",
    "FaultInjected",
    "InProgress",
    "JobAbsent",
    "JobCompleted",
    "JobConflict",
    "JobFollowSent",
    "JobReplayed",
    "JobStarted",
    "JobStillRunning",
    "JobUnknownOutcome",
    "LookupAnswered",
    "LookupSent",
    "LookupTimedOut",
    "OutcomeVerified",
    "PolicyFailed",
    "Received",
    "RecordConflict",
    "RecordRepeated",
    "Rejected",
    "RejectionRecorded",
    "ReplayedByDestination",
    "ReplyReceived",
    "ReplyTimedOut",
    "ReplyUndeliverable",
    "RequestRefused",
    "StillInFlight",
    "StillPending",
    "TaskCompleted",
    "TaskNotCompleted",
    "TaskRevisionRecorded",
    "VerifySent",
    "WaitCapped",
    "WorkerCrashed",
    "WorkerReported",
    "WorkerStarted",
    "entry_shapes",
    "event_data",
    "parse_event",
    "types_named",
]

_ARTIFACT_KEYS = tuple(Artifact.model_fields)


class EventError(ValueError):
    """A serialized entry that is not a known event with exactly its fields."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Event:
    """One thing that happened, as the actor that saw it recorded it.

    ``index`` and ``at_s`` are set by the history when the record is appended; every other field is the
    actor's.
    """

    actor: ClassVar[Actor]
    event: ClassVar[str]
    index: int = -1
    at_s: float = -1.0


# -- the worker -----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkerStarted(Event):
    """A worker incarnation started, as the first dispatcher or as a recovering replacement."""

    actor: ClassVar[Actor] = "worker"
    event: ClassVar[str] = "start"
    action_id: str
    incarnation: int
    role: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplyTimedOut(Event):
    """The caller stopped waiting for a dispatch's reply."""

    actor: ClassVar[Actor] = "worker"
    event: ClassVar[str] = "timeout"
    execution_id: str
    n: int


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkerCrashed(Event):
    """A worker incarnation died; what it saw is lost, its attempts stay in the controller's ledger."""

    actor: ClassVar[Actor] = "worker"
    event: ClassVar[str] = "crashed"
    action_id: str
    incarnation: int


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkerReported(Event):
    """The worker's own account of how it ended: kept for comparison, never evidence of an outcome."""

    actor: ClassVar[Actor] = "worker"
    event: ClassVar[str] = "report"
    action_id: str
    finished: bool
    claimed: str
    incarnation: int


@dataclass(frozen=True, slots=True, kw_only=True)
class CommandGiven(Event):
    """The policy's next command, as the worker ``incarnation`` is about to carry it out (two recovering side by
    side give theirs in turn)."""

    actor: ClassVar[Actor] = "worker"
    event: ClassVar[str] = "command"
    action_id: str
    command: Command
    incarnation: int


@dataclass(frozen=True, slots=True, kw_only=True)
class CommandRefused(Event):
    """A command the worker could not carry out (for example, a receipt it never observed)."""

    actor: ClassVar[Actor] = "worker"
    event: ClassVar[str] = "command_refused"
    action_id: str
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class PolicyFailed(Event):
    """The policy raised or returned something that is not a command."""

    actor: ClassVar[Actor] = "worker"
    event: ClassVar[str] = "policy_error"
    action_id: str
    error: str


@dataclass(frozen=True, slots=True, kw_only=True)
class DeadlineReached(Event):
    """The recovery deadline passed while the worker was still recovering."""

    actor: ClassVar[Actor] = "worker"
    event: ClassVar[str] = "deadline_reached"
    action_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class WaitCapped(Event):
    """A ``Wait`` longer than the scenario's ``worker.wait_max_s``: the worker waits ``waited_s``, not the
    ``asked_s`` the policy gave (recorded only when it cuts, right after the command)."""

    actor: ClassVar[Actor] = "worker"
    event: ClassVar[str] = "wait_capped"
    action_id: str
    asked_s: float
    waited_s: float


@dataclass(frozen=True, slots=True, kw_only=True)
class CommandBudgetExhausted(Event):
    """The policy gave ``count_max`` commands without stopping."""

    actor: ClassVar[Actor] = "worker"
    event: ClassVar[str] = "command_budget_exhausted"
    action_id: str
    count_max: int


@dataclass(frozen=True, slots=True, kw_only=True)
class LookupTimedOut(Event):
    """The caller stopped waiting for a lookup's reply."""

    actor: ClassVar[Actor] = "worker"
    event: ClassVar[str] = "lookup_timeout"
    action_id: str
    n: int


# -- the transport --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class DispatchSent(Event):
    """A side-effecting request left the caller: the ``n``-th dispatch of the action."""

    actor: ClassVar[Actor] = "transport"
    event: ClassVar[str] = "send"
    kind: Literal["dispatch"] = "dispatch"
    n: int
    action_id: str
    execution_id: str
    idempotency_key: str
    artifact: Artifact


@dataclass(frozen=True, slots=True, kw_only=True)
class StillInFlight(Event):
    """The case ended (it runs at most ``settle_max_s`` past the recovery deadline) with this dispatch still on
    its way to the destination: what it would have done there is not in the evidence."""

    actor: ClassVar[Actor] = "transport"
    event: ClassVar[str] = "still_in_flight"
    n: int
    action_id: str
    execution_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class LookupSent(Event):
    """A lookup of the action's durable result left the caller."""

    actor: ClassVar[Actor] = "transport"
    event: ClassVar[str] = "send"
    kind: Literal["lookup"] = "lookup"
    n: int
    action_id: str
    idempotency_key: str


@dataclass(frozen=True, slots=True, kw_only=True)
class JobFollowSent(Event):
    """A read of the action's job status at the device connector left the caller."""

    actor: ClassVar[Actor] = "transport"
    event: ClassVar[str] = "send"
    kind: Literal["follow_job"] = "follow_job"
    n: int
    action_id: str
    idempotency_key: str


@dataclass(frozen=True, slots=True, kw_only=True)
class VerifySent(Event):
    """A verification of the run against the original expectation (``artifact``) left the caller."""

    actor: ClassVar[Actor] = "transport"
    event: ClassVar[str] = "send"
    kind: Literal["verify"] = "verify"
    n: int
    action_id: str
    idempotency_key: str
    artifact: Artifact


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplyReceived(Event):
    """A reply reached the caller. ``status`` is a dispatch's status or a lookup's effect."""

    actor: ClassVar[Actor] = "transport"
    event: ClassVar[str] = "receive"
    kind: RequestKind
    n: int
    action_id: str
    execution_id: str | None
    status: str | None
    receipt_id: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplyUndeliverable(Event):
    """A reply arrived for a caller that is gone (crashed, or no longer waiting)."""

    actor: ClassVar[Actor] = "transport"
    event: ClassVar[str] = "undeliverable"
    kind: RequestKind
    n: int
    action_id: str
    execution_id: str | None
    status: str | None
    receipt_id: str | None


# -- the device connector (seed 000) --------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class JobStarted(Event):
    """The connector reserved the request's identity in its local ledger before any side effect (``durable``:
    written with fsync and an atomic rename; otherwise a crash loses it)."""

    actor: ClassVar[Actor] = "connector"
    event: ClassVar[str] = "started"
    idempotency_key: str
    execution_id: str
    job_id: str
    durable: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class JobCompleted(Event):
    """The executor returned: the connector persisted the receipt before reporting it, or, when the target
    answered without one (it refused the request, or said it is pending, in progress or a conflict), that answer
    (``receipt_id`` None, ``status`` the answer)."""

    actor: ClassVar[Actor] = "connector"
    event: ClassVar[str] = "completed"
    idempotency_key: str
    job_id: str
    receipt_id: str | None
    status: str


@dataclass(frozen=True, slots=True, kw_only=True)
class JobReplayed(Event):
    """A matching completed record answered a request (``execution_id``) or a follow (``None``): the recorded
    result, without executing again (``receipt_id`` None: the target's answer had none)."""

    actor: ClassVar[Actor] = "connector"
    event: ClassVar[str] = "replayed"
    idempotency_key: str
    execution_id: str | None
    job_id: str
    receipt_id: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class JobConflict(Event):
    """The same key with a changed request identity (arguments or execution budget): a conflict."""

    actor: ClassVar[Actor] = "connector"
    event: ClassVar[str] = "conflict"
    idempotency_key: str
    execution_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class JobUnknownOutcome(Event):
    """A started record without a completed one: the outcome is unknown, and automatic retries stop."""

    actor: ClassVar[Actor] = "connector"
    event: ClassVar[str] = "unknown_outcome"
    idempotency_key: str
    job_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class JobStillRunning(Event):
    """The job has not completed yet: the wait ended (``task wait --wait``) or a follow found it running."""

    actor: ClassVar[Actor] = "connector"
    event: ClassVar[str] = "running"
    idempotency_key: str
    job_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class JobAbsent(Event):
    """A follow asked about a key the connector's ledger does not hold (never started, or the record was lost)."""

    actor: ClassVar[Actor] = "connector"
    event: ClassVar[str] = "absent"
    idempotency_key: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectorCrashed(Event):
    """The device connector died at ``phase``; ``lost_records`` started records that were not yet durable are gone."""

    actor: ClassVar[Actor] = "connector"
    event: ClassVar[str] = "crashed"
    phase: str
    lost_records: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectorRestarted(Event):
    """The connector runs again, with its durable ledger; a job it was running is not resumed."""

    actor: ClassVar[Actor] = "connector"
    event: ClassVar[str] = "restarted"


# -- the bridge (seed 002) ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class CallForwarded(Event):
    """The bridge forwarded a call to the tool server: pipe request UUID ``idempotency_key``, JSON-RPC ``rpc_id``."""

    actor: ClassVar[Actor] = "bridge"
    event: ClassVar[str] = "forwarded"
    idempotency_key: str
    execution_id: str
    rpc_id: int


@dataclass(frozen=True, slots=True, kw_only=True)
class CallReplayed(Event):
    """A call under a UUID the bridge process holds a receipt for, with the same content: answered from it."""

    actor: ClassVar[Actor] = "bridge"
    event: ClassVar[str] = "replayed"
    idempotency_key: str
    execution_id: str
    receipt_id: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class CallConflict(Event):
    """A call under a known UUID with other content: refused as a conflict."""

    actor: ClassVar[Actor] = "bridge"
    event: ClassVar[str] = "conflict"
    idempotency_key: str
    execution_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectionBroken(Event):
    """The connection broke before the caller got a complete reply; the error says: do not replay automatically.

    ``forwarded``: whether the call had reached the tool server (the caller cannot tell).
    """

    actor: ClassVar[Actor] = "bridge"
    event: ClassVar[str] = "connection_error"
    idempotency_key: str
    execution_id: str
    forwarded: bool
    do_not_replay: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class CallBlocked(Event):
    """A mutation refused by the bridge: the task's last outcome is uncertain and not verified yet (reads pass)."""

    actor: ClassVar[Actor] = "bridge"
    event: ClassVar[str] = "blocked"
    idempotency_key: str
    execution_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class BridgeRestarted(Event):
    """The bridge process restarted: receipts it kept for request UUIDs are forgotten."""

    actor: ClassVar[Actor] = "bridge"
    event: ClassVar[str] = "restarted"
    forgotten_receipts: int


# -- the destination ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Received(Event):
    """A dispatch reached the destination."""

    actor: ClassVar[Actor] = "destination"
    event: ClassVar[str] = "received"
    idempotency_key: str
    execution_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Accepted(Event):
    """The destination accepted a new operation under this key; it has not applied it yet."""

    actor: ClassVar[Actor] = "destination"
    event: ClassVar[str] = "accepted"
    idempotency_key: str
    execution_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class StillPending(Event):
    """The case ended with this operation accepted and not yet applied: whether it applies is not in the
    evidence."""

    actor: ClassVar[Actor] = "destination"
    event: ClassVar[str] = "still_pending"
    idempotency_key: str
    execution_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Applied(Event):
    """The destination applied an operation and recorded its receipt: an effect."""

    actor: ClassVar[Actor] = "destination"
    event: ClassVar[str] = "applied"
    receipt_id: str
    idempotency_key: str
    execution_id: str
    artifact: Artifact


@dataclass(frozen=True, slots=True, kw_only=True)
class Rejected(Event):
    """The destination refused an operation and recorded a rejected receipt: no effect."""

    actor: ClassVar[Actor] = "destination"
    event: ClassVar[str] = "rejected"
    receipt_id: str
    idempotency_key: str
    execution_id: str
    artifact: Artifact


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplayedByDestination(Event):
    """A request under a known key, inside the window, was answered from the recorded operation."""

    actor: ClassVar[Actor] = "destination"
    event: ClassVar[str] = "replayed"
    idempotency_key: str
    execution_id: str
    receipt_id: str | None
    arguments_match: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class Conflicted(Event):
    """A known key with other arguments was answered as a conflict."""

    actor: ClassVar[Actor] = "destination"
    event: ClassVar[str] = "conflict"
    idempotency_key: str
    execution_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class InProgress(Event):
    """A request under a key whose operation is still pending, answered "in progress" (409-style)."""

    actor: ClassVar[Actor] = "destination"
    event: ClassVar[str] = "in_progress"
    idempotency_key: str
    execution_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class RequestRefused(Event):
    """A request refused without effect: too old for the request-validity rule, or fenced (its approval revoked)."""

    actor: ClassVar[Actor] = "destination"
    event: ClassVar[str] = "refused"
    idempotency_key: str
    execution_id: str
    reason: Literal["expired", "fenced"]


@dataclass(frozen=True, slots=True, kw_only=True)
class DestinationRestarted(Event):
    """The destination's process restarted: deduplication kept only in its memory is forgotten (its ledger stays)."""

    actor: ClassVar[Actor] = "destination"
    event: ClassVar[str] = "restarted"
    forgotten_keys: int


@dataclass(frozen=True, slots=True, kw_only=True)
class OutcomeVerified(Event):
    """The destination read the run's durable state and compared it with the original expectation."""

    actor: ClassVar[Actor] = "destination"
    event: ClassVar[str] = "verified"
    idempotency_key: str
    result: Literal["confirmed", "refuted", "absent", "unknown"]
    receipt_id: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class LookupAnswered(Event):
    """The destination answered a lookup of a key's durable result: the ``n``-th read of the caller's action (a
    verification's, too), as the transport numbered it when it left. Its answer may still be long on its way back:
    it tells of the ledger as of now (less any lag), not as of when the caller hears it."""

    actor: ClassVar[Actor] = "destination"
    event: ClassVar[str] = "lookup_answered"
    idempotency_key: str
    effect: str
    receipt_id: str | None
    n: int


# -- the controller -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskRevisionRecorded(Event):
    """The task is now at ``revision``, asking for ``artifact``."""

    actor: ClassVar[Actor] = "controller"
    event: ClassVar[str] = "task_revision"
    task_id: str
    revision: int
    artifact: Artifact


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalGranted(Event):
    """An approval bound to one revision's operation, target and artifact digest, with its expiry."""

    actor: ClassVar[Actor] = "controller"
    event: ClassVar[str] = "approval_granted"
    approval_id: str
    revision: int
    operation: str
    target: str
    digest: str
    expires_at_s: float | None

    def binds(self, revision: int, artifact: Artifact) -> bool:
        """Whether this approval is for exactly this revision, operation, target and digest."""
        return (self.revision, self.operation, self.target, self.digest) == (
            revision,
            artifact.operation,
            artifact.target,
            artifact.digest,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalExpired(Event):
    """An approval was revoked or ran out."""

    actor: ClassVar[Actor] = "controller"
    event: ClassVar[str] = "approval_expired"
    approval_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalRevoked(Event):
    """An approval withdrawn by the controller because the task changed or was cancelled."""

    actor: ClassVar[Actor] = "controller"
    event: ClassVar[str] = "approval_revoked"
    approval_id: str
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class CancelRequested(Event):
    """The task's outstanding work is to be cancelled."""

    actor: ClassVar[Actor] = "controller"
    event: ClassVar[str] = "cancel_requested"
    task_id: str
    revision: int
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ActionRecorded(Event):
    """The logical action, recorded for one revision before anything is sent."""

    actor: ClassVar[Actor] = "controller"
    event: ClassVar[str] = "action_recorded"
    action_id: str
    task_id: str
    revision: int
    artifact: Artifact
    approval_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ClaimDecided(Event):
    """A conditional claim of the action against ``revision``: granted (``ok``) or refused with a reason."""

    actor: ClassVar[Actor] = "controller"
    event: ClassVar[str] = "claim"
    action_id: str
    revision: int
    ok: bool
    reason: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class AttemptRecorded(Event):
    """An execution attempt of the action, recorded before it is sent."""

    actor: ClassVar[Actor] = "controller"
    event: ClassVar[str] = "attempt_recorded"
    action_id: str
    execution_id: str
    idempotency_key: str


@dataclass(frozen=True, slots=True, kw_only=True)
class EffectRecorded(Event):
    """An applied receipt written to the action ledger (``version``: the action's ledger version after it)."""

    actor: ClassVar[Actor] = "controller"
    event: ClassVar[str] = "effect_recorded"
    action_id: str
    receipt_id: str
    idempotency_key: str
    artifact: Artifact
    action_revision: int
    version: int
    guarded: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class RejectionRecorded(Event):
    """A rejected receipt written to the action ledger."""

    actor: ClassVar[Actor] = "controller"
    event: ClassVar[str] = "rejection_recorded"
    action_id: str
    receipt_id: str
    idempotency_key: str
    artifact: Artifact
    action_revision: int
    version: int
    guarded: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordRepeated(Event):
    """A guarded write of the receipt already recorded: noted, not written again."""

    actor: ClassVar[Actor] = "controller"
    event: ClassVar[str] = "record_repeated"
    action_id: str
    receipt_id: str
    recorded_receipt_id: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordConflict(Event):
    """A guarded write that disagrees with what the ledger already holds: refused."""

    actor: ClassVar[Actor] = "controller"
    event: ClassVar[str] = "record_conflict"
    action_id: str
    receipt_id: str | None
    recorded_receipt_id: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskCompleted(Event):
    """The task's ``revision`` was marked complete by an action's receipt."""

    actor: ClassVar[Actor] = "controller"
    event: ClassVar[str] = "task_completed"
    task_id: str
    revision: int
    action_id: str
    receipt_id: str
    artifact: Artifact


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskNotCompleted(Event):
    """A recorded effect that the task's guard kept from completing the current revision."""

    actor: ClassVar[Actor] = "controller"
    event: ClassVar[str] = "task_not_completed"
    task_id: str
    revision: int
    action_id: str
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class AbsenceRecorded(Event):
    """The action recorded in the ledger as not applied (and never to be), with the reason."""

    actor: ClassVar[Actor] = "controller"
    event: ClassVar[str] = "absence_recorded"
    action_id: str
    reason: str
    version: int


@dataclass(frozen=True, slots=True, kw_only=True)
class DispatchHeld(Event):
    """Further dispatch of the action held: every later claim of it is refused. Nothing is recorded as its outcome."""

    actor: ClassVar[Actor] = "controller"
    event: ClassVar[str] = "dispatch_held"
    action_id: str
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Escalated(Event):
    """The unresolved action handed to its owner."""

    actor: ClassVar[Actor] = "controller"
    event: ClassVar[str] = "escalated"
    action_id: str
    owner: str
    reason: str


# -- the operator and the injector ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ChangeTaskFired(Event):
    """A person changes the task (the controller records the new revision next)."""

    actor: ClassVar[Actor] = "operator"
    event: ClassVar[str] = "change_task"


@dataclass(frozen=True, slots=True, kw_only=True)
class CancelRequestFired(Event):
    """A person asks to cancel the task's outstanding work."""

    actor: ClassVar[Actor] = "operator"
    event: ClassVar[str] = "request_cancel"


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalExpiryFired(Event):
    """The current revision's approval is revoked or runs out."""

    actor: ClassVar[Actor] = "operator"
    event: ClassVar[str] = "expire_approval"


@dataclass(frozen=True, slots=True, kw_only=True)
class FaultInjected(Event):
    """The injector applied the fault at ``boundary`` to the ``occurrence``-th crossing of it for the action."""

    actor: ClassVar[Actor] = "injector"
    event: ClassVar[str] = "fault"
    boundary: str
    action_id: str
    occurrence: int


AnyEvent = (
    WorkerStarted
    | ReplyTimedOut
    | WorkerCrashed
    | WorkerReported
    | CommandGiven
    | CommandRefused
    | PolicyFailed
    | DeadlineReached
    | CommandBudgetExhausted
    | WaitCapped
    | LookupTimedOut
    | DispatchSent
    | StillInFlight
    | LookupSent
    | JobFollowSent
    | VerifySent
    | ReplyReceived
    | ReplyUndeliverable
    | JobStarted
    | JobCompleted
    | JobReplayed
    | JobConflict
    | JobUnknownOutcome
    | JobStillRunning
    | JobAbsent
    | ConnectorCrashed
    | ConnectorRestarted
    | CallForwarded
    | CallReplayed
    | CallConflict
    | ConnectionBroken
    | CallBlocked
    | BridgeRestarted
    | OutcomeVerified
    | Received
    | Accepted
    | StillPending
    | Applied
    | Rejected
    | ReplayedByDestination
    | Conflicted
    | InProgress
    | RequestRefused
    | DestinationRestarted
    | LookupAnswered
    | TaskRevisionRecorded
    | ApprovalGranted
    | ApprovalExpired
    | ApprovalRevoked
    | CancelRequested
    | ActionRecorded
    | ClaimDecided
    | AttemptRecorded
    | EffectRecorded
    | RejectionRecorded
    | RecordRepeated
    | RecordConflict
    | TaskCompleted
    | TaskNotCompleted
    | AbsenceRecorded
    | DispatchHeld
    | Escalated
    | ChangeTaskFired
    | CancelRequestFired
    | ApprovalExpiryFired
    | FaultInjected
)
#: Every event type, derived from ``AnyEvent``.
EVENT_TYPES: tuple[type[Event], ...] = typing.get_args(AnyEvent)


# Records are built a few dozen times a case: each type gets a constructor that sets its slots directly.
for _cls in EVENT_TYPES:
    fast_frozen_init(_cls)

#: What the end of a case records (what it cut off), after everything else: no operator event can follow it.
AT_END: frozenset[tuple[str, str]] = frozenset((t.actor, t.event) for t in (StillInFlight, StillPending))
#: Every event name each actor records while the case runs: the vocabulary operator triggers may refer to.
VOCABULARY: dict[Actor, frozenset[str]] = {
    actor: frozenset(t.event for t in EVENT_TYPES if t.actor == actor and (t.actor, t.event) not in AT_END)
    for actor in typing.get_args(Actor)
}


# -- the JSON form --------------------------------------------------------------------------------------

#: How each field of a type is written: as itself, spread from an Artifact, or spread from a command.
_Layout = tuple[tuple[str, Literal["plain", "artifact", "command"]], ...]


def _layout(cls: type[Event]) -> _Layout:
    hints = typing.get_type_hints(cls, include_extras=True)
    layout: list[tuple[str, Literal["plain", "artifact", "command"]]] = []
    for f in dataclasses.fields(cls):
        if f.name in ("index", "at_s"):
            continue
        hint = hints[f.name]
        way: Literal["plain", "artifact", "command"] = (
            "artifact" if hint is Artifact else "command" if hint == Command else "plain"
        )
        layout.append((f.name, way))
    return tuple(layout)


_LAYOUTS: dict[type[Event], _Layout] = {cls: _layout(cls) for cls in EVENT_TYPES}


def _keys(cls: type[Event]) -> frozenset[str] | None:
    """The exact keys of a type's data, or None when a command decides them."""
    keys: set[str] = set()
    for name, way in _LAYOUTS[cls]:
        if way == "command":
            return None
        keys |= set(_ARTIFACT_KEYS) if way == "artifact" else {name}
    return frozenset(keys)


_BY_NAME: dict[tuple[str, str], list[type[Event]]] = {}
for _cls in EVENT_TYPES:
    _BY_NAME.setdefault((_cls.actor, _cls.event), []).append(_cls)
_KEYS = {cls: _keys(cls) for cls in EVENT_TYPES}


def types_named(actor: str, event: str) -> tuple[type[Event], ...]:
    """The record types an (actor, event) name covers (several where a ``kind`` tells them apart)."""
    return tuple(_BY_NAME.get((actor, event), ()))


class EntryShape(NamedTuple):
    """What a timeline entry of one record type holds: its actor and event, its data's exact keys (None where a
    command decides them), and the ``kind`` that tells it from another type of the same name (None if alone)."""

    actor: str
    event: str
    keys: frozenset[str] | None
    kind: object


def entry_shapes() -> tuple[EntryShape, ...]:
    """Every record type's entry shape, in the order the types are declared."""
    return tuple(
        EntryShape(
            cls.actor, cls.event, _KEYS[cls], _kind_default(cls) if len(_BY_NAME[(cls.actor, cls.event)]) > 1 else None
        )
        for cls in EVENT_TYPES
    )


def event_data(event: Event) -> dict[str, Scalar]:
    """The record's fields as the ``data`` of its timeline entry."""
    return _DATA[type(event)](event)


def _data_reader(cls: type[Event]) -> Callable[[Event], dict[str, Scalar]]:
    """A function that reads one record of ``cls`` as its ``data``: each field in order, an Artifact spread into its
    four keys, a command into its own fields (the hot path of every timeline: one dictionary display per record,
    not a loop over the layout)."""
    items = []
    for name, way in _LAYOUTS[cls]:
        if way == "plain":
            items.append(f"{name!r}: e.{name}")
        elif way == "artifact":
            items.extend(f"{key!r}: e.{name}.{key}" for key in _ARTIFACT_KEYS)
        else:
            items.append(f"**_dump(e.{name})")
    source = f"def data(e):\n    return {{{', '.join(items)}}}"
    return compiled(source, {"_dump": _command_data}, "data", f"event_data[{cls.__name__}]")  # type: ignore[no-any-return]


#: Command fields left out of a command's entry when unset (``None``): added later, so that the evidence of a
#: command that does not use one reads as it did before it was added.
_UNSET_LEFT_OUT = ("send_by_s",)


def _command_data(command: BaseModel) -> dict[str, Scalar]:
    data: dict[str, Scalar] = command.model_dump(mode="json")
    for name in _UNSET_LEFT_OUT:
        if name in data and data[name] is None:
            del data[name]
    return data


_DATA = {cls: _data_reader(cls) for cls in EVENT_TYPES}


def parse_event(actor: str, event: str, data: dict[str, Any], index: int = -1, at_s: float = -1.0) -> Event:
    """Rebuild a record from its timeline entry; raise ``EventError`` for an unknown event or wrong keys."""
    candidates = _BY_NAME.get((actor, event))
    if not candidates:
        raise EventError(f"the {actor} records no event '{event}'")
    if len(candidates) > 1:
        candidates = [c for c in candidates if _kind_default(c) == data.get("kind")]
        if len(candidates) != 1:
            raise EventError(f"{actor} {event}: unknown kind {data.get('kind')!r}")
    cls = candidates[0]
    expected = _KEYS[cls]
    if expected is not None and set(data) != expected:
        missing, extra = sorted(expected - set(data)), sorted(set(data) - expected)
        raise EventError(f"{actor} {event}: missing keys {missing}, unknown keys {extra}")
    fields: dict[str, Any] = {}
    for name, way in _LAYOUTS[cls]:
        if way == "artifact":
            fields[name] = Artifact(**{k: data[k] for k in _ARTIFACT_KEYS})
        elif way == "command":
            plain = {n for n, w in _LAYOUTS[cls] if w == "plain"}
            fields[name] = _COMMAND.validate_python({k: v for k, v in data.items() if k not in plain})
        else:
            fields[name] = data[name]
    return cls(index=index, at_s=at_s, **fields)


def _kind_default(cls: type[Event]) -> object:
    for f in dataclasses.fields(cls):
        if f.name == "kind":
            return f.default
    return None
