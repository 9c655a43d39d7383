"""Three defects users saw, each pinned by what it now does.

1. ``harness replay`` of a hand-edited case the loader calls malformed (``"seed": "x"``) ran the case and called
   it a difference (exit 1); it is now refused as bad input (exit 2) before anything runs, in the loader's words.
2. ``tools/compare_cases.py`` with a folder that does not exist said the runs hold different cases (exit 1); a
   path that is not a folder holding cases is now bad input (exit 2), said in one line.
3. ``harness check`` of a policy whose worker died noted that a scenario's fault "fired in no case", on the
   strength of cases whose coverage is unknown; those cases are no longer counted as cases the fault missed.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

import harness.run.replay as replay_module
from harness.cli import main
from harness.gate.runner import CheckOptions, check_policy, coverage_notes
from harness.model import CaseReport
from harness.present.analysis import load
from harness.run import GridSummary, load_grid, run_case
from harness.run.cell import FaultCoverage
from harness.run.files import record_line, recovery_json
from harness.run.grid import TrackingNote

ROOT = Path(__file__).resolve().parent.parent
POLICY, SCENARIO = "reconcile_and_reauthorize", "lost_response"
FIX = "fix: give the case file as 'harness run' wrote it (its reproduce command writes it again)"


# --- 1. replay refuses a malformed case before running it ------------------------------------------------------


@pytest.fixture(scope="module")
def report() -> CaseReport:
    (case,) = load_grid([POLICY], [SCENARIO], [2]).cases
    return run_case(case)[0]


@pytest.fixture
def runs(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Every case replay runs (it runs them all through ``_run``)."""
    ran: list[object] = []
    real = replay_module._run

    def counted(*args: object, **kwargs: object) -> object:
        ran.append(args[0])
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(replay_module, "_run", counted)
    return ran


