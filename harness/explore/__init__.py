"""``harness explore``: find what no one wrote down.

From each scenario used as a template, exploration runs every single fault at every (boundary, occurrence)
the runs reach, every operator event inserted after each kind of history entry, every other value of each
field of the destination's contract, every combination of those up to a depth, and swarm schedules that each
enable a random subset of kinds. Every policy meets the same schedules. Each distinct violation is shrunk to a
1-minimal schedule and written as a runnable scenario file; ``explore.json`` sums it up.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import yaml

from harness.errors import NotWritten, no_room
from harness.explore.parts import PARTS, REQUEST, ExploreRequest, finished_parts, keep_part
from harness.explore.schedule import apply, element_dict
from harness.explore.search import ExploreJob, Finding, JobResult, explore_job, shape
from harness.limits import DEFAULT_CASE_TIMEOUT_S
from harness.model import needed_findings, part_findings
from harness.plx.tracking import (
    DEFAULT_PROJECT,
    ExplorationRecord,
    Tracked,
    TrackingMode,
    is_managed,
    track_exploration,
)
from harness.policy import import_root, load_policy, look_in
from harness.run.cell import FaultCoverage
from harness.run.files import write_atomic
from harness.run.folder import LOCK_FILE, Claim, changed_since, claim, fingerprints, stray_temporaries
from harness.run.grid import TrackingNote, check_project, new_out, tracking_note
from harness.run.plan import Grid, UsageError, absolute, budget_option, load_grid
from harness.run.pool import supervise
from harness.scenario import VARIANT, Scenario, scenario_cases
from harness.scenario.specs import derived_name, derived_revision

__all__ = [
    "Exploration",
    "ExploreOptions",
    "ExploreSummary",
    "explore",
    "explore_json",
    "finding_yaml",
    "resume_command",
    "resume_explore",
]


@dataclass(frozen=True, slots=True)
class ExploreOptions:
    out: Path | None = None
    depth: int = 2
    swarm: int = 20
    seeds: tuple[int, ...] = (1,)
    concurrency: int = 1
    #: Run only this shard of every template's schedules (a Polyaxon grid runs the shards apart).
    shard: int = 0
    shards: int = 1
    #: One Polyaxon run per (policy, scenario) explored: offline (default), pushed to a server too, or none.
    tracking: TrackingMode = "offline"
    project: str = DEFAULT_PROJECT
    #: Wall-clock budget of one case (``--case-timeout``); ``None``: none. A case over it, or one whose worker
    #: process dies, is a harness error, and its policy is explored no further in that job.
    case_timeout_s: float | None = DEFAULT_CASE_TIMEOUT_S
    #: Run the jobs in worker processes the exploration supervises. Off only for tests that patch in place.
    isolate: bool = True
    #: What ``harness explore`` exits with for a declared fault that fired in no case (kept for ``--resume``).
    unfired: Literal["fail", "note"] = "fail"
    #: Keep the request and each finished part in the folder, so that a stopped exploration can be resumed
    #: (``harness explore`` does; ``check --explore`` does not: a stopped check is run again).
    resumable: bool = False
    #: The processes a resume runs the missing parts in (its parts stay split for ``concurrency``); None: as many.
    processes: int | None = None


@dataclass(slots=True)
class Exploration:
    """One (policy, scenario) explored: counts over every case of the scenario, and the findings."""

    policy: str
    policy_spec: str
    policy_revision: str
    scenario_spec: str
    scenario_revision: str
    #: As the grid's cases name it: its one case's name, or a template of several cases by its own name.
    scenario_name: str = ""
    schedules: int = 0
    cases: int = 0
    #: Cases actually run (shrinking's included): the others were judged the same as a smaller schedule's
    #: run, which never reached what they add.
    simulated: int = 0
    violating: int = 0
    violations: Counter[str] = field(default_factory=Counter)
    #: Per fault boundary: (cases in which its site was reached, cases in which it fired).
    coverage: dict[str, list[int]] = field(default_factory=dict)
    #: (finding, the file it was written to)
    findings: list[tuple[Finding, Path]] = field(default_factory=list)
    #: Schedules the harness failed on (errors of the jobs that explored it, cases stopped over their budget):
    #: what they would have shown is unknown.
    errors: int = 0


@dataclass(slots=True)
class ExploreSummary:
    out: Path
    explorations: list[Exploration] = field(default_factory=list)
    coverage: dict[str, list[int]] = field(default_factory=dict)
    #: Every fault and operator event a template declares that fired in no case of the template as written
    unfired: list[FaultCoverage] = field(default_factory=list)
    #: Harness failures on some schedules (the first few of each job); exploration went on without them.
    errors: list[str] = field(default_factory=list)
    #: The command that re-runs each case over its budget or whose worker died (also in its line of ``errors``).
    reproduce: list[str] = field(default_factory=list)
    #: The templates (by name) in which such a case stopped a policy's exploration: a fault listed in ``unfired``
    #: there may have fired in the case that did not finish.
    stopped_in: set[str] = field(default_factory=set)
    tracking: TrackingNote = field(default_factory=lambda: TrackingNote(ok=True, message=None))
    polyaxon_runs: dict[str, str | None] = field(default_factory=dict)
    elapsed_s: float = 0.0

    @property
    def schedules(self) -> int:
        """Schedules run per policy (every policy meets the same ones)."""
        by_policy = Counter[str]()
        for e in self.explorations:
            by_policy[e.policy] += e.schedules
        return max(by_policy.values(), default=0)

    @property
    def cases(self) -> int:
        return sum(e.cases for e in self.explorations)

    @property
    def simulated(self) -> int:
        return sum(e.simulated for e in self.explorations)

    @property
    def violating(self) -> int:
        return sum(e.violating for e in self.explorations)

    @property
    def violations(self) -> Counter[str]:
        total = Counter[str]()
        for e in self.explorations:
            total.update(e.violations)
        return total

    @property
    def findings(self) -> list[tuple[Finding, Path]]:
        return [f for e in self.explorations for f in e.findings]


def _shown_name(cases: tuple[tuple[str, Scenario], ...]) -> str:
    """A scenario spec's cases as the grid names them: its one case's name; a template of several (each named
    ``<name>-<variant>``, its spec ``<spec>@<variant>``) by the template's own name."""
    (spec, first), *more = cases
    return first.name.removesuffix(f"-{spec.rpartition(VARIANT)[2]}") if more else first.name


