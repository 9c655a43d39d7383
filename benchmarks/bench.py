"""Speed and memory figures, as ratios to a bare-simpy skeleton measured in the same run, and the targets.

    python benchmarks/bench.py                 # every figure (about two minutes on two cores)
    python benchmarks/bench.py --sweep 20000   # smaller sweeps, for a quick look
    python benchmarks/bench.py --instructions  # instructions a case under callgrind, to compare commits (3 minutes)

It prints, in one run: the skeleton's cases per second on one core (``benchmarks/skeleton.py``); for every
shipped scenario (with ``reconcile_and_reauthorize``), the rates of simulate, simulate + check and the whole
case path (run the case, serialize its record, write it) and their ratios to the skeleton; the end-to-end rate
of ``harness run --seed-count N --concurrency 2`` (start-up included); peak memory at N/10 and N cases; the
speedup of two processes over one; what ``load()`` of the large sweep's folder costs (time, and peak memory
a case: what ``harness report`` and a notebook pay); what offline Polyaxon tracking costs per cell; what a
failing case's timeline picture costs, and how long the default grid (the README's first command) takes; how
long ``harness list`` takes to start; then each target and whether it is met. Machines here are shared and noisy:
the skeleton is timed before every group and the ratio uses the median, so compare ratios, not raw rates.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import simpy
from skeleton import skeleton_case

from harness.check import check
from harness.model import entries
from harness.policy import Policy
from harness.run.case import run_case
from harness.run.cell import CellJob, execute_cell
from harness.run.files import case_path, record_line, recovery_json, write_atomic
from harness.run.plan import Case, load_grid
from harness.scenario import Scenario, list_scenarios
from harness.sim import simulate
from harness.sim.history import History

ROOT = Path(__file__).resolve().parent.parent
POLICY, SCENARIO = "reconcile_and_reauthorize", "lost_response"


@dataclass(frozen=True, slots=True)
class Target:
    name: str
    figure: float
    goal: float
    #: ``min``: the figure must be at least the goal; ``max``: at most.
    kind: str
    shown: str

    @property
    def met(self) -> bool:
        return self.figure >= self.goal if self.kind == "min" else self.figure <= self.goal


def rate(work: Callable[[], int]) -> float:
    started = time.perf_counter()
    n = work()
    return n / (time.perf_counter() - started)


class Yardstick:
    """The skeleton's rate, timed again before every group of figures; ratios use the median of all timings."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.rates: list[float] = []

    def time(self) -> None:
        def work() -> int:
            for seed in range(self.n):
                skeleton_case(seed)
            return self.n

        self.rates.append(rate(work))

    @property
    def median(self) -> float:
        return statistics.median(self.rates)


def case_path_rates(cases: list[Case], out: Path) -> tuple[float, float, float]:
    """Cases per second for simulate, simulate + check, and the whole case path (run, judge, serialize, and
    append the compact record to a file, as a large cell does)."""

    def sim() -> int:
        for c in cases:
            simulate(c.scenario, c.policy, c.seed)
        return len(cases)

    def sim_check() -> int:
        for c in cases:
            check(simulate(c.scenario, c.policy, c.seed).evidence)
        return len(cases)

    def whole() -> int:
        path = out / "records.jsonl"
        with open(path, "w", encoding="utf-8") as handle:
            for c in cases:
                report, _ = run_case(c)
                handle.write(record_line(report))
        return len(cases)

    return rate(sim), rate(sim_check), rate(whole)


def floor_costs(cases: list[Case]) -> tuple[float, float, float]:
    """Microseconds per case of three parts every case pays whatever the simulator does: the checker alone,
    building and stamping the case's history records alone, and turning them into timeline entries alone."""
    results = [simulate(c.scenario, c.policy, c.seed) for c in cases]
    histories = [r.evidence.history for r in results]
    # Each record's own fields, taken beforehand so that only construction and stamping are timed.
    fields = [[(type(e), _own_fields(e)) for e in h] for h in histories]
    env = simpy.Environment()

    def per_case(work: Callable[[], object]) -> float:
        started = time.perf_counter()
        work()
        return (time.perf_counter() - started) / len(cases) * 1e6

    def judge() -> None:
        for r in results:
            check(r.evidence)

    def record() -> None:
        for records in fields:
            history = History(env)
            for cls, values in records:
                history.record(cls(**values))  # type: ignore[arg-type]

    def timeline() -> None:
        for h in histories:
            entries(h)

    return (
        min(per_case(judge) for _ in range(3)),
        min(per_case(record) for _ in range(3)),
        min(per_case(timeline) for _ in range(3)),
    )


