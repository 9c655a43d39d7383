"""The simulator's actors: each fault boundary, the destination's contract, the controller's guards."""

from __future__ import annotations

from typing import Any

import pytest
import simpy
from conftest import shipped
from test_soundness import COMPARED

from harness.check import check
from harness.model import Artifact
from harness.model.events import (
    Applied,
    ClaimDecided,
    FaultInjected,
    PolicyFailed,
    Received,
    ReplyReceived,
    ReplyUndeliverable,
)
from harness.policy import Command, LookUp, RecordEffect, Situation, Stop, load_policy
from harness.scenario import BOUNDARIES, DestinationSpec, Scenario
from harness.sim import simulate
from harness.sim.auditor import Auditor
from harness.sim.controller import Controller
from harness.sim.destination import Destination
from harness.sim.faults import Injector
from harness.sim.history import History
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
}


def with_changes(base: Scenario, **update: Any) -> Scenario:
    """A validated copy of ``base`` with top-level fields replaced (nested dicts merged)."""
    data = base.model_dump()
    data["approval"]["token"] = base.approval.token.get_secret_value()
    for key, value in update.items():
        data[key] = {**data[key], **value} if isinstance(value, dict) and isinstance(data.get(key), dict) else value
    return Scenario.model_validate(data)


def test_every_boundary_is_covered_here() -> None:
    """This test module exercises every fault boundary the scenario format offers."""
    assert set(FAULTS) == set(BOUNDARIES)


@pytest.mark.parametrize("boundary", sorted(FAULTS))
def test_each_boundary_is_injected_recorded_and_judged_soundly(boundary: str) -> None:
    """A fault at each boundary is injected, recorded in the history, and every known metric is true."""
    scenario = with_changes(shipped("lost_response"), faults=FAULTS[boundary])
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
    assert judgement.outcome == "unresolved"


def test_same_key_after_the_window_applies_again() -> None:
    """Past the deduplication window, the same key is a new operation: a same-key retry duplicates the effect."""
    scenario = with_changes(shipped("lost_response"), destination={"dedupe_window_s": 10.0})
    judgement = check(simulate(scenario, load_policy("retry_same_key"), 1).evidence)
    assert judgement.metrics["duplicate_effects"] == 1 and judgement.outcome == "incorrect"


def test_reconcile_holds_an_absent_action_past_the_window() -> None:
    """Absent, but the deduplication window has passed: reconciling holds instead of retrying."""
    scenario = with_changes(
        shipped("request_lost"), destination={"dedupe_window_s": 10.0}, worker={"restart_delay_s": 20.0}
    )
    result = simulate(scenario, load_policy("reconcile_and_reauthorize"), 1)
    judgement = check(result.evidence)
    assert judgement.metrics["dispatches"] == 1
    assert any(e.event == "held" for e in result.evidence.history) and judgement.outcome == "correct"


def test_rejected_operation_is_recorded_as_rejection() -> None:
    """A destination that refuses the model leaves a rejected receipt, recorded as a rejection, task not completed."""
    scenario = with_changes(shipped("lost_response"), destination={"reject_models": ["m7"]})
    result = simulate(scenario, load_policy("reconcile_and_reauthorize"), 1)
    judgement = check(result.evidence)
    assert any(e.event == "rejection_recorded" for e in result.evidence.history)
    assert judgement.metrics["task_completed"] is False and judgement.outcome == "correct"


def run_destination(on_conflict: str, requests: list[tuple[float, Request]]) -> tuple[list[Reply], History]:
    """Drive the destination alone with requests sent at given times; return its replies and history."""
    env = simpy.Environment()
    history = History(env)
    spec = DestinationSpec(on_conflict=on_conflict)  # type: ignore[arg-type]
    destination = Destination(env, spec, history, Injector((), "a73", history), Auditor(120.0))
    replies: list[Reply] = []

    def send(at: float, request: Request):  # type: ignore[no-untyped-def]
        yield env.timeout(at)
        reply = yield from destination.handle(request)
        replies.append(reply)

    for at, request in requests:
        env.process(send(at, request))
    env.run()
    return replies, history


def request(n: int, model: str = "m7", key: str = "a73") -> Request:
    return Request(
        kind="dispatch",
        action_id="a73",
        n=n,
        idempotency_key=key,
        execution_id=f"a73-x{n}",
        artifact=Artifact(operation="activate", target="staging/fraud", model=model, digest=f"d-{model}"),
    )


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
    assert check(result.evidence).outcome == "unresolved"


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
    assert controller.claim_if_revision("a73", 17) is True
    controller.request_cancel("stop")
    assert controller.claim_if_revision("a73", 17) is False
    _, controller = controller_at(base)
    controller.change_task("m8", "sha256:d8", approved=True)
    assert controller.claim_if_revision("a73", 17) is False
    assert controller.claim_if_revision("a73", 18) is False  # the action belongs to revision 17


def test_claim_is_refused_once_the_approval_has_expired() -> None:
    """An approval is valid strictly before its expiry: a claim at or after it is refused, and dispatch is not authorized."""
    scenario = with_changes(shipped("lost_response"), approval={"expires_at_s": 2.0})
    env, controller = controller_at(scenario)
    env.run(until=1.999)
    assert controller.claim_if_revision("a73", 17) is True and controller.authorized_now("a73")
    env.run(until=2.0)
    assert not controller.authorized_now("a73")
    assert controller.claim_if_revision("a73", 17) is False


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
