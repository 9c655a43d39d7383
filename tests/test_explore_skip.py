"""Judging a schedule without running it.

A schedule that adds, to a smaller one, a fault whose site the smaller one's run never reached (or an operator
event whose trigger it never recorded) runs exactly as the smaller one did: exploration reuses that judgement
instead of running the case (``harness.sim.Reach``, ``harness.explore.search._Judge``). These tests check the
claim against the simulator itself, over every shipped scenario, and check that exploration answers exactly as
it does when it runs every case. Buggy variants of ``Reach`` (each one plausible change) must be caught.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Literal

import pytest

import harness.explore.search as search
import harness.sim.world as world
from harness.explore.schedule import (
    SETTINGS,
    Element,
    Schedule,
    apply,
    declared,
    element,
    elements_of,
    singles,
    worker_variants,
)
from harness.explore.search import ExploreJob, JobResult, explore_job, observe
from harness.policy import load_policy
from harness.scenario import Fault, FaultBase, OperatorEvent, Scenario, list_scenarios, scenario_cases
from harness.sim import Reach, simulate

#: Policies that take different paths (a retrier sends more, the safe ones read more), one per scenario in turn.
POLICIES = ("reconcile_and_reauthorize", "retry_same_key", "follow_and_inspect", "verify_before_mutation")


@dataclass(frozen=True)
class Pair:
    """A smaller schedule and an element its run did not reach (by ``Reach``), and what adding it did."""

    scenario: str
    policy: str
    smaller: Schedule
    added: Element
    same: bool


def _templates() -> Iterator[Scenario]:
    for name in list_scenarios():
        for _, template in scenario_cases(name):
            yield template


def unreached_pairs(per_template: int = 12, stop_at_first_difference: bool = False) -> Iterator[Pair]:
    """For each shipped template: smaller schedules (the template with one element added, drawn at random from
    a fixed seed), and for each, up to ``per_template`` elements its run did not reach, each run added to it."""
    for n, template in enumerate(_templates()):
        policy = load_policy(POLICIES[n % len(POLICIES)])
        seen, _ = observe(template, [policy], (1,))
        own = elements_of(template)
        added = singles(template, seen)
        acting = [e for e in added if e.kind not in SETTINGS]  # settings always act
        draw = random.Random(template.name)
        budget = per_template
        for _ in range(4):
            first = draw.choice(added)
            smaller = Schedule.of([*own, first])
            ran = simulate(apply(template, smaller), policy, 1)
            unreached = [e for e in acting if e.key != first.key and not ran.reach.reaches(declared(e))]
            for e in draw.sample(unreached, min(len(unreached), max(1, budget // 4))):
                bigger = Schedule.of([*smaller.elements, e])
                other = simulate(apply(template, bigger), policy, 1)
                same = other.evidence == ran.evidence and other.attempts == ran.attempts
                faults = [f.key for f in bigger.elements if f.kind == "fault"]
                if e.kind == "fault":
                    at = faults.index(e.key)
                    same = same and other.coverage == (*ran.coverage[:at], (0, 0), *ran.coverage[at:])
                else:
                    same = same and other.coverage == ran.coverage
                yield Pair(template.name, policy.name, smaller, e, same)
                if stop_at_first_difference and not same:
                    return


def test_an_element_a_run_never_reached_changes_nothing_when_added() -> None:
    """Over every shipped template: each element a run did not reach, added to its schedule, gives the same
    evidence, the same attempts and the same coverage (nothing for the element itself)."""
    pairs = list(unreached_pairs())
    different = [f"{p.scenario} {p.policy} [{p.smaller.key}] + {p.added.key}" for p in pairs if not p.same]
    assert different == []
    # Faults and operator events both, and in most templates: the claim was put to the test, not dodged.
    assert {p.added.kind for p in pairs} == {"fault", "operator"}
    assert len({p.scenario for p in pairs}) > len(list(_templates())) * 3 // 4


def test_a_run_reaches_what_it_asked_about_and_the_triggers_it_recorded(lost_response: Scenario) -> None:
    """lost_response under reconcile_and_reauthorize: one dispatch (its reply lost), then lookups. A fault at
    the first dispatch is reached, one at the fifth is not; an event after the worker's first timeout is
    reached, one after its second is not, nor one after a record the run never made."""
    reach = simulate(lost_response, load_policy("reconcile_and_reauthorize"), 1).reach

    def fault(**data: object) -> Fault:
        return declared(_element("fault", data))

    def after(actor: str, event: str, nth: int) -> OperatorEvent:
        return declared(_element("operator", {"do": "request_cancel", "when": {"after": _ref(actor, event, nth)}}))

    assert reach.reaches(fault(boundary="request_lost", nth=1))
    assert not reach.reaches(fault(boundary="request_lost", nth=5))
    assert reach.reaches(fault(boundary="lookup_unavailable", nth=1))
    assert not reach.reaches(fault(boundary="request_lost", nth=1, action_id="b2"))  # no such action asked
    assert reach.reaches(after("worker", "timeout", 1))
    assert not reach.reaches(after("worker", "timeout", 2))
    assert not reach.reaches(after("controller", "cancel_requested", 1))
    # An event at a time is always taken to reach (it acts whatever the run records).
    timed = declared(_element("operator", {"do": "request_cancel", "when": {"at_s": 999.0}}))
    assert reach.reaches(timed)
    with pytest.raises(ValueError, match="declares no fault or event"):
        declared(_element("contract", {"fencing": True}))


def test_an_unreached_change_that_would_start_an_action_changes_nothing(lost_response: Scenario) -> None:
    """A change of task that would dispatch an action of its own, after a record the run never makes: the action
    is never started, and the run is the same as without it."""
    policy = load_policy("reconcile_and_reauthorize")
    ran = simulate(lost_response, policy, 1)
    change = {"do": "change_task", "model": "m9", "digest": "sha256:d9d9d9", "approved": True, "action_id": "b2"}
    event = declared(_element("operator", change | {"when": {"after": _ref("controller", "cancel_requested", 1)}}))
    assert not ran.reach.reaches(event)
    other = simulate(lost_response.model_copy(update={"operator": (event,)}), policy, 1)
    assert (other.evidence, other.attempts, other.coverage) == (ran.evidence, ran.attempts, ran.coverage)


def test_a_judge_keeps_what_the_template_and_one_element_schedules_reached_only(lost_response: Scenario) -> None:
    """Asked about a schedule of two added faults, the judge runs the template and each one-element schedule
    first (to see whether it can skip the pair), and keeps what those reached, not the pair's."""
    policy = load_policy("retry_same_key")
    seen, _ = observe(lost_response, [policy], (1,))
    own = elements_of(lost_response)
    added = singles(lost_response, seen)
    a, b = [e for e in added if e.kind == "fault"][:2]
    judge = search._Judge(lost_response, singles=frozenset(e.key for e in added))
    judge(policy, Schedule.of([*own, a, b]), 1)
    kept = {key for _, key, _ in judge._small}
    assert kept == {Schedule.of(own).key, Schedule.of([*own, a]).key, Schedule.of([*own, b]).key}


