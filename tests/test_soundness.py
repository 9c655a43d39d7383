"""The checker is sound: every value it reports as known equals the auditor's ground truth, in every cell.

Ground truth is the auditor's, kept beside the actors as things happened (each effect the destination
applied, the controller's authorization at each send, every ledger write), never from the history the
checker reads. Every metric the registry marks as audited is compared.
"""

from __future__ import annotations

import dataclasses
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.check import METRICS, check
from harness.policy import (
    Command,
    Escalate,
    FollowJob,
    Hold,
    LookUp,
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
    builtin_policy_names,
    load_policy,
)
from harness.scenario import Scenario, list_scenarios, scenario_cases
from harness.seeds import SEED_MAX
from harness.sim import GroundTruth, simulate

COMPARED = tuple(m.name for m in METRICS if m.audited)


class RandomPolicy:
    """A test policy that gives any command of the closed set, valid or not, from its own seeded generator:
    it drives the simulator into states no shipped policy reaches (unguarded writes, holds after effects,
    retries after records, bogus receipts)."""

    name, revision = "random", "test"

    def __init__(self, seed: int) -> None:
        self._rng = random.Random(seed)

    def decide(self, situation: Situation) -> Command:
        rng = self._rng
        receipts = [r.receipt_id for r in situation.observed_receipts()] + ["r999"]
        choice = rng.choice(
            [
                "look_up",
                "follow",
                "verify",
                "retry",
                "new_key",
                "resend",
                "record",
                "reject",
                "hold",
                "absent",
                "wait",
                "escalate",
                "stop",
            ]
        )
        if choice == "look_up":
            return LookUp()
        if choice == "follow":
            return FollowJob()
        if choice == "verify":
            return VerifyOutcome()
        if choice == "retry":
            return RetrySameAction(claim=rng.random() < 0.5)
        if choice == "new_key":
            return RetryNewKey(claim=rng.random() < 0.5)
        if choice == "resend":
            return ResendCurrentArguments(claim=rng.random() < 0.5)
        if choice == "absent":
            return RecordAbsent()
        if choice == "record":
            return RecordEffect(receipt_id=rng.choice(receipts), guarded=rng.random() < 0.5)
        if choice == "reject":
            return RecordRejection(receipt_id=rng.choice(receipts), guarded=rng.random() < 0.5)
        if choice == "hold":
            return Hold()
        if choice == "wait":
            return Wait(duration_s=rng.uniform(0.5, 30.0))
        if choice == "escalate":
            return Escalate(reason="random")
        return Stop() if rng.random() < 0.3 else LookUp()


#: Every case of every shipped scenario (a crash-point scenario stands for one case per phase).
CASES = {spec: scenario for name in list_scenarios() for spec, scenario in scenario_cases(name)}


def withheld(scenario: Scenario) -> Scenario:
    """The scenario with the destination's ledger withheld from the checker (the world itself unchanged)."""
    return scenario.model_copy(
        update={"destination": scenario.destination.model_copy(update={"ledger_visible": False})}
    )


def assert_sound(policy: str | RandomPolicy, scenario: str | Scenario, seed: int) -> int:
    chosen = load_policy(policy) if isinstance(policy, str) else policy
    if isinstance(scenario, str):
        scenario = CASES[scenario]
    result = simulate(scenario, chosen, seed)
    judgement = check(result.evidence)
    truth = dataclasses.asdict(result.truth)
    known = 0
    # Its own reason, not ``Judgement.unknown``'s stand-in ("not established") for a result that gave none.
    reasons = {r.name: r.reason for r in judgement.results}
    for name in COMPARED:
        value = judgement.metrics[name]
        if value is None:
            assert reasons[name], f"{name} is null without a reason"
            continue
        known += 1
        if isinstance(value, float):
            # The history stamps times to the microsecond; ground truth keeps full precision.
            assert abs(value - truth[name]) <= 2e-6, f"{chosen.name} x {scenario.name} seed {seed}: {name}"
            continue
        assert value == truth[name], (
            f"{chosen.name} x {scenario.name} seed {seed}: {name} = {value}, truth {truth[name]}"
        )
    return known


def test_the_auditor_audits_every_audited_metric() -> None:
    """The ground truth has one field per audited metric, no more and no fewer: none can be left out."""
    assert {f.name for f in dataclasses.fields(GroundTruth)} == set(COMPARED)
    assert "false_records" in COMPARED and "executor_finished" not in COMPARED


@pytest.mark.parametrize("scenario", sorted(CASES))
@pytest.mark.parametrize("policy", builtin_policy_names())
def test_known_values_equal_ground_truth(policy: str, scenario: str) -> None:
    """In every shipped cell, at seeds 1 to 3, each known metric equals the ground truth."""
    for seed in (1, 2, 3):
        assert assert_sound(policy, scenario, seed) >= 9


@settings(max_examples=40, deadline=None)
@given(
    policy=st.sampled_from(builtin_policy_names()),
    scenario=st.sampled_from(sorted(CASES)),
    seed=st.integers(min_value=0, max_value=SEED_MAX),
)
def test_soundness_holds_for_any_seed(policy: str, scenario: str, seed: int) -> None:
    """Soundness does not depend on the seed's latencies."""
    assert_sound(policy, scenario, seed)


@settings(max_examples=600, deadline=None)
@given(
    scenario=st.sampled_from(sorted(CASES)),
    policy_seed=st.integers(min_value=0, max_value=2**32),
    seed=st.integers(min_value=0, max_value=SEED_MAX),
)
def test_soundness_holds_for_any_commands(scenario: str, policy_seed: int, seed: int) -> None:
    """Whatever a policy commands, in whatever order, every metric the checker knows equals the truth."""
    assert_sound(RandomPolicy(policy_seed), scenario, seed)


