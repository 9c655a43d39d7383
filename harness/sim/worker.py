"""The worker of one action: dispatches it, and when no reply settles it, recovers it by asking its policy.

The dispatcher records the action, claims it and sends it. If the reply settles the action it records the
receipt (the ordinary path). If the claim is refused because an older action holds the target, the policy
takes over at once; any other refusal means nothing was ever sent, and the dispatcher records the action as
not applied. Otherwise (a timeout, a conflict, a crash) ``recoverers`` recovering incarnations start side by
side after ``restart_delay_s``, and each carries out the policy's commands one at a time until the policy
stops, the recovery deadline passes, or the action's command budget runs out. A crashed incarnation's
connection is closed and its observations are lost: its replacement knows only what the controller recorded.
"""

from __future__ import annotations

import functools
import os
import sysconfig
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any, Literal, assert_never

import simpy
from pydantic import ValidationError

from harness.limits import PLACE_MAX, cut
from harness.model import Artifact, validated
from harness.model.base import Frozen
from harness.model.events import (
    CommandBudgetExhausted,
    CommandGiven,
    CommandRefused,
    DeadlineReached,
    LookupTimedOut,
    PolicyFailed,
    ReplyTimedOut,
    WaitCapped,
    WorkerCrashed,
    WorkerReported,
    WorkerStarted,
)
from harness.policy import (
    Action,
    AttemptView,
    Command,
    CommandResult,
    ContractView,
    Escalate,
    FollowJob,
    Hold,
    LookUp,
    LookupView,
    PatienceView,
    Policy,
    Receipt,
    RecordAbsent,
    RecordEffect,
    RecordRejection,
    ResendCurrentArguments,
    RetryNewKey,
    RetrySameAction,
    Situation,
    Stop,
    VerifyOutcome,
    Wait,
)
from harness.scenario import Scenario
from harness.scenario.faults import CrashAwaitingReply, CrashBeforeSend
from harness.sim.auditor import Auditor
from harness.sim.controller import HELD_TARGET, Controller
from harness.sim.faults import Injector
from harness.sim.history import History
from harness.sim.kernel import first_of
from harness.sim.messages import Reply, Request
from harness.sim.transport import Transport

__all__ = ["READ_ONLY_BY", "Worker"]


class _Crashed(Exception):
    """The current worker incarnation died at a fault boundary."""


def _kinds(*commands: type[Frozen]) -> frozenset[str]:
    return frozenset(str(c.model_fields["kind"].default) for c in commands)


#: The worker's settings it reads only while carrying out certain commands, by the kinds of those commands (the
#: branches of ``Worker._execute`` that read them): a run that carried out none of them never read the setting,
#: and runs the same whatever its value (exploration judges such a schedule from the smaller run's,
#: ``harness.sim.Reach.reads``). Every other setting is taken to be read by every run.
READ_ONLY_BY: dict[str, frozenset[str]] = {
    "retry_send_s": _kinds(RetrySameAction, RetryNewKey, ResendCurrentArguments),
    "ledger_write_s": _kinds(RecordEffect, RecordRejection, RecordAbsent),
}


