"""Each cell is one Polyaxon run, offline by default, read back here with the Polyaxon client."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import SMALL_GRID

from harness.model import CaseReport
from harness.plx.tracking import CellRecord, track_cell, tracked_metrics
from harness.policy import load_policy
from harness.run import CellJob, execute_cell
from harness.run.files import case_path, recovery_json, write_atomic

ROOT = Path(__file__).resolve().parent.parent


def harness(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "harness", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=600,
    )


def read_offline(root: Path) -> list[dict[str, Any]]:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "plx_read.py"), "offline", str(root)],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def offline_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    out = tmp_path_factory.mktemp("offline") / "run"
    proc = harness(
        "run",
        "--out",
        str(out),
        "--quiet",
        *SMALL_GRID,
    )
    assert proc.returncode == 0, proc.stderr
    return out, read_offline(out / "polyaxon")


def test_one_completed_run_per_cell(offline_run: tuple[Path, list[dict[str, Any]]]) -> None:
    """Four cells give four succeeded runs, each with the inputs the seed document asks for."""
    _, runs = offline_run
    assert len(runs) == 4
    assert {r["status"] for r in runs} == {"succeeded"}
    for run in runs:
        inputs = run["inputs"]
        assert set(inputs) >= {
            "scenario",
            "scenario_revision",
            "policy",
            "policy_revision",
            "task_id",
            "action_id",
            "seeds",
            "harness_version",
        }
        assert inputs["seeds"] == [1, 2, 3] and run["name"] == f"{inputs['policy']}-{inputs['scenario']}"


def test_outputs_hold_each_seeds_recovery_json(offline_run: tuple[Path, list[dict[str, Any]]]) -> None:
    """The run's outputs hold one recovery.json per seed, the same bytes as the case files."""
    out, runs = offline_run
    for run in runs:
        assert sorted(run["files"]) == ["seed-1/recovery.json", "seed-2/recovery.json", "seed-3/recovery.json"]
        for name, text in run["files"].items():
            report = CaseReport.model_validate_json(text)
            assert case_path(out, report).read_text() == text, name


def test_metrics_are_the_established_ones_per_seed(offline_run: tuple[Path, list[dict[str, Any]]]) -> None:
    """Metrics have one step per seed with the checker's values; the outcome is an output."""
    _, runs = offline_run
    for run in runs:
        reports = [CaseReport.model_validate_json(run["files"][f"seed-{s}/recovery.json"]) for s in (1, 2, 3)]
        for name, points in run["metrics"].items():
            for step, value in points:
                assert value == tracked_metrics(reports[step])[name]
        outcomes = {r.outcome for r in reports}
        assert run["outputs"]["recovery_outcome"] in outcomes
        assert run["outputs"][f"cases_{reports[0].outcome}"] >= 1


def test_unknown_metric_is_not_logged_as_zero(offline_run: tuple[Path, list[dict[str, Any]]]) -> None:
    """Where duplicate_effects is unknown, Polyaxon has no value for it at all: not 0, just absent."""
    _, runs = offline_run
    blind = next(
        r for r in runs if r["inputs"]["policy"] == "retry_same_key" and r["inputs"]["scenario"] == "uncertain_lookup"
    )
    assert "duplicate_effects" not in blind["metrics"] and "duplicate_effects" not in blind["outputs"]
    report = json.loads(blind["files"]["seed-1/recovery.json"])
    assert report["metrics"]["duplicate_effects"] is None and "duplicate_effects" in report["unknown"]
    honest = next(
        r
        for r in runs
        if r["inputs"]["policy"] == "reconcile_and_reauthorize" and r["inputs"]["scenario"] == "uncertain_lookup"
    )
    assert [v for _, v in honest["metrics"]["duplicate_effects"]] == [0.0, 0.0, 0.0]


def test_executor_claim_is_not_logged_as_a_measurement(offline_run: tuple[Path, list[dict[str, Any]]]) -> None:
    """What the worker reported is in recovery.json, not among the Polyaxon metrics."""
    _, runs = offline_run
    assert all("executor_finished" not in r["metrics"] for r in runs)