def test_a_shard_skips_as_much_as_the_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """A shard runs the one-element schedules the other shard holds when it needs them (once each), so that the
    two shards together run at most those more than the whole exploration does."""
    template = "connector_crash_points@after_started"
    whole = explore_job(ExploreJob(("reconcile_and_reauthorize",), template, 2, 20, (1,)))
    halves = [explore_job(ExploreJob(("reconcile_and_reauthorize",), template, 2, 20, (1,), shard=i, shards=2))
              for i in (0, 1)]  # fmt: skip
    ((_, scenario),) = scenario_cases(template)
    policy = load_policy("reconcile_and_reauthorize")
    one_element = len(singles(scenario, observe(scenario, [policy], (1,))[0]))
    name = policy.name
    assert sum(h.cases[name] for h in halves) == whole.cases[name]
    assert sum(h.simulated[name] for h in halves) <= whole.simulated[name] + one_element + 1 < whole.cases[name]


def _element(kind: Literal["fault", "operator"], data: dict[str, object]) -> Element:
    return element(kind, data)


def _ref(actor: str, event: str, nth: int) -> dict[str, object]:
    return {"actor": actor, "event": event, "nth": nth}


def _same_answers(a: JobResult, b: JobResult) -> bool:
    def answers(r: JobResult) -> tuple[object, ...]:
        findings = [(f.policy, f.schedule.key, f.properties, f.outcome, f.first_seen) for f in r.findings]
        return (r.schedules, r.cases, r.violating, r.violations, r.coverage, r.unfired, r.errors, findings)

    return answers(a) == answers(b)