@pytest.mark.parametrize("policy", builtin_policy_names())
def test_known_values_equal_ground_truth_with_the_ledger_withheld(policy: str) -> None:
    """Every shipped case with the destination's ledger withheld, at seed 1: what the replies settle (the
    checker's stand-ins for the ledger) equals the truth; what they do not stays unknown, with its reason."""
    known = sum(assert_sound(policy, withheld(scenario), 1) for scenario in CASES.values())
    assert known >= len(CASES) * 6


@settings(max_examples=300, deadline=None)
@given(
    scenario=st.sampled_from(sorted(CASES)),
    policy_seed=st.integers(min_value=0, max_value=2**32),
    seed=st.integers(min_value=0, max_value=SEED_MAX),
)
def test_soundness_holds_with_the_ledger_withheld_for_any_commands(scenario: str, policy_seed: int, seed: int) -> None:
    """Whatever a policy commands, with the ledger withheld: every metric the replies settle equals the truth."""
    assert_sound(RandomPolicy(policy_seed), withheld(CASES[scenario]), seed)


def test_duplicates_hidden_only_where_truth_could_differ() -> None:
    """Where the ledger is withheld and duplicates are unknown, the truth really is not derivable from one dispatch."""
    result = simulate(CASES["uncertain_lookup"], load_policy("retry_same_key"), 1)
    judgement = check(result.evidence)
    assert judgement.metrics["duplicate_effects"] is None and result.truth.dispatches > 1


class EscalateThenRetry:
    """Hands the action to its owner ("outcome unknown"), then sends it again anyway, without a claim (a claim
    is refused once the action is escalated), and stops once it sees a receipt, recording nothing: the owner's
    account is stale, the effect unaccounted for."""

    name, revision = "escalate_then_retry", "test"

    def __init__(self, claim: bool = False) -> None:
        self.claim = claim

    def decide(self, situation: Situation) -> Command:
        if not situation.escalated:
            return Escalate(reason="outcome unknown, handing to owner")
        if situation.observed_receipts() or (situation.last is not None and situation.last.refused):
            return Stop(reason="done")
        return RetrySameAction(claim=self.claim)


@pytest.mark.parametrize("scenario", ["request_lost", "lost_response"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_an_action_sent_again_after_its_escalation_is_abandoned_and_the_truth_agrees(scenario: str, seed: int) -> None:
    """It ended "escalated" with every property true: an escalation that a dispatch of the action follows hands
    nothing over. The checker and the auditor say so alike."""
    result = simulate(CASES[scenario], EscalateThenRetry(), seed)
    judgement = check(result.evidence)
    assert judgement.outcome == "abandoned" and judgement.checks["abandoned_actions"] == "false"
    assert judgement.metrics["abandoned_actions"] == result.truth.abandoned_actions == 1
    # With a claim, the controller refuses it (the action is with its owner) and nothing is sent: escalated.
    claimed = simulate(CASES[scenario], EscalateThenRetry(claim=True), seed)
    refusals = [e for e in claimed.evidence.history if e.event == "claim" and not e.ok]
    assert [e.reason for e in refusals] == ["the action was escalated to its owner"]
    assert check(claimed.evidence).outcome == "escalated" and claimed.truth.abandoned_actions == 0


#: Two worlds with the ledger withheld where the dispatches' replies settle everything (an adversarial review's):
#: the only dispatch refused m7 and its reply came back 60 s late, unheard; the only dispatch was 90 s late on the
#: way and refused as too old, while the retry applied.
REPLIES_SETTLE = {
    "rejected_late_reply": {"destination": {"reject_models": ["m7"], "ledger_visible": False},
                            "faults": [{"boundary": "response_delayed", "nth": 1, "delay_s": 60}]},
    "refused_late_original": {"recovery_deadline_s": 200,
                              "destination": {"ledger_visible": False, "request_validity_s": 60},
                              "faults": [{"boundary": "request_delayed", "nth": 1, "delay_s": 90}]},
}  # fmt: skip


@pytest.mark.parametrize("world", sorted(REPLIES_SETTLE))
@pytest.mark.parametrize("policy", ["reconcile_and_reauthorize", "verify_before_mutation", "follow_and_inspect"])
def test_where_the_replies_settle_what_the_ledger_would_a_safe_policy_is_judged_so(policy: str, world: str) -> None:
    """Every dispatch answered for good (refused, rejected, applied): a safe policy's case is decided, and as
    the ledger decides it; until the replies stood in for a withheld ledger here, each was unresolved."""
    base = CASES["request_lost"].model_dump(mode="python", exclude={"faults"})
    scenario = Scenario.model_validate({**base, "name": world, **REPLIES_SETTLE[world], "destination": {
        **base["destination"], **REPLIES_SETTLE[world]["destination"]}})  # fmt: skip
    for seed in (1, 2, 3):
        judgement = check(simulate(scenario, load_policy(policy), seed).evidence)
        assert judgement.outcome == "correct" and set(judgement.checks.values()) == {"true"}, judgement.unknown
        assert assert_sound(policy, scenario, seed) >= 9
        visible = check(simulate(scenario.model_copy(update={"destination": scenario.destination.model_copy(
            update={"ledger_visible": True})}), load_policy(policy), seed).evidence)  # fmt: skip
        known = {name: value for name, value in judgement.metrics.items() if value is not None}
        assert known == {name: visible.metrics[name] for name in known} and visible.checks == judgement.checks
