"""The vocabulary every stage shares: scalar types, verdicts, outcomes, and the frozen record base."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

__all__ = ["OUTCOMES", "Actor", "Frozen", "MetricValue", "Outcome", "Scalar", "Verdict"]

Scalar = str | int | float | bool | None
MetricValue = int | float | bool | None

#: Who recorded an entry. ``injector`` records faults in the same history as the operations they disturb.
Actor = Literal["worker", "transport", "destination", "controller", "operator", "injector"]

#: Jepsen-style verdicts: composing them, false beats unknown beats true.
Verdict = Literal["true", "false", "unknown"]

#: Best first. ``correct``: no violation, every action accounted for by the deadline. ``escalated``: no
#: violation, and each action left unaccounted for was handed to its owner in time. ``unresolved``: no
#: violation witnessed, but the evidence cannot decide one (see ``unknown``). ``abandoned``: an action was
#: neither accounted for nor escalated by the deadline. ``incorrect``: another safety violation is witnessed.
#: ``harness_error``: the harness itself failed.
Outcome = Literal["correct", "escalated", "unresolved", "abandoned", "incorrect", "harness_error"]
OUTCOMES: tuple[Outcome, ...] = ("correct", "escalated", "unresolved", "abandoned", "incorrect", "harness_error")


class Frozen(BaseModel):
    """Base for every validated record: immutable, and unknown fields are an error rather than silently kept."""

    model_config = ConfigDict(frozen=True, extra="forbid")
