"""Exploring one template: every schedule it allows up to a depth, and swarm schedules, for every policy.

One job explores one case of one scenario (a template) for every policy given, over one shard of its
schedules: the shard is the schedule index modulo the shard count, so shards split the work exactly and a
Polyaxon grid can run them apart. Every violation is shrunk to a 1-minimal schedule (removing any one element
makes it disappear; delays are shortened while it stays), and each distinct minimal schedule is a finding.
Nothing is kept per schedule but counts: memory is flat in the number of schedules.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import TypeVar

from harness.check import Judgement, check
from harness.explore.schedule import (
    Element,
    Observed,
    Schedule,
    apply,
    consistent,
    declared,
    element,
    element_dict,
    elements_of,
    pairs,
    singles,
)
from harness.model.events import DispatchSent, JobFollowSent, LookupSent, VerifySent
from harness.policy import Policy, load_policy
from harness.run.cell import FaultCoverage, describe, describe_event
from harness.scenario import Scenario, scenario_cases
from harness.seeds import rng
from harness.sim import Reach, SimResult, simulate
from harness.sim.worker import READ_ONLY_BY

__all__ = [
    "ExploreJob",
    "Finding",
    "JobResult",
    "always_acts",
    "explore_job",
    "reaches",
    "schedules",
    "shape",
    "shrink",
    "swarm_draw",
]

#: Swarm schedules draw at most this many elements each.
SWARM_SIZE_MAX = 4
#: At most this many small runs' reach is kept per job (a few kilobytes each): a template has a few hundred
#: one-element schedules, times the policies and the seeds.
SMALL_MAX = 20_000


@dataclass(frozen=True, slots=True)
class ExploreJob:
    """One shard of one template's exploration, for every policy given. Picklable for a process pool."""

    policy_specs: tuple[str, ...]
    scenario_spec: str
    depth: int
    swarm: int
    seeds: tuple[int, ...]
    shard: int = 0
    shards: int = 1
    #: Cases of this job not to run again, by position among the cases it simulates, each with why it failed
    #: (over its wall-clock budget, or its worker process died): the policy is explored no further in this job.
    failed: tuple[tuple[int, str], ...] = ()
    #: Judge a schedule without running it when a smaller one's run never reached its added element (the
    #: answer is the same either way; off only to show that it is).
    skip_unreached: bool = True

    def execute(self, on_case: Callable[[int], None]) -> JobResult:
        return explore_job(self, on_case)

    def without(self, position: int, reason: str) -> ExploreJob:
        return replace(self, failed=(*self.failed, (position, reason)))


@dataclass(frozen=True, slots=True)
class Finding:
    """A distinct violation: a policy, the properties it breaks, and the 1-minimal schedule that shows it."""

    policy: str
    policy_spec: str
    policy_revision: str
    scenario: str
    scenario_spec: str
    properties: tuple[str, ...]
    outcome: str
    seed: int
    schedule: Schedule
    #: The index of the schedule that first showed it (findings are numbered in this order).
    first_seen: int
    #: Outcome ``harness_error`` only: why the case could not be judged (over its budget, its worker died).
    error: str | None = None
    #: The property shrinking kept to reach it, when it shrank for one (``None``: any violation, as first shrunk).
    kept: str | None = None


@dataclass(slots=True)
class JobResult:
    """Counts for one job, per policy, and its findings."""

    scenario: str
    #: Which part of the template's schedules this job explored, of how many (0 of 1: all of them).
    shard: int = 0
    shards: int = 1
    schedules: int = 0
    cases: Counter[str] = field(default_factory=Counter)
    #: Cases actually run, per policy, shrinking's included; the others were judged without running them.
    simulated: Counter[str] = field(default_factory=Counter)
    violating: Counter[str] = field(default_factory=Counter)
    violations: dict[str, Counter[str]] = field(default_factory=dict)
    #: Per policy, per fault boundary: (cases in which its site was reached, cases in which it fired).
    coverage: dict[str, dict[str, list[int]]] = field(default_factory=dict)
    #: Faults and operator events the template declares that fired in no baseline case (shard 0 only).
    unfired: list[FaultCoverage] = field(default_factory=list)
    #: Harness failures on some schedules (the exploration went on).
    errors: list[str] = field(default_factory=list)
    #: Cases over their wall-clock budget or whose worker died, as findings with outcome ``harness_error`` (the
    #: schedule is runnable); each stopped its policy's exploration in this job.
    stuck: list[Finding] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)


