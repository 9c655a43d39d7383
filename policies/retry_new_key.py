"""The "press the button again" baseline: retry under a fresh idempotency key.

A new key is a new operation to the destination, so deduplication cannot help. Shipped as a clearly bad
baseline, to show what the checker catches.
"""

from __future__ import annotations

from harness.policy import Command, RetryNewKey, Situation, Stop
from policies._retrying import settle_from_replies


class RetryNewKeyPolicy:
    name = "retry_new_key"
    revision = "1"
    retry_count_max = 3

    def decide(self, situation: Situation) -> Command:
        settled = settle_from_replies(situation)
        if settled is not None:
            return settled
        if len(situation.attempts) > self.retry_count_max:
            return Stop(reason=f"no reply after {self.retry_count_max} retries")
        return RetryNewKey()


POLICY = RetryNewKeyPolicy()
