"""What stop 60 added: a policy told how long its worker waits for each answer (``Situation.patience``), a lease on
a new key's operation, and a checker that judges a read by when the target answered it.

Until then a policy kept a fixed 15 s margin before the deadline, which covered a round trip only while the
worker's timeouts were short; a new key's operation carried no lease, so one decided in time and sent late was
waited for past the deadline; and ``retries_after_uncertain`` placed a read where its answer arrived, so an effect
that landed while a settling read's answer was on its way back made the safe policies look wrong, and a read the
target had answered before the caller was last told the outcome is uncertain was taken to settle it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import SCENARIO_DIR
from pydantic import ValidationError
from test_policies import situation
from test_soundness import RandomPolicy, assert_sound

from harness.check import check
from harness.check.facts import facts
from harness.errors import InputError
from harness.model.events import (
    Applied,
    ClaimDecided,
    CommandGiven,
    DispatchSent,
    LookupAnswered,
    LookupSent,
    ReplyReceived,
    VerifySent,
)
from harness.policy import (
    Escalate,
    FollowJob,
    Hold,
    LookUp,
    PatienceView,
    RecordAbsent,
    ResendCurrentArguments,
    RetryNewKey,
    RetrySameAction,
    Stop,
    VerifyOutcome,
    Wait,
    load_policy,
)
from harness.scenario import load_scenario
from harness.sim import simulate

SAFE = ("reconcile_and_reauthorize", "follow_and_inspect", "verify_before_mutation")
PATIENT = PatienceView(reply_s=25.0, read_s=90.0, follow_s=120.0, wait_max_s=60.0)


def test_the_worker_tells_its_policy_how_long_it_waits_for_each_answer() -> None:
    """Every Situation carries the scenario's worker timeouts; a job follow's patience adds the connector's wait."""
    seen = []

    class Recording:
        name, revision = "recording", "test"

        def decide(self, situation):  # type: ignore[no-untyped-def]
            seen.append(situation.patience)
            return Stop()

    simulate(load_scenario(SCENARIO_DIR / "connector_follow_outlasts_margin.yaml"), Recording(), 1)
    simulate(load_scenario(SCENARIO_DIR / "bridge_slow_read_near_deadline.yaml"), Recording(), 1)
    assert seen == [
        PatienceView(reply_s=5.0, read_s=2.0, follow_s=32.0, wait_max_s=60.0),
        PatienceView(reply_s=5.0, read_s=90.0, follow_s=90.0, wait_max_s=60.0),
    ]


def test_a_round_trip_is_as_long_as_the_worker_waits_for_its_answer() -> None:
    """Reads, follows and the three dispatches have a round trip; a command that sends nothing has none, and no
    patience known (a Situation built by hand) means none either."""
    told = situation().model_copy(update={"patience": PATIENT})
    assert [told.round_trip_s(c) for c in (LookUp(), VerifyOutcome(), FollowJob())] == [90.0, 90.0, 120.0]
    assert {told.round_trip_s(c) for c in (RetrySameAction(), RetryNewKey(), ResendCurrentArguments())} == {25.0}
    for command in (Wait(duration_s=5), Escalate(reason="x"), Stop(), Hold(reason="x"), RecordAbsent(reason="x")):
        assert told.round_trip_s(command) is None
    assert situation().round_trip_s(LookUp()) is None


@pytest.mark.parametrize("name", SAFE)
def test_a_read_that_could_outlast_the_deadline_is_an_escalation(name: str) -> None:
    """49 s left, and the worker waits up to 90 s for a read's answer: the first read escalates instead; with
    reads answered within 2 s (or the patience unknown) the same moment reads. The margin is the worker's whole
    wait and a second, not 90 s less a second."""
    policy = load_policy(name)
    left_49 = situation(now=71.0, deadline=120.0)
    assert isinstance(policy.decide(left_49), LookUp | VerifyOutcome)
    slow = left_49.model_copy(update={"patience": PATIENT})
    assert isinstance(policy.decide(slow), Escalate)
    just_enough = slow.model_copy(update={"now_s": 120.0 - 91.5})
    assert isinstance(policy.decide(just_enough), LookUp | VerifyOutcome)
    just_short = slow.model_copy(update={"now_s": 120.0 - 91.0})
    assert isinstance(policy.decide(just_short), Escalate)