class _Cases:
    """Counts the cases a job simulates, so that a supervisor knows which one a stuck or dead worker was on.

    A case the supervisor names as failed is not run again: it is reported, and its policy is explored no
    further in this job (a policy that never returns would cost the whole budget on every schedule)."""

    def __init__(self, failed: tuple[tuple[int, str], ...], on_case: Callable[[int], None] | None) -> None:
        self._failed = dict(failed)
        self._on_case = on_case
        self._position = 0
        #: Policies explored no further, by name: the seed and schedule of the case that failed, and why.
        self.stopped: dict[str, tuple[int, Schedule | None, str]] = {}

    def run(self, policy: Policy, seed: int, schedule: Schedule | None, work: Callable[[], _T]) -> _T | None:
        """``work()``, counted; ``None`` when this case failed before (its policy is then stopped)."""
        position = self._position
        self._position += 1
        reason = self._failed.get(position)
        if reason is not None:
            self.stopped[policy.name] = (seed, schedule, reason)
            return None
        if self._on_case is None:
            return work()
        self._on_case(position)
        # Not in a ``finally``: a case that ends its worker (a policy's ``sys.exit``) must leave the worker's
        # position on that case, or the parent takes the death for one between cases and gives up the job.
        result = work()
        self._on_case(-1)
        return result


def observe(
    template: Scenario, policies: list[Policy], seeds: tuple[int, ...], cases: _Cases | None = None
) -> tuple[Observed, list[FaultCoverage]]:
    """Run the template as it is: what the runs reach, and which declared faults and operator events fired in
    none of them (with the runs that reached each: its site, or its trigger)."""
    cases = cases or _Cases((), None)
    dispatches = reads = 0
    # Per (actor, event) kind, the most records of it in any one run.
    most: Counter[tuple[str, str]] = Counter()
    # Per declared fault, then per operator event, in the template's order: runs that reached it, that fired it.
    faults = [(0, 0) for _ in template.faults]
    events = [(0, 0) for _ in template.operator]
    for policy in policies:  # no two of the same name (the grid refuses them): a policy stops only here
        for seed in seeds:
            result = cases.run(policy, seed, None, partial(simulate, template, policy, seed))
            if result is None:
                break
            here: Counter[tuple[str, str]] = Counter()
            for event in result.evidence.history:
                here[(event.actor, event.event)] += 1
                if isinstance(event, DispatchSent):
                    dispatches = max(dispatches, event.n)
                elif isinstance(event, LookupSent | JobFollowSent | VerifySent):
                    reads = max(reads, event.n)
            most |= here  # the larger of the two counts, kind by kind
            for counts, got in ((faults, result.coverage), (events, result.operator_coverage)):
                counts[:] = [
                    (r + (now_r > 0), f + (now_f > 0)) for (r, f), (now_r, now_f) in zip(counts, got, strict=True)
                ]
    declared = [
        *(FaultCoverage(template.name, i, describe(f), *faults[i]) for i, f in enumerate(template.faults)),
        *(
            FaultCoverage(template.name, len(faults) + i, describe_event(e), *events[i], kind="operator")
            for i, e in enumerate(template.operator)
        ),
    ]
    kinds = tuple(sorted(most))
    return Observed(dispatches, reads, kinds, tuple(most[k] for k in kinds)), [c for c in declared if c.fired == 0]


