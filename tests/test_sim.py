"""The simulator's actors: each fault boundary, the destination's contract, the controller's guards."""

from __future__ import annotations

import sys
from collections.abc import Callable, Generator
from pathlib import Path
from typing import Any

import pytest
import simpy
from conftest import Says, shipped
from hypothesis import example, given, settings
from hypothesis import strategies as st
from simpy.events import URGENT
from test_soundness import COMPARED

from harness.check import check
from harness.model import Artifact
from harness.model.events import (
    Accepted,
    Applied,
    AttemptRecorded,
    ClaimDecided,
    CommandGiven,
    ConnectorCrashed,
    ConnectorRestarted,
    DeadlineReached,
    DestinationRestarted,
    DispatchSent,
    FaultInjected,
    InProgress,
    LookupAnswered,
    PolicyFailed,
    Received,
    ReplyReceived,
    ReplyUndeliverable,
    RequestRefused,
    StillInFlight,
    StillPending,
    WaitCapped,
    WorkerStarted,
)
from harness.policy import Command, LookUp, RecordEffect, Situation, Stop, Wait, load_policy
from harness.scenario import BOUNDARIES, DestinationSpec, FaultBase, Scenario, list_scenarios, scenario_cases
from harness.scenario.faults import ApplyDelayed, DestinationRestart, LookupForeignReceipt
from harness.sim import simulate
from harness.sim.auditor import Auditor
from harness.sim.controller import Controller
from harness.sim.destination import Destination
from harness.sim.faults import Injector
from harness.sim.history import History
from harness.sim.kernel import Kernel, first_of, run_until, settle
from harness.sim.messages import Reply, Request

#: For each boundary, the faults of a scenario that reaches it (a lookup happens only after a lost reply).
FAULTS: dict[str, list[dict[str, Any]]] = {
    "request_lost": [{"boundary": "request_lost"}],
    "request_delayed": [{"boundary": "request_delayed", "delay_s": 30.0}],
    "accepted_not_applied": [{"boundary": "accepted_not_applied"}],
    "response_lost": [{"boundary": "response_lost"}],
    "response_delayed": [{"boundary": "response_delayed", "delay_s": 7.0}],
    "crash_before_send": [{"boundary": "crash_before_send"}],
    "crash_awaiting_reply": [{"boundary": "crash_awaiting_reply"}],
    "lookup_unavailable": [{"boundary": "response_lost"}, {"boundary": "lookup_unavailable", "count": 2}],
    "apply_delayed": [{"boundary": "apply_delayed", "delay_s": 30.0}],
    "destination_restart": [{"boundary": "response_lost"}, {"boundary": "destination_restart"}],
    "lookup_foreign_receipt": [{"boundary": "response_lost"}, {"boundary": "lookup_foreign_receipt"}],
    "read_answer_delayed": [{"boundary": "response_lost"}, {"boundary": "read_answer_delayed", "delay_s": 1.0}],
    "connector_crash": [{"boundary": "connector_crash", "phase": "after_effect"}],
    "started_not_durable": [
        {"boundary": "started_not_durable"},
        {"boundary": "connector_crash", "phase": "after_effect"},
    ],
    "bridge_connection_error": [{"boundary": "bridge_connection_error"}],
    "bridge_restart": [{"boundary": "bridge_restart"}],
}
#: What a boundary needs in the path besides its faults.
NEEDS: dict[str, dict[str, Any]] = {
    "connector_crash": {"connector": {}},
    "started_not_durable": {"connector": {}},
    "bridge_connection_error": {"bridge": {}},
    "bridge_restart": {"bridge": {}},
}


def with_changes(base: Scenario, **update: Any) -> Scenario:
    """A validated copy of ``base`` with top-level fields replaced (nested dicts merged)."""
    data = base.model_dump()
    data["approval"]["token"] = base.approval.token.get_secret_value()
    for key, value in update.items():
        data[key] = {**data[key], **value} if isinstance(value, dict) and isinstance(data.get(key), dict) else value
    return Scenario.model_validate(data)


def test_the_history_reads_simpys_clock() -> None:
    """The history reads simpy's ``_now`` where ``Environment.now`` would return it (a call less per record)."""
    env = simpy.Environment()
    history = History(env)
    env.run(until=env.timeout(1.25))
    history.record(WorkerStarted(action_id="a73", incarnation=1, role="recovery"))
    assert env.now == 1.25 and history.now_s() == 1.25 and history.entries[0].at_s == 1.25


def _traced_world(
    run: Callable[[simpy.Environment], None],
    starts: list[tuple[float, list[float]]],
    urgent: list[float],
    make: Callable[[], simpy.Environment],
) -> list[tuple[float, str, int]]:
    """What a small world does under ``run``: processes woken at their times, each starting children then (whose
    first step is simpy's URGENT one, at that instant), each noting its clock and the next event id it sees; and
    URGENT events scheduled from the start at ``urgent`` times, in an environment ``make`` makes."""
    env = make()
    seen: list[tuple[float, str, int]] = []
    for k, at_s in enumerate(urgent):
        event = simpy.Event(env)
        event._ok, event._value = True, None  # type: ignore[attr-defined]
        event.callbacks.append(lambda _, n=f"u{k}": seen.append((env.now, n, -1)))  # type: ignore[union-attr]
        env.schedule(event, URGENT, at_s)

    def child(name: str) -> Generator[simpy.Event, Any, None]:
        seen.append((env.now, name, next(env._eid)))  # type: ignore[attr-defined]
        yield env.timeout(0)
        seen.append((env.now, f"{name}'", -1))

    def parent(i: int, at_s: float, children: list[float]) -> Generator[simpy.Event, Any, None]:
        yield env.timeout(at_s)
        seen.append((env.now, f"p{i}", -1))
        for j, delay in enumerate(children):
            if delay == 0:
                env.process(child(f"c{i}.{j}"))
            else:
                env.timeout(delay).callbacks.append(lambda _, n=f"t{i}.{j}": seen.append((env.now, n, -1)))

    for i, (at_s, children) in enumerate(starts):
        env.process(parent(i, at_s, children))
    run(env)
    # Where each left off: the clock, and the next event id either would draw.
    seen.append((env.now, "end", next(env._eid)))  # type: ignore[attr-defined]
    return seen


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from([0.0, 0.5, 1.0, 2.0, 2.5]),
            st.lists(st.sampled_from([0.0, 0.0, 0.5, 1.0, 1.5]), max_size=3),
        ),
        max_size=6,
    ),
    st.lists(st.sampled_from([1.0, 2.0, 2.0, 3.0]), max_size=3),
)
def test_running_to_the_deadline_without_simpys_stop_event_steps_what_simpy_steps(
    starts: list[tuple[float, list[float]]], urgent: list[float]
) -> None:
    """``run_until`` in the simulator's ``Kernel`` steps the events ``env.run(until=...)`` steps in simpy's own
    environment, in its order, and leaves the clock and the next event id where it does: events due at the
    deadline itself included, those scheduled before the run (which simpy steps before its stop) and those
    scheduled at that instant while it runs (which it leaves)."""
    assert _traced_world(lambda env: run_until(env, 2.0), starts, urgent, Kernel) == _traced_world(
        lambda env: env.run(until=2.0), starts, urgent, simpy.Environment
    )


