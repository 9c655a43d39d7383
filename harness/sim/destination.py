"""The mock deployment service: applies operations, deduplicates by key and arguments, keeps receipts.

Its own entries in the history (what it received, applied, replayed and answered) are its ledger; the
auditor is told of every effect it really applies.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import Any, Literal

import simpy

from harness.model import Artifact, Receipt
from harness.model.events import (
    Accepted,
    Applied,
    Conflicted,
    LookupAnswered,
    Received,
    Rejected,
    ReplayedByDestination,
)
from harness.scenario import DestinationSpec
from harness.scenario.faults import AcceptedNotApplied, LookupUnavailable
from harness.sim.auditor import Auditor
from harness.sim.faults import Injector
from harness.sim.history import History
from harness.sim.messages import Reply, Request

__all__ = ["Destination"]


@dataclass(slots=True)
class _Operation:
    artifact: Artifact
    first_at_s: float
    status: Literal["pending", "applied", "rejected"] = "pending"
    receipt: Receipt | None = None


class Destination:
    def __init__(
        self, env: simpy.Environment, spec: DestinationSpec, history: History, injector: Injector, auditor: Auditor
    ) -> None:
        self._env = env
        self._spec = spec
        self._history = history
        self._injector = injector
        self._auditor = auditor
        self._operations: dict[str, _Operation] = {}
        self._receipt_count = 0

    def handle(self, request: Request) -> Generator[simpy.Event, Any, Reply | None]:
        """Process one request; return its reply, or ``None`` when the destination never answers."""
        if request.kind == "lookup":
            return (yield from self._lookup(request))
        return (yield from self._dispatch(request))

    def _lookup(self, request: Request) -> Generator[simpy.Event, Any, Reply]:
        yield self._env.timeout(self._spec.lookup_s)
        key = request.idempotency_key
        if self._injector.hit(LookupUnavailable, request.action_id, request.n):
            self._history.record(LookupAnswered(idempotency_key=key, effect="unknown", receipt_id=None))
            return Reply(effect="unknown")
        operation = self._operations.get(key)
        if operation is None:
            self._history.record(LookupAnswered(idempotency_key=key, effect="absent", receipt_id=None))
            return Reply(effect="absent")
        receipt = operation.receipt
        self._history.record(
            LookupAnswered(
                idempotency_key=key, effect=operation.status, receipt_id=receipt.receipt_id if receipt else None
            )
        )
        return Reply(effect=operation.status, receipt=receipt)

    def _dispatch(self, request: Request) -> Generator[simpy.Event, Any, Reply | None]:
        key, execution_id, artifact = request.idempotency_key, request.execution_id, request.artifact
        assert artifact is not None
        now = self._env.now
        self._history.record(Received(idempotency_key=key, execution_id=execution_id))
        known = self._operations.get(key)
        if known is not None and now - known.first_at_s <= self._spec.dedupe_window_s:
            same = known.artifact == artifact
            if same or self._spec.on_conflict == "replay":
                receipt = known.receipt
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
            self._history.record(Conflicted(idempotency_key=key, execution_id=execution_id))
            return Reply(status="conflict")

        operation = _Operation(artifact=artifact, first_at_s=now)
        self._operations[key] = operation
        self._history.record(Accepted(idempotency_key=key, execution_id=execution_id))
        if self._injector.hit(AcceptedNotApplied, request.action_id, request.n):
            return None
        yield self._env.timeout(self._spec.apply_s)

        self._receipt_count += 1
        status: Literal["applied", "rejected"] = "rejected" if artifact.model in self._spec.reject_models else "applied"
        receipt = Receipt(receipt_id=f"r{self._receipt_count}", status=status, idempotency_key=key, artifact=artifact)
        operation.status = status
        operation.receipt = receipt
        record = Applied if status == "applied" else Rejected
        self._history.record(
            record(receipt_id=receipt.receipt_id, idempotency_key=key, execution_id=execution_id, artifact=artifact)
        )
        if status == "applied":
            self._auditor.applied(request.action_id, request.n, receipt.receipt_id, self._history.now_s())
        return Reply(status=status, receipt=receipt)