@dataclass(slots=True)
class _Incarnation:
    """One worker process: its connections and what it observed. A crash loses all of it.

    After a timeout the same process goes on recovering (a new incarnation number in the history, the same
    observations: a late reply to its first request still reaches it); after a crash a new process starts
    knowing only what the controller recorded.
    """

    number: int
    started_at_s: float
    open: bool = True
    attempts: dict[str, AttemptView] = field(default_factory=dict)
    lookups: list[LookupView] = field(default_factory=list)
    last: CommandResult | None = None
    refusals: list[CommandResult] = field(default_factory=list)
    #: Every attempt in the controller's ledger as this incarnation sees it, in the ledger's order, extended
    #: as the ledger grows and updated as its own attempts change: a Situation copies it instead of rebuilding
    #: it, so a case's decisions cost time linear in its attempts, not quadratic.
    seen: list[AttemptView] = field(default_factory=list)
    #: Where each of this incarnation's own attempts sits in ``seen``.
    slots: dict[str, int] = field(default_factory=dict)
    #: The places in ``seen`` of the attempts whose reply brought a receipt.
    with_receipt: set[int] = field(default_factory=set)
    #: The receipts its reads brought, first of each, in the order they came.
    read_receipts: dict[str, Receipt] = field(default_factory=dict)

    def see(self, attempt: AttemptView) -> AttemptView:
        """Note what this incarnation now knows of one of its own attempts."""
        self.attempts[attempt.execution_id] = attempt
        slot = self.slots.get(attempt.execution_id)
        if slot is not None:
            self.seen[slot] = attempt
            self._note_receipt(slot, attempt)
        return attempt

    def place(self, attempt: AttemptView, own: bool) -> None:
        """Append the next attempt of the controller's ledger to ``seen``."""
        slot = len(self.seen)
        self.seen.append(attempt)
        if own:
            self.slots[attempt.execution_id] = slot
            self._note_receipt(slot, attempt)

    def read(self, lookup: LookupView) -> None:
        self.lookups.append(lookup)
        if lookup.receipt is not None:
            self.read_receipts.setdefault(lookup.receipt.receipt_id, lookup.receipt)

    def receipts(self) -> tuple[Receipt, ...]:
        """What ``Situation.observed_receipts`` derives from the attempts and reads, without scanning them:
        the attempts' receipts in the ledger's order, then the reads', each receipt once."""
        if not self.with_receipt and not self.read_receipts:
            return ()
        found: dict[str, Receipt] = {}
        for slot in sorted(self.with_receipt):
            receipt = self.seen[slot].receipt
            assert receipt is not None
            found.setdefault(receipt.receipt_id, receipt)
        for receipt in self.read_receipts.values():
            found.setdefault(receipt.receipt_id, receipt)
        return tuple(found.values())

    def _note_receipt(self, slot: int, attempt: AttemptView) -> None:
        if attempt.receipt is None:
            self.with_receipt.discard(slot)
        else:
            self.with_receipt.add(slot)

    def result(self, kind: str, refused: str | None = None) -> None:
        """Note what became of a command: carried out, or refused with the reason."""
        self.last = CommandResult.trusted(kind=kind, refused=refused is not None, reason=refused)
        if refused is not None:
            self.refusals.append(self.last)


def _unanswered(
    execution_id: str,
    key: str,
    recorded_at_s: float,
    sent: bool | None,
    observation: Literal["in_flight", "unknown"],
) -> AttemptView:
    """An attempt no reply has reached: one being sent by this incarnation, or one another made (``unknown``)."""
    return AttemptView.trusted(
        execution_id=execution_id,
        idempotency_key=key,
        recorded_at_s=recorded_at_s,
        sent=sent,
        sent_at_s=None,
        observation=observation,
        late=False,
        response_status=None,
        replied_at_s=None,
        receipt=None,
        job_id=None,
        do_not_replay=False,
    )


def _policy_error(exc: Exception, policy: object) -> str:
    """What a policy raised, as its record keeps it, and where (``_raised_at``): pydantic's several lines (a
    Situation changed in place, a command built with a wrong value) as one, naming the model, the field and what
    is wrong."""
    if isinstance(exc, ValidationError) and exc.error_count():
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        text = f"{exc.title}: field '{where}': {first['msg']}" if where else f"{exc.title}: {first['msg']}"
        if first["type"] == "frozen_instance":
            text += f" (a {exc.title} is read-only: model_copy(update={{...}}) gives a changed copy)"
        more = exc.error_count() - 1
        return cut(f"{type(exc).__name__}: {text}" + (f" (+{more} more)" if more else "")) + _raised_at(exc, policy)
    return cut(f"{type(exc).__name__}: {exc}") + _raised_at(exc, policy)


def _raised_at(exc: BaseException, policy: object) -> str:
    """Where the policy's code raised ``exc``: `` (at line N of MODULE, in FUNCTION)``, the innermost line of the
    policy's own package (the one its ``decide`` is defined in: its call into a library, not the library's line),
    else the innermost line of other code of the user's (neither the harness's, nor the standard library's, nor an
    installed package's); nothing when there is none (an error the harness raised about what the policy returned,
    or one raised in a library the policy was given as its ``decide``). Code made at run time (a dataclass's
    generated methods) has no line of its own and is passed over. Named by module, not by file, so that the record
    is the same wherever the project lies."""
    own = _package_of(getattr(policy, "decide", None))  # a class policy's static decide, a namespace's function
    mine: list[tuple[str, int, str]] = []
    users: list[tuple[str, int, str]] = []
    frame = exc.__traceback__
    while frame is not None:
        code = frame.tb_frame.f_code
        module = frame.tb_frame.f_globals.get("__name__")
        file = code.co_filename
        if isinstance(module, str) and not file.startswith(("<", *_library_folders())):
            package = module.partition(".")[0]
            place = (module, frame.tb_lineno, code.co_name)
            if package == own:
                mine.append(place)
            elif package != "harness":
                users.append(place)
        frame = frame.tb_next
    if not (mine or users):
        return ""
    module, line, function = (mine or users)[-1]
    return cut(f" (at line {line} of {module}, in {function})", PLACE_MAX)