@settings(max_examples=200, deadline=None)
@example(first_s=0.2502692674820456, deadline_s=1.4070233148541773)
@given(st.floats(0.01, 1.9), st.floats(1.95, 3.0))
def test_a_run_to_the_deadline_from_a_later_start_ends_where_simpys_does(first_s: float, deadline_s: float) -> None:
    """From a clock not at 0, simpy's stop comes at ``now + (deadline - now)``, which in floating point may miss
    the deadline by a unit in the last place: ``run_until`` stops there too, with the same events stepped."""
    starts = [(0.0, [first_s]), (deadline_s - 0.5, [0.5, 0.0])]

    def twice(run: Callable[[simpy.Environment, float], None]) -> Callable[[simpy.Environment], None]:
        return lambda env: (run(env, first_s), run(env, deadline_s), None)[-1]

    def simpys(env: simpy.Environment, at_s: float) -> None:
        env.run(until=at_s)

    assert _traced_world(twice(run_until), starts, [], Kernel) == _traced_world(
        twice(simpys), starts, [], simpy.Environment
    )


def test_running_to_a_deadline_already_past_is_refused_as_simpy_refuses_it() -> None:
    env = simpy.Environment()
    env.run(until=3.0)
    with pytest.raises(ValueError, match="must be greater than the current simulation time"):
        run_until(env, 3.0)


def _waits_traced(
    wait: Callable[[simpy.Environment, simpy.Event, simpy.Event], simpy.Event],
    plan: list[tuple[float, float, float, bool]],
    common_at: float | None,
    make: Callable[[], simpy.Environment],
) -> list[tuple[float, str, int]]:
    """What a small world does when each waiter ``i`` waits, from ``start``, on the first of an event and a timeout of
    ``patience``, through ``wait``, in an environment ``make`` makes: when each woke, which event had come, and the
    next event id then. The event is its own, succeeded at ``ends`` (0: processed before the wait begins; -1:
    succeeded as the wait begins, not yet processed), or, for a ``shared`` waiter, one event every shared waiter
    waits on (as followers of one connector job do), succeeded at ``common_at`` (None: never)."""
    env = make()
    seen: list[tuple[float, str, int]] = []

    def ender(event: simpy.Event, at_s: float) -> Generator[simpy.Event, Any, None]:
        yield env.timeout(at_s)
        event.succeed()

    common = env.event()
    if common_at is not None:
        env.process(ender(common, common_at))

    def waiter(i: int, start: float, ends: float, patience: float, shared: bool) -> Generator[simpy.Event, Any, None]:
        done = common if shared else env.event()
        if ends == 0 and not shared:
            done.succeed()
        yield env.timeout(start)
        if ends == -1 and not shared:
            done.succeed()
        elif ends > 0 and not shared:
            env.process(ender(done, ends))
        timeout = env.timeout(patience)
        yield wait(env, done, timeout)
        # The next event id, drawn: both worlds draw it at the same point, so it moves their later ids alike.
        seen.append((env.now, f"w{i} {done.processed} {timeout.processed}", next(env._eid)))  # type: ignore[attr-defined]

    for i, (start, ends, patience, shared) in enumerate(plan):
        env.process(waiter(i, start, ends, patience, shared))
    env.run()
    return seen


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from([0.0, 1.0]),
            st.sampled_from([-1.0, 0.0, 0.5, 1.0, 2.0]),
            st.sampled_from([0.0, 1.0, 2.0]),
            st.booleans(),
        ),
        max_size=5,
    ),
    st.sampled_from([None, 0.0, 1.0, 1.5]),
)
def test_waiting_for_the_first_of_two_events_steps_as_simpys_any_of_does(
    plan: list[tuple[float, float, float, bool]], common_at: float | None
) -> None:
    """``first_of`` in the simulator's ``Kernel`` wakes a waiter when ``a | b`` would in simpy's own environment, at
    the same step (the same event ids drawn by then), with the same events come: ties included (an end and a
    timeout due at one instant), an event processed before the wait began or succeeded as it began, and one event
    several waiters wait on, which may never come."""
    assert _waits_traced(first_of, plan, common_at, Kernel) == _waits_traced(
        lambda env, a, b: a | b, plan, common_at, simpy.Environment
    )


def test_settling_steps_while_busy_to_the_horizon_and_finishes_the_instant() -> None:
    """``settle`` steps on while something is under way, never past the horizon, and always finishes the instant it
    stops in: an event due then is stepped even once nothing is busy."""

    def settled(busy_until_s: float, horizon_s: float) -> list[float]:
        env = Kernel()
        stepped: list[float] = []
        for at_s in (1.0, 2.0, 2.0, 3.0, 4.0):
            env.timeout(at_s).callbacks.append(lambda _: stepped.append(env.now))  # type: ignore[union-attr]
        run_until(env, 1.5)
        settle(env, horizon_s, lambda: env.now < busy_until_s)
        return stepped

    assert settled(busy_until_s=2.5, horizon_s=10.0) == [1.0, 2.0, 2.0, 3.0]  # busy at 2.0: on to 3.0, then idle
    assert settled(busy_until_s=2.0, horizon_s=10.0) == [1.0, 2.0, 2.0]  # idle at 2.0, the instant finished
    assert settled(busy_until_s=9.0, horizon_s=3.0) == [1.0, 2.0, 2.0, 3.0]  # busy, stopped by the horizon
    assert settled(busy_until_s=0.0, horizon_s=10.0) == [1.0]  # never busy, nothing due at 1.5: nothing stepped


def test_the_kernels_event_constructors_take_what_simpys_take() -> None:
    """The simulator's ``Kernel`` builds its events as simpy's environment does, what a case does not use included
    (a timeout's value; no default delay): simpy's still, for whoever adds an actor that uses it."""

    def made(env: simpy.Environment) -> list[object]:
        def proc() -> Generator[simpy.Event, Any, str]:
            yield env.timeout(0.5)
            return "done"

        plain, valued, bare, process = env.timeout(1), env.timeout(2, "v"), env.event(), env.process(proc())
        both = env.all_of([plain, valued])
        bare.succeed(7)
        env.run()
        return [
            type(plain),
            plain._delay,  # type: ignore[attr-defined]
            plain.value,
            valued.value,
            bare.value,
            process.value,
            type(both),
            list(both.value.values()),
            env.now,
        ]

    assert made(Kernel()) == made(simpy.Environment())
    assert made(Kernel())[1:4] == [1, None, "v"]
    with pytest.raises(TypeError, match="delay"):
        Kernel().timeout()  # type: ignore[call-arg]


def test_every_boundary_is_covered_here() -> None:
    """This test module exercises every fault boundary the scenario format offers."""
    assert set(FAULTS) == set(BOUNDARIES)


@pytest.mark.parametrize("boundary", sorted(FAULTS))
def test_each_boundary_is_injected_recorded_and_judged_soundly(boundary: str) -> None:
    """A fault at each boundary is injected, recorded in the history, and every known metric is true."""
    scenario = with_changes(shipped("lost_response"), faults=FAULTS[boundary], **NEEDS.get(boundary, {}))
    result = simulate(scenario, load_policy("reconcile_and_reauthorize"), 4)
    injected = {e.boundary for e in result.evidence.history if isinstance(e, FaultInjected)}
    assert boundary in injected
    judgement = check(result.evidence)
    for name in COMPARED:
        value = judgement.metrics[name]
        if value is not None and not isinstance(value, float):
            assert value == getattr(result.truth, name), name


def test_crash_before_send_sends_nothing_and_replacement_recovers() -> None:
    """A crash before the send leaves no dispatch; the replacement looks up, finds it absent, and claims a retry."""
    scenario = with_changes(shipped("lost_response"), faults=[{"boundary": "crash_before_send", "nth": 1}])
    result = simulate(scenario, load_policy("reconcile_and_reauthorize"), 1)
    events = [(e.actor, e.event) for e in result.evidence.history]
    assert ("worker", "crashed") in events
    judgement = check(result.evidence)
    assert judgement.metrics["dispatches"] == 1 and judgement.outcome == "correct"
    claims = [e for e in result.evidence.history if isinstance(e, ClaimDecided)]
    assert len(claims) == 2 and all(c.ok for c in claims)


