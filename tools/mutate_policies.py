"""Mutate the safe shipped policies and ask which one-change mutants the shipped scenarios let pass.

    python tools/mutate_policies.py [--explore-depth K] [--jobs N] [--keep]

Needs mutmut (``pip install -e '.[dev,mutation]'``). In a copy of the project's tracked files (this tree is left
alone), mutmut mutates ``policies/reconcile_and_reauthorize.py``, ``follow_and_inspect.py`` and
``verify_before_mutation.py``. A mutant is killed when a safe policy, in some shipped case (every scenario and
variant, seeds 1-3), is judged neither correct nor escalated, or breaks a property. Each survivor is then run
over the same cases beside the unmutated policies, and sorted by what changed:

- ``same``: the evidence is identical in every case (an equivalent mutant, or one on a path no case takes);
- ``wording``: only the text of a reason or a detail differs;
- ``behaviour``: it acts otherwise and is judged clean. The change summed over the cases of the measures
  ``task_completed``, ``executor_finished``, ``dispatches``, ``reads`` and ``escalations`` is printed: fewer
  completions with more escalations is a more cautious policy, not an unsafe one; more dispatches is worth a
  look.

With ``--explore-depth K`` (1 unless 0 is given), every survivor but the ``wording`` ones is explored in process
from every shipped case at that depth (no swarm, seed 1), and the first finding is printed: a mutant that the
shipped cases let pass and exploration catches is a schedule no shipped scenario has yet. Prints one line per
survivor, then the counts. Exit status: 0; 1 when mutmut or a share of the survivors failed; 2 bad usage or
no mutmut.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAFE = ("reconcile_and_reauthorize", "follow_and_inspect", "verify_before_mutation")
SEEDS = (1, 2, 3)
MEASURES = ("task_completed", "executor_finished", "dispatches", "reads", "escalations")
#: Texts that explain and decide nothing: the ``reason`` or ``detail`` of an entry or a command.
WORDING = re.compile(r"""\b(reason|detail)=('[^']*'|"[^"]*"|None)""")
#: The ``[tool.mutmut]`` table, up to the next table or the comment lines just before it.
MUTMUT_TABLE = re.compile(r"^\[tool\.mutmut\]\s*$.*?(?=^(?:#[^\n]*\n)*\[|\Z)", re.M | re.S)

MUTMUT_SECTION = """[tool.mutmut]
source_paths = ["harness", "policies"]
only_mutate = [{files}]
also_copy = ["scenarios/", "polyaxonfiles/", "reports/", "benchmarks/", "tools/", "README.md"]
pytest_add_cli_args = ["-p", "no:cacheprovider"]
pytest_add_cli_args_test_selection = ["tests/test_safe_policies_judged.py"]
"""

JUDGED_TEST = f'''"""Written by tools/mutate_policies.py: every safe policy is judged clean in every shipped case."""

import pytest

from harness.check import check
from harness.policy import load_policy
from harness.scenario import list_scenarios, scenario_cases
from harness.sim import simulate

CASES = {{spec: scenario for name in list_scenarios() for spec, scenario in scenario_cases(name)}}


@pytest.mark.parametrize("policy", {SAFE!r})
def test_judged_clean(policy: str) -> None:
    p = load_policy(policy)
    for spec, scenario in CASES.items():
        for seed in {SEEDS!r}:
            j = check(simulate(scenario, p, seed).evidence)
            broken = sorted(k for k, v in j.checks.items() if v == "false")
            assert j.outcome in ("correct", "escalated") and not broken, (spec, seed, j.outcome, broken)
'''


def prepare(copy: Path) -> None:
    """The tracked files, with mutmut set to mutate the safe policies and to ask the judged test only."""
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in tracked.decode().split("\0"):
        if name and (ROOT / name).is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, copy / name)
    pyproject = (copy / "pyproject.toml").read_text(encoding="utf-8")
    files = ", ".join(f'"policies/{p}.py"' for p in SAFE)
    pyproject, found = MUTMUT_TABLE.subn(lambda _: MUTMUT_SECTION.format(files=files) + "\n", pyproject, count=1)
    if not found:
        raise SystemExit("mutate_policies: pyproject.toml has no [tool.mutmut] table; fix: restore it from git")
    (copy / "pyproject.toml").write_text(pyproject, encoding="utf-8")
    (copy / "tests" / "test_safe_policies_judged.py").write_text(JUDGED_TEST, encoding="utf-8")


def survivors(copy: Path, mutmut: str) -> tuple[list[str], dict[str, int]]:
    """The surviving mutants' names, and how many mutants ended each way."""
    done = subprocess.run([mutmut, "results", "--all", "true"], cwd=copy, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"mutate_policies: `mutmut results` failed: {done.stderr.strip()[-500:]}")
    listed = done.stdout
    status: dict[str, int] = {}
    names = []
    for line in listed.splitlines():
        name, sep, how = line.strip().rpartition(": ")
        if not sep:
            continue
        status[how] = status.get(how, 0) + 1
        if how == "survived":
            names.append(name)
    return names, status


# -- inside the mutants folder, one process per share of the survivors ----------------------------------------


