"""Waiting for the first of two events: a reply or its timeout."""

from __future__ import annotations

import simpy
from simpy.events import PENDING

__all__ = ["first_of"]


def first_of(env: simpy.Environment, a: simpy.Event, b: simpy.Event) -> simpy.Event:
    """An event that succeeds when the first of ``a`` and ``b`` is processed: what ``a | b`` (simpy's ``AnyOf``)
    does for a process waiting on it, step for step, for events that never fail (a reply, a timeout, a job's end).

    ``AnyOf`` succeeds from a callback of the first event processed, as this does, and is itself stepped once, as
    this is; it also builds a ``ConditionValue`` of the events processed by then and takes its callback off the
    other event, which a caller that asks each event whether it came does not need: about 4 us a wait, two waits in
    most cases. The other event keeps its callback, which does nothing once this has succeeded."""
    woken = simpy.Event(env)

    def wake(_: simpy.Event) -> None:
        if woken._value is PENDING:
            woken.succeed()

    for event in (a, b):
        if event.callbacks is None:  # processed already: the wait is over at once, as AnyOf's would be
            wake(event)
        else:
            event.callbacks.append(wake)
    return woken
