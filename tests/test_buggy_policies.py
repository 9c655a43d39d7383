"""Judge the judge: each one-change buggy variant of a safe shipped policy is caught by a shipped scenario
through the property its bug breaks, and the correct policies are caught by none. The hidden variants pass
every shipped schedule, and exploration from the named shipped scenario finds one that catches each."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import pytest
from buggy_policies import (
    CORPUS,
    HIDDEN,
    MASKED,
    SPENT,
    UNSEEN,
    Catch,
    CaughtUpFromSend,
    ConnectorReplyBounds,
    Hidden,
    NoValidityReachedBySend,
    RetriesWithoutClaim,
)
from conftest import SUMMARIES
from test_policies import connector_answered_running, dead_job_without_validity

from harness.check import check
from harness.explore.schedule import _variants_of, element_dict, elements_of
from harness.explore.search import ExploreJob, explore_job
from harness.model.events import ClaimDecided, CommandGiven
from harness.policy import Escalate, RetryNewKey, RetrySameAction, Wait, load_policy
from harness.scenario import Scenario, list_scenarios, scenario_cases
from harness.sim import simulate

SEEDS = (1, 2, 3)


CASES = {spec: scenario for name in list_scenarios() for spec, scenario in scenario_cases(name)}


def judged(catch: Catch, seed: int) -> tuple[str, str]:
    judgement = check(simulate(CASES[catch.scenario], catch.policy, seed).evidence)
    return judgement.outcome, judgement.checks.get(catch.property, "missing")


@pytest.fixture(scope="module", autouse=True)
def catch_table() -> None:
    """Which scenario catches which variant through which property, printed at the end of the test run."""
    rows = [f"{'variant':<36} {'caught by scenario':<38} {'through property':<24} {'verdict':<7} outcome"]
    for catch in CORPUS:
        outcome, verdict = judged(catch, 1)
        rows.append(f"{catch.policy.name:<36} {catch.scenario:<38} {catch.property:<24} {verdict:<7} {outcome}")
    SUMMARIES["buggy-policy catch table (seed 1)"] = "\n".join(rows)


def test_the_corpus_has_at_least_twelve_distinct_variants() -> None:
    """Twelve one-change variants at least, each its own bug, each caught in a shipped scenario."""
    assert len({c.policy.name for c in CORPUS}) == len(CORPUS) >= 12
    assert {c.scenario for c in CORPUS} <= set(CASES)
    for prefix in ("reconcile_", "follow_", "verify_"):
        assert sum(c.policy.name.startswith(prefix) for c in CORPUS) >= 3, prefix


@pytest.mark.parametrize("catch", CORPUS, ids=[c.policy.name for c in CORPUS])
@pytest.mark.parametrize("seed", SEEDS)
def test_each_variant_is_caught_through_its_property(catch: Catch, seed: int) -> None:
    """The variant's case is not correct or escalated, and the property its bug breaks is false."""
    outcome, verdict = judged(catch, seed)
    assert verdict == "false", f"{catch.policy.name} in {catch.scenario}: {catch.property} is {verdict}"
    assert outcome in ("incorrect", "abandoned")


SAFE = ("reconcile_and_reauthorize", "follow_and_inspect", "verify_before_mutation")


@pytest.mark.parametrize("seed", SEEDS)
def test_reads_caught_up_from_the_send_are_caught_through_a_bridge_too(seed: int) -> None:
    """Revision 5's rule (reads catch up with an attempt a lag after it was sent) is caught twice: a duplicate
    effect where the key's window is shorter than the lag (in CORPUS), and, through a bridge whose call arrived
    late, a mutation after its do-not-replay error that no read settled."""
    catch = Catch(
        CaughtUpFromSend("caught_up_from_send"), "bridge_late_forward_lagging_verify", "retries_after_uncertain"
    )
    outcome, verdict = judged(catch, seed)
    assert (outcome, verdict) == ("incorrect", "false")


