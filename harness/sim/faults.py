"""The fault injector: the one component that reads the scenario's faults.

Each actor asks the injector at its protocol boundary ("is the 1st response to a73 lost?"); the injector
answers from the scenario data and records every injection in the shared history, so faults are visible
next to the operations they disturb. Occurrences are counted by the asking actor, never by elapsed time.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.scenario import Fault
from harness.sim.history import History

__all__ = ["Injector"]


class Injector:
    def __init__(self, faults: Sequence[Fault], default_action_id: str, history: History) -> None:
        self._faults = tuple(faults)
        self._default_action_id = default_action_id
        self._history = history

    def hit(self, boundary: str, action_id: str, occurrence: int) -> Fault | None:
        """Return the fault that applies to this occurrence of ``boundary`` for ``action_id``, recording it."""
        for fault in self._faults:
            if fault.boundary != boundary:
                continue
            if (fault.action_id or self._default_action_id) != action_id or not fault.hits(occurrence):
                continue
            self._history.record("injector", "fault", boundary=boundary, action_id=action_id, occurrence=occurrence)
            return fault
        return None