def explore(
    policy_specs: Sequence[str],
    scenario_specs: Sequence[str],
    options: ExploreOptions,
    progress: Callable[[int, int, JobResult], None] | None = None,
) -> ExploreSummary:
    """Explore every scenario (every case of each) for every policy; write findings and ``explore.json``, and
    track each (policy, scenario) as a Polyaxon run.

    Raises ``InputError`` for bad input before anything is written.
    """
    grid = load_grid(policy_specs, scenario_specs, options.seeds)  # checks every policy and scenario first
    specs = list(dict.fromkeys(c.policy_spec for c in grid.cases))
    # A resumable exploration names a template given as a path by its absolute path (as a run's manifest does):
    # a resume from another folder reads the same file, and writes the same explore.json.
    scenario_specs = list(dict.fromkeys(absolute(s) if options.resumable else s for s in scenario_specs))
    if options.tracking != "none" and is_managed() and (len(specs) != 1 or len(scenario_specs) != 1):
        raise UsageError(
            "inside a Polyaxon job the harness logs into that job's one run, but "
            f"{len(specs)} policies x {len(scenario_specs)} scenarios were asked for; fix: pass one --policy and "
            "one --scenario (as polyaxonfiles/explore-component.yaml does)"
        )
    check_project(options.project)
    given = options.out is not None and options.out.is_dir()  # an empty folder the user made: it stays
    out = new_out(options.out)
    # Held until the exploration is written: a second exploration into the same folder is refused (both wrote
    # their files at the end, and the later explore.json listed only its own policies).
    hold = claim(out, fresh=True)
    if options.resumable:
        try:
            _request(specs, scenario_specs, options, grid).write(out)
        except BaseException as exc:  # nothing to resume from: the folder is left as it was found
            with contextlib.suppress(OSError):
                _discard(out, keep_folder=given)
            (out / LOCK_FILE).unlink(missing_ok=True)
            hold.release()
            if isinstance(exc, OSError) and no_room(exc):
                raise _not_written(out, exc, "then explore again") from None
            raise
    return _explore(out, hold, given, specs, scenario_specs, options, progress, resumed=False)