@pytest.mark.parametrize("policy", SAFE)
@pytest.mark.parametrize("scenario", sorted({c.scenario for c in CORPUS}))
@pytest.mark.parametrize("seed", SEEDS)
def test_the_correct_policies_are_caught_by_none_of_those_scenarios(policy: str, scenario: str, seed: int) -> None:
    """The safe policies themselves are correct or escalated, every property true, where the variants fail."""
    judgement = check(simulate(CASES[scenario], load_policy(policy), seed).evidence)
    assert judgement.outcome in ("correct", "escalated")
    assert set(judgement.checks.values()) == {"true"}


@pytest.mark.parametrize("masked", MASKED, ids=[m.policy.name for m in MASKED])
@pytest.mark.parametrize("seed", SEEDS)
def test_a_masked_variant_is_judged_as_the_correct_policy_where_it_was_caught(masked: Catch, seed: int) -> None:
    """A variant whose bug the correct policy no longer lets matter: where it was caught, it now ends as that
    policy does, its property true (caught there again, it belongs back in CORPUS)."""
    correct = check(simulate(CASES[masked.scenario], load_policy("follow_and_inspect"), seed).evidence)
    assert judged(masked, seed) == (correct.outcome, "true")


@pytest.mark.parametrize("spent", SPENT, ids=[s.policy.name for s in SPENT])
@pytest.mark.parametrize("seed", SEEDS)
def test_a_variant_that_spins_until_its_budget_escalates_where_the_correct_policy_ends_correct(
    spent: Catch, seed: int
) -> None:
    """Where it was caught spending its last command on one more wait or read, the variant now escalates with
    it: every property true, the case escalated where the correct policy's is correct, and the spin in the
    evidence (one action given every command of its budget, where the correct policy needs under a quarter)."""
    scenario = CASES[spent.scenario]
    variant, correct = (simulate(scenario, p, seed).evidence for p in (spent.policy, load_policy(SAFE[0])))
    assert (check(variant).outcome, set(check(variant).checks.values())) == ("escalated", {"true"})
    assert check(correct).outcome == "correct"
    spun, needed = (
        max(Counter(e.action_id for e in ev.history if isinstance(e, CommandGiven)).values())
        for ev in (variant, correct)
    )
    assert spun == scenario.worker.command_count_max > 4 * needed, (spun, needed)


@pytest.mark.parametrize("seed", SEEDS)
def test_a_duplicate_only_the_wire_shows_is_caught_under_a_hidden_ledger(seed: int) -> None:
    """Reading an unanswered lookup as absent retries a73 into a service without deduplication whose ledger the
    checker cannot read: caught through duplicate_effects by the two "applied" replies alone (without them the
    property is unknown and the case unresolved), while the correct policies escalate, every property true."""
    scenario = CASES["hidden_ledger_late_reply"]
    variant = next(c.policy for c in CORPUS if c.policy.name == "reconcile_unknown_lookup_as_absent")
    evidence = simulate(scenario, variant, seed).evidence
    judgement = check(evidence)
    assert (judgement.outcome, judgement.checks["duplicate_effects"]) == ("incorrect", "false")
    witnesses = [a.witnesses for a in judgement.anomalies if a.kind == "duplicate_effect"]
    by_index = {e.index: e for e in evidence.history}
    assert len(witnesses) == 1 and {by_index[i].event for i in witnesses[0]} == {"receive", "undeliverable"}
    # Every dispatch was answered for good (heard or not), so the replies say all it did: the count is known, and
    # is the truth's. Without the unheard reply the first dispatch did what no evidence says: unknown.
    result = simulate(scenario, variant, seed)
    assert judgement.metrics["duplicate_effects"] == result.truth.duplicate_effects == 1
    unheard = max(e.index for e in evidence.history if e.event == "undeliverable")
    half = check(replace(evidence, history=tuple(e for e in evidence.history if e.index != unheard)))
    assert half.checks["duplicate_effects"] == "unknown"
    assert half.unknown["duplicate_effects"].endswith("were sent; any of them may have applied")
    wireless = replace(
        evidence, history=tuple(e for e in evidence.history if e.event not in ("receive", "undeliverable"))
    )
    assert check(wireless).checks["duplicate_effects"] == "unknown"
    for safe in SAFE:
        correct = check(simulate(scenario, load_policy(safe), seed).evidence)
        assert (correct.outcome, set(correct.checks.values())) == ("escalated", {"true"}), safe


