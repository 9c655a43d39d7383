"""Each cell is one Polyaxon run, offline by default, read back here with the Polyaxon client."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from conftest import DEFAULT_RUN, SMALL_GRID, Background

from harness.model import CaseReport
from harness.plx.tracking import CellRecord, track_cell

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


def _cases(out: Path, run: dict[str, Any]) -> list[CaseReport]:
    """The cell's cases, read from the run folder the run's ``cases_path`` points into."""
    folder = Path(run["outputs"]["cases_path"]) / run["inputs"]["scenario"]
    assert folder.is_relative_to(out.resolve())
    return [CaseReport.model_validate_json((folder / f"seed-{s}" / "recovery.json").read_text()) for s in (1, 2, 3)]


def test_cases_are_pointed_to_not_copied(offline_run: tuple[Path, list[dict[str, Any]]]) -> None:
    """A run's outputs hold no copy of the cases: ``cases_path`` names their folder in the run folder."""
    out, runs = offline_run
    for run in runs:
        assert not any(name.endswith("recovery.json") for name in run["files"]), sorted(run["files"])
        assert len(_cases(out, run)) == 3


def test_metrics_are_one_batch_of_means_of_the_established_ones(
    offline_run: tuple[Path, list[dict[str, Any]]],
) -> None:
    """Each metric is logged once per cell (one step): the mean over the seeds that established it."""
    out, runs = offline_run
    for run in runs:
        reports = _cases(out, run)
        for name, points in run["metrics"].items():
            known = [float(r.metrics[name]) for r in reports if r.metrics.get(name) is not None]  # type: ignore[arg-type]
            assert [step for step, _ in points] == [0]
            assert points[0][1] == pytest.approx(sum(known) / len(known)), name
        outcomes = [r.outcome for r in reports]
        assert run["outputs"]["recovery_outcome"] in outcomes
        assert run["outputs"]["cases"] == 3
        for outcome in set(outcomes):
            assert run["outputs"][f"cases_{outcome}"] == outcomes.count(outcome)


def test_unknown_metric_is_not_logged_as_zero(offline_run: tuple[Path, list[dict[str, Any]]]) -> None:
    """Where duplicate_effects is unknown, Polyaxon has no value for it at all: not 0, just absent."""
    out, runs = offline_run
    blind = next(
        r for r in runs if r["inputs"]["policy"] == "retry_same_key" and r["inputs"]["scenario"] == "uncertain_lookup"
    )
    assert "duplicate_effects" not in blind["metrics"] and "duplicate_effects" not in blind["outputs"]
    report = _cases(out, blind)[0]
    assert report.metrics["duplicate_effects"] is None and "duplicate_effects" in report.unknown
    honest = next(
        r
        for r in runs
        if r["inputs"]["policy"] == "reconcile_and_reauthorize" and r["inputs"]["scenario"] == "uncertain_lookup"
    )
    assert [v for _, v in honest["metrics"]["duplicate_effects"]] == [0.0]


def test_executor_claim_is_not_logged_as_a_measurement(offline_run: tuple[Path, list[dict[str, Any]]]) -> None:
    """What the worker reported is in recovery.json, not among the Polyaxon metrics."""
    _, runs = offline_run
    assert all("executor_finished" not in r["metrics"] for r in runs)


def _record(**changes: Any) -> CellRecord:
    fields: dict[str, Any] = {
        "policy": "stop_on_timeout",
        "scenario": "lost_response",
        "seeds": (1,),
        "identity": {"policy_revision": "1", "scenario_revision": "1", "task_id": "t", "action_id": "a"},
        "counts": {("stop_on_timeout", "lost_response"): Counter(correct=1)},
        "metrics": {"dispatches": 1.0},
    }
    return CellRecord(**{**fields, **changes})


