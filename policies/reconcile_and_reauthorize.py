"""Reconcile the effect first, then decide what is still authorized.

Look the action up at the destination and verify the receipt's operation, arguments and target against the
action that was actually sent. Record what is found. Retry only an ``absent`` action whose task revision,
approval and deduplication contract are all still valid, and only after the controller atomically rechecks
and claims it. A pending or unknown result is waited on while time allows, then escalated to the owner
before the deadline: a failed lookup is not evidence that nothing happened.
"""

from __future__ import annotations

from typing import Literal

from harness.policy import (
    Command,
    Escalate,
    Hold,
    LookUp,
    Receipt,
    RecordEffect,
    RecordRejection,
    RetrySameAction,
    Situation,
    Stop,
    Wait,
)

Decision = Literal[
    "record_observed_effect", "record_rejection", "wait_or_escalate", "retry_same_action", "hold_dispatch"
]
Effect = Literal["applied", "rejected", "pending", "absent", "unknown"]


def recovery_decision(
    effect: Effect, same_task_revision: bool, authorization_valid: bool, deduplication_valid: bool
) -> Decision:
    """The decision table: what to do once the destination's record has been verified."""
    if effect == "applied":
        return "record_observed_effect"
    if effect == "rejected":
        return "record_rejection"
    if effect in ("pending", "unknown"):
        return "wait_or_escalate"
    if same_task_revision and authorization_valid and deduplication_valid:
        return "retry_same_action"
    return "hold_dispatch"


def _matches(receipt: Receipt, situation: Situation) -> bool:
    """Whether the receipt is for the action that was sent: its key and its exact arguments."""
    action = situation.action
    return receipt.idempotency_key == action.idempotency_key and receipt.artifact == action.artifact


class ReconcileAndReauthorize:
    name = "reconcile_and_reauthorize"
    revision = "2"
    #: Time between lookups while the result is pending or unknown.
    wait_s = 10.0
    #: Escalate while at least this much time is left before the deadline.
    escalate_margin_s = 15.0
    retry_count_max = 2

    def decide(self, situation: Situation) -> Command:
        if situation.recorded is not None:
            return Stop(reason=f"accounted for as {situation.recorded}")
        if situation.escalated:
            return Stop(reason="escalated to the owner")
        receipts = situation.observed_receipts()
        if any(not _matches(r, situation) for r in receipts):
            return Escalate(reason="a receipt does not match the action that was sent")
        latest_attempt = max((a.sent_at_s or 0.0 for a in situation.attempts), default=0.0)
        # A lookup answers for the moment it was made: one older than the last attempt or the last wait is stale.
        # (Half a wait, not a whole one: after waiting exactly wait_s, float arithmetic can land just short.)
        fresh = [
            lk for lk in situation.lookups if lk.at_s >= latest_attempt and situation.now_s - lk.at_s < self.wait_s / 2
        ]
        settled = next((r for r in receipts if r.status == "applied"), None) or (receipts[0] if receipts else None)
        if settled is None and not fresh:
            return LookUp()
        effect: Effect = settled.status if settled is not None else fresh[-1].effect
        first_sent = situation.first_sent_at_s
        decision = recovery_decision(
            effect,
            same_task_revision=situation.task.revision == situation.action.revision
            and not situation.task.cancel_requested,
            authorization_valid=situation.approval.valid,
            deduplication_valid=first_sent is None or situation.now_s - first_sent < situation.contract.dedupe_window_s,
        )
        if decision == "record_observed_effect" and settled is not None:
            return RecordEffect(receipt_id=settled.receipt_id)
        if decision == "record_rejection" and settled is not None:
            return RecordRejection(receipt_id=settled.receipt_id)
        if decision == "retry_same_action":
            if len(situation.attempts) > self.retry_count_max:
                return Escalate(reason="absent after the allowed retries")
            return RetrySameAction(claim=True)
        if decision == "hold_dispatch":
            return Hold()
        if situation.time_left_s > self.wait_s + self.escalate_margin_s:
            return Wait(duration_s=self.wait_s)
        return Escalate(reason=f"outcome still {effect} with {situation.time_left_s:.0f} s left before the deadline")


POLICY = ReconcileAndReauthorize()