@pytest.mark.parametrize("seed", SEEDS)
def test_a_retry_told_do_not_replay_on_its_way_out_is_no_retry_after_an_uncertain_outcome(seed: int) -> None:
    """A retry decided on a verification made after the call could no longer apply, and told "do not replay"
    (for that call) in the second it takes to leave: no retry after an uncertain outcome, the case escalated with
    every property true (an adversarial review found it judged incorrect). The same history with the retry
    decided after the error, no read between, is one."""
    evidence = simulate(CASES["bridge_late_error_while_retry_leaves"], load_policy("verify_before_mutation"), seed)
    history = evidence.evidence.history
    decided = next(e for e in history if isinstance(e, CommandGiven) and e.command.kind == "retry_same_action")
    told = next(e for e in history if e.event == "receive" and getattr(e, "status", None) == "connection_error")
    sent = next(e for e in history if e.event == "send" and getattr(e, "n", 0) == 2 and e.kind == "dispatch")
    assert decided.index < told.index < sent.index
    judgement = check(evidence.evidence)
    assert (judgement.outcome, set(judgement.checks.values())) == ("escalated", {"true"})
    late = [e for e in history if e is not decided]
    late.insert(late.index(told) + 1, decided)
    moved = replace(evidence.evidence, history=tuple(replace(e, index=i) for i, e in enumerate(late)))
    assert check(moved).checks["retries_after_uncertain"] == "false"


def _hidden(name: str, **update: object) -> Scenario:
    scenario = CASES[name]
    ledger = scenario.destination.model_copy(update={"ledger_visible": False})
    return scenario.model_copy(update={"destination": ledger, **update})


@pytest.mark.parametrize("seed", SEEDS)
def test_under_a_hidden_ledger_the_dispatch_replies_settle_what_was_recorded(seed: int) -> None:
    """With the destination's ledger withheld, a dispatch's reply stands in for it: a receipt recorded as a
    dispatch of the action was answered applied under it is no false record (recording the reply to the first
    dispatch judged the case unresolved, whatever the policy: an adversarial review), and an absence recorded for
    an action one of whose dispatches was answered applied is one. A lookup's receipt settles nothing (a
    misrouted lookup can name one never applied): unknown. Each known value is the auditor's."""
    quiet = _hidden("lost_response", faults=())
    for safe in SAFE:
        result = simulate(quiet, load_policy(safe), seed)
        judgement = check(result.evidence)
        assert (judgement.outcome, judgement.metrics["false_records"]) == ("correct", 0), safe
        assert result.truth.false_records == 0
    variant = next(c.policy for c in CORPUS if c.policy.name == "reconcile_records_absence_at_once")
    result = simulate(_hidden("absent_then_late_original"), variant, seed)
    judgement = check(result.evidence)
    assert (judgement.checks["false_records"], judgement.metrics["false_records"]) == ("false", 1)
    [anomaly] = [a for a in judgement.anomalies if a.kind == "false_record"]
    by_index = {e.index: e for e in result.evidence.history}
    assert [by_index[i].event for i in anomaly.witnesses] == ["absence_recorded", "undeliverable"]
    assert result.truth.false_records == 1
    looked_up = check(simulate(_hidden("lost_response"), load_policy("reconcile_and_reauthorize"), seed).evidence)
    assert looked_up.checks["false_records"] == "unknown"
    assert looked_up.unknown["false_records"].endswith("and no dispatch's reply settles a73's receipt r1")
    # An absence of an action never sent (the approval had expired) is settled: nothing was there to apply.
    never = simulate(_hidden("approval_expired_before_dispatch"), load_policy("reconcile_and_reauthorize"), seed)
    assert check(never.evidence).metrics["false_records"] == never.truth.false_records == 0