def growth(out: Path) -> tuple[tuple[float, float], tuple[float, float]]:
    """Milliseconds per case as a recovery grows tenfold (100, then 1,000 rounds; linear would cost ten times
    as much, quadratic a hundred): simulate + check of ``reconcile_and_reauthorize`` facing that many
    unanswered lookups, and the checker alone on a policy that claims and retries after that many lost replies."""
    from harness.policy import RetrySameAction, Situation, load_policy
    from harness.scenario import load_scenario

    template = (ROOT / "scenarios" / f"{SCENARIO}.yaml").read_text(encoding="utf-8")
    fault = "{boundary: response_lost, nth: 1}"

    def scenario(n: int, faults: str, deadline_s: int, worker: str) -> Path:
        path = out / f"growth-{n}-{len(faults)}" / f"{SCENARIO}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        text = template.replace(fault, faults).replace("recovery_deadline_s: 120", f"recovery_deadline_s: {deadline_s}")
        path.write_text(text + f"worker: {worker}\n", encoding="utf-8")
        return path

    class ClaimingRetry:
        """Retry under the same key with a fresh claim after every lost reply, until a reply brings a receipt."""

        name, revision = "claiming_retry", "1"

        def decide(self, situation: Situation) -> object:
            from harness.policy import RecordEffect, Stop

            if situation.recorded is not None:
                return Stop()
            receipts = situation.observed_receipts()
            return RecordEffect(receipt_id=receipts[0].receipt_id) if receipts else RetrySameAction(claim=True)

    def ms(work: Callable[[], object], repeat: int = 3) -> float:
        best = float("inf")
        for _ in range(repeat):
            started = time.perf_counter()
            work()
            best = min(best, time.perf_counter() - started)
        return best * 1000

    reconcile, retrying = load_policy(POLICY), ClaimingRetry()
    lookups, checks = [], []
    for n in (100, 1000):
        unanswered = load_scenario(
            scenario(
                n,
                f"{fault}\n  - {{boundary: lookup_unavailable, nth: 1, count: {n}}}",
                10 * n + 60,
                "{command_count_max: 10000}",
            )
        )
        lookups.append(ms(partial(_judge, unanswered, reconcile)))
        lost = load_scenario(
            scenario(
                n,
                f"{{boundary: response_lost, nth: 1, count: {n}}}",
                50_000,
                "{command_count_max: 10000, timeout_s: 1.0}",
            )
        )
        evidence = simulate(lost, retrying, 1).evidence  # type: ignore[arg-type]
        checks.append(ms(partial(check, evidence)))
    return (lookups[0], lookups[1]), (checks[0], checks[1])


def _judge(scenario: Scenario, policy: Policy) -> object:
    return check(simulate(scenario, policy, 1).evidence)


def _own_fields(event: object) -> dict[str, object]:
    return {f.name: getattr(event, f.name) for f in dataclasses.fields(event) if f.name not in ("index", "at_s")}  # type: ignore[arg-type]


def full_path_rate(cases: list[Case], out: Path) -> float:
    """Cases per second when each case gets its own folder and recovery.json, written atomically."""

    def work() -> int:
        for c in cases:
            report, _ = run_case(c)
            write_atomic(case_path(out, report), recovery_json(report))
        return len(cases)

    return rate(work)


def cell_rate(n: int, out: Path) -> float:
    """Cases per second of one compact piece of a cell of seeds 1..n, in this process, as a worker process runs it
    (``execute_cell``): the whole case path, plus the record gzipped, the summary row, the tallies and the
    coverage. Beside the whole case path's rate, what a cell adds to each case."""

    def work() -> int:
        execute_cell(CellJob(POLICY, SCENARIO, range(1, n + 1), out, records="compact"))
        return n

    return rate(work)