def test_pending_operation_is_waited_on_then_escalated() -> None:
    """An accepted-but-never-applied operation looks pending; reconciling waits, then escalates before the deadline."""
    scenario = with_changes(shipped("lost_response"), faults=[{"boundary": "accepted_not_applied", "nth": 1}])
    result = simulate(scenario, load_policy("reconcile_and_reauthorize"), 1)
    judgement = check(result.evidence)
    assert judgement.metrics["escalations"] == 1 and judgement.metrics["dispatches"] == 1
    assert judgement.outcome == "escalated"


def test_same_key_after_the_window_applies_again() -> None:
    """Past the deduplication window, the same key is a new operation: a same-key retry duplicates the effect."""
    scenario = with_changes(shipped("lost_response"), destination={"dedupe_window_s": 10.0})
    judgement = check(simulate(scenario, load_policy("retry_same_key"), 1).evidence)
    assert judgement.metrics["duplicate_effects"] == 1 and judgement.outcome == "incorrect"


def test_reconcile_retries_past_the_window_only_once_no_original_can_land() -> None:
    """Absent with the window passed: reconciling waits until the lost original could no longer arrive (60 s
    of request validity), looks again, and only then retries."""
    scenario = with_changes(
        shipped("request_lost"), destination={"dedupe_window_s": 10.0}, worker={"restart_delay_s": 20.0}
    )
    result = simulate(scenario, load_policy("reconcile_and_reauthorize"), 1)
    judgement = check(result.evidence)
    sends = [e for e in result.evidence.history if isinstance(e, DispatchSent)]
    assert len(sends) == 2 and sends[1].at_s >= 60.0
    assert judgement.outcome == "correct" and judgement.metrics["task_completed"] is True


def test_rejected_operation_is_recorded_as_rejection() -> None:
    """A destination that refuses the model leaves a rejected receipt, recorded as a rejection, task not completed."""
    scenario = with_changes(shipped("lost_response"), destination={"reject_models": ["m7"]})
    result = simulate(scenario, load_policy("reconcile_and_reauthorize"), 1)
    judgement = check(result.evidence)
    assert any(e.event == "rejection_recorded" for e in result.evidence.history)
    assert judgement.metrics["task_completed"] is False and judgement.outcome == "correct"


def run_destination(
    on_conflict: str,
    requests: list[tuple[float, Request]],
    faults: tuple[FaultBase, ...] = (),
    in_force: bool = True,
    **contract: Any,
) -> tuple[list[Reply], History]:
    """Drive the destination alone with requests arriving at given times; return its replies and history."""
    env = simpy.Environment()
    history = History(env)
    spec = DestinationSpec(on_conflict=on_conflict, **contract)  # type: ignore[arg-type]
    auditor = Auditor(120.0)
    destination = Destination(env, spec, history, Injector(faults, "a73", history), auditor, lambda _: in_force)
    replies: list[Reply] = []

    def send(at: float, request: Request):  # type: ignore[no-untyped-def]
        yield env.timeout(at)
        reply = yield from destination.handle(request)
        replies.append(reply)

    for at, request in requests:
        env.process(send(at, request))
    env.run()
    return replies, history


def request(n: int, model: str = "m7", key: str = "a73", sent_at_s: float = 0.0) -> Request:
    return Request(
        kind="dispatch",
        action_id="a73",
        n=n,
        idempotency_key=key,
        execution_id=f"a73-x{n}",
        artifact=Artifact(operation="activate", target="staging/fraud", model=model, digest=f"d-{model}"),
        sent_at_s=sent_at_s,
        approval_id="apr-17",
    )


def lookup(n: int, key: str = "a73") -> Request:
    return Request(kind="lookup", action_id="a73", n=n, idempotency_key=key)


def applied_count(history: History) -> int:
    return sum(1 for e in history.entries if isinstance(e, Applied))


def test_without_deduplication_every_request_is_applied() -> None:
    """dedupe: none executes the same key and arguments again: two effects; the lookup finds the latest."""
    replies, history = run_destination(
        "reject", [(0.0, request(1)), (5.0, request(2)), (6.0, lookup(1))], dedupe="none"
    )
    assert applied_count(history) == 2 and replies[1].receipt is not None
    assert replies[2].receipt == replies[1].receipt


def test_process_lifetime_deduplication_is_forgotten_on_restart() -> None:
    """dedupe: process forgets keys when the process restarts, so the same key applies again (the ledger
    stays: a lookup still answers applied); dedupe: durable does not forget."""
    restart = (DestinationRestart(boundary="destination_restart", nth=1),)
    requests = [(0.0, request(1)), (5.0, request(2)), (6.0, lookup(1))]
    replies, history = run_destination("reject", requests, restart, dedupe="process")
    assert applied_count(history) == 2 and replies[2].effect == "applied"
    assert any(isinstance(e, DestinationRestarted) and e.forgotten_keys == 1 for e in history.entries)
    _, history = run_destination("reject", requests, restart, dedupe="durable")
    assert applied_count(history) == 1


def test_a_duplicate_of_a_pending_operation_is_answered_by_the_contract() -> None:
    """While the first request is still pending, a duplicate gets "pending" or a 409-style "in progress"."""
    late = (ApplyDelayed(boundary="apply_delayed", nth=1, delay_s=30.0),)
    requests = [(0.0, request(1)), (5.0, request(2))]
    replies, _ = run_destination("reject", requests, late, on_in_flight="pending")
    assert {r.status for r in replies} == {"pending", "applied"}
    replies, history = run_destination("reject", requests, late, on_in_flight="in_progress")
    assert {r.status for r in replies} == {"in_progress", "applied"}
    assert any(isinstance(e, InProgress) for e in history.entries)


def test_a_request_older_than_its_validity_is_refused() -> None:
    """A request arriving 61 s after it was sent, under a 60 s validity, is refused with no effect."""
    replies, history = run_destination("reject", [(61.0, request(1, sent_at_s=0.0))], request_validity_s=60.0)
    assert replies[0].status == "refused" and applied_count(history) == 0
    refused = [e for e in history.entries if isinstance(e, RequestRefused)]
    assert [e.reason for e in refused] == ["expired"]
    replies, _ = run_destination("reject", [(59.0, request(1, sent_at_s=0.0))], request_validity_s=60.0)
    assert replies[0].status == "applied"


def test_fencing_refuses_a_request_whose_approval_is_no_longer_in_force() -> None:
    """With fencing, a request whose approval was revoked is refused; without, it applies."""
    replies, history = run_destination("reject", [(1.0, request(1))], fencing=True, in_force=False)
    assert replies[0].status == "refused" and applied_count(history) == 0
    replies, history = run_destination("reject", [(1.0, request(1))], fencing=False, in_force=False)
    assert replies[0].status == "applied"


def test_a_lagging_lookup_answers_from_the_past() -> None:
    """With lookups 20 s behind, an operation applied at 0.5 s is absent at 10 s and applied at 30 s."""
    replies, _ = run_destination("reject", [(0.0, request(1)), (10.0, lookup(1)), (30.0, lookup(2))], lookup_lag_s=20.0)
    assert [r.effect for r in replies[1:]] == ["absent", "applied"]


