"""Behaviour of the simulator that mutation testing found no test asked about (tests/MUTANTS.md lists them).

Each test states a rule of the world the simulator models and derives its expectation from that rule: an
operator event waits for the nth occurrence of what it refers to, and only that one; a fencing destination
lets through what carries an approval in force; a write that contradicts the ledger names what the ledger
holds. None of them names the outcome of a shipped scenario.
"""

from __future__ import annotations

import functools
import os
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import simpy
from conftest import Says, shipped

from harness.check import check
from harness.model.events import (
    ApprovalRevoked,
    AttemptRecorded,
    CancelRequested,
    CancelRequestFired,
    ChangeTaskFired,
    CommandGiven,
    DispatchSent,
    EffectRecorded,
    Event,
    RecordConflict,
    ReplyTimedOut,
    RequestRefused,
)
from harness.policy import (
    AttemptView,
    Command,
    Escalate,
    FollowJob,
    Hold,
    LookUp,
    RecordAbsent,
    RecordEffect,
    RecordRejection,
    RetryNewKey,
    Situation,
    Stop,
    VerifyOutcome,
    Wait,
    load_policy,
)
from harness.scenario import Scenario
from harness.sim import simulate
from harness.sim.history import History


def _scenario(name: str, **changes: Any) -> Scenario:
    data = shipped(name).model_dump()
    for key, value in changes.items():
        if isinstance(value, dict) and isinstance(data.get(key), dict):
            data[key] = data[key] | value
        else:
            data[key] = value
    return Scenario.model_validate(data)


def _after(entry: dict[str, Any], **op: Any) -> dict[str, Any]:
    return op | {"when": {"after": entry}}


def _indexes(history: tuple[Event, ...], cls: type[Event]) -> list[int]:
    return [e.index for e in history if isinstance(e, cls)]


def test_an_operator_event_waits_for_the_nth_occurrence_and_fires_once() -> None:
    """Triggered after the 2nd dispatch sent: it fires after the 2nd send and before the 3rd, exactly once."""
    scenario = _scenario(
        "lost_response",
        faults=[{"boundary": "response_lost", "nth": 1, "count": 3}],
        operator=[_after({"actor": "transport", "event": "send", "nth": 2}, do="request_cancel")],
    )
    history = simulate(scenario, load_policy("retry_same_key"), 1).evidence.history
    sends = _indexes(history, DispatchSent)
    fired = _indexes(history, CancelRequestFired)
    assert len(sends) >= 2 and len(fired) == 1
    assert sends[1] < fired[0] < (sends[2] if len(sends) > 2 else len(history))


def test_an_operator_event_waiting_for_something_later_does_not_hold_up_another() -> None:
    """Two events wait; the one listed first waits for a later entry. The second still fires on its own."""
    scenario = _scenario(
        "lost_response",
        operator=[
            _after({"actor": "worker", "event": "timeout", "nth": 1}, do="expire_approval"),
            _after({"actor": "transport", "event": "send", "nth": 1}, do="request_cancel"),
        ],
    )
    history = simulate(scenario, load_policy("reconcile_and_reauthorize"), 1).evidence.history
    send, timeout = _indexes(history, DispatchSent)[0], _indexes(history, ReplyTimedOut)[0]
    assert send < _indexes(history, CancelRequestFired)[0] < timeout


def test_a_change_of_task_waits_for_its_own_trigger_when_the_first_event_never_comes() -> None:
    """An event whose entry never occurs never fires; one listed after it still does, after its entry."""
    scenario = _scenario(
        "lost_response",
        operator=[
            _after({"actor": "worker", "event": "crashed", "nth": 1}, do="request_cancel"),
            _after({"actor": "worker", "event": "timeout", "nth": 1}, do="change_task", model="m9", digest="d9"),
        ],
    )
    history = simulate(scenario, load_policy("reconcile_and_reauthorize"), 1).evidence.history
    assert not _indexes(history, CancelRequestFired)
    assert _indexes(history, ReplyTimedOut)[0] < _indexes(history, ChangeTaskFired)[0]


def test_a_cancellation_revokes_the_approval_and_says_why() -> None:
    history = simulate(
        _scenario(
            "lost_response", operator=[_after({"actor": "transport", "event": "send", "nth": 1}, do="request_cancel")]
        ),
        load_policy("reconcile_and_reauthorize"),
        1,
    ).evidence.history
    cancel = next(e for e in history if isinstance(e, CancelRequested))
    revoked = next(e for e in history if isinstance(e, ApprovalRevoked))
    assert revoked.index == cancel.index + 1 and revoked.reason == "cancellation requested"


def test_a_fencing_destination_accepts_what_carries_an_approval_in_force() -> None:
    """Fencing refuses only requests whose approval is revoked or expired: with nothing revoked, nothing is
    refused, and the lost reply is reconciled as without fencing."""
    scenario = _scenario("lost_response", destination={"fencing": True})
    history = simulate(scenario, load_policy("reconcile_and_reauthorize"), 1).evidence.history
    assert not _indexes(history, RequestRefused)
    assert _indexes(history, EffectRecorded)


class Contradictor:
    """Reads the outcome, records the effect it saw, then records the action absent: a write the ledger must
    answer with a conflict naming the receipt it holds."""

    name, revision = "contradictor", "1"

    def decide(self, situation: Situation) -> Command:
        receipts = situation.observed_receipts()
        if not receipts:
            return LookUp()
        if situation.recorded is None:
            return RecordEffect(receipt_id=receipts[0].receipt_id)
        if situation.last is not None and situation.last.kind == "record_effect":
            return RecordAbsent(reason="contradicting the ledger")
        return Stop()


def test_an_absence_written_over_an_effect_is_a_conflict_naming_the_recorded_receipt() -> None:
    history = simulate(shipped("lost_response"), Contradictor(), 1).evidence.history  # type: ignore[arg-type]
    effect = next(e for e in history if isinstance(e, EffectRecorded))
    conflict = next(e for e in history if isinstance(e, RecordConflict))
    assert conflict.index > effect.index
    assert (conflict.action_id, conflict.receipt_id, conflict.recorded_receipt_id) == (
        effect.action_id,
        None,
        effect.receipt_id,
    )


def _recorded_artifact(scenario: Scenario) -> tuple[str, str, str, str]:
    from buggy_policies import CORPUS

    trusting = next(c.policy for c in CORPUS if c.policy.name == "reconcile_trusts_any_receipt")
    history = simulate(scenario, trusting, 1).evidence.history
    a = next(e for e in history if isinstance(e, EffectRecorded)).artifact
    return a.operation, a.target, a.model, a.digest


def test_a_foreign_receipt_is_another_deployment_of_the_same_target() -> None:
    """The lookup's foreign receipt keeps the operation and target of what the key holds and names the fault's
    model and digest; a caller that trusts it records exactly that."""
    scenario = shipped("foreign_receipt")
    fault = next(f for f in scenario.faults if f.boundary == "lookup_foreign_receipt")
    task = scenario.task
    assert _recorded_artifact(scenario) == (task.operation, task.target, fault.model, fault.digest)  # type: ignore[attr-defined]


def test_a_foreign_receipt_for_a_key_the_destination_never_saw_names_no_operation() -> None:
    scenario = _scenario(
        "foreign_receipt",
        faults=[{"boundary": "request_lost", "nth": 1}, {"boundary": "lookup_foreign_receipt", "nth": 1}],
    )
    fault = scenario.faults[1]
    assert _recorded_artifact(scenario) == ("unknown", "unknown", fault.model, fault.digest)  # type: ignore[attr-defined]


