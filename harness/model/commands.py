"""The closed set of commands a policy may give. The simulator carries each one out, matched exhaustively.

Commands are data: a policy returns one, the worker records it in the history and carries it out. Adding a
command means adding its class here and to ``Command``; the worker's ``match`` then fails type checking
until it handles the new one.
"""

from __future__ import annotations

from typing import Annotated, Literal, Self, get_args

from pydantic import Field, TypeAdapter, model_validator

from harness.limits import cut
from harness.model.base import Frozen

__all__ = [
    "COMMAND_TYPES",
    "DISPATCHING",
    "Command",
    "Escalate",
    "FollowJob",
    "Hold",
    "LookUp",
    "RecordAbsent",
    "RecordEffect",
    "RecordRejection",
    "ResendCurrentArguments",
    "RetryNewKey",
    "RetrySameAction",
    "Stop",
    "VerifyOutcome",
    "Wait",
    "validated",
]


class LookUp(Frozen):
    """Ask the destination for the durable result of the action's current operation (its key)."""

    kind: Literal["look_up"] = "look_up"


class FollowJob(Frozen):
    """Read the status of the action's current job at the device connector (``task wait JOB_ID``): a read, never a
    new run.

    The connector answers from its ledger: completed (with the recorded receipt), running, ``unknown_outcome``
    (started, never completed: only inspecting the target can tell), or absent (no record of the key).
    """

    kind: Literal["follow_job"] = "follow_job"


class VerifyOutcome(Frozen):
    """Read the run's current state through the bridge and compare it with the original expectation.

    It never sends the input again: a confirmed result allows progress, another timeout keeps the block.
    """

    kind: Literal["verify_outcome"] = "verify_outcome"


#: The latest moment a dispatch's claim may be made (a lease on the decision); ``None``: no such bound.
SendBy = Annotated[float, Field(allow_inf_nan=False)] | None


def _lease_checked(claim: bool, send_by_s: float | None) -> None:
    """A lease bounds a claim: a dispatch without one has nothing to lease."""
    if send_by_s is not None and not claim:
        raise ValueError("send_by_s leases a claim: give claim=True with it, or leave it out")


class RetrySameAction(Frozen):
    """Send the action again under its current operation's key (the original key, unless a retry under a new key
    started another operation) with its original arguments.

    With ``claim``, the controller first atomically rechecks the task revision, approval and cancellation and
    claims the attempt; a refused claim means nothing is sent.
    """

    kind: Literal["retry_same_action"] = "retry_same_action"
    claim: bool = True
    #: With ``claim``: the latest moment the claim may be made, a lease on the decision. A retry is safe only if
    #: it leaves by then (a key's window that it relies on ends, counting request validity after it leaves, or
    #: its reply no longer comes back before the deadline), and the worker may send it later than it was decided
    #: (``worker.retry_send_s``): a claim made after it is refused, and nothing is sent. ``None``: no such bound
    #: (and the field is left out of the evidence).
    send_by_s: SendBy = None

    @model_validator(mode="after")
    def _leased_claims_only(self) -> Self:
        _lease_checked(self.claim, self.send_by_s)
        return self


class RetryNewKey(Frozen):
    """Send the action again under a fresh idempotency key: a new operation to the destination."""

    kind: Literal["retry_new_key"] = "retry_new_key"
    claim: bool = False
    #: With ``claim``: the latest moment the claim may be made, as for ``RetrySameAction`` (a new operation decided
    #: in time is sent late too).
    send_by_s: SendBy = None

    @model_validator(mode="after")
    def _leased_claims_only(self) -> Self:
        _lease_checked(self.claim, self.send_by_s)
        return self


class ResendCurrentArguments(Frozen):
    """Send the action again under its original idempotency key, but with the arguments the task asks for now.

    The bug users actually write after a task changes (seed 000: "changing the request while keeping the key
    is a conflict"): the destination may reject it as a conflict, or silently replay the first result.
    ``claim`` and ``send_by_s`` work as for ``RetrySameAction``.
    """

    kind: Literal["resend_current_arguments"] = "resend_current_arguments"
    claim: bool = True
    send_by_s: SendBy = None

    @model_validator(mode="after")
    def _leased_claims_only(self) -> Self:
        _lease_checked(self.claim, self.send_by_s)
        return self


class RecordEffect(Frozen):
    """Record an observed ``applied`` receipt in the action ledger, then let the controller update the task.

    ``guarded`` uses the controller's conditional updates (the action's revision, the task's revision);
    unguarded writes append unconditionally, which a correct policy never asks for.
    """

    kind: Literal["record_effect"] = "record_effect"
    receipt_id: str
    guarded: bool = True