def test_a_retry_leaving_after_another_workers_escalation_is_refused_its_claim() -> None:
    """Two recovering workers share four commands: one decides a retry, the other spends the last command on an
    escalation before the retry leaves. The retry's claim is refused (the action is with its owner) and the case
    ends escalated, nothing sent after the escalation; before, the retry voided the escalation and applied m7
    with no command left to record it, and each safe policy was judged abandoned at seeds 1 and 2 (an
    adversarial review's second round). At seed 3 the two workers' timing does not line up so."""
    refused_in = set()
    for safe in SAFE:
        for seed in SEEDS:
            result = simulate(CASES["racing_recoverers_budget_spent"], load_policy(safe), seed)
            history = result.evidence.history
            escalated = next(e.index for e in history if e.event == "escalated")
            refused = [e for e in history if isinstance(e, ClaimDecided) and not e.ok]
            assert all(e.reason == "the action was escalated to its owner" and e.index > escalated for e in refused)
            assert not any(e.event == "send" and e.kind == "dispatch" and e.index > escalated for e in history)
            assert check(result.evidence).outcome == "escalated", (safe, seed)
            refused_in |= {(safe, seed)} if refused else set()
    assert refused_in == {(safe, seed) for safe in SAFE for seed in (1, 2)}
    # Through the claim: the one-change variant that retries without one sends after the escalation and voids it.
    variant = next(c.policy for c in CORPUS if c.policy.name == "reconcile_retries_without_claim")
    for seed in (1, 2):
        judged = check(simulate(CASES["racing_recoverers_budget_spent"], variant, seed).evidence)
        assert (judged.outcome, judged.checks["abandoned_actions"]) == ("abandoned", "false")


def test_the_last_command_the_budget_allows_accounts_for_the_action() -> None:
    """At one command left the correct policy escalates what it would have waited or read for, and records what
    it would have recorded; with two left it waits or reads as before."""
    policy = load_policy("reconcile_and_reauthorize")
    spec, seed = "step_budget_while_unsure", 1
    given = [e.command for e in simulate(CASES[spec], policy, seed).evidence.history if isinstance(e, CommandGiven)]
    assert [c.kind for c in given] == ["look_up", "wait", "look_up", "wait", "look_up", "escalate"]
    recording = simulate(CASES["lost_response"], policy, seed).evidence.history
    kinds = [e.command.kind for e in recording if isinstance(e, CommandGiven)]
    budget = len(kinds) - kinds[::-1].index("record_effect")  # the record is the last command but a stop
    tight = CASES["lost_response"].model_copy(
        update={"worker": CASES["lost_response"].worker.model_copy(update={"command_count_max": budget})}
    )
    tight_kinds = [
        e.command.kind for e in simulate(tight, policy, seed).evidence.history if isinstance(e, CommandGiven)
    ]
    assert tight_kinds == kinds[:budget] and tight_kinds[-1] == "record_effect"


@pytest.mark.parametrize("hidden", HIDDEN, ids=[h.policy.name for h in HIDDEN])
def test_no_shipped_schedule_shows_a_hidden_variant(hidden: Hidden) -> None:
    """Every shipped case at seeds 1-3: every property true (if one catches it, move it to CORPUS)."""
    for spec, scenario in CASES.items():
        for seed in SEEDS:
            checks = check(simulate(scenario, hidden.policy, seed).evidence).checks
            assert "false" not in checks.values(), f"{hidden.policy.name} is caught by {spec} at seed {seed}"


@pytest.mark.parametrize("hidden", HIDDEN, ids=[h.policy.name for h in HIDDEN])
def test_exploration_finds_each_hidden_variant(hidden: Hidden) -> None:
    """Exploring the named shipped scenario at the named depth finds a 1-minimal schedule through which the
    checker catches the variant by the named property; one depth less finds none there (for depth 2)."""
    spec = f"buggy_policies:{hidden.policy.name}"
    result = explore_job(ExploreJob((spec,), hidden.template, hidden.depth, 20, (1,)))
    assert any(hidden.property in f.properties for f in result.findings), [f.properties for f in result.findings]
    if hidden.depth > 1:
        shallower = explore_job(ExploreJob((spec,), hidden.template, hidden.depth - 1, 20, (1,)))
        assert shallower.findings == []


