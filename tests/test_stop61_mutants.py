"""Tests for the mutants the fifty-fourth mutation pass (tests/MUTANTS.md) found alive in what lets a stopped
exploration be resumed (``harness/explore/parts.py``, ``resume_explore``, ``explore --resume``) and in
``changed_since``: each fails with its mutant and passes without."""

from __future__ import annotations

import errno
import os
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from buggy_policies import VerifyComparesAppliedOnly
from conftest import SCENARIO_DIR
from test_explore_resume import POLICIES, TEMPLATES, _interrupted, _options, _stopped_after, _written

import harness.cli as cli
import harness.explore as exploration
import harness.explore.parts as parts
from harness.check.facts import facts
from harness.check.properties import mismatched_records
from harness.cli import main
from harness.errors import NotWritten
from harness.explore import ExploreOptions, ExploreSummary, explore, resume_explore
from harness.explore.parts import ExploreRequest, finished_parts, keep_part
from harness.explore.search import ExploreJob
from harness.run.cell import FaultCoverage
from harness.run.folder import changed_since, fingerprints
from harness.run.plan import UsageError, load_grid
from harness.scenario import load_scenario
from harness.sim import simulate

_REQUEST = ExploreRequest(
    policies=("retry_new_key",),
    scenarios=("lost_response",),
    cwd="/",
    depth=1,
    swarm=0,
    seeds=(1,),
    concurrency=1,
    shard=0,
    shards=1,
    tracking="none",
    project="me/mine",
    case_timeout_s=None,
    unfired="fail",
    fingerprints={},
)


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_a_request_of_every_depth_the_command_line_takes_reads_back(tmp_path: Path, depth: int) -> None:
    """``explore --depth`` takes 1 to 3: an exploration at depth 3 must be resumable too."""
    request = replace(_REQUEST, depth=depth)
    request.write(tmp_path)
    assert ExploreRequest.read(tmp_path) == request


def test_a_resume_of_a_file_or_of_no_folder_says_which(tmp_path: Path) -> None:
    missing = tmp_path / "missing"
    with pytest.raises(UsageError) as refused:
        resume_explore(missing, isolate=False)
    assert str(refused.value) == (
        f"--resume {missing}: no such folder; fix: give a folder 'harness explore' was writing"
    )
    a_file = tmp_path / "a-file"
    a_file.write_text("x\n")
    with pytest.raises(UsageError) as refused:
        resume_explore(a_file, isolate=False)
    assert str(refused.value) == (
        f"--resume {a_file}: a file, not a folder; fix: give a folder 'harness explore' was writing"
    )


def test_a_request_that_is_not_json_is_refused_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "explore-request.json"
    path.write_text('{"policies": [\n')  # cut short
    with pytest.raises(UsageError) as refused:
        ExploreRequest.read(tmp_path)
    assert str(refused.value).startswith(f"{path}: unreadable (")
    assert str(refused.value).endswith("; fix: explore anew with another --out (the file was edited or damaged)")


def test_a_part_that_answers_its_job_with_something_other_than_a_result_runs_again(tmp_path: Path) -> None:
    job = ExploreJob(tuple(POLICIES), TEMPLATES[0], 1, 0, (1,))
    keep_part(tmp_path, 0, job, "not a result")  # type: ignore[arg-type]
    assert finished_parts(tmp_path, [job]) == {}


def test_a_template_given_by_a_relative_path_is_found_again_from_another_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    began = tmp_path / "began"
    began.mkdir()
    shutil.copy(SCENARIO_DIR / "lost_response.yaml", began / "lost_response.yaml")
    monkeypatch.chdir(began)
    out = tmp_path / "out"
    _interrupted(out, after=1, templates=["lost_response.yaml"])
    assert ExploreRequest.read(out).scenarios == (str(began / "lost_response.yaml"),)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    summary, _ = resume_explore(out, isolate=False)
    assert [e.scenario_spec for e in summary.explorations] == [str(began / "lost_response.yaml")] * 2


def _full(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text[:10])
    raise OSError(errno.ENOSPC, "No space left on device", str(path))