class RecordRejection(Frozen):
    """Record an observed ``rejected`` receipt in the action ledger."""

    kind: Literal["record_rejection"] = "record_rejection"
    receipt_id: str
    guarded: bool = True


class Hold(Frozen):
    """Hold further dispatch of the action: the controller refuses every later claim of it.

    Holding records nothing about the outcome: the action stays unaccounted for until a receipt or a
    conclusive absence is recorded, or it is escalated.
    """

    kind: Literal["hold"] = "hold"
    reason: str = "dispatch no longer authorized"


class RecordAbsent(Frozen):
    """Record in the action ledger that the action did not and will not take effect.

    Only a conclusive ``absent`` lookup, made when no request for the action can still arrive (each one
    refused as too old, or fenced), supports this; the checker compares it with the destination's ledger.
    """

    kind: Literal["record_absent"] = "record_absent"
    reason: str = "absent at the destination, and no request can still arrive"


class Wait(Frozen):
    """Do nothing for ``duration_s`` of virtual time (bounded by the scenario's ``wait_max_s``)."""

    kind: Literal["wait"] = "wait"
    duration_s: Annotated[float, Field(gt=0)]


class Escalate(Frozen):
    """Hand the unresolved action to its owner, with the reason."""

    kind: Literal["escalate"] = "escalate"
    reason: str


class Stop(Frozen):
    """End this worker's recovery."""

    kind: Literal["stop"] = "stop"
    reason: str = "policy stopped"


Command = Annotated[
    LookUp
    | FollowJob
    | VerifyOutcome
    | RetrySameAction
    | RetryNewKey
    | ResendCurrentArguments
    | RecordEffect
    | RecordRejection
    | Hold
    | RecordAbsent
    | Wait
    | Escalate
    | Stop,
    Field(discriminator="kind"),
]
#: Every command class, derived from ``Command``.
COMMAND_TYPES: tuple[type[Frozen], ...] = get_args(get_args(Command)[0])

_COMMAND: TypeAdapter[Command] = TypeAdapter(Command)

#: The kinds of the commands that send the action again: each is decided, then sent (``worker.retry_send_s``
#: later, its claim made then).
DISPATCHING = frozenset(
    str(c.model_fields["kind"].default) for c in (RetrySameAction, RetryNewKey, ResendCurrentArguments)
)


def validated(command: object) -> Command:
    """``command`` checked again as a member of the closed set, with its values revalidated.

    A policy may return anything, or a command built with ``model_construct`` that skipped validation; this
    raises ``TypeError`` or ``ValueError`` for both, so the worker can record it as the policy's error.
    """
    cls = type(command)
    if cls in _EXACT:
        # One of the closed set itself (the usual case, once per decision): its fields are scalars, so its own
        # validator checks them, with texts cut, without a dump and a search of the union. Asked first: the
        # ``isinstance`` below goes through the models' ABC metaclass for every class of the set before the
        # command's own (about 1 us for a ``Stop``, the last).
        fields = {k: cut(v) if isinstance(v, str) else v for k, v in command.__dict__.items()}
        return cls.__pydantic_validator__.validate_python(fields)  # type: ignore[no-any-return]
    if isinstance(command, type):  # ``return LookUp``, the parentheses forgotten: its metaclass says nothing
        if issubclass(command, COMMAND_TYPES):
            raise TypeError(
                f"decide() returned the class {command.__name__}, not a command; call it: {command.__name__}(...)"
            )
        raise TypeError(f"decide() returned the class {command.__name__}, not a Command")
    if command is None:  # the usual cause: a branch that builds its command and forgets to return it
        raise TypeError("decide() returned NoneType, not a Command (a missing return?)")
    if not isinstance(command, COMMAND_TYPES):
        raise TypeError(f"decide() returned {type(command).__name__}, not a Command")
    return _COMMAND.validate_python(_capped(command.model_dump()))


_EXACT = frozenset(COMMAND_TYPES)


def _capped(value: object) -> object:
    """A command's fields with every text a policy wrote cut to ``STRING_MAX`` characters, the cut marked.

    Every field of a command is a scalar: a list or a model in a subclass's dump is refused by validation as it
    is (a field no command has, or a value of the wrong type), so only texts and the one level of fields are cut.
    """
    if isinstance(value, str):
        return cut(value)
    if isinstance(value, dict):
        return {k: _capped(v) for k, v in value.items()}
    return value