def test_a_ledger_change_is_visible_to_a_read_as_of_its_own_instant() -> None:
    """What a lagging lookup reads: the operation as it stood at a moment, changes made at that very moment
    included, later ones not."""
    from harness.model import Artifact
    from harness.sim.destination import _Operation

    operation = _Operation(artifact=Artifact(operation="o", target="t", model="m", digest="d"), first_at_s=1.0)
    operation.changes += [(1.0, "pending", None), (2.5, "applied", None)]
    assert operation.as_of(0.5) is None
    assert operation.as_of(1.0) == ("pending", None)
    assert operation.as_of(2.4) == ("pending", None)
    assert operation.as_of(2.5) == ("applied", None)


def test_a_claim_is_refused_once_the_action_is_accounted_for_or_its_dispatch_is_held() -> None:
    """The controller's atomic recheck refuses a claim for an action whose outcome is already recorded (a
    dispatch then could only add an effect) and for an action whose dispatch was held; each refusal says why."""
    from test_sim import controller_at

    from harness.model import Receipt

    scenario = shipped("lost_response")
    _, recorded = controller_at(scenario)
    receipt = Receipt(receipt_id="r1", status="applied", idempotency_key="a73", artifact=scenario.task.artifact)
    recorded.record_effect("a73", receipt, guarded=True)
    refused = recorded.claim_if_revision("a73", scenario.task.revision)
    assert refused is not None and "accounted for as applied" in refused

    _, held = controller_at(scenario)
    held.hold_dispatch("a73", "no longer authorized")
    refused = held.claim_if_revision("a73", scenario.task.revision)
    assert refused is not None and "held" in refused
    assert not held.authorized_now("a73")


def test_an_action_recorded_at_a_revision_nobody_approved_is_never_claimed() -> None:
    """The worker starts after the task moved to a revision without an approval: its action is recorded relying
    on no approval, the claim is refused for that, nothing is sent, and the worker reports it never
    dispatched."""
    from harness.model.events import ActionRecorded, ClaimDecided, WorkerReported

    scenario = _scenario(
        "lost_response",
        worker={"dispatch_at_s": 2.0},
        operator=[{"do": "change_task", "model": "m9", "digest": "d9", "when": {"at_s": 1.0}}],
    )
    history = simulate(scenario, load_policy("reconcile_and_reauthorize"), 1).evidence.history
    action = next(e for e in history if isinstance(e, ActionRecorded))
    claim = next(e for e in history if isinstance(e, ClaimDecided))
    assert (action.revision, action.approval_id) == (scenario.task.revision + 1, "")
    assert not claim.ok and claim.reason == "approval missing, revoked or expired"
    assert not _indexes(history, DispatchSent)
    assert [(e.finished, e.claimed) for e in history if isinstance(e, WorkerReported)] == [(True, "not dispatched")]


class _Watching:
    """Decides as ``inner`` does and keeps every Situation it is shown."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.seen = inner, []
        self.name, self.revision = inner.name, inner.revision

    def decide(self, situation: Situation) -> Command:
        self.seen.append(situation)
        return self.inner.decide(situation)  # type: ignore[no-any-return]


def test_a_recovering_worker_sees_when_its_approval_runs_out() -> None:
    scenario = _scenario("lost_response", approval={"expires_at_s": 100.0})
    watching = _Watching(load_policy("reconcile_and_reauthorize"))
    simulate(scenario, watching, 1)  # type: ignore[arg-type]
    assert watching.seen
    assert {s.approval.expires_at_s for s in watching.seen} == {100.0}


def test_after_the_deadline_the_world_only_settles_what_is_in_flight() -> None:
    """Once every worker has ended and nothing is in flight, the simulation stops: an operator event set off
    before the deadline to act after it never happens (its trigger came; it did not act). (A delay as long as the
    deadline by itself is refused when the scenario loads: after the timeout, near 5 s, this one ends near 124 s.)"""
    scenario = shipped("lost_response")
    late = scenario.recovery_deadline_s - 1.0
    result = simulate(
        _scenario(
            "lost_response",
            operator=[
                {"do": "request_cancel", "when": {"after": {"actor": "worker", "event": "timeout"}, "delay_s": late}}
            ],
        ),
        load_policy("reconcile_and_reauthorize"),
        1,
    )
    assert not _indexes(result.evidence.history, CancelRequestFired)
    assert result.operator_coverage == ((1, 0),)
    assert max(e.at_s for e in result.evidence.history) <= scenario.recovery_deadline_s


def test_a_guarded_completion_needs_the_revisions_own_artifact_and_completes_a_revision_once() -> None:
    from test_sim import controller_at

    from harness.model import Receipt
    from harness.model.events import TaskCompleted, TaskNotCompleted

    scenario = shipped("lost_response")
    _, controller = controller_at(scenario)
    other = scenario.task.artifact.model_copy(update={"model": "m-other"})
    controller.record_effect(
        "a73", Receipt(receipt_id="r1", status="applied", idempotency_key="a73", artifact=other), True
    )
    history = controller._history.entries
    refused = next(e for e in history if isinstance(e, TaskNotCompleted))
    assert "does not match" in refused.reason and controller.task_view().completed_revision is None

    _, controller = controller_at(scenario)
    receipt = Receipt(receipt_id="r1", status="applied", idempotency_key="a73", artifact=scenario.task.artifact)
    controller.record_effect("a73", receipt, True)
    assert controller.task_view().completed_revision == scenario.task.revision
    assert [type(e) for e in controller._history.entries if isinstance(e, TaskCompleted | TaskNotCompleted)] == [
        TaskCompleted
    ]


def test_fault_coverage_counts_every_time_a_site_is_reached_and_never_one_it_was_not() -> None:
    """A fault for three consecutive replies is reached and fires three times when three dispatches are sent;
    one for the fifth reply, never sent, is reached zero times."""
    three = _scenario("lost_response", faults=[{"boundary": "response_lost", "nth": 1, "count": 3}])
    result = simulate(three, load_policy("retry_same_key"), 1)
    assert len(_indexes(result.evidence.history, DispatchSent)) == 4
    assert result.coverage == ((3, 3),)
    fifth = _scenario("lost_response", faults=[{"boundary": "response_lost", "nth": 5}])
    assert simulate(fifth, load_policy("reconcile_and_reauthorize"), 1).coverage == ((0, 0),)


def test_a_lookup_reads_the_target_itself_even_while_the_connector_is_down() -> None:
    """A lookup inspects the target's durable result directly: a device connector that crashed and has not
    restarted yet does not stand in its way (a job follow would get no answer)."""
    from harness.model.events import ConnectorCrashed, ConnectorRestarted, LookupAnswered

    scenario = _scenario("connector_crash_while_running", connector={"wait_s": 4.0, "restart_s": 600.0})
    history = simulate(scenario, load_policy("reconcile_and_reauthorize"), 1).evidence.history
    down, up = _indexes(history, ConnectorCrashed)[0], (_indexes(history, ConnectorRestarted) or [len(history)])[0]
    assert any(down < i < up for i in _indexes(history, LookupAnswered))


def test_an_operator_event_at_a_time_fires_its_delay_later() -> None:
    scenario = _scenario("lost_response", operator=[{"do": "request_cancel", "when": {"at_s": 1.0, "delay_s": 2.5}}])
    history = simulate(scenario, load_policy("reconcile_and_reauthorize"), 1).evidence.history
    assert [e.at_s for e in history if isinstance(e, CancelRequestFired)] == [3.5]


def test_the_dedupe_window_and_the_request_validity_include_their_last_instant() -> None:
    """A window of W seconds still deduplicates a request arriving exactly W after the first; a validity of V
    seconds still accepts a request arriving exactly V after it was sent."""
    from test_sim import request, run_destination

    from harness.model.events import Accepted, ReplayedByDestination

    _, history = run_destination("reject", [(0.0, request(1)), (30.0, request(2))], dedupe_window_s=30.0)
    assert len(_indexes(history.entries, Accepted)) == 1 and _indexes(history.entries, ReplayedByDestination)
    _, history = run_destination("reject", [(0.0, request(1)), (30.5, request(2))], dedupe_window_s=30.0)
    assert len(_indexes(history.entries, Accepted)) == 2

    _, history = run_destination("reject", [(10.0, request(1, sent_at_s=0.0))], request_validity_s=10.0)
    assert _indexes(history.entries, Accepted) and not _indexes(history.entries, RequestRefused)
    _, history = run_destination("reject", [(10.5, request(1, sent_at_s=0.0))], request_validity_s=10.0)
    assert _indexes(history.entries, RequestRefused)


def test_a_revision_is_completed_once_even_by_two_actions() -> None:
    """Two actions of the same revision each record an applied receipt for its artifact: the first completes
    the task, the second is told the revision is already completed."""
    from test_sim import controller_at

    from harness.model import Receipt
    from harness.model.events import TaskCompleted, TaskNotCompleted

    scenario = shipped("lost_response")
    _, controller = controller_at(scenario)
    controller.record_action("a74")
    for action_id, receipt_id in (("a73", "r1"), ("a74", "r2")):
        receipt = Receipt(
            receipt_id=receipt_id, status="applied", idempotency_key=action_id, artifact=scenario.task.artifact
        )
        controller.record_effect(action_id, receipt, True)
    outcomes = [e for e in controller._history.entries if isinstance(e, TaskCompleted | TaskNotCompleted)]
    assert [type(e) for e in outcomes] == [TaskCompleted, TaskNotCompleted]
    assert outcomes[1].reason == "revision already completed"  # type: ignore[union-attr]


class _Script:
    """Answers each decision with the next command of a script (a function of the Situation), then stops."""

    name, revision = "script", "1"

    def __init__(self, *steps: Any) -> None:
        self.steps = list(steps)

    def decide(self, situation: Situation) -> Command:
        return self.steps.pop(0)(situation) if self.steps else Stop()


def test_ground_truth_counts_an_absence_recorded_over_an_accepted_operation_as_false() -> None:
    """The destination accepted the operation and never applied it: an absence recorded after that is false (an
    operation it accepted may still apply); the second absence is refused, so it is recorded once."""
    scenario = _scenario("lost_response", faults=[{"boundary": "accepted_not_applied"}])
    absent = RecordAbsent()
    truth = simulate(scenario, _Script(lambda s: absent, lambda s: absent), 1).truth  # type: ignore[arg-type]
    assert (truth.false_records, truth.duplicate_records, truth.duplicate_effects) == (1, 0, 0)


def test_ground_truth_a_recorded_rejection_is_true() -> None:
    """A rejection the destination really gave, recorded, is neither false nor a duplicate."""
    scenario = _scenario("lost_response", destination={"reject_models": ["m7"]}, faults=[])
    rejected = RecordRejection(receipt_id="r1")
    result = simulate(scenario, _Script(lambda s: rejected), 1)  # type: ignore[arg-type]
    assert [e.event for e in result.evidence.history if e.event == "rejection_recorded"]
    assert (result.truth.false_records, result.truth.duplicate_records) == (0, 0)


@pytest.mark.parametrize("escalate", [False, True])
def test_ground_truth_an_action_accounted_for_exactly_at_the_deadline_is_in_time(escalate: bool) -> None:
    """The deadline's own instant is still in time, for the auditor as for the checker: an effect recorded then
    is accounted for, an escalation then is not an abandonment. (A worker stops at the deadline, so only the
    controller can be driven there.)"""
    from test_sim import controller_at

    from harness.model import Receipt

    scenario = shipped("lost_response")
    env, controller = controller_at(scenario)
    env.run(until=scenario.recovery_deadline_s)
    if escalate:
        controller.escalate("a73", "owner", "unsure")
    else:
        receipt = Receipt(receipt_id="r1", status="applied", idempotency_key="a73", artifact=scenario.task.artifact)
        controller.record_effect("a73", receipt, guarded=True)
    truth = controller._auditor.truth()
    assert (truth.abandoned_actions, truth.unresolved_actions) == (0, 1 if escalate else 0)


def test_a_withheld_ledger_withholds_the_connectors_entries_too() -> None:
    """Without the destination's ledger, the evidence keeps the caller's side only: the device connector's own
    entries (its local ledger of started and completed jobs) go with the destination's."""
    scenario = shipped("connector_wait_expires")
    visible = simulate(scenario, load_policy("follow_and_inspect"), 1).evidence.history
    withheld = _scenario("connector_wait_expires", destination={"ledger_visible": False})
    hidden = simulate(withheld, load_policy("follow_and_inspect"), 1).evidence.history
    assert {e.actor for e in visible} >= {"connector", "destination", "worker"}
    assert not {e.actor for e in hidden} & {"connector", "destination"} and "worker" in {e.actor for e in hidden}