def inside(names: list[str], depth: int) -> None:
    """For each mutant: its kind, the change in the measures, and exploration's first finding (JSON lines)."""
    sys.path.insert(0, os.getcwd())  # the mutated copy, not this tree
    os.environ["MUTANT_UNDER_TEST"] = ""
    from harness.check import check
    from harness.explore.search import ExploreJob, explore_job
    from harness.policy import load_policy
    from harness.scenario import list_scenarios, scenario_cases
    from harness.sim import simulate

    cases = {spec: scenario for name in list_scenarios() for spec, scenario in scenario_cases(name)}
    policies = {name: load_policy(name) for name in SAFE}

    def run() -> dict[tuple[str, str, int], tuple[str, dict[str, object]]]:
        seen = {}
        for pname, policy in policies.items():
            for spec, scenario in cases.items():
                for seed in SEEDS:
                    evidence = simulate(scenario, policy, seed).evidence
                    metrics = check(evidence).metrics
                    seen[(pname, spec, seed)] = (repr(evidence.history), {m: metrics.get(m) for m in MEASURES})
        return seen

    original = run()
    for name in names:
        os.environ["MUTANT_UNDER_TEST"] = name
        mutated = run()
        differ = [k for k in original if mutated[k][0] != original[k][0]]
        acts = [k for k in differ if WORDING.sub("", mutated[k][0]) != WORDING.sub("", original[k][0])]
        kind = "same" if not differ else "wording" if not acts else "behaviour"
        change = {m: sum(_number(mutated[k][1][m]) - _number(original[k][1][m]) for k in acts) for m in MEASURES}
        finding = None
        if depth and kind != "wording":
            # A mutant of reconcile_and_reauthorize is one of all three (the others inherit it).
            explored = SAFE if ".reconcile_and_reauthorize." in name else tuple(p for p in SAFE if f".{p}." in name)
            for spec in cases:
                found = explore_job(ExploreJob(explored, spec, depth, 0, (1,))).findings
                if found:
                    finding = f"{found[0].policy} from {spec}: {', '.join(found[0].properties)}"
                    break
        print(json.dumps({"mutant": name, "kind": kind, "cases": len(acts), "change": change, "found": finding}))
        sys.stdout.flush()
        print(f"  {kind:<9} {name}" + (f": {finding}" if finding else ""), file=sys.stderr)  # progress
    os.environ["MUTANT_UNDER_TEST"] = ""


def _number(value: object) -> float:
    return float(value) if isinstance(value, (int, float)) else 0.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--explore-depth", type=int, default=1, metavar="K", help="0: do not explore survivors")
    parser.add_argument("--jobs", type=int, default=2, metavar="N", help="processes for mutmut and the survivors")
    parser.add_argument("--keep", action="store_true", help="keep the mutated copy and print where it is")
    parser.add_argument("--inside", metavar="FILE", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.inside:
        inside(Path(args.inside).read_text(encoding="utf-8").split(), args.explore_depth)
        return 0
    if args.explore_depth < 0 or args.jobs < 1:
        parser.error("--explore-depth must be 0 or more and --jobs 1 or more")
    mutmut = shutil.which("mutmut", path=str(Path(sys.executable).parent)) or shutil.which("mutmut")
    if mutmut is None:
        print("mutate_policies: mutmut is not installed; fix: pip install -e '.[dev,mutation]'", file=sys.stderr)
        return 2
    copy = Path(tempfile.mkdtemp(prefix="mutate-policies-"))
    try:
        prepare(copy)
        print(f"mutating {', '.join(SAFE)} in {copy} ...", file=sys.stderr)
        run = subprocess.run([mutmut, "run", "--max-children", str(args.jobs)], cwd=copy, stdout=subprocess.DEVNULL)
        if run.returncode != 0:
            print(f"mutate_policies: `mutmut run` failed (exit {run.returncode}); see above", file=sys.stderr)
            return 1
        names, status = survivors(copy, mutmut)
        print(f"{sum(status.values())} mutants: " + ", ".join(f"{n} {how}" for how, n in sorted(status.items())))
        shares = []
        for j in range(args.jobs):
            share = copy / f"survivors-{j}.txt"
            share.write_text("\n".join(names[j :: args.jobs]), encoding="utf-8")
            command = [sys.executable, str(Path(__file__).resolve()), "--inside", str(share)]
            command += ["--explore-depth", str(args.explore_depth)]
            shares.append(subprocess.Popen(command, cwd=copy / "mutants", stdout=subprocess.PIPE, text=True))
        outputs = [p.communicate()[0] for p in shares]
        rows = [json.loads(line) for out in outputs for line in out.splitlines() if line.startswith("{")]
        if any(p.returncode != 0 for p in shares) or len(rows) != len(names):
            print(
                f"mutate_policies: {len(names) - len(rows)} of {len(names)} survivors were not run over the cases "
                "(a share's process failed; see above)",
                file=sys.stderr,
            )
            return 1
        rows.sort(key=lambda r: r["mutant"])
        for r in rows:
            change = " ".join(f"{m} {v:+g}" for m, v in r["change"].items() if v)
            found = f"  explored: {r['found']}" if r["found"] else ""
            print(f"{r['kind']:<9} {r['mutant']}  {r['cases']} cases  {change}{found}")
        kinds = {k: sum(r["kind"] == k for r in rows) for k in ("same", "wording", "behaviour")}
        print(f"{len(rows)} survivors: " + ", ".join(f"{n} {k}" for k, n in kinds.items()), end="")
        if args.explore_depth:
            print(f"; exploration at depth {args.explore_depth} catches {sum(bool(r['found']) for r in rows)}")
        else:
            print()
        return 0
    finally:
        if args.keep:
            print(f"the mutated copy: {copy}", file=sys.stderr)
        else:
            shutil.rmtree(copy, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
