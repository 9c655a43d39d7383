"""The two blind-retry baselines: record any reply that settles the action, else send it again.

They differ only in what "again" means, so each is this class with its own retry command.
"""

from __future__ import annotations

from harness.policy import Command, RecordEffect, RecordRejection, RetryNewKey, RetrySameAction, Situation, Stop


class BlindRetry:
    """Record the first applied or rejected receipt a reply brought; otherwise retry up to ``retry_count_max``."""

    name: str
    revision: str
    retry_count_max = 3

    def __init__(self, name: str, revision: str, retry: RetrySameAction | RetryNewKey) -> None:
        self.name, self.revision, self._retry = name, revision, retry

    def decide(self, situation: Situation) -> Command:
        if situation.recorded is not None:
            return Stop(reason=f"recorded as {situation.recorded}")
        for attempt in situation.attempts:
            if attempt.receipt is not None:
                if attempt.receipt.status == "applied":
                    return RecordEffect(receipt_id=attempt.receipt.receipt_id)
                return RecordRejection(receipt_id=attempt.receipt.receipt_id)
        if any(a.response_status == "conflict" for a in situation.attempts):
            return Stop(reason="the destination answered a conflict")
        if len(situation.attempts) > self.retry_count_max:
            return Stop(reason=f"no reply after {self.retry_count_max} retries")
        return self._retry