def test_a_record_names_an_observed_receipt_of_the_status_it_records() -> None:
    """The worker records only a receipt it saw with the status the command names: a rejection citing an
    applied receipt is refused, saying so; the same receipt recorded as an effect is accepted."""
    from harness.model.events import CommandRefused, RejectionRecorded

    scenario = shipped("lost_response")
    script = _Script(
        lambda s: LookUp(), lambda s: RecordRejection(receipt_id="r1"), lambda s: RecordEffect(receipt_id="r1")
    )
    history = simulate(scenario, script, 1).evidence.history  # type: ignore[arg-type]
    assert [e.reason for e in history if isinstance(e, CommandRefused)] == ["no observed rejected receipt r1"]
    assert not _indexes(history, RejectionRecorded) and len(_indexes(history, EffectRecorded)) == 1


def test_a_read_answered_after_it_timed_out_reaches_no_one() -> None:
    """A lookup slower than the caller's patience: the caller records the timeout, and the answer that comes
    later is undeliverable (the caller stopped listening), not received."""
    from harness.model.events import LookupTimedOut, ReplyReceived, ReplyUndeliverable

    scenario = _scenario("lost_response", destination={"lookup_s": 3.0})
    history = simulate(scenario, _Script(lambda s: LookUp(), lambda s: Wait(duration_s=5.0)), 1).evidence.history  # type: ignore[arg-type]
    assert len(_indexes(history, LookupTimedOut)) == 1
    assert [e.kind for e in history if isinstance(e, ReplyUndeliverable)] == ["lookup"]
    assert not [e for e in history if isinstance(e, ReplyReceived) and e.kind == "lookup"]


def test_a_job_follow_is_given_the_connectors_wait_on_top_of_the_read_timeout() -> None:
    """A follow waits at the connector up to its wait (4 s) for a running job: the caller allows for that on top
    of its 2 s read timeout, so the connector's "running" answer reaches it; a lookup gets no such allowance."""
    from harness.model.events import LookupTimedOut

    scenario = _scenario("connector_wait_expires", destination={"apply_s": 60.0})
    watching = _Watching(_Script(lambda s: FollowJob(), lambda s: Stop()))
    history = simulate(scenario, watching, 1).evidence.history  # type: ignore[arg-type]
    assert not _indexes(history, LookupTimedOut)
    (follow,) = watching.seen[-1].lookups
    assert (follow.source, follow.effect, follow.job_id) == ("follow_job", "running", "job-1")


def test_the_receipts_a_worker_keeps_from_its_reads_are_each_receipt_read() -> None:
    """Two lookups answered with different receipts (a foreign one, then the real one): the Situation's receipts
    are both, as derived from its reads."""
    scenario = _scenario(
        "lost_response",
        faults=[*shipped("lost_response").model_dump()["faults"], {"boundary": "lookup_foreign_receipt"}],
    )
    watching = _Watching(_Script(lambda s: LookUp(), lambda s: LookUp()))
    simulate(scenario, watching, 1)  # type: ignore[arg-type]
    last = watching.seen[-1]
    derived = Situation.model_validate(last.model_dump()).observed_receipts()
    assert [r.receipt_id for r in last.observed_receipts()] == [r.receipt_id for r in derived] == ["rx1", "r1"]