def test_a_foreign_receipt_names_other_arguments() -> None:
    """The foreign-receipt fault answers "applied" with a receipt for other arguments under the same key."""
    foreign = (LookupForeignReceipt(boundary="lookup_foreign_receipt", nth=1),)
    replies, _ = run_destination("reject", [(0.0, request(1)), (5.0, lookup(1)), (6.0, lookup(2))], foreign)
    assert replies[1].receipt is not None and replies[1].receipt.artifact.model == "m-other"
    assert replies[2].receipt == replies[0].receipt


def test_a_foreign_receipt_at_the_instant_the_lag_reaches_an_operation_names_that_operation() -> None:
    """A lagging read sees an operation from the very instant it arrived (a plain lookup there answers
    "pending"), so a foreign receipt read at that instant takes that operation's operation and target, not the
    placeholder of a key the read sees nothing under."""
    requests = [(0.0, request(1)), (4.0, lookup(1))]
    replies, _ = run_destination("reject", requests, lookup_lag_s=5.0, lookup_s=1.0)
    assert replies[1].effect == "pending"
    foreign = (LookupForeignReceipt(boundary="lookup_foreign_receipt", nth=1),)
    replies, _ = run_destination("reject", requests, foreign, lookup_lag_s=5.0, lookup_s=1.0)
    receipt = replies[1].receipt
    assert replies[1].effect == "applied" and receipt is not None
    assert (receipt.artifact.operation, receipt.artifact.target) == ("activate", "staging/fraud")
    assert receipt.artifact.model == "m-other"


@pytest.mark.parametrize(("on_conflict", "status"), [("reject", "conflict"), ("replay", "applied")])
def test_same_key_with_other_arguments(on_conflict: str, status: str) -> None:
    """Same key, changed arguments: a conflict under 'reject', the cached result under 'replay'; never a new effect."""
    replies, history = run_destination(on_conflict, [(0.0, request(1)), (5.0, request(2, model="m8"))])
    assert [r.status for r in replies] == ["applied", status]
    assert sum(1 for e in history.entries if isinstance(e, Applied)) == 1


def test_same_key_same_arguments_replays_the_receipt() -> None:
    """Same key and arguments within the window replay the recorded receipt; a new key is a new effect."""
    replies, history = run_destination("reject", [(0.0, request(1)), (5.0, request(2)), (6.0, request(3, key="k2"))])
    assert replies[1].receipt == replies[0].receipt
    assert replies[2].receipt is not None and replies[2].receipt.receipt_id != replies[0].receipt.receipt_id  # type: ignore[union-attr]
    assert sum(1 for e in history.entries if isinstance(e, Applied)) == 2


class RecordTwiceUnguarded:
    """A test policy: looks up, then writes the same receipt twice without the controller's guard."""

    name, revision = "record_twice_unguarded", "test"

    def __init__(self) -> None:
        self.writes = 0

    def decide(self, situation: Situation) -> Command:
        receipts = situation.observed_receipts()
        if not receipts:
            return LookUp()
        if self.writes < 2:
            self.writes += 1
            return RecordEffect(receipt_id=receipts[0].receipt_id, guarded=False)
        return Stop()


def test_unguarded_writes_are_caught() -> None:
    """Unguarded writes after a revision change show as a duplicate record and a wrong-revision completion."""
    result = simulate(shipped("changed_task"), RecordTwiceUnguarded(), 1)
    judgement = check(result.evidence)
    assert judgement.metrics["duplicate_records"] == result.truth.duplicate_records == 1
    assert judgement.metrics["wrong_revision_completions"] == result.truth.wrong_revision_completions >= 1
    assert judgement.outcome == "incorrect"


def test_guarded_repeat_is_recorded_once() -> None:
    """The same receipt written twice through the controller's guard is recorded once; the repeat is noted."""

    class RecordTwiceGuarded(RecordTwiceUnguarded):
        def decide(self, situation: Situation) -> Command:
            command = super().decide(situation)
            return command.model_copy(update={"guarded": True}) if isinstance(command, RecordEffect) else command

    result = simulate(shipped("lost_response"), RecordTwiceGuarded(), 1)
    assert check(result.evidence).metrics["duplicate_records"] == 0
    assert any(e.event == "record_repeated" for e in result.evidence.history)


def test_restart_delay_must_be_positive() -> None:
    """A zero restart delay could let a crashing worker loop without virtual time passing: refused on load."""
    with pytest.raises(ValueError, match="restart_delay_s"):
        with_changes(shipped("lost_response"), worker={"restart_delay_s": 0})


class _AlwaysRetry:
    name, revision = "always_retry", "test"

    def decide(self, situation: Situation) -> Command:
        from harness.policy import RetrySameAction

        return RetrySameAction(claim=False)


def test_command_budget_spans_every_incarnation() -> None:
    """A policy that never stops, in a worker that crashes on every dispatch, ends within the command budget."""
    scenario = with_changes(
        shipped("lost_response"),
        faults=[{"boundary": "crash_awaiting_reply", "nth": 1, "count": None}],
        worker={"restart_delay_s": 0.001, "command_count_max": 20},
    )
    result = simulate(scenario, _AlwaysRetry(), 1)
    commands = [e for e in result.evidence.history if e.event == "command"]
    assert 0 < len(commands) <= 20
    assert any(e.event == "command_budget_exhausted" for e in result.evidence.history)


def test_a_crash_closes_every_connection_of_the_worker() -> None:
    """After a crash, a late reply to an attempt of an earlier incarnation reaches no one."""
    scenario = with_changes(
        shipped("lost_response"),
        faults=[
            {"boundary": "response_delayed", "nth": 1, "delay_s": 30.0},
            {"boundary": "crash_awaiting_reply", "nth": 2},
        ],
    )
    result = simulate(scenario, load_policy("retry_same_key"), 1)
    late = [
        e
        for e in result.evidence.history
        if isinstance(e, ReplyReceived | ReplyUndeliverable) and e.execution_id == "a73-x1"
    ]
    assert [e.event for e in late] == ["undeliverable"]


def test_hidden_ledger_withholds_destination_side_faults() -> None:
    """With the ledger withheld, no entry tells when the destination acted: neither its own nor its faults'."""
    evidence = simulate(shipped("uncertain_lookup"), load_policy("retry_same_key"), 1).evidence
    assert not any(e.actor == "destination" for e in evidence.history)
    assert not any(e.actor == "injector" for e in evidence.history)
    crash = with_changes(shipped("uncertain_lookup"), faults=[{"boundary": "crash_awaiting_reply", "nth": 1}])
    kept = simulate(crash, load_policy("retry_same_key"), 1).evidence
    assert [e.boundary for e in kept.history if isinstance(e, FaultInjected)] == ["crash_awaiting_reply"]


class _BadWait:
    name, revision = "bad_wait", "test"

    def decide(self, situation: Situation) -> Command:
        from harness.policy import Wait

        return Wait.model_construct(duration_s=-1.0)


def test_an_invalid_command_is_a_policy_error_not_a_harness_error() -> None:
    """A command built around validation is refused as the policy's error; the case is still judged."""
    result = simulate(shipped("lost_response"), _BadWait(), 1)
    errors = [e for e in result.evidence.history if isinstance(e, PolicyFailed)]
    assert errors and "duration_s" in errors[0].error
    assert check(result.evidence).outcome == "abandoned"