def test_a_new_folder_whose_request_cannot_be_written_is_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing to resume from: the folder the exploration made is removed (one the user made stays, empty)."""
    monkeypatch.setattr(parts, "write_atomic", _full)
    out = tmp_path / "new"
    with pytest.raises(NotWritten, match="then explore again"):
        explore(POLICIES, TEMPLATES, _options(out))
    assert not out.exists()


def test_a_resume_in_process_starts_no_worker_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out"
    _interrupted(out, after=1)

    def no_process(*_: object) -> None:
        raise AssertionError("a worker process was started by a resume asked to run in process")

    monkeypatch.setattr(exploration, "supervise", no_process)
    summary, options = resume_explore(out, isolate=False)
    assert not options.isolate and summary.findings


def test_a_resume_runs_the_missing_parts_in_the_processes_it_is_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    _interrupted(out, after=1, concurrency=3)  # three parts per template, one kept
    seen: list[tuple[int, int]] = []
    real = exploration.supervise

    def spy(jobs: list[ExploreJob], processes: int, *rest: Any) -> None:
        seen.append((len(jobs), processes))
        real(jobs, processes, *rest)

    monkeypatch.setattr(exploration, "supervise", spy)
    resume_explore(out, 1)
    assert seen == [(5, 1)]


def test_a_folder_whose_exploration_was_written_is_not_explored_again(tmp_path: Path) -> None:
    """Stopped after explore.json was written and before its request was removed: the exploration is complete."""
    out = tmp_path / "out"
    _interrupted(out, after=1)
    request = (out / "explore-request.json").read_text()
    resume_explore(out, isolate=False)
    written = (out / "explore.json").read_text()
    (out / "explore-request.json").write_text(request)
    with pytest.raises(UsageError) as refused:
        resume_explore(out, isolate=False)
    assert str(refused.value) == f"nothing to resume: the exploration in {out} is complete (explore.json)"
    assert (out / "explore.json").read_text() == written


def test_a_resume_removes_the_temporary_files_a_killed_exploration_left(tmp_path: Path) -> None:
    out = tmp_path / "out"
    _interrupted(out, after=1)
    stray = out / ".explore.json.x1y2z3.tmp"
    stray.write_text("{")
    resume_explore(out, isolate=False)
    assert not stray.exists() and (out / "explore.json").is_file()


def test_an_exploration_asked_for_no_processes_resumes(tmp_path: Path) -> None:
    """``concurrency`` 0 explores in one part per template, as 1 does: its request says 1, which a resume reads."""
    out = tmp_path / "out"
    _interrupted(out, after=1, concurrency=0)
    assert ExploreRequest.read(out).concurrency == 1
    summary, options = resume_explore(out, isolate=False)
    assert options.concurrency == 1 and summary.findings


def test_a_resume_tracks_each_exploration_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Stopped while it tracked its explorations (offline, each a run of its own id): the resume tracks each anew,
    and the runs the stopped one had written are not kept beside them."""
    real = exploration.track_exploration
    calls: list[object] = []

    def stopped_at_the_second(*args: Any) -> Any:
        calls.append(args)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*args)

    monkeypatch.setattr(exploration, "track_exploration", stopped_at_the_second)
    out = tmp_path / "out"
    with pytest.raises(KeyboardInterrupt, match="is resumable"):
        explore(["retry_new_key"], TEMPLATES, _options(out, tracking="offline", swarm=0))
    assert len(list((out / "polyaxon" / "runs").iterdir())) == 1  # the first exploration's run
    monkeypatch.setattr(exploration, "track_exploration", real)
    summary, _ = resume_explore(out, isolate=False)
    runs = sorted(p.name for p in (out / "polyaxon" / "runs").iterdir())
    assert runs == sorted(r for r in summary.polyaxon_runs.values() if r is not None) and len(runs) == 2


def test_the_resume_command_quotes_its_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "my out"
    with pytest.raises(KeyboardInterrupt) as stop:
        explore(POLICIES, TEMPLATES, _options(out), _stopped_after(1))
    assert str(stop.value) == f"interrupted; {out} is resumable: python -m harness explore --resume '{out}'"
    assert main(["run", "--resume", str(out)]) == 2
    assert capsys.readouterr().err.strip() == (
        f"harness: {out}: an exploration that was stopped, not a run; fix: complete it with python -m harness "
        f"explore --resume '{out}'"
    )
    assert main(["explore", "--policy", "retry_new_key", "--scenario", "lost_response", "--out", str(out)]) == 2
    assert capsys.readouterr().err.strip() == (
        f"harness: --out {out}: holds an exploration that was stopped before its end; fix: complete it with "
        f"python -m harness explore --resume '{out}', or give a new or empty folder"
    )


