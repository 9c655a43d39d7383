"""Grid planning, pinned exactly: which cells and seeds a run runs, the reproduce command, and the grid file's
one-line errors (the thirty-third mutation pass, on harness/run/plan.py and harness/plx/plxfile.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness.plx.plxfile import GridFileError, _check_seed_count, _shortened, default_grid_file, load_grid_file
from harness.policy import PolicyError, builtin_policy_names
from harness.run.plan import Cell, UsageError, absolute, budget_option, load_grid, plan_cells, reproduce_command
from harness.scenario import list_scenarios

ROOT = Path(__file__).resolve().parent.parent
FILES = ROOT / "polyaxonfiles"
POLICIES = (
    "stop_on_timeout, retry_same_key, reconcile_and_reauthorize, retry_new_key, follow_and_inspect,\n"
    "              verify_before_mutation"
)


def grid_file(tmp_path: Path, *edits: tuple[str, str]) -> Path:
    (tmp_path / "component.yaml").write_text((FILES / "component.yaml").read_text())
    text = (FILES / "grid.yaml").read_text()
    for old, new in edits:
        assert old in text
        text = text.replace(old, new)
    path = tmp_path / "grid.yaml"
    path.write_text(text)
    return path


def small(tmp_path: Path, policies: str, scenarios: str, *edits: tuple[str, str]) -> Path:
    """The shipped grid file with its matrix cut to the given lists."""
    text = (FILES / "grid.yaml").read_text()
    start = text.index("    scenario:\n")
    end = text.index("params:\n  seed_count")
    return grid_file(
        tmp_path,
        (text[start:end], f"    scenario:\n      kind: choice\n      value: [{scenarios}]\n"),
        (POLICIES, policies),
        *edits,
    )


def error(exc: pytest.ExceptionInfo[BaseException]) -> str:
    return str(exc.value)


# -- load_grid and _unique -------------------------------------------------------------------------------------


def test_load_grid_expands_policies_scenarios_and_seeds_in_order_once_each() -> None:
    grid = load_grid(
        ["retry_new_key", "stop_on_timeout", "retry_new_key"],
        ["lost_response", "request_lost", "lost_response"],
        [3, 1, 3],
    )
    assert [(c.policy_spec, c.scenario_spec, c.seed, c.policy.name, c.scenario.name) for c in grid.cases] == [
        ("retry_new_key", "lost_response", 3, "retry_new_key", "lost_response"),
        ("retry_new_key", "lost_response", 1, "retry_new_key", "lost_response"),
        ("retry_new_key", "request_lost", 3, "retry_new_key", "request_lost"),
        ("retry_new_key", "request_lost", 1, "retry_new_key", "request_lost"),
        ("stop_on_timeout", "lost_response", 3, "stop_on_timeout", "lost_response"),
        ("stop_on_timeout", "lost_response", 1, "stop_on_timeout", "lost_response"),
        ("stop_on_timeout", "request_lost", 3, "stop_on_timeout", "request_lost"),
        ("stop_on_timeout", "request_lost", 1, "stop_on_timeout", "request_lost"),
    ]
    assert grid.policies == ("retry_new_key", "stop_on_timeout")
    assert grid.scenarios == ("lost_response", "request_lost")
    assert grid.seeds == (3, 1)


def test_load_grid_keeps_a_range_of_seeds_as_it_is() -> None:
    seeds = range(4, 7)
    grid = load_grid(["stop_on_timeout"], ["lost_response"], seeds)
    assert grid.seeds is seeds
    assert [c.seed for c in grid.cases] == [4, 5, 6]


def test_load_grid_expands_a_scenario_into_its_cases() -> None:
    grid = load_grid(["stop_on_timeout"], ["connector_crash_points"], [2])
    specs = [c.scenario_spec for c in grid.cases]
    assert len(specs) > 1 and all(s.startswith("connector_crash_points@") for s in specs)
    assert grid.scenarios == tuple(c.scenario.name for c in grid.cases)
    assert [c.seed for c in grid.cases] == [2] * len(specs)


def test_two_policies_of_one_name_are_refused_naming_both() -> None:
    with pytest.raises(PolicyError) as info:
        load_grid(["stop_on_timeout", "policies.stop_on_timeout:POLICY"], ["lost_response"], [1])
    assert error(info) == (
        "policy 'policies.stop_on_timeout:POLICY' and 'stop_on_timeout' are both named 'stop_on_timeout'; "
        "fix: give one of them another name"
    )


def test_two_scenarios_of_one_name_are_refused_naming_both() -> None:
    path = str(ROOT / "scenarios" / "lost_response.yaml")
    with pytest.raises(PolicyError) as info:
        load_grid(["stop_on_timeout"], ["lost_response", path], [1])
    assert error(info) == (
        f"scenario '{path}' and 'lost_response' are both named 'lost_response'; fix: give one of them another name"
    )


@pytest.mark.parametrize("name", ["Bad", "a b", "-lead", "x" * 65, "mine\n"])
def test_a_policy_whose_name_is_not_safe_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    module = f"odd_named_policy_{len(name)}_{ord(name[1])}"
    (tmp_path / f"{module}.py").write_text(
        "from policies.stop_on_timeout import StopOnTimeout\n\n\n"
        f"class Odd(StopOnTimeout):\n    name = {name!r}\n\n\nPOLICY = Odd()\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(PolicyError) as info:
        load_grid([f"{module}:POLICY"], ["lost_response"], [1])
    assert error(info) == (
        f"policy '{module}:POLICY': name '{name}' is not safe for file and run names; "
        "fix: use 1 to 64 lower case letters, digits, '_' or '-', starting with a letter or digit"
    )


def test_a_safe_user_policy_name_is_taken(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "fine_named_policy.py").write_text(
        "from policies.stop_on_timeout import StopOnTimeout\n\n\n"
        "class Fine(StopOnTimeout):\n    name = 'fine-1_x'\n\n\nPOLICY = Fine()\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert load_grid(["fine_named_policy:POLICY"], ["lost_response"], [1]).policies == ("fine-1_x",)


# -- reproduce_command and absolute ------------------------------------------------------------------------------


def test_the_reproduce_command_is_exact() -> None:
    (case,) = load_grid(["retry_new_key"], ["lost_response"], [7]).cases
    assert reproduce_command(case) == "python -m harness run --policy retry_new_key --scenario lost_response --seed 7"
    assert reproduce_command(case, 0) == reproduce_command(case, None) == reproduce_command(case)
    assert reproduce_command(case, 2.5) == (
        "python -m harness run --policy retry_new_key --scenario lost_response --seed 7 --case-timeout 2.5"
    )
    assert reproduce_command(case, 30.0).endswith(" --seed 7 --case-timeout 30")


def test_the_reproduce_command_quotes_what_the_shell_would_split(tmp_path: Path) -> None:
    folder = tmp_path / "my scenarios"
    folder.mkdir()
    path = folder / "lost_response.yaml"
    path.write_text((ROOT / "scenarios" / "lost_response.yaml").read_text())
    (case,) = load_grid(["policies.retry_new_key:POLICY"], [str(path)], [12]).cases
    assert reproduce_command(case) == (
        f"python -m harness run --policy policies.retry_new_key:POLICY --scenario '{path}' --seed 12"
    )


def test_absolute_makes_a_path_absolute_and_leaves_a_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    here = os.getcwd()
    assert absolute("lost_response") == "lost_response"
    assert absolute("connector_crash_points@after_effect") == "connector_crash_points@after_effect"
    assert absolute("x.yaml") == f"{here}/x.yaml"
    assert absolute("x.yml") == f"{here}/x.yml"
    assert absolute("d/x") == f"{here}/d/x"
    assert absolute("d/x.yaml@after_effect") == f"{here}/d/x.yaml@after_effect"
    assert absolute("x.yaml@v") == f"{here}/x.yaml@v"
    assert absolute("/abs/x.yaml@v") == "/abs/x.yaml@v"
    # The variant is what follows the last '@': the part before it is the path.
    assert absolute("a@b/c@d") == f"{here}/a@b/c@d"
    assert absolute("name@v.yaml") == "name@v.yaml"


# -- plan_cells from the command line ----------------------------------------------------------------------------


def test_cells_from_the_command_line_are_each_policy_by_each_scenario_once() -> None:
    plan = plan_cells(["retry_new_key", "stop_on_timeout", "retry_new_key"], ["request_lost", "lost_response",
                      "request_lost"], [5, 2, 5], None, None)  # fmt: skip
    assert plan.cells == (
        Cell("retry_new_key", "request_lost", (5, 2)),
        Cell("retry_new_key", "lost_response", (5, 2)),
        Cell("stop_on_timeout", "request_lost", (5, 2)),
        Cell("stop_on_timeout", "lost_response", (5, 2)),
    )
    assert plan.concurrency == 1
    assert plan_cells(["retry_new_key"], ["lost_response"], [1], None, 4).concurrency == 4


def test_cells_from_the_command_line_default_their_seeds_policies_and_scenarios() -> None:
    assert plan_cells(["retry_new_key"], ["lost_response"], None, None, None).cells == (
        Cell("retry_new_key", "lost_response", (1, 2, 3)),
    )
    assert plan_cells(["retry_new_key"], ["lost_response"], [], None, None).cells == (
        Cell("retry_new_key", "lost_response", (1, 2, 3)),
    )
    seeds = range(1, 1_000_001)
    (cell,) = plan_cells(["retry_new_key"], ["lost_response"], seeds, None, None).cells
    assert cell.seeds is seeds
    by_policy = plan_cells(None, ["lost_response"], [1], None, None)
    assert by_policy.cells == tuple(Cell(p, "lost_response", (1,)) for p in builtin_policy_names())
    by_scenario = plan_cells(["retry_new_key"], None, [1], None, None)
    assert by_scenario.cells == tuple(Cell("retry_new_key", s, (1,)) for s in list_scenarios())


def test_cells_from_the_command_line_make_a_scenario_path_absolute_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    plan = plan_cells(["retry_new_key"], ["s.yaml", "./s.yaml", "lost_response"], [1], None, None)
    assert plan.cells == (
        Cell("retry_new_key", f"{tmp_path}/s.yaml", (1,)),
        Cell("retry_new_key", "lost_response", (1,)),
    )


def test_a_grid_file_with_policies_or_scenarios_is_refused_in_one_line(tmp_path: Path) -> None:
    for policies, scenarios in ((["retry_new_key"], None), (None, ["lost_response"])):
        with pytest.raises(UsageError) as info:
            plan_cells(policies, scenarios, None, tmp_path / "grid.yaml", None)
        assert error(info) == "give either --polyaxonfile or --policy/--scenario, not both; fix: drop one"


# -- plan_cells from the grid file -------------------------------------------------------------------------------


def test_the_default_grid_is_every_policy_by_every_scenario_at_three_seeds() -> None:
    plan = plan_cells(None, None, None, None, None)
    assert plan.cells == tuple(
        Cell(p, s, range(1, 4))
        for p in ("stop_on_timeout", "retry_same_key", "reconcile_and_reauthorize", "retry_new_key",
                  "follow_and_inspect", "verify_before_mutation")
        for s in list_scenarios()
    )  # fmt: skip
    assert plan.concurrency == 2
    assert plan_cells(None, None, None, None, 5).concurrency == 5
    assert plan_cells(None, None, [9, 4], None, None).cells[0] == Cell("stop_on_timeout", list_scenarios()[0], [9, 4])
    assert default_grid_file() == FILES / "grid.yaml"


def test_a_grid_file_without_a_seed_count_runs_the_default_seeds(tmp_path: Path) -> None:
    path = small(
        tmp_path, "retry_new_key, stop_on_timeout", "lost_response", ("params:\n  seed_count: {value: 3}\n", "")
    )
    component = tmp_path / "component.yaml"
    component.write_text(component.read_text().replace("type: int, value: 3, isOptional", "type: int, isOptional"))
    assert [c["seed_count"] for c in load_grid_file(path).cells] == [None, None]
    plan = plan_cells(None, None, None, path, None)
    assert plan.cells == (
        Cell("retry_new_key", "lost_response", (1, 2, 3)),
        Cell("stop_on_timeout", "lost_response", (1, 2, 3)),
    )
    assert plan.concurrency == 2


def test_a_grid_files_seed_count_is_seeds_one_to_it(tmp_path: Path) -> None:
    path = small(tmp_path, "retry_new_key", "lost_response", ("seed_count: {value: 3}", "seed_count: {value: 1}"),
                 ("concurrency: 2", "concurrency: 7"))  # fmt: skip
    plan = plan_cells(None, None, None, path, None)
    assert plan.cells == (Cell("retry_new_key", "lost_response", range(1, 2)),)
    assert plan.concurrency == 7
    assert list(plan.cells[0].seeds) == [1]


def test_a_grid_files_scenario_path_is_made_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    scenario = ROOT / "scenarios" / "lost_response.yaml"
    monkeypatch.chdir(ROOT)
    path = small(tmp_path, "retry_new_key", "scenarios/lost_response.yaml")
    assert plan_cells(None, None, None, path, None).cells == (Cell("retry_new_key", str(scenario), range(1, 4)),)


def test_a_cell_twice_in_a_grid_file_is_refused_without_a_reason_when_nothing_differs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    path = small(tmp_path, "retry_new_key", "scenarios/lost_response.yaml, ./scenarios/lost_response.yaml")
    with pytest.raises(GridFileError) as info:
        plan_cells(None, None, None, path, None)
    assert error(info) == (
        f"{path}: field 'matrix.params': the cell retry_new_key x {ROOT}/scenarios/lost_response.yaml comes more than "
        "once; fix: give each policy and scenario once, or run the file with the command it is written for"
    )


def test_cells_that_differ_in_seed_count_are_refused_naming_it_exactly(tmp_path: Path) -> None:
    path = small(tmp_path, "retry_new_key", "lost_response", ("params:\n  seed_count: {value: 3}\n", ""),
                 ("    scenario:\n", "    seed_count: {kind: choice, value: [2, 5]}\n    scenario:\n"))  # fmt: skip
    with pytest.raises(GridFileError) as info:
        plan_cells(None, None, None, path, None)
    assert error(info) == (
        f"{path}: field 'matrix.params': the cell retry_new_key x lost_response comes more than once (they differ "
        "only in seed_count; a run's cell is a policy and a scenario, so both would write the same cases and count "
        "them twice); fix: give each policy and scenario once, or run the file with the command it is written for"
    )


def test_an_unknown_fixed_policy_names_the_params_field(tmp_path: Path) -> None:
    text = (FILES / "grid.yaml").read_text()
    start = text.index("    policy:\n")
    end = text.index("    scenario:\n")
    path = grid_file(tmp_path, (text[start:end], ""), ("  seed_count: {value: 3}\n", "  seed_count: {value: 3}\n"
                     "  policy: {value: nope_policy}\n"))  # fmt: skip
    with pytest.raises(GridFileError) as info:
        plan_cells(None, None, None, path, None)
    assert error(info) == (
        f"{path}: field 'params.policy': unknown policy 'nope_policy'; fix: use one of "
        f"{', '.join(builtin_policy_names())}, or package.module:attr"
    )


def test_an_unknown_scenario_in_a_grid_file_is_found_after_the_policies(tmp_path: Path) -> None:
    path = small(tmp_path, "retry_new_key", "lost_response, nope_b, nope_a")
    with pytest.raises(GridFileError) as info:
        plan_cells(None, None, None, path, None)
    assert error(info).startswith(f"{path}: field 'matrix.params.scenario': unknown scenario 'nope_a'")


# -- load_grid_file ----------------------------------------------------------------------------------------------


def test_a_grid_file_that_is_not_there_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(GridFileError) as info:
        load_grid_file(str(tmp_path / "none.yaml"))
    assert error(info) == f"{tmp_path}/none.yaml: no such file; fix: check the path"
    with pytest.raises(GridFileError) as info:
        load_grid_file(tmp_path)
    assert error(info) == f"{tmp_path}: no such file; fix: check the path"


def test_a_grid_file_read_gives_its_cells_inputs_and_matrixed_params(tmp_path: Path) -> None:
    path = small(tmp_path, "retry_new_key, stop_on_timeout", "lost_response, request_lost")
    grid = load_grid_file(str(path))
    assert grid.path == path
    assert grid.cells == tuple(
        {"policy": p, "scenario": s, "seed_count": 3}
        for p in ("retry_new_key", "stop_on_timeout")
        for s in ("lost_response", "request_lost")
    )
    assert grid.concurrency == 2
    assert grid.inputs == ("policy", "scenario", "seed_count")
    assert grid.matrixed == ("policy", "scenario")


def test_a_grid_file_without_concurrency_runs_one_at_a_time(tmp_path: Path) -> None:
    path = small(tmp_path, "retry_new_key", "lost_response", ("  concurrency: 2\n", ""))
    assert load_grid_file(path).concurrency == 1


def test_a_grid_file_that_polyaxon_rejects_is_one_line(tmp_path: Path) -> None:
    path = small(tmp_path, "retry_new_key", "lost_response", ("concurrency: 2", "concurrency: two"))
    with pytest.raises(GridFileError) as info:
        load_grid_file(path)
    assert error(info) == (
        f"{path}: Polyaxon rejects it: Received a non valid config `operation`: `'<' not supported between "
        "instances of 'str' and 'int'`; fix: correct the polyaxonfile"
    )


def test_a_matrix_of_another_kind_is_refused(tmp_path: Path) -> None:
    path = small(tmp_path, "retry_new_key", "lost_response", ("kind: grid", "kind: random\n  numRuns: 2"))
    with pytest.raises(GridFileError) as info:
        load_grid_file(path)
    assert error(info) == (f"{path}: field 'matrix': expected a grid matrix; fix: add 'matrix: {{kind: grid, ...}}'")


def test_a_grid_file_without_a_matrix_is_refused(tmp_path: Path) -> None:
    text = (FILES / "grid.yaml").read_text()
    path = grid_file(tmp_path, (text[text.index("matrix:\n"):text.index("params:\n  seed_count")], ""),
                     ("  seed_count: {value: 3}\n", "  seed_count: {value: 3}\n  policy: {value: retry_new_key}\n"
                      "  scenario: {value: lost_response}\n"))  # fmt: skip
    with pytest.raises(GridFileError) as info:
        load_grid_file(path)
    assert error(info) == f"{path}: field 'matrix': expected a grid matrix; fix: add 'matrix: {{kind: grid, ...}}'"


def test_a_param_the_component_lacks_is_refused_naming_the_inputs(tmp_path: Path) -> None:
    path = small(tmp_path, "retry_new_key", "lost_response", ("seed_count: {value: 3}", "seeds: {value: 3}"))
    with pytest.raises(GridFileError) as info:
        load_grid_file(path)
    assert error(info) == (
        f"{path}: field 'params.seeds': not an input of the component; fix: use one of policy, scenario, seed_count"
    )
    path = small(tmp_path, "retry_new_key", "lost_response",
                 ("    scenario:\n", "    knob: {kind: choice, value: [1]}\n    scenario:\n"))  # fmt: skip
    with pytest.raises(GridFileError) as info:
        load_grid_file(path)
    assert error(info) == (
        f"{path}: field 'matrix.params.knob': not an input of the component; fix: use one of policy, scenario, "
        "seed_count"
    )


def test_a_value_listed_twice_is_refused_naming_it(tmp_path: Path) -> None:
    path = small(tmp_path, "retry_new_key", "lost_response, request_lost, lost_response")
    with pytest.raises(GridFileError) as info:
        load_grid_file(path)
    assert error(info) == (
        f"{path}: field 'matrix.params.scenario': 'lost_response' is listed more than once (its cells would run "
        "twice); fix: list each value once"
    )
    # A value listed once after another is not a repeat of it.
    assert len(load_grid_file(small(tmp_path, "retry_new_key, stop_on_timeout", "lost_response")).cells) == 2


def test_a_scenario_given_as_a_fixed_param_is_not_missing(tmp_path: Path) -> None:
    text = (FILES / "grid.yaml").read_text()
    start = text.index("    scenario:\n")
    end = text.index("params:\n  seed_count")
    path = grid_file(tmp_path, (text[start:end], ""), (POLICIES, "retry_new_key"),
                     ("  seed_count: {value: 3}\n", "  seed_count: {value: 2}\n  scenario: {value: lost_response}\n"))  # fmt: skip
    grid = load_grid_file(path)
    assert grid.cells == ({"policy": "retry_new_key", "scenario": "lost_response", "seed_count": 2},)
    assert grid.matrixed == ("policy",)


def test_an_invalid_cell_is_named_with_its_values(tmp_path: Path) -> None:
    path = small(tmp_path, "retry_new_key", "lost_response", ("params:\n  seed_count: {value: 3}\n", ""),
                 ("    scenario:\n", "    seed_count: {kind: choice, value: [a]}\n    scenario:\n"))  # fmt: skip
    with pytest.raises(GridFileError) as info:
        load_grid_file(path)
    assert error(info) == (
        f"{path}: field 'matrix.params': cell {{'policy': 'retry_new_key', 'seed_count': 'a', 'scenario': "
        "'lost_response'} is invalid: Could not parse value `a` for `seed_count`, an error was encountered: Cannot "
        "convert value `a` (key: `seed_count`) to `int`; fix: correct it"
    )


def test_an_empty_grid_names_the_empty_list(tmp_path: Path) -> None:
    path = small(tmp_path, "retry_new_key", "")
    with pytest.raises(GridFileError) as info:
        load_grid_file(path)
    assert error(info) == (
        f"{path}: field 'matrix.params.scenario': the grid has no cell to run; fix: give it at least one value"
    )


def test_a_seed_count_in_the_matrix_is_checked_there(tmp_path: Path) -> None:
    path = small(tmp_path, "retry_new_key", "lost_response", ("params:\n  seed_count: {value: 3}\n", ""),
                 ("    scenario:\n", "    seed_count: {kind: choice, value: [0]}\n    scenario:\n"))  # fmt: skip
    with pytest.raises(GridFileError) as info:
        load_grid_file(path)
    assert error(info) == (
        f"{path}: field 'matrix.params.seed_count': 0 is not a whole number in 1..1,000,000; "
        "fix: give the number of seeds each cell runs"
    )
    path = small(tmp_path, "retry_new_key", "lost_response", ("seed_count: {value: 3}", "seed_count: {value: 0}"))
    with pytest.raises(GridFileError) as info:
        load_grid_file(path)
    assert error(info) == (
        f"{path}: field 'params.seed_count': 0 is not a whole number in 1..1,000,000; "
        "fix: give the number of seeds each cell runs"
    )


# -- _check_seed_count and _shortened ----------------------------------------------------------------------------


@pytest.mark.parametrize("count", [None, 1, 2, 1_000_000])
def test_a_seed_count_in_bounds_passes(count: object) -> None:
    assert _check_seed_count(Path("g.yaml"), count, "params") is None


@pytest.mark.parametrize(
    ("count", "kind", "fix"),
    [
        (0, None, "give the number of seeds each cell runs"),
        (1_000_001, None, "give the number of seeds each cell runs"),
        (True, None, "give the number of seeds each cell runs"),
        (False, None, "give the number of seeds each cell runs"),
        ("3", None, "give the number of seeds each cell runs"),
        (2.0, None, "give the number of seeds each cell runs"),
        (2.0, "choice", "give the number of seeds each cell runs"),
        (2, "range", None),
        (2.0, "linspace", "list the counts with 'kind: choice' (Polyaxon's 'linspace' gives numbers with a fraction, "
         "as 2.0)"),
    ],
)  # fmt: skip
def test_a_seed_count_out_of_bounds_is_one_exact_line(count: object, kind: str | None, fix: str | None) -> None:
    if fix is None:
        _check_seed_count(Path("g.yaml"), count, "matrix.params", kind)
        return
    with pytest.raises(GridFileError) as info:
        _check_seed_count(Path("g.yaml"), count, "matrix.params", kind)
    assert (
        error(info)
        == f"g.yaml: field 'matrix.params.seed_count': {count!r} is not a whole number in 1..1,000,000; fix: {fix}"
    )


def test_shortened_cuts_at_a_word_and_says_so() -> None:
    assert _shortened("one two", 7) == "one two"
    assert _shortened("one two", 8) == "one two"
    assert _shortened("one two three", 12) == "one two ..."
    assert _shortened("one two, three", 13) == "one two ..."
    assert _shortened("one two; three", 13) == "one two ..."
    assert _shortened("one two: three", 13) == "one two ..."
    assert _shortened("one two three four", 14) == "one two three ..."


def test_a_long_polyaxon_error_is_cut_at_400_characters_at_a_word(tmp_path: Path) -> None:
    key = "foo" + "x" * 352
    path = small(tmp_path, "retry_new_key", "lost_response", ("kind: operation", f"kind: operation\n{key}: bar"))
    with pytest.raises(GridFileError) as info:
        load_grid_file(path)
    reason = f"Unexpected section `{key}` in Polyaxonfile"
    assert len(reason) < 400 == len(reason + " version")
    assert error(info) == f"{path}: Polyaxon rejects it: {reason} ...; fix: correct the polyaxonfile"


def test_a_seed_count_drawn_by_a_range_is_refused_as_a_fraction_not_as_a_repeat(tmp_path: Path) -> None:
    path = small(tmp_path, "retry_new_key", "lost_response", ("params:\n  seed_count: {value: 3}\n", ""),
                 ("    scenario:\n", "    seed_count: {kind: range, value: [1, 3, 1]}\n    scenario:\n"))  # fmt: skip
    with pytest.raises(GridFileError) as info:
        load_grid_file(path)
    assert error(info) == (
        f"{path}: field 'matrix.params.seed_count': 1.0 is not a whole number in 1..1,000,000; fix: list the counts "
        "with 'kind: choice' (Polyaxon's 'range' gives numbers with a fraction, as 1.0)"
    )


def test_an_invalid_cells_reason_is_cut_at_300_characters(tmp_path: Path) -> None:
    value = "a" * 200
    path = small(tmp_path, "retry_new_key", "lost_response", ("params:\n  seed_count: {value: 3}\n", ""),
                 ("    scenario:\n", f"    seed_count: {{kind: choice, value: [{value}]}}\n    scenario:\n"))  # fmt: skip
    with pytest.raises(GridFileError) as info:
        load_grid_file(path)
    reason = (
        f"Could not parse value `{value}` for `seed_count`, an error was encountered: Cannot convert value `{value}"
    )
    assert error(info) == (
        f"{path}: field 'matrix.params': cell {{'policy': 'retry_new_key', 'seed_count': '{value}', 'scenario': "
        f"'lost_response'}} is invalid: {reason[:300]}; fix: correct it"
    )


def test_shortened_strips_only_punctuation_at_the_cut() -> None:
    assert _shortened("AX BX CX", 6) == "AX BX ..."
    assert _shortened("one two,; three", 14) == "one two ..."


def test_the_reproduce_command_keeps_the_budget_exactly() -> None:
    """`{:g}` kept six digits: a case run under --case-timeout 12345.67 printed --case-timeout 12345.7, and the
    repro file read that back as the case's budget. A budget :g cannot keep is now written in full."""
    (case,) = load_grid(["retry_new_key"], ["lost_response"], [7]).cases
    run_it = "python -m harness run --policy retry_new_key --scenario lost_response --seed 7"
    assert reproduce_command(case, 12345.67) == f"{run_it} --case-timeout 12345.67"
    assert reproduce_command(case, 0.1234567) == f"{run_it} --case-timeout 0.1234567"
    assert reproduce_command(case, 86399.99) == f"{run_it} --case-timeout 86399.99"
    assert reproduce_command(case, 60.0) == f"{run_it} --case-timeout 60"
    assert reproduce_command(case, 0.001) == f"{run_it} --case-timeout 0.001"


def test_the_budget_option_is_the_one_both_reproduce_commands_write() -> None:
    """The run's reproduce command and an exploration's command for a schedule it failed on (harness/explore)
    both write the budget through ``budget_option``: nothing without one, the seconds exactly as given."""
    assert budget_option(None) == budget_option(0.0) == ""
    assert budget_option(60.0) == " --case-timeout 60" and budget_option(2.5) == " --case-timeout 2.5"
    assert budget_option(12345.67) == " --case-timeout 12345.67"
    assert budget_option(86399.99) == " --case-timeout 86399.99"
