"""Every history the simulator writes is internally consistent: the evidence the checker judges must say what
happened, field by field, or a verdict built on it proves nothing.

The rules below hold for any world, not for a named scenario: each record's values have its declared types;
what the destination, connector or bridge did names a request the caller sent; a conflict names what the
ledger held; a revocation names the revision that replaced it; versions count ledger writes. They are checked
on every case of the shipped grid (every policy, every scenario, three seeds) and on the buggy variants in
``tests/buggy_policies.py``, which reach records the safe policies never cause (repeated and conflicting
writes, unguarded completions). Mutation testing of harness/sim found these fields unchecked.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections import Counter
from collections.abc import Iterator, Sequence
from functools import cache

import pytest
from buggy_policies import CORPUS, HIDDEN
from pydantic import BaseModel

from harness.explore.schedule import OPERATOR_EVENTS
from harness.model.events import (
    AbsenceRecorded,
    Accepted,
    ActionRecorded,
    Applied,
    ApprovalExpired,
    ApprovalGranted,
    ApprovalRevoked,
    CallConflict,
    CallForwarded,
    CallReplayed,
    CancelRequested,
    ClaimDecided,
    Conflicted,
    ConnectionBroken,
    DestinationRestarted,
    DispatchHeld,
    DispatchSent,
    EffectRecorded,
    Event,
    InProgress,
    JobConflict,
    JobStarted,
    LookupAnswered,
    OutcomeVerified,
    Received,
    RecordConflict,
    RecordRepeated,
    Rejected,
    RejectionRecorded,
    ReplayedByDestination,
    RequestRefused,
    TaskCompleted,
    TaskNotCompleted,
    TaskRevisionRecorded,
)
from harness.policy import (
    Command,
    RecordEffect,
    ResendCurrentArguments,
    Situation,
    builtin_policy_names,
)
from harness.run.plan import Case, load_grid
from harness.scenario import Scenario, list_scenarios
from harness.sim import simulate

#: Records that answer a dispatch, at the destination or at an intermediary: each names the request it answers.
ANSWERS = (
    Received,
    Accepted,
    Applied,
    Rejected,
    ReplayedByDestination,
    Conflicted,
    InProgress,
    RequestRefused,
    JobStarted,
    JobConflict,
    CallForwarded,
    CallReplayed,
    CallConflict,
    ConnectionBroken,
)


def inconsistencies(scenario: Scenario, history: Sequence[Event]) -> Iterator[str]:
    """Every way ``history`` contradicts itself or the world it was simulated in, as a line each."""
    sent: set[tuple[str, str]] = set()  # (key, execution ID) of every dispatch sent so far
    receipts: dict[str, str] = {}  # receipt ID -> key, for every effect or rejection so far
    applied: set[str] = set()
    latest: dict[str, str] = {}  # key -> execution ID of the newest operation the destination accepted under it
    outcome: dict[str, str | None] = {}  # execution ID of an operation -> its receipt (None: not yet applied)
    remembered: set[str] = set()  # keys accepted since the destination last restarted
    # key -> each operation under it, oldest first, as [(time, state), ...]: what a lookup reads, lag included
    operations: dict[str, list[list[tuple[float, str]]]] = {}
    by_execution: dict[str, list[tuple[float, str]]] = {}
    lag_s = scenario.destination.lookup_lag_s
    foreign = any(f.boundary == "lookup_foreign_receipt" for f in scenario.faults)
    granted: set[str] = set()
    granted_at: dict[int, str] = {}  # revision -> the approval granted for it
    revision = scenario.task.revision
    recorded: dict[str, str | None] = {}  # action -> receipt ID of its first ledger write (None: an absence)
    writes: Counter[str] = Counter()
    revoked_for: list[tuple[int, str]] = []  # (revision revoked, reason) waiting for the next revision
    for e in history:
        yield from (f"#{e.index} {type(e).__name__}: {p}" for p in _badly_typed(e))
        where = f"#{e.index} {type(e).__name__}"
        match e:
            case DispatchSent():
                sent.add((e.idempotency_key, e.execution_id))
            case Applied() | Rejected():
                receipts[e.receipt_id] = e.idempotency_key
                outcome[e.execution_id] = e.receipt_id
                by_execution[e.execution_id].append((e.at_s, e.event))
                if isinstance(e, Applied):
                    applied.add(e.receipt_id)
            case Accepted():
                by_execution[e.execution_id] = [(e.at_s, "pending")]
                operations.setdefault(e.idempotency_key, []).append(by_execution[e.execution_id])
                latest[e.idempotency_key] = e.execution_id
                outcome[e.execution_id] = None
                remembered.add(e.idempotency_key)
        if isinstance(e, ANSWERS) and (e.idempotency_key, e.execution_id) not in sent:
            yield f"{where} answers ({e.idempotency_key}, {e.execution_id}), which no dispatch sent"
        match e:
            case ReplayedByDestination() if e.receipt_id != outcome.get(latest.get(e.idempotency_key, ""), "?"):
                expected = outcome.get(latest.get(e.idempotency_key, ""), "?")
                yield f"{where} replays {e.receipt_id}; the newest operation under {e.idempotency_key} has {expected}"
            case LookupAnswered() if e.effect in ("applied", "rejected") and e.receipt_id is None:
                yield f"{where} answers {e.effect} without a receipt"
            case LookupAnswered() if e.effect in ("applied", "rejected") and e.receipt_id not in receipts:
                if not foreign:
                    yield f"{where} answers {e.effect} with {e.receipt_id}, a receipt never given"
            case LookupAnswered() if e.effect != "unknown" and not foreign:
                # The newest operation under the key that existed lookup_lag_s ago, as it stood then.
                seen = _as_of(operations.get(e.idempotency_key, []), round(e.at_s - lag_s, 6))
                if e.effect != seen:
                    yield f"{where} answers {e.effect}; {lag_s} s earlier the ledger said {seen}"
            case LookupAnswered() if e.effect not in ("applied", "rejected") and e.receipt_id is not None:
                yield f"{where} answers {e.effect} with a receipt"
            case OutcomeVerified() if e.result == "confirmed" and (
                e.receipt_id not in applied or receipts.get(str(e.receipt_id)) != e.idempotency_key
            ):
                yield f"{where} confirms {e.receipt_id}, not an effect under {e.idempotency_key}"
            case OutcomeVerified() if (
                e.receipt_id in receipts and e.receipt_id not in applied and e.result != "refuted"
            ):
                yield f"{where} says {e.result} of the rejection {e.receipt_id}"
            case OutcomeVerified() if e.result in ("absent", "unknown") and e.receipt_id is not None:
                yield f"{where} says {e.result} and names a receipt"
            case TaskRevisionRecorded():
                if e.task_id != scenario.task.task_id:
                    yield f"{where} names task {e.task_id}"
                if e.revision != revision and not (e.index == 0 or e.revision == revision + 1):
                    yield f"{where} jumps from revision {revision} to {e.revision}"
                for old, reason in revoked_for:
                    if reason.startswith("task changed") and reason != f"task changed to revision {e.revision}":
                        yield f"{where}: revision {old}'s approval was revoked as '{reason}'"
                revoked_for.clear()
                revision = e.revision
            case ApprovalGranted():
                first = e.revision == scenario.task.revision
                name = scenario.approval.approval_id if first else f"{scenario.approval.approval_id}@r{e.revision}"
                expires = scenario.approval.expires_at_s if first else None
                if (e.approval_id, e.expires_at_s) != (name, expires):
                    yield f"{where} grants {e.approval_id} until {e.expires_at_s}, not {name} until {expires}"
                granted_at[e.revision] = e.approval_id
                if e.approval_id in granted:
                    yield f"{where} grants {e.approval_id} twice"
                if e.revision != revision:
                    yield f"{where} grants revision {e.revision} while the task is at {revision}"
                granted.add(e.approval_id)
            case ApprovalRevoked():
                if e.approval_id not in granted:
                    yield f"{where} revokes {e.approval_id}, never granted"
                revoked_for.append((revision, e.reason))
            case ApprovalExpired() if e.approval_id not in granted:
                yield f"{where} expires {e.approval_id}, never granted"
            case CancelRequested() if e.task_id != scenario.task.task_id or e.revision != revision:
                yield f"{where} cancels {e.task_id} at revision {e.revision}; the task is at {revision}"
            case ActionRecorded() if e.task_id != scenario.task.task_id or e.revision != revision:
                yield f"{where} records {e.action_id} for {e.task_id} revision {e.revision} at {revision}"
            case ActionRecorded() if e.approval_id != granted_at.get(e.revision, ""):
                yield f"{where} relies on {e.approval_id!r}; revision {e.revision} has {granted_at.get(e.revision)!r}"
            case ClaimDecided() if e.ok == (e.reason is not None):
                yield f"{where}: ok={e.ok} with reason {e.reason!r}"
            case EffectRecorded() | RejectionRecorded() | AbsenceRecorded():
                writes[e.action_id] += 1
                if e.version != writes[e.action_id]:
                    yield f"{where} is version {e.version} of {e.action_id}, its write number {writes[e.action_id]}"
                recorded.setdefault(e.action_id, None if isinstance(e, AbsenceRecorded) else e.receipt_id)
            case RecordConflict() | RecordRepeated():
                if e.action_id not in recorded:
                    yield f"{where} for {e.action_id}, which holds no record"
                elif e.recorded_receipt_id != recorded[e.action_id]:
                    yield f"{where} says {e.recorded_receipt_id} is recorded; {recorded[e.action_id]} is"
                # A repeat writes the receipt already recorded; a conflict anything else (an absence included).
                same = e.receipt_id is not None and e.receipt_id == e.recorded_receipt_id
                if isinstance(e, RecordRepeated) != same:
                    yield f"{where}: {e.receipt_id} against {e.recorded_receipt_id}"
            case TaskCompleted() | TaskNotCompleted() if e.task_id != scenario.task.task_id or e.revision != revision:
                yield f"{where} for {e.task_id} revision {e.revision} at {revision}"
            case DestinationRestarted():
                kept = scenario.destination.dedupe != "process"
                if e.forgotten_keys != (0 if kept else len(remembered)):
                    yield f"{where} forgets {e.forgotten_keys} keys ({scenario.destination.dedupe}; {len(remembered)} held)"
                if not kept:
                    remembered.clear()
            case DispatchHeld() if e.action_id not in {a.action_id for a in history if isinstance(a, ActionRecorded)}:
                yield f"{where} holds {e.action_id}, never recorded"


def _as_of(operations: list[list[tuple[float, str]]], at_s: float) -> str:
    for states in reversed(operations):
        before = [state for when, state in states if when <= at_s]
        if before:
            return before[-1]
    return "absent"


@cache
def _hints(cls: type[Event]) -> dict[str, object]:
    return typing.get_type_hints(cls)


def _badly_typed(e: Event) -> Iterator[str]:
    for f in dataclasses.fields(e):
        value, hint = getattr(e, f.name), _hints(type(e))[f.name]
        if not _fits(value, hint):
            yield f"{f.name}={value!r} is not {hint}"
        elif f.name == "reason" and value == "":
            yield "an empty reason"


def _fits(value: object, hint: object) -> bool:
    origin = typing.get_origin(hint)
    if origin is typing.Literal:
        return value in typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return any(_fits(value, h) for h in typing.get_args(hint))
    if origin is typing.Annotated:
        return isinstance(value, BaseModel)
    if hint is type(None):
        return value is None
    if hint is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if isinstance(hint, type):
        return isinstance(value, hint)
    return True  # a form this check does not read (none today)


@cache
def _cases() -> tuple[Case, ...]:
    """The shipped grid at three seeds, the buggy variants at one, and every shipped case with each operator
    event exploration inserts (a change of task, a cancellation, an expiry) right after the first dispatch."""
    grid = load_grid(builtin_policy_names(), list_scenarios(), [1, 2, 3]).cases
    buggy = load_grid([f"buggy_policies:{v.policy.name}" for v in (*CORPUS, *HIDDEN)], list_scenarios(), [1]).cases
    once = load_grid(builtin_policy_names(), list_scenarios(), [1]).cases
    disturbed = [
        dataclasses.replace(case, scenario=_with_operator(case.scenario, event))
        for case in once
        for event in OPERATOR_EVENTS
    ]
    # What no policy above causes: a rejection, and arguments changed under the original key.
    rejecting = [dataclasses.replace(case, scenario=_rejecting(case.scenario)) for case in once]
    restarting = [dataclasses.replace(case, scenario=_restarting(case.scenario)) for case in once]
    lagging = [dataclasses.replace(case, scenario=_lagging(case.scenario)) for case in once]
    unapproved = [dataclasses.replace(case, scenario=_starts_after_unapproved_change(case.scenario)) for case in once]
    resending = [
        dataclasses.replace(case, policy=Resender(), scenario=_with_operator(case.scenario, OPERATOR_EVENTS[0]))
        for case in once
        if case.policy.name == "retry_same_key"
    ]
    return (*grid, *buggy, *disturbed, *rejecting, *restarting, *lagging, *unapproved, *resending)


class Resender:
    """Sends the action again under its key with the task's current arguments, refers to a receipt it never saw,
    then fails: the records a careful policy never causes."""

    name, revision = "resender", "1"

    def decide(self, situation: Situation) -> Command:
        if situation.recorded is not None or len(situation.attempts) > 2 or len(situation.refusals) > 1:
            raise RuntimeError("gave up")
        if situation.last is not None and situation.last.kind == "resend_current_arguments":
            return RecordEffect(receipt_id="never-seen")
        return ResendCurrentArguments(claim=False)


def _starts_after_unapproved_change(scenario: Scenario) -> Scenario:
    """The worker starts only after the task moved to a revision nobody approved."""
    data = scenario.model_dump()
    data["worker"]["dispatch_at_s"] = 2.0
    change = {"do": "change_task", "model": "m9", "digest": "d9", "when": {"at_s": 1.0}}
    data["operator"] = [*data["operator"], change]
    return Scenario.model_validate(data)


def _adding(data: dict[str, typing.Any], fault: dict[str, typing.Any]) -> list[dict[str, typing.Any]]:
    """The scenario's faults with ``fault`` added, unless one it declares already takes that occurrence at that
    boundary (a fault that could never fire is refused)."""

    def takes(f: dict[str, typing.Any]) -> bool:
        last = None if f.get("count", 1) is None else f.get("nth", 1) + f.get("count", 1) - 1
        return (
            f["boundary"] == fault["boundary"]
            and f.get("nth", 1) <= fault["nth"]
            and (last is None or fault["nth"] <= last)
        )

    return data["faults"] if any(takes(f) for f in data["faults"]) else [*data["faults"], fault]


def _lagging(scenario: Scenario) -> Scenario:
    """Lookups lag 20 s behind a ledger whose first operation takes 30 s to apply: reads land before the
    operation, while it is pending, and after it applied, each as the ledger stood 20 s earlier."""
    data = scenario.model_dump()
    data["destination"]["lookup_lag_s"] = 20.0
    data["faults"] = _adding(data, {"boundary": "apply_delayed", "nth": 1, "delay_s": 30.0})
    return Scenario.model_validate(data)


def _restarting(scenario: Scenario) -> Scenario:
    """The destination restarts after the first dispatch, whatever it keeps."""
    data = scenario.model_dump()
    data["faults"] = _adding(data, {"boundary": "destination_restart", "nth": 1})
    return Scenario.model_validate(data)


def _rejecting(scenario: Scenario) -> Scenario:
    data = scenario.model_dump()
    data["destination"]["reject_models"] = [scenario.task.model]
    return Scenario.model_validate(data)


def _with_operator(scenario: Scenario, event: dict[str, object]) -> Scenario:
    after = {"when": {"after": {"actor": "transport", "event": "send", "nth": 1}, "delay_s": 0.5}}
    data = scenario.model_dump()
    data["operator"] = [*data["operator"], event | after]
    return Scenario.model_validate(data)


def test_every_history_the_simulator_writes_is_consistent() -> None:
    seen: Counter[str] = Counter()
    for case in _cases():
        history = simulate(case.scenario, case.policy, case.seed).evidence.history
        seen.update(type(e).__name__ for e in history)
        problems = list(inconsistencies(case.scenario, history))
        assert not problems, f"{case.policy.name} x {case.scenario.name} seed {case.seed}: {problems[:3]}"
    # The rules were tried on the records they are about, not only on histories without them.
    for name in (
        "Rejected",
        "RejectionRecorded",
        "JobConflict",
        "CallConflict",
        "CommandRefused",
        "PolicyFailed",
        "RecordConflict",
        "RecordRepeated",
        "ApprovalRevoked",
        "ApprovalExpired",
        "CancelRequested",
        "ReplayedByDestination",
        "Conflicted",
        "InProgress",
        "OutcomeVerified",
        "DestinationRestarted",
        "AbsenceRecorded",
        "DispatchHeld",
        "TaskNotCompleted",
        "CallReplayed",
        "JobStarted",
    ):
        assert seen[name] > 0, f"no shipped case records {name}"


@pytest.mark.parametrize(
    ("change", "found"),
    [
        (lambda h: _replace(h, CancelRequested, task_id="other"), "cancels other"),
        (lambda h: _replace(h, ApprovalRevoked, _after_change, reason="task changed to revision 99"), "was revoked as"),
        (lambda h: _replace(h, AbsenceRecorded, version=7), "is version 7"),
        (lambda h: _replace(h, Conflicted, execution_id="nobody-x1"), "which no dispatch sent"),
        (lambda h: _replace(h, DispatchHeld, reason=""), "an empty reason"),
        (lambda h: _replace(h, ApprovalExpired, approval_id=None), "approval_id=None"),
    ],
)
def test_the_rules_notice_a_wrong_field(change: typing.Callable[[list[Event]], list[Event]], found: str) -> None:
    """Each rule can fail: one field changed in a real history is reported."""
    for case in _cases():
        history = list(simulate(case.scenario, case.policy, case.seed).evidence.history)
        changed = change(history)
        if changed != history:
            assert any(found in p for p in inconsistencies(case.scenario, changed)), found
            return
    pytest.fail(f"no shipped case has the record to change for: {found}")


def _after_change(e: Event) -> bool:
    return isinstance(e, ApprovalRevoked) and e.reason.startswith("task changed")


def _replace(
    history: list[Event], cls: type[Event], where: typing.Callable[[Event], bool] = lambda _: True, **changes: object
) -> list[Event]:
    """``history`` with the first record of type ``cls`` (that ``where`` accepts) changed."""
    for i, e in enumerate(history):
        if type(e) is cls and where(e):
            changed = dataclasses.replace(e, **changes)  # type: ignore[type-var]
            object.__setattr__(changed, "index", e.index)
            object.__setattr__(changed, "at_s", e.at_s)
            return [*history[:i], changed, *history[i + 1 :]]
    return history