def schedules(template: Scenario, seen: Observed, depth: int, swarm: int) -> Iterator[Schedule]:
    """The template itself, then every combination of up to ``depth`` added elements, then ``swarm`` random
    mixes (each enabling a random subset of kinds), without repeats."""
    own = elements_of(template)
    added = singles(template, seen)
    emitted: set[str] = set()
    for combo in itertools.chain([()], pairs(added, depth)):
        schedule = Schedule.of([*own, *combo])
        if schedule.key not in emitted:
            emitted.add(schedule.key)
            yield schedule
    if not added:
        return  # nothing to mix
    for n in range(1, swarm + 1):
        schedule = Schedule.of([*own, *swarm_draw(template.name, added, n)[1]])
        if schedule.key not in emitted and consistent(schedule.elements):
            emitted.add(schedule.key)
            yield schedule


def swarm_draw(template: str, added: Sequence[Element], n: int) -> tuple[frozenset[str], tuple[Element, ...]]:
    """Swarm schedule ``n`` of a template: the kinds of element it turns on (each with probability 1/2, and one
    at random when the coin turns none on), and the 1 to ``SWARM_SIZE_MAX`` added elements it picks among
    those kinds. A function of the template's name, its added elements and ``n`` alone."""
    kinds = sorted({_kind(e) for e in added})
    if not kinds:
        return frozenset(), ()
    draw = rng(n, f"swarm:{template}")
    enabled = {k for k in kinds if draw.random() < 0.5} or {draw.choice(kinds)}
    pool = [e for e in added if _kind(e) in enabled]
    return frozenset(enabled), tuple(draw.sample(pool, min(len(pool), draw.randint(1, SWARM_SIZE_MAX))))


def _kind(e: Element) -> str:
    """What a swarm seed turns on or off: a fault boundary, an operator event, a contract field or a worker field."""
    data = element_dict(e)
    if e.kind == "fault":
        return f"fault:{data['boundary']}"
    if e.kind == "operator":
        return f"operator:{data['do']}"
    return f"{e.kind}:{next(iter(data))}"


_T = TypeVar("_T")
#: What the judge answers for one case: its outcome, the properties it violated, and per declared fault, in the
#: schedule's order, (times its site was reached, times it fired).
Judged = tuple[str, tuple[str, ...], tuple[tuple[int, int], ...]]
#: What the judge answers for a policy explored no further in this job: not run, nothing violated.
_NOT_RUN: Judged = ("harness_error", (), ())


def _simulate_and_check(scenario: Scenario, policy: Policy, seed: int) -> tuple[SimResult, Judgement]:
    result = simulate(scenario, policy, seed)
    return result, check(result.evidence)


def always_acts(e: Element) -> bool:
    """Whether ``e`` acts in every run, whatever the run reaches: a change to the contract (the policy sees the
    contract at every decision), or to a worker setting every run reads (the number of recovering workers)."""
    return e.kind == "contract" or (e.kind == "worker" and any(name not in READ_ONLY_BY for name, _ in e.data))


def reaches(reach: Reach, e: Element) -> bool:
    """Whether a run that reached ``reach`` would have met the added element ``e``: a fault's site, an operator
    event's trigger, a worker setting it reads, or anything that always acts."""
    if always_acts(e):
        return True
    if e.kind == "worker":
        return any(reach.reads(name) for name, _ in e.data)
    return reach.reaches(declared(e))