def test_a_verification_shows_the_caller_what_the_tool_server_verified() -> None:
    """Through the bridge, a verification's answer reaches the policy as the tool server gave it: the same result
    the destination recorded for the read."""
    from harness.model.events import OutcomeVerified
    from harness.policy import VerifyOutcome

    scenario = _scenario("bridge_verify_times_out", faults=[{"boundary": "response_lost"}])
    watching = _Watching(_Script(lambda s: VerifyOutcome(), lambda s: Stop()))
    history = simulate(scenario, watching, 1).evidence.history  # type: ignore[arg-type]
    recorded = [e.result for e in history if isinstance(e, OutcomeVerified)]
    shown = [(r.source, r.verified) for r in watching.seen[-1].lookups]
    assert recorded and shown == [("verify", recorded[0])]


@pytest.mark.parametrize("answered", [True, False])
def test_every_read_shows_the_policy_what_was_sent_when_and_what_came_back(answered: bool) -> None:
    """Each read in a Situation says which kind of read it was and when it was sent (the send the transport
    recorded); one that timed out is unknown, and a verification that timed out is unverified (``unknown``)
    while a lookup that timed out verifies nothing (``None``). A slow destination (3 s against a 2 s patience)
    makes every read time out."""
    from harness.model.events import LookupSent, VerifySent
    from harness.policy import VerifyOutcome

    slow = {} if answered else {"destination": {"lookup_s": 3.0}}
    scenario = _scenario("bridge_verify_times_out", faults=[{"boundary": "response_lost"}], **slow)
    watching = _Watching(_Script(lambda s: LookUp(), lambda s: VerifyOutcome(), lambda s: Stop()))
    history = simulate(scenario, watching, 1).evidence.history  # type: ignore[arg-type]
    sent = [(e.kind, e.at_s) for e in history if isinstance(e, LookupSent | VerifySent)]
    reads = watching.seen[-1].lookups
    assert [(r.source, r.sent_at_s) for r in reads] == sent and len(sent) == 2
    lookup, verify = reads
    if answered:
        assert (lookup.effect, lookup.verified) == ("applied", None)
        assert (verify.effect, verify.verified) == ("applied", "confirmed")
    else:
        assert (lookup.effect, lookup.verified, verify.effect, verify.verified) == (
            "unknown",
            None,
            "unknown",
            "unknown",
        )


@pytest.mark.parametrize(
    ("destination", "recorded", "claimed"),
    [({}, "effect_recorded", "completed"), ({"reject_models": ["m7"]}, "rejection_recorded", "rejected")],
)
def test_a_dispatch_answered_with_a_receipt_is_recorded_at_once_under_the_guard(
    destination: dict[str, Any], recorded: str, claimed: str
) -> None:
    """The ordinary path: a reply with a receipt is recorded by the dispatcher itself, guarded, and it reports
    finished; no recovery starts and the policy is never asked."""
    from harness.model.events import WorkerReported, WorkerStarted

    scenario = _scenario("lost_response", faults=[], destination=destination)
    watching = _Watching(load_policy("reconcile_and_reauthorize"))
    history = simulate(scenario, watching, 1).evidence.history  # type: ignore[arg-type]
    assert not watching.seen
    assert [e.role for e in history if isinstance(e, WorkerStarted)] == ["dispatcher"]
    (record,) = [e for e in history if e.event == recorded]
    assert record.guarded is True  # type: ignore[attr-defined]
    assert [(e.finished, e.claimed) for e in history if isinstance(e, WorkerReported)] == [(True, claimed)]


def test_what_became_of_each_command_is_shown_to_the_policy_and_each_new_key_is_new() -> None:
    """After each command the Situation says which it was and whether it was refused, with the reason; every
    retry under a new key gets the next key."""
    scenario = _scenario("lost_response", faults=[{"boundary": "response_lost", "count": None}])
    watching = _Watching(
        _Script(
            lambda s: RetryNewKey(),
            lambda s: RetryNewKey(),
            lambda s: RecordRejection(receipt_id="nothing"),
            lambda s: LookUp(),
        )
    )
    history = simulate(scenario, watching, 1).evidence.history  # type: ignore[arg-type]
    lasts = [(s.last.kind, s.last.refused, s.last.reason) if s.last else None for s in watching.seen]
    assert lasts[1:] == [
        ("retry_new_key", False, None),
        ("retry_new_key", False, None),
        ("record_rejection", True, "no observed rejected receipt nothing"),
        ("look_up", False, None),
    ]
    assert [e.idempotency_key for e in history if isinstance(e, DispatchSent)] == ["a73", "a73.k1", "a73.k2"]
    assert [r.reason for r in watching.seen[-1].refusals] == ["no observed rejected receipt nothing"]


def test_a_refused_claim_is_shown_as_refused_with_the_controllers_reason() -> None:
    """A retry whose claim the controller refuses (the task was cancelled) is not sent; the policy sees the
    retry refused, with the controller's reason."""
    scenario = _scenario(
        "lost_response", operator=[_after({"actor": "transport", "event": "send", "nth": 1}, do="request_cancel")]
    )
    watching = _Watching(_Script(lambda s: RetryNewKey(claim=True), lambda s: Stop()))
    history = simulate(scenario, watching, 1).evidence.history  # type: ignore[arg-type]
    last = watching.seen[-1].last
    assert last is not None and (last.kind, last.refused) == ("retry_new_key", True)
    assert last.reason == "claim refused: cancellation requested"
    assert len(_indexes(history, DispatchSent)) == 1


def test_ground_truth_a_new_key_after_a_rejection_reached_the_caller_is_not_a_key_while_unknown() -> None:
    """A rejection that reaches the caller late (after its timeout) settles the outcome: a retry under a new key
    after it is no new key while the outcome was unknown."""
    scenario = _scenario(
        "lost_response",
        destination={"reject_models": ["m7"]},
        faults=[{"boundary": "response_delayed", "delay_s": 6.0}],
    )
    watching = _Watching(_Script(lambda s: RetryNewKey(), lambda s: Stop()))
    result = simulate(scenario, watching, 1)  # type: ignore[arg-type]
    first = watching.seen[0].attempts[0]
    assert (first.late, first.response_status) == (True, "rejected")  # it reached the caller, late
    assert len(_indexes(result.evidence.history, DispatchSent)) == 2
    assert result.truth.new_keys_while_unknown == 0


def test_ground_truth_a_rejection_settles_the_operations_before_it_not_the_next_one() -> None:
    """A rejection that reached the caller (late) settles the dispatch it answered; a retry under a new key after it
    is a new operation, and when that one's reply is lost, a third key is a new key while the outcome was unknown
    (the checker counts it from the evidence too). Found when both took any earlier receipt as knowing for ever."""
    scenario = _scenario(
        "lost_response",
        destination={"reject_models": ["m7"]},
        faults=[{"boundary": "response_delayed", "delay_s": 6.0}, {"boundary": "response_lost", "nth": 2}],
    )
    watching = _Watching(_Script(lambda s: RetryNewKey(), lambda s: RetryNewKey(), lambda s: Stop()))
    result = simulate(scenario, watching, 1)  # type: ignore[arg-type]
    assert [a.response_status for a in watching.seen[-1].attempts] == ["rejected", None, "rejected"]
    assert len(_indexes(result.evidence.history, DispatchSent)) == 3
    assert result.truth.new_keys_while_unknown == 1
    found = {r.name: r for r in check(result.evidence).results}["new_keys_while_unknown"]
    (anomaly,) = found.anomalies
    assert found.value == 1 and anomaly.witnesses == (_indexes(result.evidence.history, DispatchSent)[2],)


