"""Command line: ``python -m harness run | list | schema``. Parses arguments, calls the runner and reports.

Exit statuses:
  0  every case ran and was judged (whatever the outcomes: an incorrect policy is a finding, not an error)
  1  at least one case ended in ``harness_error`` (its reproduce command is printed)
  2  bad usage or input (unknown policy or scenario, malformed scenario file); nothing was written
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from harness.model import CaseReport
from harness.policy import PolicyError, builtin_policy_names, load_policy
from harness.report import outcome_table, write_atomic, write_case, write_summary
from harness.runner import load_grid, run_case
from harness.scenario import BOUNDARIES, ScenarioError, list_scenarios, load_scenario, resolve_scenario
from harness.seeds import DEFAULT_SEEDS, SEED_MAX

__all__ = ["main"]

EXIT_OK, EXIT_HARNESS_ERROR, EXIT_USAGE = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_USAGE, f"harness: {message}; fix: see 'python -m harness {self.prog.split()[-1]} --help'\n")


def _seed(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"seed '{text}' is not a whole number") from None
    if not 0 <= value <= SEED_MAX:
        raise argparse.ArgumentTypeError(f"seed {value} is outside 0..{SEED_MAX}")
    return value


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="harness", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    run = sub.add_parser("run", help="run the policy x scenario grid")
    run.add_argument(
        "--policy",
        action="append",
        metavar="NAME|MODULE:ATTR",
        help="a shipped policy or package.module:attr (repeatable; default: every shipped policy)",
    )
    run.add_argument(
        "--scenario",
        action="append",
        metavar="NAME|PATH",
        help="a shipped scenario or a YAML file (repeatable; default: every shipped scenario)",
    )
    run.add_argument(
        "--seed",
        action="append",
        type=_seed,
        metavar="N",
        help=f"a seed (repeatable; default: {' '.join(map(str, DEFAULT_SEEDS))})",
    )
    run.add_argument("--out", type=Path, metavar="DIR", help="output folder (default: reports/runs/<run-id>)")
    run.add_argument("--quiet", action="store_true", help="no per-case progress lines")
    sub.add_parser("list", help="show policies, scenarios and fault boundaries")
    schema = sub.add_parser("schema", help="print the JSON Schema of recovery.json")
    schema.add_argument("--out", type=Path, metavar="FILE", help="write it to FILE instead")
    return parser


def _default_out() -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    return Path("reports") / "runs" / stamp


def _run(args: argparse.Namespace) -> int:
    policies = args.policy or builtin_policy_names()
    scenarios = args.scenario or list_scenarios()
    seeds = args.seed or list(DEFAULT_SEEDS)
    grid = load_grid(policies, scenarios, seeds)
    out: Path = args.out or _default_out()
    if out.exists() and any(out.iterdir()):
        print(f"harness: output folder {out} is not empty; fix: pass another --out", file=sys.stderr)
        return EXIT_USAGE
    reports: list[CaseReport] = []
    total = len(grid.cases)
    started = time.perf_counter()
    for i, case in enumerate(grid.cases, 1):
        report, _ = run_case(case)
        write_case(out, report, secrets=[case.scenario.approval.token.get_secret_value()])
        reports.append(report)
        if not args.quiet:
            print(
                f"[{i:>{len(str(total))}}/{total}] {report.policy} x {report.scenario} seed {report.seed}: "
                f"{report.outcome}",
                file=sys.stderr,
            )
    summary = write_summary(out, reports)
    write_atomic(
        out / "run.json",
        json.dumps(
            {
                "policies": grid.policies,
                "scenarios": grid.scenarios,
                "seeds": grid.seeds,
                "cases": total,
                "wall_time_s": round(time.perf_counter() - started, 3),
            },
            indent=2,
        )
        + "\n",
    )
    print(outcome_table(reports, grid.policies, grid.scenarios))
    print(f"\n{total} cases in {out}  (summary: {summary})")
    errors = [r for r in reports if r.outcome == "harness_error"]
    failing = [r for r in reports if r.outcome in ("incorrect", "harness_error")]
    if failing:
        print("\nreproduce a failing case:")
        seen: set[tuple[str, str]] = set()
        for r in failing:
            if (r.policy, r.scenario) not in seen:
                seen.add((r.policy, r.scenario))
                print(f"  {r.outcome:<13} {r.reproduce}")
    for r in errors:
        print(f"harness error in {r.policy} x {r.scenario} seed {r.seed}: {r.error}", file=sys.stderr)
    return EXIT_HARNESS_ERROR if errors else EXIT_OK


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
        return _schema(args)
    except (ScenarioError, PolicyError) as exc:
        print(f"harness: {exc}", file=sys.stderr)
        return EXIT_USAGE
