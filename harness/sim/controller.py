"""The task controller: trusted application state.

It owns task revisions, approvals, cancellation, the conditional claim that serializes dispatch with task
changes, and the action ledger with conditional updates. Every change is recorded in the history. It also
answers, from its live state, whether a dispatch is authorized right now: the simulator keeps that answer
as ground truth, independent of the checker, which rebuilds the same judgement from the history alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import simpy

from harness.policy import ActionView, ApprovalView, ReceiptView, TaskView
from harness.scenario import Scenario
from harness.sim.history import History

__all__ = ["Controller"]


@dataclass(slots=True)
class _Approval:
    approval_id: str
    revision: int
    operation: str
    target: str
    digest: str
    expires_at_s: float | None
    revoked: bool = False


@dataclass(slots=True)
class _Action:
    view: ActionView
    #: Bumped on every ledger write: the guard for conditional updates.
    version: int = 0
    status: Literal["applied", "rejected", "absent"] | None = None
    receipt_id: str | None = None
    recorded_at_s: float | None = None
    #: When an applied effect was first recorded (ground truth of the time to account).
    effect_recorded_at_s: float | None = None
    #: (task revision, task version) at the last successful claim; cleared by any ledger write.
    claim: tuple[int, int] | None = None
    escalated: bool = False
    execution_ids: list[str] = field(default_factory=list)


@dataclass(slots=True)
class _Task:
    task_id: str
    revision: int
    operation: str
    target: str
    model: str
    digest: str
    #: Bumped on every change that invalidates earlier claims (a new revision, a cancellation).
    version: int = 0
    cancel_requested: bool = False
    cancel_at_s: float | None = None
    completed_revision: int | None = None
    completed_receipt: ReceiptView | None = None
    #: Whether the completion happened with no cancellation recorded (ground truth).
    completed_before_cancel: bool = False


class Controller:
    def _now(self) -> float:
        """Virtual time at the history's resolution, so live judgements and the history agree exactly."""
        return round(self._env.now, 6)

    def __init__(self, env: simpy.Environment, history: History, scenario: Scenario) -> None:
        self._env = env
        self._history = history
        spec = scenario.task
        self.task = _Task(spec.task_id, spec.revision, spec.operation, spec.target, spec.model, spec.digest)
        self._approvals: dict[int, _Approval] = {}
        self.actions: dict[str, _Action] = {}
        #: Ground truth kept while things happen (never shown to the checker).
        self.record_counts: dict[tuple[str, str], int] = {}
        self.wrong_revision_completions = 0
        self.escalation_count = 0
        #: Ledger writes as (action, status, receipt) in order, for the ground truth of false records.
        self.ledger_writes: list[tuple[str, str, str | None]] = []
        self._first_approval_id = scenario.approval.approval_id
        self._record_revision()
        self._grant(scenario.approval.approval_id, scenario.approval.expires_at_s)

    # -- task and approvals -------------------------------------------------------------------------

    def _record_revision(self) -> None:
        t = self.task
        self._history.record(
            "controller",
            "task_revision",
            task_id=t.task_id,
            revision=t.revision,
            operation=t.operation,
            target=t.target,
            model=t.model,
            digest=t.digest,
        )

    def _grant(self, approval_id: str, expires_at_s: float | None) -> None:
        t = self.task
        self._approvals[t.revision] = _Approval(approval_id, t.revision, t.operation, t.target, t.digest, expires_at_s)
        self._history.record(
            "controller",
            "approval_granted",
            approval_id=approval_id,
            revision=t.revision,
            operation=t.operation,
            target=t.target,
            digest=t.digest,
            expires_at_s=expires_at_s,
        )

    def change_task(self, model: str, digest: str, approved: bool) -> None:
        """Advance the task to a new revision requesting ``model``; earlier claims stop being valid."""
        t = self.task
        t.revision += 1
        t.model, t.digest = model, digest
        t.version += 1
        self._record_revision()
        if approved:
            # '@' is not allowed in scenario names, so a generated id never collides with a given one.
            self._grant(f"{self._first_approval_id}@r{t.revision}", None)

    def request_cancel(self, reason: str) -> None:
        t = self.task
        t.cancel_requested = True
        t.cancel_at_s = self._now()
        t.version += 1
        self._history.record("controller", "cancel_requested", task_id=t.task_id, revision=t.revision, reason=reason)

    def expire_approval(self) -> None:
        approval = self._approvals.get(self.task.revision)
        if approval is None:
            return
        approval.revoked = True
        self._history.record("controller", "approval_expired", approval_id=approval.approval_id)

    def _approval_valid(self, action: ActionView) -> bool:
        approval = self._approvals.get(action.revision)
        if approval is None or approval.revoked or approval.approval_id != action.approval_id:
            return False
        if (approval.operation, approval.target, approval.digest) != (action.operation, action.target, action.digest):
            return False
        return approval.expires_at_s is None or self._now() < approval.expires_at_s

    # -- actions ------------------------------------------------------------------------------------

    def record_action(self, action_id: str) -> ActionView:
        """Record the logical action for the task's current revision, before anything is sent."""
        t = self.task
        approval = self._approvals[t.revision]
        view = ActionView(
            action_id=action_id,
            task_id=t.task_id,
            revision=t.revision,
            operation=t.operation,
            target=t.target,
            model=t.model,
            digest=t.digest,
            approval_id=approval.approval_id,
            idempotency_key=action_id,
        )
        self.actions[action_id] = _Action(view)
        self._history.record("controller", "action_recorded", **view.model_dump(exclude={"idempotency_key"}))
        return view

    def claim_if_revision(self, action_id: str, revision: int) -> bool:
        """Atomically recheck the task and approval and claim the action for dispatch; True if claimed."""
        action = self.actions[action_id]
        t = self.task
        reason = None
        if t.revision != revision or action.view.revision != revision:
            reason = f"task is at revision {t.revision}, the action belongs to {action.view.revision}"
        elif t.cancel_requested:
            reason = "cancellation requested"
        elif not self._approval_valid(action.view):
            reason = "approval missing, revoked or expired"
        elif action.status is not None:
            reason = f"action already accounted for as {action.status}"
        if reason is None:
            action.claim = (t.revision, t.version)
        self._history.record(
            "controller", "claim", action_id=action_id, revision=revision, ok=reason is None, reason=reason
        )
        return reason is None

    def begin_attempt(self, action_id: str, execution_id: str, idempotency_key: str) -> None:
        self.actions[action_id].execution_ids.append(execution_id)
        self._history.record(
            "controller",
            "attempt_recorded",
            action_id=action_id,
            execution_id=execution_id,
            idempotency_key=idempotency_key,
        )

    def authorized_now(self, action_id: str) -> bool:
        """Ground truth: may this action be dispatched at this instant, by the controller's live state?"""
        action = self.actions[action_id]
        t = self.task
        return (
            action.status is None
            and action.claim == (t.revision, t.version)
            and action.view.revision == t.revision
            and not t.cancel_requested
            and self._approval_valid(action.view)
        )

    def record_effect(self, action_id: str, receipt: ReceiptView, guarded: bool) -> None:
        """Record an observed receipt in the action ledger, then update the task under its own guard."""
        action = self.actions[action_id]
        event = "effect_recorded" if receipt.status == "applied" else "rejection_recorded"
        if guarded and action.status is not None:
            same = action.receipt_id == receipt.receipt_id
            self._history.record(
                "controller",
                "record_repeated" if same else "record_conflict",
                action_id=action_id,
                receipt_id=receipt.receipt_id,
                recorded_receipt_id=action.receipt_id,
            )
            return
        action.version += 1
        action.status, action.receipt_id = receipt.status, receipt.receipt_id
        action.claim = None  # an accounted action needs a fresh claim before any further dispatch
        if action.recorded_at_s is None:
            action.recorded_at_s = self._now()
        if receipt.status == "applied" and action.effect_recorded_at_s is None:
            action.effect_recorded_at_s = self._now()
        self.ledger_writes.append((action_id, receipt.status, receipt.receipt_id))
        key = (action_id, receipt.receipt_id)
        self.record_counts[key] = self.record_counts.get(key, 0) + 1
        self._history.record(
            "controller",
            event,
            action_id=action_id,
            receipt_id=receipt.receipt_id,
            idempotency_key=receipt.idempotency_key,
            model=receipt.model,
            digest=receipt.digest,
            target=receipt.target,
            action_revision=action.view.revision,
            version=action.version,
            guarded=guarded,
        )
        if receipt.status == "applied":
            self._complete_task(action, receipt, guarded)

    def _complete_task(self, action: _Action, receipt: ReceiptView, guarded: bool) -> None:
        t = self.task
        reason = None
        if action.view.revision != t.revision:
            reason = (
                f"historical effect: the receipt belongs to revision {action.view.revision}, task is at {t.revision}"
            )
        elif t.cancel_requested:
            reason = "cancellation requested: the effect is recorded, the task is not completed"
        elif (receipt.operation, receipt.target, receipt.model, receipt.digest) != (
            t.operation,
            t.target,
            t.model,
            t.digest,
        ):
            reason = "the receipt does not match the revision's operation, target and artifact"
        elif t.completed_revision == t.revision:
            reason = "revision already completed"
        if guarded and reason is not None:
            self._history.record(
                "controller",
                "task_not_completed",
                task_id=t.task_id,
                revision=t.revision,
                action_id=action.view.action_id,
                reason=reason,
            )
            return
        if reason is not None and reason != "revision already completed":
            self.wrong_revision_completions += 1
        t.completed_revision, t.completed_receipt = t.revision, receipt
        t.completed_before_cancel = not t.cancel_requested
        self._history.record(
            "controller",
            "task_completed",
            task_id=t.task_id,
            revision=t.revision,
            action_id=action.view.action_id,
            receipt_id=receipt.receipt_id,
            model=receipt.model,
            digest=receipt.digest,
            target=receipt.target,
        )

    def hold(self, action_id: str, reason: str) -> None:
        """Record the action as not applied and hold further dispatch of it (only if nothing is recorded yet)."""
        action = self.actions[action_id]
        if action.status is not None:
            self._history.record(
                "controller",
                "record_conflict",
                action_id=action_id,
                receipt_id=None,
                recorded_receipt_id=action.receipt_id,
            )
            return
        action.version += 1
        action.status = "absent"
        action.claim = None
        action.recorded_at_s = self._now()
        self.ledger_writes.append((action_id, "absent", None))
        self._history.record("controller", "held", action_id=action_id, reason=reason, version=action.version)

    def escalate(self, action_id: str, owner: str, reason: str) -> None:
        self.actions[action_id].escalated = True
        self.escalation_count += 1
        self._history.record("controller", "escalated", action_id=action_id, owner=owner, reason=reason)

    # -- views for the recovering worker -----------------------------------------------------------

    def task_view(self) -> TaskView:
        t = self.task
        return TaskView(
            task_id=t.task_id,
            revision=t.revision,
            model=t.model,
            digest=t.digest,
            cancel_requested=t.cancel_requested,
            completed_revision=t.completed_revision,
        )

    def approval_view(self, action: ActionView) -> ApprovalView:
        approval = self._approvals.get(action.revision)
        return ApprovalView(
            approval_id=action.approval_id,
            valid=self._approval_valid(action),
            expires_at_s=approval.expires_at_s if approval else None,
        )