class _Judge:
    """Runs (policy, schedule, seed) once and remembers the violated properties: shrinking asks again and again.

    A schedule is judged without running it when it adds, to the template's own schedule or to one with a single
    element added, an element that the smaller schedule's run never reached (a fault whose site no actor asked
    about, an operator event whose trigger was never recorded): the run would be the same, so its judgement is
    (``SimResult.reach`` says why), or a worker delay read only while carrying out commands that run never
    carried out (``Reach.reads``). A change to the contract always acts (the policy sees the contract), and so
    does one to the number of recovering workers: neither is ever skipped this way."""

    def __init__(
        self,
        template: Scenario,
        cases: _Cases | None = None,
        *,
        skip_unreached: bool = True,
        singles: frozenset[str] = frozenset(),
    ) -> None:
        self._template = template
        self._cases = cases or _Cases((), None)
        self._own = frozenset(e.key for e in elements_of(template))
        self._skip_unreached = skip_unreached
        #: The elements exploration adds one at a time: a schedule with one of them added is run to skip others,
        #: if not run yet (any other, shrinking's shorter delays say, would serve too few schedules to pay).
        self._singles = singles
        #: Harness failures met on the way, one line each.
        self.errors: list[str] = []
        #: Cases run, per policy (the others were judged the same as a smaller schedule's run).
        self.simulated: Counter[str] = Counter()
        self._seen: dict[tuple[str, str, int], Judged] = {}
        #: The template's own schedule and those with one element added, per (policy, schedule, seed): the
        #: judgement and what the run reached (a few hundred per policy and seed).
        self._small: dict[tuple[str, str, int], tuple[Judged, Reach]] = {}
        #: The last schedule applied to the template, and its scenario: every policy and seed asks in turn.
        self._applied: tuple[str, Scenario] | None = None

    def __call__(self, policy: Policy, schedule: Schedule, seed: int) -> Judged:
        key = (policy.name, schedule.key, seed)
        if key not in self._seen:
            if policy.name in self._cases.stopped:
                return _NOT_RUN
            judged = self._same_as_smaller(policy, schedule, seed) if self._skip_unreached else None
            if policy.name in self._cases.stopped:
                return _NOT_RUN  # a smaller schedule's case failed on the way
            if judged is None:
                judged = self._run(policy, schedule, seed)
                if judged is None:
                    return _NOT_RUN
            if len(self._seen) > 50_000:  # bounded: a shrink asks about a handful of neighbours only
                self._seen.clear()
            self._seen[key] = judged
        return self._seen[key]

    def _run(self, policy: Policy, schedule: Schedule, seed: int) -> Judged | None:
        try:
            scenario = self._scenario(schedule)
            ran = self._cases.run(policy, seed, schedule, partial(_simulate_and_check, scenario, policy, seed))
        except Exception as exc:  # a harness failure on one schedule is reported, and exploration goes on
            self.errors.append(f"{policy.name} seed {seed} [{schedule.key}]: {type(exc).__name__}: {exc}"[:500])
            return ("harness_error", (), ())
        if ran is None:
            return None
        self.simulated[policy.name] += 1
        result, judgement = ran
        violated = tuple(name for name, verdict in judgement.checks.items() if verdict == "false")
        judged = (judgement.outcome, violated, result.coverage)
        self._keep(policy, schedule, seed, judged, result)
        return judged

    def _same_as_smaller(self, policy: Policy, schedule: Schedule, seed: int) -> Judged | None:
        """The judgement of ``schedule`` without one of its added elements, when that run never reached the
        element (with the element's coverage, nothing, put in its place); ``None`` when no such run is known."""
        added = self._added(schedule)
        if not 1 <= added <= 2:
            return None  # only the template's own run and one-element runs are kept
        for e in schedule.elements:
            if e.key in self._own or always_acts(e):
                continue  # no smaller run can say it would not have acted: not worth running one
            smaller = schedule.without(e)
            known = self._small.get((policy.name, smaller.key, seed))
            if known is None:
                if len(self._small) >= SMALL_MAX or not self._worth_running(smaller):
                    continue
                self(policy, smaller, seed)  # run it (once per policy and seed: it serves every pair it is in)
                known = self._small.get((policy.name, smaller.key, seed))
                if known is None:
                    return None  # a harness error, or the policy stopped
            (outcome, violated, coverage), reach = known
            if reaches(reach, e):
                continue
            if e.kind == "fault":
                at = [f.key for f in schedule.elements if f.kind == "fault"].index(e.key)
                coverage = (*coverage[:at], (0, 0), *coverage[at:])
            judged = (outcome, violated, coverage)
            self._keep(policy, schedule, seed, judged, reach)
            return judged
        return None

    def _keep(self, policy: Policy, schedule: Schedule, seed: int, judged: Judged, ran: SimResult | Reach) -> None:
        """Keep what a small schedule's run reached, up to ``SMALL_MAX`` runs (past that, the schedules that
        would have needed the others are run, not skipped: the answers are the same)."""
        if self._added(schedule) <= 1 and len(self._small) < SMALL_MAX:
            reach = ran.reach if isinstance(ran, SimResult) else ran
            self._small[(policy.name, schedule.key, seed)] = (judged, reach)

    def _worth_running(self, smaller: Schedule) -> bool:
        return all(e.key in self._own or e.key in self._singles for e in smaller.elements)

    def _added(self, schedule: Schedule) -> int:
        return sum(1 for e in schedule.elements if e.key not in self._own)

    def _scenario(self, schedule: Schedule) -> Scenario:
        """The template under ``schedule``, applied once for all the policies and seeds that ask in a row."""
        if self._applied is None or self._applied[0] != schedule.key:
            self._applied = (schedule.key, apply(self._template, schedule))
        return self._applied[1]


