"""The catch rate of the buggy-policy corpus, with and without exploration.

    python tools/catch_rate.py [--depth K] [--swarm N] [--concurrency N] [--variant NAME ...]

Every one-change buggy variant in tests/buggy_policies.py (the corpus, and the hidden variants) is run against
every shipped scenario at seeds 1-3 as written: it is caught when some case breaks a safety property. Each
variant that no shipped schedule catches is then explored from the shipped scenarios, one template at a time
in name order, until a finding shows it (exploring a variant the grid already catches would find the same: the
template's own schedule is the first one explored). Prints one line per variant and the two rates.
Exit status: 0 when exploration catches every variant, 1 otherwise, 2 bad usage.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from buggy_policies import CORPUS, HIDDEN  # noqa: E402

from harness.check import check  # noqa: E402
from harness.explore import ExploreOptions, explore  # noqa: E402
from harness.scenario import list_scenarios, scenario_cases  # noqa: E402
from harness.sim import simulate  # noqa: E402

SEEDS = (1, 2, 3)


def grid_catch(policy: object, cases: dict[str, object]) -> str | None:
    """The first shipped case (scenario and property) that catches the policy, or None."""
    for spec, scenario in cases.items():
        for seed in SEEDS:
            checks = check(simulate(scenario, policy, seed).evidence).checks  # type: ignore[arg-type]
            broken = [name for name, verdict in checks.items() if verdict == "false"]
            if broken:
                return f"{spec} seed {seed}: {', '.join(broken)}"
    return None


def explore_catch(name: str, options: ExploreOptions, work: Path) -> tuple[str | None, int]:
    """Explore the variant template by template until a finding; the finding and the schedules it took."""
    schedules = 0
    for i, scenario in enumerate(list_scenarios()):
        print(f"  exploring {name} from {scenario} ...", file=sys.stderr)
        summary = explore(
            [f"buggy_policies:{name}"],
            [scenario],
            ExploreOptions(
                out=work / name / str(i),
                depth=options.depth,
                swarm=options.swarm,
                concurrency=options.concurrency,
                tracking="none",
            ),
        )
        schedules += summary.schedules
        if summary.findings:
            finding, path = summary.findings[0]
            return f"{finding.scenario}: {', '.join(finding.properties)} ({path.name})", schedules
    return None, schedules


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--depth", type=int, choices=(1, 2, 3), default=2, help="exploration depth (default 2)")
    parser.add_argument("--swarm", type=int, default=20, help="swarm schedules per template (default 20)")
    parser.add_argument("--concurrency", type=int, default=2, help="processes side by side (default 2)")
    parser.add_argument("--variant", action="append", metavar="NAME", help="only these variants (repeatable)")
    args = parser.parse_args(argv)
    variants = [c.policy for c in CORPUS] + [h.policy for h in HIDDEN]
    if args.variant:
        known = {v.name for v in variants}
        unknown = sorted(set(args.variant) - known)
        if unknown:
            parser.error(f"unknown variant {unknown[0]}; fix: use one of {', '.join(sorted(known))}")
        variants = [v for v in variants if v.name in args.variant]
    cases = {spec: sc for name in list_scenarios() for spec, sc in scenario_cases(name)}
    options = ExploreOptions(depth=args.depth, swarm=args.swarm, concurrency=args.concurrency)
    started = time.perf_counter()
    rows = []
    with tempfile.TemporaryDirectory(prefix="catch-rate-") as tmp:
        for variant in variants:
            by_grid = grid_catch(variant, cases)
            by_explore, schedules = (None, 0) if by_grid else explore_catch(variant.name, options, Path(tmp))
            rows.append((variant.name, by_grid, by_explore, schedules))
    width = max(len(r[0]) for r in rows)
    print(f"{'variant':<{width}}  caught by the shipped schedules, else by exploration")
    for name, by_grid, by_explore, schedules in rows:
        if by_grid:
            print(f"{name:<{width}}  grid: {by_grid}")
        elif by_explore:
            print(f"{name:<{width}}  explore (depth {args.depth}, {schedules} schedules): {by_explore}")
        else:
            print(f"{name:<{width}}  NOT CAUGHT (explored {schedules} schedules at depth {args.depth})")
    total = len(rows)
    grid = sum(1 for r in rows if r[1])
    both = sum(1 for r in rows if r[1] or r[2])
    print(
        f"\ncatch rate without exploration: {grid}/{total} ({grid / total:.0%}); "
        f"with exploration (depth {args.depth}): {both}/{total} ({both / total:.0%}); "
        f"{time.perf_counter() - started:.0f} s"
    )
    return 0 if both == total else 1


if __name__ == "__main__":
    sys.exit(main())