@pytest.mark.parametrize("answer", [None, {"kind": "stop"}, "stop", 3])
def test_an_answer_that_is_no_command_is_recorded_as_the_policys_error_naming_what_it_was(answer: object) -> None:
    """What a policy returns that is not one of the commands is its error, recorded with the type it returned
    (what a user reads in recovery.json to find the bug), and the case is still judged."""
    result = simulate(shipped("lost_response"), Says(answer), 1)  # type: ignore[arg-type]
    errors = [e.error for e in result.evidence.history if isinstance(e, PolicyFailed)]
    hint = " (a missing return?)" if answer is None else ""
    assert errors == [f"TypeError: decide() returned {type(answer).__name__}, not a Command{hint}"]
    assert check(result.evidence).outcome == "abandoned"


def controller_at(scenario: Scenario) -> tuple[simpy.Environment, Controller]:
    """A controller alone in a fresh world, with the scenario's action recorded."""
    env = simpy.Environment()
    history = History(env)
    auditor = Auditor(scenario.recovery_deadline_s)
    controller = Controller(env, history, scenario, auditor)
    auditor.watch(controller)
    controller.record_action(scenario.action_id)
    return env, controller


def test_claim_is_refused_after_cancel_or_a_new_revision() -> None:
    """The claim rechecks the live task: a cancellation or a newer revision refuses it; a fresh task grants it."""
    base = shipped("lost_response")
    _, controller = controller_at(base)
    assert controller.claim_if_revision("a73", 17) is None
    controller.request_cancel("stop")
    assert controller.claim_if_revision("a73", 17) == "cancellation requested"
    _, controller = controller_at(base)
    controller.change_task("m8", "sha256:d8", approved=True)
    assert "revision 18" in (controller.claim_if_revision("a73", 17) or "")
    assert controller.claim_if_revision("a73", 18) is not None  # the action belongs to revision 17


def test_claim_is_refused_by_attempts_recorded_since_the_decision_it_was_made_for() -> None:
    """A claim made for a decision that saw n attempts is refused once the ledger lists more, naming the first
    recorded since; a claim for a decision that saw them all, or made with no decision to compare (the
    dispatcher's first), is granted."""
    _, controller = controller_at(shipped("lost_response"))
    controller.begin_attempt("a73", "a73-x1", "a73")
    assert controller.claim_if_revision("a73", 17, attempts_seen=1) is None
    controller.begin_attempt("a73", "a73-x2", "a73")
    controller.begin_attempt("a73", "a73-x3", "a73.k1")
    assert controller.claim_if_revision("a73", 17, attempts_seen=1) == (
        "attempt a73-x2 was recorded since the dispatch was decided"
    )
    assert controller.claim_if_revision("a73", 17, attempts_seen=2) == (
        "attempt a73-x3 was recorded since the dispatch was decided"
    )
    assert controller.claim_if_revision("a73", 17, attempts_seen=3) is None
    assert controller.claim_if_revision("a73", 17) is None


def test_claim_is_refused_once_the_approval_has_expired() -> None:
    """An approval is valid strictly before its expiry: a claim at or after it is refused, and dispatch is not authorized."""
    scenario = with_changes(shipped("lost_response"), approval={"expires_at_s": 2.0})
    env, controller = controller_at(scenario)
    env.run(until=1.999)
    assert controller.claim_if_revision("a73", 17) is None and controller.authorized_now("a73")
    env.run(until=2.0)
    assert not controller.authorized_now("a73")
    assert controller.claim_if_revision("a73", 17) == "approval missing, revoked or expired"


def test_a_crash_awaiting_reply_leaves_the_reply_undeliverable() -> None:
    """The dead incarnation's connection is closed by the crash itself: its reply reaches no one."""
    result = simulate(shipped("crash_awaiting_reply"), load_policy("stop_on_timeout"), 1)
    replies = [e for e in result.evidence.history if isinstance(e, ReplyReceived | ReplyUndeliverable)]
    assert [type(e) for e in replies] == [ReplyUndeliverable]


@pytest.mark.parametrize("delay_s", [3.0, 30.0])
def test_a_delayed_request_reaches_the_destination_that_much_later(delay_s: float) -> None:
    """request_delayed adds its delay to the outbound crossing: the destination receives it after delay_s."""
    scenario = with_changes(
        shipped("lost_response"), faults=[{"boundary": "request_delayed", "nth": 1, "delay_s": delay_s}]
    )
    result = simulate(scenario, load_policy("stop_on_timeout"), 1)
    received = next(e for e in result.evidence.history if isinstance(e, Received))
    latency = shipped("lost_response").transport
    assert delay_s + latency.latency_s <= received.at_s <= delay_s + latency.latency_s + latency.jitter_s


@pytest.mark.parametrize("recoverers", [1, 2])
def test_an_event_set_off_past_the_deadline_does_not_act(lost_response: Scenario, recoverers: int) -> None:
    """Past the deadline, an operator event set off by a worker's report (at that same instant) does not act,
    however many recovering processes the worker had: its trigger came, and nothing of it is recorded (it acted
    when the case ran on past the deadline, which only what is in flight decides)."""
    scenario = with_changes(
        lost_response,
        recovery_deadline_s=15.1,
        worker={"recoverers": recoverers},
        operator=[{"do": "expire_approval", "when": {"after": {"actor": "worker", "event": "report"}}}],
    )
    # A same-key retry sent as the worker starts (15 s) is answered after the deadline, and only then reported (the
    # safe policies escalate at once, 0.1 s before the deadline: within their margin).
    result = simulate(scenario, load_policy("retry_same_key"), 1)
    history = result.evidence.history
    report = next(e for e in history if e.event == "report")
    assert report.at_s > scenario.recovery_deadline_s
    assert result.operator_coverage == ((1, 0),)
    assert not [e for e in history if e.actor == "operator" or e.event == "approval_expired"]


def test_past_the_deadline_the_case_runs_up_to_settle_max_s_and_no_further() -> None:
    """A request still in flight at the deadline reaches the destination if it arrives at most ``settle_max_s``
    later (the bound included), and the case stops before it if the bound is any shorter."""
    scenario = with_changes(
        shipped("lost_response"),
        transport={"latency_s": 0.5, "jitter_s": 0.0},
        faults=[{"boundary": "request_delayed", "nth": 1, "delay_s": 200.0}],
    )
    policy = load_policy("stop_on_timeout")
    unbounded = simulate(scenario, policy, 1).evidence.history
    arrival = next(e.at_s for e in unbounded if isinstance(e, Received))
    assert arrival > scenario.recovery_deadline_s
    just_enough = with_changes(scenario, settle_max_s=arrival - scenario.recovery_deadline_s)
    assert just_enough.horizon_s == arrival
    history = simulate(just_enough, policy, 1).evidence.history
    assert [e.at_s for e in history if isinstance(e, Received)] == [arrival]
    assert history[-1].at_s == arrival
    too_short = with_changes(scenario, settle_max_s=arrival - scenario.recovery_deadline_s - 0.25)
    history = simulate(too_short, policy, 1).evidence.history
    assert not any(isinstance(e, Received) for e in history)
    # The end says what it cut off: the request, still on its way.
    *before, cut = history
    assert isinstance(cut, StillInFlight) and cut.execution_id == f"{scenario.action_id}-x1"
    assert before[-1].at_s < scenario.recovery_deadline_s


def test_past_the_deadline_a_pending_operation_still_applies() -> None:
    """An operation the destination accepted before the deadline and applies after it is in the history (late
    effects are counted), though no message is in flight and no worker is left: behind a connector, the caller
    has its "started" reply and the job applies the operation on its own."""
    scenario = with_changes(
        shipped("connector_new_operation_pending"),
        faults=[{"boundary": "apply_delayed", "nth": 1, "delay_s": 200.0}],
        operator=[],
    )
    history = simulate(scenario, load_policy("stop_on_timeout"), 1).evidence.history
    accepted = next(e.at_s for e in history if isinstance(e, Accepted))
    applied = [e.at_s for e in history if isinstance(e, Applied)]
    assert len(applied) == 1 and applied[0] > scenario.recovery_deadline_s > accepted