def resume_explore(
    out: Path,
    concurrency: int | None = None,
    progress: Callable[[int, int, JobResult], None] | None = None,
    isolate: bool = True,
    checked: Callable[[], None] | None = None,
) -> tuple[ExploreSummary, ExploreOptions]:
    """Complete an exploration that stopped short (interrupted, or its files could not be written): run only its
    parts that are missing, in ``concurrency`` processes (default: as it began; its parts stay as it split them),
    and write what it would have written; ``checked`` is called once it is known to be resumable, before any part
    runs. Raises ``UsageError`` when its request is missing or damaged, or a policy, a template or the harness
    changed since it began (its findings would mix two inputs)."""
    request = ExploreRequest.read(out)
    look_in(request.cwd)
    options = ExploreOptions(
        out=out,
        depth=request.depth,
        swarm=request.swarm,
        seeds=request.seeds,
        concurrency=request.concurrency,
        shard=request.shard,
        shards=request.shards,
        tracking=request.tracking,
        project=request.project,
        case_timeout_s=request.case_timeout_s,
        unfired=request.unfired,
        isolate=isolate,
        resumable=True,
        processes=concurrency,
    )
    grid = load_grid(request.policies, request.scenarios, options.seeds)
    changed = changed_since(grid, request.fingerprints)
    if changed is not None:
        raise UsageError(
            f"{changed}: changed since the exploration began in {out}, so its findings would mix two inputs; fix: "
            "explore anew with another --out (or restore what changed)"
        )
    hold = claim(out, fresh=False)
    if (out / "explore.json").is_file():  # completed by another resume while this one read the request
        hold.release()
        raise UsageError(f"nothing to resume: the exploration in {out} is complete (explore.json)")
    stray_temporaries(out)
    if checked is not None:
        checked()
    summary = _explore(
        out, hold, True, list(request.policies), list(request.scenarios), options, progress, resumed=True
    )
    return summary, options


def _request(
    specs: Sequence[str], scenario_specs: Sequence[str], options: ExploreOptions, grid: Grid
) -> ExploreRequest:
    return ExploreRequest(
        policies=tuple(specs),
        scenarios=tuple(scenario_specs),
        cwd=os.getcwd(),
        depth=options.depth,
        swarm=options.swarm,
        seeds=options.seeds,
        concurrency=max(1, options.concurrency),
        shard=options.shard,
        shards=options.shards,
        tracking=options.tracking,
        project=options.project,
        case_timeout_s=options.case_timeout_s,
        unfired=options.unfired,
        fingerprints=fingerprints(grid),
    )