@pytest.mark.parametrize("unseen", UNSEEN, ids=[v.name for v in UNSEEN])
def test_no_shipped_schedule_shows_an_unseen_variant(unseen: object) -> None:
    """Every shipped case at seeds 1-3: every property true (if one catches it, move it to CORPUS)."""
    for spec, scenario in CASES.items():
        for seed in SEEDS:
            checks = check(simulate(scenario, unseen, seed).evidence).checks  # type: ignore[arg-type]
            assert "false" not in checks.values(), f"{unseen.name} is caught by {spec} at seed {seed}"  # type: ignore[attr-defined]


def test_a_unit_test_tells_each_unseen_variant_from_the_correct_policy() -> None:
    """Where the correct policy waits for the reads to catch up, or escalates, each unseen variant mutates: a
    connector's reply taken as a bound retries on a read as of before the request could last reach the target;
    no request validity taken as none at all sends a new key after a dead job though a request could still come."""
    assert {type(v) for v in UNSEEN} == {ConnectorReplyBounds, NoValidityReachedBySend}
    by_type = {type(v): v for v in UNSEEN}
    answered = connector_answered_running()
    assert isinstance(load_policy("reconcile_and_reauthorize").decide(answered), Wait)
    leave_by = answered.deadline_s - ConnectorReplyBounds.escalate_margin_s
    assert by_type[ConnectorReplyBounds].decide(answered) == RetrySameAction(claim=True, send_by_s=leave_by)
    dead = dead_job_without_validity()
    assert isinstance(load_policy("follow_and_inspect").decide(dead), Escalate)
    # Leased to the deadline less the margin, as every retry's claim is (follow revision 11).
    leased = RetryNewKey(claim=True, send_by_s=dead.deadline_s - NoValidityReachedBySend.escalate_margin_s)
    assert by_type[NoValidityReachedBySend].decide(dead) == leased


@pytest.mark.parametrize("seed", SEEDS)
def test_a_retry_sent_without_a_claim_is_caught_when_the_task_is_cancelled_while_it_leaves(seed: int) -> None:
    """``worker.retry_send_s`` puts a second between deciding a retry and sending it, and the task is cancelled
    in between: each safe policy's claim, made as the retry leaves, is refused, and the case stays clean; the
    same policy without the claim sends it after the cancellation (reconcile's variant in the plain world, caught
    elsewhere only where an older action holds the target; follow's after a dead job, caught nowhere else)."""
    retrying = {
        "cancel_while_retry_leaves": SAFE,
        "connector_cancel_while_new_operation_leaves": ("follow_and_inspect",),
    }
    for scenario, policies in retrying.items():
        for name in policies:
            evidence = simulate(CASES[scenario], load_policy(name), seed).evidence
            commands = [
                e for e in evidence.history if isinstance(e, CommandGiven) and e.command.kind.startswith("retry")
            ]
            claims = [e for e in evidence.history if isinstance(e, ClaimDecided)]
            assert len(commands) == 1 and len(claims) == 2, (scenario, name)
            # Claimed as it left, retry_send_s after the decision, and refused: the cancellation came between.
            assert claims[1].at_s == pytest.approx(commands[0].at_s + 1.0)
            assert (claims[1].ok, claims[1].reason) == (False, "cancellation requested"), (scenario, name)
            assert check(evidence).outcome in ("correct", "escalated"), (scenario, name)
    caught = Catch(RetriesWithoutClaim("retries_without_claim"), "cancel_while_retry_leaves", "unauthorized_dispatches")
    assert judged(caught, seed) == ("incorrect", "false")


def test_exploration_finds_two_workers_racing_to_write_unguarded_in_a_template_with_one() -> None:
    """lost_response has one recovering worker; the variant that writes the ledger without its conditional
    update is caught where a second races it to record the same receipt (two_recoverers). Exploring
    lost_response finds that too: a second recovering worker, and a ledger write that takes a second to land,
    so that both decide to record before either record lands (1-minimal: it needs both)."""
    spec = "buggy_policies:reconcile_writes_unguarded"
    result = explore_job(ExploreJob((spec,), "lost_response", 2, 20, (1,)))
    racing = [f for f in result.findings if "duplicate_records" in f.properties]
    assert racing, [f.properties for f in result.findings]
    for finding in racing:
        added = [element_dict(e) for e in finding.schedule.elements if e.kind != "fault"]
        assert {"recoverers": 2} in added and {"ledger_write_s": 1.0} in added, added


