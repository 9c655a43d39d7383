"""Behaviour of exploration that mutation testing found no test asked about (tests/MUTANTS.md, the tenth pass).

Exploration was tested end to end, through `harness explore`, whose cases run in worker processes: a mutant
there went unseen. These tests ask the search itself, in process, what it promises: the template's own runs
say which declared faults fired; the template comes first and no schedule twice; swarm schedule n is drawn
from n alone, among the kinds it turns on; shrinking tries the elements the template lacks first, halves
delays to the millisecond while the violation stays, and remembers where each schedule led; a finding's shape
is its schedule without delay lengths. Where a judge is needed, most tests use a stand-in whose violations
follow a stated rule, so the expectation follows from that rule and not from the simulator.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from conftest import shipped
from hypothesis import given, settings
from hypothesis import strategies as st

import harness.explore.search as search
from harness.check import check
from harness.explore.schedule import (
    DELAYS_S,
    LOOKUP_LAG_S,
    OPERATOR_EVENTS,
    SHORT_DEDUPE_WINDOW_S,
    Element,
    Observed,
    Schedule,
    apply,
    consistent,
    contract_variants,
    element,
    element_dict,
    elements_of,
    fault_elements,
    operator_elements,
    singles,
)
from harness.explore.search import (
    ExploreJob,
    _Cases,
    _kind,
    explore_job,
    schedules,
    shape,
    shrink,
    swarm_draw,
)
from harness.model.events import DispatchSent
from harness.policy import Policy, load_policy
from harness.run.cell import describe, describe_event
from harness.scenario import BOUNDARIES, DestinationSpec, Scenario
from harness.scenario.faults import CONNECTOR_PHASES
from harness.sim import simulate

#: The contract fields exploration changes: every one that says how the service behaves, not its timings or
#: the models it refuses or whether its ledger can be read.
DESTINATION_FIELDS = frozenset(
    {"dedupe", "dedupe_window_s", "on_conflict", "on_in_flight", "request_validity_s", "fencing", "lookup_lag_s"}
)
_DEFAULT_DESTINATION = DestinationSpec()
RETRY, RECONCILE = load_policy("retry_new_key"), load_policy("reconcile_and_reauthorize")


def _faults(template: Scenario, *faults: dict[str, Any]) -> Scenario:
    return apply(template, Schedule.of([element("fault", f) for f in faults]))


def _firing_once_for_one_policy() -> tuple[Scenario, dict[str, Any]]:
    """lost_response with three faults: the reply to the first dispatch is lost (every policy dispatches once),
    the reply to a second is lost (only a policy that dispatches again reaches it: retry_new_key does,
    reconcile_and_reauthorize looks the effect up instead), and a ninth request is lost (no policy gets there)."""
    never = {"boundary": "request_lost", "nth": 9}
    template = _faults(
        shipped("lost_response"), {"boundary": "response_lost"}, {"boundary": "response_lost", "nth": 2}, never
    )
    return template, never


def _seeds_simulated(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    ran: list[tuple[str, int]] = []
    real = search.simulate

    def spy(scenario: Scenario, policy: Policy, seed: int) -> Any:
        ran.append((policy.name, seed))
        return real(scenario, policy, seed)

    monkeypatch.setattr(search, "simulate", spy)
    return ran


def test_a_declared_fault_is_unfired_only_when_no_policy_and_seed_fired_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """observe() runs the template as written, for every policy and seed given: a fault counts as fired when
    any one run fired it (here the second lost reply fires once, for the first policy only), and is reported
    unfired when none did."""
    template, never = _firing_once_for_one_policy()
    ran = _seeds_simulated(monkeypatch)
    _, unfired = search.observe(template, [RETRY, RECONCILE], (2, 5))
    assert ran == [(p.name, seed) for p in (RETRY, RECONCILE) for seed in (2, 5)]
    at = next(i for i, f in enumerate(template.faults) if f.nth == never["nth"])
    assert [(u.scenario, u.index, u.fault, u.kind, u.reached, u.fired) for u in unfired] == [
        (template.name, at, describe(template.faults[at]), "fault", 0, 0)
    ]


def test_a_declared_operator_event_is_unfired_only_when_no_policy_and_seed_made_it_act() -> None:
    """Operator events count as faults do: one that acted in any run is not reported; one whose trigger came but
    that acted in no run is, with the runs its trigger came in; one whose trigger never came, with none. Its
    place follows the template's faults."""
    cancel = {"do": "request_cancel", "when": {"after": {"actor": "worker", "event": "timeout", "nth": 2}}}
    late = {"do": "expire_approval", "when": {"at_s": 1.0, "delay_s": 10_000.0}}
    never = {"do": "request_cancel", "when": {"after": {"actor": "worker", "event": "crashed", "nth": 1}}}
    template = _firing_once_for_one_policy()[0]
    template = apply(
        template, Schedule.of([*elements_of(template), *(element("operator", e) for e in (cancel, late, never))])
    )
    _, unfired = search.observe(template, [RETRY, RECONCILE], (2, 5))
    events = [u for u in unfired if u.kind == "operator"]
    assert [(u.fault, u.reached, u.fired) for u in events] == [
        ("expire_approval at_s=1.0 delay_s=10000.0", 4, 0),
        ("request_cancel after=worker.crashed nth=1", 0, 0),
    ]
    declared = [describe_event(e) for e in template.operator]
    assert [u.index for u in events] == [len(template.faults) + declared.index(u.fault) for u in events]
    assert {u.scenario for u in unfired} == {template.name}