def _package_of(thing: object) -> str | None:
    """The top-level package of the module ``thing`` (a function, a class) was defined in, if it says as text."""
    module = getattr(thing, "__module__", None)
    return module.partition(".")[0] or None if isinstance(module, str) else None


@functools.cache
def _library_folders() -> tuple[str, ...]:
    """The folders of the standard library and of installed packages: code there is no policy author's."""
    paths = sysconfig.get_paths()
    folders = {paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib") if key in paths}
    return tuple(sorted(os.path.join(folder, "") for folder in folders))


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
        action_id: str,
    ) -> None:
        self._env = env
        self._scenario = scenario
        self._policy = policy
        self._history = history
        self._controller = controller
        self._transport = transport
        self._injector = injector
        self._auditor = auditor
        self._action_id = action_id
        self._action: Action | None = None
        #: How many incarnations this worker has started: the next one is numbered one more.
        self._started = 0
        #: Commands carried out across all incarnations (bounded by ``command_count_max``).
        self._commands = 0
        self._dispatch_count = 0
        self._lookup_count = 0
        self._new_key_count = 0
        self._contract: ContractView | None = None
        # How long this worker waits for each kind of answer, as _dispatch and _read wait: told to its policy too.
        worker, connector = scenario.worker, scenario.connector
        self._patience = PatienceView.trusted(
            reply_s=worker.timeout_s,
            read_s=worker.lookup_timeout_s,
            follow_s=worker.lookup_timeout_s + (connector.wait_s if connector is not None else 0.0),
            wait_max_s=worker.wait_max_s,
        )

    @property
    def action(self) -> Action:
        assert self._action is not None, "the action is recorded when the worker starts"
        return self._action

    # -- the process --------------------------------------------------------------------------------

    def run(self, start_at_s: float) -> Generator[simpy.Event, Any, None]:
        if start_at_s > 0:
            yield self._env.timeout(start_at_s)
        me = self._start("dispatcher")
        self._action = self._controller.record_action(self._action_id)
        action = self._action
        refused = self._controller.claim_if_revision(action.action_id, action.revision)
        if refused is not None and not refused.startswith(HELD_TARGET):
            self._controller.record_absent(action.action_id, f"never dispatched: claim refused ({refused})")
            self._report(me, finished=True, claimed="not dispatched")
            return
        if refused is not None:
            # An older action holds the target: the policy decides what to do while it waits.
            me.result("dispatch", refused=refused)
            yield from self._recover_from(me)
            return
        survivor: _Incarnation | None = me
        try:
            attempt = yield from self._dispatch(me, action.idempotency_key, action.artifact)
            if self._settle_ordinary(me, attempt):
                return
        except _Crashed:
            self._crash(me)
            survivor = None
        yield self._env.timeout(self._scenario.worker.restart_delay_s)
        # The first recoverer is the dispatcher's own process going on, unless it crashed; the others are new.
        if self._scenario.worker.recoverers == 1:
            # The usual case, carried on in this process: a process of its own and a wait for all of them cost
            # three more simpy events (its start, its end, the wait), for the same records. A lost_response case
            # steps 17 events without them (benchmarks/skeleton.py steps 18, its run's stop event included).
            yield from self._recovery_chain(survivor)
            return
        chains = [
            self._env.process(self._recovery_chain(survivor if i == 0 else None))
            for i in range(self._scenario.worker.recoverers)
        ]
        yield self._env.all_of(chains)

    def _recovery_chain(self, going_on: _Incarnation | None) -> Generator[simpy.Event, Any, None]:
        """One recovering worker, replaced by a new process after each crash until it ends."""
        while True:
            me = self._start("recovery", going_on)
            going_on = None
            try:
                yield from self._recover(me)
                return
            except _Crashed:
                self._crash(me)
            yield self._env.timeout(self._scenario.worker.restart_delay_s)

    def _recover_from(self, me: _Incarnation) -> Generator[simpy.Event, Any, None]:
        """The dispatcher itself turned recoverer: replaced after a crash like any recovering worker."""
        try:
            yield from self._recover(me)
            return
        except _Crashed:
            self._crash(me)
        yield self._env.timeout(self._scenario.worker.restart_delay_s)
        yield from self._recovery_chain(None)

    def _start(self, role: str, going_on: _Incarnation | None = None) -> _Incarnation:
        """A new incarnation: the process ``going_on`` under a new number, or a new process."""
        self._started += 1
        number = self._started
        if going_on is not None:
            going_on.number = number
            me = going_on
        else:
            me = _Incarnation(number=number, started_at_s=self._history.now_s())
        self._history.record(WorkerStarted(action_id=self._action_id, incarnation=me.number, role=role))
        return me

    def _crash(self, me: _Incarnation) -> None:
        # What the dead incarnation saw is gone; its attempts stay in the controller's ledger.
        me.open = False
        self._history.record(WorkerCrashed(action_id=self._action_id, incarnation=me.number))

    def _report(self, me: _Incarnation, finished: bool, claimed: str) -> None:
        """The worker's own account of how it ended: kept for comparison, never read by the checker's verdicts."""
        me.open = False  # the process ends: its connections close
        self._history.record(
            WorkerReported(action_id=self._action_id, finished=finished, claimed=claimed, incarnation=me.number)
        )

    def _settle_ordinary(self, me: _Incarnation, attempt: AttemptView) -> bool:
        """The ordinary path: a reply with a terminal receipt is recorded and the worker is done."""
        if attempt.observation != "response" or attempt.receipt is None:
            return False
        self._controller.record_effect(self.action.action_id, attempt.receipt, guarded=True)
        self._report(me, finished=True, claimed="completed" if attempt.receipt.status == "applied" else "rejected")
        return True

    # -- protocol steps -----------------------------------------------------------------------------

    def _dispatch(
        self, me: _Incarnation, key: str, artifact: Artifact, decided_at: int | None = None
    ) -> Generator[simpy.Event, Any, AttemptView]:
        """Send the action; ``decided_at``: the auditor's step of the command that decided it (none: the first)."""
        action = self.action
        self._dispatch_count += 1
        n = self._dispatch_count
        execution_id = f"{action.action_id}-x{n}"
        self._controller.begin_attempt(action.action_id, execution_id, key)
        recorded_at_s = self._history.now_s()
        me.see(_unanswered(execution_id, key, recorded_at_s, sent=False, observation="in_flight"))
        if self._injector.hit(CrashBeforeSend, action.action_id, n):
            raise _Crashed
        self._auditor.dispatched(action.action_id, n, key, artifact, decided_at)
        reply_event = self._env.event()
        request = Request(
            kind="dispatch",
            action_id=action.action_id,
            n=n,
            idempotency_key=key,
            execution_id=execution_id,
            artifact=artifact,
            budget_s=self._scenario.connector.budget_s if self._scenario.connector else 0.0,
            sent_at_s=recorded_at_s,
            approval_id=action.approval_id,
            approval_token=self._scenario.approval.token.get_secret_value(),
        )

        def deliver(reply: Reply) -> bool:
            if not me.open:
                return False
            previous = me.attempts[execution_id]
            me.see(
                previous.replaced(
                    observation="response",
                    late=previous.observation == "timeout",
                    response_status=reply.status,
                    replied_at_s=self._history.now_s(),
                    receipt=reply.receipt,
                    job_id=reply.job_id,
                    do_not_replay=reply.do_not_replay,
                )
            )
            if not reply_event.triggered:
                reply_event.succeed()
            return True

        self._transport.send(request, deliver)
        me.see(me.attempts[execution_id].replaced(sent=True, sent_at_s=recorded_at_s))
        if self._injector.hit(CrashAwaitingReply, action.action_id, n):
            raise _Crashed
        timeout = self._env.timeout(self._patience.reply_s)
        yield first_of(self._env, reply_event, timeout)
        if not reply_event.triggered:
            me.see(me.attempts[execution_id].replaced(observation="timeout"))
            self._history.record(ReplyTimedOut(execution_id=execution_id, n=n))
        return me.attempts[execution_id]

    def _read(
        self, me: _Incarnation, source: Literal["lookup", "follow_job", "verify"]
    ) -> Generator[simpy.Event, Any, None]:
        """A read of the action's outcome: the target's durable result, the connector's job, or a verification
        of the original expectation through the bridge. Never a mutation."""
        action = self.action
        self._lookup_count += 1
        n = self._lookup_count
        self._auditor.read()
        answered = self._env.event()
        expired = [False]

        def deliver(reply: Reply) -> bool:
            if not me.open or answered.triggered or expired[0]:
                return False
            answered.succeed(reply)
            return True

        expectation = action.artifact if source == "verify" else None
        # A read asks about the action's current operation: after a retry under a new key, that one.
        request = Request(
            kind=source, action_id=action.action_id, n=n, idempotency_key=self._latest_key(), artifact=expectation
        )
        sent_at_s = self._history.now_s()
        self._transport.send(request, deliver)
        # A job follow waits at the connector up to its wait: the caller allows for that on top of its read timeout.
        patience_s = self._patience.follow_s if source == "follow_job" else self._patience.read_s
        yield first_of(self._env, answered, self._env.timeout(patience_s))
        if answered.triggered:
            reply = answered.value
            assert isinstance(reply, Reply)
            me.read(
                LookupView.trusted(
                    at_s=self._history.now_s(),
                    effect=reply.effect or "unknown",
                    receipt=reply.receipt,
                    source=source,
                    sent_at_s=sent_at_s,
                    job_id=reply.job_id,
                    verified=reply.verified,
                )
            )
        else:
            expired[0] = True
            self._history.record(LookupTimedOut(action_id=self._action_id, n=n))
            me.read(
                LookupView.trusted(
                    at_s=self._history.now_s(),
                    effect="unknown",
                    receipt=None,
                    source=source,
                    sent_at_s=sent_at_s,
                    job_id=None,
                    verified="unknown" if source == "verify" else None,
                )
            )

    # -- recovery -----------------------------------------------------------------------------------

    def _situation(self, me: _Incarnation) -> Situation:
        action = self.action
        record = self._controller.actions[action.action_id]
        # The controller's ledger lists every attempt; this incarnation adds what it saw of them. Only attempts
        # recorded since it last looked are new here.
        for eid in record.execution_ids[len(me.seen) :]:
            if eid in me.attempts:
                me.place(me.attempts[eid], own=True)
            else:
                seen_by_another = _unanswered(eid, record.keys[eid], record.recorded_at_s[eid], None, "unknown")
                me.place(seen_by_another, own=False)
        attempts = tuple(me.seen)
        # Built without validation: every field is already a checked value of the right type, and a decision
        # point is the hot path of a sweep (validating the Situation was a tenth of a case's time).
        situation = Situation.trusted(
            now_s=self._history.now_s(),
            deadline_s=self._scenario.recovery_deadline_s,
            started_at_s=me.started_at_s,
            action=action,
            attempts=attempts,
            lookups=tuple(me.lookups),
            task=self._controller.task_view(),
            approval=self._controller.approval_view(action),
            contract=self._contract_view(),
            recorded=record.status,
            escalated=record.escalated,
            held=record.held,
            last=me.last,
            refusals=tuple(me.refusals),
            commands_left=self._scenario.worker.command_count_max - self._commands,
            patience=self._patience,
        )
        # What observed_receipts() derives, kept as the case ran (written into the private slot directly: the
        # record is not yet visible to anyone, and pydantic's attribute path costs more than the rest).
        private = situation.__pydantic_private__
        assert private is not None
        private["_receipts"] = me.receipts()
        return situation

    def _contract_view(self) -> ContractView:
        """The destination's contract as the policy sees it: the same for the whole case, built once."""
        if self._contract is None:
            contract = self._scenario.destination
            # Every field from the validated scenario, in order: built without validating it again.
            self._contract = ContractView.trusted(
                dedupe=contract.dedupe,
                dedupe_window_s=contract.dedupe_window_s,
                on_conflict=contract.on_conflict,
                on_in_flight=contract.on_in_flight,
                request_validity_s=contract.request_validity_s,
                fencing=contract.fencing,
                lookup_lag_s=contract.lookup_lag_s,
                via="connector" if self._scenario.connector else "bridge" if self._scenario.bridge else "direct",
            )
        return self._contract

    def _recover(self, me: _Incarnation) -> Generator[simpy.Event, Any, None]:
        bounds = self._scenario.worker
        while self._commands < bounds.command_count_max:
            if self._env.now >= self._scenario.recovery_deadline_s:
                self._history.record(DeadlineReached(action_id=self._action_id))
                self._report(me, finished=False, claimed=self._claim())
                return
            situation = self._situation(me)
            self._commands += 1
            try:
                command = validated(self._policy.decide(situation))
            except Exception as exc:  # a policy bug is a recovery failure, recorded, not a harness crash
                self._history.record(PolicyFailed(action_id=self._action_id, error=_policy_error(exc, self._policy)))
                self._report(me, finished=False, claimed="policy error")
                return
            self._history.record(CommandGiven(action_id=self._action_id, command=command, incarnation=me.number))
            if isinstance(command, Stop):
                self._report(me, finished=True, claimed=self._claim())
                return
            yield from self._execute(me, command)
        self._history.record(CommandBudgetExhausted(action_id=self._action_id, count_max=bounds.command_count_max))
        self._report(me, finished=False, claimed=self._claim())

    def _claim(self) -> str:
        record = self._controller.actions[self.action.action_id]
        if record.status == "applied":
            return "completed"
        if record.status is not None:
            return str(record.status)
        return "escalated" if record.escalated else "gave up"

    def _receipt(self, me: _Incarnation, receipt_id: str, status: str) -> Receipt | None:
        seen = [a.receipt for a in me.attempts.values()] + [lookup.receipt for lookup in me.lookups]
        for receipt in seen:
            if receipt is not None and receipt.receipt_id == receipt_id:
                return receipt if receipt.status == status else None
        return None

    def _latest_key(self) -> str:
        """The key of the action's latest attempt: its current operation (the original key until a retry under a
        new key starts another one)."""
        keys = self._controller.actions[self.action.action_id].keys
        return keys[next(reversed(keys))] if keys else self.action.idempotency_key

    def _ledger_round_trip(self) -> Generator[simpy.Event, Any, None]:
        """A write to the controller's ledger takes this long to land: time for another worker to race it (read
        only for the commands ``READ_ONLY_BY`` names)."""
        if self._scenario.worker.ledger_write_s > 0:
            yield self._env.timeout(self._scenario.worker.ledger_write_s)

    def _execute(self, me: _Incarnation, command: Command) -> Generator[simpy.Event, Any, None]:
        action = self.action
        match command:
            case LookUp():
                yield from self._read(me, "lookup")
                me.result(command.kind)
            case FollowJob():
                yield from self._read(me, "follow_job")
                me.result(command.kind)
            case VerifyOutcome():
                yield from self._read(me, "verify")
                me.result(command.kind)
            case RetrySameAction() | RetryNewKey() | ResendCurrentArguments():
                # The ledger's attempts as the decision saw them: the claim is conditional on them too.
                seen = len(self._controller.actions[action.action_id].execution_ids)
                decided_at = self._auditor.decided_dispatch(action.action_id)
                # Decided now, on its way later: the claim is made then (read only here: READ_ONLY_BY).
                if self._scenario.worker.retry_send_s > 0:
                    yield self._env.timeout(self._scenario.worker.retry_send_s)
                refused = (
                    self._controller.claim_if_revision(action.action_id, action.revision, seen, command.send_by_s)
                    if command.claim
                    else None
                )
                if refused is not None:
                    me.result(command.kind, refused=f"claim refused: {refused}")
                    return
                key, artifact = self._latest_key(), action.artifact
                if isinstance(command, RetryNewKey):
                    self._new_key_count += 1
                    key = f"{action.idempotency_key}.k{self._new_key_count}"
                elif isinstance(command, ResendCurrentArguments):
                    key, artifact = action.idempotency_key, self._controller.task.artifact
                me.result(command.kind)
                yield from self._dispatch(me, key, artifact, decided_at)
            case RecordEffect() | RecordRejection():
                yield from self._ledger_round_trip()
                status = "applied" if isinstance(command, RecordEffect) else "rejected"
                receipt = self._receipt(me, command.receipt_id, status)
                if receipt is None:
                    reason = f"no observed {status} receipt {command.receipt_id}"
                    self._history.record(CommandRefused(action_id=self._action_id, reason=reason))
                    me.result(command.kind, refused=reason)
                    return
                self._controller.record_effect(action.action_id, receipt, guarded=command.guarded)
                me.result(command.kind)
            case RecordAbsent():
                yield from self._ledger_round_trip()
                self._controller.record_absent(action.action_id, command.reason)
                me.result(command.kind)
            case Hold():
                self._controller.hold_dispatch(action.action_id, command.reason)
                me.result(command.kind)
            case Wait():
                waited_s = min(command.duration_s, self._patience.wait_max_s)
                if waited_s < command.duration_s:
                    self._history.record(
                        WaitCapped(action_id=self._action_id, asked_s=command.duration_s, waited_s=waited_s)
                    )
                yield self._env.timeout(waited_s)
                me.result(command.kind)
            case Escalate():
                self._controller.escalate(action.action_id, self._scenario.owner, command.reason)
                me.result(command.kind)
            case Stop():
                return  # handled by the recovery loop before a command is carried out
            case _:
                assert_never(command)
