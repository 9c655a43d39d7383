"""An exploration in Polyaxon: one run per (policy, scenario) explored, a grid operation that shards it, and
the loader that merges the shards' explore.json files back into pandas."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from polyaxon.polyaxonfile import check_polyaxonfile
from test_tracking import harness, read_offline

from harness.cli import main
from harness.plx.plxfile import load_grid_file
from harness.policy import builtin_policy_names
from harness.present.analysis import load_explorations
from harness.scenario import list_scenarios

ROOT = Path(__file__).resolve().parent.parent
FILES = ROOT / "polyaxonfiles"
SMALL = ["--scenario", "request_lost", "--depth", "1", "--swarm", "2", "--quiet"]


def explore(out: Path, *args: str) -> dict[str, Any]:
    status = main(["explore", "--out", str(out), *args])
    assert status in (0, 1), status
    return json.loads((out / "explore.json").read_text())  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def explored(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any], list[dict[str, Any]]]:
    out = tmp_path_factory.mktemp("explore") / "x"
    summary = explore(out, "--policy", "retry_new_key", "--policy", "reconcile_and_reauthorize", *SMALL)
    return out, summary, read_offline(out / "polyaxon")


def test_one_run_per_policy_and_scenario_explored(explored: tuple[Path, dict[str, Any], list[dict[str, Any]]]) -> None:
    """Two policies x one template: two succeeded runs, named for what they explored, with its inputs."""
    _out, summary, runs = explored
    assert sorted(r["name"] for r in runs) == [
        "explore-reconcile_and_reauthorize-request_lost",
        "explore-retry_new_key-request_lost",
    ]
    assert all(r["status"] == "succeeded" for r in runs)
    assert set(summary["polyaxon_runs"].values()) == {r["uuid"] for r in runs}
    for run in runs:
        inputs = run["inputs"]
        assert inputs["scenario"] == "request_lost" and inputs["depth"] == 1 and inputs["swarm"] == 2
        assert inputs["seeds"] == [1] and (inputs["shard"], inputs["shards"]) == (0, 1)


def test_run_metrics_are_the_explorations_counts(explored: tuple[Path, dict[str, Any], list[dict[str, Any]]]) -> None:
    """Schedules, cases, violating cases, findings and each property's violations, as explore.json has them."""
    _, summary, runs = explored
    rows = {row["policy"]: row for row in summary["explorations"]}
    for run in runs:
        row = rows[run["inputs"]["policy"]]
        metrics = {name: points[0][1] for name, points in run["metrics"].items()}
        expected = {
            "schedules": row["schedules"],
            "cases": row["cases"],
            "violating_cases": row["violating_cases"],
            "findings": row["findings"],
            **{f"violations_{k}": v for k, v in row["violations_by_property"].items()},
        }
        assert metrics == expected
    assert rows["retry_new_key"]["findings"] > 0 and rows["reconcile_and_reauthorize"]["violating_cases"] == 0


def test_run_artifacts_are_its_explore_json_and_its_findings(
    explored: tuple[Path, dict[str, Any], list[dict[str, Any]]],
) -> None:
    """Each run keeps its own explore.json and exactly its policy's finding files, byte for byte; its coverage is
    its policy's, and the two runs' together are the exploration's."""
    out, summary, runs = explored
    own_coverage: list[dict[str, dict[str, int]]] = []
    for run in runs:
        policy = run["inputs"]["policy"]
        files = run["files"]
        own = json.loads(files["explore.json"])
        assert [row["policy"] for row in own["explorations"]] == [policy]
        own_coverage.append(own["coverage"])
        local = {str(p.relative_to(out)): p.read_text() for p in (out / "findings" / policy).glob("*.yaml")}
        assert {k: v for k, v in files.items() if k != "explore.json"} == local
        assert own["explorations"][0]["findings"] == len(local)
    assert all(c["request_lost"]["fired"] > 0 for c in own_coverage)
    summed = {b: {k: sum(c[b][k] for c in own_coverage) for k in ("reached", "fired")} for b in own_coverage[0]}
    assert summed == summary["coverage"]


