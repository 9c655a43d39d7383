"""The polyaxonfiles pass Polyaxon's own checks, match what the harness ships, and drive the local grid."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
import yaml

from harness.plx.plxfile import GridFileError, load_grid_file
from harness.policy import builtin_policy_names
from harness.scenario import list_scenarios
from harness.version import __version__

ROOT = Path(__file__).resolve().parent.parent
FILES = ROOT / "polyaxonfiles"

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from polyaxon.exceptions import PolyaxonfileError
    from polyaxon.polyaxonfile import check_polyaxonfile


def test_component_passes_polyaxon_check() -> None:
    """Polyaxon parses the component and finds the typed inputs a cell needs."""
    component = check_polyaxonfile(polyaxonfile=str(FILES / "component.yaml"), is_cli=False, to_op=False)
    types = {io.name: io.type for io in component.inputs}
    assert types == {"policy": "str", "scenario": "str", "seed_count": "int"}


def test_operation_passes_polyaxon_check_with_the_seed_grid() -> None:
    """The grid operation parses, is a grid with concurrency 2, as in seed 003."""
    operation = check_polyaxonfile(polyaxonfile=str(FILES / "grid.yaml"), is_cli=False)
    assert operation.matrix.kind == "grid" and operation.matrix.concurrency == 2


def test_matrix_lists_exactly_what_the_harness_ships() -> None:
    """The matrix's policies and scenarios are the shipped ones: the two cannot drift apart."""
    matrix = yaml.safe_load((FILES / "grid.yaml").read_text())["matrix"]["params"]
    assert sorted(matrix["policy"]["value"]) == builtin_policy_names()
    assert sorted(matrix["scenario"]["value"]) == list_scenarios()


def test_every_cell_is_checked_against_the_component() -> None:
    """Expanding with Polyaxon's grid manager gives one valid cell per policy x scenario."""
    grid = load_grid_file(FILES / "grid.yaml")
    assert grid.concurrency == 2 and set(grid.inputs) == {"policy", "scenario", "seed_count"}
    pairs = {(c["policy"], c["scenario"]) for c in grid.cells}
    assert pairs == {(p, s) for p in builtin_policy_names() for s in list_scenarios()}
    assert len(grid.cells) == len(pairs) and all(c["seed_count"] == 3 for c in grid.cells)
    for cell in grid.cells:
        check_polyaxonfile(polyaxonfile=str(FILES / "component.yaml"), params=cell, is_cli=False)


def test_a_cell_writes_its_cases_into_the_jobs_outputs_which_outlive_it() -> None:
    """A Polyaxon user's review: the component wrote its cases to /tmp in the container, which dies with the job,
    so no grid study kept a recovery.json. It writes them under the run's outputs path (Polyaxon's documented
    ``globals.run_outputs_path``), which the artifacts store keeps."""
    from polyaxon.polyaxonfile import check_polyaxonfile

    component = check_polyaxonfile(polyaxonfile=str(FILES / "component.yaml"), is_cli=False, to_op=False)
    args = component.run.container.args
    assert args[args.index("--out") + 1] == "{{ globals.run_outputs_path }}/run"


@pytest.mark.parametrize("given", ["note", "fail"])
def test_a_safe_cell_of_the_grid_succeeds_though_its_scenario_declares_what_its_policy_never_reaches(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], given: str
) -> None:
    """A demanding user's review: one job of the grid runs one policy on one scenario, and a correct policy never
    fires retry_with_seconds_left's fault at a second reply (it sends no retry that late), so the job exited 4 and
    Polyaxon would mark a correct cell failed (83 of 552 jobs), while an incorrect one exited 0. The component
    asks for ``--unfired note``: the line is said as a note, and the job exits 0; as a run's default, 4."""
    import re

    from harness.cli import main

    container = yaml.safe_load((FILES / "component.yaml").read_text())["run"]["container"]
    cell = {"policy": "reconcile_and_reauthorize", "scenario": "retry_with_seconds_left", "seed_count": 1}
    args = [re.sub(r"\{\{ (\w+) \}\}", lambda m: str(cell.get(m.group(1), m.group(0))), a) for a in container["args"]]
    args[args.index("--out") + 1] = str(tmp_path / "cell")
    assert args[args.index("--unfired") + 1] == "note"
    args[args.index("--unfired") + 1] = given
    assert main(["run", *args, "--tracking", "none", "--no-report"]) == (0 if given == "note" else 4)
    err = capsys.readouterr().err
    said = "scenario retry_with_seconds_left declares fault response_lost nth=2, which fired in no case of this run"
    assert f"harness: {'note: ' if given == 'note' else ''}{said}" in err