def test_observe_reports_the_most_dispatches_any_run_reached() -> None:
    """The most dispatches of any one action over the runs: none when the approval runs out before any."""
    template, _ = _firing_once_for_one_policy()
    most = max(e.n for e in search.simulate(template, RETRY, 1).evidence.history if isinstance(e, DispatchSent))
    assert search.observe(template, [RECONCILE, RETRY], (1,))[0].dispatches == most > 1
    nothing_sent = search.observe(shipped("approval_expired_before_dispatch"), [RETRY], (1,))[0]
    assert (nothing_sent.dispatches, nothing_sent.reads) == (0, 0)


def test_observe_runs_no_further_seed_of_a_policy_whose_case_failed(monkeypatch: pytest.MonkeyPatch) -> None:
    """A case a supervisor names as failed stops its policy: its later seeds are not run, the other policy's
    are, and what is observed comes from those alone."""
    template, _ = _firing_once_for_one_policy()
    ran = _seeds_simulated(monkeypatch)
    cases = _Cases(((0, "over its budget"),), None)
    seen, _ = search.observe(template, [RETRY, RECONCILE], (1, 2), cases)
    assert ran == [("reconcile_and_reauthorize", 1), ("reconcile_and_reauthorize", 2)]
    assert set(cases.stopped) == {"retry_new_key"} and seen.dispatches == 1


def _added(template: Scenario) -> tuple[list[Element], Observed]:
    seen, _ = search.observe(template, [RETRY, RECONCILE], (1,))
    return singles(template, seen), seen


def test_the_template_comes_first_and_no_schedule_comes_twice() -> None:
    template = shipped("request_lost")
    added, seen = _added(template)
    keys = [s.key for s in schedules(template, seen, 2, 20)]
    assert keys[0] == Schedule.of(elements_of(template)).key
    assert len(keys) == len(set(keys))
    # Depth 1 is the template and each added element once; the swarm draws again from the same elements.
    assert len([s for s in schedules(template, seen, 1, 0)]) == 1 + len(added)


def test_swarm_schedule_n_is_drawn_from_n_alone() -> None:
    """At depth 0 the swarm of N is the template, then the draws of n = 1..N in order, each added to the
    template's own elements, less repeats and schedules that change one contract field twice."""
    for name in ("request_lost", "lost_response", "changed_task"):
        template = shipped(name)
        added, seen = _added(template)
        own = elements_of(template)
        expected: list[str] = []
        for n in range(1, 21):
            schedule = Schedule.of([*own, *swarm_draw(template.name, added, n)[1]])
            if schedule.key not in expected and consistent(schedule.elements):
                expected.append(schedule.key)
        got = [s.key for s in schedules(template, seen, 0, 20)]
        assert got[0] == Schedule.of(own).key and got[1:] == expected, name
        assert len(got) > 10, name