def test_inside_a_managed_job_one_exploration_only(tmp_path: Path) -> None:
    """A Polyaxon job logs into its one run: two policies are refused in one line, nothing written."""
    out = tmp_path / "x"
    proc = harness(
        "explore",
        "--out",
        str(out),
        *SMALL,
        env={"POLYAXON_IS_MANAGED": "true", "POLYAXON_RUN_INSTANCE": "default.p.runs.0123"},
    )
    assert proc.returncode == 2 and "one --policy and one --scenario" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and not out.exists()


def test_loader_merges_shards_into_the_whole(tmp_path: Path) -> None:
    """Shards 0/2 and 1/2 loaded together are the whole exploration: same counts, same distinct findings.
    Each shard's folder holds two copies of its explore.json (its own and its Polyaxon run's): counted once."""
    args = ["--policy", "retry_new_key", "--policy", "stop_on_timeout", *SMALL]
    explore(tmp_path / "whole", *args)
    for i in (0, 1):
        explore(tmp_path / f"half{i}", *args, "--shard", f"{i}/2")
    whole = load_explorations(tmp_path / "whole")
    merged = load_explorations([tmp_path / "half0", tmp_path / "half1"])
    counts = ["policy", "scenario", "schedules", "cases", "violating_cases"]
    counts += [c for c in whole.explorations.columns if c.startswith("violations_")]
    assert merged.explorations[counts].equals(whole.explorations[counts])
    assert merged.explorations["complete"].all() and (merged.explorations["shards_seen"] == 2).all()
    assert sorted(merged.findings["shape"]) == sorted(whole.findings["shape"]) and len(whole.findings) > 0
    assert whole.explorations["schedules"].iloc[0] > 0

    half = load_explorations(tmp_path / "half0")
    assert not half.explorations["complete"].any() and (half.explorations["shards_seen"] == 1).all()


def test_loader_skips_what_is_not_an_exploration(tmp_path: Path) -> None:
    """A malformed file and a JSON file of another kind are listed with the reason, not loaded."""
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "explore.json").write_text("{not json")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "explore.json").write_text('{"cells": 3}')
    loaded = load_explorations([tmp_path, tmp_path / "missing"])
    assert loaded.explorations.empty and loaded.findings.empty
    reasons = sorted(s.reason.split(":")[0] for s in loaded.skipped)
    assert reasons == ["malformed", "no such file or folder", "not an explore.json"]


@pytest.mark.parametrize(
    ("where", "value", "said"),
    [
        (("shards",), "2", "field 'shards': Input should be a valid integer"),
        (("seeds",), 1, "field 'seeds': Input should be a valid list"),
        (("explorations", 0, "cases"), 1.5, "field 'explorations.0.cases': Input should be a valid integer"),
        (("explorations", 0, "policy"), ["p"], "field 'explorations.0.policy': Input should be a valid string"),
        (
            ("explorations", 0, "violations_by_property"),
            [],
            "field 'explorations.0.violations_by_property': Input should",
        ),
        (("findings", 0, "schedule"), [1], "field 'findings.0.schedule.0': Input should be a valid string"),
        (("findings", 0, "scenario"), {}, "field 'findings.0.scenario': Input should be a valid string"),
    ],
)
def test_an_exploration_with_a_field_of_the_wrong_type_is_skipped_naming_the_field(
    where: tuple[str | int, ...], value: object, said: str, tmp_path: Path
) -> None:
    """An explore.json that parses but holds a value of the wrong type where the loader reads one is skipped with
    the field and what it should be; the other explorations load. Each was a TypeError out of the loader."""
    good = {
        "depth": 2, "swarm": 20, "seeds": [1], "shard": 0, "shards": 1,
        "explorations": [{"policy": "p", "policy_revision": "1", "scenario": "s", "scenario_revision": "1",
                          "schedules": 3, "cases": 3, "violating_cases": 1, "violations_by_property": {"x": 1}}],
        "findings": [{"policy": "p", "scenario": "s", "template": "s", "shape": "f", "properties": ["x"],
                      "outcome": "incorrect", "seed": 1, "file": "f.yaml", "schedule": ["fault response_lost"]}],
    }  # fmt: skip
    bad = json.loads(json.dumps(good))
    target = bad
    for key in where[:-1]:
        target = target[key]
    target[where[-1]] = value
    for name, doc in (("good", good), ("bad", bad)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "explore.json").write_text(json.dumps(doc))
    loaded = load_explorations(tmp_path)
    assert list(loaded.explorations["cases"]) == [3] and list(loaded.findings["file"]) == [
        str(tmp_path / "good" / "f.yaml")
    ]
    (skipped,) = loaded.skipped
    assert skipped.path == str(tmp_path / "bad" / "explore.json") and skipped.reason.startswith(f"malformed: {said}")


