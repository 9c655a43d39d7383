"""Running the gate: ``check_policy`` (behind ``harness check``), ``assert_recovers`` (for users' own tests), and
the gate's view of a grid that ``harness run`` already ran (for ``harness run --junit``).

Nothing here simulates or judges by itself: cases run through ``harness.run`` (``run_grid`` or ``run_case``)
and explored schedules through ``harness.explore``; this module only says which cases pass and writes a repro
file for each that does not.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from harness.errors import InputError, NotWritten, RunFailed, no_room, one_line
from harness.explore import ExploreOptions, ExploreSummary, explore
from harness.explore.search import JobResult
from harness.gate.cases import GateCase, PolicyDoesNotRecover, _importable, case_name, judge, judge_finding
from harness.gate.junit import Suite
from harness.gate.repro import ReproFolder
from harness.limits import DEFAULT_CASE_TIMEOUT_S
from harness.model import PASSING, CaseReport
from harness.policy import Policy, builtin_policy_names, load_policy
from harness.run import CellJob, CellResult, GridOptions, GridSummary, load_grid, plan_cells, run_case, run_grid
from harness.run.files import iter_reports
from harness.run.grid import Progress
from harness.run.plan import Case, UsageError, absolute
from harness.scenario import list_scenarios
from harness.seeds import DEFAULT_SEEDS, SEED_MAX
from harness.version import __version__

__all__ = [
    "Brief",
    "CheckOptions",
    "CheckSummary",
    "against_baseline",
    "assert_recovers",
    "check_policy",
    "completion_note",
    "coverage_notes",
    "grid_suites",
    "judge_reports",
]


@dataclass(frozen=True, slots=True)
class Brief:
    """What the gate keeps of a case once it is judged: what its notes and a baseline's comparison read, not
    the case's evidence (a report is about 33 KB in memory, and a check may run a million cases)."""

    policy: str
    policy_revision: str
    scenario: str
    scenario_revision: str
    seed: int
    outcome: str
    task_completed: bool | None
    #: The most times one action was escalated to its owner.
    escalations_most: int

    @classmethod
    def of(cls, report: CaseReport) -> Brief:
        counts = Counter(str(e.data.get("action_id")) for e in report.timeline if e.event == "escalated")
        completed = report.metrics.get("task_completed")
        return cls(
            sys.intern(report.policy),
            sys.intern(report.policy_revision),
            sys.intern(report.scenario),
            sys.intern(report.scenario_revision),
            report.seed,
            sys.intern(report.outcome),
            completed if isinstance(completed, bool) else None,
            max(counts.values(), default=0),
        )


@dataclass(frozen=True, slots=True)
class CheckOptions:
    #: Scenario names or files; empty: every shipped scenario.
    scenarios: tuple[str, ...] = ()
    seeds: tuple[int, ...] = DEFAULT_SEEDS
    #: Also explore each scenario's schedules (``harness explore`` at its default depth and swarm).
    explore: bool = False
    #: The folder for the cases, repro files and explorations (new or empty); None: a new temporary folder.
    out: Path | None = None
    concurrency: int = 1
    #: Wall-clock budget of one case (``--case-timeout``); ``None``: none. A case over it is a harness error.
    case_timeout_s: float | None = DEFAULT_CASE_TIMEOUT_S
    #: A reference policy (``--baseline``): a case that passes yet leaves the task incomplete where this policy,
    #: run on the same scenario and seed, completes it fails as ``incomplete``. ``None``: safety alone is gated.
    baseline: str | None = None
    #: Stop once this many cases failed (``--maxfail``): the cases not yet run are left out, and so are the
    #: baseline and the exploration. ``None``: every case runs.
    maxfail: int | None = None


class _Enough(Exception):
    """A check stopped early: ``maxfail`` cases failed (the pieces then running are stopped with it)."""


