"""What crosses the transport: requests from the worker and replies from the destination."""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.model import Artifact, Receipt, RequestKind
from harness.model.base import fast_frozen_init
from harness.policy import Effect, ResponseStatus, Verified

__all__ = ["Reply", "Request"]


@dataclass(frozen=True, slots=True)
class Request:
    """A dispatch (a side-effecting request, naming its ``artifact``) or a lookup of an action's durable result.

    ``action_id`` and ``n`` (the dispatch or lookup number) are the simulator's bookkeeping for the
    injector and the auditor; the destination's own records use only the key and the execution ID.
    """

    kind: RequestKind
    action_id: str
    n: int
    idempotency_key: str
    execution_id: str = ""
    #: What a dispatch asks for; for a verification, the original expectation.
    artifact: Artifact | None = None
    #: The execution budget a dispatch carries (part of its identity at a device connector).
    budget_s: float = 0.0
    #: When the caller sent it: a destination with a request-validity rule refuses it when it arrives too late.
    sent_at_s: float = 0.0
    #: The approval the request relies on, which a fencing destination checks on arrival.
    approval_id: str = ""
    #: Presented to the destination, never recorded anywhere.
    approval_token: str = field(default="", repr=False)


@dataclass(frozen=True, slots=True)
class Reply:
    """``status`` answers a dispatch; ``effect`` answers a read (``verified`` too, for a verification)."""

    status: ResponseStatus | None = None
    effect: Effect | None = None
    receipt: Receipt | None = None
    #: The connector's job for the request (a "running" reply names it).
    job_id: str | None = None
    #: A verification's comparison of the run with the original expectation.
    verified: Verified | None = None
    #: A connection error raised by an intermediary or the client: do not replay automatically.
    do_not_replay: bool = False


# A case sends and answers a message for every request: each gets a constructor that sets its slots directly.
fast_frozen_init(Request)
fast_frozen_init(Reply)