class _WaitForever:
    """A test policy: waits, a minute at a time, whatever it sees."""

    name, revision = "wait_forever", "test"

    def decide(self, situation: Situation) -> Command:
        return Wait(duration_s=60.0)


def test_past_the_deadline_a_waiting_worker_still_reaches_it() -> None:
    """A worker whose wait outlasts the deadline, with nothing in flight, wakes up after it, finds the deadline
    passed and reports: the case does not stop while a worker is still alive."""
    scenario = shipped("lost_response")
    history = simulate(scenario, _WaitForever(), 1).evidence.history
    waits = [e.at_s for e in history if isinstance(e, CommandGiven)]
    reached = [e.at_s for e in history if isinstance(e, DeadlineReached)]
    assert waits and max(waits) < scenario.recovery_deadline_s
    assert len(reached) == 1 and scenario.recovery_deadline_s < reached[0] <= scenario.horizon_s
    assert history[-1].event == "report" and history[-1].at_s == reached[0]


class _WaitOnce:
    """A test policy: waits 12.75 s, whatever it sees."""

    name, revision = "wait_once", "test"

    def decide(self, situation: Situation) -> Command:
        return Wait(duration_s=12.75)


def test_a_case_ends_at_the_end_of_an_instant() -> None:
    """What is due at the instant the last thing past the deadline settles happens too: the connector's restart,
    due 10 s after its crash, at the very instant the last worker wakes past the deadline and reports (nothing
    else in flight, exact times: no jitter, latencies of a quarter second)."""
    scenario = with_changes(
        shipped("connector_crash_while_running"),
        transport={"latency_s": 0.25, "jitter_s": 0.0},
        recovery_deadline_s=10.0,
    )
    history = simulate(scenario, _WaitOnce(), 1).evidence.history
    crashed = next(e.at_s for e in history if isinstance(e, ConnectorCrashed))
    reached = next(e.at_s for e in history if isinstance(e, DeadlineReached))
    restart_s = scenario.connector.restart_s if scenario.connector else 0.0
    assert crashed < scenario.recovery_deadline_s < reached == crashed + restart_s  # the instants coincide
    assert [e.at_s for e in history if isinstance(e, ConnectorRestarted)] == [reached]
    assert history[-1].at_s == reached


def test_the_operator_counts_per_declared_event_whether_its_trigger_came_and_whether_it_acted() -> None:
    """Each declared event's (trigger came, acted), in the scenario's order: a trigger on a record no case makes,
    a record made, a record made too few times, a record made too late for its delay to end before the deadline,
    a time in the run, and a record made whose delay ends exactly at the deadline. (A delay at or past the
    deadline by itself is refused when the scenario loads: no record could come early enough.)"""
    base = shipped("lost_response").model_dump()
    base["worker"]["dispatch_at_s"] = 0.5
    events: list[dict[str, Any]] = [
        {"do": "request_cancel", "when": {"after": {"actor": "worker", "event": "crashed"}}},
        {"do": "request_cancel", "when": {"after": {"actor": "worker", "event": "timeout"}}},
        {"do": "request_cancel", "when": {"after": {"actor": "worker", "event": "timeout", "nth": 2}}},
        {"do": "request_cancel", "when": {"after": {"actor": "worker", "event": "timeout"}, "delay_s": 118}},
        {"do": "expire_approval", "when": {"at_s": 119}},
        # The worker starts at 0.5 s, so this one's moment is the deadline itself: too late to act.
        {"do": "request_cancel", "when": {"after": {"actor": "worker", "event": "start"}, "delay_s": 119.5}},
    ]
    scenario = Scenario.model_validate({**base, "operator": events})
    assert scenario.recovery_deadline_s == 120 and scenario.worker.dispatch_at_s == 0.5
    result = simulate(scenario, load_policy("reconcile_and_reauthorize"), 1)
    assert result.operator_coverage == ((0, 0), (1, 1), (0, 0), (1, 0), (1, 1), (1, 0))
    # The events that acted left their records; the faults' coverage is its own.
    fired = [e.event for e in result.evidence.history if e.actor == "operator"]
    assert fired == ["request_cancel", "expire_approval"]
    assert result.coverage == ((1, 1),)


def test_a_policys_validation_error_is_recorded_in_one_line_whatever_its_shape() -> None:
    """The model, the first error's field path (nested ones dotted), its message, and how many more; an error of
    the whole model names no field."""
    from pydantic import BaseModel, ValidationError, model_validator

    from harness.sim.worker import _policy_error

    class Inner(BaseModel):
        n: int

    class Outer(BaseModel):
        inner: Inner
        m: int

        @model_validator(mode="after")
        def never(self) -> Outer:
            raise ValueError("never valid")

    class Here:  # a policy of this module: the error is said at this module's line that raised it
        pass

    errors = []
    for data in ({"inner": {"n": "x"}, "m": "y"}, {"inner": {"n": 1}, "m": 2}):
        try:
            line = sys._getframe().f_lineno + 1
            Outer.model_validate(data)
        except ValidationError as exc:
            errors.append(_policy_error(exc, Here()))
    at = f" (at line {line} of {__name__}, in {sys._getframe().f_code.co_name})"
    assert errors == [
        "ValidationError: Outer: field 'inner.n': Input should be a valid integer, unable to parse string as an "
        f"integer (+1 more){at}",
        f"ValidationError: Outer: Value error, never valid{at}",
    ]
    assert _policy_error(KeyError("k"), Here()) == "KeyError: 'k'"  # never raised: nowhere to name


def test_what_the_end_cuts_off_is_recorded_and_leaves_the_verdict_unknown() -> None:
    """A request delayed past the end of the case (settle_max_s after the deadline) never arrived, and the case
    was judged correct: its late effect was not in the evidence, and nothing said so. The end records each
    dispatch still on its way and each operation not yet applied, and the checker leaves what they could change
    unknown; given time to land, the same request is the duplicate it would have been."""
    contract = {"dedupe_window_s": 20.0, "request_validity_s": None}
    late = with_changes(
        shipped("lost_response"),
        destination=contract,
        faults=[{"boundary": "request_delayed", "delay_s": 1000.0}],
        settle_max_s=600.0,
    )
    policy = load_policy("retry_same_key")
    result = simulate(late, policy, 1)
    cut = [e for e in result.evidence.history if isinstance(e, StillInFlight)]
    assert [(e.action_id, e.execution_id, e.n) for e in cut] == [(late.action_id, f"{late.action_id}-x1", 1)]
    assert cut[0] is result.evidence.history[-1] and cut[0].at_s <= late.horizon_s
    judgement = check(result.evidence)
    assert judgement.outcome == "unresolved" and judgement.metrics["duplicate_effects"] is None
    assert "still on the way or pending" in judgement.unknown["duplicate_effects"]
    settled = simulate(with_changes(late, settle_max_s=2000.0), policy, 1)
    assert not [e for e in settled.evidence.history if isinstance(e, StillInFlight | StillPending)]
    assert check(settled.evidence).metrics["duplicate_effects"] == 1
    held = with_changes(late, faults=[{"boundary": "apply_delayed", "delay_s": 1000.0}])
    pending = [e for e in simulate(held, policy, 1).evidence.history if isinstance(e, StillPending)]
    assert [e.execution_id for e in pending] == [f"{late.action_id}-x1"]
    # Not over-eager: the policy that holds its retry while the original may land sent one dispatch, cut off as
    # well, and one dispatch cannot make two effects: decided, and no violation.
    safe = simulate(late, load_policy("reconcile_and_reauthorize"), 1)
    assert [e.execution_id for e in safe.evidence.history if isinstance(e, StillInFlight)] == [f"{late.action_id}-x1"]
    judged = check(safe.evidence)
    assert judged.metrics["duplicate_effects"] == 0 and judged.outcome in ("correct", "escalated")