def test_a_swarm_draw_turns_some_kinds_on_and_picks_among_them_only() -> None:
    """Each draw turns on a random subset of the kinds (one per fault boundary, operator action and contract
    field), at least one, and picks 1 to SWARM_SIZE_MAX elements of those kinds."""
    template = shipped("request_lost")
    added, _ = _added(template)
    assert [_kind(e) for e in (_delayed(20.0), CANCEL, element("contract", {"fencing": True}))] == [
        "fault:request_delayed",
        "operator:request_cancel",
        "contract:fencing",
    ]
    kinds = {_kind(e) for e in added}
    draws = [swarm_draw(template.name, added, n) for n in range(1, 201)]
    for enabled, picked in draws:
        assert enabled, picked
        assert enabled <= kinds, enabled - kinds
        assert 1 <= len(picked) <= search.SWARM_SIZE_MAX, picked
        assert {_kind(e) for e in picked} <= enabled, ({_kind(e) for e in picked}, enabled)
    sizes = {len(enabled) for enabled, _ in draws}
    assert max(sizes) > 1 and len(kinds) not in sizes  # about half of them: more than one, not all
    assert {len(picked) for _, picked in draws} == set(range(1, search.SWARM_SIZE_MAX + 1))
    # Another template's swarm is its own, even over the same elements.
    renamed = [swarm_draw("another", added, n) for n in range(1, 21)]
    assert renamed != draws[:20]
    assert swarm_draw(template.name, [], 1) == (frozenset(), ())
    # With one kind, the coin turns it off half the time: the draw turns it on all the same.
    lone = [_delayed(20.0), _delayed(70.0)]
    assert {swarm_draw(template.name, lone, n)[0] for n in range(1, 21)} == {frozenset({"fault:request_delayed"})}


def test_every_swarm_schedule_changes_each_contract_field_once_at_most() -> None:
    template = shipped("request_lost")
    _, seen = _added(template)
    swarm = list(schedules(template, seen, 0, 200))
    assert len({s.key for s in swarm}) == len(swarm) > 100  # draws that repeat an earlier one are left out
    for s in swarm:
        fields = [(e.kind, next(iter(element_dict(e)))) for e in s.elements if e.kind in ("contract", "worker")]
        assert len(fields) == len(set(fields)), s.key
    twice = Schedule.of([element("contract", {"dedupe": "none"}), element("contract", {"dedupe": "process"})])
    once_each = Schedule.of([element("contract", {"dedupe": "none"}), element("contract", {"fencing": True})])
    faults = Schedule.of(
        [element("fault", {"boundary": "request_lost"}), element("fault", {"boundary": "response_lost"})]
    )
    assert not consistent(twice.elements) and consistent(once_each.elements) and consistent(faults.elements)
    worker_twice = Schedule.of([element("worker", {"retry_send_s": 1.0}), element("worker", {"retry_send_s": 0.0})])
    apart = Schedule.of([element("worker", {"retry_send_s": 1.0}), element("worker", {"ledger_write_s": 1.0})])
    assert not consistent(worker_twice.elements) and consistent(apart.elements)


# A stand-in judge: a schedule shows a violation when it holds a delayed request of at least MIN_DELAY_S and
# the cancellation; every other element is irrelevant. It remembers every question.
MIN_DELAY_S = 1.2
CANCEL = element("operator", {"do": "request_cancel", "when": {"after": {"actor": "worker", "event": "timeout"}}})


class RuleJudge:
    def __init__(self, min_delay_s: float = MIN_DELAY_S) -> None:
        self.min_delay_s = min_delay_s
        self.asked: list[tuple[str, int]] = []

    def __call__(self, policy: Policy, schedule: Schedule, seed: int) -> tuple[str, tuple[str, ...], tuple[()]]:
        self.asked.append((schedule.key, seed))
        delays = [
            element_dict(e).get("delay_s", 0.0)
            for e in schedule.elements
            if e.kind == "fault" and element_dict(e)["boundary"] == "request_delayed"
        ]
        return _verdict(any(d >= self.min_delay_s for d in delays) and CANCEL in schedule.elements)


def _verdict(violated: bool) -> tuple[str, tuple[str, ...], tuple[()]]:
    """What a stand-in judge answers: (outcome, violated properties, fault coverage), as the job's judge does."""
    return ("incorrect", ("some_property",), ()) if violated else ("correct", (), ())


def _delayed(delay_s: float) -> Element:
    return element("fault", {"boundary": "request_delayed", "delay_s": delay_s})


def _delay_of(schedule: Schedule) -> float:
    (delay,) = [element_dict(e)["delay_s"] for e in schedule.elements if e.kind == "fault"]
    return float(delay)


def _shrunk(judge: RuleJudge, *elements: Element, **kwargs: Any) -> Schedule:
    return shrink(judge, RETRY, Schedule.of(elements), 7, **kwargs)  # type: ignore[arg-type]


