"""A stopped exploration resumes: only its missing parts run, and it writes what a clean exploration writes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import SCENARIO_DIR

import harness.explore.parts as parts
import harness.run.folder as folder
from harness.cli import main
from harness.explore import ExploreOptions, explore, resume_explore
from harness.explore.parts import ExploreRequest, finished_parts
from harness.explore.search import JobResult
from harness.run.plan import UsageError

POLICIES = ["reconcile_and_reauthorize", "retry_new_key"]
TEMPLATES = ["lost_response", "uncertain_lookup"]


def _options(out: Path, **changes: Any) -> ExploreOptions:
    values: dict[str, Any] = {
        "out": out,
        "depth": 1,
        "swarm": 2,
        "tracking": "none",
        "isolate": False,
        "resumable": True,
        "concurrency": 2,
    }
    return ExploreOptions(**{**values, **changes})


def _stopped_after(n: int) -> Any:
    def progress(done: int, total: int, result: JobResult) -> None:
        if done == n:
            raise KeyboardInterrupt

    return progress


def _written(out: Path) -> dict[str, str]:
    """Every file the exploration wrote, by its path in the folder; explore.json without its wall time."""
    files = {str(p.relative_to(out)): p.read_text(encoding="utf-8") for p in sorted(out.rglob("*")) if p.is_file()}
    summary = json.loads(files.pop("explore.json"))
    del summary["elapsed_s"]
    files["explore.json"] = json.dumps(summary)
    return files


def _interrupted(out: Path, after: int, templates: list[str] | None = None, **changes: Any) -> None:
    with pytest.raises(KeyboardInterrupt) as stop:
        explore(POLICIES, templates or TEMPLATES, _options(out, **changes), _stopped_after(after))
    assert str(stop.value) == f"interrupted; {out} is resumable: python -m harness explore --resume {out}"


def test_a_resumed_exploration_runs_only_its_missing_parts_and_writes_what_a_clean_one_writes(tmp_path: Path) -> None:
    clean = tmp_path / "clean"
    explore(POLICIES, TEMPLATES, _options(clean))
    stopped = tmp_path / "stopped"
    _interrupted(stopped, after=3)  # two templates, each split in two parts for two processes: 4 parts
    assert sorted(p.name for p in stopped.iterdir()) == [".parts", "explore-request.json"]
    assert sorted(p.name for p in (stopped / ".parts").iterdir()) == ["0.part", "1.part", "2.part"]

    seen: list[tuple[int, int, str, int]] = []
    summary, options = resume_explore(
        stopped, 1, lambda done, total, r: seen.append((done, total, r.scenario, r.shard)), isolate=False
    )
    assert seen == [(4, 4, "uncertain_lookup", 1)]  # the one part missing, counted after the three kept
    assert (options.concurrency, options.processes, options.depth, options.swarm) == (2, 1, 1, 2)
    assert summary.findings and _written(stopped) == _written(clean)
    assert not (stopped / ".parts").exists() and not (stopped / "explore-request.json").exists()
    assert not (clean / ".parts").exists() and not (clean / "explore-request.json").exists()


def test_a_part_that_does_not_read_back_as_its_own_runs_again(tmp_path: Path) -> None:
    clean = tmp_path / "clean"
    explore(POLICIES, TEMPLATES, _options(clean))
    stopped = tmp_path / "stopped"
    _interrupted(stopped, after=3)
    kept = stopped / ".parts"
    (kept / "0.part").write_text("not a part\n")  # damaged
    shutil.copy(kept / "2.part", kept / "1.part")  # another part's result: the job it answers differs
    seen: list[int] = []
    resume_explore(stopped, progress=lambda done, total, r: seen.append(r.shard), isolate=False)
    assert seen == [0, 1, 1]  # parts 0 and 1 of lost_response, then part 1 of uncertain_lookup
    assert _written(stopped) == _written(clean)


def test_finished_parts_keeps_only_what_answers_its_own_job(tmp_path: Path) -> None:
    out = tmp_path / "out"
    _interrupted(out, after=2)
    request = ExploreRequest.read(out)
    from harness.explore.search import ExploreJob

    jobs = [
        ExploreJob(tuple(POLICIES), template, request.depth, request.swarm, request.seeds, shard=k, shards=2)
        for template in TEMPLATES
        for k in range(2)
    ]
    assert sorted(finished_parts(out, jobs)) == [0, 1]
    assert finished_parts(out, [jobs[1], jobs[0]]) == {}
    (out / ".parts" / "1.part").write_text("QUJD\n")  # base64, but no pickle
    assert sorted(finished_parts(out, jobs)) == [0]


def test_a_resume_refuses_a_template_changed_since_it_began(tmp_path: Path) -> None:
    template = tmp_path / "lost_response.yaml"
    shutil.copy(SCENARIO_DIR / "lost_response.yaml", template)
    out = tmp_path / "out"
    _interrupted(out, after=1, templates=[str(template)])
    template.write_text(template.read_text().replace("recovery_deadline_s: 120", "recovery_deadline_s: 130"))
    with pytest.raises(UsageError) as refused:
        resume_explore(out, isolate=False)
    assert str(refused.value) == (
        f"scenario {template} (lost_response): changed since the exploration began in {out}, so its findings would "
        "mix two inputs; fix: explore anew with another --out (or restore what changed)"
    )
    assert (out / ".parts" / "0.part").is_file()  # refused: nothing was touched


def test_a_resume_refuses_once_the_harness_code_changed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its version number unchanged (0.1.0 since the start), a harness whose simulator or checker was edited
    since would judge the missing parts by other rules than the finished ones."""
    out = tmp_path / "out"
    _interrupted(out, after=1)
    monkeypatch.setattr(folder, "harness_code_digest", lambda: "0" * 16)
    with pytest.raises(UsageError) as refused:
        resume_explore(out, isolate=False)
    assert str(refused.value) == (
        f"the harness's code: changed since the exploration began in {out}, so its findings would mix two inputs; "
        "fix: explore anew with another --out (or restore what changed)"
    )
    assert sorted(p.name for p in (out / ".parts").iterdir()) == ["0.part"]


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (lambda d: d["options"].update(depth=2), "field 'digest': does not match the rest of the file"),
        (lambda d: d["options"].update(depth="2"), "field 'options.depth': Input should be a valid integer"),
        (lambda d: d.pop("fingerprints"), "field 'fingerprints': Field required"),
        (lambda d: d["options"].update(unfired="maybe"), "field 'options.unfired': Input should be 'fail' or 'note'"),
    ],
)
def test_a_resume_refuses_an_edited_request_naming_the_field(tmp_path: Path, edit: Any, said: str) -> None:
    out = tmp_path / "out"
    _interrupted(out, after=1)
    path = out / "explore-request.json"
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))
    with pytest.raises(UsageError) as refused:
        resume_explore(out, isolate=False)
    assert str(refused.value).startswith(f"{path}: {said}")
    assert str(refused.value).endswith("fix: explore anew with another --out (the file was edited or damaged)")