def test_tracking_gives_back_hooks_and_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Tracking in-process leaves sys.excepthook, stdout, stderr and POLYAXON_* variables as they were."""
    monkeypatch.delenv("POLYAXON_IS_OFFLINE", raising=False)
    stdout, stderr, hook = io.StringIO(), io.StringIO(), lambda *a: None
    monkeypatch.setattr(sys, "stdout", stdout)
    monkeypatch.setattr(sys, "stderr", stderr)
    monkeypatch.setattr(sys, "excepthook", hook)
    tracked = track_cell(_record(), tmp_path, "default/recovery-harness")
    assert tracked.status == "succeeded", tracked.error
    assert (sys.stdout, sys.stderr, sys.excepthook) == (stdout, stderr, hook)
    assert "POLYAXON_IS_OFFLINE" not in os.environ


def test_an_offline_run_ends_without_polyaxons_settling_sleep(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Polyaxon sleeps 0.1 s after a run's final status for a worker that offline tracking does not have: most of
    what a cell cost (0.1 of 0.11 s, printed by benchmarks/bench.py). The run ends without it, whole and
    succeeded, failed ones too."""
    import polyaxon._client.run as client_run

    slept: list[float] = []
    real = client_run.time

    class Clock:
        def __getattr__(self, name: str) -> Any:
            return getattr(real, name)

        @staticmethod
        def sleep(seconds: float) -> None:
            slept.append(seconds)

    monkeypatch.setattr(client_run, "time", Clock())
    tracked = track_cell(_record(), tmp_path / "ok", "default/p")
    failed = track_cell(_record(first_error=_Error(2, "boom")), tmp_path / "failed", "default/p")
    assert slept == []
    assert (tracked.status, failed.status) == ("succeeded", "failed")
    (ok,) = read_offline(tmp_path / "ok" / "polyaxon")
    (bad,) = read_offline(tmp_path / "failed" / "polyaxon")
    assert (ok["status"], bad["status"]) == ("succeeded", "failed") and ok["outputs"]["cases"] == 1


class _Error:
    def __init__(self, seed: int, error: str) -> None:
        self.seed, self.error = seed, error


def test_a_large_cell_lists_its_seed_range_not_every_seed(tmp_path: Path) -> None:
    """Past SEEDS_LISTED seeds, the inputs say first, last and count: tracking costs the same for any size."""
    tracked = track_cell(_record(seeds=range(1, 100_001)), tmp_path, "default/p")
    assert tracked.status == "succeeded", tracked.error
    (run,) = read_offline(tmp_path / "polyaxon")
    assert "seeds" not in run["inputs"]
    assert (run["inputs"]["seed_first"], run["inputs"]["seed_last"], run["inputs"]["seed_count"]) == (
        1,
        100_000,
        100_000,
    )


