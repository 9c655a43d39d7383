"""Command line: ``python -m harness run | list | schema``. Parses arguments, calls the runner and reports.

Exit statuses:
  0  every case ran and was judged (whatever the outcomes: an incorrect policy is a finding, not an error)
  1  at least one case ended in ``harness_error`` (its reproduce command is printed)
  2  bad usage or input (unknown policy or scenario, malformed scenario file or polyaxonfile); nothing was
     written
  3  the cases are complete on disk, but Polyaxon tracking or the push to the server failed (the message says
     how to send the runs later)
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import re
import shlex
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from harness.html_report import TIMELINE_OUTCOMES, render_timeline, write_report
from harness.model import CaseReport
from harness.plxfile import GridFileError, default_grid_file, load_grid_file
from harness.policy import PolicyError, builtin_policy_names, load_policy
from harness.report import outcome_table, write_atomic, write_summary
from harness.runner import CellJob, CellResult, execute_cell, load_grid
from harness.scenario import BOUNDARIES, ScenarioError, list_scenarios, load_scenario, resolve_scenario
from harness.seeds import DEFAULT_SEEDS, SEED_MAX
from harness.tracking import (
    DEFAULT_PROJECT,
    TRACKING_MODES,
    Tracked,
    is_managed,
    offline_root,
    push_runs,
    split_project,
)
from harness.viewer import ViewError, view

__all__ = ["main"]

EXIT_OK, EXIT_HARNESS_ERROR, EXIT_USAGE, EXIT_TRACKING = 0, 1, 2, 3


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_USAGE, f"harness: {message}; fix: see 'python -m harness {self.prog.split()[-1]} --help'\n")


def _whole(low: int, high: int, what: str) -> Callable[[str], int]:
    """An argparse type: a whole number in ``low..high``, refused in one line otherwise."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{what} '{text}' is not a whole number") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{what} {value} is outside {low}..{high}")
        return value

    return parse


#: Bounds on counts from the command line (seeds per cell, concurrency): far above use, far below harm.
COUNT_MAX = 10_000
_seed = _whole(0, SEED_MAX, "seed")
_positive = _whole(1, COUNT_MAX, "count")
_port = _whole(1, 65535, "port")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="harness", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    run = sub.add_parser("run", help="run the policy x scenario grid")
    run.add_argument(
        "--policy",
        action="append",
        metavar="NAME|MODULE:ATTR",
        help="a shipped policy or package.module:attr (repeatable; default: the grid file's)",
    )
    run.add_argument(
        "--scenario",
        action="append",
        metavar="NAME|PATH",
        help="a shipped scenario or a YAML file (repeatable; default: the grid file's)",
    )
    seeds = run.add_mutually_exclusive_group()
    seeds.add_argument("--seed", action="append", type=_seed, metavar="N", help="a seed (repeatable)")
    seeds.add_argument(
        "--seed-count",
        type=_positive,
        metavar="N",
        help=f"seeds 1..N (default: the grid file's seed_count, else {len(DEFAULT_SEEDS)})",
    )
    run.add_argument(
        "--polyaxonfile",
        type=Path,
        metavar="FILE",
        help="expand this Polyaxon grid operation's matrix and run its cells (default: polyaxonfiles/grid.yaml "
        "when neither --policy nor --scenario is given)",
    )
    run.add_argument(
        "--concurrency", type=_positive, metavar="N", help="cells run side by side (default: the matrix's, else 1)"
    )
    run.add_argument("--out", type=Path, metavar="DIR", help="output folder (default: reports/runs/<run-id>)")
    run.add_argument(
        "--tracking",
        choices=TRACKING_MODES,
        default="offline",
        help="Polyaxon tracking: one run per cell, offline into <out>/polyaxon (default), pushed to the "
        "configured server as well, or none",
    )
    run.add_argument(
        "--project",
        default=DEFAULT_PROJECT,
        metavar="[OWNER/]NAME",
        help=f"Polyaxon project for the runs (default: {DEFAULT_PROJECT})",
    )
    run.add_argument("--quiet", action="store_true", help="no per-cell progress lines")
    run.add_argument("--no-report", action="store_true", help="skip report.html, heatmap.png and the timelines")
    report = sub.add_parser("report", help="write report.html for a run folder (tables, heatmap, timelines)")
    report.add_argument(
        "run_dir",
        type=Path,
        metavar="RUN_DIR",
        help="a run folder, Polyaxon offline root, or folder of downloaded recovery.json files",
    )
    sub.add_parser("list", help="show policies, scenarios and fault boundaries")
    schema = sub.add_parser("schema", help="print the JSON Schema of recovery.json")
    schema.add_argument("--out", type=Path, metavar="FILE", help="write it to FILE instead")
    view = sub.add_parser("view", help="browse a run's Polyaxon runs in the Polyaxon UI (haupt viewer)")
    view.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="a folder written by 'harness run'")
    view.add_argument("--port", type=_port, default=8000, help="port on 127.0.0.1 (default: 8000)")
    return parser


