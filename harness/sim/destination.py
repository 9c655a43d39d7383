"""The mock deployment service: applies operations under its documented contract and keeps receipts.

The contract is scenario data (``DestinationSpec``): how keys are remembered (durably, for the life of one
process, or not at all) and for how long; what a changed request under a known key gets (a conflict, or the
first result replayed); what a duplicate of a pending operation gets; how old a request may be; whether
requests carrying a revoked approval are fenced off; how stale a lookup may be. Its own entries in the
history are its ledger; the auditor is told of every operation it accepts and every effect it applies.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any, Literal

import simpy

from harness.model import Artifact, Receipt
from harness.model.events import (
    Accepted,
    Applied,
    Conflicted,
    DestinationRestarted,
    InProgress,
    LookupAnswered,
    OutcomeVerified,
    Received,
    Rejected,
    ReplayedByDestination,
    RequestRefused,
    StillPending,
)
from harness.policy import Verified
from harness.scenario import DestinationSpec
from harness.scenario.faults import (
    AcceptedNotApplied,
    ApplyDelayed,
    DestinationRestart,
    LookupForeignReceipt,
    LookupUnavailable,
)
from harness.sim.auditor import Auditor
from harness.sim.faults import Injector
from harness.sim.history import History
from harness.sim.messages import Reply, Request

__all__ = ["Destination"]

Status = Literal["pending", "applied", "rejected"]


@dataclass(slots=True)
class _Operation:
    artifact: Artifact
    first_at_s: float
    #: (time, status, receipt) each time the operation changed, oldest first: what a lagging lookup reads.
    changes: list[tuple[float, Status, Receipt | None]] = field(default_factory=list)

    @property
    def receipt(self) -> Receipt | None:
        return self.changes[-1][2]

    def as_of(self, at_s: float) -> tuple[Status, Receipt | None] | None:
        """The operation's status and receipt as they stood at ``at_s`` (None: it did not exist yet)."""
        seen = None
        for when, status, receipt in self.changes:
            if when > at_s:
                break
            seen = (status, receipt)
        return seen


