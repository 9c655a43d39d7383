"""The worker: dispatches the action, and when no reply settles it, recovers by asking its policy.

The first incarnation records the action, claims it and sends it. If the reply settles the action it records
the receipt (the ordinary path). Otherwise (a timeout, a conflict, a crash) a recovering incarnation starts
after ``restart_delay_s`` and carries out the policy's commands one at a time until the policy stops, the
recovery deadline passes, or the command budget runs out. A crashed incarnation's connection is closed and
its observations are lost: the replacement knows only what the controller recorded.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import Any, assert_never

import simpy

from harness.model import validated
from harness.model.events import (
    CommandBudgetExhausted,
    CommandGiven,
    CommandRefused,
    DeadlineReached,
    LookupTimedOut,
    PolicyFailed,
    ReplyTimedOut,
    WorkerCrashed,
    WorkerReported,
    WorkerStarted,
)
from harness.policy import (
    Action,
    AttemptView,
    Command,
    ContractView,
    Escalate,
    Hold,
    LookUp,
    LookupView,
    Policy,
    Receipt,
    RecordEffect,
    RecordRejection,
    RetryNewKey,
    RetrySameAction,
    Situation,
    Stop,
    Wait,
)
from harness.scenario import Scenario
from harness.scenario.faults import CrashAwaitingReply, CrashBeforeSend
from harness.sim.auditor import Auditor
from harness.sim.controller import Controller
from harness.sim.faults import Injector
from harness.sim.history import History
from harness.sim.messages import Reply, Request
from harness.sim.transport import Transport

__all__ = ["Worker"]


class _Crashed(Exception):
    """The current worker incarnation died at a fault boundary."""


@dataclass(slots=True)
class _Connection:
    open: bool = True


class Worker:
    def __init__(
        self,
        env: simpy.Environment,
        scenario: Scenario,
        policy: Policy,
        history: History,
        controller: Controller,
        transport: Transport,
        injector: Injector,
        auditor: Auditor,
    ) -> None:
        self._env = env
        self._scenario = scenario
        self._policy = policy
        self._history = history
        self._controller = controller
        self._transport = transport
        self._injector = injector
        self._auditor = auditor
        self._action: Action | None = None
        self._incarnation = 0
        self._connection = _Connection()
        #: Every connection this worker process opened: a crash or the final report closes them all.
        self._connections: list[_Connection] = []
        #: Commands carried out across all incarnations (bounded by ``command_count_max``).
        self._commands = 0
        self._attempts: dict[str, AttemptView] = {}
        self._lookups: list[LookupView] = []
        self._dispatch_count = 0
        self._lookup_count = 0
        self._new_key_count = 0

    # -- the process --------------------------------------------------------------------------------

    def run(self) -> Generator[simpy.Event, Any, None]:
        self._start("dispatcher")
        action = self._controller.record_action(self._scenario.action_id)
        self._action = action
        settled = False
        try:
            if not self._controller.claim_if_revision(action.action_id, action.revision):
                self._controller.hold(action.action_id, "claim refused before any dispatch")
                self._report(finished=True, claimed="not dispatched")
                return
            attempt = yield from self._dispatch(action.idempotency_key)
            settled = self._settle_ordinary(attempt)
        except _Crashed:
            self._crash()
        if settled:
            return
        while True:
            yield self._env.timeout(self._scenario.worker.restart_delay_s)
            self._start("recovery")
            try:
                yield from self._recover()
                return
            except _Crashed:
                self._crash()

    def _start(self, role: str) -> None:
        self._incarnation += 1
        self._connection = _Connection()
        self._connections.append(self._connection)
        self._history.record(WorkerStarted(incarnation=self._incarnation, role=role))

    def _close_all(self) -> None:
        for connection in self._connections:
            connection.open = False

    def _crash(self) -> None:
        self._close_all()
        # What the dead incarnation saw is gone; the attempts themselves are in the controller's ledger.
        self._attempts = {
            eid: AttemptView(
                execution_id=eid,
                idempotency_key=a.idempotency_key,
                sent=None,
                sent_at_s=None,
                observation="unknown",
            )
            for eid, a in self._attempts.items()
        }
        self._lookups = []
        self._history.record(WorkerCrashed(incarnation=self._incarnation))

    def _report(self, finished: bool, claimed: str) -> None:
        """The worker's own account of how it ended: kept for comparison, never read by the checker's verdicts."""
        self._close_all()
        self._history.record(WorkerReported(finished=finished, claimed=claimed, incarnation=self._incarnation))

    def _settle_ordinary(self, attempt: AttemptView) -> bool:
        """The ordinary path: a reply with a terminal receipt is recorded and the worker is done."""
        assert self._action is not None
        if attempt.observation != "response" or attempt.receipt is None:
            return False
        self._controller.record_effect(self._action.action_id, attempt.receipt, guarded=True)
        self._report(finished=True, claimed="completed" if attempt.receipt.status == "applied" else "rejected")
        return True

    # -- protocol steps -----------------------------------------------------------------------------

    def _dispatch(self, key: str) -> Generator[simpy.Event, Any, AttemptView]:
        action = self._action
        assert action is not None
        self._dispatch_count += 1
        n = self._dispatch_count
        execution_id = f"{action.action_id}-x{n}"
        self._controller.begin_attempt(action.action_id, execution_id, key)
        self._attempts[execution_id] = AttemptView(
            execution_id=execution_id, idempotency_key=key, sent=False, sent_at_s=None, observation="in_flight"
        )
        if self._injector.hit(CrashBeforeSend, action.action_id, n):
            raise _Crashed
        self._auditor.dispatched(action.action_id, n)
        reply_event = self._env.event()
        connection = self._connection
        request = Request(
            kind="dispatch",
            action_id=action.action_id,
            n=n,
            idempotency_key=key,
            execution_id=execution_id,
            artifact=action.artifact,
            approval_token=self._scenario.approval.token.get_secret_value(),
        )

        def deliver(reply: Reply) -> bool:
            if not connection.open:
                return False
            previous = self._attempts[execution_id]
            self._attempts[execution_id] = previous.model_copy(
                update={
                    "observation": "response",
                    "late": previous.observation == "timeout",
                    "response_status": reply.status,
                    "receipt": reply.receipt,
                }
            )
            if not reply_event.triggered:
                reply_event.succeed(reply)
            return True

        self._transport.send(request, deliver)
        self._attempts[execution_id] = self._attempts[execution_id].model_copy(
            update={"sent": True, "sent_at_s": self._history.now_s()}
        )
        if self._injector.hit(CrashAwaitingReply, action.action_id, n):
            raise _Crashed
        timeout = self._env.timeout(self._scenario.worker.timeout_s)
        yield reply_event | timeout
        if not reply_event.triggered:
            self._attempts[execution_id] = self._attempts[execution_id].model_copy(update={"observation": "timeout"})
            self._history.record(ReplyTimedOut(execution_id=execution_id, n=n))
        return self._attempts[execution_id]

    def _lookup(self) -> Generator[simpy.Event, Any, None]:
        action = self._action
        assert action is not None
        self._lookup_count += 1
        self._auditor.looked_up()
        answered = self._env.event()
        connection = self._connection
        expired = [False]

        def deliver(reply: Reply) -> bool:
            if not connection.open or answered.triggered or expired[0]:
                return False
            answered.succeed(reply)
            return True

        self._transport.send(
            Request(
                kind="lookup", action_id=action.action_id, n=self._lookup_count, idempotency_key=action.idempotency_key
            ),
            deliver,
        )
        timeout = self._env.timeout(self._scenario.worker.lookup_timeout_s)
        yield answered | timeout
        if answered.triggered:
            reply = answered.value
            assert isinstance(reply, Reply)
            self._lookups.append(
                LookupView(at_s=self._history.now_s(), effect=reply.effect or "unknown", receipt=reply.receipt)
            )
        else:
            expired[0] = True
            self._history.record(LookupTimedOut(n=self._lookup_count))
            self._lookups.append(LookupView(at_s=self._history.now_s(), effect="unknown"))

    # -- recovery -----------------------------------------------------------------------------------

    def _situation(self) -> Situation:
        action = self._action
        assert action is not None
        record = self._controller.actions[action.action_id]
        # The controller's ledger lists every attempt; this incarnation adds what it saw of them.
        attempts = tuple(
            self._attempts.get(eid)
            or AttemptView(execution_id=eid, idempotency_key="", sent=None, sent_at_s=None, observation="unknown")
            for eid in record.execution_ids
        )
        contract = self._scenario.destination
        return Situation(
            now_s=self._history.now_s(),
            deadline_s=self._scenario.recovery_deadline_s,
            action=action,
            attempts=attempts,
            lookups=tuple(self._lookups),
            task=self._controller.task_view(),
            approval=self._controller.approval_view(action),
            contract=ContractView(dedupe_window_s=contract.dedupe_window_s, on_conflict=contract.on_conflict),
            recorded=record.status,
            escalated=record.escalated,
        )

    def _recover(self) -> Generator[simpy.Event, Any, None]:
        bounds = self._scenario.worker
        while self._commands < bounds.command_count_max:
            if self._env.now >= self._scenario.recovery_deadline_s:
                self._history.record(DeadlineReached())
                self._report(finished=False, claimed=self._claim())
                return
            situation = self._situation()
            self._commands += 1
            try:
                command = validated(self._policy.decide(situation))
            except Exception as exc:  # a policy bug is a recovery failure, recorded, not a harness crash
                self._history.record(PolicyFailed(error=f"{type(exc).__name__}: {exc}"[:300]))
                self._report(finished=False, claimed="policy error")
                return
            self._history.record(CommandGiven(command=command))
            if isinstance(command, Stop):
                self._report(finished=True, claimed=self._claim())
                return
            yield from self._execute(command)
        self._history.record(CommandBudgetExhausted(count_max=bounds.command_count_max))
        self._report(finished=False, claimed=self._claim())

    def _claim(self) -> str:
        assert self._action is not None
        record = self._controller.actions[self._action.action_id]
        if record.status == "applied":
            return "completed"
        if record.status is not None:
            return str(record.status)
        return "escalated" if record.escalated else "gave up"

    def _receipt(self, receipt_id: str, status: str) -> Receipt | None:
        for attempt in self._attempts.values():
            if attempt.receipt is not None and attempt.receipt.receipt_id == receipt_id:
                return attempt.receipt if attempt.receipt.status == status else None
        for lookup in self._lookups:
            if lookup.receipt is not None and lookup.receipt.receipt_id == receipt_id:
                return lookup.receipt if lookup.receipt.status == status else None
        return None

    def _execute(self, command: Command) -> Generator[simpy.Event, Any, None]:
        action = self._action
        assert action is not None
        match command:
            case LookUp():
                yield from self._lookup()
            case RetrySameAction() | RetryNewKey():
                if command.claim and not self._controller.claim_if_revision(action.action_id, action.revision):
                    return
                if isinstance(command, RetryNewKey):
                    self._new_key_count += 1
                    key = f"{action.idempotency_key}.k{self._new_key_count}"
                else:
                    key = action.idempotency_key
                yield from self._dispatch(key)
            case RecordEffect() | RecordRejection():
                status = "applied" if isinstance(command, RecordEffect) else "rejected"
                receipt = self._receipt(command.receipt_id, status)
                if receipt is None:
                    self._history.record(CommandRefused(reason=f"no observed {status} receipt {command.receipt_id}"))
                    return
                self._controller.record_effect(action.action_id, receipt, guarded=command.guarded)
            case Hold():
                self._controller.hold(action.action_id, command.reason)
            case Wait():
                yield self._env.timeout(min(command.duration_s, self._scenario.worker.wait_max_s))
            case Escalate():
                self._controller.escalate(action.action_id, self._scenario.owner, command.reason)
            case Stop():
                return  # handled by the recovery loop before a command is carried out
            case _:
                assert_never(command)