def shrink(
    judge: _Judge,
    policy: Policy,
    schedule: Schedule,
    seed: int,
    own: frozenset[str] = frozenset(),
    memo: dict[str, Schedule] | None = None,
    keep: str | None = None,
) -> Schedule:
    """A 1-minimal schedule that still shows a violation (with ``keep``, a violation of that property): no single
    element can be removed without losing every such violation, and each delay is as short as halving keeps it.

    Elements the template does not have (keys not in ``own``) are removed first: their smaller schedules are
    the ones exploration has already run. Shrinking is a function of the schedule alone, so ``memo`` (every
    schedule met on the way, to the minimal one it led to) changes nothing but the time it takes."""
    memo = {} if memo is None else memo

    def shows(s: Schedule) -> bool:
        violated = judge(policy, s, seed)[1]
        return keep in violated if keep is not None else bool(violated)

    path: list[str] = []
    current = schedule
    while current.key not in memo:
        path.append(current.key)
        order = sorted(current.elements, key=lambda e: e.key in own)
        smaller = next((current.without(e) for e in order if shows(current.without(e))), None)
        if smaller is not None:
            current = smaller
            continue
        shorter = _shorter_delay(current, shows)
        if shorter is None:
            memo[current.key] = current
            break
        current = shorter
    minimal = memo[current.key]
    if len(memo) > 50_000:  # bounded; dropping entries changes only the time shrinking takes
        memo.clear()
    for key in path:
        memo[key] = minimal
    return minimal


def _shorter_delay(schedule: Schedule, shows: Callable[[Schedule], bool]) -> Schedule | None:
    for e in schedule.elements:
        data = element_dict(e)
        delay = data.get("delay_s")
        if e.kind != "fault" or not isinstance(delay, float) or delay <= 1.0:
            continue
        halved = schedule.replacing(e, element("fault", data | {"delay_s": max(1.0, round(delay / 2, 3))}))
        if shows(halved):
            return halved
    return None


def shape(schedule: Schedule) -> str:
    """A schedule without its delays' lengths: findings that differ only in how long a delay is are one."""
    return "|".join(",".join(p for p in e.key.split(",") if not p.startswith("delay_s=")) for e in schedule.elements)