def test_a_resume_refuses_a_request_another_harness_wrote(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out"
    _interrupted(out, after=1)
    monkeypatch.setattr(parts, "__version__", "0.0.9")
    with pytest.raises(UsageError, match=r"field 'harness_version': 0\.1\.0, but this harness is 0\.0\.9"):
        resume_explore(out, isolate=False)


def test_the_request_keeps_every_option_the_exploration_began_with(tmp_path: Path) -> None:
    out = tmp_path / "out"
    changes: dict[str, Any] = {
        "depth": 2,
        "swarm": 3,
        "seeds": (1, 2),
        "concurrency": 3,
        "shard": 1,
        "shards": 2,
        "case_timeout_s": 7.5,
        "unfired": "note",
        "project": "me/mine",
    }
    _interrupted(out, after=1, templates=["lost_response"], **changes)
    request = ExploreRequest.read(out)
    assert {k: getattr(request, k) for k in changes} == changes
    assert (request.policies, request.scenarios, request.tracking) == (tuple(POLICIES), ("lost_response",), "none")
    assert ExploreRequest.read(out).to_json() == (out / "explore-request.json").read_text()


def test_the_command_line_resumes_refuses_other_options_and_says_when_there_is_nothing_to_resume(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    _interrupted(out, after=1)
    assert main(["explore", "--resume", str(out), "--depth", "2", "--seed-count", "2"]) == 2
    assert capsys.readouterr().err.strip() == (
        "harness: --resume takes its policies, templates and options from the exploration's request, not --depth, "
        "--seed-count; fix: drop them"
    )
    assert main(["run", "--resume", str(out)]) == 2  # an exploration's folder is no run's
    assert capsys.readouterr().err.strip() == (
        f"harness: {out}: an exploration that was stopped, not a run; fix: complete it with python -m harness "
        f"explore --resume {out}"
    )
    for again in (["explore", "--policy", "retry_new_key"], ["run", "--policy", "retry_new_key"]):
        assert main([*again, "--scenario", "lost_response", "--out", str(out)]) == 2
        assert capsys.readouterr().err.strip() == (
            f"harness: --out {out}: holds an exploration that was stopped before its end; fix: complete it with "
            f"python -m harness explore --resume {out}, or give a new or empty folder"
        )
    assert main(["explore", "--resume", str(out), "--force-concurrency"]) == 2  # alone, it would change nothing
    assert capsys.readouterr().err.strip().endswith("not --force-concurrency; fix: drop it")
    assert main(["explore", "--resume", str(out), "--quiet", "--concurrency", "1", "--force-concurrency"]) == 1
    said = capsys.readouterr().out
    assert "finding" in said and str(out) in said
    assert main(["explore", "--resume", str(out)]) == 2
    assert (
        capsys.readouterr().err.strip()
        == f"harness: nothing to resume: the exploration in {out} is complete (explore.json)"
    )
    assert main(["explore", "--resume", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip() == (
        f"harness: --resume {tmp_path}: no explore-request.json, so no exploration that stopped short; fix: give a "
        "folder 'harness explore' was writing when it stopped (a run's folder resumes with 'harness run --resume')"
    )


def test_a_lowered_concurrency_is_said_only_once_the_exploration_is_known_to_be_resumable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A resume refused says its one line alone, not a note about the cores before it (as ``run --resume``)."""
    import harness.cli as cli

    out = tmp_path / "out"
    _interrupted(out, after=1)
    monkeypatch.setattr(cli, "cores_here", lambda: 1)
    real = folder.harness_code_digest
    monkeypatch.setattr(folder, "harness_code_digest", lambda: "0" * 16)
    assert main(["explore", "--resume", str(out), "--quiet", "--concurrency", "2"]) == 2
    assert capsys.readouterr().err.strip() == (
        f"harness: the harness's code: changed since the exploration began in {out}, so its findings would mix two "
        "inputs; fix: explore anew with another --out (or restore what changed)"
    )
    monkeypatch.setattr(folder, "harness_code_digest", real)
    assert main(["explore", "--resume", str(out), "--quiet", "--concurrency", "2"]) == 1
    assert capsys.readouterr().err.strip() == (
        "harness: --concurrency 2 is more than the 1 cores here; using 1 (pass --force-concurrency to use it anyway)"
    )
    assert (out / "explore.json").is_file()


def test_a_users_policy_is_imported_again_from_the_folder_the_exploration_began_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    began = tmp_path / "project"
    began.mkdir()
    (began / "my_resumed_policy.py").write_text(
        "from harness.policy import RetryNewKey\nfrom policies.retry_new_key import BlindRetry\n\n"
        "MINE = BlindRetry('mine', '1', RetryNewKey())\n"
    )
    monkeypatch.chdir(began)
    monkeypatch.syspath_prepend(str(began))
    out = tmp_path / "out"
    with pytest.raises(KeyboardInterrupt):
        explore(["my_resumed_policy:MINE"], TEMPLATES, _options(out), _stopped_after(1))
    sys.path.remove(str(began))
    del sys.modules["my_resumed_policy"]
    monkeypatch.chdir(tmp_path)
    summary, _ = resume_explore(out, isolate=False)
    assert [e.policy for e in summary.explorations] == ["mine", "mine"] and summary.findings


def test_an_exploration_stopped_while_writing_its_findings_resumes_without_exploring_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import harness.explore as exploration

    clean = tmp_path / "clean"
    explore(POLICIES, TEMPLATES, _options(clean))
    real = exploration.write_atomic

    def stopped_at_the_second_finding(path: Path, text: str) -> None:
        if path.name == "lost_response-2.yaml":
            raise KeyboardInterrupt
        real(path, text)

    monkeypatch.setattr(exploration, "write_atomic", stopped_at_the_second_finding)
    stopped = tmp_path / "stopped"
    with pytest.raises(KeyboardInterrupt, match="is resumable"):
        explore(POLICIES, TEMPLATES, _options(stopped))
    monkeypatch.setattr(exploration, "write_atomic", real)
    assert len(list((stopped / ".parts").iterdir())) == 4 and (stopped / "findings").is_dir()
    seen: list[object] = []

    def no_process(*_: object) -> None:
        raise AssertionError("a worker process was started with every part kept")

    monkeypatch.setattr(exploration, "supervise", no_process)
    resume_explore(stopped, progress=lambda *done: seen.append(done), isolate=True)
    assert seen == [] and _written(stopped) == _written(clean)


def test_an_exploration_killed_after_its_summary_is_whole_and_said_to_be(tmp_path: Path) -> None:
    """Killed between writing explore.json and removing its request: complete. A resume says there is nothing to
    resume, and --out says the folder is not empty, not that it holds an exploration to complete."""
    from harness.run.folder import not_empty

    out = tmp_path / "out"
    explore(POLICIES, ["lost_response"], _options(out))
    (out / "explore-request.json").write_text("{}")
    assert not_empty(out) == f"--out {out}: is not empty; fix: give a new or empty folder"
    with pytest.raises(UsageError, match="nothing to resume"):
        resume_explore(out, isolate=False)