def test_component_image_is_the_dockerfile_build() -> None:
    """The component runs the image the Dockerfile builds, tagged with this version."""
    image = yaml.safe_load((FILES / "component.yaml").read_text())["run"]["container"]["image"]
    assert image == f"recovery-harness:{__version__}"
    assert f"-t {image}" in (FILES / "Dockerfile").read_text()


def broken(tmp_path: Path, old: str, new: str) -> Path:
    (tmp_path / "component.yaml").write_text((FILES / "component.yaml").read_text())
    path = tmp_path / "grid.yaml"
    text = (FILES / "grid.yaml").read_text()
    assert old in text
    path.write_text(text.replace(old, new))
    return path


@pytest.mark.parametrize(
    ("old", "new", "needle"),
    [
        ("    policy:\n", "    polcy:\n", "Input policy is required"),
        (
            "    scenario:\n",
            "    extra_knob: {kind: choice, value: [1, 2]}\n    scenario:\n",
            "matrix.params.extra_knob",
        ),
        ("concurrency: 2", "concurrency: two", "Polyaxon rejects it"),
        ("kind: operation", "kind: operation\nfoo: bar", "Unexpected section"),
        ("seed_count: {value: 3}", "seed_count: {value: many}", "seed_count"),
        ("params:\n  seed_count: {value: 3}", "params:\n  seeds: {value: 3}", "params.seeds"),
        (
            "value: [absent_then_late_original,",
            "value: [lost_response, absent_then_late_original, lost_response,",
            "'lost_response' is listed more than once",
        ),
        (
            "value: [stop_on_timeout, retry_same_key, reconcile_and_reauthorize, retry_new_key, follow_and_inspect,\n"
            "              verify_before_mutation]",
            "value: []",
            "'matrix.params.policy': the grid has no cell to run",
        ),
    ],
)
def test_broken_polyaxonfile_is_rejected_in_one_line(tmp_path: Path, old: str, new: str, needle: str) -> None:
    """A misspelt matrix key, a wrong type, an unknown section or an unknown param: one line naming it."""
    with pytest.raises(GridFileError) as info:
        load_grid_file(broken(tmp_path, old, new))
    message = str(info.value)
    assert needle in message and "fix:" in message and "\n" not in message


def test_polyaxon_itself_rejects_a_broken_operation(tmp_path: Path) -> None:
    """Polyaxon's parser, not only ours, refuses an invalid concurrency."""
    with pytest.raises(PolyaxonfileError):
        check_polyaxonfile(polyaxonfile=str(broken(tmp_path, "concurrency: 2", "concurrency: two")), is_cli=False)


def test_wrongly_typed_choice_is_caught_per_cell(tmp_path: Path) -> None:
    """Polyaxon does not type-check choice values; the per-cell check does."""
    path = broken(tmp_path, "    scenario:\n", "    seed_count: {kind: choice, value: [a, b]}\n    scenario:\n")
    with pytest.raises(GridFileError, match="seed_count"):
        load_grid_file(path)