class _CountFailures:
    """The progress of a check's cases, counting those that failed (each piece's tally) until ``maxfail``."""

    def __init__(self, maxfail: int, then: Callable[[Progress, CellJob, CellResult], None] | None) -> None:
        self.maxfail, self.then, self.failed = maxfail, then, 0

    def __call__(self, progress: Progress, job: CellJob, result: CellResult) -> None:
        if self.then is not None:
            self.then(progress, job, result)
        self.failed += sum(n for c in result.counts.values() for o, n in c.items() if o not in PASSING)
        if self.failed >= self.maxfail:
            raise _Enough


@dataclass(frozen=True, slots=True)
class CheckSummary:
    policy: str
    policy_revision: str
    #: The cases, repro files and explorations; None when nothing was kept (every case passed, no ``out`` given).
    out: Path | None
    #: One per scenario x seed of the shipped (or given) schedules.
    cases: tuple[GateCase, ...]
    #: With ``explore``: one per finding, one per seed of an explored scenario with no violation and no harness
    #: error, and one for the harness's errors on some schedules, if any.
    explored: tuple[GateCase, ...] = ()
    #: Notes, one line each, that do not fail the gate (a declared fault this policy never reached).
    notes: tuple[str, ...] = ()
    elapsed_s: float = 0.0
    explore_elapsed_s: float = 0.0
    #: Schedules explored over every scenario (each run at every seed).
    schedules: int = 0
    seeds: tuple[int, ...] = DEFAULT_SEEDS
    #: The cases planned and not run (``--maxfail`` stopped the check), by name, and why, for JUnit's skipped.
    not_run: tuple[str, ...] = ()
    not_run_why: str = ""

    @property
    def failures(self) -> tuple[GateCase, ...]:
        return tuple(c for c in (*self.cases, *self.explored) if not c.passed)

    @property
    def ok(self) -> bool:
        return not self.failures

    def suites(self) -> tuple[Suite, ...]:
        """The JUnit suites: the policy on the scenarios as written, then (with explore) on their schedules."""
        properties = (
            ("policy_revision", self.policy_revision),
            ("harness_version", __version__),
            ("seeds", " ".join(map(str, self.seeds))),
        )
        suites = [Suite(self.policy, self.cases, self.elapsed_s, properties, self.not_run, self.not_run_why)]
        if self.explored:
            explored = (*properties, ("schedules_explored", str(self.schedules)))
            suites.append(Suite(f"{self.policy} explored", self.explored, self.explore_elapsed_s, explored))
        return tuple(suites)


def check_policy(
    policy_spec: str,
    options: CheckOptions,
    progress: Callable[[int, int, JobResult], None] | None = None,
    cases_progress: Callable[[Progress, CellJob, CellResult], None] | None = None,
) -> CheckSummary:
    """Run the policy over the scenarios (and, with ``explore``, their explored schedules) and judge every case.

    Raises ``InputError`` for bad input before anything is written. ``progress`` is called once per explored
    template, ``cases_progress`` once per piece of a cell run (as ``run_grid`` calls its ``progress``).
    """
    scenarios = list(options.scenarios) or list_scenarios()
    _checked_seeds(options.seeds, "check_policy: field 'seeds' of CheckOptions")
    grid = load_grid([policy_spec], scenarios, options.seeds)  # every input checked before anything is written
    if options.baseline is not None:
        try:
            theirs = load_grid([options.baseline], scenarios, options.seeds[:1])
        except InputError as exc:
            raise UsageError(f"--baseline: {exc}") from None
        _distinct(policy_spec, grid.policies[0], options.baseline, theirs.policies[0], "--baseline", "--policy")
    policy = grid.cases[0].policy if grid.cases else None
    if policy is None:
        raise UsageError("no case to run; fix: give at least one --scenario and one seed")
    out = options.out if options.out is not None else Path(tempfile.mkdtemp(prefix="harness-check-"))
    try:
        return _checked(policy_spec, policy, grid.cases, scenarios, out, options, progress, cases_progress)
    except (NotWritten, OSError) as exc:  # its cases', its exploration's or its repro files: as when interrupted
        if isinstance(exc, OSError) and not no_room(exc):
            raise
        reason = exc.reason if isinstance(exc, NotWritten) else exc.strerror or str(exc)
        raise RunFailed(
            f"cannot write the check's files in {out} ({reason}); fix: make room or give a writable folder, "
            f"then {_again(out, options.out)}"
        ) from None
    except KeyboardInterrupt:
        # Not ``run --resume``: that would finish its cases as a plain run, without the gate's verdict, repro
        # files or JUnit report.
        raise KeyboardInterrupt(f"interrupted; a check is not resumable: {_again(out, options.out)}") from None