def _explore(
    out: Path,
    hold: Claim,
    given: bool,
    specs: list[str],
    scenario_specs: list[str],
    options: ExploreOptions,
    progress: Callable[[int, int, JobResult], None] | None,
    resumed: bool,
) -> ExploreSummary:
    """Explore in ``out`` (held by ``hold``), resuming from the parts kept there when ``resumed``."""
    policies = {spec: load_policy(spec) for spec in specs}
    expanded = {spec: scenario_cases(spec) for spec in scenario_specs}
    templates = {case: scenario for cases in expanded.values() for case, scenario in cases}
    spec_of_case = {case: spec for spec, cases in expanded.items() for case, _ in cases}
    finished = False
    try:
        started = time.perf_counter()
        # Each process takes every `split`-th schedule of this shard's: schedule i is in shard I of N when i % N
        # is I, so in part k of this shard's `split` when i % (N * split) is I + k * N.
        split = max(1, options.concurrency)
        jobs = [
            ExploreJob(
                tuple(specs),
                case,
                options.depth,
                options.swarm,
                options.seeds,
                shard=options.shard + k * options.shards,
                shards=options.shards * split,
            )
            for case in templates
            for k in range(split)
        ]
        kept: dict[int, JobResult] = {}
        if resumed:
            kept = finished_parts(out, jobs)
            for leftover in ("findings", "errors", "polyaxon"):  # written only once every part had finished
                shutil.rmtree(out / leftover, ignore_errors=True)
        results = _run(jobs, options, progress, kept, out if options.resumable else None)
        summary = ExploreSummary(out)
        rows = {
            (p_spec, s_spec): Exploration(
                policy.name,
                p_spec,
                policy.revision,
                s_spec,
                expanded[s_spec][0][1].revision,
                _shown_name(expanded[s_spec]),
            )
            for s_spec in scenario_specs
            for p_spec, policy in policies.items()
        }
        by_name = {policy.name: spec for spec, policy in policies.items()}
        every: list[Finding] = []
        stuck: list[Finding] = []
        for job, result in zip(jobs, results, strict=True):
            s_spec = spec_of_case[job.scenario_spec]
            for p_spec, policy in policies.items():
                row = rows[(p_spec, s_spec)]
                row.schedules += result.schedules
                row.cases += result.cases[policy.name]
                row.simulated += result.simulated[policy.name]
                row.violating += result.violating[policy.name]
                row.violations.update(result.violations.get(policy.name, {}))
                row.errors += len(result.errors)
                _add_coverage(row.coverage, result.coverage.get(policy.name, {}))
                _add_coverage(summary.coverage, result.coverage.get(policy.name, {}))
            summary.unfired += result.unfired
            summary.errors += [f"{job.scenario_spec}: {e}" for e in result.errors]
            stuck += result.stuck
            every += result.findings
        numbered: Counter[tuple[str, str]] = Counter()
        for finding in _needed(every, part=options.shards > 1):
            numbered[(finding.policy, finding.scenario)] += 1
            n = numbered[(finding.policy, finding.scenario)]
            path = out / "findings" / finding.policy / f"{derived_name(finding.scenario, str(n))}.yaml"
            write_atomic(path, finding_yaml(templates[finding.scenario_spec], finding, n))
            rows[(by_name[finding.policy], spec_of_case[finding.scenario_spec])].findings.append((finding, path))
        for finding in stuck:
            rows[(by_name[finding.policy], spec_of_case[finding.scenario_spec])].errors += 1
        stopped = _write_stuck(out, stuck, templates, options)
        summary.stopped_in = {f.scenario for f in stuck}
        summary.errors[:0] = [line for line, _ in stopped]
        summary.reproduce = [command for _, command in stopped]
        summary.explorations = list(rows.values())
        summary.elapsed_s = round(time.perf_counter() - started, 3)
        if options.tracking != "none":
            tracked = [(e, _track(e, summary, options)) for e in summary.explorations]
            summary.polyaxon_runs = {f"{e.policy_spec} x {e.scenario_spec}": t.run_uuid for e, t in tracked}
            summary.tracking = tracking_note(options.tracking, options.project, out, [t for _, t in tracked])
        write_atomic(out / "explore.json", explore_json(summary, options, specs, list(templates)))
        finished = True
        if options.resumable:  # complete: nothing is left to resume from
            shutil.rmtree(out / PARTS, ignore_errors=True)
            (out / REQUEST).unlink(missing_ok=True)
        return summary
    except KeyboardInterrupt:
        if options.resumable:
            raise KeyboardInterrupt(f"interrupted; {out} is resumable: {resume_command(out)}") from None
        raise KeyboardInterrupt(
            f"interrupted; an exploration is not resumable, and what it wrote in {out} is removed: run the same "
            "command again"
        ) from None
    except OSError as exc:
        if not no_room(exc):
            raise
        then = f"then resume: {resume_command(out)}" if options.resumable else "then explore again"
        raise _not_written(out, exc, then) from None
    finally:
        # Stopped or failed: the files it wrote say nothing yet. A resumable exploration keeps its request and
        # its finished parts (whatever stopped it); another removes everything (while the folder is still held:
        # another exploration may claim it once it is empty).
        if not finished and not options.resumable:
            with contextlib.suppress(OSError):
                _discard(out, keep_folder=given)
        (out / LOCK_FILE).unlink(missing_ok=True)  # the folder holds the exploration only
        hold.release()


