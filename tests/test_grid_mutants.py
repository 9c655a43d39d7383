"""Running and resuming a grid (harness/run/grid.py), checked in process with small grids.

Written against the mutants mutmut 3.8.1 made of ``run_grid``, ``resume_grid``, ``_complete``, the run folder's
helpers (``new_out``, ``begin``, ``abandon``, ``check_project``, ``Ended``), the manifest's options, the wall-time
note, the Polyaxon tracking of cells (``_Tracker``, ``_track``, ``tracking_note``) and ``GridSummary``/``Progress``
(tests/MUTANTS.md, thirty-fifth pass). No test starts a process: the cases run with ``isolate=False`` or through
``supervised``, which stands in for ``harness.run.pool.supervise`` and runs the pieces in this process (a worker
process would run the harness unmutated, and under mutmut it cannot start at all). Polyaxon is replaced where
tracking is what is checked.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

import harness.plx.tracking as tracking
import harness.run.folder as folder
import harness.run.grid as grid
import harness.run.pool as pool
from harness.errors import InputError
from harness.model import MANIFEST, REPORT_HTML, REQUEST, RUN_RECORD
from harness.plx.tracking import CellRecord, PushResult, Tracked
from harness.run import GridOptions, plan_cells, run_grid
from harness.run.cell import CaseLine, CellJob, CellResult, FaultCoverage, MetricTally, Piece
from harness.run.folder import HARNESS_CODE, LOCK_FILE, Manifest, claim, harness_code_digest
from harness.run.grid import (
    DEFAULT_RUNS,
    WALL_NOTE,
    Ended,
    GridSummary,
    Progress,
    RunInterrupted,
    RunNotWritten,
    TrackingNote,
    abandon,
    begin,
    begun_as,
    check_project,
    new_out,
    resume_grid,
    tracking_note,
)
from harness.run.plan import Cell, Plan, UsageError

#: retry_same_key x connector_no_record_yet: incorrect at seeds 1 and 2, correct at 3.
POLICY, SCENARIO = "retry_same_key", "connector_no_record_yet"
NONE = GridOptions(tracking="none", report=False, isolate=False)


class Supervised:
    """Stands in for ``harness.run.pool.supervise``: runs every piece here, in order, and notes how it was
    called (pieces, concurrency, budget)."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, int, float | None]] = []

    def __call__(
        self,
        jobs: Sequence[Piece],
        concurrency: int,
        case_timeout_s: float | None,
        finished: Callable[[int, Any], None],
    ) -> None:
        self.calls.append((len(jobs), concurrency, case_timeout_s))
        for k, piece in enumerate(jobs):
            finished(k, piece.execute(lambda _: None))


@pytest.fixture(autouse=True)
def supervised(monkeypatch: pytest.MonkeyPatch) -> Supervised:
    fake = Supervised()
    monkeypatch.setattr(pool, "supervise", fake)
    return fake


def _plan(policies: Sequence[str] = (POLICY,), scenarios: Sequence[str] = (SCENARIO,), seeds: Sequence[int] = (1, 2, 3),
          concurrency: int = 1) -> Plan:  # fmt: skip
    return plan_cells(list(policies), list(scenarios), list(seeds), None, concurrency)


def _files(out: Path) -> list[str]:
    return sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())


def _run_json(out: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((out / RUN_RECORD).read_text(encoding="utf-8"))
    return data


# --- GridSummary and Progress ---------------------------------------------------------------------------------


def _summary(**kw: Any) -> GridSummary:
    base: dict[str, Any] = {
        "out": Path("o"),
        "policies": ("p", "q"),
        "scenarios": ("s", "t"),
        "counts": {
            ("p", "s"): Counter(correct=3, harness_error=2),
            ("q", "s"): Counter(incorrect=1, harness_error=1),
            ("p", "t"): Counter(correct=4),
        },
        "notable": (),
        "summary_csv": Path("o/summary.csv"),
        "tracking": TrackingNote(True, None),
        "report_html": None,
    }
    return GridSummary(**{**base, **kw})


def test_a_summary_counts_finished_and_failed_cases_per_scenario_over_every_policy() -> None:
    summary = _summary()
    assert summary.finished("s") == (4, 3)
    assert summary.finished("t") == (4, 0)
    assert summary.finished("u") == (0, 0)
    assert summary.cases == 11


def test_a_summary_names_its_harness_errors_and_unfired_faults() -> None:
    def line(seed: int, outcome: str) -> CaseLine:
        return CaseLine("p", "s", seed, outcome, f"r{seed}")

    fired = FaultCoverage("s", 0, "f", 2, 1)
    never = FaultCoverage("s", 1, "g", 2, 0)
    summary = _summary(notable=(line(1, "incorrect"), line(2, "harness_error"), line(3, "harness_error")),
                       coverage=(fired, never))  # fmt: skip
    assert summary.errors == (line(2, "harness_error"), line(3, "harness_error"))
    assert summary.unfired == (never,)
    assert _summary().error_count == 0 and _summary().failing_files == (0, 0) and _summary().coverage == ()


@pytest.mark.parametrize(
    ("progress", "rate", "remaining"),
    [
        (Progress(1, 4, 10, 40, 2.0), 5.0, 6.0),
        (Progress(1, 4, 10, 40, 0.0), None, None),
        (Progress(1, 4, 10, 40, -1.0), None, None),
        (Progress(1, 4, 10, 40, 2.0, concurrency=2), None, None),
        (Progress(2, 4, 20, 40, 4.0, concurrency=2), 5.0, 4.0),
        (Progress(1, 1, 10, 10, 2.0, concurrency=2), 5.0, 0.0),
        (Progress(0, 0, 0, 0, 2.0, concurrency=3), 0.0, None),  # no rate to divide by: no time left said
    ],
)
def test_progress_has_a_rate_once_as_many_pieces_as_run_side_by_side_have_finished(
    progress: Progress, rate: float | None, remaining: float | None
) -> None:
    assert progress.rate == rate
    assert progress.remaining_s == remaining
    assert Progress(1, 2, 3, 4, 5.0).concurrency == 1


# --- Ended, check_project -----------------------------------------------------------------------------------------


def test_a_run_record_gives_what_the_exit_status_was_made_of(tmp_path: Path) -> None:
    record = tmp_path / RUN_RECORD
    record.write_text(json.dumps({"harness_errors": 3, "unfired": 2, "tracking_ok": False}))
    assert Ended.read(tmp_path) == Ended(3, 2, False)
    record.write_text(json.dumps({"harness_errors": "4", "unfired": 1.0, "tracking_ok": None}))
    assert Ended.read(tmp_path) == Ended(4, 1, True)
    record.write_text("{}")  # written before these were kept: nothing wrong
    assert Ended.read(tmp_path) == Ended(0, 0, True)


@pytest.mark.parametrize(
    ("text", "kind"),
    [(None, "FileNotFoundError"), ("{", "JSONDecodeError"), ("[]", "AttributeError"),
     ('{"unfired": null}', "TypeError"), ('{"harness_errors": "x"}', "ValueError")],
)  # fmt: skip
def test_a_run_record_that_is_not_one_is_refused_with_its_fix(tmp_path: Path, text: str | None, kind: str) -> None:
    if text is not None:
        (tmp_path / RUN_RECORD).write_text(text)
    with pytest.raises(UsageError) as refused:
        Ended.read(tmp_path)
    assert str(refused.value) == (
        f"{tmp_path / RUN_RECORD}: not a run record the harness wrote ({kind}); fix: start a new run with another --out"
    )
    assert refused.value.__cause__ is None and refused.value.__suppress_context__


@pytest.mark.parametrize("name", ["default/recovery-harness", "p", "0", "a-b_c9", "owner/x", "o_1/n-2"])
def test_a_polyaxon_project_name_is_accepted(name: str) -> None:
    check_project(name)


@pytest.mark.parametrize(
    "name", ["", "A", "a/B", "-a", "_a", "a/-b", "a/b/c", "/a", "a/", "a b", "a.b", "a\n", "o/a\n"]
)
def test_a_name_that_is_not_a_polyaxon_project_is_refused(name: str) -> None:
    with pytest.raises(UsageError) as refused:
        check_project(name)
    assert str(refused.value) == (
        f"--project '{name}': not a Polyaxon project name; fix: use [owner/]name in lower case"
    )


# --- The run's folder: new_out, begin, abandon ------------------------------------------------------------------


def test_a_given_output_folder_is_made_with_its_parents_or_taken_empty(tmp_path: Path) -> None:
    deep = tmp_path / "a" / "b" / "c"
    assert new_out(deep) == deep and deep.is_dir()
    assert new_out(deep) == deep  # empty: taken again
    relative = Path("rel")
    os.chdir(tmp_path)
    try:
        assert new_out(relative) == relative  # as given, not made absolute
    finally:
        os.chdir(Path(__file__).parent)


def test_a_given_output_folder_that_holds_anything_is_refused(tmp_path: Path) -> None:
    (tmp_path / "x").write_text("")
    with pytest.raises(UsageError) as refused:
        new_out(tmp_path)
    assert str(refused.value) == f"--out {tmp_path}: is not empty; fix: give a new or empty folder"
    with pytest.raises(UsageError) as refused:
        new_out(tmp_path / "x")
    assert str(refused.value) == f"--out {tmp_path / 'x'}: is a file; fix: give a folder"
    with pytest.raises(UsageError) as refused:
        new_out(tmp_path / "x" / "y")
    assert (
        str(refused.value)
        == f"--out {tmp_path / 'x' / 'y'}: cannot create it (Not a directory); fix: give a writable folder"
    )


class _Now:
    """``datetime`` whose ``now`` is one fixed second."""

    @staticmethod
    def now(tz: object) -> datetime:
        assert tz is UTC
        return datetime(2026, 12, 6, 15, 4, 5, tzinfo=UTC)


def test_the_default_output_folder_is_the_utc_second_then_numbered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(grid, "datetime", _Now)
    runs = tmp_path / "reports" / "runs"
    assert new_out(None) == runs / "20261206T150405Z"
    assert new_out(None) == runs / "20261206T150405Z-1"
    assert new_out(None) == runs / "20261206T150405Z-2"
    assert sorted(p.name for p in runs.iterdir()) == ["20261206T150405Z", "20261206T150405Z-1", "20261206T150405Z-2"]
    assert all(not any(p.iterdir()) for p in runs.iterdir())
    for n in range(3, 999):
        (runs / f"20261206T150405Z-{n}").mkdir()
    assert new_out(None) == runs / "20261206T150405Z-999"
    with pytest.raises(UsageError) as refused:
        new_out(None)
    assert str(refused.value) == f"too many runs named 20261206T150405Z in {Path('reports') / 'runs'}; fix: pass --out"


def test_the_default_output_folder_that_cannot_be_made_is_refused_with_its_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "reports").write_text("")
    with pytest.raises(UsageError) as refused:
        new_out(None)
    assert str(refused.value) == (
        f"{tmp_path / 'reports' / 'runs'}: cannot create the default output folder (Not a directory); fix: give "
        "--out DIR, or run from a folder where reports/runs can be made"
    )


