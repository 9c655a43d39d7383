"""The task controller: trusted application state.

It owns task revisions, approvals, cancellation, the conditional claim that serializes dispatch with task
changes, and the action ledger with conditional updates. It holds newer writes to a target while an older
action on it is unaccounted for, and revokes an approval when its task changes or is cancelled. Every change
is recorded in the history, and the auditor is told of every ledger write, completion and escalation as it
happens.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import simpy

from harness.model import Action, Artifact, Receipt
from harness.model.events import (
    AbsenceRecorded,
    ActionRecorded,
    ApprovalExpired,
    ApprovalGranted,
    ApprovalRevoked,
    AttemptRecorded,
    CancelRequested,
    ClaimDecided,
    DispatchHeld,
    EffectRecorded,
    Escalated,
    RecordConflict,
    RecordRepeated,
    RejectionRecorded,
    TaskCompleted,
    TaskNotCompleted,
    TaskRevisionRecorded,
)
from harness.policy import ApprovalView, TaskView
from harness.scenario import Scenario
from harness.sim.auditor import Auditor
from harness.sim.history import History

__all__ = ["HELD_TARGET", "Controller"]

#: The start of a claim's refusal reason when an older action on the target holds it (the dispatcher waits).
HELD_TARGET = "target held"


@dataclass(slots=True)
class _Approval:
    approval_id: str
    revision: int
    artifact: Artifact
    expires_at_s: float | None
    revoked: bool = False

    def binds(self, action: Action) -> bool:
        """Approvals bind the revision, operation, target and artifact digest (not the model's name)."""
        a, b = self.artifact, action.artifact
        return self.revision == action.revision and (a.operation, a.target, a.digest) == (
            b.operation,
            b.target,
            b.digest,
        )


@dataclass(slots=True)
class _Action:
    view: Action
    #: Bumped on every ledger write: the guard for conditional updates.
    version: int = 0
    status: Literal["applied", "rejected", "absent"] | None = None
    receipt_id: str | None = None
    #: The task revision at the last successful claim; cleared by any ledger write and by a hold. A claim holds
    #: while the task stays at that revision and no cancellation is requested (revisions only grow, and a
    #: cancellation is final, so the pair says everything a version counter would).
    claim: int | None = None
    escalated: bool = False
    #: Further dispatch refused (a ``Hold``): claims of the action are refused from then on.
    held: bool = False
    execution_ids: list[str] = field(default_factory=list)
    #: When each attempt was recorded, and under which key, by execution ID.
    recorded_at_s: dict[str, float] = field(default_factory=dict)
    keys: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class _Task:
    task_id: str
    revision: int
    artifact: Artifact
    cancel_requested: bool = False
    completed_revision: int | None = None


class Controller:
    def __init__(self, env: simpy.Environment, history: History, scenario: Scenario, auditor: Auditor) -> None:
        self._env = env
        self._history = history
        self._auditor = auditor
        spec = scenario.task
        self.task = _Task(spec.task_id, spec.revision, spec.artifact)
        self._approvals: dict[int, _Approval] = {}
        self.actions: dict[str, _Action] = {}
        self._first_approval_id = scenario.approval.approval_id
        #: The last view of the task given, and the task's state it shows: a recovering worker asks for one at
        #: every decision, and the task seldom changes between two.
        self._task_view: tuple[tuple[int, Artifact, bool, int | None], TaskView] | None = None
        #: The same for the last view of an approval given: what it shows seldom changes between two decisions.
        self._approval_view: tuple[tuple[str, bool, float | None], ApprovalView] | None = None
        self._record_revision()
        self._grant(scenario.approval.approval_id, scenario.approval.expires_at_s)

    # -- task and approvals -------------------------------------------------------------------------

    def _record_revision(self) -> None:
        t = self.task
        self._history.record(TaskRevisionRecorded(task_id=t.task_id, revision=t.revision, artifact=t.artifact))

    def _grant(self, approval_id: str, expires_at_s: float | None) -> None:
        t = self.task
        self._approvals[t.revision] = _Approval(approval_id, t.revision, t.artifact, expires_at_s)
        self._history.record(
            ApprovalGranted(
                approval_id=approval_id,
                revision=t.revision,
                operation=t.artifact.operation,
                target=t.artifact.target,
                digest=t.artifact.digest,
                expires_at_s=expires_at_s,
            )
        )

    def change_task(self, model: str, digest: str, approved: bool) -> None:
        """Advance the task to a new revision requesting ``model``; earlier claims and approvals stop being valid."""
        t = self.task
        self._revoke(t.revision, f"task changed to revision {t.revision + 1}")
        t.revision += 1
        t.artifact = t.artifact.model_copy(update={"model": model, "digest": digest})
        self._record_revision()
        if approved:
            # '@' is not allowed in scenario names, so a generated id never collides with a given one.
            self._grant(f"{self._first_approval_id}@r{t.revision}", None)

    def request_cancel(self, reason: str) -> None:
        t = self.task
        t.cancel_requested = True
        self._history.record(CancelRequested(task_id=t.task_id, revision=t.revision, reason=reason))
        self._revoke(t.revision, "cancellation requested")

    def _revoke(self, revision: int, reason: str) -> None:
        """Withdraw the revision's approval, so that a fencing destination refuses any request still carrying it."""
        approval = self._approvals.get(revision)
        if approval is None or approval.revoked:
            return
        approval.revoked = True
        self._history.record(ApprovalRevoked(approval_id=approval.approval_id, reason=reason))

    def expire_approval(self) -> None:
        approval = self._approvals.get(self.task.revision)
        if approval is None:
            return
        approval.revoked = True
        self._history.record(ApprovalExpired(approval_id=approval.approval_id))

    def _approval_valid(self, action: Action) -> bool:
        approval = self._approvals.get(action.revision)
        if approval is None or approval.approval_id != action.approval_id or not approval.binds(action):
            return False
        return self._in_force(approval)

    def _in_force(self, approval: _Approval) -> bool:
        return not approval.revoked and (approval.expires_at_s is None or self._history.now_s() < approval.expires_at_s)

    def approval_in_force(self, approval_id: str) -> bool:
        """Whether ``approval_id`` is neither revoked nor expired now (what a fencing destination asks)."""
        return any(a.approval_id == approval_id and self._in_force(a) for a in self._approvals.values())

    # -- actions ------------------------------------------------------------------------------------

    def record_action(self, action_id: str) -> Action:
        """Record the logical action for the task's current revision, before anything is sent."""
        t = self.task
        # A revision nobody approved yet still gets its action recorded: its claim is then refused.
        approval = self._approvals.get(t.revision)
        approval_id = approval.approval_id if approval else ""
        view = Action.trusted(
            action_id=action_id,
            task_id=t.task_id,
            revision=t.revision,
            artifact=t.artifact,
            approval_id=approval_id,
            idempotency_key=action_id,
        )
        self.actions[action_id] = _Action(view)
        self._history.record(
            ActionRecorded(
                action_id=action_id,
                task_id=t.task_id,
                revision=t.revision,
                artifact=t.artifact,
                approval_id=approval_id,
            )
        )
        self._auditor.action_recorded(action_id)
        return view

    def claim_if_revision(
        self, action_id: str, revision: int, attempts_seen: int | None = None, send_by_s: float | None = None
    ) -> str | None:
        """Atomically recheck the task, the approval, the target and the action (not accounted for, held or
        escalated), and claim the action for dispatch.

        ``attempts_seen``: how many attempts of the action its ledger listed when the worker decided this
        dispatch. A claim made later (a retry that takes ``retry_send_s`` to leave) is a conditional update of the
        action's record, as the task's revision is: an attempt recorded since (another worker's) refuses it, as a
        newer revision does, so that the decision is made again on what the ledger now says. A decision and its
        claim made at one instant see the same ledger, so nothing changes there.

        ``send_by_s``: the latest moment the decision allows the claim (a lease on it): made later, it is refused.

        Returns ``None`` when claimed, else the reason it was refused.
        """
        action = self.actions[action_id]
        t = self.task
        reason = None
        older = self.unaccounted_before(action_id)
        if t.revision != revision or action.view.revision != revision:
            reason = f"task is at revision {t.revision}, the action belongs to {action.view.revision}"
        elif t.cancel_requested:
            reason = "cancellation requested"
        elif not self._approval_valid(action.view):
            reason = "approval missing, revoked or expired"
        elif action.status is not None:
            reason = f"action already accounted for as {action.status}"
        elif action.held:
            reason = "dispatch of the action is held"
        elif action.escalated:
            # Handed to its owner (by another worker, while this dispatch was on its way): a dispatch now would
            # leave the owner a stale account.
            reason = "the action was escalated to its owner"
        elif older is not None:
            reason = f"{HELD_TARGET}: {older} is not accounted for"
        elif attempts_seen is not None and len(action.execution_ids) > attempts_seen:
            reason = f"attempt {action.execution_ids[attempts_seen]} was recorded since the dispatch was decided"
        elif send_by_s is not None and self._history.now_s() > send_by_s:
            reason = f"made after {send_by_s:.3f} s, the latest moment the decision allowed it"
        if reason is None:
            action.claim = t.revision
        self._history.record(ClaimDecided(action_id=action_id, revision=revision, ok=reason is None, reason=reason))
        return reason

    def unaccounted_before(self, action_id: str) -> str | None:
        """An older action on the same target that is not accounted for yet, which holds this one's dispatch."""
        target = self.actions[action_id].view.artifact.target
        for other_id, other in self.actions.items():
            if other_id == action_id:
                return None
            if other.view.artifact.target == target and other.status is None:
                return other_id
        return None

    def begin_attempt(self, action_id: str, execution_id: str, idempotency_key: str) -> None:
        action = self.actions[action_id]
        action.execution_ids.append(execution_id)
        action.recorded_at_s[execution_id] = self._history.now_s()
        action.keys[execution_id] = idempotency_key
        self._history.record(
            AttemptRecorded(action_id=action_id, execution_id=execution_id, idempotency_key=idempotency_key)
        )

    def authorized_now(self, action_id: str) -> bool:
        """May this action be dispatched at this instant, by the controller's live state? (The auditor asks.)"""
        action = self.actions[action_id]
        t = self.task
        return (
            action.status is None
            and not action.held
            and action.claim == t.revision
            and action.view.revision == t.revision
            and not t.cancel_requested
            and self._approval_valid(action.view)
            and self.unaccounted_before(action_id) is None
        )

    def _write(
        self, action: _Action, status: Literal["applied", "rejected", "absent"], receipt: Receipt | None
    ) -> None:
        """One ledger write: a new version of the action's record, and a spent claim."""
        action.version += 1
        action.status, action.receipt_id = status, receipt.receipt_id if receipt else None
        action.claim = None  # an accounted action needs a fresh claim before any further dispatch
        self._auditor.ledger_written(
            action.view.action_id,
            status,
            action.receipt_id,
            self._history.now_s(),
            receipt.artifact if receipt else None,
            receipt.idempotency_key if receipt else None,
        )

    def record_effect(self, action_id: str, receipt: Receipt, guarded: bool) -> None:
        """Record an observed receipt in the action ledger, then update the task under its own guard."""
        action = self.actions[action_id]
        if guarded and action.status is not None:
            conflict = RecordRepeated if action.receipt_id == receipt.receipt_id else RecordConflict
            self._history.record(
                conflict(action_id=action_id, receipt_id=receipt.receipt_id, recorded_receipt_id=action.receipt_id)
            )
            return
        self._write(action, receipt.status, receipt)
        record = EffectRecorded if receipt.status == "applied" else RejectionRecorded
        self._history.record(
            record(
                action_id=action_id,
                receipt_id=receipt.receipt_id,
                idempotency_key=receipt.idempotency_key,
                artifact=receipt.artifact,
                action_revision=action.view.revision,
                version=action.version,
                guarded=guarded,
            )
        )
        if receipt.status == "applied":
            self._complete_task(action, receipt, guarded)

    def _complete_task(self, action: _Action, receipt: Receipt, guarded: bool) -> None:
        t = self.task
        reason = None
        if action.view.revision != t.revision:
            reason = (
                f"historical effect: the receipt belongs to revision {action.view.revision}, task is at {t.revision}"
            )
        elif t.cancel_requested:
            reason = "cancellation requested: the effect is recorded, the task is not completed"
        elif receipt.artifact != t.artifact:
            reason = "the receipt does not match the revision's operation, target and artifact"
        elif t.completed_revision == t.revision:
            reason = "revision already completed"
        if guarded and reason is not None:
            self._history.record(
                TaskNotCompleted(task_id=t.task_id, revision=t.revision, action_id=action.view.action_id, reason=reason)
            )
            return
        self._auditor.task_completed(action.view.revision, receipt.receipt_id, receipt.artifact)
        t.completed_revision = t.revision
        self._history.record(
            TaskCompleted(
                task_id=t.task_id,
                revision=t.revision,
                action_id=action.view.action_id,
                receipt_id=receipt.receipt_id,
                artifact=receipt.artifact,
            )
        )

    def record_absent(self, action_id: str, reason: str) -> None:
        """Record the action as not applied (only if nothing is recorded for it yet)."""
        action = self.actions[action_id]
        if action.status is not None:
            self._history.record(
                RecordConflict(action_id=action_id, receipt_id=None, recorded_receipt_id=action.receipt_id)
            )
            return
        self._write(action, "absent", None)
        self._history.record(AbsenceRecorded(action_id=action_id, reason=reason, version=action.version))

    def hold_dispatch(self, action_id: str, reason: str) -> None:
        """Refuse every later claim of the action; its outcome stays as recorded (possibly unaccounted for)."""
        action = self.actions[action_id]
        action.held = True
        action.claim = None
        self._history.record(DispatchHeld(action_id=action_id, reason=reason))

    def escalate(self, action_id: str, owner: str, reason: str) -> None:
        self.actions[action_id].escalated = True
        self._auditor.escalated(action_id, self._history.now_s())
        self._history.record(Escalated(action_id=action_id, owner=owner, reason=reason))

    # -- views for the recovering worker -----------------------------------------------------------

    def task_view(self) -> TaskView:
        t = self.task
        state = (t.revision, t.artifact, t.cancel_requested, t.completed_revision)
        if self._task_view is not None and self._task_view[0] == state:
            return self._task_view[1]
        view = TaskView.trusted(
            task_id=t.task_id,
            revision=t.revision,
            artifact=t.artifact,
            cancel_requested=t.cancel_requested,
            completed_revision=t.completed_revision,
        )
        self._task_view = (state, view)
        return view

    def approval_view(self, action: Action) -> ApprovalView:
        approval = self._approvals.get(action.revision)
        state = (action.approval_id, self._approval_valid(action), approval.expires_at_s if approval else None)
        if self._approval_view is not None and self._approval_view[0] == state:
            return self._approval_view[1]
        approval_id, valid, expires_at_s = state
        view = ApprovalView.trusted(approval_id=approval_id, valid=valid, expires_at_s=expires_at_s)
        self._approval_view = (state, view)
        return view