def test_exploration_finds_a_foreign_refusal_from_a_template_without_one() -> None:
    """A misrouted lookup may answer another operation's refusal (lookup_foreign_receipt, status: rejected), and
    exploration tries both statuses wherever it tries the fault. lost_response ships no foreign receipt: exploring it
    at depth 1 finds the variant that compares only applied receipts with its request, through the refused one
    (foreign_refusal_after_lost_reply, found again), and nothing for the correct policy. Before exploration tried the
    rejected status it found nothing there (90 schedules; 91 now)."""
    assert _variants_of("lookup_foreign_receipt") == [{"status": "applied"}, {"status": "rejected"}]
    spec = "buggy_policies:reconcile_compares_applied_only"
    result = explore_job(ExploreJob((spec, "reconcile_and_reauthorize"), "lost_response", 1, 0, (1,)))
    assert result.schedules == 91
    [finding] = result.findings
    assert (finding.policy, finding.properties) == (
        "reconcile_compares_applied_only",
        ("false_records", "mismatched_records"),
    )
    added = [element_dict(e) for e in finding.schedule.elements]
    assert added == [{"boundary": "lookup_foreign_receipt", "status": "rejected"}, {"boundary": "response_lost"}]
    shipped = elements_of(CASES["foreign_refusal_after_lost_reply"])
    assert {e.key for e in finding.schedule.elements} == {e.key for e in shipped}  # the shipped case, found again


@pytest.mark.parametrize("seed", SEEDS)
def test_a_retry_sent_without_a_claim_is_caught_when_another_workers_retry_leaves_first(seed: int) -> None:
    """Two recovering workers decide to retry before either retry has left (racing_recoverers_retry_leaves): a
    claim made as the retry leaves is refused by the other worker's attempt, recorded since the decision, and
    the safe policies apply m7 once; the same policy without the claim sends beside the other, and m7 applies
    twice (caught in newer_write_held through another property, unauthorized_dispatches)."""
    for name in SAFE:
        assert check(simulate(CASES["racing_recoverers_retry_leaves"], load_policy(name), seed).evidence).outcome == (
            "correct"
        ), name
    racing = Catch(RetriesWithoutClaim("retries_without_claim"), "racing_recoverers_retry_leaves", "duplicate_effects")
    assert judged(racing, seed) == ("incorrect", "false")


def test_exploration_finds_the_race_between_a_retrys_decision_and_its_send_in_a_template_without_one() -> None:
    """``request_lost`` declares no delay between a decision and its act, so no shipped schedule but the one
    written for it (``cancel_while_retry_leaves``) shows a retry sent without a claim. Exploring ``request_lost``
    at depth 2 finds it: the worker's retry given a second to leave, and the task changed, cancelled or its
    approval run out right after the worker's second command (the retry, decided once a lookup found nothing);
    each finding is 1-minimal, so it needs both. At depth 1, or for the correct policy, there is nothing to find."""
    spec = "buggy_policies:reconcile_retries_without_claim"
    result = explore_job(ExploreJob((spec, "reconcile_and_reauthorize"), "request_lost", 2, 20, (1,)))
    assert {f.policy for f in result.findings} == {"reconcile_retries_without_claim"}
    assert all("unauthorized_dispatches" in f.properties for f in result.findings), result.findings
    inserted = set()
    for finding in result.findings:
        added = [element_dict(e) for e in finding.schedule.elements if e.kind != "fault"]
        assert {"retry_send_s": 1.0} in added, added
        (event,) = [a for a in added if "do" in a]
        assert event["when"] == {"after": {"actor": "worker", "event": "command", "nth": 2}}, added
        inserted.add(event["do"])
    assert inserted == {"change_task", "request_cancel", "expire_approval"}
    assert explore_job(ExploreJob((spec,), "request_lost", 1, 0, (1,))).findings == []
