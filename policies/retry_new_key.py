"""The "press the button again" baseline: retry under a fresh idempotency key.

A new key is a new operation to the destination, so deduplication cannot help. Shipped as a clearly bad
baseline, to show what the checker catches.
"""

from __future__ import annotations

from harness.policy import RetryNewKey
from policies._retrying import BlindRetry

POLICY = BlindRetry("retry_new_key", "1", RetryNewKey())