def test_replay_refuses_a_recovery_json_whose_seed_is_not_a_number(
    report: CaseReport, runs: list[object], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The user's file: a case's ``"seed": 2`` edited to ``"seed": "x"``. Replay used to run seed 2 (from the
    reproduce command) and exit 1 with ``replay differs: seed``; it exits 2 naming the file and the field, in the
    words the loader skips the file with, and runs nothing."""
    text = recovery_json(report)
    assert '"seed": 2,' in text
    path = tmp_path / "recovery.json"
    path.write_text(text.replace('"seed": 2,', '"seed": "x",'), encoding="utf-8")
    status = main(["replay", str(path)])
    out, err = capsys.readouterr()
    assert status == 2
    reason = "malformed: field 'seed': Input should be a valid integer, unable to parse string as an integer"
    assert err == f"harness: {path}: not a case record ({reason}); {FIX}\n"
    assert out == ""
    assert runs == []
    (skipped,) = load(tmp_path).attrs["skipped"]
    assert (skipped.path, skipped.reason) == (str(path), reason)


def test_replay_refuses_a_compact_record_of_another_shape(
    report: CaseReport, runs: list[object], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A compact record whose outcome is no outcome is refused the same way (it used to run and differ)."""
    line = record_line(report)
    assert '"outcome":"correct",' in line
    file = tmp_path / "records-000000.jsonl.gz"
    with gzip.open(file, "wt", encoding="utf-8") as handle:
        handle.write(line.replace('"outcome":"correct",', '"outcome":"great",'))
    status = main(["replay", f"{file}#seed-2"])
    _, err = capsys.readouterr()
    (skipped,) = load(tmp_path).attrs["skipped"]
    assert skipped.reason.startswith("malformed: field 'outcome': Input should be 'correct'")
    assert status == 2
    assert err == f"harness: {file}#seed-2: not a case record ({skipped.reason}); {FIX}\n"
    assert runs == []


def test_replay_of_the_unedited_case_still_runs_and_is_the_same(
    report: CaseReport, runs: list[object], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "recovery.json"
    path.write_text(recovery_json(report), encoding="utf-8")
    assert main(["replay", str(path)]) == 0
    assert "replayed: the same as recorded" in capsys.readouterr().out
    assert len(runs) == 1


# --- 2. compare_cases refuses a path that holds no case ---------------------------------------------------------


def compare(*args: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(ROOT / "tools" / "compare_cases.py"), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=60,
    )


def a_run(folder: Path, seeds: tuple[int, ...] = (1,)) -> Path:
    for seed in seeds:
        case = folder / "cases" / POLICY / SCENARIO / f"seed-{seed}" / "recovery.json"
        case.parent.mkdir(parents=True)
        case.write_text(json.dumps({"seed": seed, "outcome": "correct"}), encoding="utf-8")
    return folder


def test_compare_of_a_folder_that_does_not_exist_exits_2_saying_so(tmp_path: Path) -> None:
    """The user's command: it used to say ``the runs hold different cases: 3 before, 0 after`` and exit 1."""
    run, missing = a_run(tmp_path / "r1"), tmp_path / "nonexist"
    for before, after in ((run, missing), (missing, run)):
        proc = compare(before, after)
        assert (proc.returncode, proc.stdout) == (2, "")
        assert (
            proc.stderr
            == f"compare_cases: {missing}: no such folder; fix: give a run folder written by 'harness run'\n"
        )


def test_compare_of_a_folder_without_cases_or_of_a_file_exits_2(tmp_path: Path) -> None:
    run, empty, file = a_run(tmp_path / "r1"), tmp_path / "empty", tmp_path / "file.txt"
    empty.mkdir()
    file.write_text("x")
    proc = compare(run, empty)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == (
        f"compare_cases: {empty}: holds no recovery.json; fix: give a run folder written by 'harness run' "
        "(its cases/<policy>/<scenario>/seed-<n>/)\n"
    )
    compact = tmp_path / "compact" / "cases" / POLICY / SCENARIO / "records-000000.jsonl.gz"
    compact.parent.mkdir(parents=True)
    compact.write_bytes(b"")
    proc = compare(tmp_path / "compact", run)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == (
        f"compare_cases: {tmp_path / 'compact'}: holds no recovery.json; its cases are compact records only; "
        "fix: run it again with --records full\n"
    )
    proc = compare(file, run)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert (
        proc.stderr == f"compare_cases: {file}: a file, not a folder; fix: give a run folder written by 'harness run'\n"
    )


def test_compare_of_runs_still_counts_and_tells_different_sets_apart(tmp_path: Path) -> None:
    """Exit 0 for the same cases byte for byte, 1 for different sets; a run kept under a folder named polyaxon is read (only
    the run's own polyaxon/ copies are left out; such a run used to count 0 cases)."""
    one, two = a_run(tmp_path / "polyaxon" / "r1"), a_run(tmp_path / "r2", (1, 2))
    copy = one / "polyaxon" / "runs" / "u" / "outputs" / "recovery.json"
    copy.parent.mkdir(parents=True)
    copy.write_text("{}")
    proc = compare(one, one)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "1/1 recovery.json byte-identical\n", "")
    proc = compare(one, two)
    assert (proc.returncode, proc.stdout, proc.stderr) == (1, "the runs hold different cases: 1 before, 2 after\n", "")


def test_compare_of_runs_whose_cases_differ_in_content_exits_1(tmp_path: Path) -> None:
    """It exited 0 however many cases differed, so a CI step comparing two commits' runs passed over a change."""
    one, two = a_run(tmp_path / "r1", (1, 2)), a_run(tmp_path / "r2", (1, 2))
    changed = two / "cases" / POLICY / SCENARIO / "seed-2" / "recovery.json"
    changed.write_text(json.dumps({"seed": 2, "outcome": "incorrect"}), encoding="utf-8")
    proc = compare(one, two)
    assert (proc.returncode, proc.stderr) == (1, "")
    assert proc.stdout == "1/2 recovery.json byte-identical\n      1 cases  .outcome value\n"


def test_compare_of_a_case_that_is_not_json_exits_2(tmp_path: Path) -> None:
    one, two = a_run(tmp_path / "r1"), a_run(tmp_path / "r2")
    broken = two / "cases" / POLICY / SCENARIO / "seed-1" / "recovery.json"
    broken.write_text("{not json", encoding="utf-8")
    proc = compare(one, two)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr.startswith(f"compare_cases: {broken}: not JSON (")
    assert proc.stderr.endswith("); fix: give the recovery.json 'harness run' wrote\n")
    assert proc.stderr.count("\n") == 1


# --- 3. coverage is not judged on cases that ended in harness_error ---------------------------------------------


EXITER = "import os\nclass P:\n    name, revision = 'exiter', '1'\n    def decide(self, s):\n        os._exit(3)\nEXIT = P()\n"


def test_check_of_a_policy_whose_every_case_died_notes_nothing_about_coverage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The user's run: the worker died after response_lost fired; the note said the fault fired in no case
    (its site reached in 0) and blamed the scenario. Every case being a harness error, nothing is said of it."""
    (tmp_path / "user_mends_exiter.py").write_text(EXITER)
    monkeypatch.syspath_prepend(str(tmp_path))
    options = CheckOptions(scenarios=(SCENARIO,), seeds=(1,), out=tmp_path / "out", case_timeout_s=5)
    summary = check_policy("user_mends_exiter:EXIT", options)
    assert [(c.outcome, c.passed) for c in summary.cases] == [("harness_error", False)]
    assert summary.notes == ()


def summary_of(outcomes: Counter[str], reached: int) -> GridSummary:
    return GridSummary(
        out=Path("/nowhere"),
        policies=("p",),
        scenarios=("s",),
        counts={("p", "s"): outcomes, ("other", "t"): Counter(harness_error=5)},
        notable=(),
        summary_csv=Path("/nowhere/summary.csv"),
        tracking=TrackingNote(True, None),
        report_html=None,
        coverage=(FaultCoverage("s", 0, "response_lost", reached, 0),),
        error_count=outcomes["harness_error"],
    )


def test_a_fault_is_noted_over_the_cases_that_finished_only() -> None:
    assert coverage_notes(summary_of(Counter(correct=3), 1), "p") == [
        "note: scenario s declares fault response_lost, which fired in no case of p (its site was reached in 1 "
        "case): that scenario tested nothing of this fault for this policy"
    ]
    assert coverage_notes(summary_of(Counter(correct=2, incorrect=1, harness_error=4), 1), "p") == [
        "note: scenario s declares fault response_lost, which fired in none of the 3 cases of p that finished (its "
        "site was reached in 1 of them); not counted: 4 that ended in harness_error, whose coverage is unknown"
    ]
    assert coverage_notes(summary_of(Counter(harness_error=4), 0), "p") == []
    assert summary_of(Counter(correct=2, harness_error=4), 0).finished("s") == (2, 4)