def explore_job(job: ExploreJob, on_case: Callable[[int], None] | None = None) -> JobResult:
    """Explore one shard of one template for every policy; return counts and findings.

    ``on_case(position)`` is called before each case the job simulates and ``on_case(-1)`` after it (see
    ``harness.run.pool``); the cases ``job.failed`` names are not run again."""
    policies = [(spec, load_policy(spec)) for spec in job.policy_specs]
    ((case_spec, template),) = scenario_cases(job.scenario_spec)  # one case: the planner expands variants
    cases = _Cases(job.failed, on_case)
    seen, unfired = observe(template, [p for _, p in policies], job.seeds, cases)
    # Counted over the runs that finished: a policy stopped here ran none of the rest (the summary says so).
    out = JobResult(
        scenario=template.name, shard=job.shard, shards=job.shards, unfired=unfired if job.shard == 0 else []
    )
    added = frozenset(e.key for e in singles(template, seen))
    judge = _Judge(template, cases, skip_unreached=job.skip_unreached, singles=added)
    found: dict[tuple[str, str, str | None], Finding] = {}
    own = frozenset(e.key for e in elements_of(template))
    # Per policy, seed and the property shrinking keeps (None: any violation), every schedule met to its minimal one.
    memos: dict[tuple[str, int, str | None], dict[str, Schedule]] = {}
    for index, schedule in enumerate(schedules(template, seen, job.depth, job.swarm)):
        if len(cases.stopped) == len(policies):
            break  # every policy stopped: nothing left to explore in this job
        if index % job.shards != job.shard:
            continue
        out.schedules += 1
        boundaries = [element_dict(e)["boundary"] for e in schedule.elements if e.kind == "fault"]
        for spec, policy in policies:
            for seed in job.seeds:
                if policy.name in cases.stopped:
                    break
                _, violated, coverage = judge(policy, schedule, seed)
                if policy.name in cases.stopped:
                    break
                out.cases[policy.name] += 1
                # A case counts once per boundary, however many of the schedule's faults are at it.
                at: dict[str, tuple[bool, bool]] = {}
                for boundary, (reached, fired) in zip(boundaries, coverage, strict=False):
                    before = at.get(boundary, (False, False))
                    at[boundary] = (before[0] or reached > 0, before[1] or fired > 0)
                sites = out.coverage.setdefault(policy.name, {})
                for boundary, (reached_here, fired_here) in at.items():
                    site = sites.setdefault(boundary, [0, 0])
                    site[0] += reached_here
                    site[1] += fired_here
                if not violated:
                    continue
                out.violating[policy.name] += 1
                counts = out.violations.setdefault(policy.name, Counter())
                counts.update(violated)
                # Shrunk for any violation; then, for each property it violates that its minimal schedule no
                # longer does, for that property: every property a summary counts has a finding that shows it.
                # Which schedules are shrunk, and how, depends on the schedule alone (not on what this job found
                # before it), so the findings are the same however the schedules are split among processes.
                kept: tuple[str, ...] = ()
                for keep in (None, *violated):
                    if keep is not None and keep in kept:
                        continue
                    memo = memos.setdefault((policy.name, seed, keep), {})
                    minimal = shrink(judge, policy, schedule, seed, own, memo, keep)
                    if policy.name in cases.stopped:
                        break  # a case failed while shrinking: what shrinking reached is not minimal
                    final_outcome, final_violated, _ = judge(policy, minimal, seed)
                    if keep is None:
                        kept = final_violated
                    # Its first copy for each property kept (None: any violation): which to write is chosen
                    # over every part of the exploration (``needed_findings``), from the same copies however
                    # the schedules were split.
                    copy = (policy.name, shape(minimal), keep)
                    if copy in found:
                        continue
                    found[copy] = Finding(
                        policy=policy.name,
                        policy_spec=spec,
                        policy_revision=policy.revision,
                        scenario=template.name,
                        scenario_spec=case_spec,
                        properties=final_violated,
                        outcome=final_outcome,
                        seed=seed,
                        schedule=minimal,
                        first_seen=index,
                        kept=keep,
                    )
    out.findings = sorted(found.values(), key=lambda f: (f.policy, f.first_seen))
    out.errors = judge.errors[:20]
    out.simulated = judge.simulated
    out.stuck = [
        Finding(
            policy=policy.name,
            policy_spec=spec,
            policy_revision=policy.revision,
            scenario=template.name,
            scenario_spec=case_spec,
            properties=(),
            outcome="harness_error",
            seed=seed,
            schedule=Schedule.of(elements_of(template)) if schedule is None else schedule,
            first_seen=-1,
            error=reason,
        )
        for spec, policy in policies
        if policy.name in cases.stopped
        for seed, schedule, reason in [cases.stopped[policy.name]]
    ]
    return out