def test_tracking_gives_back_hooks_and_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Tracking in-process leaves sys.excepthook, stdout, stderr and POLYAXON_* variables as they were."""
    from harness.run import load_grid, run_case

    monkeypatch.delenv("POLYAXON_IS_OFFLINE", raising=False)
    stdout, stderr, hook = io.StringIO(), io.StringIO(), lambda *a: None
    monkeypatch.setattr(sys, "stdout", stdout)
    monkeypatch.setattr(sys, "stderr", stderr)
    monkeypatch.setattr(sys, "excepthook", hook)
    case = load_grid(["stop_on_timeout"], ["lost_response"], [1]).cases[0]
    report, _ = run_case(case)
    tracked = track_cell(
        CellRecord("stop_on_timeout", "lost_response", (report,), (recovery_json(report),)),
        tmp_path,
        "default/recovery-harness",
        write_atomic,
    )
    assert tracked.status == "succeeded", tracked.error
    assert (sys.stdout, sys.stderr, sys.excepthook) == (stdout, stderr, hook)
    assert "POLYAXON_IS_OFFLINE" not in os.environ


def test_harness_error_ends_the_run_failed_and_the_grid_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cell whose simulation raises is reported as harness_error and its Polyaxon run ends failed with the reason."""
    import harness.run.case

    def broken(*_args: object) -> None:
        raise RuntimeError("simulated harness bug")

    monkeypatch.setattr(harness.run.case, "simulate", broken)
    result = execute_cell(CellJob("stop_on_timeout", "lost_response", (1,), tmp_path, "offline", "default/p"))
    assert result.reports[0].outcome == "harness_error" and result.tracked is not None
    assert result.tracked.status == "failed" and "simulated harness bug" in (result.tracked.error or "")
    runs = read_offline(tmp_path / "polyaxon")
    assert runs[0]["status"] == "failed" and runs[0]["outputs"]["recovery_outcome"] == "harness_error"
    assert load_policy("stop_on_timeout")  # the next cell still loads and runs
    assert execute_cell(CellJob("stop_on_timeout", "changed_task", (1,), tmp_path / "next", "none", "p")).reports


def test_local_grid_is_the_matrix(tmp_path: Path) -> None:
    """The default run expands polyaxonfiles/grid.yaml: the cells it runs are the matrix's cells."""
    from harness.plx.plxfile import default_grid_file, load_grid_file
    from harness.scenario import scenario_cases

    out = tmp_path / "run"
    proc = harness("run", "--out", str(out), "--quiet", "--tracking", "none", "--seed", "1")
    assert proc.returncode == 0, proc.stderr
    ran = {(p.parent.parent.parent.name, p.parent.parent.name) for p in (out / "cases").rglob("recovery.json")}
    grid = load_grid_file(default_grid_file())
    expected = {(c["policy"], s.name) for c in grid.cells for _, s in scenario_cases(str(c["scenario"]))}
    assert ran == expected
    assert json.loads((out / "run.json").read_text())["concurrency"] == grid.concurrency


def test_unreachable_server_loses_nothing(tmp_path: Path) -> None:
    """With no server listening, the cases stay on disk, the error is said once, with the push command; exit 3."""
    out = tmp_path / "run"
    home = tmp_path / "home"
    home.mkdir()
    proc = harness(
        "run",
        "--out",
        str(out),
        "--quiet",
        "--tracking",
        "server",
        "--scenario",
        "lost_response",
        "--policy",
        "stop_on_timeout",
        env={"POLYAXON_HOST": "http://127.0.0.1:9", "HOME": str(home)},
    )
    assert proc.returncode == 3
    errors = [line for line in proc.stderr.splitlines() if line.startswith("harness:")]
    assert len(errors) == 1 and "polyaxon ops push" in errors[0] and "nothing local is lost" in errors[0]
    assert len(list(out.rglob("recovery.json"))) == 6  # 3 case files + 3 copies in the Polyaxon run's outputs
    assert len(read_offline(out / "polyaxon")) == 1


def test_managed_job_runs_exactly_one_cell(tmp_path: Path) -> None:
    """Inside a Polyaxon-managed job, a multi-cell grid is refused in one line before anything is written."""
    out = tmp_path / "run"
    proc = harness(
        "run",
        "--out",
        str(out),
        "--quiet",
        env={"POLYAXON_IS_MANAGED": "true", "POLYAXON_RUN_INSTANCE": "default.p.runs.0123"},
    )
    assert proc.returncode == 2 and "one --policy and one --scenario" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and not out.exists()
