"""The parts of the world a scenario fixes: the task and its approval, the destination, the transport, the worker."""

from __future__ import annotations

import hashlib
from typing import Annotated, Literal

from pydantic import Field, SecretStr, Strict, StrictBool

from harness.limits import NAME_MAX, REVISION_MAX, TEXT_MAX
from harness.model import Artifact, Frozen

__all__ = [
    "NAME_MAX",
    "REVISION_MAX",
    "SAFE_NAME",
    "ApprovalSpec",
    "BridgeSpec",
    "ConnectorSpec",
    "Count",
    "DestinationSpec",
    "Flag",
    "PositiveSeconds",
    "SafeName",
    "Seconds",
    "TaskSpec",
    "TransportSpec",
    "WorkerSpec",
    "derived_name",
    "derived_revision",
]

#: Names that end up in file paths and Polyaxon run names: lower case, digits, ``_`` and ``-`` only, ``NAME_MAX``
#: characters at most.
SAFE_NAME = rf"^[a-z0-9][a-z0-9_-]{{0,{NAME_MAX - 1}}}$"
SafeName = Annotated[str, Field(pattern=SAFE_NAME)]


def _within_bound(text: str, ending: str, mark: str, least: int) -> str:
    """``text + ending`` when that is 64 characters at most (``NAME_MAX``, ``REVISION_MAX``); else as much of
    ``text`` as leaves room for ``mark``, the digest of ``text`` and ``ending`` (at least ``least`` characters of it),
    so that two long texts cut alike still give two results."""
    if len(text) + len(ending) <= NAME_MAX:
        return text + ending
    digest = hashlib.sha256(text.encode()).hexdigest()[:8]
    keep = max(least, NAME_MAX - len(ending) - len(mark) - len(digest))
    return f"{text[:keep]}{mark}{digest}{ending}"[:NAME_MAX]


def derived_name(base: str, suffix: str) -> str:
    """``<base>-<suffix>``, the name of a scenario made from another (a crash point's case, an exploration's
    finding), kept within ``NAME_MAX`` so that the file written under it loads again: a base too long for the
    suffix is cut and marked with its digest (its first character, a letter or digit, always kept)."""
    return _within_bound(base, f"-{suffix}", "-", 1)


def derived_revision(revision: str, suffix: str) -> str:
    """``<revision><suffix>`` within ``REVISION_MAX``: a revision too long for the suffix is cut and marked with
    ``~`` and its digest."""
    return _within_bound(revision, suffix, "~", 0)


# Numbers and flags are taken as written, never converted: YAML types ``"1"`` as text, ``true`` as a flag and
# ``1.0`` as a fraction, and a scenario that writes one where the other belongs is wrong, not approximately right.
PositiveSeconds = Annotated[float, Strict(), Field(gt=0, le=86_400, allow_inf_nan=False)]
Seconds = Annotated[float, Strict(), Field(ge=0, le=86_400, allow_inf_nan=False)]
#: A whole number from 1: an occurrence, a revision, a count.
Count = Annotated[int, Strict(), Field(ge=1)]
Flag = StrictBool
#: Text the scenario gives the world, copied into every record that names it: bounded (``limits.TEXT_MAX``).
Text = Annotated[str, Field(max_length=TEXT_MAX)]


class TaskSpec(Frozen):
    """The task as the controller first records it: revision ``revision`` authorizes this one operation."""

    task_id: SafeName
    revision: Count
    operation: Text = "activate_model"
    target: Text
    model: Text
    digest: Text

    @property
    def artifact(self) -> Artifact:
        # Built from this spec's own validated fields (once per case, in the hot path).
        return Artifact.trusted(operation=self.operation, target=self.target, model=self.model, digest=self.digest)


class ApprovalSpec(Frozen):
    """The approval for the first revision, bound to operation, target, digest and revision.

    ``token`` is a secret the executor presents; it must never appear in evidence or reports.
    """

    approval_id: SafeName
    token: SecretStr = SecretStr("approval-token-not-set")
    expires_at_s: PositiveSeconds | None = None


