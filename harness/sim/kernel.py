"""What the simulator takes from simpy, in one place: its environment, a run to a case's deadline and on while
anything is under way, and a wait for the first of two events, each cheaper than simpy's own for what a case asks
of it.

Each reads simpy 4's internals (the queue, the event counter, the clock; pyproject.toml keeps simpy below 5), and
``tests/test_sim.py`` holds each to what simpy's own does, step for step. The one other reader of an internal is
the history, which reads the clock (``_now``) at every record (``harness/sim/history.py``; ``tests/test_sim.py``
holds that read equal to ``now``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import simpy
from simpy.events import PENDING, URGENT, AllOf, Event, Process, ProcessGenerator, Timeout

__all__ = ["Kernel", "first_of", "run_until", "settle"]


class Kernel(simpy.Environment):
    """simpy's ``Environment`` with its event constructors as plain methods. simpy binds each of them to every new
    environment (``BoundClass.bind_early``, about 3 us, once a case); it binds those its own class declares, and
    this class declares none, so there is nothing to bind, and a call costs what the bound one did."""

    def process(self, generator: ProcessGenerator) -> Process:
        return Process(self, generator)

    # simpy's typing stub gives ``delay`` a default its runtime ``Timeout`` does not have: this is the runtime's.
    def timeout(self, delay: float, value: Any | None = None) -> Timeout:  # type: ignore[override]
        return Timeout(self, delay, value)

    def event(self) -> Event:
        return Event(self)

    def all_of(self, events: Iterable[Event]) -> AllOf:
        return AllOf(self, events)


def run_until(env: simpy.Environment, at_s: float) -> None:
    """``env.run(until=at_s)``, event for event, without its stop event: simpy schedules one at ``at_s`` (as
    ``now + (at_s - now)``, which in floating point is not always ``at_s``) before every other event of that
    instant already scheduled (``URGENT``, the next event id), stops by raising an exception from its callback,
    and puts the stop event back in the queue (its callbacks done: stepping it does nothing). Every event that
    would come before it is stepped here, in the same order, and the clock is left where simpy leaves it; the two
    event ids simpy draws are drawn too, so every later event's id is the same. A case steps its stop event no
    more (twice: to stop, then again as the case settles), and raises no exception."""
    at = at_s if isinstance(at_s, int) else float(at_s)
    if at <= env._now:
        raise ValueError(f"until ({at}) must be greater than the current simulation time")
    stop_s = env._now + (at - env._now)
    stop = (stop_s, URGENT, next(env._eid))
    queue, step = env._queue, env.step
    while queue and queue[0] < stop:
        step()
    env._now = stop_s
    next(env._eid)


def settle(env: simpy.Environment, horizon_s: float, busy: Callable[[], bool]) -> None:
    """Step on while ``busy()`` says something is still under way, and never past ``horizon_s``. A run ends at the
    end of an instant: what is due at the instant the last thing settles (an operator event set off by a worker's
    last record, say) is stepped too, whatever ``busy()`` says."""
    queue, step = env._queue, env.step
    while queue and (due := queue[0][0]) <= horizon_s and (due == env._now or busy()):
        step()


def first_of(env: simpy.Environment, a: Event, b: Event) -> Event:
    """An event that succeeds when the first of ``a`` and ``b`` is processed: what ``a | b`` (simpy's ``AnyOf``)
    does for a process waiting on it, step for step, for events that never fail (a reply, a timeout, a job's end).

    ``AnyOf`` succeeds from a callback of the first event processed, as this does, and is itself stepped once, as
    this is; it also builds a ``ConditionValue`` of the events processed by then and takes its callback off the
    other event, which a caller that asks each event whether it came does not need: about 1.3 us a wait (timeit, a
    process waiting on a reply that comes before its timeout: 7.4 us with ``AnyOf``, 6.0 with this), two waits in
    most cases. The other event keeps its callback, which does nothing once this has succeeded (a connector job
    that never ends keeps one per follow that timed out; a case ends, and lets go of them all)."""
    woken = Event(env)

    def wake(_: Event) -> None:
        if woken._value is PENDING:
            woken.succeed()

    for event in (a, b):
        if event.callbacks is None:  # processed already: the wait is over at once, as AnyOf's would be
            wake(event)
        else:
            event.callbacks.append(wake)
    return woken