def _again(out: Path, given: Path | None) -> str:
    """What to do about a check that stopped before its end (it cannot be resumed): its temporary folder goes;
    a folder the user named keeps what was written, so the same ``--out`` would be refused."""
    if given is None:
        shutil.rmtree(out, ignore_errors=True)
        return "run the same command again"
    return f"run the same command again with a new --out ({out} holds what it wrote)"


def _checked(
    policy_spec: str,
    policy: Policy,
    cases_run: Sequence[Case],
    scenarios: list[str],
    out: Path,
    options: CheckOptions,
    progress: Callable[[int, int, JobResult], None] | None,
    cases_progress: Callable[[Progress, CellJob, CellResult], None] | None = None,
) -> CheckSummary:
    plan = plan_cells([policy_spec], scenarios, options.seeds, None, options.concurrency)
    started = time.perf_counter()
    grid_options = GridOptions(
        out=out, tracking="none", report=False, case_timeout_s=options.case_timeout_s, check=True
    )
    counting = _CountFailures(options.maxfail, cases_progress) if options.maxfail is not None else None
    summary: GridSummary | None = None
    with contextlib.suppress(_Enough):  # stopped early: what ran is on disk, judged as any check's cases
        summary = run_grid(plan, grid_options, counting or cases_progress)
    briefs: dict[tuple[str, str, int], Brief] = {}
    cases = judge_reports(iter_reports(out), cases_run, ReproFolder(out / "repro"), briefs)
    if summary is None:
        return _stopped_early(policy, cases, cases_run, out, options, time.perf_counter() - started)
    notes = coverage_notes(summary, policy.name)
    if options.baseline is not None:
        cases, said = _against_baseline(
            policy_spec, options.baseline, cases, briefs, scenarios, cases_run, out, options
        )
        notes.append(said)
    elapsed_s = time.perf_counter() - started
    raised = [c for c in cases if c.raised]
    if raised:
        # Passing (the evidence settled or escalated the case) yet the policy raised: said, not failed.
        notes.append(
            f"note: {policy.name} raised in {len(raised)} of its passing {'case' if len(cases) == 1 else 'cases'} "
            f"(each passed on the evidence: its actions accounted for or escalated in time): {raised[0].name}: "
            f"{raised[0].raised}"
        )
    repeated = _escalated_again(briefs)
    if repeated:
        notes.append(repeated)
    explored: tuple[GateCase, ...] = ()
    explore_elapsed_s, schedules = 0.0, 0
    if options.explore:
        started = time.perf_counter()
        options_explore = ExploreOptions(
            out=out / "explore",
            seeds=options.seeds,
            concurrency=options.concurrency,
            tracking="none",
            case_timeout_s=options.case_timeout_s,
        )
        found = explore([policy_spec], scenarios, options_explore, progress)
        explored = judge_exploration(found, options.seeds)
        explore_elapsed_s, schedules = time.perf_counter() - started, found.schedules
        notes += [
            # Exploration judges a template as written (its own schedules may well fire it): said so, lest a
            # finding that shows it firing seem to contradict the note.
            f"note: scenario {u.scenario} declares {u.what}, which fired in no case of {policy.name} on the "
            "scenario as written (exploration's schedules may change when it fires)"
            for u in found.unfired
            # Where the policy's exploration stopped on a harness error its runs are not all there: nothing to
            # note (the cases' own notes leave out a scenario none of whose cases finished, likewise).
            if u.scenario not in found.stopped_in
        ]
    failing = any(not c.passed for c in (*cases, *explored))
    if options.out is None and not failing:  # a temporary folder nothing refers to: leave nothing behind
        shutil.rmtree(out, ignore_errors=True)
    return CheckSummary(
        policy=policy.name,
        policy_revision=policy.revision,
        out=out if options.out is not None or failing else None,
        cases=cases,
        explored=explored,
        notes=tuple(dict.fromkeys(notes)),
        elapsed_s=round(elapsed_s, 3),
        explore_elapsed_s=round(explore_elapsed_s, 3),
        schedules=schedules,
        seeds=tuple(options.seeds),
    )