def test_a_deadline_before_recovery_starts_is_named_in_the_abandoned_anomaly() -> None:
    """lost_response with its deadline before the recovering worker starts (timeout 5 s, restart 10 s): every
    policy abandons a73, and the anomaly says none was asked; with the shipped deadline a policy that gives up
    abandons it too, but was asked."""
    lost = shipped("lost_response")
    early = lost.model_copy(update={"recovery_deadline_s": 12.0})
    for name in ("reconcile_and_reauthorize", "stop_on_timeout"):
        anomaly = check(simulate(early, load_policy(name), 1).evidence).anomalies[0]
        assert anomaly.kind == "abandoned_action" and anomaly.detail.endswith(
            "no policy was asked about it before then (the first recovering worker started at 15.0 s)"
        )
    asked = check(simulate(lost, load_policy("stop_on_timeout"), 1).evidence).anomalies[0]
    assert asked.kind == "abandoned_action" and "no policy was asked" not in asked.detail


def test_an_operator_event_acts_only_before_the_recovery_deadline() -> None:
    """After the deadline the case runs on only while something is in flight, which depends on the policy: an
    event whose trigger comes then does not act (it acted, and its new action was judged abandoned by a deadline
    that came before the action existed). The same trigger before the deadline acts."""
    base = shipped("late_original_in_window").model_dump()  # its first dispatch applies 30 s late
    change = {"do": "change_task", "model": "m8", "digest": "d8", "approved": True, "action_id": "a74"}
    after_applied = {"after": {"actor": "destination", "event": "applied"}}
    for deadline, acted in ((20.0, 0), (120.0, 1)):
        scenario = Scenario.model_validate(
            {**base, "recovery_deadline_s": deadline, "operator": [{**change, "when": after_applied}]}
        )
        result = simulate(scenario, load_policy("stop_on_timeout"), 1)
        applied = next(e for e in result.evidence.history if e.event == "applied")
        assert applied.at_s > 20
        assert result.operator_coverage == ((1, acted),)
        actions = [e.action_id for e in result.evidence.history if e.event == "action_recorded"]
        assert actions == (["a73", "a74"] if acted else ["a73"])


def test_a_follow_or_verify_with_nothing_in_the_path_is_read_as_the_readme_says() -> None:
    """With neither connector nor bridge (lost_response), a FollowJob reaches the destination, which answers no
    job follow: the read times out after lookup_timeout_s and says nothing (unknown). A VerifyOutcome is answered
    by the destination from its ledger and compared with the original expectation."""
    from harness.policy import FollowJob, LookupView, VerifyOutcome

    class ReadsOnce:
        name, revision = "reads_once", "1"

        def __init__(self, read: Command) -> None:
            self.read, self.seen = read, list[LookupView]()

        def decide(self, situation: Situation) -> Command:
            if situation.lookups:
                self.seen.append(situation.lookups[-1])
                return Stop()
            return self.read

    scenario = shipped("lost_response")
    assert scenario.connector is None and scenario.bridge is None
    follow, verify = ReadsOnce(FollowJob()), ReadsOnce(VerifyOutcome())
    for policy in (follow, verify):
        simulate(scenario, policy, 1)
    (followed,) = follow.seen
    assert (followed.source, followed.effect, followed.job_id) == ("follow_job", "unknown", None)
    assert followed.sent_at_s is not None
    assert followed.at_s - followed.sent_at_s == scenario.worker.lookup_timeout_s
    (verified,) = verify.seen
    assert (verified.source, verified.effect, verified.verified) == ("verify", "applied", "confirmed")


def test_a_newer_action_whose_claim_finds_the_target_held_is_handed_to_its_policy_at_once() -> None:
    """As the README says: the change_task's new action (a74) is claimed while a73 is unsettled, the claim is
    refused (the target is held), and its policy is asked before anything is sent, the refusal in situation.last."""
    from harness.policy import Escalate

    asked: list[tuple[str, int, object]] = []

    class Notes:
        name, revision = "notes", "1"

        def decide(self, situation: Situation) -> Command:
            asked.append((situation.action.action_id, len(situation.attempts), situation.last))
            return Stop() if situation.escalated else Escalate(reason="noted")

    simulate(shipped("newer_write_held"), Notes(), 1)
    _, attempts, last = next(a for a in asked if a[0] == "a74")
    assert attempts == 0 and last is not None
    assert (last.kind, last.refused) == ("dispatch", True)  # type: ignore[attr-defined]
    assert last.reason == "target held: a73 is not accounted for"  # type: ignore[attr-defined]


class _WaitsThenStops:
    """Waits ``wait_s`` once, then stops."""

    name, revision = "waits_then_stops", "test"

    def __init__(self, wait_s: float) -> None:
        self.wait_s = wait_s

    def decide(self, situation: Situation) -> Command:
        return Stop() if situation.last is not None and situation.last.kind == "wait" else Wait(duration_s=self.wait_s)


@pytest.mark.parametrize(("asked_s", "capped"), [(30.0, True), (10.0, False), (10.000001, True)])
def test_a_wait_past_wait_max_s_is_cut_and_says_so(asked_s: float, capped: bool) -> None:
    """The worker waits at most ``worker.wait_max_s``; when it cuts a ``Wait``, a record says what was asked and
    what was waited (the timeline shows the command as the policy gave it, so without it the cut is invisible)."""
    scenario = with_changes(shipped("lost_response"), worker={"wait_max_s": 10.0})
    history = simulate(scenario, _WaitsThenStops(asked_s), 1).evidence.history
    cuts = [e for e in history if isinstance(e, WaitCapped)]
    assert [(e.asked_s, e.waited_s) for e in cuts] == ([(asked_s, 10.0)] if capped else [])
    given = [e for e in history if isinstance(e, CommandGiven)]
    wait, after = given[0], given[1]
    assert after.command.kind == "stop"
    assert after.at_s == pytest.approx(wait.at_s + min(asked_s, 10.0), abs=1e-6)
    if capped:
        assert cuts[0].index == wait.index + 1 and cuts[0].at_s == wait.at_s


class _TrustsReads:
    """Buggy: records whatever receipt a read brings, without comparing it with the request; with
    ``follow_first``, its first read is a job follow, which no connector answers where none stands."""

    revision = "test"

    def __init__(self, follow_first: bool) -> None:
        self.follow_first = follow_first
        self.name = "follow_then_trust" if follow_first else "trusts_reads"

    def decide(self, situation: Situation) -> Command:
        from harness.policy import FollowJob, RecordRejection

        if situation.recorded is not None:
            return Stop()
        for receipt in situation.observed_receipts():
            if receipt.status == "applied":
                return RecordEffect(receipt_id=receipt.receipt_id)
            return RecordRejection(receipt_id=receipt.receipt_id)
        if not situation.lookups and self.follow_first:
            return FollowJob()
        return LookUp() if len(situation.lookups) < 4 else Stop()