def test_shrinking_halves_a_delay_to_the_millisecond_while_the_violation_stays() -> None:
    """5 s -> 2.5 -> 1.25 (0.625 is below the 1.2 s the rule needs, and no delay goes under 1 s): 1.25. The
    contract change and the lost response, which the rule ignores, go; every question names the case's seed."""
    noise = [element("contract", {"dedupe": "none"}), element("fault", {"boundary": "response_lost"})]
    judge = RuleJudge()
    minimal = _shrunk(judge, _delayed(5.0), CANCEL, *noise)
    assert minimal == Schedule.of([_delayed(1.25), CANCEL])
    assert {seed for _, seed in judge.asked} == {7}
    assert _delay_of(_shrunk(RuleJudge(1.0), _delayed(1.5), CANCEL)) == 1.0  # halved, but never under 1 s
    assert _delay_of(_shrunk(RuleJudge(1.25), _delayed(2.5003), CANCEL)) == 1.25  # 1.25015, to the millisecond
    assert _delay_of(_shrunk(RuleJudge(1.0), _delayed(1.0), CANCEL)) == 1.0  # nothing shorter to try


def test_shrinking_tries_first_the_elements_the_template_does_not_have() -> None:
    """Those smaller schedules are the ones exploration has already run; the template's own come last."""
    judge = RuleJudge()
    extra = element("fault", {"boundary": "response_lost"})  # between the template's two in the schedule's order
    own = frozenset({CANCEL.key, _delayed(20.0).key})
    start = Schedule.of([_delayed(20.0), CANCEL, extra])
    assert [e.key in own for e in start.elements] == [True, False, True]
    shrink(judge, RETRY, start, 7, own)  # type: ignore[arg-type]
    assert judge.asked[0][0] == start.without(extra).key


def test_shrinking_remembers_where_every_schedule_on_the_way_led() -> None:
    """The memo maps each schedule met to the minimal one; a second shrink from any of them asks nothing."""
    judge = RuleJudge()
    memo: dict[str, Schedule] = {}
    start = Schedule.of([_delayed(5.0), CANCEL, element("contract", {"fencing": True})])
    minimal = shrink(judge, RETRY, start, 7, memo=memo)  # type: ignore[arg-type]
    assert start.key in memo and set(memo.values()) == {minimal} and len(memo) > 2
    asked = len(judge.asked)
    assert shrink(judge, RETRY, Schedule.of([_delayed(2.5), CANCEL]), 7, memo=memo) == minimal  # type: ignore[arg-type]
    assert len(judge.asked) == asked


def test_each_delay_of_a_schedule_is_tried_shorter_in_turn() -> None:
    """Elements without a delay are passed over, not a reason to stop: here the contract change comes first."""
    start = Schedule.of([element("contract", {"fencing": True}), _delayed(5.0), CANCEL])
    assert start.elements[0].kind == "contract"
    judge = RuleJudge()
    shorter = search._shorter_delay(start, lambda s: bool(judge(RETRY, s, 7)[1]))
    assert shorter == start.replacing(_delayed(5.0), _delayed(2.5))


class OwnOrOperator:
    """A stand-in for the job's judge: a schedule violates when it holds the template's own fault or any
    operator event, so the template and every schedule with an operator event violate."""

    def __init__(self, template: Scenario, cases: object = None, **options: object) -> None:
        self.own = {e.key for e in elements_of(template)}
        self.errors: list[str] = []
        self.simulated: Counter[str] = Counter()

    def __call__(self, policy: Policy, schedule: Schedule, seed: int) -> tuple[str, tuple[str, ...], tuple[()]]:
        return _verdict(any(e.key in self.own or e.kind == "operator" for e in schedule.elements))


def test_a_finding_keeps_the_template_s_own_elements_where_they_suffice(monkeypatch: pytest.MonkeyPatch) -> None:
    """Shrinking removes added elements first, so the template plus an operator event shrinks to the template's
    own fault (the finding the template itself gave), not to the operator event alone, although the fault comes
    first in the schedule's order: one finding."""
    template = shipped("lost_response")
    monkeypatch.setattr(search, "_Judge", OwnOrOperator)
    job = _job(monkeypatch, template, (RETRY,), depth=1, swarm=0, seeds=(1,))()
    (own,) = elements_of(template)
    assert [f.schedule for f in job.findings] == [Schedule.of([own])]
    assert job.violating[RETRY.name] > 1


def test_a_finding_s_shape_is_its_schedule_without_delay_lengths() -> None:
    """Findings that differ only in how long a delay is are one finding; explore.json writes the shape."""
    base = [CANCEL, element("contract", {"dedupe": "none"}), element("fault", {"boundary": "response_lost", "nth": 2})]
    a, b = Schedule.of([*base, _delayed(20.0)]), Schedule.of([*base, _delayed(1.25)])
    assert (
        shape(a)
        == shape(b)
        == "|".join(
            [
                "contract:dedupe=none",
                "fault:boundary=request_delayed",
                "fault:boundary=response_lost,nth=2",
                CANCEL.key,
            ]
        )
    )
    other = Schedule.of([*base[:2], element("fault", {"boundary": "response_lost", "nth": 3}), _delayed(20.0)])
    assert shape(other) != shape(a)