@pytest.mark.parametrize(
    ("value", "where"),
    [
        ("{value: -2}", "params.seed_count"),
        ("{value: 0}", "params.seed_count"),
        ("{value: 1000001}", "params.seed_count"),
        ("{value: true}", "params.seed_count"),
    ],
)
def test_seed_count_out_of_range_is_refused_as_the_option_is(tmp_path: Path, value: str, where: str) -> None:
    """The grid file's seed_count has the bounds of ``--seed-count``: nothing below 1 (0 once meant the default
    seeds, -2 crashed a run halfway), nothing above the cap."""
    with pytest.raises(GridFileError) as info:
        load_grid_file(broken(tmp_path, "seed_count: {value: 3}", f"seed_count: {value}"))
    message = str(info.value)
    assert f"field '{where}'" in message and "1..1,000,000" in message and "\n" not in message


def test_seed_count_per_cell_is_checked_in_the_matrix(tmp_path: Path) -> None:
    path = broken(tmp_path, "    scenario:\n", "    seed_count: {kind: choice, value: [2, -1]}\n    scenario:\n")
    text = path.read_text().replace("params:\n  seed_count: {value: 3}\n", "")
    path.write_text(text)
    with pytest.raises(GridFileError, match=r"field 'matrix.params.seed_count': -1 is not"):
        load_grid_file(path)
    ok = broken(tmp_path, "seed_count: {value: 3}", "seed_count: {value: 1000000}")
    assert {cell["seed_count"] for cell in load_grid_file(ok).cells} == {1_000_000}


def test_a_seed_count_drawn_by_a_range_names_choice_as_the_fix(tmp_path: Path) -> None:
    """Polyaxon's range gives 1.0, 2.0, even between whole numbers: refusing them is right, and the fix ("give the
    number of seeds") was what the user had written; it now names the kind that keeps them whole."""
    path = broken(tmp_path, "    scenario:\n", "    seed_count: {kind: range, value: [1, 3, 1]}\n    scenario:\n")
    path.write_text(path.read_text().replace("params:\n  seed_count: {value: 3}\n", ""))
    with pytest.raises(GridFileError) as info:
        load_grid_file(path)
    assert "field 'matrix.params.seed_count': 1.0 is not a whole number" in str(info.value)
    assert str(info.value).endswith(
        "fix: list the counts with 'kind: choice' (Polyaxon's 'range' gives numbers with a fraction, as 1.0)"
    )


