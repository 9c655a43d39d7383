"""What crosses the transport: requests from the worker and replies from the destination."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from harness.model import Artifact, Receipt
from harness.policy import ResponseStatus

__all__ = ["Reply", "Request"]


@dataclass(frozen=True, slots=True)
class Request:
    """A dispatch (a side-effecting request, naming its ``artifact``) or a lookup of an action's durable result.

    ``action_id`` and ``n`` (the dispatch or lookup number) are the simulator's bookkeeping for the
    injector and the auditor; the destination's own records use only the key and the execution ID.
    """

    kind: Literal["dispatch", "lookup"]
    action_id: str
    n: int
    idempotency_key: str
    execution_id: str = ""
    artifact: Artifact | None = None
    #: When the caller sent it: a destination with a request-validity rule refuses it when it arrives too late.
    sent_at_s: float = 0.0
    #: The approval the request relies on, which a fencing destination checks on arrival.
    approval_id: str = ""
    #: Presented to the destination, never recorded anywhere.
    approval_token: str = field(default="", repr=False)


@dataclass(frozen=True, slots=True)
class Reply:
    """``status`` answers a dispatch; ``effect`` answers a lookup."""

    status: ResponseStatus | None = None
    effect: Literal["applied", "rejected", "pending", "absent", "unknown"] | None = None
    receipt: Receipt | None = None
