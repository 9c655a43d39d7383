"""Scripted operator events: a person changes the task, asks to cancel, or an approval runs out.

Each fires at a virtual time or after the nth history entry of a kind (for example the worker's first
timeout), so it happens at the same point of the protocol for every policy. The kinds a trigger may name are
the history's own vocabulary (``harness.model.events.VOCABULARY``).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from harness.model import Actor, Frozen
from harness.model.events import AT_END, VOCABULARY
from harness.scenario.specs import Count, Flag, SafeName, Seconds, Text

__all__ = ["ChangeTask", "EventRef", "ExpireApproval", "OperatorEvent", "RequestCancel", "Trigger"]


class EventRef(Frozen):
    """The ``nth`` history entry recorded by ``actor`` with event name ``event``."""

    actor: Actor
    event: str
    nth: Count = 1

    @model_validator(mode="after")
    def _known_event(self) -> EventRef:
        if (self.actor, self.event) in AT_END:
            raise ValueError(
                f"the {self.actor}'s '{self.event}' is recorded as the case ends, after any operator event could "
                "act; fix: trigger on a record made while the case runs"
            )
        if self.event not in VOCABULARY[self.actor]:
            known = ", ".join(sorted(VOCABULARY[self.actor]))
            raise ValueError(f"the {self.actor} records no event '{self.event}'; fix: use one of {known}")
        return self


class Trigger(Frozen):
    """When a scripted operator event happens: at a virtual time, or after an occurrence in the history."""

    at_s: Seconds | None = None
    after: EventRef | None = None
    delay_s: Seconds = 0.0

    @model_validator(mode="after")
    def _exactly_one(self) -> Trigger:
        if (self.at_s is None) == (self.after is None):
            raise ValueError("both or neither of 'at_s' and 'after' given; fix: give exactly one of them")
        return self


class _OperatorBase(Frozen):
    when: Trigger


class ChangeTask(_OperatorBase):
    """The task advances to a new revision requesting another model; approved only if ``approved``.

    With ``action_id``, the new revision's own action is recorded and dispatched by a worker of its own,
    on the same target: the controller holds it while an older action there is unaccounted for.
    """

    do: Literal["change_task"]
    model: Text
    digest: Text
    approved: Flag = False
    action_id: SafeName | None = None

    @model_validator(mode="after")
    def _dispatched_only_if_approved(self) -> ChangeTask:
        if self.action_id is not None and not self.approved:
            raise ValueError(
                f"action '{self.action_id}' would need an approval to be dispatched; fix: set approved: true"
            )
        return self


class RequestCancel(_OperatorBase):
    """A person asks to cancel the task's outstanding work."""

    do: Literal["request_cancel"]
    reason: Text = "cancel requested by the task owner"


class ExpireApproval(_OperatorBase):
    """The current revision's approval is revoked or runs out."""

    do: Literal["expire_approval"]


OperatorEvent = Annotated[ChangeTask | RequestCancel | ExpireApproval, Field(discriminator="do")]
