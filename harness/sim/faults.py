"""The fault injector: the one component that reads the scenario's faults.

Each actor asks the injector at its protocol boundary, with the boundary's class ("is the 1st response to a73
lost?"); the injector answers from the scenario data and records every injection in the shared history, so
faults are visible next to the operations they disturb. Occurrences are counted by the asking actor, never
by elapsed time.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar, cast

from harness.model.events import FaultInjected
from harness.scenario import FaultBase
from harness.sim.history import History

__all__ = ["Injector", "Question", "applies"]

F = TypeVar("F", bound=FaultBase)

#: A question asked of the injector: a boundary, an action, the occurrence, and which of the boundary's points
#: as (the fault's field that names it, its value) (``None``: the boundary has one point).
Question = tuple[type[FaultBase], str, int, tuple[str, Any] | None]


def applies(fault: FaultBase, default_action_id: str, question: Question) -> bool:
    """Whether ``fault`` applies to ``question`` (a fault without an action is the scenario's first action's)."""
    boundary, action_id, occurrence, point = question
    return (
        isinstance(fault, boundary)
        and (point is None or getattr(fault, point[0]) == point[1])
        and (fault.action_id or default_action_id) == action_id
        and fault.hits(occurrence)
    )


class Injector:
    def __init__(self, faults: Sequence[FaultBase], default_action_id: str, history: History) -> None:
        self._faults = tuple(faults)
        self.default_action_id = default_action_id
        self._history = history
        #: Per declared fault (in the scenario's order): how often its site was reached, and how often it fired.
        self.reached = [0] * len(self._faults)
        self.fired = [0] * len(self._faults)
        #: Every question asked, in order.
        self.asked: list[Question] = []
        #: The places in ``_faults`` of the faults of each class, filed under every class a fault is an instance
        #: of (so that a lookup answers as ``isinstance`` does): most questions are about a boundary no fault is
        #: at, and then cost one lookup instead of a test of every fault.
        self._sites: dict[type, list[int]] = {}
        for i, fault in enumerate(self._faults):
            for cls in type(fault).__mro__:
                self._sites.setdefault(cls, []).append(i)

    def hit(self, boundary: type[F], action_id: str, occurrence: int, point: tuple[str, Any] | None = None) -> F | None:
        """Return the fault of class ``boundary`` that applies to this occurrence for ``action_id`` (and that
        is at ``point``, for a boundary with several: ``("phase", "after_started")``), recording it."""
        question: Question = (boundary, action_id, occurrence, point)
        self.asked.append(question)
        sites = self._sites.get(boundary)
        if sites is None:
            return None
        chosen: F | None = None
        for i in sites:
            fault = self._faults[i]
            if not applies(fault, self.default_action_id, question):
                continue
            self.reached[i] += 1
            if chosen is None:
                chosen = cast(F, fault)  # it is a ``boundary``: ``applies`` said so
                self.fired[i] += 1
        if chosen is not None:
            self._history.record(FaultInjected(boundary=chosen.boundary, action_id=action_id, occurrence=occurrence))
        return chosen
