"""Retry with the stable action ID and the original arguments, trusting the destination to deduplicate.

It never looks up, never rechecks the task or its approval, and claims nothing before a retry: it recovers
an ordinary lost response under a valid deduplication contract, and nothing else.
"""

from __future__ import annotations

from harness.policy import RetrySameAction
from policies._retrying import BlindRetry

POLICY = BlindRetry("retry_same_key", "1", RetrySameAction(claim=False))