def _stopped_early(
    policy: Policy,
    cases: tuple[GateCase, ...],
    planned: Sequence[Case],
    out: Path,
    options: CheckOptions,
    elapsed_s: float,
) -> CheckSummary:
    """A check ``--maxfail`` stopped: the cases that ran, judged, and a note of what was left out (the cases not
    run are named, for the JUnit file's ``skipped``)."""
    failed = sum(not c.passed for c in cases)
    left = [what for what, asked in (("the baseline", options.baseline), ("the exploration", options.explore)) if asked]
    stopped = f"stopped after {failed} failing {'case' if failed == 1 else 'cases'} (--maxfail {options.maxfail})"
    note = f"note: {stopped}: {len(planned) - len(cases):,} of {len(planned):,} cases not run" + (
        f", nor {' and '.join(left)}" if left else ""
    )
    ran = {c.name for c in cases}
    not_run = tuple(name for c in planned if (name := case_name(c.scenario.name, c.seed)) not in ran)
    return CheckSummary(
        policy=policy.name,
        policy_revision=policy.revision,
        out=out,
        cases=cases,
        notes=(note,),
        elapsed_s=round(elapsed_s, 3),
        seeds=tuple(options.seeds),
        not_run=not_run,
        not_run_why=f"not run: the check {stopped}",
    )


def _escalated_again(reports: Mapping[tuple[str, str, int], Brief]) -> str | None:
    """A note of the cases where one action was escalated to its owner more than once (a policy that goes on after
    handing the action over pages its owner again and again): not unsafe, so not a failure, but said; ``None``
    when none was."""
    again = [(r.escalations_most, r) for r in reports.values() if r.escalations_most > 1]
    if not again:
        return None
    most, worst = max(again, key=lambda m: (m[0], -m[1].seed))
    return (
        f"note: {worst.policy} escalated one action more than once in {len(again)} of {len(reports)} cases (not "
        f"a failure: each escalation stands), {most} times at most ({case_name(worst.scenario, worst.seed)}); "
        "once handed over, an action is its owner's"
    )


def _distinct(policy_spec: str, name: str, baseline_spec: str, baseline_name: str, option: str, of: str) -> None:
    """``UsageError`` for a baseline named as the policy it gates is but loaded from elsewhere: their cases would be
    taken for one policy's, and the command that runs both is refused (a fork that kept the shipped name, say)."""
    if name == baseline_name and policy_spec != baseline_spec:
        raise UsageError(
            f"{option} {baseline_spec}: its name '{name}' is that of {of} {policy_spec}, and the cases of both would "
            "be taken for one policy's; fix: give one of them another name"
        )


