"""The bridge between an agent's client and a tool server (seed 002).

Two request-number layers: each call gets a JSON-RPC id (one per call, never deduplicated) and carries a pipe
request UUID (the caller's idempotency key; a new call gets a new UUID unless the caller reuses one). The bridge
keeps a receipt per UUID for the life of its process: the same UUID with the same content is answered from
it, with other content it is a conflict; a restart forgets every receipt. A connection error raised in the
bridge carries an explicit "do not replay automatically" marker, whether or not the call had reached the
tool server (it may still be on its way there, and run later). With ``block_after_uncertain`` (the convenience
API), mutations of an action whose last outcome is uncertain are refused until a verification settles it; reads
always pass.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

import simpy

from harness.model import Artifact
from harness.model.events import (
    BridgeRestarted,
    CallBlocked,
    CallConflict,
    CallForwarded,
    CallReplayed,
    ConnectionBroken,
    StillInFlight,
)
from harness.scenario import BridgeSpec
from harness.scenario.faults import BridgeConnectionError, BridgeRestart
from harness.sim.faults import Injector
from harness.sim.history import History
from harness.sim.messages import Reply, Request
from harness.sim.transport import Handler

__all__ = ["Bridge"]


@dataclass(slots=True)
class _Receipt:
    """What the bridge process holds for one request UUID: the call's content, and its reply once it came."""

    artifact: Artifact | None
    reply: Reply | None = None


class Bridge:
    def __init__(
        self, env: simpy.Environment, spec: BridgeSpec, history: History, injector: Injector, tool_server: Handler
    ) -> None:
        self._env = env
        self._spec = spec
        self._history = history
        self._injector = injector
        self._tool_server = tool_server
        self._receipts: dict[str, _Receipt] = {}
        self._rpc_id = 0
        #: Actions whose last outcome was uncertain and is not verified yet.
        self._uncertain: set[str] = set()
        #: Forwarded calls still on their way to the tool server after their error came back (``lands_after_s``):
        #: the case runs on past its deadline while any is, and one the end cuts off is said (``unsettled``).
        self.landing: dict[int, Request] = {}

    def handle(self, request: Request) -> Generator[simpy.Event, Any, Reply | None]:
        if request.kind == "verify":
            return (yield from self._verify(request))
        if request.kind != "dispatch":
            return (yield from self._tool_server.handle(request))
        reply = yield from self._call(request)
        if self._injector.hit(BridgeRestart, request.action_id, request.n):
            self._history.record(BridgeRestarted(forgotten_receipts=len(self._receipts)))
            self._receipts.clear()
        return reply

    def _call(self, request: Request) -> Generator[simpy.Event, Any, Reply | None]:
        uuid, execution_id = request.idempotency_key, request.execution_id
        if self._spec.block_after_uncertain and request.action_id in self._uncertain:
            self._history.record(CallBlocked(idempotency_key=uuid, execution_id=execution_id))
            return Reply(status="blocked")
        known = self._receipts.get(uuid)
        if known is not None:
            if known.artifact != request.artifact:
                self._history.record(CallConflict(idempotency_key=uuid, execution_id=execution_id))
                return Reply(status="conflict")
            receipt = known.reply.receipt if known.reply else None
            self._history.record(
                CallReplayed(
                    idempotency_key=uuid, execution_id=execution_id, receipt_id=receipt.receipt_id if receipt else None
                )
            )
            return known.reply or Reply(status="pending")
        self._rpc_id += 1
        self._history.record(CallForwarded(idempotency_key=uuid, execution_id=execution_id, rpc_id=self._rpc_id))
        broken = self._injector.hit(BridgeConnectionError, request.action_id, request.n)
        if broken is not None and not broken.forwarded:
            return self._broken(request, forwarded=False)
        held = _Receipt(request.artifact)
        self._receipts[uuid] = held
        if broken is not None and broken.lands_after_s is not None:  # the error outruns the call it is about
            self._env.process(self._lands_later(request, held, broken.lands_after_s))
            return self._broken(request, forwarded=True)
        reply = yield from self._tool_server.handle(request)
        if reply is None:
            return None
        held.reply = reply
        if broken is not None:
            return self._broken(request, forwarded=True)
        return reply

    def _lands_later(self, request: Request, held: _Receipt, after_s: float) -> Generator[simpy.Event, Any, None]:
        """A forwarded call still on its way when the connection broke: it reaches the tool server ``after_s``
        later, and its reply is kept under its UUID as any other (while the bridge process lives)."""
        self.landing[id(request)] = request
        yield self._env.timeout(after_s)
        del self.landing[id(request)]
        reply = yield from self._tool_server.handle(request)
        if reply is not None:
            held.reply = reply

    def unsettled(self) -> list[StillInFlight]:
        """A record of each forwarded call still on its way to the tool server, as the case ends."""
        return [StillInFlight(n=r.n, action_id=r.action_id, execution_id=r.execution_id) for r in self.landing.values()]

    def _broken(self, request: Request, forwarded: bool) -> Reply:
        self._uncertain.add(request.action_id)
        self._history.record(
            ConnectionBroken(
                idempotency_key=request.idempotency_key,
                execution_id=request.execution_id,
                forwarded=forwarded,
                do_not_replay=True,
            )
        )
        return Reply(status="connection_error", do_not_replay=True)

    def _verify(self, request: Request) -> Generator[simpy.Event, Any, Reply | None]:
        """Pass a verification to the tool server; a conclusive answer lifts the block on the action."""
        answer = yield from self._tool_server.handle(request)
        if answer is not None and answer.verified not in (None, "unknown"):
            self._uncertain.discard(request.action_id)
        return answer