@pytest.mark.parametrize(
    ("policies", "template"),
    [
        (("retry_same_key", "reconcile_and_reauthorize"), "lost_response"),
        (("follow_and_inspect",), "connector_crash_points@after_started"),
        (("buggy_policies:verify_replays_despite_marker",), "bridge_error_after_forward"),
    ],
)
def test_exploration_answers_the_same_whether_it_skips_or_runs_every_case(
    policies: tuple[str, ...], template: str
) -> None:
    """Every count, the coverage and every finding (shrunk the same way) are the same with skipping on and
    off, at the default depth and swarm; with it on, fewer cases are run."""
    job = ExploreJob(policies, template, 2, 20, (1,))
    skipping = explore_job(job)
    running = explore_job(ExploreJob(policies, template, 2, 20, (1,), skip_unreached=False))
    assert _same_answers(skipping, running)
    for name, cases in skipping.cases.items():
        assert skipping.simulated[name] < cases <= running.simulated[name]


def test_past_its_bound_the_judge_runs_what_it_would_have_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    """With room for only a few small runs' reach, more cases are run, and the answers stay the same."""
    job = ExploreJob(("retry_same_key",), "lost_response", 2, 20, (1,))
    free = explore_job(job)
    monkeypatch.setattr(search, "SMALL_MAX", 4)
    bounded = explore_job(job)
    assert _same_answers(bounded, free)
    assert free.simulated["retry_same_key"] < bounded.simulated["retry_same_key"]


# Buggy variants of Reach.reaches: each a plausible change, each unsound somewhere a shipped template shows.
def _operator_never_reaches(self: Reach, item: Fault | OperatorEvent) -> bool:
    """Operator events are scripted, so someone decides they never depend on the run."""
    return ORIGINAL(self, item) if isinstance(item, FaultBase) else False


def _trigger_counted_one_short(self: Reach, item: Fault | OperatorEvent) -> bool:
    """``>`` for ``>=``: an event after the nth record is taken not to reach when exactly n were recorded."""
    after = getattr(getattr(item, "when", None), "after", None)
    if after is None:
        return ORIGINAL(self, item)
    return self.recorded[(after.actor, after.event)] > after.nth


def _first_question_of_a_boundary_only(self: Reach, item: Fault | OperatorEvent) -> bool:
    """Questions deduplicated by boundary and action: a fault at a later occurrence is taken not to reach."""
    first: dict[tuple[type, str], tuple[object, ...]] = {}
    for question in self.asked:
        first.setdefault((question[0], question[1]), question)
    return ORIGINAL(Reach(tuple(first.values()), self.default_action_id, self.recorded), item)  # type: ignore[arg-type]


def _points_ignored(self: Reach, item: Fault | OperatorEvent) -> bool:
    """A boundary with several points (the connector's crash phases) is taken never to be asked about."""
    return ORIGINAL(Reach(tuple(q for q in self.asked if q[3] is None), self.default_action_id, self.recorded), item)


ORIGINAL: Callable[[Reach, Fault | OperatorEvent], bool] = Reach.reaches