def test_replacing_an_element_keeps_the_others() -> None:
    old, new = _delayed(20.0), _delayed(10.0)
    s = Schedule.of([CANCEL, old, element("contract", {"fencing": True})])
    assert s.replacing(old, new) == Schedule.of([CANCEL, new, element("contract", {"fencing": True})])


def _job(
    monkeypatch: pytest.MonkeyPatch,
    template: Scenario,
    policies: tuple[Policy, ...] = (RETRY, RECONCILE),
    **kwargs: Any,
) -> Callable[..., search.JobResult]:
    monkeypatch.setattr(search, "scenario_cases", lambda spec: [(spec, template)])
    names = tuple(p.name for p in policies)
    return lambda **more: explore_job(ExploreJob(names, "from-a-test", **(kwargs | more)))


def test_a_job_reports_unfired_faults_from_its_first_shard_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every shard runs the template, but only shard 0 reports what never fired (the run adds up the shards).
    A job in which a policy stopped reports what fired in none of the runs that finished, as a run does (the
    summary then says to mend the error first): it reported nothing, hiding the other policies' unfired faults."""
    template, never = _firing_once_for_one_policy()
    job = _job(monkeypatch, template, depth=0, swarm=0, seeds=(1,))
    whole = job()
    assert whole.scenario == template.name and whole.schedules == 1
    assert [u.fault for u in whole.unfired] == [describe(next(f for f in template.faults if f.nth == never["nth"]))]
    assert job(shard=0, shards=2).unfired == whole.unfired and job(shard=1, shards=2).unfired == []
    # retry_new_key (the first policy) stopped at its first case: the second lost reply, which only it reached,
    # and the ninth lost request, which no one reaches, fired in no run that finished.
    stopped = job(failed=((0, "over its budget"),))
    assert [u.fault for u in stopped.unfired] == [describe(f) for f in template.faults if f.nth != 1]
    assert [s.policy for s in stopped.stuck] == ["retry_new_key"]


