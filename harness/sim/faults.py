"""The fault injector: the one component that reads the scenario's faults.

Each actor asks the injector at its protocol boundary, with the boundary's class ("is the 1st response to a73
lost?"); the injector answers from the scenario data and records every injection in the shared history, so
faults are visible next to the operations they disturb. Occurrences are counted by the asking actor, never
by elapsed time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from harness.model.events import FaultInjected
from harness.scenario import FaultBase
from harness.sim.history import History

__all__ = ["Injector"]

F = TypeVar("F", bound=FaultBase)


class Injector:
    def __init__(self, faults: Sequence[FaultBase], default_action_id: str, history: History) -> None:
        self._faults = tuple(faults)
        self._default_action_id = default_action_id
        self._history = history
        #: Per declared fault (in the scenario's order): how often its site was reached, and how often it fired.
        self.reached = [0] * len(self._faults)
        self.fired = [0] * len(self._faults)

    def hit(
        self, boundary: type[F], action_id: str, occurrence: int, where: Callable[[F], bool] | None = None
    ) -> F | None:
        """Return the fault of class ``boundary`` that applies to this occurrence for ``action_id`` (and that
        ``where`` accepts, for a boundary with several points), recording it."""
        chosen = None
        for i, fault in enumerate(self._faults):
            if not isinstance(fault, boundary) or (where is not None and not where(fault)):
                continue
            if (fault.action_id or self._default_action_id) != action_id or not fault.hits(occurrence):
                continue
            self.reached[i] += 1
            if chosen is None:
                chosen = fault
                self.fired[i] += 1
        if chosen is not None:
            self._history.record(FaultInjected(boundary=chosen.boundary, action_id=action_id, occurrence=occurrence))
        return chosen