@pytest.mark.parametrize(
    "variant",
    [_operator_never_reaches, _trigger_counted_one_short, _first_question_of_a_boundary_only, _points_ignored],
)
def test_a_buggy_reach_is_caught(
    variant: Callable[[Reach, Fault | OperatorEvent], bool], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(world.Reach, "reaches", variant)
    assert any(not p.same for p in unreached_pairs(per_template=24, stop_at_first_difference=True))


def _unread_delays(policies: tuple[str, ...] = POLICIES) -> Iterator[tuple[str, str, Element, bool]]:
    """For every shipped template and policy: each worker delay exploration may add that the template's run did
    not read (``search.reaches``), and whether the run with it added is the same (evidence, attempts, coverage)."""
    for template in _templates():
        delays = [e for e in worker_variants(template) if "recoverers" not in dict(e.data)]
        for name in policies:
            policy = load_policy(name)
            own = Schedule.of(elements_of(template))  # the template's faults in a schedule's order
            ran = simulate(apply(template, own), policy, 1)
            for e in delays:
                if search.reaches(ran.reach, e):
                    continue
                other = simulate(apply(template, Schedule.of([*own.elements, e])), policy, 1)
                same = (other.evidence, other.attempts, other.coverage) == (ran.evidence, ran.attempts, ran.coverage)
                yield template.name, name, e, same


def test_a_worker_delay_a_run_never_read_changes_nothing_when_added() -> None:
    """A worker delay is read only while the worker carries out some commands (a retry's send, a write to the
    action ledger: ``READ_ONLY_BY``): over every shipped template and four policies, each one the run did not
    read, added, gives the same run. Both delays are met unread, in many templates."""
    found = list(_unread_delays())
    assert [f"{t} {p} + {e.key}" for t, p, e, same in found if not same] == []
    assert {dict(e.data).popitem()[0] for _, _, e, _ in found} == {"retry_send_s", "ledger_write_s"}
    assert len({t for t, _, _, _ in found}) > len(list(_templates())) // 2


def test_a_run_reads_a_worker_delay_when_it_carries_out_a_command_that_reads_it(lost_response: Scenario) -> None:
    """lost_response: reconcile_and_reauthorize looks up and records the effect (the ledger's delay is read, a
    retry's is not); stop_on_timeout neither retries nor records (neither is read); the number of recovering
    workers, and any change to the contract, always act."""
    delays = {dict(e.data).popitem()[0]: e for e in worker_variants(lost_response)}
    reconcile = simulate(lost_response, load_policy("reconcile_and_reauthorize"), 1).reach
    stopper = simulate(lost_response, load_policy("stop_on_timeout"), 1).reach
    assert {"look_up", "record_effect"} <= reconcile.commanded and "retry_same_action" not in reconcile.commanded
    assert [search.reaches(reconcile, delays[k]) for k in ("retry_send_s", "ledger_write_s", "recoverers")] == [
        False,
        True,
        True,
    ]
    assert [search.reaches(stopper, delays[k]) for k in ("retry_send_s", "ledger_write_s", "recoverers")] == [
        False,
        False,
        True,
    ]
    assert search.reaches(reconcile, element("contract", {"on_conflict": "replay"}))
    # What always acts is never worth a smaller run to compare with: the contract, the number of workers.
    assert [search.always_acts(delays[k]) for k in ("retry_send_s", "ledger_write_s", "recoverers")] == [
        False,
        False,
        True,
    ]
    assert search.always_acts(element("contract", {"on_conflict": "replay"}))


@pytest.mark.parametrize(
    ("setting", "kinds"),
    [
        ("retry_send_s", frozenset({"retry_new_key", "resend_current_arguments"})),  # a same-key retry forgotten
        ("ledger_write_s", frozenset({"record_effect"})),  # writes of an absence or a rejection forgotten
        ("ledger_write_s", frozenset({"record_effect", "record_absent"})),  # a rejection's write forgotten
    ],
)
def test_a_worker_delay_read_by_fewer_commands_than_read_it_is_caught(
    setting: str, kinds: frozenset[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``READ_ONLY_BY`` missing one of the commands that read a delay: some shipped template runs differently
    with the delay added where the wrong table says it was not read."""
    monkeypatch.setitem(world.READ_ONLY_BY, setting, kinds)
    assert any(not same for _, _, _, same in _unread_delays())


def test_a_judge_skips_a_worker_delay_the_smaller_run_never_read(lost_response: Scenario) -> None:
    """The judge answers for the template with a retry's delay added from the template's own run (reconcile never
    retries there), and runs the case with the ledger's delay added (it records the effect)."""
    policy = load_policy("reconcile_and_reauthorize")
    own = elements_of(lost_response)
    delays = {dict(e.data).popitem()[0]: e for e in worker_variants(lost_response)}
    judge = search._Judge(lost_response)
    alone = judge(policy, Schedule.of(own), 1)
    assert judge(policy, Schedule.of([*own, delays["retry_send_s"]]), 1) == alone
    assert judge.simulated[policy.name] == 1
    judge(policy, Schedule.of([*own, delays["ledger_write_s"]]), 1)
    judge(policy, Schedule.of([*own, delays["recoverers"]]), 1)
    assert judge.simulated[policy.name] == 3
