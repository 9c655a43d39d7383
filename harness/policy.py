"""The policy interface: what a recovering worker can know (``Situation``) and what it may do (``Command``).

A policy is a pure decision object. It never touches the clock, the network or the destination: it reads a
``Situation`` and returns one ``Command``; the simulator carries the command out, including commands a correct
policy would never give, so that the checker can catch them.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Annotated, Literal, Protocol, runtime_checkable

from pydantic import Field

from harness.model import Frozen

__all__ = [
    "ActionView",
    "ApprovalView",
    "AttemptView",
    "Command",
    "ContractView",
    "Escalate",
    "Hold",
    "LookUp",
    "LookupView",
    "Policy",
    "PolicyError",
    "ReceiptView",
    "RecordEffect",
    "RecordRejection",
    "RetryNewKey",
    "RetrySameAction",
    "Situation",
    "Stop",
    "TaskView",
    "Wait",
    "builtin_policy_names",
    "load_policy",
]

Effect = Literal["applied", "rejected", "pending", "absent", "unknown"]


class ReceiptView(Frozen):
    """A receipt as the destination reported it: what was done, to what, under which key."""

    receipt_id: str
    status: Literal["applied", "rejected"]
    idempotency_key: str
    operation: str
    target: str
    model: str
    digest: str


class ActionView(Frozen):
    """The logical action as the controller recorded it before the first dispatch."""

    action_id: str
    task_id: str
    revision: int
    operation: str
    target: str
    model: str
    digest: str
    approval_id: str
    idempotency_key: str


class AttemptView(Frozen):
    """One execution attempt of the action and what this worker observed of it.

    ``observation`` is ``unknown`` for attempts made by a worker incarnation that crashed: its
    replacement knows the attempt existed (the controller recorded it) but not what came back.
    """

    execution_id: str
    idempotency_key: str
    #: ``None`` when this worker cannot know (the attempt belonged to a crashed incarnation).
    sent: bool | None
    sent_at_s: float | None
    observation: Literal["response", "timeout", "claim_refused", "unknown", "in_flight"]
    late: bool = False
    response_status: Literal["applied", "rejected", "conflict", "pending"] | None = None
    receipt: ReceiptView | None = None


class LookupView(Frozen):
    """One lookup of the action's durable result at the destination.

    ``unknown`` covers an unavailable, inconclusive or unanswered lookup: it is not evidence of absence.
    """

    at_s: float
    effect: Effect
    receipt: ReceiptView | None = None


class TaskView(Frozen):
    """The task as the controller reports it now."""

    task_id: str
    revision: int
    model: str
    digest: str
    cancel_requested: bool
    completed_revision: int | None


class ApprovalView(Frozen):
    """Whether the approval the action relies on is valid now, as trusted state reports it."""

    approval_id: str
    valid: bool
    expires_at_s: float | None


class ContractView(Frozen):
    """The destination's documented deduplication contract."""

    dedupe_window_s: float
    on_conflict: Literal["reject", "replay"]


class Situation(Frozen):
    """Everything a recovering worker may base its next decision on."""

    now_s: float
    deadline_s: float
    action: ActionView
    attempts: tuple[AttemptView, ...]
    lookups: tuple[LookupView, ...]
    task: TaskView
    approval: ApprovalView
    contract: ContractView
    #: What the controller's action ledger holds for the action (``None``: nothing recorded yet).
    recorded: Literal["applied", "rejected", "absent"] | None
    escalated: bool

    @property
    def time_left_s(self) -> float:
        """Seconds until the recovery deadline (never negative)."""
        return max(0.0, self.deadline_s - self.now_s)

    @property
    def first_sent_at_s(self) -> float | None:
        """When the action was first sent, if ever."""
        times = [a.sent_at_s for a in self.attempts if a.sent_at_s is not None]
        return min(times) if times else None

    def observed_receipts(self) -> list[ReceiptView]:
        """Every receipt seen so far, from replies and lookups, oldest first, without repeats."""
        seen: dict[str, ReceiptView] = {}
        for attempt in self.attempts:
            if attempt.receipt is not None:
                seen.setdefault(attempt.receipt.receipt_id, attempt.receipt)
        for lookup in self.lookups:
            if lookup.receipt is not None:
                seen.setdefault(lookup.receipt.receipt_id, lookup.receipt)
        return list(seen.values())


class LookUp(Frozen):
    """Ask the destination for the action's durable result by its action ID."""

    kind: Literal["look_up"] = "look_up"


class RetrySameAction(Frozen):
    """Send the action again with its original idempotency key and arguments.

    With ``claim``, the controller first atomically rechecks the task revision, approval and cancellation and
    claims the attempt; a refused claim means nothing is sent.
    """

    kind: Literal["retry_same_action"] = "retry_same_action"
    claim: bool = True


class RetryNewKey(Frozen):
    """Send the action again under a fresh idempotency key: a new operation to the destination."""

    kind: Literal["retry_new_key"] = "retry_new_key"
    claim: bool = False


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
    """Record the action as not applied (a successful lookup found it absent) and hold further dispatch."""

    kind: Literal["hold"] = "hold"
    reason: str = "absent at the destination; dispatch no longer authorized"


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
    LookUp | RetrySameAction | RetryNewKey | RecordEffect | RecordRejection | Hold | Wait | Escalate | Stop,
    Field(discriminator="kind"),
]
COMMAND_TYPES = (LookUp, RetrySameAction, RetryNewKey, RecordEffect, RecordRejection, Hold, Wait, Escalate, Stop)


@runtime_checkable
class Policy(Protocol):
    """A recovery policy: a name, a revision that goes into every report, and a pure decision."""

    name: str
    revision: str

    def decide(self, situation: Situation) -> Command:
        """Return the next command for this situation."""
        ...


class PolicyError(ValueError):
    """A policy that cannot be loaded; the message is one line naming what and how to fix it."""


def builtin_policy_names() -> list[str]:
    """Names of the policies shipped in the ``policies`` package, sorted."""
    import policies

    return sorted(m.name for m in pkgutil.iter_modules(policies.__path__) if not m.name.startswith("_"))


def load_policy(spec: str) -> Policy:
    """Load a shipped policy by name, or a user's policy given as ``package.module:attr``."""
    if ":" in spec:
        module_name, _, attr = spec.partition(":")
        where = spec
        if not module_name or not attr or module_name.startswith("."):
            raise PolicyError(f"policy '{spec}': expected package.module:attr; fix: name an importable module")
    else:
        known = builtin_policy_names()
        if spec not in known:
            raise PolicyError(f"unknown policy '{spec}'; fix: use one of {', '.join(known)}, or package.module:attr")
        module_name, attr, where = f"policies.{spec}", "POLICY", spec
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # a user's module can fail to import in any way; say so in one line
        reason = " ".join(str(exc).split())[:200]
        raise PolicyError(
            f"policy '{where}': cannot import '{module_name}' ({type(exc).__name__}: {reason}); fix: check the module"
        ) from exc
    policy = getattr(module, attr, None)
    if policy is None:
        raise PolicyError(f"policy '{where}': '{module_name}' has no attribute '{attr}'; fix: check the name")
    if not isinstance(policy, Policy) or not isinstance(policy.name, str) or not isinstance(policy.revision, str):
        raise PolicyError(
            f"policy '{where}': needs str 'name', str 'revision' and a 'decide(situation)' method; "
            "fix: see harness.policy.Policy"
        )
    return policy