def test_explore_component_passes_polyaxon_check() -> None:
    """Polyaxon parses the exploration component and finds its typed inputs."""
    component = check_polyaxonfile(polyaxonfile=str(FILES / "explore-component.yaml"), is_cli=False, to_op=False)
    types = {io.name: io.type for io in component.inputs}
    assert types == {
        "policy": "str",
        "scenario": "str",
        "depth": "int",
        "swarm": "int",
        "seed_count": "int",
        "shard": "int",
        "shards": "int",
        "concurrency": "int",
    }


def test_explore_grid_is_policy_x_scenario_x_shard() -> None:
    """The grid expands to every shipped policy x scenario x shard, and its shards are exactly 0..shards-1."""
    grid = load_grid_file(FILES / "explore.yaml")
    cells = {(c["policy"], c["scenario"], c["shard"]) for c in grid.cells}
    (shards,) = {c["shards"] for c in grid.cells}
    assert cells == {(p, s, i) for p in builtin_policy_names() for s in list_scenarios() for i in range(shards)}
    assert len(grid.cells) == len(cells)


def test_a_cell_of_the_explore_grid_runs_as_the_component_says(tmp_path: Path) -> None:
    """The component's command for one cell, with its templates filled in, runs an exploration of one shard
    (at depth 1 here, to keep the test short)."""
    grid = load_grid_file(FILES / "explore.yaml")
    cell = next(
        c for c in grid.cells if (c["policy"], c["scenario"], c["shard"]) == ("retry_new_key", "request_lost", 1)
    )
    cell = {**cell, "depth": 1, "swarm": 2, "concurrency": 2}
    container = yaml.safe_load((FILES / "explore-component.yaml").read_text())["run"]["container"]
    args = [re.sub(r"\{\{ (\w+) \}\}", lambda m: str(cell[m.group(1)]), a) for a in container["args"]]
    assert container["command"][-3:] == ["-m", "harness", "explore"]
    out = tmp_path / "cell"
    args[args.index("--out") + 1] = str(out)
    assert main(["explore", *args, "--tracking", "none"]) == 1  # retry_new_key has findings
    summary = json.loads((out / "explore.json").read_text())
    assert (summary["shard"], summary["shards"], summary["policies"]) == (1, cell["shards"], ["retry_new_key"])
    # The shard was split among the cell's processes, and answered as one process does.
    alone = tmp_path / "alone"
    args[args.index("--concurrency") + 1], args[args.index("--out") + 1] = "1", str(alone)
    assert main(["explore", *args, "--tracking", "none"]) == 1
    assert json.loads((alone / "explore.json").read_text())["findings"] == summary["findings"]


def test_loader_names_a_folder_without_an_exploration(tmp_path: Path) -> None:
    """A run's folder (a typo'd path, or load_explorations for load) and a folder with no explore.json gave empty
    frames and nothing skipped: each is listed, a run's naming what reads it."""
    run = tmp_path / "run"
    assert main(["run", "--policy", "retry_new_key", "--scenario", "lost_response", "--seed", "1",
                 "--tracking", "none", "--no-report", "--quiet", "--out", str(run)]) == 0  # fmt: skip
    (tmp_path / "empty").mkdir()
    loaded = load_explorations([run, tmp_path / "empty"])
    assert loaded.explorations.empty and loaded.findings.empty
    assert [(s.path, s.reason) for s in loaded.skipped] == [
        (str(run), "a run, not an exploration: load its cases with load()"),
        (str(tmp_path / "empty"), "no explore.json under it"),
    ]