def _against_baseline(
    policy_spec: str,
    baseline_spec: str,
    cases: tuple[GateCase, ...],
    reports: Mapping[tuple[str, str, int], Brief],
    scenarios: list[str],
    cases_run: Sequence[Case],
    out: Path,
    options: CheckOptions,
) -> tuple[tuple[GateCase, ...], str]:
    """The cases, each that passed yet left the task incomplete where the baseline run on the same scenario and
    seed completed it failed as ``incomplete`` (``against_baseline``); and a note of how often each completed it.
    Safe is not done: a policy that records every absence and never retries passes every property."""
    plan = plan_cells([baseline_spec], scenarios, options.seeds, None, options.concurrency)
    grid_options = GridOptions(
        out=out / "baseline", tracking="none", report=False, case_timeout_s=options.case_timeout_s, check=True
    )
    theirs = {(r.policy, r.scenario, r.seed): Brief.of(r) for r in iter_reports(run_grid(plan, grid_options).out)}
    done_by = {(scenario, seed): r for (_, scenario, seed), r in theirs.items()}
    mine = {case_name(scenario, seed): r for (_, scenario, seed), r in reports.items()}  # one policy's cases
    # Each case's scenario as given (a file by its absolute path), so that the command that runs both finds it.
    specs = {c.scenario.name: absolute(c.scenario_spec) for c in cases_run}
    out_cases = []
    for case in cases:
        report = mine.get(case.name)
        reference = done_by.get((report.scenario, report.seed)) if report is not None else None
        spec = specs.get(report.scenario) if report is not None else None
        out_cases.append(against_baseline(case, report, reference, policy_spec, baseline_spec, spec))
    baseline = next(iter(theirs.values())).policy if theirs else baseline_spec
    said = completion_note(reports.values(), theirs.values(), baseline)
    if options.out is not None:
        said += f"; its cases are in {out / 'baseline'}"
    return tuple(out_cases), said


def against_baseline(
    case: GateCase,
    report: Brief | None,
    reference: Brief | None,
    policy_spec: str,
    baseline_spec: str,
    scenario_spec: str | None = None,
) -> GateCase:
    """The gate's verdict on a case once the baseline ran on the same scenario and seed (``reference``): a case
    that passed yet left the task incomplete where the baseline completed it, safely (correct or escalated), fails
    as ``incomplete``; any other stays as it was. A failing case keeps its own failure, a case either run lacks is
    not compared, and neither is a task the baseline completed unsafely (applying the effect twice, say): safe is
    not done, but done unsafely is no standard to fail a safe policy by."""
    if (
        case.passed
        and report is not None
        and reference is not None
        and report.task_completed is False
        and reference.task_completed is True
        and reference.outcome in PASSING
    ):
        return _incomplete(case, report, reference, policy_spec, baseline_spec, scenario_spec or report.scenario)
    return case


def completion_note(mine: Iterable[Brief], theirs: Iterable[Brief], baseline: str) -> str:
    """How often the task ended completed, for the policy and for its baseline on the same cases; and, when the
    baseline itself was not correct or escalated in some, how many (its safety is not gated: a comparison with an
    unsafe baseline is said to be one)."""
    mine, theirs = list(mine), list(theirs)
    completed = sum(r.task_completed is True for r in mine)
    reference_completed = sum(r.task_completed is True for r in theirs)
    said = (
        f"note: the task ended completed in {completed} of {len(mine)} cases, {reference_completed} of "
        f"{len(theirs)} with the baseline {baseline}"
    )
    unsafe = [r for r in theirs if r.outcome not in PASSING]
    if unsafe:
        first = min(unsafe, key=lambda r: (r.scenario, r.seed))
        said += (
            f" (the baseline itself is not correct or escalated in {len(unsafe)} of them, "
            f"{case_name(first.scenario, first.seed)} first: {first.outcome})"
        )
    return said


def _incomplete(
    case: GateCase, report: Brief, reference: Brief, policy_spec: str, baseline_spec: str, scenario_spec: str
) -> GateCase:
    """A passing case whose task the policy left incomplete and the baseline completed: a failure, reproduced by
    running both on the case (there is no property to replay to)."""
    command = (
        f"python -m harness run --policy {shlex.quote(policy_spec)} --policy {shlex.quote(baseline_spec)} "
        f"--scenario {shlex.quote(scenario_spec)} --seed {report.seed}"
    )
    reproduce = _importable(command, policy_spec, baseline_spec)
    text = "\n".join(
        [
            f"{report.policy} (revision {report.policy_revision}) on {report.scenario} (revision "
            f"{report.scenario_revision}) at seed {report.seed}: {report.outcome}, task_completed false",
            f"{reference.policy} (revision {reference.policy_revision}), the baseline, on the same case: "
            f"{reference.outcome}, task_completed true",
            f"reproduce: {reproduce}",
        ]
    )
    return replace(
        case,
        outcome="incomplete",
        status="failed",
        message=f"incomplete: {report.outcome}, but the task was left incomplete where {reference.policy} completed it",
        text=text,
        reproduce=reproduce,
    )