def test_ground_truth_a_rejection_read_settles_the_operations_before_it_not_the_next_one() -> None:
    """The same when a lookup reads the rejection (the reply was lost): a retry under a new key after that read is
    not a new key while unknown; when its reply is lost too, the next key is."""
    scenario = _scenario(
        "lost_response",
        destination={"reject_models": ["m7"]},
        faults=[{"boundary": "response_lost", "nth": 1}, {"boundary": "response_lost", "nth": 2}],
    )
    script = (lambda s: LookUp(), lambda s: RetryNewKey(), lambda s: RetryNewKey(), lambda s: Stop())
    watching = _Watching(_Script(*script))
    result = simulate(scenario, watching, 1)  # type: ignore[arg-type]
    assert [r.effect for r in watching.seen[1].lookups] == ["rejected"]
    sent = _indexes(result.evidence.history, DispatchSent)
    assert len(sent) == 3 and result.truth.new_keys_while_unknown == 1
    found = {r.name: r for r in check(result.evidence).results}["new_keys_while_unknown"]
    assert found.value == 1 and found.anomalies[0].witnesses == (sent[2],)


def test_ground_truth_a_connectors_absent_settles_nothing_before_a_new_key() -> None:
    """A job follow the connector answers absent (its ledger holds no record of the key: the request was lost on
    the way) says nothing about the target: a retry under a new key after it is a new key while unknown."""
    scenario = _scenario("connector_wait_expires", faults=[{"boundary": "request_lost"}])
    watching = _Watching(_Script(lambda s: FollowJob(), lambda s: RetryNewKey(), lambda s: Stop()))
    result = simulate(scenario, watching, 1)  # type: ignore[arg-type]
    assert [(r.source, r.effect) for r in watching.seen[1].lookups] == [("follow_job", "absent")]
    assert result.truth.new_keys_while_unknown == 1


@pytest.mark.parametrize(
    ("steps", "claimed"),
    [
        ((lambda s: LookUp(), lambda s: RecordEffect(receipt_id="r1")), "completed"),
        ((lambda s: RecordAbsent(),), "absent"),
        ((lambda s: Escalate(reason="unsure"),), "escalated"),
        ((), "gave up"),
    ],
)
def test_a_worker_that_stops_reports_what_the_ledger_holds_for_its_action(steps: tuple[Any, ...], claimed: str) -> None:
    """The worker's own account when its policy stops: the recorded outcome, else escalated, else gave up."""
    from harness.model.events import WorkerReported

    history = simulate(shipped("lost_response"), _Script(*steps), 1).evidence.history  # type: ignore[arg-type]
    reports = [(e.finished, e.claimed) for e in history if isinstance(e, WorkerReported)]
    assert reports[-1] == (True, claimed)


def test_a_rejection_recorded_in_recovery_is_reported_as_rejected() -> None:
    from harness.model.events import WorkerReported

    scenario = _scenario("lost_response", destination={"reject_models": ["m7"]}, faults=[{"boundary": "response_lost"}])
    script = _Script(lambda s: LookUp(), lambda s: RecordRejection(receipt_id="r1"))
    history = simulate(scenario, script, 1).evidence.history  # type: ignore[arg-type]
    assert [(e.finished, e.claimed) for e in history if isinstance(e, WorkerReported)][-1] == (True, "rejected")


def test_a_late_reply_to_a_retry_already_shown_as_timed_out_is_shown_with_its_receipt() -> None:
    """A retry times out, the policy is shown that, then its reply arrives: the next Situation shows the retry
    answered late with its receipt, and that receipt among the receipts observed (no read brought any)."""
    from harness.policy import RetrySameAction

    scenario = _scenario(
        "lost_response",
        faults=[{"boundary": "response_lost", "nth": 1}, {"boundary": "response_delayed", "nth": 2, "delay_s": 6.0}],
    )
    watching = _Watching(_Script(lambda s: RetrySameAction(), lambda s: Wait(duration_s=5.0), lambda s: Stop()))
    simulate(scenario, watching, 1)  # type: ignore[arg-type]
    timed_out, answered = watching.seen[1], watching.seen[2]
    assert [a.observation for a in timed_out.attempts] == ["timeout", "timeout"]
    retry = answered.attempts[1]
    assert (retry.observation, retry.late) == ("response", True) and retry.receipt is not None
    assert not answered.lookups
    derived = Situation.model_validate(answered.model_dump()).observed_receipts()
    assert list(answered.observed_receipts()) == list(derived) == [retry.receipt]


def test_a_new_incarnation_sees_the_attempts_of_a_crashed_one_as_unknown() -> None:
    """The dispatcher crashes awaiting its reply; the process started to recover it (role recovery) sees that
    attempt from the controller's ledger only: its execution, key and recording time, whether it was sent
    unknown, its outcome unknown."""
    from harness.model.events import WorkerStarted

    scenario = shipped("crash_awaiting_reply")
    watching = _Watching(_Script(lambda s: Stop()))
    history = simulate(scenario, watching, 1).evidence.history  # type: ignore[arg-type]
    assert [e.role for e in history if isinstance(e, WorkerStarted)] == ["dispatcher", "recovery"]
    (attempt,) = watching.seen[0].attempts
    sent = next(e for e in history if isinstance(e, DispatchSent))
    assert (attempt.execution_id, attempt.idempotency_key) == (sent.execution_id, sent.idempotency_key)
    assert (attempt.sent, attempt.observation, attempt.receipt) == (None, "unknown", None)


def test_at_the_deadline_a_recovering_worker_stops_unfinished_without_asking_again() -> None:
    """A wait that ends exactly at the recovery deadline: the worker records that the deadline came and reports
    itself unfinished; the policy is not asked again (no command is carried out at the deadline)."""
    from harness.model.events import DeadlineReached, WorkerReported

    scenario = _scenario("lost_response", worker={"wait_max_s": 200.0})
    until = lambda s: Wait(duration_s=s.deadline_s - s.now_s)  # noqa: E731
    watching = _Watching(_Script(until, lambda s: RecordEffect(receipt_id="r1")))
    history = simulate(scenario, watching, 1).evidence.history  # type: ignore[arg-type]
    assert len(watching.seen) == 1
    assert [e.at_s for e in history if isinstance(e, DeadlineReached)] == [scenario.recovery_deadline_s]
    assert [(e.finished, e.claimed) for e in history if isinstance(e, WorkerReported)][-1] == (False, "gave up")
    assert not _indexes(history, EffectRecorded)


@pytest.mark.parametrize(
    ("scenario", "via"),
    [("lost_response", "direct"), ("bridge_verify_times_out", "bridge"), ("connector_wait_expires", "connector")],
)
def test_the_situation_says_what_stands_between_the_caller_and_the_target(scenario: str, via: str) -> None:
    watching = _Watching(_Script(lambda s: Stop()))
    simulate(_scenario(scenario, faults=[{"boundary": "response_lost"}]), watching, 1)  # type: ignore[arg-type]
    assert watching.seen[0].contract.via == via


@pytest.mark.parametrize(
    "command",
    [
        LookUp(),
        FollowJob(),
        RecordAbsent(),
        Wait(duration_s=1.0),
        Escalate(reason="unsure"),
        Hold(reason="no longer authorized"),
        VerifyOutcome(),
    ],
    ids=lambda c: c.kind,
)
def test_the_next_situation_names_the_command_just_carried_out(command: Command) -> None:
    """Whatever the command, the Situation after it says which it was and that it was carried out."""
    watching = _Watching(_Script(lambda s: command, lambda s: Stop()))
    simulate(shipped("lost_response"), watching, 1)  # type: ignore[arg-type]
    last = watching.seen[1].last
    assert last is not None and (last.kind, last.refused, last.reason) == (command.kind, False, None)


