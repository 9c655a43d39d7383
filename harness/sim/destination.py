"""The mock deployment service: applies operations, deduplicates by key and arguments, keeps receipts.

Its own entries in the history (what it received, applied, replayed and answered) are its ledger. The
simulator also keeps the effects it applied as ground truth, which tests compare with the checker.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import Any, Literal

import simpy

from harness.policy import ReceiptView
from harness.scenario import DestinationSpec
from harness.sim.faults import Injector
from harness.sim.history import History
from harness.sim.messages import Reply, Request

__all__ = ["AppliedEffect", "Destination"]


@dataclass(slots=True)
class _Operation:
    fingerprint: tuple[str, str, str, str]
    first_at_s: float
    status: str = "pending"
    receipt: ReceiptView | None = None


@dataclass(frozen=True, slots=True)
class AppliedEffect:
    """Ground truth: one effect the destination really applied, and the request that caused it."""

    at_s: float
    action_id: str
    dispatch_n: int
    receipt_id: str


class Destination:
    def __init__(self, env: simpy.Environment, spec: DestinationSpec, history: History, injector: Injector) -> None:
        self._env = env
        self._spec = spec
        self._history = history
        self._injector = injector
        self._operations: dict[str, _Operation] = {}
        self._receipt_count = 0
        self.effects: list[AppliedEffect] = []

    def handle(self, request: Request) -> Generator[simpy.Event, Any, Reply | None]:
        """Process one request; return its reply, or ``None`` when the destination never answers."""
        if request.kind == "lookup":
            return (yield from self._lookup(request))
        return (yield from self._dispatch(request))

    def _lookup(self, request: Request) -> Generator[simpy.Event, Any, Reply]:
        yield self._env.timeout(self._spec.lookup_s)
        failing = self._injector.hit("lookup_unavailable", request.action_id, request.n)
        if failing is not None:
            self._history.record(
                "destination", "lookup_answered", idempotency_key=request.idempotency_key, effect="unknown"
            )
            return Reply(effect="unknown")
        operation = self._operations.get(request.idempotency_key)
        if operation is None:
            self._history.record(
                "destination", "lookup_answered", idempotency_key=request.idempotency_key, effect="absent"
            )
            return Reply(effect="absent")
        receipt = operation.receipt
        self._history.record(
            "destination",
            "lookup_answered",
            idempotency_key=request.idempotency_key,
            effect=operation.status,
            receipt_id=receipt.receipt_id if receipt else None,
        )
        effect = "pending" if receipt is None else receipt.status
        return Reply(effect=effect, receipt=receipt)

    def _dispatch(self, request: Request) -> Generator[simpy.Event, Any, Reply | None]:
        key = request.idempotency_key
        now = self._env.now
        self._history.record("destination", "received", idempotency_key=key, execution_id=request.execution_id)
        known = self._operations.get(key)
        if known is not None and now - known.first_at_s <= self._spec.dedupe_window_s:
            if known.fingerprint == request.fingerprint or self._spec.on_conflict == "replay":
                receipt = known.receipt
                self._history.record(
                    "destination",
                    "replayed",
                    idempotency_key=key,
                    execution_id=request.execution_id,
                    receipt_id=receipt.receipt_id if receipt else None,
                    arguments_match=known.fingerprint == request.fingerprint,
                )
                if receipt is None:
                    return Reply(status="pending")
                return Reply(status=receipt.status, receipt=receipt)
            self._history.record("destination", "conflict", idempotency_key=key, execution_id=request.execution_id)
            return Reply(status="conflict")

        operation = _Operation(fingerprint=request.fingerprint, first_at_s=now)
        self._operations[key] = operation
        self._history.record("destination", "accepted", idempotency_key=key, execution_id=request.execution_id)
        if self._injector.hit("accepted_not_applied", request.action_id, request.n):
            return None
        yield self._env.timeout(self._spec.apply_s)

        self._receipt_count += 1
        status: Literal["applied", "rejected"] = "rejected" if request.model in self._spec.reject_models else "applied"
        receipt = ReceiptView(
            receipt_id=f"r{self._receipt_count}",
            status=status,
            idempotency_key=key,
            operation=request.operation,
            target=request.target,
            model=request.model,
            digest=request.digest,
        )
        operation.status = status
        operation.receipt = receipt
        self._history.record(
            "destination",
            status,
            receipt_id=receipt.receipt_id,
            idempotency_key=key,
            execution_id=request.execution_id,
            operation=request.operation,
            target=request.target,
            model=request.model,
            digest=request.digest,
        )
        if status == "applied":
            self.effects.append(AppliedEffect(self._env.now, request.action_id, request.n, receipt.receipt_id))
        return Reply(status=status, receipt=receipt)