#: More declared faults and events that fired in no case than this are said in one note, a line each: a safe policy
#: over every shipped scenario never meets over a dozen (the second request a scenario delays, which it never sends).
NOTED_APART_MAX = 3


def coverage_notes(summary: GridSummary, policy: str) -> list[str]:
    """One note per declared fault that fired in no case of ``policy`` that finished, or, beyond
    ``NOTED_APART_MAX`` of them, one note that lists them a line each. A case that ended in ``harness_error`` has
    unknown coverage (its worker may have died after the fault fired): a fault of a scenario whose every case did
    is not noted, and one of a scenario where some did is noted over the others only, in a note of its own."""
    notes, unmet, partly = [], [], []
    for c in summary.unfired:
        finished, failed = summary.finished(c.scenario)
        if not finished:
            continue
        if not failed:
            unmet.append(c)
            notes.append(
                f"note: scenario {c.scenario} declares {c.what}, which fired in no case of {policy} "
                f"({c.reached_in}): that scenario tested nothing of this {c.noun} for this policy"
            )
            continue
        note = (
            f"note: scenario {c.scenario} declares {c.what}, which fired in none of the {finished} cases of "
            f"{policy} that finished ({c.reach} in {c.reached} of them); not counted: {failed} that ended "
            "in harness_error, whose coverage is unknown"
        )
        notes.append(note)
        partly.append(note)
    if len(unmet) <= NOTED_APART_MAX:
        return notes
    faults = sum(c.kind == "fault" for c in unmet)
    counted = [
        f"{n} {noun}{'' if n == 1 else 's'}"
        for n, noun in ((faults, "declared fault"), (len(unmet) - faults, "declared operator event"))
        if n
    ]
    lines = [
        f"note: {' and '.join(counted)} fired in no case of {policy}, so their scenarios tested nothing of them "
        "for this policy (a policy that never does what one waits for, a second request or a read, never meets it):",
        *(f"  {c.scenario}: {c.what} ({c.reached_in})" for c in unmet),
    ]
    return ["\n".join(lines), *partly]


def judge_reports(
    reports: Iterable[CaseReport],
    cases: Sequence[Case],
    repros: ReproFolder,
    briefs: dict[tuple[str, str, int], Brief] | None = None,
) -> tuple[GateCase, ...]:
    """The gate's verdict on each case, in the grid's order; ``reports`` are the cases a run wrote, read one at a
    time and let go once judged (a repro file is written from the case's own scenario). ``briefs``, when given,
    gets a ``Brief`` of every report read, by (policy, scenario, seed)."""
    wanted = {(c.policy.name, c.scenario.name, c.seed): c for c in cases}
    judged: dict[tuple[str, str, int], GateCase] = {}
    for report in reports:
        key = (report.policy, report.scenario, report.seed)
        if briefs is not None:
            briefs[key] = Brief.of(report)
        case = wanted.get(key)
        if case is not None:
            judged[key] = judge(report, case, repros)
    return tuple(judged[key] for key in wanted if key in judged)