def test_ground_truth_an_outcome_once_known_stays_known_after_a_later_absent_read() -> None:
    """The caller read the effect (applied), then retried under new keys (their replies lost); a read of a new
    key whose request never arrived answers absent. The outcome was known from the first read on, so none of the
    new keys is a key sent while the outcome was unknown."""
    scenario = _scenario(
        "lost_response",
        faults=[
            {"boundary": "response_lost", "nth": 1, "count": 1},
            {"boundary": "request_lost", "nth": 2, "count": 1},
            {"boundary": "response_lost", "nth": 3, "count": 1},
        ],
    )
    script = _Script(
        lambda s: LookUp(),
        lambda s: RetryNewKey(),
        lambda s: LookUp(),
        lambda s: RetryNewKey(),
        lambda s: RetryNewKey(),
    )
    watching = _Watching(script)
    result = simulate(scenario, watching, 1)  # type: ignore[arg-type]
    assert [r.effect for r in watching.seen[3].lookups] == ["applied", "absent"]
    assert len(_indexes(result.evidence.history, DispatchSent)) == 4
    assert result.truth.new_keys_while_unknown == 0


def test_after_the_deadline_a_request_still_on_the_wire_still_arrives() -> None:
    """Every worker has ended, but the first request is still delayed on the wire past the deadline: the world
    settles it, so its late arrival at the destination is in the evidence (here refused as too old)."""
    from harness.model.events import Received

    scenario = _scenario("lost_response", faults=[{"boundary": "request_delayed", "delay_s": 130.0}])
    result = simulate(scenario, _Script(lambda s: Stop()), 1)  # type: ignore[arg-type]
    arrived = [e.at_s for e in result.evidence.history if isinstance(e, Received)]
    assert len(arrived) == 1 and arrived[0] > scenario.recovery_deadline_s


def _view_of(recorded: AttemptRecorded, **observed: Any) -> AttemptView:
    """The view of the attempt the controller recorded in ``recorded``, validated, with what was observed of it."""
    return AttemptView(
        execution_id=recorded.execution_id,
        idempotency_key=recorded.idempotency_key,
        recorded_at_s=recorded.at_s,
        **observed,
    )


def test_an_attempt_no_reply_reached_is_shown_with_nothing_observed_of_it() -> None:
    """The dispatcher crashes awaiting its reply; the recovering incarnation retries and that retry times out.
    The policy is shown both with what is known of them and nothing more: the crashed one's identity, sent or
    not unknown; the retry's identity, sent when recorded, timed out. Neither late, answered, given a receipt,
    a job or a do-not-replay mark. Every Situation survives a round trip through its JSON form (no field
    missing)."""
    from harness.policy import RetrySameAction

    scenario = _scenario(
        "crash_awaiting_reply",
        faults=[{"boundary": "crash_awaiting_reply", "nth": 1}, {"boundary": "response_lost", "nth": 2}],
    )
    watching = _Watching(_Script(lambda s: RetrySameAction(), lambda s: Stop()))
    history = simulate(scenario, watching, 1).evidence.history  # type: ignore[arg-type]
    recorded = [e for e in history if isinstance(e, AttemptRecorded)]
    assert len(recorded) == 2 and len(watching.seen) == 2
    crashed, retry = recorded
    assert list(watching.seen[1].attempts) == [
        _view_of(crashed, sent=None, sent_at_s=None, observation="unknown"),
        _view_of(retry, sent=True, sent_at_s=retry.at_s, observation="timeout"),
    ]
    for situation in watching.seen:
        assert Situation.model_validate(situation.model_dump()).__dict__ == situation.__dict__


class _Raising:
    name, revision = "raising", "1"

    def __init__(self, message: str) -> None:
        self.message = message

    def decide(self, situation: Situation) -> Command:
        raise LookupError(self.message)


@pytest.mark.parametrize("length", [10, 300, 1987, 1988, 100_000])
def test_a_policy_that_raises_is_recorded_by_its_exception_and_reports_a_policy_error(length: int) -> None:
    """The policy's exception is recorded as its type and message, cut at STRING_MAX (2,000) characters with the
    cut said, as every text of a policy is (it was cut at 300, and the README said 2,000); the worker reports
    itself unfinished with "policy error" and is asked nothing more."""
    from harness.model.events import PolicyFailed, WorkerReported

    message = "m" * length
    history = simulate(shipped("lost_response"), _Raising(message), 1).evidence.history  # type: ignore[arg-type]
    text = f"LookupError: {message}"
    expected = text if len(text) <= 2000 else f"{text[:2000]}...[cut: {len(text) - 2000} more characters]"
    expected += f" (at line {_Raising.decide.__code__.co_firstlineno + 1} of {__name__}, in decide)"  # kept whole
    assert [e.error for e in history if isinstance(e, PolicyFailed)] == [expected]
    assert [(e.finished, e.claimed) for e in history if isinstance(e, WorkerReported)][-1] == (False, "policy error")
    assert history[-1].event == "report"


class _LoudStop(Stop):
    """A policy's own kind of Stop: a command, though of no class of the closed set itself."""


@pytest.mark.parametrize("make", [Escalate, _LoudStop], ids=["Escalate", "a subclass of Stop"])
def test_a_command_is_carried_out_as_one_of_the_closed_set_with_its_texts_cut(make: type[Stop | Escalate]) -> None:
    """What a policy returns is validated again as a member of the closed set: a command of the set's own class
    as it is, an instance of a subclass as the set's class it derives from; either way every text it carries is
    cut at STRING_MAX (2,000) characters, the cut said."""
    history = simulate(shipped("lost_response"), Says(make(reason="r" * 5000)), 1).evidence.history  # type: ignore[arg-type]
    given = [e.command for e in history if isinstance(e, CommandGiven)]
    assert given and all(type(c) is (Stop if make is _LoudStop else Escalate) for c in given)
    assert all(c.reason == "r" * 2000 + "...[cut: 3000 more characters]" for c in given)  # type: ignore[union-attr]


class _NotedStop(Stop):
    notes: list[str] = ["n" * 5000]


def test_a_command_with_a_field_no_command_has_is_the_policys_error() -> None:
    """A subclass's own field is no part of any command: the answer is refused and recorded as the policy's
    error, naming the field, and nothing is carried out."""
    from harness.model.events import PolicyFailed

    history = simulate(shipped("lost_response"), Says(_NotedStop()), 1).evidence.history  # type: ignore[arg-type]
    (error,) = [e.error for e in history if isinstance(e, PolicyFailed)]
    assert error.startswith("ValidationError") and "notes" in error and "Extra inputs are not permitted" in error
    assert not [e for e in history if isinstance(e, CommandGiven)]


class _Endless:
    name, revision = "endless", "1"

    def __init__(self, *first: Any) -> None:
        self.first = list(first)

    def decide(self, situation: Situation) -> Command:
        return self.first.pop(0)(situation) if self.first else Wait(duration_s=1.0)