def sweep(n: int, concurrency: int, out: Path) -> tuple[float, float]:
    """End to end, start-up included: cases per second and the peak memory (MiB) of the whole process tree."""
    command = [
        sys.executable,
        "-m",
        "harness",
        "run",
        "--policy",
        POLICY,
        "--scenario",
        SCENARIO,
        "--seed-count",
        str(n),
        "--concurrency",
        str(concurrency),
        "--tracking",
        "none",
        "--no-report",
        "--quiet",
        "--out",
        str(out),
    ]
    # A wrapper process per sweep, so its children's peak RSS is this sweep's alone (workers included).
    probe = (
        "import json, resource, subprocess, sys, time\n"
        "t = time.perf_counter()\n"
        "p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)\n"
        "dt = time.perf_counter() - t\n"
        "print(json.dumps({'rc': p.returncode, 'seconds': dt, 'err': p.stderr[-300:],\n"
        "                  'maxrss_kb': resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe, *command], capture_output=True, text=True, cwd=ROOT, check=True)
    result = json.loads(done.stdout)
    if result["rc"] not in (0, 1):
        raise SystemExit(f"bench: harness run --seed-count {n} failed ({result['rc']}): {result['err']}")
    return n / result["seconds"], result["maxrss_kb"] / 1024


def load_cost(out: Path, n: int) -> tuple[float, float, float]:
    """``load()`` of a sweep's folder, in a process of its own: seconds, and bytes a case of the peak memory
    over what the process held before loading (pandas imported) and of the frame it returns."""
    probe = (
        "import json, resource, sys, time\n"
        "from harness.present.analysis import load\n"
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "t = time.perf_counter()\n"
        "frame = load(sys.argv[1])\n"
        "dt = time.perf_counter() - t\n"
        "peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "print(json.dumps({'seconds': dt, 'rows': len(frame), 'peak_kb': peak - before,\n"
        "                  'frame_bytes': int(frame.memory_usage(deep=True).sum())}))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe, str(out)], capture_output=True, text=True, cwd=ROOT, check=True)
    result = json.loads(done.stdout)
    if result["rows"] != n:
        raise SystemExit(f"bench: load() of {out} gave {result['rows']} rows, not {n}")
    return result["seconds"], result["peak_kb"] * 1024 / n, result["frame_bytes"] / n


def tracking_cost(cells: int, out: Path) -> tuple[float, float]:
    """Seconds per cell of offline tracking (after one warm-up): for a cell of 3 seeds and of 100,000 seeds."""
    from collections import Counter

    from harness.check.registry import METRICS
    from harness.plx.tracking import CellRecord, track_cell

    def record(seeds: range) -> CellRecord:
        return CellRecord(
            policy=POLICY,
            scenario=SCENARIO,
            seeds=seeds,
            identity={"policy_revision": "4", "scenario_revision": "1", "task_id": "t", "action_id": "a"},
            counts={(POLICY, SCENARIO): Counter(correct=len(seeds))},
            # Every metric a cell logs, as a real cell does: Polyaxon's ending costs grew with their number.
            metrics={m.name: 1.0 for m in METRICS if m.logged},
        )

    track_cell(record(range(1, 4)), out / "warm", "default/bench")
    figures = []
    for seeds in (range(1, 4), range(1, 100_001)):
        started = time.perf_counter()
        for i in range(cells):
            tracked = track_cell(record(seeds), out / f"t{len(seeds)}-{i}", "default/bench")
            assert tracked.status == "succeeded", tracked.error
        figures.append((time.perf_counter() - started) / cells)
    return figures[0], figures[1]


def picture_ms(count: int = 12) -> float:
    """Milliseconds to draw and encode one timeline.png, over failing cases of the first shipped scenarios."""
    from harness.present.pictures import png_bytes, timeline
    from harness.run.files import recovery_json

    reports = []
    for name in list_scenarios():
        (case,) = load_grid(["retry_same_key"], [name], [1]).cases
        report, _ = run_case(case)
        if report.outcome not in ("correct", "escalated"):
            reports.append(json.loads(recovery_json(report)))
        if len(reports) == count:
            break
    png_bytes(timeline(reports[0]))  # matplotlib's first figure loads its fonts
    started = time.perf_counter()
    for report in reports:
        png_bytes(timeline(report))
    return (time.perf_counter() - started) / len(reports) * 1000


def default_grid_s(out: Path) -> float:
    """Seconds for ``python -m harness run`` with no options but --out: cases, offline tracking and report."""
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "harness", "run", "--out", str(out), "--quiet"], check=True, cwd=ROOT,
                   capture_output=True)  # fmt: skip
    return time.perf_counter() - started


def startup(args: list[str]) -> float:
    """Best of three: seconds for ``python -m harness ARGS`` to start, do its work and exit."""
    times = []
    for _ in range(3):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "harness", *args], capture_output=True, check=True, cwd=ROOT)
        times.append(time.perf_counter() - started)
    return min(times)


#: What ``--instructions`` counts, each a function of one seed: the yardstick and the harness's two paths.
COUNTED = ("skeleton", "simulate+check", "whole case path")


def _counted_work(what: str, scenario: str) -> Callable[[int], object]:
    if what == "skeleton":
        return skeleton_case
    cases = {c.seed: c for c in load_grid([POLICY], [scenario], range(1, 100_001)).cases}
    if what == "simulate+check":
        return lambda seed: check(simulate(cases[seed].scenario, cases[seed].policy, seed).evidence)
    return lambda seed: record_line(run_case(cases[seed])[0])


def count_child(what: str, scenario: str, n: int) -> None:
    """Run ``n`` cases inside ``sum()``, which callgrind is told to count (one warm-up case first, uncounted)."""
    one = _counted_work(what, scenario)
    one(100_000)

    def counted(seed: int) -> int:
        one(seed)
        return 1

    sum(map(counted, range(1, n + 1)))


def instructions(scenario: str, n: int) -> None:
    """Instructions per case under valgrind's callgrind: the same for the same code and inputs whatever else the
    machine does, so two commits can be compared on a shared machine (time cannot). Each figure is a run of ``n``
    cases minus a run of none (what importing and warming up leave inside the counted call)."""

    def collected(what: str, cases: int) -> int:
        with tempfile.TemporaryDirectory(prefix="bench-cg-") as tmp:
            command = [
                "valgrind",
                "--tool=callgrind",
                f"--callgrind-out-file={tmp}/out",
                "--toggle-collect=builtin_sum*",
                sys.executable,
                __file__,
                "--count-child",
                what,
                scenario,
                str(cases),
            ]
            # A fixed hash seed: string hashing otherwise moves the counts of the same code by a percent or two.
            env = {**os.environ, "PYTHONHASHSEED": "0"}
            done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=env)
        found = [line for line in done.stderr.splitlines() if "Collected :" in line]
        if done.returncode != 0 or not found:
            raise SystemExit(f"bench: callgrind failed for {what}: {done.stderr.strip()[-300:]}")
        return int(found[-1].split(":")[-1].replace(",", ""))

    per_case = {what: (collected(what, n) - collected(what, 0)) / n for what in COUNTED}
    skeleton = per_case["skeleton"]
    print(f"instructions a case (callgrind, {n} cases of {scenario}, policy {POLICY}):")
    for what in COUNTED:
        print(f"  {what:<16} {per_case[what]:>12,.0f}  ratio to the skeleton {skeleton / per_case[what]:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--per-scenario", type=int, default=300, help="cases per shipped scenario (default 300)")
    parser.add_argument("--sweep", type=int, default=100_000, help="seeds of the large sweep (default 100,000)")
    parser.add_argument("--skeleton", type=int, default=20_000, help="skeleton cases per timing (default 20,000)")
    parser.add_argument(
        "--instructions",
        nargs="?",
        const=SCENARIO,
        metavar="SCENARIO",
        help=f"only count instructions a case under callgrind (needs valgrind; default scenario {SCENARIO})",
    )
    parser.add_argument("--count-child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.count_child:
        what, scenario, n = args.count_child
        count_child(what, scenario, int(n))
        return
    if args.instructions:
        instructions(args.instructions, 200)
        return
    yard = Yardstick(args.skeleton)
    targets: list[Target] = []
    with tempfile.TemporaryDirectory(prefix="bench-") as tmp:
        work = Path(tmp)
        yard.time()
        print(f"skeleton (bare simpy, benchmarks/skeleton.py): {yard.rates[-1]:,.0f} cases/s on one core")

        print(f"\nper shipped scenario, {args.per_scenario} cases each, policy {POLICY}, one core:")
        names = list_scenarios()
        width = max(len("scenario"), *map(len, names))  # every name in its column, however long
        print(f"{'scenario':<{width}} {'simulate':>16} {'+ check':>16} {'whole case path':>16}")
        rows = []
        for name in names:
            cases = list(load_grid([POLICY], [name], range(1, args.per_scenario + 1)).cases)
            rows.append((name, case_path_rates(cases, work)))
        yard.time()
        sk = yard.median
        for name, (a, b, c) in rows:
            print(f"{name:<{width}} {a:>8,.0f} ({a / sk:.3f}) {b:>8,.0f} ({b / sk:.3f}) {c:>8,.0f} ({c / sk:.3f})")
        _, spine_check, spine_whole = dict(rows)[SCENARIO]
        spine = list(load_grid([POLICY], [SCENARIO], range(1, args.per_scenario + 1)).cases)
        full = full_path_rate(spine, work / "full")
        cell = cell_rate(args.per_scenario, work / "cell")
        print(
            f"{SCENARIO}: whole case path with a compact record {spine_whole:,.0f}/s ({spine_whole / sk:.3f}); "
            f"with a recovery.json per case {full:,.0f}/s ({full / sk:.3f}); a compact cell's piece (the record "
            f"gzipped, the summary row, the tallies, the coverage) {cell:,.0f}/s ({cell / sk:.3f}), "
            f"{1e6 / cell - 1e6 / spine_whole:.0f} us a case more"
        )
        targets.append(Target("simulate + check, lost_response, one core", spine_check / sk, 1 / 3, "min", "ratio"))
        judge_us, record_us, timeline_us = floor_costs(spine)
        skeleton_us = 1e6 / sk
        print(
            f"{SCENARIO}: parts every case pays, in skeleton cases of {skeleton_us:.1f} us (simpy itself is 1; "
            f"a ratio of 1/3 leaves 3 for everything): the checker alone {judge_us / skeleton_us:.2f}, building and "
            f"stamping the history's records alone {record_us / skeleton_us:.2f}, the timeline entries alone "
            f"{timeline_us / skeleton_us:.2f}"
        )

        (look_small, look_large), (check_small, check_large) = growth(work)
        print(
            f"a case ten times longer: {POLICY} facing 100 then 1,000 unanswered lookups {look_small:.1f} -> "
            f"{look_large:.1f} ms (x{look_large / look_small:.1f}); the checker after 100 then 1,000 claimed "
            f"retries {check_small:.1f} -> {check_large:.1f} ms (x{check_large / check_small:.1f}); linear is x10"
        )
        targets.append(Target("growth of a case 10 times longer (lookups)", look_large / look_small, 15, "max", "x"))
        targets.append(
            Target("growth of the checker 10 times longer (retries)", check_large / check_small, 15, "max", "x")
        )

        n_small, n_large = max(1, args.sweep // 10), args.sweep
        small_rate, small_mem = sweep(n_small, 2, work / "small")
        large_rate, large_mem = sweep(n_large, 2, work / "large")
        one_rate, _ = sweep(n_large, 1, work / "one")
        yard.time()
        sk = yard.median
        print(f"\nharness run --policy {POLICY} --scenario {SCENARIO} --tracking none --no-report, start-up included:")
        for n, r, m in ((n_small, small_rate, small_mem), (n_large, large_rate, large_mem)):
            print(f"  --seed-count {n:>9,} --concurrency 2: {r:>8,.0f} cases/s, peak memory {m:,.0f} MiB")
        print(f"  --seed-count {n_large:>9,} --concurrency 1: {one_rate:>8,.0f} cases/s")
        load_s, load_peak, frame_size = load_cost(work / "large", n_large)
        print(
            f"  load() of its {n_large:,} cases (what harness report and a notebook read): {load_s:.1f} s, peak "
            f"{load_peak:,.0f} bytes a case over the process's start; the frame {frame_size:,.0f} by pandas' deep "
            "count (which counts a name shared by every row once a row)"
        )
        targets.append(Target(f"harness run of {n_large:,} cases, 2 processes", large_rate / sk, 0.5, "min", "ratio"))
        targets.append(Target(f"peak memory {n_large:,} / {n_small:,} cases", large_mem / small_mem, 1.10, "max", "x"))
        targets.append(Target("speedup of --concurrency 2 over 1", large_rate / one_rate, 1.8, "min", "x"))

        small_cell, large_cell = tracking_cost(5, work / "plx")
        print(f"\noffline Polyaxon tracking per cell: {small_cell:.3f} s for 3 seeds, {large_cell:.3f} s for 100,000")
        targets.append(Target("tracking per cell, 100,000 seeds / 3 seeds", large_cell / small_cell, 1.5, "max", "x"))

        per_picture = picture_ms()
        grid_s = default_grid_s(work / "grid")
        drawn = sum(1 for _ in (work / "grid").rglob("timeline.png"))
        print(f"\na timeline.png, drawn and encoded: {per_picture:.0f} ms (the default grid drew {drawn})")
        print(f"python -m harness run (the default grid, the README's first command): {grid_s:.1f} s")

        listing = startup(["list"])
        print(f"\npython -m harness list: {listing:.2f} s (best of 3)")
        targets.append(Target("harness list start-up (s)", listing, 0.5, "max", "s"))

    print(f"\nskeleton over the run: {', '.join(f'{r:,.0f}' for r in yard.rates)} cases/s (median {yard.median:,.0f})")
    print("\ntarget                                               figure    goal   met")
    for t in targets:
        sign = ">=" if t.kind == "min" else "<="
        print(f"{t.name:<50} {t.figure:>8.3f}  {sign}{t.goal:.2f}  {'yes' if t.met else 'NO'}")
    print(f"\n{sum(t.met for t in targets)} of {len(targets)} targets met")


if __name__ == "__main__":
    main()