@pytest.mark.parametrize("scenario", ["foreign_receipt", "receipt_under_another_key", "rebuilt_receipt"])
@pytest.mark.parametrize("follow_first", [False, True])
def test_a_read_that_never_reaches_the_destination_uses_up_no_read_fault(scenario: str, follow_first: bool) -> None:
    """A read fault's occurrence counts the reads the destination answers: a policy whose first read is a job
    follow (which nothing answers without a connector) used up occurrence 1, met no foreign receipt, and was
    judged correct where the same policy reading first was incorrect."""
    result = simulate(shipped(scenario), _TrustsReads(follow_first), 1)
    fired = [e.boundary for e in result.evidence.history if isinstance(e, FaultInjected)]
    assert "lookup_foreign_receipt" in fired
    judged = check(result.evidence)
    assert judged.outcome == "incorrect" and judged.checks["false_records"] == "false", judged.checks


def test_a_lagging_lookups_foreign_receipt_shows_no_operation_it_cannot_see_yet() -> None:
    """A foreign receipt under the action's own key took its operation and target from the ledger as it is now,
    not as the lagging read sees it: with the action's own model and digest it was the real receipt but for its
    ID, and every policy, the careful ones included, recorded it. As of the read's lag the ledger holds nothing
    under the key, so the receipt names no operation, as it does when the request has not arrived yet."""
    lagging = with_changes(
        shipped("lost_response"),
        destination={"lookup_lag_s": 30.0},
        faults=[
            {"boundary": "response_lost", "nth": 1},
            {"boundary": "lookup_foreign_receipt", "nth": 1, "model": "m7", "digest": "sha256:d7d7d7"},
        ],
    )
    assert (lagging.task.model, lagging.task.digest) == ("m7", "sha256:d7d7d7")
    for name in ("reconcile_and_reauthorize", "verify_before_mutation", "follow_and_inspect"):
        result = simulate(lagging, load_policy(name), 1)
        assert "lookup_foreign_receipt" in [e.boundary for e in result.recorded if isinstance(e, FaultInjected)]
        judged = check(result.evidence)
        assert judged.outcome == "escalated" and judged.checks["false_records"] == "true", (name, judged.checks)


def test_an_unavailable_lookup_is_received_as_unknown() -> None:
    """A lookup the destination cannot answer (lookup_unavailable) answers "unknown", and the caller's receive
    entry says so: every lookup's receive entry names the effect the destination answered, not an empty
    status."""
    scenario = with_changes(shipped("lost_response"), faults=FAULTS["lookup_unavailable"])
    history = simulate(scenario, load_policy("reconcile_and_reauthorize"), 1).evidence.history
    answered = [e.effect for e in history if isinstance(e, LookupAnswered)]
    received = [e.status for e in history if isinstance(e, ReplyReceived) and e.kind == "lookup"]
    assert answered[:2] == ["unknown", "unknown"] and received == answered


def test_a_finished_case_leaves_the_garbage_collector_no_more_than_bare_simpy_does() -> None:
    """At the end of a case the auditor lets go of the controller and the history of its listeners (the
    operator's script): the case's actors, which hold one another through them, are freed at once. Before,
    each case left its whole world to the collector (68 objects in lost_response, 130 to 260 in a case with
    operator events), and collecting it cost more than a tenth of a case's time. Bare simpy leaves its own
    cycle (the environment and its processes); a shipped case may leave no more."""
    import gc
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
    from skeleton import skeleton_case

    policy = load_policy("reconcile_and_reauthorize")
    gc.collect()
    gc.disable()
    # Everything alive now (the test session's objects) is set aside, so that each collection below looks at
    # what a case left and at nothing else: a few milliseconds each rather than most of a second.
    gc.freeze()
    try:
        skeleton_case(1)
        bare = gc.collect()
        left = {}
        for name in list_scenarios():
            for spec, scenario in scenario_cases(name):
                check(simulate(scenario, policy, 1).evidence)
                left[spec] = gc.collect()
    finally:
        gc.unfreeze()
        gc.enable()
    assert bare > 0 and {spec: n for spec, n in left.items() if n > bare} == {}


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("policy", ["reconcile_and_reauthorize", "follow_and_inspect", "verify_before_mutation"])
def test_a_claim_made_as_a_retry_leaves_is_refused_by_an_attempt_recorded_since_its_decision(
    policy: str, seed: int
) -> None:
    """racing_recoverers_retry_leaves: two recovering workers decide to retry milliseconds apart, and each retry
    takes a second to leave. The first to leave is claimed and sent; the second's claim finds that attempt,
    recorded after its decision, and is refused (as a newer revision would refuse it), so that worker decides
    again on the ledger as it now stands, and m7 is applied once."""
    history = simulate(shipped("racing_recoverers_retry_leaves"), load_policy(policy), seed).evidence.history
    retries = [e for e in history if isinstance(e, CommandGiven) and e.command.kind == "retry_same_action"]
    claims = [e for e in history if isinstance(e, ClaimDecided)][1:]  # after the dispatcher's own
    attempts = [e for e in history if isinstance(e, AttemptRecorded)]
    assert len(retries) == 2 and retries[1].at_s - retries[0].at_s < 1.0
    assert [c.ok for c in claims] == [True, False], claims
    assert claims[1].reason == f"attempt {attempts[1].execution_id} was recorded since the dispatch was decided"
    assert attempts[1].index < claims[1].index and retries[1].index < attempts[1].index
    assert [c.at_s for c in claims] == [pytest.approx(r.at_s + 1.0) for r in retries]
    assert len(attempts) == 2 and sum(isinstance(e, Applied) for e in history) == 1
    assert check(simulate(shipped("racing_recoverers_retry_leaves"), load_policy(policy), seed).evidence).outcome == (
        "correct"
    )


@pytest.mark.parametrize(
    ("policy", "scenario"),
    [("retry_new_key", "two_recoverers"), ("reconcile_and_reauthorize", "racing_recoverers_no_dedupe")],
)
def test_without_a_send_time_a_retry_leaves_in_the_step_it_is_decided(policy: str, scenario: str) -> None:
    """``worker.retry_send_s`` 0 (every shipped scenario but two) adds no wait, not even a zero one: a zero wait
    lets another recovering worker's records of the same instant come between a decision and its dispatch
    (two_recoverers), which changes shipped cases. Each retry's command is followed by its claim (when it asks
    for one), its attempt and its send, with nothing between."""
    history = simulate(shipped(scenario), load_policy(policy), 1).evidence.history
    retries = [i for i, e in enumerate(history) if isinstance(e, CommandGiven) and e.command.kind.startswith("retry")]
    assert retries
    for i in retries:
        claimed = isinstance(history[i + 1], ClaimDecided)
        following = [type(e).__name__ for e in history[i + 1 + claimed : i + 3 + claimed]]
        assert following == ["AttemptRecorded", "DispatchSent"], (i, following)


def test_each_command_names_the_worker_incarnation_that_gave_it() -> None:
    """A scenario author's review: with two recovering workers, the two ``look_up`` commands at 15 s could not be
    told apart. Each command entry names its incarnation: here both recovering ones, each giving commands only
    after it started, and never the first dispatcher's (it gives none)."""
    from harness.model.events import CommandGiven, WorkerStarted

    history = simulate(shipped("two_recoverers"), load_policy("reconcile_and_reauthorize"), 1).evidence.history
    started = {e.incarnation: e.index for e in history if isinstance(e, WorkerStarted)}
    recovering = {n for n, _ in started.items() if n != min(started)}
    commands = [e for e in history if isinstance(e, CommandGiven)]
    assert len(recovering) == 2 and {c.incarnation for c in commands} == recovering
    assert all(c.index > started[c.incarnation] for c in commands)