@pytest.mark.parametrize(
    ("first", "claimed"),
    [((), "gave up"), ((lambda s: LookUp(), lambda s: RecordEffect(receipt_id="r1")), "completed")],
)
def test_a_worker_out_of_commands_reports_itself_unfinished_with_what_the_ledger_holds(
    first: tuple[Any, ...], claimed: str
) -> None:
    """A policy that never stops, with three commands allowed: after the third the worker records the budget
    spent and reports itself unfinished, claiming what the controller's ledger holds for the action."""
    from harness.model.events import CommandBudgetExhausted, CommandGiven, WorkerReported

    scenario = _scenario("lost_response", worker={"command_count_max": 3})
    history = simulate(scenario, _Endless(*first), 1).evidence.history  # type: ignore[arg-type]
    assert len([e for e in history if isinstance(e, CommandGiven)]) == 3
    assert [e.count_max for e in history if isinstance(e, CommandBudgetExhausted)] == [3]
    assert [(e.finished, e.claimed) for e in history if isinstance(e, WorkerReported)][-1] == (False, claimed)


def test_a_policy_is_shown_how_many_commands_it_may_still_give() -> None:
    """``commands_left`` counts down from the budget, a Wait counting as one, to 1 at the last decision: a policy
    can see when the command it returns is its last (there is nothing else in the Situation to tell it)."""

    class Counting(_Endless):
        def __init__(self) -> None:
            super().__init__()
            self.left: list[int | None] = []

        def decide(self, situation: Situation) -> Command:
            self.left.append(situation.commands_left)
            return super().decide(situation)

    policy = Counting()
    simulate(_scenario("lost_response", worker={"command_count_max": 4}), policy, 1)  # type: ignore[arg-type]
    assert policy.left == [4, 3, 2, 1]


def test_a_dispatch_answered_without_a_receipt_is_shown_with_its_reply() -> None:
    """The device connector's wait runs out before the job finishes: it answers the dispatch "running" and
    names the job. The policy is shown that attempt sent when recorded, answered (not late) at the moment the
    reply arrived, with that status and that job, and no receipt."""
    from harness.model.events import JobStarted, ReplyReceived

    watching = _Watching(_Script(lambda s: Stop()))
    history = simulate(shipped("connector_wait_expires"), watching, 1).evidence.history  # type: ignore[arg-type]
    (recorded,) = [e for e in history if isinstance(e, AttemptRecorded)]
    (job,) = [e for e in history if isinstance(e, JobStarted)]
    (reply,) = [e for e in history if isinstance(e, ReplyReceived) and e.kind == "dispatch"]
    assert reply.status == "running" and job.execution_id == recorded.execution_id
    assert list(watching.seen[0].attempts) == [
        _view_of(
            recorded,
            sent=True,
            sent_at_s=recorded.at_s,
            observation="response",
            response_status="running",
            replied_at_s=reply.at_s,
            job_id=job.job_id,
        )
    ]


@pytest.mark.parametrize("at_s", [0.0, 0.5, 2.0])
def test_a_worker_starts_at_its_dispatch_time(at_s: float) -> None:
    from harness.model.events import WorkerStarted

    scenario = _scenario("lost_response", worker={"dispatch_at_s": at_s})
    history = simulate(scenario, load_policy("reconcile_and_reauthorize"), 1).evidence.history
    assert next(e for e in history if isinstance(e, WorkerStarted)).at_s == at_s


def test_incarnations_are_numbered_from_one_in_the_order_they_start() -> None:
    """The dispatcher is incarnation 1; it crashes awaiting its reply, and the process started in its place is
    2, which reports. With two recoverers after a timeout, the dispatcher going on is 2 and the new process 3."""
    from harness.model.events import WorkerCrashed, WorkerReported, WorkerStarted

    history = simulate(shipped("crash_awaiting_reply"), _Script(lambda s: Stop()), 1).evidence.history  # type: ignore[arg-type]
    assert [e.incarnation for e in history if isinstance(e, WorkerStarted)] == [1, 2]
    assert [e.incarnation for e in history if isinstance(e, WorkerCrashed)] == [1]
    assert [e.incarnation for e in history if isinstance(e, WorkerReported)] == [2]
    two = simulate(shipped("two_recoverers"), _Script(), 1).evidence.history  # type: ignore[arg-type]
    assert [e.incarnation for e in two if isinstance(e, WorkerStarted)] == [1, 2, 3]
    assert sorted(e.incarnation for e in two if isinstance(e, WorkerReported)) == [2, 3]


def test_of_two_recoverers_only_the_dispatcher_going_on_remembers_its_attempt() -> None:
    """After the timeout the dispatcher goes on recovering and a second process starts beside it. The first
    still sees its attempt timed out and was started with the case; the second knows the attempt only from
    the controller's ledger (unknown) and was started after the restart delay."""
    from harness.model.events import WorkerStarted

    scenario = shipped("two_recoverers")
    watching = _Watching(_Script())
    history = simulate(scenario, watching, 1).evidence.history  # type: ignore[arg-type]
    starts = {e.incarnation: e.at_s for e in history if isinstance(e, WorkerStarted)}
    seen = sorted((s.started_at_s, s.attempts[0].observation) for s in watching.seen)
    assert seen == [(starts[1], "timeout"), (starts[3], "unknown")]
    assert starts[3] > starts[1]


def test_a_newer_action_held_behind_an_older_one_shows_its_policy_the_refused_dispatch() -> None:
    """The newer action's claim is refused while the older one on the same target is unaccounted for: its
    policy is asked at once, and its first Situation says the dispatch was refused and why."""
    from harness.model.events import ClaimDecided
    from harness.policy import CommandResult

    watching = _Watching(load_policy("reconcile_and_reauthorize"))
    history = simulate(shipped("newer_write_held"), watching, 1).evidence.history  # type: ignore[arg-type]
    refused = next(e for e in history if isinstance(e, ClaimDecided) and e.action_id == "a74" and not e.ok)
    first = next(s for s in watching.seen if s.action.action_id == "a74")
    assert refused.reason is not None and refused.reason.startswith("target held")
    assert first.last == CommandResult(kind="dispatch", refused=True, reason=refused.reason)
    assert first.now_s == refused.at_s


def test_a_reply_arriving_after_the_worker_reported_reaches_no_one() -> None:
    """The reply is delayed past the timeout and the policy stops at once: the worker reports and its process
    ends, so the reply, when it comes, is undeliverable and no Situation ever shows it."""
    from harness.model.events import ReplyReceived, ReplyUndeliverable, WorkerReported

    scenario = _scenario("lost_response", faults=[{"boundary": "response_delayed", "nth": 1, "delay_s": 30.0}])
    history = simulate(scenario, _Script(), 1).evidence.history  # type: ignore[arg-type]
    (report,) = [e for e in history if isinstance(e, WorkerReported)]
    late = [e for e in history if isinstance(e, ReplyReceived | ReplyUndeliverable) and e.kind == "dispatch"]
    assert [type(e) for e in late] == [ReplyUndeliverable] and late[0].index > report.index


def test_ground_truth_counts_a_receipt_under_another_clients_key_as_mismatched() -> None:
    """The auditor judges a write by the receipt's key too: a receipt with the action's own arguments under a key
    none of its requests carried is a mismatched record in truth, as the checker finds it; the correct policy's
    escalation writes nothing."""
    from buggy_policies import ComparesArgumentsOnly

    from harness.check import check
    from harness.scenario import scenario_cases

    ((_, scenario),) = scenario_cases("receipt_under_another_key")
    correct = load_policy("reconcile_and_reauthorize")
    for policy, count in ((ComparesArgumentsOnly("compares_arguments_only"), 1), (correct, 0)):
        result = simulate(scenario, policy, 1)
        assert result.truth.mismatched_records == count
        assert check(result.evidence).metrics["mismatched_records"] == count


@pytest.mark.parametrize("start_s", [0.0, 1.0, 2.5])
def test_the_history_stamps_the_first_record_with_the_time_it_happens_whenever_that_is(start_s: float) -> None:
    """The history rounds virtual time once per instant and keeps the rounding; the first record is stamped
    with its own instant, whatever that instant is (no starting value stands in for a time)."""
    env = simpy.Environment(initial_time=start_s)
    history = History(env)
    history.record(ReplyTimedOut(execution_id="a73-x1", n=1))
    env.run(until=start_s + 0.1234567)
    history.record(ReplyTimedOut(execution_id="a73-x1", n=2))
    assert [(e.index, e.at_s) for e in history.entries] == [(0, start_s), (1, round(start_s + 0.1234567, 6))]


