"""What the two blind-retry baselines share: record any reply that settles the action, else retry."""

from __future__ import annotations

from harness.policy import Command, RecordEffect, RecordRejection, Situation, Stop


def settle_from_replies(situation: Situation) -> Command | None:
    """Record the first applied or rejected receipt a reply brought, or stop once something is recorded."""
    if situation.recorded is not None:
        return Stop(reason=f"recorded as {situation.recorded}")
    for attempt in situation.attempts:
        if attempt.receipt is not None:
            if attempt.receipt.status == "applied":
                return RecordEffect(receipt_id=attempt.receipt.receipt_id)
            return RecordRejection(receipt_id=attempt.receipt.receipt_id)
    if any(a.response_status == "conflict" for a in situation.attempts):
        return Stop(reason="the destination answered a conflict")
    return None