def test_a_run_begins_by_claiming_its_folder_and_writing_its_command(tmp_path: Path) -> None:
    out = tmp_path / "run"
    hold = begin(out, ["run", "--seed", "1"])
    try:
        assert hold.out == out
        assert json.loads((out / REQUEST).read_text()) == {"argv": ["run", "--seed", "1"], "cwd": os.getcwd()}
        assert sorted(p.name for p in out.iterdir()) == [LOCK_FILE, REQUEST]
        with pytest.raises(UsageError, match="in use by another harness run"):
            claim(out, fresh=False)
    finally:
        hold.release()
    claim(out, fresh=False).release()


def test_a_run_that_cannot_write_its_command_lets_its_folder_go(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno

    import harness.run.files as files

    def full(path: Path, text: str) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(files, "write_atomic", full)
    out = tmp_path / "run"
    with pytest.raises(UsageError) as refused:
        begin(out, ["run"])
    assert (
        str(refused.value) == f"--out {out}: cannot write in it (No space left on device); fix: give a writable folder"
    )
    assert refused.value.__cause__ is None and refused.value.__suppress_context__
    claim(out, fresh=False).release()  # released


def test_abandoning_a_run_leaves_nothing_of_it(tmp_path: Path) -> None:
    made = tmp_path / "made"
    abandon(begin(made, ["run"]), created=True)
    assert not made.exists()
    given = tmp_path / "given"
    given.mkdir()
    hold = begin(given, ["run"])
    abandon(hold, created=False)
    assert given.is_dir() and list(given.iterdir()) == []
    claim(given, fresh=True).release()  # released


def test_abandoning_a_default_run_removes_the_folders_it_made_and_no_other(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    abandon(begin(None, ["run"]), created=True)
    assert list(tmp_path.iterdir()) == []  # reports/runs/<stamp>, reports/runs and reports: all made by it
    (tmp_path / "reports" / "runs").mkdir(parents=True)
    (tmp_path / "reports" / "keep").write_text("")
    hold = begin(None, ["run"])
    assert hold.out.parent == (DEFAULT_RUNS).absolute()
    abandon(hold, created=True)
    assert _files(tmp_path) == ["reports/keep"] and not (tmp_path / "reports" / "runs").exists()
    other = tmp_path / "reports" / "runs" / "other"
    other.mkdir(parents=True)
    abandon(begin(None, ["run"]), created=True)
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")) == [
        "reports", "reports/keep", "reports/runs", "reports/runs/other"
    ]  # fmt: skip


def test_abandoning_a_run_whose_request_or_lock_is_gone_leaves_nothing_either(tmp_path: Path) -> None:
    for name in (REQUEST, LOCK_FILE):
        out = tmp_path / name
        hold = begin(out, ["run"])
        (out / name).unlink()
        abandon(hold, created=True)
        assert not out.exists()


def test_abandoning_a_given_run_leaves_its_parent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only a folder under ``reports/runs`` takes its parents with it: another run's parent stays, empty."""
    monkeypatch.chdir(tmp_path)
    parent = tmp_path / "p"
    abandon(begin(parent / "run", ["run"]), created=True)
    assert parent.is_dir() and list(parent.iterdir()) == []


# --- run_grid: what it checks first ----------------------------------------------------------------------------


def test_inside_a_polyaxon_job_a_grid_of_several_cells_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(grid, "is_managed", lambda: True)
    plan = _plan(scenarios=(SCENARIO, "lost_response"), seeds=(1,))
    with pytest.raises(UsageError) as refused:
        run_grid(plan, GridOptions(out=tmp_path / "a", tracking="offline", report=False, isolate=False))
    assert str(refused.value) == (
        "inside a Polyaxon job the harness logs into that job's one run, but 2 cells were asked for; fix: pass one "
        "--policy and one --scenario (as polyaxonfiles/component.yaml does)"
    )
    assert not (tmp_path / "a").exists()
    # Untracked, or one cell: run.
    assert run_grid(plan, replace(NONE, out=tmp_path / "b")).cases == 2
    monkeypatch.setattr(grid, "track_cell", None, raising=False)
    monkeypatch.setattr(tracking, "track_cell", lambda record, out, project, run_uuid: Tracked(run_uuid, "succeeded"))
    one = run_grid(_plan(seeds=(1,)), GridOptions(out=tmp_path / "c", tracking="offline", report=False, isolate=False))
    assert one.cases == 1 and one.tracking.ok


def test_bad_input_is_refused_before_anything_is_written_or_said(tmp_path: Path) -> None:
    said: list[str] = []
    with pytest.raises(UsageError, match="not a Polyaxon project name"):
        run_grid(_plan(), replace(NONE, out=tmp_path / "a", project="Bad"), checked=lambda: said.append("checked"))
    assert said == [] and not (tmp_path / "a").exists()
    bad = Plan((Cell(POLICY, "no_such_scenario", (1,)),), 1)
    with pytest.raises(InputError):
        run_grid(bad, replace(NONE, out=tmp_path / "b"), checked=lambda: said.append("checked"))
    assert said == [] and not (tmp_path / "b").exists()
    run_grid(_plan(), replace(NONE, out=tmp_path / "c"), checked=lambda: said.append(str(list((tmp_path).iterdir()))))
    assert said == ["[]"]  # said once the input is good, before the folder is made


def test_a_begun_run_writes_in_its_folder_and_lets_it_go(tmp_path: Path) -> None:
    out = tmp_path / "run"
    hold = begin(out, ["run"])
    summary = run_grid(_plan(), replace(NONE, out=tmp_path / "ignored"), begun=hold)
    assert summary.out == out and not (tmp_path / "ignored").exists()
    assert (out / REQUEST).is_file() and (out / RUN_RECORD).is_file()
    claim(out, fresh=False).release()


def test_a_run_lets_its_folder_go_when_it_ends_or_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "run"
    run_grid(_plan(), replace(NONE, out=out))
    claim(out, fresh=False).release()

    def broken(*args: object) -> object:
        raise RuntimeError("broken")

    monkeypatch.setattr(grid, "execute_cell", broken)
    with pytest.raises(RuntimeError):
        run_grid(_plan(), replace(NONE, out=tmp_path / "b"))
    claim(tmp_path / "b", fresh=False).release()


def test_a_manifest_that_cannot_be_written_says_to_resume(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import errno

    real = grid.write_atomic

    def full(path: Path, text: str) -> None:
        if path.name == MANIFEST:
            raise OSError(errno.ENOSPC, "No space left on device")
        real(path, text)

    monkeypatch.setattr(grid, "write_atomic", full)
    out = tmp_path / "run"
    with pytest.raises(RunNotWritten) as refused:
        run_grid(_plan(), replace(NONE, out=out))
    assert str(refused.value) == (
        f"cannot write the run's files in {out} (No space left on device); fix: make room or give a writable "
        f"folder, then resume: python -m harness run --resume {out}"
    )
    assert refused.value.__cause__ is None and refused.value.__suppress_context__
    claim(out, fresh=False).release()

    def bare(path: Path, text: str) -> None:
        raise OSError("no strerror")

    monkeypatch.setattr(grid, "write_atomic", bare)
    with pytest.raises(RunNotWritten) as refused:
        run_grid(_plan(), replace(NONE, out=tmp_path / "b"))
    assert "(no strerror)" in str(refused.value)


def test_the_manifest_keeps_the_cells_concurrency_options_and_fingerprints(tmp_path: Path) -> None:
    out = tmp_path / "run"
    options = replace(NONE, out=out, records="compact", failing_files=3, case_timeout_s=2.5, junit=tmp_path / "j.xml")
    run_grid(_plan(concurrency=2), options)
    manifest = Manifest.read(out)
    assert manifest.cells == (Cell(POLICY, SCENARIO, (1, 2, 3)),) and manifest.concurrency == 2
    assert manifest.options == {
        "tracking": "none", "project": "default/recovery-harness", "report": False, "records": "compact",
        "failing_files": 3, "case_timeout_s": 2.5, "unfired": "fail", "junit": str(tmp_path / "j.xml"),
        "check": False,
    }  # fmt: skip
    assert sorted(manifest.fingerprints) == [f"policy {POLICY}", f"scenario {SCENARIO} ({SCENARIO})", HARNESS_CODE]
    assert manifest.fingerprints[HARNESS_CODE] == harness_code_digest()
    assert begun_as(out) == (Plan(manifest.cells, 2), replace(options, isolate=True))


# --- _complete: what a run writes and says -------------------------------------------------------------------


def test_a_run_writes_its_cases_summary_coverage_and_run_record(tmp_path: Path) -> None:
    out = tmp_path / "run"
    plan = _plan(policies=(POLICY, "stop_on_timeout"), scenarios=(SCENARIO, "lost_response"), concurrency=2)
    summary = run_grid(plan, replace(NONE, out=out))
    record = _run_json(out)
    assert 0 <= record.pop("wall_time_s") < 60
    assert record == {
        "cells": 4, "cases": 12, "policies": [POLICY, "stop_on_timeout"], "scenarios": [SCENARIO, "lost_response"],
        "concurrency": 2, "processes": 1, "tracking": "none", "project": "default/recovery-harness", "polyaxon_runs": {},
        "harness_errors": 0, "unfired": 0, "unknown": 0, "tracking_ok": True,
    }  # fmt: skip
    assert (out / RUN_RECORD).read_text().startswith('{\n  "cells": 4,\n  "cases": 12,\n')
    assert (out / RUN_RECORD).read_text().endswith("\n}\n")
    assert summary.out == out and summary.policies == (POLICY, "stop_on_timeout")
    assert summary.scenarios == (SCENARIO, "lost_response")
    assert summary.counts == {
        (POLICY, SCENARIO): Counter(incorrect=2, correct=1),
        (POLICY, "lost_response"): Counter(correct=3),
        ("stop_on_timeout", SCENARIO): Counter(abandoned=3),
        ("stop_on_timeout", "lost_response"): Counter(abandoned=3),
    }
    assert [(n.policy, n.scenario, n.seed, n.outcome) for n in summary.notable] == [
        (POLICY, SCENARIO, 1, "incorrect"), ("stop_on_timeout", SCENARIO, 1, "abandoned"),
        ("stop_on_timeout", "lost_response", 1, "abandoned"),
    ]  # fmt: skip
    assert summary.summary_csv == out / "summary.csv"
    rows = (out / "summary.csv").read_text().splitlines()
    assert [r.split(",")[0:5:2] for r in rows[1:]] == [
        [p, s, str(n)] for p in (POLICY, "stop_on_timeout") for s in (SCENARIO, "lost_response") for n in (1, 2, 3)
    ]
    assert summary.tracking == TrackingNote(True, None) and summary.report_html is None
    assert [(c.scenario, c.index, c.reached, c.fired) for c in summary.coverage] == [
        (SCENARIO, 0, 6, 6), (SCENARIO, 1, 3, 3), (SCENARIO, 2, 5, 5), (SCENARIO, 3, 5, 5), ("lost_response", 0, 6, 6)
    ]  # fmt: skip
    assert (out / "coverage.json").read_text() == grid.coverage_json(summary.coverage, Counter())
    assert summary.error_count == 0 and summary.failing_files == (0, 0)
    assert not (out / ".parts").exists()
    assert len([f for f in _files(out) if f.endswith("recovery.json")]) == 12


def _erring(real: Callable[..., CellResult], errors: int) -> Callable[..., CellResult]:
    """``execute_cell`` whose tally says ``errors`` of its cases were harness errors, one named (the counts as
    run: only the tally's own counts are changed)."""

    def run(job: CellJob, cell: int, *rest: object) -> CellResult:
        result = real(job, cell, *rest)
        key = next(iter(result.counts))
        result.counts[key]["harness_error"] += errors
        result.errors += errors
        result.notable.append(CaseLine(key[0], key[1], 99, "harness_error", "r", error="died"))
        return result

    return run


def test_a_run_record_counts_harness_errors_and_unfired_faults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(grid, "execute_cell", _erring(grid.execute_cell, 2))
    out = tmp_path / "run"
    # stop_on_timeout x connector_no_record_yet seed 1 never reaches the second delayed request: an unfired fault
    # in a scenario with harness errors (unknown); lost_response's fault fires.
    plan = _plan(policies=("stop_on_timeout",), scenarios=(SCENARIO, "lost_response"), seeds=(1,))
    summary = run_grid(plan, replace(NONE, out=out))
    record = _run_json(out)
    assert record["harness_errors"] == 4 and summary.error_count == 4
    assert record["cases"] == 6
    never, unknown = grid.unfired_or_unknown(summary.coverage, grid.harness_errors(summary.counts))
    assert (record["unfired"], record["unknown"]) == (never, unknown)
    assert [n.outcome for n in summary.notable] == ["abandoned", "harness_error", "abandoned", "harness_error"]
    assert Ended.read(out) == Ended(4, never, True)


def test_a_run_record_counts_an_unfired_fault_apart_from_an_unknown_one(tmp_path: Path) -> None:
    out = tmp_path / "run"
    plan = _plan(policies=("stop_on_timeout",), scenarios=(SCENARIO,), seeds=(1,))
    summary = run_grid(plan, replace(NONE, out=out))
    never = [c for c in summary.coverage if c.fired == 0]
    record = _run_json(out)
    assert (record["unfired"], record["unknown"]) == (len(never), 0)
    assert len(never) >= 1


def test_each_finished_piece_is_reported_with_the_run_so_far(tmp_path: Path, supervised: Supervised) -> None:
    seen: list[tuple[Progress, CellJob, CellResult]] = []
    plan = _plan(scenarios=(SCENARIO, "lost_response"), seeds=(1, 2), concurrency=2)
    run_grid(plan, replace(NONE, out=tmp_path / "a"), progress=lambda p, j, r: seen.append((p, j, r)))
    assert [(p.pieces_done, p.pieces, p.cases_done, p.cases, p.concurrency) for p, _, _ in seen] == [
        (1, 2, 2, 4, 1),
        (2, 2, 4, 4, 1),
    ]  # in process: one at a time
    assert [(j.scenario_spec, tuple(j.seeds)) for _, j, _ in seen] == [(SCENARIO, (1, 2)), ("lost_response", (1, 2))]
    assert [r.counts for _, _, r in seen] == [{(POLICY, SCENARIO): Counter(incorrect=2)},
                                              {(POLICY, "lost_response"): Counter(correct=2)}]  # fmt: skip
    assert 0 < seen[0][0].elapsed_s <= seen[1][0].elapsed_s < 60
    seen.clear()
    assert supervised.calls == []
    run_grid(plan, replace(NONE, out=tmp_path / "b", isolate=True, case_timeout_s=7.5),
             progress=lambda p, j, r: seen.append((p, j, r)))  # fmt: skip
    assert supervised.calls == [(2, 2, 7.5)]
    assert [(p.pieces_done, p.pieces, p.cases_done, p.cases, p.concurrency) for p, _, _ in seen] == [
        (1, 2, 2, 4, 2), (2, 2, 4, 4, 2)
    ]  # fmt: skip
    assert [(j.scenario_spec, tuple(j.seeds)) for _, j, _ in seen] == [(SCENARIO, (1, 2)), ("lost_response", (1, 2))]


def test_a_run_notes_its_wall_time_as_each_piece_ends(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "run"
    notes: list[str] = []

    def progress(p: Progress, job: CellJob, result: CellResult) -> None:
        note = out / ".parts" / WALL_NOTE
        notes.append(note.read_text() if note.exists() else "")

    ticks = iter([100.0, 101.25, 103.5, 106.12345, 106.12345, 106.12345])
    monkeypatch.setattr(grid.time, "perf_counter", lambda: next(ticks))
    run_grid(_plan(scenarios=(SCENARIO, "lost_response"), seeds=(1,)), replace(NONE, out=out), progress=progress)
    # started at 100; piece 1: progress at 101.25, noted at 103.5; piece 2: progress at 106, noted at 106.
    assert notes == ["", "3.500\n"]
    assert _run_json(out)["wall_time_s"] == 6.123  # to the millisecond


def test_a_run_noted_earlier_adds_its_wall_time(tmp_path: Path) -> None:
    out = tmp_path / "run"
    (out / ".parts").mkdir(parents=True)
    (out / ".parts" / WALL_NOTE).write_text("1000.0\n")
    seen: list[float] = []
    grid._complete(out, _plan(seeds=(1,)), NONE, grid.load_grid([POLICY], [SCENARIO], [0]),
                   lambda p, j, r: seen.append(p.elapsed_s), None)  # fmt: skip
    assert 1000 < _run_json(out)["wall_time_s"] < 1060
    assert 0 < seen[0] < 60


def test_the_wall_time_note_is_written_to_the_millisecond_and_read_back(tmp_path: Path) -> None:
    grid._note_wall_s(tmp_path, 12.3456)
    assert (tmp_path / ".parts" / WALL_NOTE).read_text() == "12.346\n"
    assert [p.name for p in tmp_path.iterdir()] == [".parts"]
    assert grid._earlier_wall_s(tmp_path) == 12.346
    grid._note_wall_s(tmp_path, 0.5)
    assert grid._earlier_wall_s(tmp_path) == 0.5
    grid._note_wall_s(tmp_path, 0.0)  # the folder is there already
    assert grid._earlier_wall_s(tmp_path) == 0.0
    (tmp_path / ".parts" / WALL_NOTE).write_text("1e308\n")
    assert grid._earlier_wall_s(tmp_path) == 1e308
    (tmp_path / ".parts" / WALL_NOTE).write_text("-0.001\n")
    assert grid._earlier_wall_s(tmp_path) == 0.0


def test_an_interrupted_run_notes_its_wall_time_and_says_how_to_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "my run"
    calls: list[int] = []
    real = grid.execute_cell

    def stopped(job: CellJob, cell: int, *rest: object) -> CellResult:
        calls.append(cell)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(job, cell, *rest)

    monkeypatch.setattr(grid, "execute_cell", stopped)
    with pytest.raises(RunInterrupted) as stop:
        run_grid(_plan(scenarios=(SCENARIO, "lost_response"), seeds=(1,)), replace(NONE, out=out))
    assert str(stop.value) == f"interrupted; {out} is resumable: python -m harness run --resume '{out}'"
    assert stop.value.out == out
    assert stop.value.__cause__ is None and stop.value.__suppress_context__
    assert 0 <= float((out / ".parts" / WALL_NOTE).read_text()) < 60

    # Its note cannot be written either: still interrupted.
    def unwritable(out: Path, wall_s: float) -> None:
        raise OSError("read-only")

    calls.clear()
    monkeypatch.setattr(grid, "_note_wall_s", unwritable)
    monkeypatch.setattr(grid, "execute_cell", lambda job, cell, *rest: (_ for _ in ()).throw(KeyboardInterrupt))
    with pytest.raises(RunInterrupted):
        run_grid(_plan(seeds=(1,)), replace(NONE, out=tmp_path / "b"))


def test_a_run_that_cannot_write_its_files_says_how_to_resume(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import errno

    real = grid.write_atomic

    def full(path: Path, text: str) -> None:
        if path.name == "coverage.json":
            raise OSError(errno.EROFS, "Read-only file system")
        real(path, text)

    monkeypatch.setattr(grid, "write_atomic", full)
    out = tmp_path / "run"
    with pytest.raises(RunNotWritten) as refused:
        run_grid(_plan(seeds=(1,)), replace(NONE, out=out))
    assert str(refused.value) == (
        f"cannot write the run's files in {out} (Read-only file system); fix: make room or give a writable folder, "
        f"then resume: python -m harness run --resume {out}"
    )
    assert refused.value.__cause__ is None and refused.value.__suppress_context__
    assert (refused.value.folder, refused.value.reason) == (out, "Read-only file system")
    assert (out / ".parts").is_dir()  # kept for the resume

    def bare(path: Path, text: str) -> None:
        if path.name == "coverage.json":
            raise OSError("bare")
        real(path, text)

    monkeypatch.setattr(grid, "write_atomic", bare)
    with pytest.raises(RunNotWritten) as refused:
        run_grid(_plan(seeds=(1,)), replace(NONE, out=tmp_path / "b"))
    assert refused.value.reason == "bare"


def test_compact_records_without_a_cap_count_the_failing_files_beside_them(tmp_path: Path) -> None:
    compact = run_grid(_plan(), replace(NONE, out=tmp_path / "a", records="compact"))
    files = sorted((tmp_path / "a" / "cases").rglob("recovery.json"))
    assert len(files) == 2  # seeds 1 and 2 are incorrect
    assert compact.failing_files == (2, sum(p.stat().st_size for p in files))
    capped = run_grid(_plan(), replace(NONE, out=tmp_path / "b", records="compact", failing_files=1))
    assert capped.failing_files == (0, 0)  # bounded: nothing to say
    assert [p.parent.name for p in (tmp_path / "b").rglob("recovery.json")] == ["seed-1"]  # the cap, kept
    full = run_grid(_plan(), replace(NONE, out=tmp_path / "c", records="full"))
    assert full.failing_files == (0, 0)
    auto = run_grid(_plan(), replace(NONE, out=tmp_path / "d"))
    assert auto.failing_files == (0, 0) and len(list((tmp_path / "d").rglob("recovery.json"))) == 3


def test_compact_records_of_many_pieces_count_every_failing_file(tmp_path: Path) -> None:
    plan = _plan(seeds=range(1, 201), concurrency=2)
    summary = run_grid(plan, replace(NONE, out=tmp_path / "a", records="compact"))
    files = sorted((tmp_path / "a" / "cases").rglob("recovery.json"))
    failing = sum(n for o, n in summary.counts[(POLICY, SCENARIO)].items() if o != "correct")
    assert len(files) == failing > 50
    assert summary.failing_files == (failing, sum(p.stat().st_size for p in files))


class _Page:
    """Stands in for ``write_report`` and ``draw_timelines``: notes the calls, writes a page."""

    def __init__(self) -> None:
        self.calls: list[tuple[Path, tuple[str, ...] | None, object]] = []
        self.drawn: list[tuple[tuple[Path, ...], int]] = []

    def write_report(self, out: Path, order: Sequence[str] | None = None, draw: Any = None, progress: Any = None,
                     **kw: Any) -> Path:  # fmt: skip
        assert kw == {}
        self.calls.append((out, tuple(order) if order is not None else None, progress))
        draw([out / "x.json"])
        (out / REPORT_HTML).write_text("page")
        return out / REPORT_HTML

    def draw_timelines(self, paths: Sequence[Path], concurrency: int) -> None:
        self.drawn.append((tuple(paths), concurrency))


@pytest.fixture
def page(monkeypatch: pytest.MonkeyPatch) -> _Page:
    """The report's module is replaced whole: importing it (pandas, matplotlib) takes seconds."""
    import types

    import harness.run.pictures as pictures

    fake = _Page()
    module = types.ModuleType("harness.present.html_report")
    module.write_report = fake.write_report  # type: ignore[attr-defined]
    # What a piece that draws its cell's timelines asks of it (harness.run.pictures): nothing drawn.
    module.UNDRAWABLE = ()  # type: ignore[attr-defined]
    module.render_timeline = lambda *args, **kwargs: None  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "harness.present.html_report", module)
    monkeypatch.setattr(pictures, "draw_timelines", fake.draw_timelines)
    return fake


def test_a_run_with_its_report_draws_it_last_in_the_grids_order(tmp_path: Path, page: _Page) -> None:
    out = tmp_path / "run"
    reading = print
    plan = _plan(policies=("stop_on_timeout", POLICY), seeds=(1,), concurrency=3)
    jobs: list[CellJob] = []
    summary = run_grid(
        plan, replace(NONE, out=out, report=True, case_timeout_s=8.5), reading=reading,
        progress=lambda p, job, r: jobs.append(job),
    )  # fmt: skip
    # Each (one-piece) cell draws its own timelines as it ends, under the run's budget.
    assert [(j.timelines, j.case_timeout_s, j.failing_files, j.records) for j in jobs] == [
        (True, 8.5, None, "full")
    ] * 2
    assert page.calls == [(out, ("stop_on_timeout", POLICY), reading)]
    assert page.drawn == [((out / "x.json",), 1)]  # in process: one at a time
    assert summary.report_html == out / REPORT_HTML
    page.calls.clear()
    page.drawn.clear()
    run_grid(plan, replace(NONE, out=tmp_path / "iso", report=True, isolate=True))
    assert page.drawn == [((tmp_path / "iso" / "x.json",), 3)]


def test_a_run_without_its_report_draws_none_unless_a_page_is_there(tmp_path: Path, page: _Page) -> None:
    out = tmp_path / "run"
    assert run_grid(_plan(seeds=(1,)), replace(NONE, out=out)).report_html is None
    assert page.calls == [] and not (out / REPORT_HTML).exists()
    # Stopped after `harness report` drew a page of it: drawn again, so that no page tells less than the folder.
    stopped = tmp_path / "stopped"
    shutil.copytree(out, stopped)
    (stopped / RUN_RECORD).unlink()
    (stopped / ".parts").mkdir()
    (stopped / REPORT_HTML).write_text("old")
    summary = resume_grid(stopped, report=False)
    assert summary is not None and summary.report_html == stopped / REPORT_HTML
    assert [c[0] for c in page.calls] == [stopped]


# --- resume_grid ------------------------------------------------------------------------------------------------


def _stopped(tmp_path: Path, plan: Plan, options: GridOptions, after: int) -> Path:
    """A run of ``plan`` stopped (Ctrl-C) as its piece number ``after`` (from 1) began, or, past its last piece,
    as it began its summary."""
    out = tmp_path / "stopped"
    real, summary = grid.execute_cell, grid.write_summary
    count = [0]

    def stop(job: CellJob, cell: int, *rest: object) -> CellResult:
        count[0] += 1
        if count[0] == after:
            raise KeyboardInterrupt
        return real(job, cell, *rest)

    def stop_summary(*args: object) -> Path:
        raise KeyboardInterrupt

    grid.execute_cell, grid.write_summary = stop, stop_summary  # type: ignore[assignment]
    try:
        with pytest.raises(RunInterrupted):
            run_grid(plan, replace(options, out=out))
    finally:
        grid.execute_cell, grid.write_summary = real, summary
    return out


def test_a_resumed_run_runs_only_what_is_missing_and_ends_as_a_whole_run_would(
    tmp_path: Path, supervised: Supervised
) -> None:
    plan = _plan(scenarios=(SCENARIO, "lost_response"), seeds=(1, 2), concurrency=2)
    whole = run_grid(plan, replace(NONE, out=tmp_path / "whole", case_timeout_s=9.0))
    out = _stopped(tmp_path, plan, replace(NONE, case_timeout_s=9.0), after=2)
    seen: list[tuple[int, int, int, int, int]] = []
    resumed = resume_grid(out, progress=lambda p, j, r: seen.append(
        (p.pieces_done, p.pieces, p.cases_done, p.cases, p.concurrency)), report=False)  # fmt: skip
    assert supervised.calls == [(1, 2, 9.0)]  # the manifest's options, run as `harness run` runs them
    assert seen == [(1, 1, 2, 2, 2)]
    assert resumed is not None
    assert replace(resumed, out=whole.out, summary_csv=whole.summary_csv) == whole
    assert (out / "summary.csv").read_bytes() == (tmp_path / "whole" / "summary.csv").read_bytes()
    record, whole_record = _run_json(out), _run_json(tmp_path / "whole")
    record.pop("wall_time_s"), whole_record.pop("wall_time_s")
    # Its pieces ran in the manifest's two processes (the whole run's, in this process, one at a time).
    assert (record.pop("processes"), whole_record.pop("processes")) == (2, 1)
    assert record == whole_record
    assert not (out / ".parts").exists()
    claim(out, fresh=False).release()
    assert resume_grid(out) is None  # complete


def test_a_complete_run_whose_report_was_not_written_completes_again(tmp_path: Path, page: _Page) -> None:
    out = tmp_path / "run"
    run_grid(_plan(seeds=(1,)), replace(NONE, out=out, report=True))
    (out / ".parts").mkdir()  # stopped after run.json, before the pieces' parts went
    summary = resume_grid(out)
    assert summary is not None and summary.report_html == out / REPORT_HTML and len(page.calls) == 2
    assert resume_grid(out) is None


def test_a_resume_with_no_report_writes_none(tmp_path: Path, page: _Page) -> None:
    out = _stopped(tmp_path, _plan(scenarios=(SCENARIO, "lost_response"), seeds=(1,)), replace(NONE, report=True), 2)
    summary = resume_grid(out, report=False)
    assert summary is not None and summary.report_html is None and page.calls == []
    assert Manifest.read(out).options["report"] is True  # the manifest is left as it was


def test_a_resumed_run_reads_its_pieces_back_and_passes_the_reading_on(tmp_path: Path, page: _Page) -> None:
    out = _stopped(tmp_path, _plan(scenarios=(SCENARIO, "lost_response"), seeds=(1,)), replace(NONE, report=True), 2)
    reading = print
    summary = resume_grid(out, reading=reading)
    assert summary is not None and page.calls == [(out, (POLICY,), reading)]
    assert summary.counts == {(POLICY, SCENARIO): Counter(incorrect=1), (POLICY, "lost_response"): Counter(correct=1)}


def test_a_resume_refuses_a_run_once_the_harness_code_changed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = _stopped(tmp_path, _plan(scenarios=(SCENARIO, "lost_response"), seeds=(1,)), NONE, 2)
    monkeypatch.setattr(folder, "harness_code_digest", lambda: "0" * 16)
    with pytest.raises(UsageError) as refused:
        resume_grid(out)
    assert str(refused.value) == (
        f"the harness's code: changed since the run began in {out}, so its cases would mix two inputs; fix: start a "
        "new run with another --out (or restore what changed)"
    )


def test_a_resume_refuses_a_run_whose_inputs_changed(tmp_path: Path) -> None:
    out = _stopped(tmp_path, _plan(scenarios=(SCENARIO, "lost_response"), seeds=(1,)), NONE, 2)
    manifest = Manifest.read(out)
    for key in sorted(manifest.fingerprints):
        changed = {**manifest.fingerprints, key: "0" * 16}
        (out / MANIFEST).write_text(replace(manifest, fingerprints=changed).to_json())
        with pytest.raises(UsageError) as refused:
            resume_grid(out)
        assert str(refused.value) == (
            f"{key}: changed since the run began in {out}, so its cases would mix two inputs; fix: start a new run "
            "with another --out (or restore what changed)"
        )
    # A fingerprint the run no longer has, and one it lacks.
    extra = {**manifest.fingerprints, "policy gone": "1" * 16}
    (out / MANIFEST).write_text(replace(manifest, fingerprints=extra).to_json())
    with pytest.raises(UsageError, match=r"^policy gone: changed since"):
        resume_grid(out)
    first = sorted(manifest.fingerprints)[0]
    fewer = {k: v for k, v in manifest.fingerprints.items() if k != first}
    (out / MANIFEST).write_text(replace(manifest, fingerprints=fewer).to_json())
    with pytest.raises(UsageError, match=f"^{first}: changed since"):
        resume_grid(out)
    # Two changed: the first in sorted order is named.
    both = dict.fromkeys(manifest.fingerprints, "2" * 16)
    (out / MANIFEST).write_text(replace(manifest, fingerprints=both).to_json())
    with pytest.raises(UsageError, match=f"^{first}: changed since"):
        resume_grid(out)
    claim(out, fresh=False).release()  # let go each time


def test_a_resume_refuses_a_manifest_whose_digest_was_deleted_once_a_piece_finished(tmp_path: Path) -> None:
    out = _stopped(tmp_path, _plan(scenarios=(SCENARIO, "lost_response"), seeds=(1,)), NONE, 2)
    data = json.loads((out / MANIFEST).read_text())
    del data["digest"]
    (out / MANIFEST).write_text(json.dumps(data))
    with pytest.raises(UsageError, match="field 'digest': missing, though the run's finished pieces"):
        resume_grid(out)
    # Without a finished piece it is taken for a manifest written before digests, and given one.
    for tally in (out / ".parts").glob("*.json"):
        tally.write_text("damaged")
    assert resume_grid(out, report=False) is not None
    assert "digest" in json.loads((out / MANIFEST).read_text())


def test_a_resume_of_an_undigested_manifest_with_no_piece_gives_it_its_digest(tmp_path: Path) -> None:
    out = tmp_path / "run"
    begin(out, ["run"]).release()
    manifest = Manifest(_plan(seeds=(1,)).cells, 1, grid._options_json(NONE), {})
    data = json.loads(manifest.to_json())
    del data["digest"]
    data["fingerprints"] = grid.fingerprints(grid.load_grid([POLICY], [SCENARIO], [0]))
    (out / MANIFEST).write_text(json.dumps(data))
    assert resume_grid(out, report=False) is not None
    assert json.loads((out / MANIFEST).read_text()) == json.loads(
        Manifest(manifest.cells, 1, manifest.options, data["fingerprints"]).to_json()
    )


def test_a_resume_removes_half_written_files_and_lets_the_folder_go(tmp_path: Path) -> None:
    out = _stopped(tmp_path, _plan(scenarios=(SCENARIO, "lost_response"), seeds=(1,)), NONE, 2)
    stray = out / "cases" / ".recovery.json.123.tmp"
    stray.parent.mkdir(exist_ok=True)
    stray.write_text("half")
    assert resume_grid(out, report=False) is not None
    assert not stray.exists()
    claim(out, fresh=False).release()
    (out / MANIFEST).write_text("{}")
    with pytest.raises(UsageError):
        resume_grid(out)
    claim(out, fresh=False).release()


def test_a_resume_refuses_damaged_options_in_the_manifest(tmp_path: Path) -> None:
    out = _stopped(tmp_path, _plan(scenarios=(SCENARIO, "lost_response"), seeds=(1,)), NONE, 2)
    manifest = Manifest.read(out)
    (out / MANIFEST).write_text(replace(manifest, options={**manifest.options, "project": "Bad"}).to_json())
    with pytest.raises(UsageError) as refused:
        resume_grid(out)
    assert str(refused.value) == (
        f"{out / MANIFEST}: options field 'project': 'Bad' is not a Polyaxon project name; fix: start the run anew "
        "with another --out (the manifest was edited or damaged)"
    )


def test_a_damaged_piece_runs_again_on_resume(tmp_path: Path, supervised: Supervised) -> None:
    plan = _plan(scenarios=(SCENARIO, "lost_response"), seeds=(1,))
    out = _stopped(tmp_path, plan, NONE, 3)  # both pieces finished, stopped before the end (none: after = 3)
    assert sorted(p.name for p in (out / ".parts").glob("*.json")) == ["000000-000000.json", "000001-000000.json"]
    (out / ".parts" / "000000-000000.json").write_text("damaged")
    resume_grid(out, report=False)
    assert supervised.calls == [(1, 1, 60.0)]
    out2 = _stopped(tmp_path / "2", plan, NONE, 3)
    next((out2 / "cases").rglob("recovery.json")).unlink()  # a file of a finished piece deleted
    resume_grid(out2, report=False)
    assert supervised.calls == [(1, 1, 60.0), (1, 1, 60.0)]
    out3 = _stopped(tmp_path / "3", plan, NONE, 3)
    resume_grid(out3, report=False)
    assert supervised.calls[2:] == [(0, 1, 60.0)]


# --- The manifest's options, and the tallies found ------------------------------------------------------------


def test_a_runs_options_are_kept_and_read_back_as_given(tmp_path: Path) -> None:
    options = GridOptions(out=tmp_path, tracking="server", project="o/p", report=False, records="full",
                          failing_files=4, case_timeout_s=None, unfired="note", junit=Path("r/j.xml"),
                          check=True)  # fmt: skip
    kept = grid._options_json(options)
    assert kept == {"tracking": "server", "project": "o/p", "report": False, "records": "full",
                    "failing_files": 4, "case_timeout_s": None, "unfired": "note", "junit": "r/j.xml",
                    "check": True}  # fmt: skip
    assert list(kept) == [
        "tracking", "project", "report", "records", "failing_files", "case_timeout_s", "unfired", "junit", "check"
    ]  # fmt: skip
    assert grid._options_of(kept, tmp_path) == options
    assert grid._options_of({**kept, "junit": None}, tmp_path).junit is None
    assert grid._options_of({**kept, "junit": ""}, tmp_path).junit is None
    assert grid._options_of({}, tmp_path) == GridOptions(out=tmp_path)  # a manifest from before these were kept
    assert grid._options_json(GridOptions())["junit"] is None


@pytest.mark.parametrize("project", ["P", "p\n", "a/b/c"])
def test_a_manifests_project_that_is_no_polyaxon_project_is_refused(tmp_path: Path, project: str) -> None:
    """Checked whole: a pattern ending in ``$`` also matched before a final newline ("p\\n" was taken)."""
    with pytest.raises(UsageError) as refused:
        grid._options_of({"project": project}, tmp_path)
    assert str(refused.value) == (
        f"{tmp_path / MANIFEST}: options field 'project': '{project}' is not a Polyaxon project name; fix: start the "
        "run anew with another --out (the manifest was edited or damaged)"
    )


@pytest.mark.parametrize(
    ("options", "said"),
    [
        ({"tracking": "cloud"}, "field 'tracking'"),
        ({"report": "yes"}, "field 'report'"),
        ({"failing_files": -1}, "field 'failing_files'"),
        ({"case_timeout_s": 1e9}, "field 'case_timeout_s'"),
        ({"junit": 3}, "field 'junit'"),
    ],
)
def test_damaged_options_are_refused_naming_their_field(tmp_path: Path, options: dict[str, Any], said: str) -> None:
    with pytest.raises(UsageError) as refused:
        grid._options_of(options, tmp_path)
    text = str(refused.value)
    assert text.startswith(f"{tmp_path / MANIFEST}: options {said}")
    assert text.endswith("; fix: start the run anew with another --out (the manifest was edited or damaged)")
    assert refused.value.__cause__ is None and refused.value.__suppress_context__


def test_an_options_project_that_is_not_a_name_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as refused:
        grid._options_of({"project": "a/b/c"}, tmp_path)
    assert str(refused.value) == (
        f"{tmp_path / MANIFEST}: options field 'project': 'a/b/c' is not a Polyaxon project name; fix: start the "
        "run anew with another --out (the manifest was edited or damaged)"
    )
    assert grid._options_of({"project": "a/b"}, tmp_path).project == "a/b"


def test_a_tally_of_this_harness_is_found_among_damaged_ones(tmp_path: Path) -> None:
    parts = tmp_path / ".parts"
    assert not grid._any_tally(tmp_path)  # no .parts at all
    parts.mkdir()
    (parts / "a.json").write_text("damaged")
    (parts / "c.txt").write_text(CellResult().to_json())  # not a .json: not a tally
    assert not grid._any_tally(tmp_path)
    (parts / "b.json").mkdir()  # unreadable
    assert not grid._any_tally(tmp_path)
    (parts / "d.json").write_text(CellResult().to_json())
    assert grid._any_tally(tmp_path)


def test_the_records_of_a_cell_follow_the_mode_and_its_size() -> None:
    from harness.limits import COMPACT_ABOVE

    assert grid._records("auto", COMPACT_ABOVE) == "full"
    assert grid._records("auto", COMPACT_ABOVE + 1) == "compact"
    assert grid._records("full", COMPACT_ABOVE + 1) == "full"
    assert grid._records("compact", 1) == "compact"


# --- Tracking ------------------------------------------------------------------------------------------------


class _Tracking:
    """Stands in for ``track_cell``: notes each record and answers ``status``."""

    def __init__(self, status: str = "succeeded", error: str | None = None) -> None:
        self.records: list[tuple[CellRecord, Path, str, str | None]] = []
        self.status, self.error = status, error

    def __call__(self, record: CellRecord, out: Path, project: str, run_uuid: str | None = None) -> Tracked:
        self.records.append((record, out, project, run_uuid))
        return Tracked(run_uuid, self.status, self.error)  # type: ignore[arg-type]


@pytest.fixture
def tracked(monkeypatch: pytest.MonkeyPatch) -> _Tracking:
    fake = _Tracking()
    monkeypatch.setattr(tracking, "track_cell", fake)
    monkeypatch.setattr(grid, "is_managed", lambda: False)
    return fake


def test_a_cell_is_tracked_as_one_run_with_its_tally(tmp_path: Path, tracked: _Tracking) -> None:
    metrics = {"time_to_account_s": MetricTally(known=2, total=7.0), "reads": MetricTally(known=0, total=0.0)}
    first = CaseLine(POLICY, SCENARIO, 4, "incorrect", "r4")
    erring = CaseLine(POLICY, SCENARIO, 5, "harness_error", "r5", error="died")
    result = CellResult(counts={(POLICY, "v-after_effect"): Counter(correct=1), (POLICY, "v-before_effect"): Counter(incorrect=1)},
                        notable=[first, erring, replace(erring, seed=6)], metrics=metrics,
                        identity={"policy_revision": "1"})  # fmt: skip
    plan = Plan((Cell("spec.p", "spec.s", (4, 5, 6)),), 1)
    options = GridOptions(project="o/p")
    got = grid._track(0, result, plan, tmp_path, options, "u1")
    assert got == Tracked("u1", "succeeded")
    [(record, out, project, run_uuid)] = tracked.records
    assert (out, project, run_uuid) == (tmp_path, "o/p", "u1")
    assert record == CellRecord(POLICY, "v", (4, 5, 6), {"policy_revision": "1"}, dict(result.counts),
                                {"time_to_account_s": 3.5}, erring)  # fmt: skip
    empty = grid._track(0, CellResult(), plan, tmp_path, options, "u2")
    assert empty == Tracked("u2", "succeeded")
    assert tracked.records[1][0] == CellRecord("spec.p", "spec.s", (4, 5, 6), {}, {}, {}, None)


def test_the_scenarios_of_a_cell_are_named_in_sorted_order(tmp_path: Path, tracked: _Tracking) -> None:
    result = CellResult(counts={(POLICY, "b"): Counter(correct=1), (POLICY, "a"): Counter(correct=1)})
    grid._track(0, result, Plan((Cell("p", "s", (1,)),), 1), tmp_path, GridOptions(), "u")
    assert tracked.records[0][0].scenario == "a"


def test_a_tracker_tracks_each_cell_once_and_notes_it(tmp_path: Path, tracked: _Tracking) -> None:
    plan = Plan((Cell(POLICY, SCENARIO, (1,)), Cell(POLICY, "x", (1,))), 1)
    (tmp_path / ".parts").mkdir()
    tracker = grid._Tracker(tmp_path, plan, GridOptions(out=tmp_path))
    result = CellResult(counts={(POLICY, SCENARIO): Counter(correct=1)})
    tracker.track(1, result)
    [(_, out, _, run_uuid)] = tracked.records
    assert out == tmp_path
    assert run_uuid is not None and len(run_uuid) == 32
    assert (tmp_path / ".parts" / "000001.plx-begun").read_text() == run_uuid
    assert json.loads((tmp_path / ".parts" / "000001.plx.json").read_text()) == {
        "run_uuid": run_uuid, "status": "succeeded", "error": None
    }  # fmt: skip
    assert tracker.tracked == {1: Tracked(run_uuid, "succeeded")}
    # Noted: not tracked again, here or by another tracker (a resumed run).
    tracker.track(1, result)
    again = grid._Tracker(tmp_path, plan, GridOptions(out=tmp_path))
    again.track(1, result)
    assert len(tracked.records) == 1
    assert again.tracked == {1: Tracked(run_uuid, "succeeded")}
    (tmp_path / ".parts" / "000001.plx.json").write_text(
        json.dumps({"run_uuid": None, "status": "error", "error": "e"})
    )
    again.track(1, result)
    assert again.tracked == {1: Tracked(None, "error", "e")} and len(tracked.records) == 1


def test_a_cell_tracked_half_way_is_tracked_anew_and_its_broken_run_removed(tmp_path: Path, tracked: _Tracking) -> None:
    plan = Plan((Cell(POLICY, SCENARIO, (1,)),), 1)
    parts = tmp_path / ".parts"
    parts.mkdir()
    broken = tmp_path / "polyaxon" / "runs" / "old"
    broken.mkdir(parents=True)
    (broken / "x").write_text("")
    keep = tmp_path / "polyaxon" / "runs" / "other"
    keep.mkdir()
    (parts / "000000.plx-begun").write_text("old\n")
    (parts / "000000.plx.json").write_text('{"run_uuid": "x"}')  # damaged: the cell is tracked anew
    tracker = grid._Tracker(tmp_path, plan, GridOptions(out=tmp_path))
    tracker.track(0, CellResult())
    assert not broken.exists() and keep.is_dir()
    [(_, _, _, run_uuid)] = tracked.records
    assert run_uuid != "old" and (parts / "000000.plx-begun").read_text() == run_uuid
    # Begun, but stopped before Polyaxon wrote anything of its run: nothing to remove, and the cell is tracked.
    (parts / "000000.plx.json").unlink()
    tracker.track(0, CellResult())
    assert len(tracked.records) == 2 and not (tmp_path / "polyaxon" / "runs" / run_uuid).exists()


def test_an_untracked_run_tracks_nothing(tmp_path: Path, tracked: _Tracking) -> None:
    tracker = grid._Tracker(tmp_path, Plan((Cell(POLICY, SCENARIO, (1,)),), 1), GridOptions(tracking="none"))
    tracker.track(0, CellResult())
    assert tracked.records == [] and tracker.tracked == {} and not (tmp_path / ".parts").exists()


def test_a_tracked_run_tracks_every_cell_and_names_its_runs(tmp_path: Path, tracked: _Tracking) -> None:
    out = tmp_path / "run"
    plan = _plan(scenarios=(SCENARIO, "lost_response"), seeds=(1,))
    summary = run_grid(plan, GridOptions(out=out, tracking="offline", report=False, isolate=False, project="o/p"))
    uuids = [r[3] for r in tracked.records]
    assert [r[0].scenario for r in tracked.records] == [SCENARIO, "lost_response"]
    assert _run_json(out)["polyaxon_runs"] == {
        f"{POLICY} x {SCENARIO}": uuids[0], f"{POLICY} x lost_response": uuids[1]
    }  # fmt: skip
    assert _run_json(out)["tracking_ok"] is True and _run_json(out)["tracking"] == "offline"
    assert _run_json(out)["project"] == "o/p"
    assert summary.tracking.ok and summary.tracking.message is not None
    assert summary.tracking.message == (
        f"Polyaxon: 2 offline runs in {out / 'polyaxon'}; browse: python -m harness view {out}; send to a server: "
        f"python -m harness push {out} --project o/p"
    )


def test_a_resumed_run_tracks_the_cells_finished_before_it_was_stopped(tmp_path: Path, tracked: _Tracking) -> None:
    plan = _plan(scenarios=(SCENARIO, "lost_response"), seeds=(1,))
    options = GridOptions(tracking="offline", report=False, isolate=False)
    real = grid._Tracker.track
    grid._Tracker.track = lambda self, cell, result: None  # type: ignore[method-assign]
    try:
        out = _stopped(tmp_path, plan, options, 2)  # the first cell finished, not tracked
    finally:
        grid._Tracker.track = real  # type: ignore[method-assign]
    assert tracked.records == []
    resume_grid(out)
    assert [r[0].scenario for r in tracked.records] == [SCENARIO, "lost_response"]
    assert tracked.records[0][0].counts == {(POLICY, SCENARIO): Counter(incorrect=1)}


def test_a_failed_tracking_makes_the_run_record_say_so(tmp_path: Path, tracked: _Tracking) -> None:
    tracked.status, tracked.error = "error", "boom"
    out = tmp_path / "run"
    summary = run_grid(_plan(seeds=(1,)), GridOptions(out=out, tracking="offline", report=False, isolate=False))
    assert summary.tracking == TrackingNote(
        False, f"harness: Polyaxon tracking failed for 1 run (boom); the files are complete in {out}"
    )
    assert _run_json(out)["tracking_ok"] is False
    assert Ended.read(out).tracking_ok is False


def test_an_untracked_run_says_nothing_of_polyaxon(tmp_path: Path) -> None:
    assert tracking_note("none", "p", tmp_path, [Tracked(None, "error", "e")]) == TrackingNote(True, None)


def test_a_tracking_failure_is_said_with_the_first_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(grid, "is_managed", lambda: True)
    runs = [Tracked("a", "succeeded"), Tracked("b", "error", "first"), Tracked(None, "error", "second")]
    assert tracking_note("offline", "p", tmp_path, runs) == TrackingNote(
        False, f"harness: Polyaxon tracking failed for 2 runs (first); the files are complete in {tmp_path}"
    )


def test_inside_a_polyaxon_job_the_note_names_its_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(grid, "is_managed", lambda: True)
    assert tracking_note("offline", "p", tmp_path, [Tracked("u1", "succeeded"), Tracked("u2", "failed")]) == (
        TrackingNote(True, "Polyaxon: logged into this job's run u1")
    )
    assert tracking_note("server", "p", tmp_path, []) == TrackingNote(True, "Polyaxon: logged into this job's run ")


def test_an_offline_run_says_where_its_runs_are_and_how_to_send_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(grid, "is_managed", lambda: False)
    out = tmp_path / "my run"
    tail = f"browse: python -m harness view {out}; send to a server: python -m harness push '{out}' --project 'o/my p'"
    runs = [Tracked("a", "succeeded"), Tracked(None, "failed"), Tracked("c", "failed")]
    assert tracking_note("offline", "o/my p", out, runs) == TrackingNote(
        True, f"Polyaxon: 2 offline runs in {out / 'polyaxon'}; {tail}"
    )
    assert tracking_note("offline", "o/my p", out, runs[:1]) == TrackingNote(
        True, f"Polyaxon: 1 offline run in {out / 'polyaxon'}; {tail}"
    )
    assert (
        tracking_note("offline", "o/my p", out, []).message == f"Polyaxon: 0 offline runs in {out / 'polyaxon'}; {tail}"
    )


def test_a_server_run_pushes_its_runs_and_says_what_was_sent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(grid, "is_managed", lambda: False)
    pushed: list[tuple[Path, list[str], str]] = []
    answer = PushResult(("a", "c"), None)

    def push(root: Path, uuids: Sequence[str], project: str, skip_present: bool = False) -> PushResult:
        assert not skip_present  # a run's own push has sent nothing before
        pushed.append((root, list(uuids), project))
        return answer

    monkeypatch.setattr(grid, "push_runs", push)
    runs = [Tracked("a", "succeeded"), Tracked(None, "failed"), Tracked("c", "failed")]
    assert tracking_note("server", "o/p", tmp_path, runs) == TrackingNote(True, "Polyaxon: 2 runs sent to project o/p")
    assert pushed == [(tmp_path / "polyaxon", ["a", "c"], "o/p")]
    answer = PushResult(("a",), "refused")
    monkeypatch.setenv("POLYAXON_HOST", "http://127.0.0.1:9")
    later = (
        f"nothing local is lost: the runs are in {tmp_path / 'polyaxon'}; send the rest later: python -m harness push "
        f"{tmp_path} --project o/p"
    )
    assert tracking_note("server", "o/p", tmp_path, runs) == TrackingNote(
        False, f"harness: could not send runs to Polyaxon (refused); 1 of 2 sent; {later}"
    )
    # A Polyaxon user's review: with no host set, the error said only "Connection refused" by localhost:8000.
    monkeypatch.delenv("POLYAXON_HOST")
    assert tracking_note("server", "o/p", tmp_path, runs) == TrackingNote(
        False,
        "harness: could not send runs to Polyaxon (refused; POLYAXON_HOST is not set: set it to the server's "
        f"address); 1 of 2 sent; {later}",
    )
    answer = PushResult(("a",), None)
    assert tracking_note("server", "o/p", tmp_path, runs) == TrackingNote(True, "Polyaxon: 1 run sent to project o/p")