# -- where a policy raised its error (worker._raised_at) -------------------------------------------------------


@pytest.fixture
def modules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[str, str], Any]:
    """Write a module of the user's (a real file, as a policy's is) and import it; every one is let go after."""
    import importlib

    monkeypatch.syspath_prepend(str(tmp_path))

    def write(name: str, source: str) -> Any:
        path = tmp_path.joinpath(*name.split("."))
        for package in list(path.parents)[: name.count(".")]:
            package.mkdir(parents=True, exist_ok=True)
            (package / "__init__.py").touch()
        path.with_suffix(".py").write_text(source)
        parts = name.split(".")
        for n in range(1, len(parts) + 1):  # absent before, absent after: the modules are let go after the test
            monkeypatch.setitem(sys.modules, ".".join(parts[:n]), None)
            del sys.modules[".".join(parts[:n])]
        module = importlib.import_module(name)
        return module

    return write


def _raised(policy: object, call: Any) -> str:
    from harness.sim.worker import _policy_error

    try:
        call()
    except Exception as exc:
        assert exc.__traceback__ is not None
        # Without this function's own frame: in the simulator, the first frame is the worker's, the harness's.
        return _policy_error(exc.with_traceback(exc.__traceback__.tb_next), policy)
    raise AssertionError("it did not raise")


def test_a_policy_error_is_said_at_the_innermost_line_of_the_policys_own_package(modules: Any) -> None:
    """Its own helper's line (mine.helpers, line 4), the innermost of its package: not the standard library's line
    that raised (json's), nor its decide's (mine.policy, line 5)."""
    modules("mine.helpers", "import json\n\ndef helper():\n    return json.loads('{bad')\n")
    own = modules(
        "mine.policy",
        "from mine.helpers import helper\n\nclass Mine:\n    def decide(self, situation):\n        return helper()\n",
    )
    policy = own.Mine()
    said = _raised(policy, lambda: policy.decide(None))
    assert said.startswith("JSONDecodeError: ")
    assert said.endswith(" (at line 4 of mine.helpers, in helper)")


def test_the_package_is_the_one_decide_is_defined_in(modules: Any) -> None:
    """A class used as the policy itself (its decide static): its type is ``type``, of builtins, yet its own lines
    are found, as are those of an object whose decide is a function of the user's package."""
    own = modules("clspol", "class Pol:\n    @staticmethod\n    def decide(situation):\n        return {}['k']\n")
    other = modules("elsewhere", "x = 1\n")
    assert _raised(own.Pol, lambda: own.Pol.decide(None)) == "KeyError: 'k' (at line 4 of clspol, in decide)"
    namespace = types.SimpleNamespace(decide=own.Pol.decide)
    assert _raised(namespace, lambda: namespace.decide(None)).endswith("(at line 4 of clspol, in decide)")
    assert other.x == 1


def test_the_policys_own_line_is_said_over_a_deeper_line_of_the_users_other_code(modules: Any) -> None:
    """The package is the one decide is defined in (here a function given to a namespace, whose own type is of
    ``types``): its line, not the deeper one of another package of the user's that it called."""
    util = modules("pc.util", "def fail():\n    raise KeyError('k')\n")
    own = modules("mine2.policy", "from pc.util import fail\n\ndef decide(situation):\n    return fail()\n")
    namespace = types.SimpleNamespace(decide=own.decide)
    assert _raised(namespace, lambda: namespace.decide(None)) == "KeyError: 'k' (at line 4 of mine2.policy, in decide)"
    assert _raised(object(), util.fail) == "KeyError: 'k' (at line 2 of pc.util, in fail)"


def test_outside_the_policys_package_the_innermost_line_of_the_users_other_code_is_said(modules: Any) -> None:
    """A decide that is no function of a package (a partial of one) has no package of its own: the innermost line
    of the user's other code is said."""
    util = modules("pb.util", "def fail(situation):\n    raise KeyError('k')\n")
    partial = functools.partial(util.fail)
    stand_in = types.SimpleNamespace(decide=partial)
    assert _raised(stand_in, lambda: partial(None)) == "KeyError: 'k' (at line 2 of pb.util, in fail)"


def test_the_harness_s_the_standard_library_s_and_made_code_s_frames_are_never_the_place(modules: Any) -> None:
    """An error the harness raised about what the policy returned has no place of the policy's; nor one raised in
    the standard library the policy was given as its decide; code made at run time (a frozen dataclass's
    __setattr__, whose lines are not the module's) is passed over for the policy's own line that called it; a
    module whose name only begins with "harness" is not the harness."""
    from harness.model import validated

    said = _raised(object(), functools.partial(validated, None))
    assert said.startswith("TypeError: ") and " (at line" not in said
    import json

    given_json = types.SimpleNamespace(decide=json.loads)
    said = _raised(given_json, functools.partial(json.loads, "{bad"))
    assert said.startswith("JSONDecodeError: ") and " (at line" not in said
    frozen = modules(
        "frozenpol",
        "import dataclasses\n\n@dataclasses.dataclass(frozen=True)\nclass Pol:\n    tries: int = 0\n\n"
        "    def decide(self, situation):\n        self.tries = 1\n",
    )
    policy = frozen.Pol()
    said = _raised(policy, lambda: policy.decide(None))
    assert said == "FrozenInstanceError: cannot assign to field 'tries' (at line 8 of frozenpol, in decide)"
    lookalike = modules("harnessed.pol", "def fail():\n    raise KeyError('k')\n")
    assert _raised(object(), lookalike.fail) == "KeyError: 'k' (at line 2 of harnessed.pol, in fail)"


def test_a_frame_of_code_run_without_a_module_name_is_passed_over(tmp_path: Path) -> None:
    nameless: dict[str, Any] = {}
    exec(compile("def fail():\n    raise KeyError('k')\n", str(tmp_path / "nameless.py"), "exec"), nameless)
    assert _raised(object(), nameless["fail"]) == "KeyError: 'k'"


def test_a_package_is_named_only_by_text() -> None:
    """A class whose __module__ is not text (None, set by hand) names no package, and the error is still said."""
    from harness.sim.worker import _package_of

    odd = type("Odd", (), {"__module__": None})
    assert _package_of(odd) is None and _package_of(odd()) is None
    assert _package_of(_package_of) == "harness" and _package_of(Path) == "pathlib"
    assert _package_of(types.SimpleNamespace(__module__="")) is None
    said = _raised(odd(), lambda: {}["k"])  # said at the innermost line of the user's code: this test's
    assert said.startswith("KeyError: 'k' (at line ") and said.endswith(f" of {__name__}, in <lambda>)")


def test_the_library_folders_hold_the_standard_library_and_installed_packages() -> None:
    import json

    import pydantic

    from harness.sim.worker import _library_folders

    folders = _library_folders()
    assert json.__file__.startswith(folders) and pydantic.__file__.startswith(folders)
    assert all(folder.endswith(os.sep) for folder in folders)
    assert not __file__.startswith(folders)


def test_a_long_place_is_cut_as_every_text_of_a_policy_is(modules: Any) -> None:
    module = f"{'m' * 200}.{'n' * 200}"
    said = _raised(object(), modules(module, "def fail():\n    raise KeyError('k')\n").fail)
    place = f" (at line 2 of {module}, in fail)"
    assert said == "KeyError: 'k'" + place[:300] + f"...[cut: {len(place) - 300} more characters]"
