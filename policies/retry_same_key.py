"""Retry with the stable action ID and the original arguments, trusting the destination to deduplicate.

It never looks up, never rechecks the task or its approval, and claims nothing before a retry: it recovers
an ordinary lost response under a valid deduplication contract, and nothing else.
"""

from __future__ import annotations

from harness.policy import Command, RetrySameAction, Situation, Stop
from policies._retrying import settle_from_replies


class RetrySameKey:
    name = "retry_same_key"
    revision = "1"
    retry_count_max = 3

    def decide(self, situation: Situation) -> Command:
        settled = settle_from_replies(situation)
        if settled is not None:
            return settled
        if len(situation.attempts) > self.retry_count_max:
            return Stop(reason=f"no reply after {self.retry_count_max} retries")
        return RetrySameAction(claim=False)


POLICY = RetrySameKey()
