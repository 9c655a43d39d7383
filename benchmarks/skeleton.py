"""The yardstick: one ``lost_response`` case as bare simpy, with none of the harness's logic.

It schedules what the harness's case schedules at the spine (a worker, a carrier for the lost dispatch and
one for the lookup; their timeouts, the two "reply or time out" conditions, the run's stop event: 19 events)
and appends the same 22 history entries as plain tuples. Its cases per second on one core is what
``bench.py`` divides every harness figure by, so the figures are ratios measured in one run, comparable
across machines and across the noise of a shared one.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Generator
from typing import Any

import simpy

__all__ = ["skeleton_case"]

Entry = tuple[float, str]


def skeleton_case(seed: int, history: list[Entry] | None = None) -> None:
    env = simpy.Environment()
    draw = random.Random(seed)
    note: Callable[[Entry], None] = history.append if history is not None else (lambda _: None)

    def latency() -> float:
        return 0.05 + draw.uniform(0.0, 0.02)

    def dispatch() -> Generator[simpy.Event, Any, None]:
        yield env.timeout(latency())  # the request on its way
        note((env.now, "received"))
        note((env.now, "accepted"))
        yield env.timeout(0.5)  # the destination applies it
        note((env.now, "applied"))
        note((env.now, "fault"))  # the response is lost: nothing comes back

    def lookup(answered: simpy.Event) -> Generator[simpy.Event, Any, None]:
        yield env.timeout(latency())
        yield env.timeout(0.2)  # the destination reads its ledger
        note((env.now, "lookup_answered"))
        yield env.timeout(latency())
        answered.succeed("applied")
        note((env.now, "receive"))

    def worker() -> Generator[simpy.Event, Any, None]:
        for name in ("task_revision", "approval_granted", "start", "action_recorded", "claim", "attempt", "send"):
            note((env.now, name))
        reply = env.event()
        env.process(dispatch())
        yield reply | env.timeout(5.0)
        note((env.now, "timeout"))
        yield env.timeout(10.0)  # the worker restarts
        for name in ("start", "command", "send"):
            note((env.now, name))
        answered = env.event()
        env.process(lookup(answered))
        yield answered | env.timeout(2.0)
        for name in ("command", "effect_recorded", "task_completed", "command", "report"):
            note((env.now, name))

    env.process(worker())
    env.run(until=180.0)