def test_a_retry_is_leased_to_the_deadline_less_its_whole_reply_wait() -> None:
    """The margin, or the reply's wait and a second where that is longer; a new key's operation alike, and one
    without a claim has nothing to lease."""
    policy = load_policy("reconcile_and_reauthorize")
    quick = situation(now=10.0, deadline=120.0)
    slow = quick.model_copy(update={"patience": PATIENT.model_copy(update={"reply_s": 40.0})})
    assert policy.leave_by_s(quick) == 105.0
    assert policy.leave_by_s(slow) == 79.0
    assert policy.leased(slow, RetryNewKey(claim=True), send_by_s=30.0) == RetryNewKey(claim=True, send_by_s=79.0)
    assert policy.leased(slow, RetrySameAction(), send_by_s=30.0) == RetrySameAction(send_by_s=30.0)
    assert policy.leased(slow, RetryNewKey(), send_by_s=None) == RetryNewKey()


def test_a_lease_needs_a_claim_on_every_dispatch() -> None:
    for command in (RetrySameAction, RetryNewKey, ResendCurrentArguments):
        with pytest.raises(ValidationError, match="send_by_s leases a claim"):
            command(claim=False, send_by_s=3.0)
        assert command(claim=True, send_by_s=3.0).send_by_s == 3.0


def test_a_new_keys_operation_sent_after_its_lease_is_refused_and_escalated() -> None:
    """connector_new_operation_leaves_late: decided 16.1 s before the deadline, the new operation leaves 12 s
    later; its claim is refused, nothing more is sent, and the action is escalated in time."""
    result = simulate(
        load_scenario(SCENARIO_DIR / "connector_new_operation_leaves_late.yaml"), load_policy("follow_and_inspect"), 1
    )
    history = result.evidence.history
    new_key = [e.command for e in history if isinstance(e, CommandGiven) and isinstance(e.command, RetryNewKey)]
    # The deadline (79 s) less the 15 s the worker waits for a reply and a second: longer than the 15 s margin.
    assert new_key == [RetryNewKey(claim=True, send_by_s=63.0)]
    assert [c.ok for c in history if isinstance(c, ClaimDecided)] == [True, False]  # the first dispatch's, then it
    assert {d.idempotency_key for d in history if isinstance(d, DispatchSent)} == {"a73"}  # nothing under a new key
    assert check(result.evidence).outcome == "escalated"


def test_the_target_names_the_read_it_answers() -> None:
    """Each lookup_answered entry carries the read's number as it left, a verification's too."""
    for name in ("bridge_error_slow_read_answer", "bridge_second_error_after_read_sent"):
        for policy in ("reconcile_and_reauthorize", "verify_before_mutation"):
            history = simulate(load_scenario(SCENARIO_DIR / f"{name}.yaml"), load_policy(policy), 1).evidence.history
            sent = [e.n for e in history if isinstance(e, LookupSent | VerifySent)]
            answered = [e.n for e in history if isinstance(e, LookupAnswered)]
            assert answered and sorted(answered) == sorted(sent[: len(answered)]), (name, policy)


def test_a_read_is_placed_where_the_target_answered_it() -> None:
    """``Facts.answered_at``: a read's reply at its answer's entry, however slow on the way back; a dispatch's reply,
    which the target did not give as a read, where it arrived."""
    evidence = simulate(
        load_scenario(SCENARIO_DIR / "bridge_error_slow_read_answer.yaml"), load_policy("reconcile_and_reauthorize"), 1
    ).evidence
    f = facts(evidence)
    reads = [r for r in f.replies if r.kind == "lookup"]
    answers = {a.n: a.index for a in f.answers}
    assert reads and all(f.answered_at(r) == answers[r.n] < r.index for r in reads)
    dispatch = next(r for r in f.replies if r.kind == "dispatch")
    assert f.answered_at(dispatch) == dispatch.index