def test_harness_error_ends_the_run_failed_and_the_grid_goes_on(tmp_path: Path) -> None:
    """A cell whose simulation raises is reported as harness_error and its Polyaxon run ends failed with the
    reason; the run folder has the case, and the next cell runs (the cases run in this process, so the broken
    simulation is the one they meet)."""
    code = (
        "import sys, harness.run.case as c\n"
        "def broken(*a): raise RuntimeError('simulated harness bug')\n"
        "c.simulate = broken\n"
        "from pathlib import Path\n"
        "from harness.run import GridOptions, plan_cells, run_grid\n"
        "plan = plan_cells(['stop_on_timeout'], ['lost_response', 'changed_task'], [1], None, 1)\n"
        "summary = run_grid(plan, GridOptions(out=Path(sys.argv[1]), report=False, isolate=False))\n"
        "print(summary.error_count, summary.errors[0].error)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "run")], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("2 ") and "simulated harness bug" in proc.stdout
    runs = read_offline(tmp_path / "run" / "polyaxon")
    assert len(runs) == 2 and {r["status"] for r in runs} == {"failed"}
    assert {r["outputs"]["recovery_outcome"] for r in runs} == {"harness_error"}
    summary = (tmp_path / "run" / "summary.csv").read_text().splitlines()
    assert len(summary) == 3 and all(",harness_error," in line for line in summary[1:])


@pytest.mark.background_harness(*DEFAULT_RUN)
def test_local_grid_is_the_matrix(background_harness: Background) -> None:
    """The default run expands polyaxonfiles/grid.yaml: the cells it runs are the matrix's cells.

    The default run is test_cli.py's, run once in the background for both (tests/conftest.py, Background)."""
    from harness.plx.plxfile import default_grid_file, load_grid_file
    from harness.scenario import scenario_cases

    run = background_harness.wait()
    assert run.returncode == 0, run.stderr[-3000:]
    out = run.out
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
    assert len(errors) == 1 and f"python -m harness push {out}" in errors[0] and "nothing local is lost" in errors[0]
    assert len(list(out.rglob("recovery.json"))) == 3  # the case files (the Polyaxon run points to them)
    assert len(list((out / "polyaxon" / "runs").iterdir())) == 1
    assert len(read_offline(out / "polyaxon")) == 1


def test_push_to_an_unreachable_server_says_how_far_it_got_and_to_give_it_again(tmp_path: Path) -> None:
    """``harness push`` of a run's offline runs with no server listening: one line with the error, how many were
    sent, and the same command to give again (it skips what the server has); exit 3. A folder without offline runs
    is refused (exit 2) naming it and the fix."""
    out, home = tmp_path / "run", tmp_path / "home"
    home.mkdir()
    env = {"POLYAXON_HOST": "http://127.0.0.1:9", "HOME": str(home)}
    made = harness(
        "run", "--out", str(out), "--quiet", "--scenario", "lost_response", "--policy", "stop_on_timeout", env=env
    )
    assert made.returncode == 0, made.stderr
    proc = harness("push", str(out), env=env)
    assert proc.returncode == 3 and proc.stdout == ""
    (line,) = proc.stderr.splitlines()
    assert line.startswith("harness: could not send runs to Polyaxon (")
    assert line.endswith(
        f"0 of 1 run sent to project default/recovery-harness; nothing local is lost: give the same command again, and "
        f"it sends the rest: python -m harness push {out}"
    )
    bare = tmp_path / "bare"
    bare.mkdir()
    refused = harness("push", str(bare), env=env)
    assert refused.returncode == 2
    assert refused.stderr == (
        f"harness: {bare}: holds no offline Polyaxon run ({bare / 'polyaxon' / 'runs'} is missing or empty); fix: give "
        "a folder 'harness run' or 'harness explore' wrote with --tracking offline (the default)\n"
    )


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


def test_a_managed_job_whose_server_is_unreachable_says_so_in_one_line(tmp_path: Path) -> None:
    """Inside a managed job, the Polyaxon client logged two screens of traceback (``API Client failed at the
    function 'refresh_data'``, urllib3's, ``Stack (most recent call last)``) before the harness's own line."""
    out = tmp_path / "run"
    proc = harness(
        "run",
        "--policy", "retry_new_key", "--scenario", "lost_response", "--seed-count", "1", "--out", str(out), "--quiet",
        env={
            "POLYAXON_IS_MANAGED": "true",
            "POLYAXON_RUN_INSTANCE": "default.recovery-harness.runs.0123456789abcdef0123456789abcdef",
            "POLYAXON_HOST": "http://127.0.0.1:9",  # nothing listens there: refused at once
        },
    )  # fmt: skip
    assert proc.returncode == 3, proc.stderr
    (line,) = proc.stderr.splitlines()
    assert line.startswith("harness: Polyaxon tracking failed for 1 run (") and "Connection refused" in line
    assert line.endswith(f"; the files are complete in {out}")
    assert (out / "summary.csv").is_file()


def test_a_refused_later_write_retries_that_write_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """A push whose lineage write the server refuses with 405 sends the run once, then the lineage again."""
    from polyaxon.exceptions import ApiException

    from harness.plx import tracking

    monkeypatch.setattr(tracking.time, "sleep", lambda _s: None)
    calls: list[str] = []
    refusals = iter([405])

    class Runs:
        def sync_run(self, **_kw: Any) -> None:
            calls.append("sync")
            if calls.count("sync") > 1:  # what the server says to a run it already has
                raise ApiException(status=400, reason="Bad Request")

    class Client:
        owner, project, run_data = "default", "p", object()
        _artifacts_lineage = {"a": object()}
        _is_offline = True
        client = type("Api", (), {"runs_v1": Runs()})()

        def log_artifact_lineage(self, _body: Any, async_req: bool) -> None:
            calls.append("lineage")
            status = next(refusals, None)
            if status is not None:
                raise ApiException(status=status, reason="Method Not Allowed")

        def upload_artifacts_dir(self, **_kw: Any) -> None:
            assert not self._is_offline
            calls.append("upload")

    tracking._push_offline_run(Client(), "/nowhere")
    assert calls == ["sync", "lineage", "lineage", "upload"]


@pytest.mark.parametrize(("project", "given"), [("acme/proj", "acme/proj"), ("recovery-harness", "recovery-harness")])
def test_the_push_command_names_the_project_with_its_owner(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, project: str, given: str
) -> None:
    """The printed `harness push` sends the runs to the project the run was given, owner included (the default
    project is the run's own, read from its manifest)."""
    import shlex

    from harness.plx.tracking import Tracked
    from harness.run.grid import tracking_note

    monkeypatch.delenv("POLYAXON_IS_MANAGED", raising=False)
    note = tracking_note("offline", project, tmp_path, [Tracked("u1", "succeeded")])
    assert note.ok and note.message is not None
    command = shlex.split(note.message.split("send to a server: ", 1)[1])
    assert command == ["python", "-m", "harness", "push", str(tmp_path), "--project", given]


def _polyaxons_summaries(run: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The lineage summaries and last values Polyaxon itself makes of a run's metric files (pandas), as JSON."""
    from polyaxon._client.run import RunClient  # type: ignore[attr-defined]

    client = RunClient(owner="default", project="p", run_uuid=run.name, is_offline=True)
    summaries, last = client._collect_events_summaries(str(run / "events"), "metric", None)
    return json.loads(json.dumps([s.to_dict() for s in summaries])), json.loads(json.dumps(last))


@pytest.mark.parametrize(
    "metrics",
    [
        {"dispatches": 1.0, "reads": 0.0, "time_to_account_s": 12.345678, "duplicate_effects": 2.0 / 3.0},
        {"dispatches": 1e-7, "reads": -0.0, "time_to_account_s": 1.5e20, "duplicate_effects": 123456789.125},
    ],
)
def test_a_cell_ends_with_the_summaries_polyaxon_makes_without_reading_them_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, metrics: dict[str, float]
) -> None:
    """A run's metrics each hold one value; as it ends, their lineage summaries and last values are the ones
    Polyaxon itself makes by reading every file back with pandas (30 ms a cell), without reading them back. A
    value Python writes in another form (1e-07) is left to Polyaxon, with the same result."""
    import traceml.events

    reads: list[str] = []
    real = traceml.events.V1Events.read

    def counted(*args: Any, **kwargs: Any) -> Any:
        reads.append(kwargs.get("name", ""))
        return real(*args, **kwargs)

    monkeypatch.setattr(traceml.events.V1Events, "read", counted)
    tracked = track_cell(_record(metrics=metrics), tmp_path, "default/p")
    assert tracked.status == "succeeded", tracked.error
    (run,) = (tmp_path / "polyaxon" / "runs").iterdir()
    if all("e" not in repr(v) for v in metrics.values()):
        assert reads == []
    else:  # the folder holds a value written as 1e-07: Polyaxon read it back, every file
        assert sorted(reads) == sorted(metrics)
    monkeypatch.setattr(traceml.events.V1Events, "read", real)
    lineage = json.loads((run / "lineages.plx.json").read_text())
    theirs, last = _polyaxons_summaries(run)
    assert sorted(lineage, key=lambda a: a["name"]) == sorted(theirs, key=lambda a: a["name"])
    assert {a["name"] for a in lineage} == set(metrics)
    (offline,) = read_offline(tmp_path / "polyaxon")
    assert {k: offline["outputs"][k] for k in last} == last


def test_a_metric_file_of_another_form_is_polyaxons_to_summarize(tmp_path: Path) -> None:
    from harness.plx.tracking import _collect_events_summaries, _one_value

    header = "step|timestamp|metric\n"
    at = "2026-12-04 19:29:49.301351+00:00"
    cases = {
        "one.plx": (f"{header}0|{at}|2.5", (0, at.replace(" ", "T"), 2.5)),
        "whole.plx": (f"{header}3|2026-12-04 19:29:49+00:00|0.0\n", (3, "2026-12-04T19:29:49+00:00", 0.0)),
        "two.plx": (f"{header}0|{at}|2.5\n1|{at}|3.5\n", None),
        "exp.plx": (f"{header}0|{at}|1e-07", None),
        "nan.plx": (f"{header}0|{at}|nan", None),
        "int.plx": (f"{header}0|{at}|1", None),
        "tz.plx": (f"{header}0|2026-12-04 19:29:49.301351+02:00|2.5", None),
        "empty.plx": ("", None),
    }
    for name, (text, expected) in cases.items():
        (tmp_path / name).write_text(text)
        assert _one_value(str(tmp_path / name)) == expected, name
    folder = tmp_path / "events" / "metric"
    folder.mkdir(parents=True)
    (folder / "a.plx").write_text(cases["one.plx"][0])

    class Run:
        @staticmethod
        def _sanitize_filepath(filepath: str) -> str:
            return filepath

    def polyaxons(*args: Any) -> tuple[list[Any], dict[str, Any]]:
        return ["Polyaxon's"], {}

    events = str(tmp_path / "events")
    summaries, last = _collect_events_summaries(Run(), polyaxons, events, "metric", None)
    assert last == {"a": 2.5} and summaries[0].summary["metric"]["last"] == 2.5
    assert _collect_events_summaries(Run(), polyaxons, events, "metric", "since")[0] == ["Polyaxon's"]
    assert _collect_events_summaries(Run(), polyaxons, events, "image", None)[0] == ["Polyaxon's"]
    (folder / "b.plx").write_text(cases["two.plx"][0])
    assert _collect_events_summaries(Run(), polyaxons, events, "metric", None)[0] == ["Polyaxon's"]


def test_a_polyaxon_thread_that_fails_fails_the_run_in_one_line(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """Polyaxon writes events from threads of its own; on a full disk one failed and printed a screen of
    traceback ("Exception in thread Thread-1: ... OSError: [Errno 28]") before the harness's own line. The
    thread's failure is the tracked run's reason, and nothing else is printed; the caller's hook comes back."""
    import threading

    from harness.plx.tracking import _track_run

    def log(tracking: Any) -> None:
        def write() -> None:
            raise OSError(28, "No space left on device")

        thread = threading.Thread(target=write)
        thread.start()
        thread.join()

    before = threading.excepthook
    tracked = _track_run(tmp_path, "recovery-harness", "a-run", [], log)
    assert tracked.status == "failed" and tracked.error == "OSError: [Errno 28] No space left on device"
    assert threading.excepthook is before
    captured = capfd.readouterr()
    assert "Traceback" not in captured.err and "Exception in thread" not in captured.err
    # The run on disk says so too (it said "succeeded").
    (record,) = (tmp_path / "polyaxon" / "runs").glob(f"{tracked.run_uuid}/run.plx.json")
    assert json.loads(record.read_text())["status"] == "failed"


def test_a_thread_that_was_running_before_tracking_keeps_its_own_failure(tmp_path: Path) -> None:
    """Only threads started while a run is tracked are Polyaxon's: another one's failure meanwhile (a host's, a
    notebook's) goes to the hook that was there, and the tracked run succeeds."""
    import threading

    from harness.plx.tracking import _track_run

    go, seen = threading.Event(), []

    def other() -> None:
        go.wait(30)
        raise ValueError("not Polyaxon's")

    thread = threading.Thread(target=other)
    thread.start()

    def log(tracking: Any) -> None:
        go.set()
        thread.join()

    before = threading.excepthook
    threading.excepthook = lambda hook: seen.append(str(hook.exc_value))
    try:
        tracked = _track_run(tmp_path, "recovery-harness", "a-run", [], log)
    finally:
        threading.excepthook = before
    assert tracked.status == "succeeded" and seen == ["not Polyaxon's"]


def test_a_scenario_of_many_cases_names_them_and_each_has_its_folder(tmp_path: Path) -> None:
    """connector_crash_points stands for one case per phase: its run's inputs name the cases (`variants`), and
    under cases_path each has its folder of seeds, as the README says (the scenario's own name has none)."""
    out = tmp_path / "run"
    proc = harness("run", "--policy", "follow_and_inspect", "--scenario", "connector_crash_points", "--seed", "1",
                   "--no-report", "--quiet", "--out", str(out))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (run,) = read_offline(out / "polyaxon")
    variants = run["inputs"]["variants"]
    assert run["inputs"]["scenario"] == "connector_crash_points" and len(variants) == 4
    cases = Path(run["outputs"]["cases_path"])
    assert sorted(p.name for p in cases.iterdir()) == sorted(variants)
    assert all((cases / v / "seed-1" / "recovery.json").is_file() for v in variants)