def test_a_run_of_the_exploration_file_is_refused_rather_than_run_twice(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """polyaxonfiles/explore.yaml splits each (policy, scenario) into shards; harness run reads no shard, so its
    cells would repeat: every case run and counted twice. Refused in one line, naming the field, nothing written."""
    from harness.cli import main

    out = tmp_path / "out"
    assert main(["run", "--polyaxonfile", str(FILES / "explore.yaml"), "--tracking", "none", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert "field 'matrix.params'" in err and "differ only in shard" in err and "fix:" in err and "\n" not in err
    assert not out.exists()


@pytest.mark.parametrize(
    ("old", "new", "needle"),
    [
        ("value: [stop_on_timeout,", "value: [nope_policy, stop_on_timeout,", "field 'matrix.params.policy': unknown "
         "policy 'nope_policy'; fix: use one of"),
        ("value: [absent_then_late_original,", "value: [nope_scenario, absent_then_late_original,", "field "
         "'matrix.params.scenario': unknown scenario 'nope_scenario'; fix: use one of"),
    ],
)  # fmt: skip
def test_an_unknown_policy_or_scenario_in_a_grid_file_names_the_file_and_field(
    tmp_path: Path, old: str, new: str, needle: str
) -> None:
    """The error named the policy but neither the file nor the field it came from."""
    from harness.run.plan import plan_cells

    path = broken(tmp_path, old, new)
    with pytest.raises(GridFileError) as info:
        plan_cells(None, None, None, path, None)
    message = str(info.value)
    assert message.startswith(f"{path}: ") and needle in message and "\n" not in message


def test_a_grid_file_may_name_a_case_as_the_harness_prints_it(tmp_path: Path) -> None:
    """`connector_crash_points-after_effect` (the name in tables and summary.csv) is the case
    `connector_crash_points@after_effect`, in a grid file as on the command line; a variant of no case is refused
    naming the file and the field."""
    from harness.run import load_grid
    from harness.run.plan import plan_cells

    printed = plan_cells(None, None, None, broken(tmp_path, "value: [absent_then_late_original,",
                         "value: [connector_crash_points-after_effect,"), None)  # fmt: skip
    chosen = plan_cells(None, None, None, broken(tmp_path, "value: [absent_then_late_original,",
                        "value: [connector_crash_points@after_effect,"), None)  # fmt: skip
    assert "connector_crash_points-after_effect" in {c.scenario_spec for c in printed.cells}

    def cases(plan: object) -> list[tuple[str, str]]:
        cells = plan.cells  # type: ignore[attr-defined]
        grid = load_grid(sorted({c.policy_spec for c in cells}), [c.scenario_spec for c in cells][:1], [1])
        return [(c.policy_spec, c.scenario.name) for c in grid.cases]

    assert cases(printed) == cases(chosen)
    assert ("retry_same_key", "connector_crash_points-after_effect") in cases(printed)
    with pytest.raises(GridFileError) as info:
        plan_cells(None, None, None, broken(tmp_path, "value: [absent_then_late_original,",
                   "value: [connector_crash_points-no_such_phase,"), None)  # fmt: skip
    assert "field 'matrix.params.scenario'" in str(info.value) and "connector_crash_points@after_effect" in str(
        info.value
    )


def test_cells_that_differ_only_in_seed_count_are_refused_for_what_they_would_do(tmp_path: Path) -> None:
    """A matrix whose seed_count is a choice of two makes each policy and scenario twice: refused, saying both
    would write the same cases (it said harness run does not use seed_count, which it does)."""
    from harness.run.plan import plan_cells

    path = broken(tmp_path, "  seed_count: {value: 3}\n", "")
    text = path.read_text().replace("    scenario:\n", "    seed_count: {kind: choice, value: [2, 5]}\n    scenario:\n")
    path.write_text(text)
    with pytest.raises(GridFileError) as info:
        plan_cells(None, None, None, path, None)
    message = str(info.value)
    assert "(they differ only in seed_count; a run's cell is a policy and a scenario, so both would write the same" in (
        message
    )
    assert "does not use" not in message


def test_the_grid_files_concurrency_holds_only_when_the_grid_file_is_run() -> None:
    """As the README says: the default concurrency is the matrix's when the grid file is run; --policy or
    --scenario leave the grid file unread, so it is 1; --concurrency wins either way."""
    from harness.run.plan import plan_cells

    assert plan_cells(None, None, None, None, None).concurrency == load_grid_file(FILES / "grid.yaml").concurrency == 2
    assert plan_cells(["retry_new_key"], None, None, None, None).concurrency == 1
    assert plan_cells(None, ["lost_response"], None, None, 3).concurrency == 3


def test_polyaxons_list_of_choices_is_shown_whole_and_readable(tmp_path: Path) -> None:
    """`kind: gird`: Polyaxon lists every matrix kind as an enum's repr; cut at 300 characters, the line ended in
    "<V1MatrixKind.MA" and lost the choices after it. Each choice is now its value, and all of them are there."""
    from harness.plx.plxfile import _shortened

    with pytest.raises(GridFileError) as info:
        load_grid_file(broken(tmp_path, "kind: grid", "kind: gird"))
    message = str(info.value)
    assert "<V1MatrixKind" not in message and "\n" not in message
    for kind in ("bayes", "grid", "hyperband", "tpe", "iterative", "mapping", "random"):
        assert f"'{kind}'" in message
    assert message.endswith("; fix: correct the polyaxonfile")
    # What is still too long is cut at the end of a word, and says so.
    assert _shortened("one two, three four", 14) == "one two ..."
    assert _shortened("one two", 7) == "one two"