class Destination:
    def __init__(
        self,
        env: simpy.Environment,
        spec: DestinationSpec,
        history: History,
        injector: Injector,
        auditor: Auditor,
        approval_in_force: Callable[[str], bool],
    ) -> None:
        self._env = env
        self._spec = spec
        self._history = history
        self._injector = injector
        self._auditor = auditor
        self._approval_in_force = approval_in_force
        #: The ledger: every operation under each key, oldest first (it survives restarts).
        self._ledger: dict[str, list[_Operation]] = {}
        #: Keys this process remembers for deduplication (all of the ledger's when ``dedupe`` is durable).
        self._remembered: dict[str, _Operation] = {}
        self._receipt_count = 0
        #: The requests of operations accepted and not yet applied (by identity, oldest first): the simulation
        #: settles until none is left, and the case's end says which it cut off.
        self._unapplied: dict[int, Request] = {}
        #: Reads of each action's outcome this destination answered: a read fault's occurrence counts these, so
        #: a read that never reaches it (a job follow with no connector in the path) uses up no occurrence.
        self._reads: dict[str, int] = {}

    def handle(self, request: Request) -> Generator[simpy.Event, Any, Reply | None]:
        """Process one request; return its reply, or ``None`` when the destination never answers."""
        if request.kind == "lookup":
            return (yield from self._lookup(request))
        if request.kind == "verify":
            return (yield from self._verify(request))
        if request.kind != "dispatch":
            return None  # a job follow reaches a destination only when no connector stands in front: unanswered
        reply = yield from self._dispatch(request)
        if self._injector.hit(DestinationRestart, request.action_id, request.n):
            self._restart()
        return reply

    # -- lookups --------------------------------------------------------------------------------------------

    def _lookup(self, request: Request) -> Generator[simpy.Event, Any, Reply]:
        yield self._env.timeout(self._spec.lookup_s)
        key, action_id = request.idempotency_key, request.action_id
        n = self._reads[action_id] = self._reads.get(action_id, 0) + 1
        if self._injector.hit(LookupUnavailable, action_id, n):
            self._answered(request, "unknown", None)
            return Reply(effect="unknown")
        foreign = self._injector.hit(LookupForeignReceipt, action_id, n)
        as_of_s = self._history.now_s() - self._spec.lookup_lag_s
        if foreign is not None:
            # Of the operation the read sees under the key (as of its lag), if any: a lagging read must not show,
            # through the foreign receipt, an operation it cannot see yet.
            known = [o for o in self._ledger.get(key, ()) if o.first_at_s <= as_of_s]
            base = known[-1].artifact if known else Artifact(operation="unknown", target="unknown", model="", digest="")
            artifact = base.model_copy(update={"model": foreign.model, "digest": foreign.digest})
            receipt = Receipt(
                receipt_id=f"rx{n}",
                status=foreign.status,
                idempotency_key=foreign.idempotency_key or key,
                artifact=artifact,
            )
            self._answered(request, foreign.status, receipt.receipt_id)
            return Reply(effect=foreign.status, receipt=receipt)
        seen = self._as_of(key, as_of_s)
        if seen is None:
            self._answered(request, "absent", None)
            return Reply(effect="absent")
        status, recorded = seen
        self._answered(request, status, recorded.receipt_id if recorded else None)
        return Reply(effect=status, receipt=recorded)

    def _answered(self, request: Request, effect: str, receipt_id: str | None) -> None:
        """Record the answer to a read as it leaves the target (it may be long on its way back), and tell the
        auditor: the read speaks for the ledger as it is now, not as it is when the caller hears it."""
        self._history.record(
            LookupAnswered(idempotency_key=request.idempotency_key, effect=effect, receipt_id=receipt_id, n=request.n)
        )
        self._auditor.read_answered(request.action_id, request.n)

    def _verify(self, request: Request) -> Generator[simpy.Event, Any, Reply]:
        """Read the run's durable state by its key and compare it with the original expectation (the request's
        artifact): confirmed only by a receipt of that run (its key) for exactly those arguments."""
        answer = yield from self._lookup(request)
        receipt = answer.receipt
        verified: Verified
        if answer.effect == "applied" and receipt is not None:
            same = receipt.artifact == request.artifact and receipt.idempotency_key == request.idempotency_key
            verified = "confirmed" if same else "refuted"
        elif answer.effect == "rejected":
            verified = "refuted"
        elif answer.effect == "absent":
            verified = "absent"
        else:
            verified = "unknown"
        self._history.record(
            OutcomeVerified(
                idempotency_key=request.idempotency_key,
                result=verified,
                receipt_id=receipt.receipt_id if receipt else None,
            )
        )
        return Reply(effect=answer.effect, receipt=receipt, verified=verified)

    def _as_of(self, key: str, at_s: float) -> tuple[Status, Receipt | None] | None:
        """The newest operation under ``key`` as the ledger stood at ``at_s``."""
        for operation in reversed(self._ledger.get(key, [])):
            seen = operation.as_of(at_s)
            if seen is not None:
                return seen
        return None

    # -- dispatches -----------------------------------------------------------------------------------------

    def _dispatch(self, request: Request) -> Generator[simpy.Event, Any, Reply | None]:
        key, execution_id, artifact = request.idempotency_key, request.execution_id, request.artifact
        assert artifact is not None
        now = self._history.now_s()
        self._history.record(Received(idempotency_key=key, execution_id=execution_id))
        refusal = self._refusal(request, now)
        if refusal is not None:
            self._history.record(RequestRefused(idempotency_key=key, execution_id=execution_id, reason=refusal))
            return Reply(status="refused")
        known = self._remembered.get(key)
        if known is not None and now - known.first_at_s <= self._spec.dedupe_window_s:
            return self._answer_known(known, request)

        operation = _Operation(artifact=artifact, first_at_s=now)
        operation.changes.append((now, "pending", None))
        self._ledger.setdefault(key, []).append(operation)
        if self._spec.dedupe != "none":
            self._remembered[key] = operation
        self._history.record(Accepted(idempotency_key=key, execution_id=execution_id))
        self._auditor.accepted_operation(request.action_id, now)
        if self._injector.hit(AcceptedNotApplied, request.action_id, request.n):
            return None
        late = self._injector.hit(ApplyDelayed, request.action_id, request.n)
        self._unapplied[id(request)] = request
        yield self._env.timeout(late.delay_s if late is not None else self._spec.apply_s)
        del self._unapplied[id(request)]
        return self._apply(operation, request)

    @property
    def pending(self) -> int:
        """Operations accepted and not yet applied."""
        return len(self._unapplied)

    def unsettled(self) -> list[StillPending]:
        """A record of each operation accepted and not yet applied, as the case ends."""
        return [
            StillPending(idempotency_key=r.idempotency_key, execution_id=r.execution_id)
            for r in self._unapplied.values()
        ]

    def _refusal(self, request: Request, now: float) -> Literal["expired", "fenced"] | None:
        validity = self._spec.request_validity_s
        if validity is not None and now - request.sent_at_s > validity:
            return "expired"
        if self._spec.fencing and not self._approval_in_force(request.approval_id):
            return "fenced"
        return None

    def _answer_known(self, known: _Operation, request: Request) -> Reply:
        """A request under a key this process remembers, inside the window: conflict, in progress, or replay."""
        key, execution_id = request.idempotency_key, request.execution_id
        same = known.artifact == request.artifact
        if not same and self._spec.on_conflict == "reject":
            self._history.record(Conflicted(idempotency_key=key, execution_id=execution_id))
            return Reply(status="conflict")
        receipt = known.receipt
        if receipt is None and self._spec.on_in_flight == "in_progress":
            self._history.record(InProgress(idempotency_key=key, execution_id=execution_id))
            return Reply(status="in_progress")
        self._history.record(
            ReplayedByDestination(
                idempotency_key=key,
                execution_id=execution_id,
                receipt_id=receipt.receipt_id if receipt else None,
                arguments_match=same,
            )
        )
        if receipt is None:
            return Reply(status="pending")
        return Reply(status=receipt.status, receipt=receipt)

    def _apply(self, operation: _Operation, request: Request) -> Reply:
        key, artifact = request.idempotency_key, operation.artifact
        self._receipt_count += 1
        status: Literal["applied", "rejected"] = "rejected" if artifact.model in self._spec.reject_models else "applied"
        receipt = Receipt.trusted(
            receipt_id=f"r{self._receipt_count}", status=status, idempotency_key=key, artifact=artifact
        )
        now = self._history.now_s()
        operation.changes.append((now, status, receipt))
        record = Applied if status == "applied" else Rejected
        self._history.record(
            record(
                receipt_id=receipt.receipt_id, idempotency_key=key, execution_id=request.execution_id, artifact=artifact
            )
        )
        if status == "applied":
            self._auditor.applied(request.action_id, request.n, receipt.receipt_id, now, artifact)
        return Reply(status=status, receipt=receipt)

    def _restart(self) -> None:
        """A new service process: it remembers only what its ledger holds durably."""
        forgotten = len(self._remembered) if self._spec.dedupe == "process" else 0
        if self._spec.dedupe == "process":
            self._remembered.clear()
        self._history.record(DestinationRestarted(forgotten_keys=forgotten))