def _new_out(out: Path | None) -> Path:
    """Create the output folder: the given one (new or empty), or a new ``reports/runs/<UTC time>[-n]``."""
    if out is not None:
        if out.exists() and not out.is_dir():
            raise UsageError(f"--out {out}: is a file; fix: give a folder")
        if out.exists() and any(out.iterdir()):
            raise UsageError(f"output folder {out} is not empty; fix: pass another --out")
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UsageError(f"--out {out}: cannot create it ({exc.strerror}); fix: give a writable folder") from exc
        return out
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    base = Path("reports") / "runs"
    base.mkdir(parents=True, exist_ok=True)
    for n in range(1000):
        candidate = base / (stamp if n == 0 else f"{stamp}-{n}")
        try:
            candidate.mkdir()  # atomic: two runs started in the same second get different folders
            return candidate
        except FileExistsError:
            continue
    raise UsageError(f"too many runs named {stamp} in {base}; fix: pass --out")


class UsageError(ValueError):
    """Options that cannot work together, or a folder that is not a run; one line with the fix."""


@dataclass(frozen=True, slots=True)
class _Plan:
    cells: tuple[tuple[str, str, tuple[int, ...]], ...]
    concurrency: int


def _plan(args: argparse.Namespace) -> _Plan:
    """Which cells to run with which seeds: from the command line, or from the grid polyaxonfile."""
    explicit_seeds = tuple(args.seed) if args.seed else None
    if args.seed_count:
        explicit_seeds = tuple(range(1, args.seed_count + 1))
    if args.policy or args.scenario:
        if args.polyaxonfile:
            raise GridFileError("give either --polyaxonfile or --policy/--scenario, not both; fix: drop one")
        seeds = explicit_seeds or DEFAULT_SEEDS
        policies = args.policy or builtin_policy_names()
        scenarios = args.scenario or list_scenarios()
        chosen = tuple((p, s, seeds) for p in dict.fromkeys(policies) for s in dict.fromkeys(scenarios))
        return _Plan(chosen, args.concurrency or 1)
    grid = load_grid_file(args.polyaxonfile or default_grid_file())
    cells: list[tuple[str, str, tuple[int, ...]]] = []
    for params in grid.cells:
        count = params.get("seed_count")
        seeds = explicit_seeds or (tuple(range(1, int(count) + 1)) if count else DEFAULT_SEEDS)
        cells.append((str(params["policy"]), str(params["scenario"]), seeds))
    return _Plan(tuple(cells), args.concurrency or grid.concurrency)


def _run(args: argparse.Namespace) -> int:
    plan = _plan(args)
    if args.tracking != "none" and is_managed() and len(plan.cells) != 1:
        raise UsageError(
            f"inside a Polyaxon job the harness logs into that job's one run, but {len(plan.cells)} cells were "
            "asked for; fix: pass one --policy and one --scenario (as polyaxonfiles/component.yaml does)"
        )
    # Load everything once before writing anything, so bad input fails with nothing half-written.
    grid = load_grid(
        [c[0] for c in plan.cells], [c[1] for c in plan.cells], sorted({s for c in plan.cells for s in c[2]})
    )
    if not re.match(r"^([a-z0-9][a-z0-9_-]*/)?[a-z0-9][a-z0-9_-]*$", args.project):
        raise UsageError(
            f"--project '{args.project}': not a Polyaxon project name; fix: use [owner/]name in lower case"
        )
    out = _new_out(args.out)
    jobs = [
        CellJob(p, s, seeds, out, args.tracking, args.project, timelines=not args.no_report)
        for p, s, seeds in plan.cells
    ]
    started = time.perf_counter()
    results = _execute(jobs, plan.concurrency, quiet=args.quiet)
    reports = [r for result in results for r in result.reports]
    summary = write_summary(out, reports)
    tracked = [(job, result.tracked) for job, result in zip(jobs, results, strict=True) if result.tracked]
    write_atomic(
        out / "run.json",
        json.dumps(
            {
                "cells": len(jobs),
                "cases": len(reports),
                "concurrency": plan.concurrency,
                "wall_time_s": round(time.perf_counter() - started, 3),
                "tracking": args.tracking,
                "project": args.project,
                "polyaxon_runs": {f"{j.policy_spec} x {j.scenario_spec}": t.run_uuid for j, t in tracked if t},
            },
            indent=2,
        )
        + "\n",
    )
    print(outcome_table(reports, grid.policies, grid.scenarios))
    print(f"\n{len(reports)} cases in {out}  (summary: {summary})")
    failing = [r for r in reports if r.outcome in ("incorrect", "harness_error")]
    if failing:
        print("\nreproduce a failing case:")
        seen: set[tuple[str, str]] = set()
        for r in failing:
            if (r.policy, r.scenario) not in seen:
                seen.add((r.policy, r.scenario))
                print(f"  {r.outcome:<13} {r.reproduce}")
    errors = [r for r in reports if r.outcome == "harness_error"]
    for r in errors:
        print(f"harness error in {r.policy} x {r.scenario} seed {r.seed}: {r.error}", file=sys.stderr)
    status = _report_tracking(args, out, [t for _, t in tracked if t])
    if not args.no_report:
        print(f"report: {write_report(out)}")
    if errors:
        return EXIT_HARNESS_ERROR
    return status