#: Found by exploring the safe policies over bridge_second_error_after_read_sent, before the checker was mended: a
#: first call 20 s late to the bridge, its do-not-replay error at 20.1 s; a retry sent at 15.3 s, 8 s late, lands
#: at 23.9 s; a verification sent at 20.3 s (after the error) is answered absent at 20.6 s, truthfully, and its
#: answer, 4.4 s slow, arrives at 25 s, after the retry landed. The checker judged the verification by its arrival.
SETTLED_THEN_LANDED = """\
name: settled_then_landed
revision: "1"
description: A read that settles the first call's error is answered before the retry lands, and arrives after.
task: {task_id: release-42, revision: 17, target: staging/fraud, model: m7, digest: "sha256:d7d7d7"}
approval: {approval_id: apr-17, token: "tok-17-secret-do-not-log"}
action_id: a73
bridge: {}
worker: {lookup_timeout_s: 15.0}
faults:
  - {boundary: bridge_connection_error, nth: 1, forwarded: false}
  - {boundary: read_answer_delayed, nth: 2, delay_s: 4.375}
  - {boundary: request_delayed, nth: 1, delay_s: 20.0}
  - {boundary: request_delayed, nth: 2, delay_s: 8.0}
  - {boundary: response_delayed, nth: 2, delay_s: 1.25}
"""


@pytest.mark.parametrize("name", SAFE)
def test_an_effect_landing_while_a_settling_reads_answer_returns_takes_nothing_from_it(
    name: str, tmp_path: Path
) -> None:
    path = tmp_path / "settled_then_landed.yaml"
    path.write_text(SETTLED_THEN_LANDED, encoding="utf-8")
    scenario = load_scenario(path)
    evidence = simulate(scenario, load_policy(name), 1).evidence
    replies = [e for e in evidence.history if isinstance(e, ReplyReceived)]
    effect = next(e for e in evidence.history if isinstance(e, Applied))
    settling = next(r for r in replies if r.kind != "dispatch" and r.status == "absent" and r.index > effect.index)
    assert facts(evidence).answered_at(settling) < effect.index < settling.index  # the shape the test is about
    judgement = check(evidence)
    assert judgement.checks["retries_after_uncertain"] == "true", judgement.anomalies
    assert judgement.outcome == "correct"
    assert_sound(name, scenario, 1)


@pytest.mark.parametrize("seed", range(1, 9))
def test_the_truth_agrees_on_reads_answered_before_an_uncertain_reply(seed: int) -> None:
    """Whatever a policy commands in the two shapes (a read answered before the latest uncertain reply; one that
    settles, answered before an effect lands), the checker's count equals the auditor's."""
    for scenario in ("bridge_second_error_after_read_sent", "bridge_error_after_read_sent"):
        assert_sound(RandomPolicy(seed), scenario, seed)
    assert_sound("buggy_policies:reconcile_told_from_first_uncertain", "bridge_second_error_after_read_sent", seed)


def test_a_follow_waits_at_the_connector_and_then_gives_way_to_the_target() -> None:
    """connector_follow_outlasts_margin: the first follow waits out the connector's 30 s wait (its answer, "running",
    reaches the worker at about 45 s, past the 2 s it waits for any other read); with 25 s left a second follow
    could not come back, so follow_and_inspect looks at the target instead, finds it pending, and escalates."""
    evidence = simulate(
        load_scenario(SCENARIO_DIR / "connector_follow_outlasts_margin.yaml"), load_policy("follow_and_inspect"), 1
    ).evidence
    commands = [e.command.kind for e in evidence.history if isinstance(e, CommandGiven)]
    assert commands == ["follow_job", "look_up", "escalate", "stop"]
    [follow] = [e for e in evidence.history if isinstance(e, ReplyReceived) and e.kind == "follow_job"]
    assert follow.status == "running" and follow.at_s == pytest.approx(45.1, abs=0.1)
    assert check(evidence).outcome == "escalated"


