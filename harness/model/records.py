"""Records the simulator and the policy interface share: the artifact a request names, actions, receipts."""

from __future__ import annotations

from typing import Literal

from harness.model.base import Frozen

__all__ = ["Action", "Artifact", "Receipt"]


class Artifact(Frozen):
    """What a side-effecting request does, and to what: the normalized arguments a destination compares.

    Two requests name the same artifact exactly when all four fields are equal; every comparison of
    "the same arguments" in the harness is an equality of ``Artifact`` values.
    """

    operation: str
    target: str
    model: str
    digest: str


class Action(Frozen):
    """The logical action as the controller recorded it before the first dispatch."""

    action_id: str
    task_id: str
    revision: int
    artifact: Artifact
    approval_id: str
    idempotency_key: str


class Receipt(Frozen):
    """A receipt as the destination reported it: what was done, to what, under which key."""

    receipt_id: str
    status: Literal["applied", "rejected"]
    idempotency_key: str
    artifact: Artifact
