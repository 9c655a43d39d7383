"""Scripted operator events: a person changes the task, asks to cancel, or an approval runs out.

Events fire at a virtual time or after the nth occurrence of a history entry (for example the worker's first
timeout), so they happen at the same point of the protocol for every policy; only before the recovery deadline.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from typing import Any, assert_never

import simpy

from harness.model.events import ApprovalExpiryFired, CancelRequestFired, ChangeTaskFired, Event, types_named
from harness.scenario import ChangeTask, ExpireApproval, OperatorEvent, RequestCancel
from harness.sim.controller import Controller
from harness.sim.history import History

__all__ = ["Operator"]


class Operator:
    def __init__(
        self,
        env: simpy.Environment,
        events: Sequence[OperatorEvent],
        history: History,
        controller: Controller,
        dispatch: Callable[[str], None],
        deadline_s: float,
    ) -> None:
        self._env = env
        #: The recovery deadline: an event whose moment comes then or later does not act (the case is over but
        #: for what is still in flight, and whether it runs on that long depends on the policy's traffic).
        self._deadline_s = deadline_s
        #: Starts a worker for a new revision's own action.
        self._dispatch = dispatch
        self._history = history
        self._controller = controller
        #: The events that wait for the nth occurrence of a history entry, in the scenario's order, each with
        #: its place among the declared events and how many of those entries it has seen.
        self._waiting: list[tuple[int, OperatorEvent, int]] = []
        #: Where in ``_waiting`` the events that wait for each (actor, event) sit, in order.
        self._by_ref: dict[tuple[str, str], list[int]] = {}
        #: Per declared event, in the scenario's order: whether its trigger came (its time, or the nth record it
        #: waits for), and whether it acted (the run may end in its delay): its coverage, as a fault's.
        self.reached = [0] * len(events)
        self.fired = [0] * len(events)
        #: The time of each event that fires at one (``None``: it waits for a record).
        self._at_s = [event.when.at_s for event in events]
        for i, event in enumerate(events):
            if event.when.at_s is not None:
                env.process(self._fire(i, event, event.when.at_s + event.when.delay_s))
            else:  # a trigger gives exactly one of at_s and after
                ref = event.when.after
                assert ref is not None
                self._by_ref.setdefault((ref.actor, ref.event), []).append(len(self._waiting))
                self._waiting.append((i, event, 0))
        if self._waiting:
            # Only the records some event waits for reach the operator.
            history.listen(self._on_entry, [t for ref in self._by_ref for t in types_named(*ref)])

    def _on_entry(self, entry: Event) -> None:
        for i in self._by_ref[entry.actor, entry.event]:
            declared, event, seen = self._waiting[i]
            ref = event.when.after
            assert ref is not None
            self._waiting[i] = (declared, event, seen + 1)
            if seen + 1 == ref.nth:  # once: the count only grows
                self.reached[declared] = 1
                self._env.process(self._fire(declared, event, event.when.delay_s))

    def coverage(self) -> tuple[tuple[int, int], ...]:
        """Per declared event, in the scenario's order: (its trigger came, it acted), each 0 or 1. An event at a
        time is reached when the run gets to that time, whether or not its delay ran out before the end."""
        now = self._env.now
        return tuple(
            (int(reached or (at_s is not None and now >= at_s)), fired)
            for reached, fired, at_s in zip(self.reached, self.fired, self._at_s, strict=True)
        )

    def _fire(self, declared: int, event: OperatorEvent, delay_s: float) -> Generator[simpy.Event, Any, None]:
        yield self._env.timeout(delay_s)
        if self._env.now >= self._deadline_s:
            return
        self.fired[declared] = 1
        match event:
            case ChangeTask():
                self._history.record(ChangeTaskFired())
                self._controller.change_task(event.model, event.digest, event.approved)
                if event.action_id is not None:
                    self._dispatch(event.action_id)
            case RequestCancel():
                self._history.record(CancelRequestFired())
                self._controller.request_cancel(event.reason)
            case ExpireApproval():
                self._history.record(ApprovalExpiryFired())
                self._controller.expire_approval()
            case _:
                assert_never(event)
