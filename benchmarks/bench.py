"""Prints speed and memory figures for the simulator and checker. Run: python benchmarks/bench.py

Targets (checked here by reading the figures, not by timed unit tests): the default grid in seconds, a
single case in milliseconds, and memory that does not grow with the number of cases run.
"""

from __future__ import annotations

import argparse
import time
import tracemalloc

from harness.check import check
from harness.policy import builtin_policy_names, load_policy
from harness.scenario import list_scenarios, load_scenario, resolve_scenario
from harness.seeds import DEFAULT_SEEDS
from harness.sim import simulate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=20, help="how many times to run the grid for per-case figures")
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


if __name__ == "__main__":
    main()