@pytest.mark.parametrize("name", SAFE)
def test_a_wait_leaves_the_read_after_it_the_workers_whole_wait(name: str) -> None:
    """Waiting until a moment (an absence final, the reads caught up) is taken only while the read after it still
    has the worker's whole wait for its answer, and a second, before the deadline: with reads that may take 90 s
    and a 120 s deadline, until 28 s at the latest; with the patience unknown, the 15 s margin (until 104 s)."""
    policy = load_policy(name)
    quick = situation(now=10.0, deadline=120.0)
    slow = quick.model_copy(update={"patience": PATIENT})
    assert policy._time_to_wait_for(slow, 27.9) and not policy._time_to_wait_for(slow, 28.0)
    assert policy._time_to_wait_for(quick, 103.9) and not policy._time_to_wait_for(quick, 104.0)


#: Two do-not-replay errors, the first 20 s late, the retry's 15 s late, with no read settling between them; the
#: second read, sent between the two errors and answered then, comes back 8 s slow, after the second.
TWO_ERRORS_READ_BETWEEN = """\
name: two_errors_read_between
revision: "1"
description: Two do-not-replay errors, the first late; a read answered between them arrives after the second.
task: {task_id: release-42, revision: 17, target: staging/fraud, model: m7, digest: "sha256:d7d7d7"}
approval: {approval_id: apr-17, token: "tok-17-secret-do-not-log"}
action_id: a73
bridge: {}
worker: {timeout_s: 12.0, lookup_timeout_s: 15.0}
faults:
  - {boundary: bridge_connection_error, nth: 1, forwarded: false}
  - {boundary: request_delayed, nth: 1, delay_s: 20.0}
  - {boundary: bridge_connection_error, nth: 2}
  - {boundary: request_delayed, nth: 2, delay_s: 15.0}
  - {boundary: read_answer_delayed, nth: 2, delay_s: 8.0}
"""


@pytest.mark.parametrize("policy_seed", [32, 55, 93])
def test_a_read_must_be_answered_since_the_latest_uncertain_reply_not_the_first(
    policy_seed: int, tmp_path: Path
) -> None:
    """Random commands over two unsettled do-not-replay errors (the seeds where a read answered between them is
    followed by a dispatch): the checker's count equals the auditor's, which dates the doubt from the latest."""
    path = tmp_path / "two_errors_read_between.yaml"
    path.write_text(TWO_ERRORS_READ_BETWEEN, encoding="utf-8")
    assert_sound(RandomPolicy(policy_seed), load_scenario(path), 1)


def test_a_misrouted_lookup_can_answer_another_operations_refusal() -> None:
    """lookup_foreign_receipt with status rejected: the read answers "rejected" with a receipt for the other
    arguments (its own ID), and the target's answer says so; without it, "applied" as before."""
    scenario = load_scenario(SCENARIO_DIR / "foreign_refusal_after_lost_reply.yaml")
    evidence = simulate(scenario, load_policy("reconcile_and_reauthorize"), 1).evidence
    [answer] = [e for e in evidence.history if isinstance(e, LookupAnswered)]
    [reply] = [e for e in evidence.history if isinstance(e, ReplyReceived) and e.kind == "lookup"]
    assert (answer.effect, answer.receipt_id, reply.status, reply.receipt_id) == ("rejected", "rx1", "rejected", "rx1")
    assert check(evidence).outcome == "escalated"  # a receipt for other arguments, refused or not, is not its own
    applied = scenario.model_copy(
        update={"faults": tuple(f.model_copy(update={"status": "applied"}) for f in scenario.faults)}
    )
    [answer] = [
        e
        for e in simulate(applied, load_policy("reconcile_and_reauthorize"), 1).evidence.history
        if isinstance(e, LookupAnswered)
    ]
    assert answer.effect == "applied"


def test_a_foreign_receipts_status_is_applied_or_rejected(tmp_path: Path) -> None:
    text = (SCENARIO_DIR / "foreign_refusal_after_lost_reply.yaml").read_text(encoding="utf-8")
    path = tmp_path / "foreign_refusal_after_lost_reply.yaml"
    path.write_text(text.replace("status: rejected", "status: refused"), encoding="utf-8")
    with pytest.raises(InputError, match="status"):
        load_scenario(path)
