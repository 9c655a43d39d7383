"""The one history every actor records into, in the order things happen in virtual time."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import simpy

from harness.model.events import Event

__all__ = ["History"]


class History:
    """Append-only list of records; listeners (the operator script) see each record of the types they listen to
    as it is appended."""

    def __init__(self, env: simpy.Environment) -> None:
        self._env = env
        self.entries: list[Event] = []
        #: The listeners of each record type, in the order they began to listen.
        self._listeners: dict[type[Event], list[Callable[[Event], None]]] = {}
        #: The virtual time last rounded, and its rounding: many records and reads share an instant, and each
        #: rounding to six places costs about 0.22 us.
        self._now = -1.0
        self._now_s = -1.0

    def listen(self, listener: Callable[[Event], None], types: Iterable[type[Event]]) -> None:
        """Call ``listener`` with each record of one of ``types`` as it is appended (and with no other: most
        records are of a type nobody waits for, and cost no call)."""
        for t in types:
            self._listeners.setdefault(t, []).append(listener)

    def stop_listening(self) -> None:
        """The case is over: no record is appended any more, and a listener (the operator's script) holds the
        actors that hold this history; let go of them, so the case is freed at once, not by the garbage collector
        (a case with operator events left 130 to 260 objects to it)."""
        self._listeners.clear()

    def now_s(self) -> float:
        """Virtual time at the history's resolution (the microsecond), so live judgements and the history agree."""
        now = self._env._now  # simpy's ``now``, read as its property reads it (see ``_now`` below)
        if now != self._now:
            self._now, self._now_s = now, round(now, 6)
        return self._now_s

    def record(self, event: Event) -> None:
        """Append ``event``, stamping it with its index and the current virtual time.

        Records are built by the actor and stamped here, once, before anyone else can see them; this is the
        only place a record's ``index`` and ``at_s`` are ever set.
        """
        _set_index(event, len(self.entries))
        now = self._env._now  # ``now_s``, written out: every record asks, mostly at an instant already rounded
        if now != self._now:
            self._now, self._now_s = now, round(now, 6)
        _set_at_s(event, self._now_s)
        self.entries.append(event)
        listeners = self._listeners.get(type(event))
        if listeners is not None:
            for listener in listeners:
                listener(event)


# simpy's ``Environment.now`` is a property that returns ``_now`` (simpy 4; pyproject.toml keeps it below 5, and
# tests/test_sim.py holds the two equal). The history reads the clock some thirty times a case, at every record
# and every ``now_s``: read directly, each is an attribute read instead of a call through the property.

# The slots of the frozen record, written directly (the record is not yet visible to anyone).
_set_index = Event.index.__set__  # type: ignore[misc, attr-defined]
_set_at_s = Event.at_s.__set__  # type: ignore[misc, attr-defined]
