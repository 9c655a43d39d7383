"""What a run is asked to do: the cells (policy x scenario) and their seeds, loaded and checked up front.

Everything a grid needs is loaded and validated before the first case runs, so bad input fails before
anything is written. The cells come from the command line, or from the grid polyaxonfile's matrix.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.errors import InputError
from harness.policy import Policy, PolicyError, builtin_policy_names, load_policy
from harness.scenario import (
    SAFE_NAME,
    VARIANT,
    Scenario,
    is_scenario_path,
    list_scenarios,
    scenario_cases,
)
from harness.seeds import DEFAULT_SEEDS

__all__ = [
    "Case",
    "Cell",
    "Grid",
    "Plan",
    "UsageError",
    "budget_option",
    "load_grid",
    "plan_cells",
    "reproduce_command",
]


class UsageError(InputError):
    """Options that cannot work together, or a folder that is not a run; one line with the fix."""


@dataclass(frozen=True, slots=True)
class Case:
    """One cell of the grid at one seed, with the specs it was asked for by (for the reproduce command)."""

    policy_spec: str
    scenario_spec: str
    seed: int
    policy: Policy
    scenario: Scenario


@dataclass(frozen=True, slots=True)
class Grid:
    cases: tuple[Case, ...]
    policies: tuple[str, ...]
    scenarios: tuple[str, ...]
    seeds: Sequence[int]


def load_grid(policy_specs: Sequence[str], scenario_specs: Sequence[str], seeds: Sequence[int]) -> Grid:
    """Load every policy and scenario, check names, and expand the grid; raise on the first bad input."""
    policies = {spec: load_policy(spec) for spec in dict.fromkeys(policy_specs)}
    for spec, policy in policies.items():
        if not re.fullmatch(SAFE_NAME, policy.name):  # whole: "$" also matches before a final newline
            raise PolicyError(
                f"policy '{spec}': name '{policy.name}' is not safe for file and run names; "
                "fix: use 1 to 64 lower case letters, digits, '_' or '-', starting with a letter or digit"
            )
    scenarios = {
        case_spec: scenario for spec in dict.fromkeys(scenario_specs) for case_spec, scenario in scenario_cases(spec)
    }
    _unique("policy", {s: p.name for s, p in policies.items()})
    _unique("scenario", {s: sc.name for s, sc in scenarios.items()})
    seeds = seeds if isinstance(seeds, range) else tuple(dict.fromkeys(seeds))
    cases = tuple(
        Case(p_spec, s_spec, seed, policy, scenario)
        for p_spec, policy in policies.items()
        for s_spec, scenario in scenarios.items()
        for seed in seeds
    )
    return Grid(
        cases=cases,
        policies=tuple(p.name for p in policies.values()),
        scenarios=tuple(s.name for s in scenarios.values()),
        seeds=seeds,
    )


def _unique(what: str, names: dict[str, str]) -> None:
    seen: dict[str, str] = {}
    for spec, name in names.items():
        if name in seen:
            raise PolicyError(
                f"{what} '{spec}' and '{seen[name]}' are both named '{name}'; fix: give one of them another name"
            )
        seen[name] = spec


def budget_option(case_timeout_s: float | None) -> str:
    """`` --case-timeout <seconds>`` for a reproduce command (nothing without a budget), the seconds exactly as
    given: ``:g`` keeps six digits, and a budget of 12345.67 was run again as 12345.7."""
    if not case_timeout_s:
        return ""
    shown = f"{case_timeout_s:g}"
    return f" --case-timeout {shown if float(shown) == case_timeout_s else repr(float(case_timeout_s))}"


def reproduce_command(case: Case, case_timeout_s: float | None = None) -> str:
    """The exact command that re-runs this one case; with ``case_timeout_s``, under that wall-clock budget (for a
    case that failed by running over it, so that the command fails the same way, as soon)."""
    return (
        f"python -m harness run --policy {shlex.quote(case.policy_spec)} "
        f"--scenario {shlex.quote(case.scenario_spec)} --seed {case.seed}{budget_option(case_timeout_s)}"
    )


def absolute(spec: str) -> str:
    """A scenario given as a path, made absolute: the run's manifest and every case's reproduce command keep it, and
    a resume or a replay from another folder must find the same file. A shipped name stays a name."""
    base, sep, variant = spec.rpartition(VARIANT) if VARIANT in spec else (spec, "", "")
    if not is_scenario_path(base):
        return spec
    return os.path.abspath(base) + sep + variant  # absolute, with its ./ and ../ taken away


@dataclass(frozen=True, slots=True)
class Cell:
    """One policy x scenario cell, as asked for (specs, not loaded objects), with its seeds (a ``range`` for
    ``--seed-count``, so a million seeds cost nothing to hold)."""

    policy_spec: str
    scenario_spec: str
    seeds: Sequence[int]


@dataclass(frozen=True, slots=True)
class Plan:
    cells: tuple[Cell, ...]
    concurrency: int


def plan_cells(
    policies: Sequence[str] | None,
    scenarios: Sequence[str] | None,
    seeds: Sequence[int] | None,
    polyaxonfile: Path | None,
    concurrency: int | None,
) -> Plan:
    """Which cells to run with which seeds: from the given policies and scenarios, or from the grid
    polyaxonfile (``polyaxonfiles/grid.yaml`` when nothing else is given)."""
    if policies or scenarios:
        if polyaxonfile:
            raise UsageError("give either --polyaxonfile or --policy/--scenario, not both; fix: drop one")
        chosen = seeds if isinstance(seeds, range) else tuple(dict.fromkeys(seeds or DEFAULT_SEEDS))
        cells = tuple(
            Cell(p, s, chosen)
            for p in dict.fromkeys(policies or builtin_policy_names())
            for s in dict.fromkeys(absolute(spec) for spec in scenarios or list_scenarios())
        )
        return Plan(cells, concurrency or 1)
    # Polyaxon costs about a second to import: only when the grid file is read.
    from harness.plx.plxfile import GridFileError, default_grid_file, load_grid_file

    grid = load_grid_file(polyaxonfile or default_grid_file())
    out = []
    first: dict[tuple[str, str], dict[str, object]] = {}
    for params in grid.cells:
        count = params.get("seed_count")
        cell_seeds = seeds if seeds else (range(1, int(count) + 1) if count else DEFAULT_SEEDS)
        cell = Cell(str(params["policy"]), absolute(str(params["scenario"])), cell_seeds)
        earlier = first.setdefault((cell.policy_spec, cell.scenario_spec), params)
        if earlier is not params:
            # A run's cell is its policy and scenario: cells that differ only in what a run does not read (an
            # exploration's shard, say) would run the same cases twice and count them twice.
            others = sorted(k for k in params if k not in ("policy", "scenario") and params[k] != earlier[k])
            why = (
                f" (they differ only in {', '.join(others)}; a run's cell is a policy and a scenario, so both would "
                "write the same cases and count them twice)"
                if others
                else ""
            )
            raise GridFileError(
                f"{grid.path}: field 'matrix.params': the cell {cell.policy_spec} x {cell.scenario_spec} comes "
                f"more than once{why}; fix: give each policy and scenario once, or run the file with the command "
                "it is written for"
            )
        out.append(cell)
    _check_names(grid.path, out, grid.matrixed)
    return Plan(tuple(out), concurrency or grid.concurrency)


def _check_names(path: Path, cells: Sequence[Cell], matrixed: Sequence[str]) -> None:
    """Each policy and scenario a grid file names exists, said with the file and the field (the error from loading
    the cell later named neither)."""
    from harness.plx.plxfile import GridFileError

    for field, specs, load in (
        ("policy", {c.policy_spec for c in cells}, load_policy),
        ("scenario", {c.scenario_spec for c in cells}, scenario_cases),
    ):
        for spec in sorted(specs):
            try:
                load(spec)
            except InputError as exc:
                where = "matrix.params" if field in matrixed else "params"
                raise GridFileError(f"{path}: field '{where}.{field}': {exc}") from exc