def test_a_job_s_counts_are_the_sums_over_its_cases_and_each_finding_is_a_shrunk_first_sighting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Counted case by case, the simple way (simulate and check each schedule applied to the template): the
    cases and violating cases per policy, the properties violated, and per fault boundary the cases that
    reached its site and those in which it fired (once per case, however many of its faults are at it). Each
    finding is what shrinking gives for the first schedule that showed it (for any violation, or for a property
    no finding showed yet), judged at its seed; no case runs at a seed the job was not given."""
    template = shipped("request_lost")
    seeds = (1, 2)
    seen, _ = search.observe(template, [RETRY, RECONCILE], seeds)
    every = list(schedules(template, seen, 1, 3))
    cases: Counter[str] = Counter()
    violating: Counter[str] = Counter()
    violations: dict[str, Counter[str]] = {}
    coverage: dict[str, dict[str, list[int]]] = {}
    for schedule in every:
        scenario = apply(template, schedule)
        for policy in (RETRY, RECONCILE):
            for seed in seeds:
                result = simulate(scenario, policy, seed)
                verdicts = check(result.evidence).checks
                violated = [name for name, verdict in verdicts.items() if verdict == "false"]
                cases[policy.name] += 1
                violating[policy.name] += bool(violated)
                if violated:
                    violations.setdefault(policy.name, Counter()).update(violated)
                # Once per boundary a case reached (or fired), however many faults are at it.
                boundaries = {f.boundary for f in scenario.faults}
                for boundary in sorted(boundaries):
                    at = [c for f, c in zip(scenario.faults, result.coverage, strict=True) if f.boundary == boundary]
                    site = coverage.setdefault(policy.name, {}).setdefault(boundary, [0, 0])
                    site[0] += any(reached > 0 for reached, _ in at)
                    site[1] += any(fired > 0 for _, fired in at)
    ran = _seeds_simulated(monkeypatch)
    job = explore_job(ExploreJob(("retry_new_key", "reconcile_and_reauthorize"), "request_lost", 1, 3, seeds))
    assert {seed for _, seed in ran} == set(seeds)
    assert (job.scenario, job.schedules) == (template.name, len(every))
    assert (job.cases, job.violating, job.violations) == (cases, violating, violations)
    assert job.coverage == coverage and all(len(sites) > 3 for sites in coverage.values())
    assert violating["retry_new_key"] > len(job.findings) > 0
    # Every property counted is shown by a finding: shrunk for any violation first, then for each property
    # no finding showed yet.
    for name, counted in job.violations.items():
        assert set(counted) <= {p for f in job.findings if f.policy == name for p in f.properties}
    own = frozenset(e.key for e in elements_of(template))
    for f in job.findings:
        assert f.seed in seeds
        policy = load_policy(f.policy_spec)
        judge = search._Judge(template)
        first = every[f.first_seen]
        assert any(shrink(judge, policy, first, f.seed, own, keep=k) == f.schedule for k in (None, *f.properties))
        assert (f.policy, f.policy_revision, f.scenario, f.scenario_spec) == (
            policy.name,
            policy.revision,
            template.name,
            "request_lost",
        )
        assert judge(policy, f.schedule, f.seed)[:2] == (f.outcome, f.properties) and f.properties


def test_a_job_reports_a_failed_case_as_a_runnable_stuck_finding(monkeypatch: pytest.MonkeyPatch) -> None:
    """A case a supervisor names as failed is reported as a finding with outcome harness_error: the policy,
    its revision, the seed and the schedule it was on (the template itself when it failed on the template's
    own run), no property, not numbered among the violations, and why."""
    template, _ = _firing_once_for_one_policy()
    job = _job(monkeypatch, template, depth=1, swarm=0, seeds=(1,))
    on_observe = job(failed=((1, "its worker died"),))  # reconcile_and_reauthorize's run of the template
    (stuck,) = on_observe.stuck
    assert (stuck.policy, stuck.policy_spec, stuck.policy_revision) == (
        RECONCILE.name,
        RECONCILE.name,
        RECONCILE.revision,
    )
    assert (stuck.properties, stuck.outcome, stuck.seed, stuck.first_seen) == ((), "harness_error", 1, -1)
    assert (stuck.schedule, stuck.error, stuck.scenario) == (
        Schedule.of(elements_of(template)),
        "its worker died",
        template.name,
    )
    # A safe policy alone: case 0 observes the template, then case n runs schedule n - 1 (nothing to shrink).
    later = _job(monkeypatch, template, (RECONCILE,), depth=1, swarm=0, seeds=(1,))(failed=((2, "over its budget"),))
    (stuck,) = later.stuck
    second = list(schedules(template, search.observe(template, [RECONCILE], (1,))[0], 1, 0))[1]
    assert (stuck.policy, stuck.seed, stuck.schedule, stuck.error) == (RECONCILE.name, 1, second, "over its budget")
    assert later.cases == Counter({RECONCILE.name: 1}) and not later.violating


def test_harness_failures_on_schedules_are_counted_and_the_first_twenty_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    """A schedule the harness cannot run is a harness_error case, one line of at most 500 characters each (at
    most 20 a job), and the exploration goes on."""
    template, _ = _firing_once_for_one_policy()

    def refuse(template: Scenario, schedule: Schedule) -> Scenario:
        raise ValueError(f"cannot apply {len(schedule.elements)} elements" + "." * 600)

    monkeypatch.setattr(search, "apply", refuse)
    job = _job(monkeypatch, template, depth=1, swarm=0, seeds=(1,))()
    assert job.schedules > 20 and job.cases == Counter({RETRY.name: job.schedules, RECONCILE.name: job.schedules})
    assert len(job.errors) == 20 and not job.findings and not job.violating
    own = "fault:boundary=request_lost,nth=9|fault:boundary=response_lost|fault:boundary=response_lost,nth=2"
    assert job.errors[0] == (f"retry_new_key seed 1 [{own}]: ValueError: cannot apply 3 elements" + "." * 500)[:500]
    assert search._Judge(template)(RETRY, Schedule.of(elements_of(template)), 1) == ("harness_error", (), ())


def test_a_job_says_which_case_it_is_on_and_when_it_is_on_none(monkeypatch: pytest.MonkeyPatch) -> None:
    """The supervisor's protocol (harness.run.pool): on_case(position) before each case, on_case(-1) after it,
    positions counted from 0 over every case the job simulates; execute() is explore_job with it."""
    template, _ = _firing_once_for_one_policy()
    monkeypatch.setattr(search, "scenario_cases", lambda spec: [(spec, template)])
    job = ExploreJob((RECONCILE.name,), "from-a-test", 0, 0, (1, 2))
    said: list[int] = []
    result = job.execute(said.append)
    assert said == [0, -1, 1, -1, 2, -1, 3, -1]  # two seeds observing the template, then the template judged
    assert result.cases == Counter({RECONCILE.name: 2}) and result == explore_job(job)


def test_an_element_holds_what_its_yaml_says_less_the_defaults() -> None:
    """The same fault or operator event written with or without its defaults is one element, and a finding's
    file writes none of them."""
    fault = element("fault", {"boundary": "request_lost", "nth": 1})
    assert fault == element("fault", {"boundary": "request_lost"}) and element_dict(fault) == {
        "boundary": "request_lost"
    }
    cancel = {"do": "request_cancel", "when": {"after": {"actor": "worker", "event": "timeout"}}}
    event = element("operator", cancel | {"when": {"after": cancel["when"]["after"] | {"nth": 1}}})
    assert event == element("operator", cancel) and element_dict(event) == cancel
    assert element_dict(element("contract", {"dedupe": "none"})) == {"dedupe": "none"}


def test_fault_sites_follow_the_path_the_variants_and_the_actions() -> None:
    """A boundary that needs a connector or a bridge is tried only where one stands; each boundary with
    variants is tried in each (delays, connector crash phases, a bridge error before and after forwarding, and
    ahead of a forwarded call still on its way);
    a fault on another action than the template's first names that action, one on the first does not."""
    seen = Observed(dispatches=1, reads=1, kinds=())
    for name, part in (("bridge_error_after_forward", "bridge"), ("connector_crash_while_running", "connector")):
        faults = [element_dict(e) for e in fault_elements(shipped(name), seen)]
        assert {f["boundary"] for f in faults} == {b for b, cls in BOUNDARIES.items() if cls.needs in (None, part)}
        for boundary, variants in (
            ("request_delayed", [{"delay_s": d} for d in DELAYS_S]),
            ("apply_delayed", [{"delay_s": d} for d in DELAYS_S]),
            ("connector_crash", [{"phase": p} for p in CONNECTOR_PHASES]),
            (
                "bridge_connection_error",
                [{"forwarded": True}, {"forwarded": False}, *({"lands_after_s": d} for d in DELAYS_S)],
            ),
            ("request_lost", [{}]),
        ):
            if BOUNDARIES[boundary].needs in (None, part):
                tried = [f for f in faults if f["boundary"] == boundary]
                expected = [element("fault", {"boundary": boundary, "nth": 1} | v) for v in variants]
                assert tried == [element_dict(e) for e in expected], (name, boundary)
    template = shipped("newer_write_held")
    first, *later = template.action_ids
    named = {f.get("action_id", "not named") for f in map(element_dict, fault_elements(template, seen))}
    assert later and named == {"not named", *later} and first not in named


