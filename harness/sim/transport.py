"""The transport: every request and reply crosses it, and it records each crossing on the caller's side.

Latency comes from the transport's own sub-seed. Request and response faults are decided by the injector
at this boundary, by dispatch number.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Generator
from typing import Any, Protocol

import simpy

from harness.scenario import RequestDelayed, ResponseDelayed, TransportSpec
from harness.sim.faults import Injector
from harness.sim.history import History
from harness.sim.messages import Reply, Request

__all__ = ["Handler", "Transport"]


class Handler(Protocol):
    def handle(self, request: Request) -> Generator[simpy.Event, Any, Reply | None]: ...


class Transport:
    def __init__(
        self,
        env: simpy.Environment,
        spec: TransportSpec,
        rng: random.Random,
        history: History,
        injector: Injector,
        destination: Handler,
    ) -> None:
        self._env = env
        self._spec = spec
        self._rng = rng
        self._history = history
        self._injector = injector
        self._destination = destination

    def _latency_s(self) -> float:
        return self._spec.latency_s + self._rng.uniform(0.0, self._spec.jitter_s)

    def send(self, request: Request, deliver: Callable[[Reply], bool]) -> None:
        """Record the request leaving the caller and carry it; ``deliver`` returns False if the caller is gone."""
        if request.kind == "dispatch":
            self._history.record(
                "transport",
                "send",
                kind="dispatch",
                n=request.n,
                action_id=request.action_id,
                execution_id=request.execution_id,
                idempotency_key=request.idempotency_key,
                operation=request.operation,
                target=request.target,
                model=request.model,
                digest=request.digest,
            )
        else:
            self._history.record(
                "transport",
                "send",
                kind="lookup",
                n=request.n,
                action_id=request.action_id,
                idempotency_key=request.idempotency_key,
            )
        self._env.process(self._carry(request, deliver))

    def _carry(self, request: Request, deliver: Callable[[Reply], bool]) -> Generator[simpy.Event, Any, None]:
        dispatch = request.kind == "dispatch"
        outbound_s = self._latency_s()
        if dispatch:
            if self._injector.hit("request_lost", request.action_id, request.n):
                return
            delayed = self._injector.hit("request_delayed", request.action_id, request.n)
            if isinstance(delayed, RequestDelayed):
                outbound_s += delayed.delay_s
        yield self._env.timeout(outbound_s)
        reply = yield from self._destination.handle(request)
        if reply is None:
            return
        inbound_s = self._latency_s()
        if dispatch:
            if self._injector.hit("response_lost", request.action_id, request.n):
                return
            late = self._injector.hit("response_delayed", request.action_id, request.n)
            if isinstance(late, ResponseDelayed):
                inbound_s += late.delay_s
        yield self._env.timeout(inbound_s)
        delivered = deliver(reply)
        data: dict[str, str | int | None] = {
            "kind": request.kind,
            "n": request.n,
            "action_id": request.action_id,
            "execution_id": request.execution_id or None,
            "status": reply.status or reply.effect,
            "receipt_id": reply.receipt.receipt_id if reply.receipt else None,
        }
        self._history.record("transport", "receive" if delivered else "undeliverable", **data)
