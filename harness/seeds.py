"""One seed derives every random choice: each component draws from its own named sub-seed.

Naming the sub-seeds means adding a new random component never shifts the numbers another one draws,
so a case replays identically after unrelated changes.
"""

from __future__ import annotations

import hashlib
import random

__all__ = ["COMPACT_ABOVE", "DEFAULT_SEEDS", "SEED_COUNT_MAX", "SEED_MAX", "rng", "sub_seed"]

#: The seeds ``python -m harness run`` uses when none are given.
DEFAULT_SEEDS: tuple[int, ...] = (1, 2, 3)
SEED_MAX = 2**63 - 1
#: Seeds per cell of ``harness run --seed-count``: a million in about a minute, in flat memory.
SEED_COUNT_MAX = 1_000_000
#: A cell with more seeds than this writes compact records (``--records auto``): one gzipped JSON line per case
#: in ``records-<piece>.jsonl.gz``, and a recovery.json only for the cases that are not correct.
COMPACT_ABOVE = 1000


def sub_seed(seed: int, name: str) -> int:
    """Return a 64-bit seed for component ``name``, a stable function of ``seed`` and ``name`` only."""
    digest = hashlib.blake2b(f"{seed}:{name}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def rng(seed: int, name: str) -> random.Random:
    """Return a private random generator for component ``name``."""
    return random.Random(sub_seed(seed, name))