def _resumed_spy(monkeypatch: pytest.MonkeyPatch, options: ExploreOptions, **summary: Any) -> list[tuple[Any, ...]]:
    """``resume_explore`` as ``explore --resume`` calls it, answering with an empty summary and ``options``."""
    seen: list[tuple[Any, ...]] = []

    def resumed(
        out: Path, processes: int | None, progress: Any, checked: Any = None
    ) -> tuple[ExploreSummary, ExploreOptions]:
        seen.append((out, processes, progress))
        if checked is not None:  # known to be resumable
            checked()
        return ExploreSummary(out, **summary), options

    monkeypatch.setattr(exploration, "resume_explore", resumed)
    return seen


def test_explore_resume_takes_the_processes_only_when_given_and_caps_them_saying_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    seen = _resumed_spy(monkeypatch, ExploreOptions(out=tmp_path, tracking="none"))
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    monkeypatch.chdir(tmp_path)
    assert main(["explore", "--resume", "out"]) == 0
    assert seen.pop() == (tmp_path / "out", None, cli._explore_progress)  # absolute; the processes it began with
    assert capsys.readouterr().err == ""
    assert main(["explore", "--resume", "out", "--concurrency", "60", "--quiet"]) == 0
    assert seen.pop() == (tmp_path / "out", 2, None)
    assert capsys.readouterr().err == (
        "harness: --concurrency 60 is more than the 2 cores here; using 2 (pass --force-concurrency to use it anyway)\n"
    )
    assert main(["explore", "--resume", "out", "--concurrency", "60", "--force-concurrency"]) == 0
    assert seen.pop()[1] == 60


@pytest.mark.parametrize(("unfired", "status", "noted"), [("note", 0, "note: "), ("fail", 4, "")])
def test_explore_resume_answers_an_unfired_fault_as_the_exploration_began(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    unfired: Any,
    status: int,
    noted: str,
) -> None:
    """``--unfired`` is taken from the request, not from the resume's words (which cannot give it)."""
    never = FaultCoverage("lost_response", 0, "response_lost", 3, 0)
    _resumed_spy(monkeypatch, ExploreOptions(out=tmp_path, tracking="none", unfired=unfired), unfired=[never])
    assert main(["explore", "--resume", str(tmp_path), "--quiet"]) == status
    assert f"harness: {noted}scenario lost_response declares " in capsys.readouterr().err


def test_a_resume_keeps_no_finding_or_error_file_an_earlier_attempt_left(tmp_path: Path) -> None:
    """What a stopped attempt wrote of its findings and errors is written anew: a file left from an attempt whose
    parts differed (one run again after its part file was damaged, a case over its budget once and not again)
    must not stay beside what this one writes."""
    clean = tmp_path / "clean"
    explore(POLICIES, TEMPLATES, _options(clean))
    out = tmp_path / "out"
    _interrupted(out, after=3)
    for leftover in ("findings", "errors"):
        (out / leftover / "retry_new_key").mkdir(parents=True)
        (out / leftover / "retry_new_key" / "lost_response-9.yaml").write_text("name: lost_response-9\n")
    resume_explore(out, isolate=False)
    assert _written(out) == _written(clean)


def test_changed_since_names_an_input_either_side_lacks() -> None:
    """Every input kept or loaded now is compared: one only kept (a template that lost a case) or only loaded now (a
    case it gained) is a change, named first in sorted order."""
    grid = load_grid(["retry_new_key"], ["lost_response"], [1])
    now = fingerprints(grid)
    assert changed_since(grid, now) is None
    assert changed_since(grid, {**now, "scenario gone (gone)": "0" * 16}) == "scenario gone (gone)"
    (first, *_) = sorted(now)
    assert changed_since(grid, {k: v for k, v in now.items() if k != first}) == first
    # Every input changed, and many more only kept: the first in sorted order, whatever a set's order is.
    many = {f"scenario s{i:02} (s{i:02})": "0" * 16 for i in range(50)}
    assert changed_since(grid, {**{k: "0" * 16 for k in now}, **many}) == "policy retry_new_key"


def test_a_refusal_recorded_for_other_arguments_is_said_to_be_a_refusal() -> None:
    """mismatched_records looks at refusals too: its anomaly says what was recorded, not always "the effect"."""
    scenario = load_scenario(SCENARIO_DIR / "foreign_refusal_after_lost_request.yaml")
    evidence = simulate(scenario, VerifyComparesAppliedOnly("compares_applied_only"), 1).evidence
    [anomaly] = mismatched_records(facts(evidence)).anomalies
    assert anomaly.detail == (
        "a73: receipt rx1 for m-other (sha256:other) recorded as the refusal of a request for m7 (sha256:d7d7d7), "
        "and the task wanted m7 (sha256:d7d7d7)"
    )
