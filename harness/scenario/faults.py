"""Faults at named protocol boundaries: one class per boundary, as scenario data.

Each class says which side of the wire its boundary is on (``side``) and what counts as one occurrence of it
(``counted``: the action's nth dispatch, or its nth lookup). The actor that reaches a boundary asks the
injector with the class ("is the 1st response to a73 lost?"), so a boundary is declared here once and
reached in one place. Adding one: a class here, a member of ``Fault``, and the ``injector.hit`` call in the
actor that reaches it.
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal, Self, get_args

from pydantic import Field, model_validator

from harness.model import Frozen
from harness.scenario.specs import Count, Flag, PositiveSeconds, SafeName, Text

__all__ = [
    "BOUNDARIES",
    "CONNECTOR_PHASES",
    "FAULT_TYPES",
    "AcceptedNotApplied",
    "ApplyDelayed",
    "BridgeConnectionError",
    "BridgeRestart",
    "ConnectorCrash",
    "CrashAwaitingReply",
    "CrashBeforeSend",
    "DestinationRestart",
    "Fault",
    "FaultBase",
    "LookupForeignReceipt",
    "LookupUnavailable",
    "ReadAnswerDelayed",
    "RequestDelayed",
    "RequestLost",
    "ResponseDelayed",
    "ResponseLost",
    "Side",
    "StartedNotDurable",
]


#: Where a boundary is: in the caller (a crash), on the wire between caller and destination, or inside the
#: destination. When the destination's ledger is withheld, only caller-side faults stay in the evidence:
#: the timing of the others alone would tell when the destination acted.
Side = Literal["caller", "wire", "destination"]


class FaultBase(Frozen):
    """A fault at a named protocol boundary, triggered by occurrence, never by elapsed time.

    ``nth`` is the first occurrence of the boundary (counted per action, from 1) that the fault hits;
    ``count`` is how many consecutive occurrences it hits (``null``: every later one too).
    """

    side: ClassVar[Side]
    counted: ClassVar[Literal["dispatch", "lookup"]]
    #: What must stand in the path for the boundary to exist (a connector or a bridge), if anything.
    needs: ClassVar[Literal["connector", "bridge"] | None] = None

    #: The boundary's name: each subclass fixes it to one literal, the tag of ``Fault``.
    boundary: str
    action_id: SafeName | None = None
    nth: Count = 1
    count: Count | None = 1

    def hits(self, occurrence: int) -> bool:
        """Whether this fault applies to the given 1-based occurrence of its boundary."""
        if occurrence < self.nth:
            return False
        return self.count is None or occurrence < self.nth + self.count


class RequestLost(FaultBase):
    """The dispatch is lost in the transport before it reaches the destination."""

    side: ClassVar[Side] = "wire"
    counted: ClassVar[Literal["dispatch", "lookup"]] = "dispatch"
    boundary: Literal["request_lost"] = "request_lost"


class RequestDelayed(FaultBase):
    """The dispatch reaches the destination ``delay_s`` later than usual (a late original request)."""

    side: ClassVar[Side] = "wire"
    counted: ClassVar[Literal["dispatch", "lookup"]] = "dispatch"
    boundary: Literal["request_delayed"] = "request_delayed"
    delay_s: PositiveSeconds


class AcceptedNotApplied(FaultBase):
    """The destination accepts the dispatch, then stops before applying it: the operation stays pending."""

    side: ClassVar[Side] = "destination"
    counted: ClassVar[Literal["dispatch", "lookup"]] = "dispatch"
    boundary: Literal["accepted_not_applied"] = "accepted_not_applied"


class ApplyDelayed(FaultBase):
    """The destination accepts the dispatch and applies it ``delay_s`` later instead of at once: the operation is
    pending meanwhile, and may apply after the caller timed out, after a lookup, or after the window."""

    side: ClassVar[Side] = "destination"
    counted: ClassVar[Literal["dispatch", "lookup"]] = "dispatch"
    boundary: Literal["apply_delayed"] = "apply_delayed"
    delay_s: PositiveSeconds


class DestinationRestart(FaultBase):
    """The destination's process restarts right after it handled the dispatch: keys it kept only in memory are
    forgotten; its ledger of receipts stays."""

    side: ClassVar[Side] = "destination"
    counted: ClassVar[Literal["dispatch", "lookup"]] = "dispatch"
    boundary: Literal["destination_restart"] = "destination_restart"


#: The phase boundaries of the connector's two-phase ledger, in order.
CONNECTOR_PHASES = ("before_started", "after_started", "after_effect", "after_completed")


class ConnectorCrash(FaultBase):
    """The device connector crashes at one boundary of its two-phase ledger: ``before_started``, ``after_started``
    (before the effect), ``after_effect`` (before ``completed``) or ``after_completed`` (before the report reaches
    the service). ``every``: the grid holds one case per boundary, each named by it."""

    needs: ClassVar[Literal["connector", "bridge"] | None] = "connector"
    side: ClassVar[Side] = "destination"
    counted: ClassVar[Literal["dispatch", "lookup"]] = "dispatch"
    boundary: Literal["connector_crash"] = "connector_crash"
    phase: Literal["before_started", "after_started", "after_effect", "after_completed", "every"]


class StartedNotDurable(FaultBase):
    """The connector's ``started`` record is written but not yet durable (no fsync): a crash before ``completed``
    loses it, and the connector forgets it ever started the job."""

    needs: ClassVar[Literal["connector", "bridge"] | None] = "connector"
    side: ClassVar[Side] = "destination"
    counted: ClassVar[Literal["dispatch", "lookup"]] = "dispatch"
    boundary: Literal["started_not_durable"] = "started_not_durable"


class BridgeConnectionError(FaultBase):
    """The connection through the bridge breaks and the caller gets an error marked "do not replay": before the
    call is forwarded (``forwarded: false``), or after (the tool ran; only the reply is lost). With
    ``lands_after_s``, the error comes back while the forwarded call is still on its way: it reaches the tool
    server that many seconds later (the error says only that no reply came; the call may yet run)."""

    needs: ClassVar[Literal["connector", "bridge"] | None] = "bridge"
    side: ClassVar[Side] = "wire"
    counted: ClassVar[Literal["dispatch", "lookup"]] = "dispatch"
    boundary: Literal["bridge_connection_error"] = "bridge_connection_error"
    forwarded: Flag = True
    lands_after_s: PositiveSeconds | None = None

    @model_validator(mode="after")
    def _lands_only_forwarded(self) -> Self:
        if self.lands_after_s is not None and not self.forwarded:
            raise ValueError(
                "lands_after_s is when a forwarded call reaches the tool server: give forwarded: true with it, "
                "or leave it out"
            )
        return self


class BridgeRestart(FaultBase):
    """The bridge process restarts right after it handled the dispatch: its receipts per request UUID are gone."""

    needs: ClassVar[Literal["connector", "bridge"] | None] = "bridge"
    side: ClassVar[Side] = "wire"
    counted: ClassVar[Literal["dispatch", "lookup"]] = "dispatch"
    boundary: Literal["bridge_restart"] = "bridge_restart"


class ResponseLost(FaultBase):
    """The destination applied the dispatch and recorded its receipt; the response is lost on the way back."""

    side: ClassVar[Side] = "wire"
    counted: ClassVar[Literal["dispatch", "lookup"]] = "dispatch"
    boundary: Literal["response_lost"] = "response_lost"


class ResponseDelayed(FaultBase):
    """The response arrives ``delay_s`` later than usual, typically after the caller timed out."""

    side: ClassVar[Side] = "wire"
    counted: ClassVar[Literal["dispatch", "lookup"]] = "dispatch"
    boundary: Literal["response_delayed"] = "response_delayed"
    delay_s: PositiveSeconds


class CrashBeforeSend(FaultBase):
    """The worker crashes after recording the action and its attempt, before the dispatch is sent."""

    side: ClassVar[Side] = "caller"
    counted: ClassVar[Literal["dispatch", "lookup"]] = "dispatch"
    boundary: Literal["crash_before_send"] = "crash_before_send"


class CrashAwaitingReply(FaultBase):
    """The worker crashes right after sending the dispatch, while awaiting its reply."""

    side: ClassVar[Side] = "caller"
    counted: ClassVar[Literal["dispatch", "lookup"]] = "dispatch"
    boundary: Literal["crash_awaiting_reply"] = "crash_awaiting_reply"


class LookupUnavailable(FaultBase):
    """The destination's lookup answers without a result (``unknown``): not evidence of absence."""

    side: ClassVar[Side] = "destination"
    counted: ClassVar[Literal["dispatch", "lookup"]] = "lookup"
    boundary: Literal["lookup_unavailable"] = "lookup_unavailable"


