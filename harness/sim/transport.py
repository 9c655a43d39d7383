"""The transport: every request and reply crosses it, and it records each crossing on the caller's side.

Latency comes from the transport's own sub-seed. Request and response faults are decided by the injector
at this boundary, by dispatch number: each direction can lose the message or delay it.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Generator
from typing import Any, Protocol

import simpy

from harness.model.events import (
    DispatchSent,
    JobFollowSent,
    LookupSent,
    ReplyReceived,
    ReplyUndeliverable,
    StillInFlight,
    VerifySent,
)
from harness.scenario import TransportSpec
from harness.scenario.faults import ReadAnswerDelayed, RequestDelayed, RequestLost, ResponseDelayed, ResponseLost
from harness.sim.auditor import Auditor
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
        auditor: Auditor,
        intermediary: Handler | None = None,
    ) -> None:
        self._env = env
        #: Where dispatches, job follows and verifications go: a connector or bridge if one is in the path.
        self._first_hop = intermediary or destination
        self._auditor = auditor
        #: Requests sent whose carrying has not finished: the simulation settles until none is left.
        self.in_flight = 0
        #: Dispatches on their way to the first hop (by identity, oldest first): what the case's end may cut off.
        self.outbound: dict[int, Request] = {}
        self._spec = spec
        self._rng = rng
        self._history = history
        self._injector = injector
        self._destination = destination

    def _latency_s(self) -> float:
        return self._spec.latency_s + self._rng.uniform(0.0, self._spec.jitter_s)

    def send(self, request: Request, deliver: Callable[[Reply], bool]) -> None:
        """Record the request leaving the caller and carry it; ``deliver`` returns False if the caller is gone."""
        n, action_id, key = request.n, request.action_id, request.idempotency_key
        match request.kind:
            case "dispatch":
                assert request.artifact is not None
                self._history.record(
                    DispatchSent(
                        n=n,
                        action_id=action_id,
                        execution_id=request.execution_id,
                        idempotency_key=key,
                        artifact=request.artifact,
                    )
                )
                self.outbound[id(request)] = request
            case "lookup":
                self._history.record(LookupSent(n=n, action_id=action_id, idempotency_key=key))
            case "follow_job":
                self._history.record(JobFollowSent(n=n, action_id=action_id, idempotency_key=key))
            case "verify":
                assert request.artifact is not None
                self._history.record(
                    VerifySent(n=n, action_id=action_id, idempotency_key=key, artifact=request.artifact)
                )
        self.in_flight += 1
        self._env.process(self._carry(request, deliver))

    def _crossing_s(self, request: Request, back: bool) -> float | None:
        """One direction's travel time for a dispatch or a read (``back``: its reply's): ``None`` if the message
        is lost on the way. A read is never lost (a lookup that fails answers ``unknown``); its answer may be slow."""
        travel_s = self._latency_s()
        if request.kind != "dispatch":
            slow = self._injector.hit(ReadAnswerDelayed, request.action_id, request.n) if back else None
            return travel_s + slow.delay_s if slow is not None else travel_s
        lost: type[RequestLost | ResponseLost] = ResponseLost if back else RequestLost
        if self._injector.hit(lost, request.action_id, request.n):
            return None
        delayed: type[RequestDelayed | ResponseDelayed] = ResponseDelayed if back else RequestDelayed
        late = self._injector.hit(delayed, request.action_id, request.n)
        return travel_s + late.delay_s if late is not None else travel_s

    def unsettled(self) -> list[StillInFlight]:
        """A record of each dispatch still on its way, as the case ends."""
        return [
            StillInFlight(n=r.n, action_id=r.action_id, execution_id=r.execution_id) for r in self.outbound.values()
        ]

    def _carry(self, request: Request, deliver: Callable[[Reply], bool]) -> Generator[simpy.Event, Any, None]:
        # One generator for the whole crossing (not a carrier around a crossing): every resumption of a nested
        # generator passes through each layer, and a case resumes its carriers a dozen times.
        try:
            outbound_s = self._crossing_s(request, back=False)
            if outbound_s is None:
                self.outbound.pop(id(request), None)
                return
            yield self._env.timeout(outbound_s)
            self.outbound.pop(id(request), None)
            # A lookup inspects the target itself; everything else goes through whatever stands in the path.
            hop = self._destination if request.kind == "lookup" else self._first_hop
            reply = yield from hop.handle(request)
            if reply is None:
                return
            inbound_s = self._crossing_s(request, back=True)
            if inbound_s is None:
                return
            yield self._env.timeout(inbound_s)
            delivered = deliver(reply)
            arrival = ReplyReceived if delivered else ReplyUndeliverable
            status = reply.verified or reply.status or reply.effect
            self._history.record(
                arrival(
                    kind=request.kind,
                    n=request.n,
                    action_id=request.action_id,
                    execution_id=request.execution_id or None,
                    status=status,
                    receipt_id=reply.receipt.receipt_id if reply.receipt else None,
                )
            )
            if delivered:
                self._auditor.reply_reached_caller(request.action_id, request.kind, status, request.n)
        finally:
            self.in_flight -= 1
