"""The one history every actor records into, in the order things happen in virtual time."""

from __future__ import annotations

from collections.abc import Callable

import simpy

from harness.model import Actor, Entry, Scalar

__all__ = ["History"]


class History:
    """Append-only list of entries; listeners (the operator script) see each entry as it is recorded."""

    def __init__(self, env: simpy.Environment) -> None:
        self._env = env
        self.entries: list[Entry] = []
        self._listeners: list[Callable[[Entry], None]] = []

    def listen(self, listener: Callable[[Entry], None]) -> None:
        self._listeners.append(listener)

    def record(self, actor: Actor, event: str, **data: Scalar) -> Entry:
        """Append one entry stamped with the current virtual time (rounded to the microsecond)."""
        # Entries are built by our own code from typed values: skip re-validation in the inner loop.
        entry = Entry.model_construct(
            index=len(self.entries), at_s=round(self._env.now, 6), actor=actor, event=event, data=data
        )
        self.entries.append(entry)
        for listener in self._listeners:
            listener(entry)
        return entry