def _execute(jobs: Sequence[CellJob], concurrency: int, quiet: bool) -> list[CellResult]:
    """Run the cells, ``concurrency`` at a time, and return their results in grid order."""
    results: dict[int, CellResult] = {}
    width = len(str(len(jobs)))

    def progress(i: int, result: CellResult) -> None:
        results[i] = result
        if quiet:
            return
        outcomes = [r.outcome for r in result.reports]
        counts = ", ".join(f"{o} {outcomes.count(o)}" for o in dict.fromkeys(outcomes))
        job = jobs[i]
        print(
            f"[{len(results):>{width}}/{len(jobs)}] {job.policy_spec} x {job.scenario_spec}: {counts}", file=sys.stderr
        )

    if concurrency <= 1 or len(jobs) <= 1:
        for i, job in enumerate(jobs):
            progress(i, execute_cell(job))
    else:
        # spawn, not fork: Polyaxon's tracking keeps threads and process-wide state that must not be forked.
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=concurrency, mp_context=context) as pool:
            futures = {pool.submit(execute_cell, job): i for i, job in enumerate(jobs)}
            for future in as_completed(futures):
                progress(futures[future], future.result())
    return [results[i] for i in range(len(jobs))]


def _report_tracking(args: argparse.Namespace, out: Path, tracked: Sequence[Tracked]) -> int:
    """Say once what happened to the Polyaxon runs; push them in server mode. Returns the exit status."""
    if args.tracking == "none":
        return EXIT_OK
    root = offline_root(out)
    push_later = f"polyaxon ops push -p {split_project(args.project)[1]} --path {shlex.quote(str(root))} -a"
    broken = [t for t in tracked if t.status == "error"]
    if broken:
        print(
            f"harness: Polyaxon tracking failed for {len(broken)} cells ({broken[0].error}); "
            f"the case files are complete in {out}",
            file=sys.stderr,
        )
        return EXIT_TRACKING
    if is_managed():
        print(f"Polyaxon: logged into this job's run {tracked[0].run_uuid if tracked else ''}")
        return EXIT_OK
    uuids = [t.run_uuid for t in tracked if t.run_uuid]
    if args.tracking == "offline":
        print(
            f"Polyaxon: {len(uuids)} offline runs in {root}; browse: python -m harness view {out}; "
            f"send to a server: {push_later}"
        )
        return EXIT_OK
    result = push_runs(root, uuids, args.project)
    if result.error:
        print(
            f"harness: could not send runs to Polyaxon ({result.error}); {len(result.pushed)} of {len(uuids)} "
            f"sent; nothing local is lost: the runs are in {root}; send them later: {push_later}",
            file=sys.stderr,
        )
        return EXIT_TRACKING
    print(f"Polyaxon: {len(result.pushed)} runs sent to project {args.project}")
    return EXIT_OK


def _report(run_dir: Path) -> int:
    if not run_dir.is_dir():
        raise UsageError(f"{run_dir}: not a folder; fix: give a folder written by 'harness run'")
    missing = [
        path
        for path in sorted(run_dir.rglob("recovery.json"))
        if not path.with_name("timeline.png").exists() and _outcome(path) in TIMELINE_OUTCOMES
    ]
    if missing:
        print(f"drawing {len(missing)} timelines...", file=sys.stderr)
        for path in missing:
            render_timeline(path)
    try:
        page = write_report(run_dir)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    print(page)
    return EXIT_OK


def _outcome(path: Path) -> str | None:
    try:
        value = json.loads(path.read_text(encoding="utf-8")).get("outcome")
    except (OSError, ValueError, AttributeError):
        return None
    return value if isinstance(value, str) else None


def _list() -> int:
    print("policies:")
    for name in builtin_policy_names():
        policy = load_policy(name)
        print(f"  {name} (revision {policy.revision})")
    print("scenarios:")
    for name in list_scenarios():
        scenario = load_scenario(resolve_scenario(name))
        print(f"  {name} (revision {scenario.revision})")
    print("fault boundaries:")
    for boundary, doc in BOUNDARIES.items():
        print(f"  {boundary}: {doc.splitlines()[0]}")
    return EXIT_OK


def _schema(args: argparse.Namespace) -> int:
    text = json.dumps(CaseReport.model_json_schema(), indent=2) + "\n"
    if args.out and args.out.is_dir():
        raise UsageError(f"--out {args.out}: is a folder; fix: give a file name")
    if args.out:
        write_atomic(args.out, text)
        print(args.out)
    else:
        sys.stdout.write(text)
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "run":
            return _run(args)
        if args.command == "list":
            return _list()
        if args.command == "view":
            return view(args.run_dir, args.port)
        if args.command == "report":
            return _report(args.run_dir)
        return _schema(args)
    except (ScenarioError, PolicyError, GridFileError, ViewError, UsageError) as exc:
        print(f"harness: {exc}", file=sys.stderr)
        return EXIT_USAGE