def _not_written(out: Path, exc: OSError, then: str) -> NotWritten:
    reason = exc.strerror or str(exc)
    return NotWritten(
        f"cannot write the exploration's files in {out} ({reason}); fix: make room or give a writable folder, {then}",
        out,
        reason,
    )


def resume_command(out: Path) -> str:
    """The command that completes the exploration stopped in ``out``."""
    return f"python -m harness explore --resume {shlex.quote(str(out))}"


def _discard(out: Path, keep_folder: bool) -> None:
    """Remove what an unfinished exploration wrote (the folder was new or empty when it began)."""
    if not keep_folder:
        shutil.rmtree(out, ignore_errors=True)
        return
    for child in out.iterdir():
        if child.name == LOCK_FILE:
            continue  # the hold, released after
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child, ignore_errors=True)
        else:
            child.unlink(missing_ok=True)


def _add_coverage(total: dict[str, list[int]], more: dict[str, list[int]]) -> None:
    for boundary, (reached, fired) in more.items():
        site = total.setdefault(boundary, [0, 0])
        site[0] += reached
        site[1] += fired


def _write_stuck(
    out: Path, stuck: Sequence[Finding], templates: dict[str, Scenario], options: ExploreOptions
) -> list[tuple[str, str]]:
    """Each case that ran over its budget or killed its worker, written as a runnable scenario under
    ``errors/``; for each, a line saying what happened, what was not explored and how to re-run it, and the
    command that re-runs it."""
    lines: list[tuple[str, str]] = []
    numbered: Counter[tuple[str, str]] = Counter()
    # Shards of one template all run it as written first: a case that failed there failed in each of them.
    distinct = {(f.policy, f.scenario_spec, f.schedule.key, f.seed): f for f in stuck}
    for case in sorted(distinct.values(), key=lambda f: (f.policy, f.scenario_spec)):
        numbered[(case.policy, case.scenario)] += 1
        n = numbered[(case.policy, case.scenario)]
        path = out / "errors" / case.policy / f"{derived_name(case.scenario, str(n))}.yaml"
        write_atomic(path, finding_yaml(templates[case.scenario_spec], case, n))
        command = (
            f"python -m harness run --policy {shlex.quote(case.policy_spec)} --scenario {shlex.quote(str(path))} "
            f"--seed {case.seed}{budget_option(options.case_timeout_s)}"
        )
        line = (
            f"{case.scenario_spec}: {case.policy} seed {case.seed}: {case.error}; this policy's other schedules of "
            f"{case.scenario} were not explored in this part of the exploration; reproduce: {command}"
        )
        lines.append((line, command))
    return lines


def _track(exploration: Exploration, summary: ExploreSummary, options: ExploreOptions) -> Tracked:
    """One Polyaxon run for one (policy, scenario): its own explore.json and its findings as artifacts."""
    own = ExploreSummary(
        summary.out,
        explorations=[exploration],
        coverage=exploration.coverage,
        unfired=[u for u in summary.unfired if u.scenario in _case_names(exploration.scenario_spec)],
        elapsed_s=summary.elapsed_s,
    )
    cases = [case for case, _ in scenario_cases(exploration.scenario_spec)]
    files = [("explore.json", explore_json(own, options, [exploration.policy_spec], cases))]
    files += [(str(path.relative_to(summary.out)), path.read_text()) for _, path in exploration.findings]
    record = ExplorationRecord(
        policy=exploration.policy,
        policy_revision=exploration.policy_revision,
        scenario=_case_name(exploration.scenario_spec),
        scenario_revision=exploration.scenario_revision,
        depth=options.depth,
        swarm=options.swarm,
        seeds=options.seeds,
        shard=options.shard,
        shards=options.shards,
        schedules=exploration.schedules,
        cases=exploration.cases,
        violating=exploration.violating,
        violations=dict(exploration.violations),
        files=tuple(files),
        findings=len(exploration.findings),
    )
    return track_exploration(record, summary.out, options.project, write_atomic)