def test_operator_events_follow_the_first_entry_of_each_kind_the_operator_could_react_to() -> None:
    """Each of the three operator events right after the first (nth 1) entry of each kind an actor records;
    never after the operator's own entries, the injector's faults, or a kind no actor's vocabulary has."""
    kinds = (
        ("injector", "fault"),
        ("nobody", "something"),
        ("operator", "request_cancel"),
        ("worker", "no_such_event"),
        ("worker", "timeout"),
    )
    inserted = operator_elements(Observed(dispatches=1, reads=1, kinds=kinds))
    assert [e.kind for e in inserted] == ["operator"] * 3
    assert [element_dict(e) for e in inserted] == [
        element_dict(element("operator", op | {"when": {"after": {"actor": "worker", "event": "timeout"}}}))
        for op in OPERATOR_EVENTS
    ]
    assert all(element_dict(e)["when"]["after"].get("nth", 1) == 1 for e in inserted)


@pytest.mark.parametrize(
    "contract",
    [
        {},
        {"dedupe": "none", "on_conflict": "replay", "on_in_flight": "in_progress", "fencing": True},
        {"request_validity_s": None, "lookup_lag_s": LOOKUP_LAG_S, "dedupe_window_s": SHORT_DEDUPE_WINDOW_S},
        {"lookup_lag_s": 5.0},
        {"dedupe": "process", "dedupe_window_s": 4.0, "request_validity_s": 30.0},
    ],
)
def test_each_contract_variant_changes_one_field_to_another_value_it_could_have(contract: dict[str, Any]) -> None:
    """Every field is changed once (dedupe to each other value), each change validates, and none leaves the
    field as the template has it: exploring it would rerun the template."""
    template = shipped("lost_response")
    destination = DestinationSpec.model_validate(template.destination.model_dump() | contract)
    variants = [element_dict(e) for e in contract_variants(template.model_copy(update={"destination": destination}))]
    changes = [change for v in variants for change in v.items()]
    assert len(changes) == len(variants)  # one field each
    assert sorted(f for f, _ in changes) == sorted([*DESTINATION_FIELDS, "dedupe"])  # dedupe has two others
    for field, value in changes:
        assert value != getattr(destination, field), (field, value)
        if field not in ("dedupe", "request_validity_s"):  # those two try every other value they have
            assert _DEFAULT_DESTINATION.model_dump()[field] in (value, getattr(destination, field)), (field, value)
        assert getattr(DestinationSpec.model_validate(destination.model_dump() | {field: value}), field) == value