class DestinationSpec(Frozen):
    """The mock deployment service and its documented contract: deduplication, conflicts, lookups, fencing.

    Each field is one choice real services make differently; the README's scenario reference names some of
    the services that choose each way.
    """

    #: How the service remembers keys: ``durable`` (in its ledger, across restarts), ``process`` (in the memory
    #: of one service process: a restart forgets them) or ``none`` (every request is a new operation, the key
    #: is ignored).
    dedupe: Literal["durable", "process", "none"] = "durable"
    #: Retention: requests with the same key and arguments within this window (from the first request) are
    #: answered from the recorded operation; after it, the same key is applied again as a new operation.
    dedupe_window_s: PositiveSeconds = 300.0
    #: Same key with different arguments: ``reject`` answers a conflict (400/422-style); ``replay`` silently
    #: returns the result of the first request.
    on_conflict: Literal["reject", "replay"] = "reject"
    #: Same key while the first operation is still pending: ``pending`` answers "pending" with no receipt;
    #: ``in_progress`` answers a 409-style "in progress" error.
    on_in_flight: Literal["pending", "in_progress"] = "pending"
    #: Request validity: a request that arrives more than this long after it was sent is refused as expired,
    #: so a late original can apply only within it. ``null``: any age is accepted.
    request_validity_s: PositiveSeconds | None = 60.0
    #: Fencing: requests carry their approval, and the service refuses one whose approval was revoked (the
    #: task changed or was cancelled) or expired by the time it arrives.
    fencing: Flag = False
    #: Time from accepting a request to applying it.
    apply_s: Seconds = 0.5
    #: Time the lookup of a durable result takes to answer.
    lookup_s: Seconds = 0.2
    #: Eventual consistency: a lookup answers from the ledger as it stood this long ago (0: up to date).
    lookup_lag_s: Seconds = 0.0
    #: Models the service refuses; a refused request leaves a ``rejected`` receipt and no effect.
    reject_models: tuple[Text, ...] = ()
    #: False when the service's ledger cannot be read after the run: its entries are withheld from the
    #: checker, which must then say ``unknown`` where only that ledger could tell.
    ledger_visible: Flag = True


class ConnectorSpec(Frozen):
    """A device connector between the caller and the target (seed 000): it runs the side effect through a local
    two-phase ledger (``started`` before the effect, ``completed`` with the receipt before reporting)."""

    #: How long a dispatch waits for the job before the reply says "running" with its job ID
    #: (``task wait JOB_ID --wait 4000``): a wait that ends is not a failure.
    wait_s: PositiveSeconds = 4.0
    #: How long a crashed connector takes to run again (with its durable ledger).
    restart_s: PositiveSeconds = 10.0
    #: The execution budget each request carries: part of the request's identity, with its arguments.
    budget_s: PositiveSeconds = 30.0


class BridgeSpec(Frozen):
    """A bridge between the agent's client and the tool server (seed 002): it numbers calls twice (a JSON-RPC id
    per call, a pipe request UUID per request) and keeps receipts per UUID for the life of its process."""

    #: The convenience API: after an uncertain outcome, the bridge refuses further mutations of the task until a
    #: verification settles it (reads stay possible).
    block_after_uncertain: Flag = False


class TransportSpec(Frozen):
    """One-way latency of every crossing: ``latency_s`` plus a uniform draw in ``[0, jitter_s]``."""

    latency_s: Seconds = 0.05
    jitter_s: Seconds = 0.02


class WorkerSpec(Frozen):
    """The caller: how long it waits, how long a replacement takes to start, and its bounds."""

    #: How long the caller waits for a dispatch's reply before it calls the attempt timed out.
    timeout_s: PositiveSeconds = 5.0
    #: How long after a timeout or a crash the recovering worker starts asking its policy. Positive, so a
    #: worker that crashes on every attempt still lets virtual time reach the deadline.
    restart_delay_s: PositiveSeconds = 10.0
    #: How long the caller waits for a lookup's reply before it calls the lookup unknown.
    lookup_timeout_s: PositiveSeconds = 2.0
    #: Upper bound on policy commands over the whole case (every incarnation), so a policy that never stops
    #: still ends.
    command_count_max: Annotated[Count, Field(le=10_000)] = 64
    #: Upper bound on one ``wait`` command.
    wait_max_s: PositiveSeconds = 60.0
    #: When the dispatcher records and claims the first action (from the start of the case).
    dispatch_at_s: Seconds = 0.0
    #: How many recovering workers start side by side after the first dispatch fails (they may race to
    #: record the same receipt).
    recoverers: Annotated[Count, Field(le=4)] = 1
    #: How long a write to the controller's action ledger takes to land after the worker decides it (a
    #: database round trip): another worker deciding meanwhile still sees the ledger without it.
    ledger_write_s: Seconds = 0.0
    #: How long a retry takes to leave after the worker decides it (an agent composing its tool call, a job
    #: queue): the task, its approval or the target may change meanwhile. A claimed retry is rechecked by the
    #: controller as it leaves, and refused if it is no longer authorized; a retry without a claim leaves anyway.
    retry_send_s: Seconds = 0.0