def _case_names(scenario_spec: str) -> set[str]:
    return {scenario.name for _, scenario in scenario_cases(scenario_spec)}


def _case_name(scenario_spec: str) -> str:
    """The scenario's own name (a file's name, not its path; not one of its variants)."""
    cases = scenario_cases(scenario_spec)
    first = cases[0][1].name
    return first if len(cases) == 1 else first.rsplit("-", 1)[0]


def _run(
    jobs: Sequence[ExploreJob],
    options: ExploreOptions,
    progress: Callable[[int, int, JobResult], None] | None,
    kept: dict[int, JobResult],
    keep_in: Path | None,
) -> list[JobResult]:
    """Every job's result, in the jobs' order: those ``kept`` from before, and the others run (in supervised
    worker processes unless ``options.isolate`` is off), each kept in ``keep_in`` as it finishes."""
    results = dict(kept)
    missing = [i for i in range(len(jobs)) if i not in kept]

    def done(k: int, result: JobResult) -> None:
        i = missing[k]
        if keep_in is not None:
            keep_part(keep_in, i, jobs[i], result)
        results[i] = result
        if progress is not None:
            progress(len(results), len(jobs), result)

    if options.isolate and missing:  # every part kept: stopped while its findings were written
        processes = options.processes or options.concurrency
        supervise([jobs[i] for i in missing], processes, options.case_timeout_s, done)
    else:
        for k, i in enumerate(missing):
            done(k, explore_job(jobs[i]))
    return [results[i] for i in range(len(jobs))]


def _needed(findings: Iterable[Finding], part: bool = False) -> list[Finding]:
    """The findings to write, each once, per policy and template in the order they were first seen (see
    ``needed_findings``); a finding two parts of the exploration met is one. Each keeps ``kept`` None when any
    copy of it was reached shrinking for any violation: what ``load_explorations`` needs to choose again. A
    ``part`` of an exploration (one ``--shard``) writes every copy the choice over all parts could need
    (``part_findings``), which may be more than one exploration writes: ``load_explorations`` chooses."""

    def key(f: Finding) -> tuple[str, str, str]:
        return (f.policy, f.scenario_spec, shape(f.schedule))

    ordered = sorted(findings, key=lambda f: (f.policy, f.scenario, f.first_seen, f.seed))
    anyway = {key(f) for f in ordered if f.kept is None}
    if part:
        chosen = part_findings(ordered, key=key, kept=lambda f: f.kept)
    else:
        chosen = needed_findings(
            ordered,
            key=key,
            group=lambda f: (f.policy, f.scenario),
            kept=lambda f: f.kept,
            properties=lambda f: f.properties,
        )
    return [replace(f, kept=None) if key(f) in anyway else f for f in chosen]