class LookupForeignReceipt(FaultBase):
    """The lookup answers ``status`` (``applied``, unless told ``rejected``) with a receipt for other arguments
    (another deployment of the target, or its refusal), as a misrouted or buggy lookup would: only a caller that
    verifies the receipt against its request notices. With ``idempotency_key``, the receipt names that key instead
    of the one looked up: another client's operation, which may carry the very same arguments."""

    side: ClassVar[Side] = "destination"
    counted: ClassVar[Literal["dispatch", "lookup"]] = "lookup"
    boundary: Literal["lookup_foreign_receipt"] = "lookup_foreign_receipt"
    model: Text = "m-other"
    digest: Text = "sha256:other"
    idempotency_key: Text | None = None
    status: Literal["applied", "rejected"] = "applied"


class ReadAnswerDelayed(FaultBase):
    """A read's answer (a lookup, a job follow or a verification) is ``delay_s`` slow on its way back: it tells of
    the target as it was when it answered, and reaches the caller that much later (or not at all, once the caller
    has stopped waiting for it)."""

    side: ClassVar[Side] = "wire"
    counted: ClassVar[Literal["dispatch", "lookup"]] = "lookup"
    boundary: Literal["read_answer_delayed"] = "read_answer_delayed"
    delay_s: PositiveSeconds


Fault = Annotated[
    RequestLost
    | RequestDelayed
    | AcceptedNotApplied
    | ApplyDelayed
    | DestinationRestart
    | ResponseLost
    | ResponseDelayed
    | CrashBeforeSend
    | CrashAwaitingReply
    | LookupUnavailable
    | LookupForeignReceipt
    | ReadAnswerDelayed
    | ConnectorCrash
    | StartedNotDurable
    | BridgeConnectionError
    | BridgeRestart,
    Field(discriminator="boundary"),
]
#: Every fault class, derived from ``Fault``.
FAULT_TYPES: tuple[type[FaultBase], ...] = get_args(get_args(Fault)[0])
#: Every boundary by name.
BOUNDARIES: dict[str, type[FaultBase]] = {cls.model_fields["boundary"].default: cls for cls in FAULT_TYPES}