def judge_exploration(summary: ExploreSummary, seeds: Sequence[int]) -> tuple[GateCase, ...]:
    """One failing case per finding; one passing case per seed of each scenario whose exploration found no
    violation at all and failed on no schedule (a seed without a finding of its own proves nothing when another
    seed's finding stands for the same schedules, nor does a scenario the harness failed on); and one error
    case holding the harness's failures on some schedules, if there were any."""
    out: list[GateCase] = []
    for exploration in summary.explorations:
        clean = not exploration.findings and not exploration.violating and not exploration.errors
        for seed in seeds:
            if clean:
                out.append(
                    GateCase(
                        exploration.policy,
                        case_name(f"explored {exploration.scenario_name}", seed),
                        "no_violation",
                        "passed",
                    )
                )
            out += [judge_finding(f, path) for f, path in exploration.findings if f.seed == seed]
    if summary.errors:
        policy = summary.explorations[0].policy if summary.explorations else "?"
        out.append(
            GateCase(
                policy,
                "explored schedules: harness errors",
                "harness_error",
                "error",
                message=f"harness_error: the harness failed on {len(summary.errors)} explored "
                f"{'schedule' if len(summary.errors) == 1 else 'schedules'}",
                text="\n".join(summary.errors),
                # A case over its budget or whose worker died can be run again; a crash names its schedule instead.
                reproduce=summary.reproduce[0] if summary.reproduce else None,
            )
        )
    return tuple(out)


def grid_suites(
    cell_specs: Sequence[tuple[str, str]],
    seeds: Sequence[int],
    reports: Iterable[CaseReport],
    repros: ReproFolder,
) -> tuple[Suite, ...]:
    """The gate's view of a grid ``harness run`` ran: one suite per policy (in the grid's order), one test case
    per scenario x seed. ``cell_specs`` are the (policy, scenario) specs of its cells."""
    grid = load_grid(
        list(dict.fromkeys(p for p, _ in cell_specs)), list(dict.fromkeys(s for _, s in cell_specs)), seeds
    )
    judged = judge_reports(reports, grid.cases, repros)
    by_policy: dict[str, list[GateCase]] = {}
    for case in judged:
        by_policy.setdefault(case.policy, []).append(case)
    revisions = {c.policy.name: c.policy.revision for c in grid.cases}
    return tuple(
        Suite(name, tuple(cases), None, (("policy_revision", revisions[name]), ("harness_version", __version__)))
        for name, cases in by_policy.items()
    )


def _spec_of(policy: Policy) -> str:
    """A spec that loads this very object again, so a repro file can name it: a shipped policy's name, else
    ``package.module:attr`` of a module-level attribute (its class's module first, then any module loaded)."""
    for name in builtin_policy_names():
        if load_policy(name) is policy:
            return name
    # A class's home is its own module (its type's is builtins): the spec then names where it was written.
    home = policy.__module__ if isinstance(policy, type) else type(policy).__module__
    modules = [home, *sorted(m for m in list(sys.modules) if m != home)]
    for module_name in modules:
        module = sys.modules.get(module_name)
        if module is None or module_name == "__main__":
            continue
        for attr, value in list(getattr(module, "__dict__", {}).items()):
            if value is policy:
                return f"{module_name}:{attr}"
    raise InputError(
        f"policy '{getattr(policy, 'name', policy)}': not a module-level attribute of any module, so a failure could "
        "not be reproduced from a file; fix: define it at module level, or pass 'package.module:attr'"
    )


