"""Prints speed and memory figures. Run: python benchmarks/bench.py [--load-files 10000]

Targets (checked here by reading the figures, not by timed unit tests): the default grid simulated and checked
in seconds, a single case in milliseconds, memory that does not grow with the number of cases run, and
10,000 recovery.json files loaded into pandas in seconds, not minutes.
"""

from __future__ import annotations

import argparse
import tempfile
import time
import tracemalloc
from pathlib import Path

from harness.check import check
from harness.policy import Policy, builtin_policy_names, load_policy
from harness.run.files import case_path, recovery_json, write_atomic
from harness.scenario import Scenario, list_scenarios, load_scenario, resolve_scenario
from harness.seeds import DEFAULT_SEEDS
from harness.sim import simulate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=20, help="how many times to run the grid for per-case figures")
    parser.add_argument("--load-files", type=int, default=10_000, help="recovery.json files to write and load")
    args = parser.parse_args()
    policies = [load_policy(p) for p in builtin_policy_names()]
    scenarios = [load_scenario(resolve_scenario(s)) for s in list_scenarios()]
    cells = [(p, s, seed) for p in policies for s in scenarios for seed in DEFAULT_SEEDS]

    started = time.perf_counter()
    for p, s, seed in cells:
        check(simulate(s, p, seed).evidence)
    grid_s = time.perf_counter() - started
    print(f"default grid: {len(cells)} cases simulated and checked in {grid_s:.3f} s")

    n = len(cells) * args.repeat
    started = time.perf_counter()
    for i in range(args.repeat):
        for p, s, seed in cells:
            check(simulate(s, p, seed + 1000 * i).evidence)
    elapsed = time.perf_counter() - started
    print(f"per case: {1000 * elapsed / n:.2f} ms over {n} cases")

    # Memory is traced in a separate pass: tracemalloc slows everything it watches.
    tracemalloc.start()
    first_peak = 0
    for i in range(args.repeat):
        for p, s, seed in cells:
            check(simulate(s, p, seed + 1000 * i).evidence)
        if i == 0:
            first_peak = tracemalloc.get_traced_memory()[1]
    current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(
        f"memory: peak {peak / 2**20:.1f} MiB after {n} cases (peak after the first grid: "
        f"{first_peak / 2**20:.1f} MiB; still held: {current / 2**20:.1f} MiB)"
    )

    if args.load_files:
        bench_load(cells, args.load_files)


def bench_load(cells: list[tuple[Policy, Scenario, int]], count: int) -> None:
    """Write ``count`` real recovery.json files (distinct seeds) and time loading them into one DataFrame."""
    from harness.present.analysis import load
    from harness.run import Case, run_case

    with tempfile.TemporaryDirectory(prefix="bench-load-") as tmp:
        out = Path(tmp)
        started = time.perf_counter()
        size = 0
        pairs = list(dict.fromkeys((policy, scenario) for policy, scenario, _ in cells))
        for i in range(count):
            policy, scenario = pairs[i % len(pairs)]
            seed = 1 + i // len(pairs)
            report, _ = run_case(Case(policy.name, scenario.name, seed, policy, scenario))
            text = recovery_json(report)
            size += len(text)
            write_atomic(case_path(out, report), text)
        written_s = time.perf_counter() - started
        started = time.perf_counter()
        frame = load(out)
        load_s = time.perf_counter() - started
    print(
        f"load: {len(frame)} recovery.json files ({size / 2**20:.0f} MiB) into pandas in {load_s:.2f} s "
        f"({1e6 * load_s / count:.0f} us per file; writing them took {written_s:.1f} s)"
    )


if __name__ == "__main__":
    main()