#: One copy of a finding: the part of the exploration that reached it, its policy and template, its shape, the
#: property shrinking kept (None: any violation), and what else the copy violates.
_COPY = st.tuples(
    st.integers(0, 2),
    st.sampled_from(["g1", "g2"]),
    st.sampled_from("abcd"),
    st.sampled_from([None, "P", "Q", "R"]),
    st.sets(st.sampled_from("PQRS"), max_size=3),
)


def _choose(given: list[dict[str, Any]]) -> list[int]:
    from harness.model import needed_findings

    chosen = needed_findings(
        given,
        key=lambda x: (x["group"], x["shape"]),
        group=lambda x: x["group"],
        kept=lambda x: x["kept"],
        properties=lambda x: x["props"],
    )
    return [x["seen"] for x in chosen]


@settings(max_examples=400, deadline=None)
@given(st.lists(_COPY, max_size=16))
def test_shards_merged_choose_the_findings_one_exploration_chooses(copies: list[Any]) -> None:
    """Each shard writes ``part_findings`` of its copies (those reached for any violation marked so, as
    explore.json marks them); choosing over every shard's, as load_explorations does, gives the very copies one
    exploration writes. A shard that wrote only its own choice (``needed_findings``) could leave out a copy the
    whole needs: one it took as shown by another of its findings, which the whole does not write."""
    from harness.model import part_findings

    findings = [
        {"seen": i, "part": part, "group": g, "shape": shape, "kept": kept, "props": sorted(props | {kept or "P"})}
        for i, (part, g, shape, kept, props) in enumerate(copies)
    ]
    whole = _choose(findings)
    written = []
    for part in range(3):
        mine = [f for f in findings if f["part"] == part]
        anyway = {(f["group"], f["shape"]) for f in mine if f["kept"] is None}
        for f in part_findings(mine, key=lambda x: (x["group"], x["shape"]), kept=lambda x: x["kept"]):
            written.append({**f, "kept": None} if (f["group"], f["shape"]) in anyway else f)
    assert _choose(sorted(written, key=lambda f: f["seen"])) == whole


def test_a_shard_that_wrote_only_its_own_choice_could_lack_a_finding() -> None:
    """The case the property above guards: shard 0 reaches shape b keeping P after shape a (kept for Q, showing P
    too), so alone it writes a and not b; shard 1 reached a earlier, keeping Q and showing only Q. The whole
    writes shard 1's copy of a, which does not show P, so it needs b: merged from each shard's own choice, b
    was missing."""
    from harness.model import needed_findings, part_findings

    findings = [
        {"seen": 0, "part": 1, "group": "g", "shape": "a", "kept": "Q", "props": ["Q"]},
        {"seen": 1, "part": 0, "group": "g", "shape": "a", "kept": "Q", "props": ["P", "Q"]},
        {"seen": 2, "part": 0, "group": "g", "shape": "b", "kept": "P", "props": ["P"]},
    ]
    assert _choose(findings) == [0, 2]

    def merged(write: Any) -> list[int]:
        written = [f for part in (0, 1) for f in write([f for f in findings if f["part"] == part])]
        return _choose(sorted(written, key=lambda f: f["seen"]))

    def own_choice(mine: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return needed_findings(
            mine, key=lambda x: x["shape"], group=lambda x: x["group"], kept=lambda x: x["kept"],
            properties=lambda x: x["props"],
        )  # fmt: skip

    assert merged(own_choice) == [0]
    assert merged(lambda mine: part_findings(mine, key=lambda x: x["shape"], kept=lambda x: x["kept"])) == [0, 2]


def test_a_part_writes_each_shapes_first_copy_and_its_first_copy_kept_for_each_property() -> None:
    """Exactly what a part writes: of a shape reached for any violation here, its first copy only (whatever that
    copy kept); of one reached only keeping properties, its first copy keeping each, and no later copy."""
    from harness.model import part_findings

    copies = [("a", "P"), ("a", None), ("a", "Q"), ("b", "P"), ("b", "P"), ("b", "R"), ("c", None)]
    written = part_findings(list(enumerate(copies)), key=lambda x: x[1][0], kept=lambda x: x[1][1])
    assert [i for i, _ in written] == [0, 3, 5, 6]
