"""One seed derives every random choice: each component draws from its own named sub-seed.

Naming the sub-seeds means adding a new random component never shifts the numbers another one draws,
so a case replays identically after unrelated changes.
"""

from __future__ import annotations

import hashlib
import random

__all__ = ["DEFAULT_SEEDS", "SEED_MAX", "rng", "sub_seed"]

#: The seeds ``python -m harness run`` uses when none are given.
DEFAULT_SEEDS: tuple[int, ...] = (1, 2, 3)
SEED_MAX = 2**63 - 1


def sub_seed(seed: int, name: str) -> int:
    """Return a 64-bit seed for component ``name``, a stable function of ``seed`` and ``name`` only."""
    digest = hashlib.blake2b(f"{seed}:{name}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def rng(seed: int, name: str) -> random.Random:
    """Return a private random generator for component ``name``."""
    return random.Random(sub_seed(seed, name))