def assert_recovers(
    policy: str | Policy,
    scenarios: Sequence[str] | None = None,
    seeds: Sequence[int] = DEFAULT_SEEDS,
    out: str | os.PathLike[str] | None = None,
    baseline: str | Policy | None = None,
) -> tuple[GateCase, ...]:
    """Run ``policy`` over ``scenarios`` (default: every shipped one) at ``seeds``, in this process, and raise
    ``PolicyDoesNotRecover`` (an ``AssertionError``) unless every case is correct or escalated.

    ``policy`` is a shipped name, ``package.module:attr``, or a policy object defined at module level (the
    module is found, so that a repro file can load it again). Each failing case gets a repro file in ``out``
    (a folder, as a path or text; default: a new temporary folder) and its reproduce command in the message.
    With a ``baseline`` (given as ``policy`` is), it runs on the same cases too, and a case that passes yet
    leaves the task incomplete where the baseline completes it fails as ``incomplete`` (as ``harness check
    --baseline``). Returns every case's verdict when all pass. Raises ``InputError`` (a ``ValueError``) for an
    unknown policy or scenario, for ``seeds`` that are none (nothing would be shown) or not seeds as ``--seed``
    takes them (whole numbers 0..2**63-1), and for an ``out`` that is no folder's path.
    """
    checked = _checked_seeds(seeds, "assert_recovers: argument 'seeds'")
    folder = _checked_out(out, "assert_recovers: argument 'out'")
    spec = policy if isinstance(policy, str) else _spec_of(policy)
    chosen = [scenarios] if isinstance(scenarios, str) else list(scenarios or list_scenarios())
    # A scenario file's path made absolute, as the command line makes it: the failure's commands run anywhere.
    grid = load_grid([spec], [absolute(s) for s in chosen], checked)
    references: dict[tuple[str, int], Brief] = {}
    baseline_spec = None
    if baseline is not None:
        baseline_spec = baseline if isinstance(baseline, str) else _spec_of(baseline)
        try:
            theirs = load_grid([baseline_spec], [absolute(s) for s in chosen], checked)
        except InputError as exc:
            raise InputError(f"assert_recovers: argument 'baseline': {exc}") from None
        where = "assert_recovers: argument 'baseline'"
        _distinct(spec, grid.policies[0], baseline_spec, theirs.policies[0], where, "the policy")
        references = {(c.scenario.name, c.seed): Brief.of(run_case(c)[0]) for c in theirs.cases}
    repros = ReproFolder(folder.absolute() if folder else None, prefix="harness-recovers-")  # its commands run anywhere
    verdicts = []
    for case in grid.cases:
        report = run_case(case)[0]
        verdict = judge(report, case, repros)
        if baseline_spec is not None:
            reference = references.get((case.scenario.name, case.seed))
            verdict = against_baseline(verdict, Brief.of(report), reference, spec, baseline_spec, case.scenario_spec)
        verdicts.append(verdict)
    failures = [v for v in verdicts if not v.passed]
    if failures:
        raise PolicyDoesNotRecover(grid.policies[0], failures, len(verdicts))
    return tuple(verdicts)


def _checked_out(out: object, where: str) -> Path | None:
    """``out`` as a folder's path (None: a temporary folder); ``InputError`` naming ``where`` when it is neither a
    path nor text, is empty, or is a file. The folder may hold earlier repro files: a test suite reruns."""
    if out is None:
        return None
    if not isinstance(out, str | os.PathLike) or not os.fspath(out):
        raise InputError(f"{where}: {_shown(out)} is not a folder's path; fix: give a path, as out=tmp_path / 'repro'")
    folder = Path(out)
    if folder.exists() and not folder.is_dir():
        raise InputError(f"{where}: {folder} is a file; fix: give a folder")
    return folder


def _checked_seeds(seeds: object, where: str) -> list[int]:
    """``seeds`` (one seed, or any collection of them) as a list, each a whole number in 0..SEED_MAX as ``--seed``
    takes it; ``InputError`` naming ``where`` when there is none or one is not a seed."""
    fix = "fix: give whole numbers such as seeds=[1, 2, 3]"
    if isinstance(seeds, str | bytes) or not isinstance(seeds, int | Iterable):
        raise InputError(f"{where}: {_shown(seeds)} is not a collection of seeds; {fix}")
    given: list[object] = [seeds] if isinstance(seeds, int) else list(seeds)
    if not given:
        raise InputError(f"{where}: no seed given, so no case would run; {fix}")
    checked: list[int] = []
    for value in given:
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= SEED_MAX:
            raise InputError(
                f"{where}: {_shown(value)} is not a seed (a whole number in 0..{SEED_MAX}, as --seed takes); {fix}"
            )
        checked.append(value)
    return checked


def _shown(value: object) -> str:
    """A value as a message names it: its repr, on one line and cut short."""
    return one_line(repr(value), 60)