def finding_yaml(template: Scenario, finding: Finding, n: int) -> str:
    """The finding as a runnable scenario: the template with exactly the minimal schedule, named ``<scenario>-<n>``,
    with how to reproduce it (policy, revision, seed; for a user's policy, the folder its module was imported from)
    in ``reproduces`` and in its description. A case that could not be judged (``finding.error``) has no
    ``reproduces``: its description says what happened."""
    scenario = apply(template, finding.schedule)
    data: dict[str, Any] = scenario.model_dump(mode="json", exclude_defaults=True, exclude={"approval"})
    data["approval"] = template.approval.model_dump(mode="json", exclude={"token"}, exclude_defaults=True)
    data["name"] = derived_name(template.name, str(n))
    data["revision"] = derived_revision(template.revision, "+explore")
    shown = "; ".join(_show(e) for e in finding.schedule.elements) or "(the template's own schedule)"
    who = f"{finding.policy} (revision {finding.policy_revision}) at seed {finding.seed}"
    if finding.error is None:
        found = f"{who} is {finding.outcome}, violating {', '.join(finding.properties)}. Minimal schedule: {shown}"
    else:  # not judged, so nothing for replay to compare: run it with a budget instead
        found = f"{who} could not be judged: {finding.error}. Schedule: {shown}"
    data["description"] = (
        f"Found by harness explore from {template.name}: {found}. Template: {template.description.strip()}"
    )
    data["faults"] = [element_dict(e) for e in finding.schedule.elements if e.kind == "fault"]
    data["operator"] = [element_dict(e) for e in finding.schedule.elements if e.kind == "operator"]
    if finding.error is None:
        data["reproduces"] = {
            "policy": finding.policy_spec,
            "policy_revision": finding.policy_revision,
            "seed": finding.seed,
            "outcome": finding.outcome,
            "properties": list(finding.properties),
        }
        root = import_root(finding.policy_spec)  # a user's policy: replay looks where its module was found
        if root is not None:
            data["reproduces"]["policy_path"] = str(root)
    order = [k for k in ("name", "revision", "description", "reproduces") if k in data]
    ordered = {k: data[k] for k in order} | {k: v for k, v in data.items() if k not in order}
    return yaml.safe_dump(ordered, sort_keys=False, width=110)


def _show(e: Any) -> str:
    data = element_dict(e)
    head = data.pop("boundary", None) or data.pop("do", None) or e.kind
    return " ".join([head, *(f"{k}={v}" for k, v in data.items())])


def explore_json(
    summary: ExploreSummary, options: ExploreOptions, policies: Sequence[str], cases: Sequence[str]
) -> str:
    """``explore.json``: what was explored, what was found, and fault-site coverage."""
    return (
        json.dumps(
            {
                "policies": list(policies),
                "scenarios": list(cases),
                "depth": options.depth,
                "swarm": options.swarm,
                "seeds": list(options.seeds),
                "shard": options.shard,
                "shards": options.shards,
                "schedules": summary.schedules,
                "cases": summary.cases,
                "simulated": summary.simulated,
                "violating_cases": summary.violating,
                "violations_by_property": dict(sorted(summary.violations.items())),
                "explorations": [
                    {
                        "policy": e.policy,
                        "policy_spec": e.policy_spec,
                        "policy_revision": e.policy_revision,
                        "scenario": e.scenario_spec,
                        "scenario_revision": e.scenario_revision,
                        "schedules": e.schedules,
                        "cases": e.cases,
                        "simulated": e.simulated,
                        "violating_cases": e.violating,
                        "violations_by_property": dict(sorted(e.violations.items())),
                        "findings": len(e.findings),
                    }
                    for e in summary.explorations
                ],
                "findings": [
                    {
                        "policy": f.policy,
                        "scenario": f.scenario,
                        "template": f.scenario_spec,
                        "shape": shape(f.schedule),
                        "properties": list(f.properties),
                        "outcome": f.outcome,
                        "seed": f.seed,
                        "file": str(path.relative_to(summary.out)),
                        "schedule": [_show(e) for e in f.schedule.elements],
                        # What merging shards needs to choose the findings as one exploration would.
                        "first_seen": f.first_seen,
                        "kept": f.kept,
                    }
                    for f, path in summary.findings
                ],
                "coverage": {b: {"reached": r, "fired": x} for b, (r, x) in sorted(summary.coverage.items())},
                # Keyed as coverage.json keys them: a fault's ``fault``, an operator event's ``event``.
                "unfired": [
                    {"scenario": u.scenario, "fault" if u.kind == "fault" else "event": u.fault}
                    for u in summary.unfired
                ],
                "errors": summary.errors,
                "tracking": options.tracking,
                "polyaxon_runs": summary.polyaxon_runs,
                "elapsed_s": summary.elapsed_s,
            },
            indent=2,
        )
        + "\n"
    )
