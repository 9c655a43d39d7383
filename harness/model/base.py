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

#: ``unresolved`` means the case cannot be judged correct: an action stayed unaccounted for, or the evidence
#: needed to judge it is missing (see ``unknown``). ``harness_error`` means the harness itself failed.
Outcome = Literal["correct", "incorrect", "unresolved", "harness_error"]
OUTCOMES: tuple[Outcome, ...] = ("correct", "incorrect", "unresolved", "harness_error")


class Frozen(BaseModel):
    """Base for every validated record: immutable, and unknown fields are an error rather than silently kept."""

    model_config = ConfigDict(frozen=True, extra="forbid")
