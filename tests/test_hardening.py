"""A harness that loses nothing and never hangs: bad policies become counted harness_error cases, a killed run
resumes to exactly what a clean run writes, one run per output folder, bounded output, and no secret anywhere."""

from __future__ import annotations

import contextlib
import csv
import html
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
BAD_POLICIES = textwrap.dedent(
    """
    import os, sys, time

    class Loop:
        name, revision = "loop", "1"
        def decide(self, situation):
            while True:
                pass

    class Exit:
        name, revision = "osexit", "1"
        def decide(self, situation):
            os._exit(9)

    class SysExit:
        name, revision = "sysexit", "1"
        def decide(self, situation):
            sys.exit(3)

    class Chatty:
        name, revision = "chatty", "1"
        def decide(self, situation):
            from harness.model import Escalate
            return Escalate(reason="r" * 1_000_000)

    class Interrupt:
        name, revision = "interrupt", "1"
        def decide(self, situation):
            raise KeyboardInterrupt

    class Base:
        name, revision = "base", "1"
        def decide(self, situation):
            raise BaseException("out of here")

    LOOP, OSEXIT, SYSEXIT, CHATTY = Loop(), Exit(), SysExit(), Chatty()
    INTERRUPT, BASE = Interrupt(), Base()
    """
)


def harness(
    *args: str, cwd: Path = ROOT, env: dict[str, str] | None = None, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "harness", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=timeout,
    )


@pytest.fixture(scope="module")
def bad(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("policies")
    (folder / "badpol.py").write_text(BAD_POLICIES)
    return folder


def summary_rows(out: Path) -> list[dict[str, str]]:
    with open(out / "summary.csv", newline="") as handle:
        return list(csv.DictReader(handle))


def test_what_no_case_catches_ends_a_worker_with_its_name_and_no_traceback(bad: Path, tmp_path: Path) -> None:
    """A policy raising KeyboardInterrupt or a bare BaseException ends its worker (nothing may catch them), and
    the case's harness_error names what did it; nothing prints a traceback."""
    out = tmp_path / "run"
    policies = ("badpol:INTERRUPT", "badpol:BASE", "reconcile_and_reauthorize")
    proc = harness("run", *(arg for name in policies for arg in ("--policy", name)), "--scenario", "lost_response",
                   "--seed-count", "1", "--tracking", "none", "--no-report", "--quiet", "--out", str(out),
                   env={"PYTHONPATH": str(bad)})  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    errors = {r["policy"]: r["error"] for r in summary_rows(out)}
    assert errors == {
        "interrupt": "the worker process exited (status 1) while running the case: KeyboardInterrupt",
        "base": "the worker process exited (status 1) while running the case: BaseException: out of here",
        "reconcile_and_reauthorize": "",
    }


def test_a_policy_that_ends_its_worker_while_explored_costs_that_case_only(bad: Path, tmp_path: Path) -> None:
    """sys.exit or KeyboardInterrupt in a policy on an explored schedule is a harness error of that case, written
    under errors/, and the other policy is explored as it would be alone (the exploration ran whole: it gave up
    with 'a worker process died outside any case')."""
    alone = harness(
        "explore", "--policy", "retry_new_key", "--scenario", "lost_response", "--tracking", "none",
        "--quiet", "--out", str(tmp_path / "alone"),
    )  # fmt: skip
    assert alone.returncode == 1, alone.stderr
    out = tmp_path / "explored"
    proc = harness(
        "explore", "--policy", "badpol:SYSEXIT", "--policy", "badpol:INTERRUPT", "--policy", "retry_new_key",
        "--scenario", "lost_response", "--tracking", "none", "--quiet", "--out", str(out),
        env={"PYTHONPATH": str(bad)},
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    assert "outside any case" not in proc.stderr and "Traceback" not in proc.stderr
    assert "sysexit seed 1: the worker process exited (status 3) while running the case: SystemExit: 3" in proc.stderr
    assert "interrupt seed 1: the worker process exited (status 1) while running the case: KeyboardInterrupt" in (
        proc.stderr
    )
    assert sorted(p.name for p in (out / "errors").iterdir()) == ["interrupt", "sysexit"]
    findings = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.yaml") if "errors" not in p.parts)
    assert findings == sorted(
        p.relative_to(tmp_path / "alone").as_posix() for p in (tmp_path / "alone").rglob("*.yaml")
    )
    assert findings


def test_bad_policies_become_counted_harness_errors_and_the_grid_goes_on(bad: Path, tmp_path: Path) -> None:
    """A never-returning policy and two process-killing ones beside a correct one: the grid finishes with exit 1,
    every correct case is complete, and each bad case is one harness_error row with its reason."""
    out = tmp_path / "run"
    started = time.monotonic()
    proc = harness(
        "run",
        "--policy",
        "reconcile_and_reauthorize",
        "--policy",
        "badpol:LOOP",
        "--policy",
        "badpol:OSEXIT",
        "--policy",
        "badpol:SYSEXIT",
        "--scenario",
        "lost_response",
        "--scenario",
        "changed_task",
        "--seed-count",
        "2",
        "--concurrency",
        "2",
        "--case-timeout",
        "2",
        "--tracking",
        "none",
        "--no-report",
        "--quiet",
        "--out",
        str(out),
        env={"PYTHONPATH": str(bad)},
    )
    assert proc.returncode == 1, proc.stderr
    assert time.monotonic() - started < 120
    rows = summary_rows(out)
    assert len(rows) == 16
    good = [r for r in rows if r["policy"] == "reconcile_and_reauthorize"]
    assert len(good) == 4 and all(r["outcome"] != "harness_error" for r in good)
    errors = [r for r in rows if r["outcome"] == "harness_error"]
    assert len(errors) == 12
    by_policy = {r["policy"]: r["unknown"] for r in errors}
    assert "wall-clock budget of 2 s" in by_policy["loop"]
    assert "exited (status 9)" in by_policy["osexit"] and "exited (status 3)" in by_policy["sysexit"]
    assert all(r["error"] and r["error"] in r["unknown"] for r in errors)
    assert all(r["error"] == "" for r in good)
    assert all(r["reproduce"].startswith("python -m harness run --policy badpol:") for r in errors)
    assert len(list((out / "cases").rglob("recovery.json"))) == 16
    assert "harness error in loop x lost_response seed 1" in proc.stderr


def test_a_policys_strings_are_capped_and_marked(bad: Path, tmp_path: Path) -> None:
    """Escalations with a 1 MB reason, repeated to the command budget, give a recovery.json bounded by the budget
    times STRING_MAX (it was 128 MB); each cut is said in the text."""
    out = tmp_path / "run"
    proc = harness(
        "run", "--policy", "badpol:CHATTY", "--scenario", "lost_response", "--seed", "1",
        "--tracking", "none", "--no-report", "--quiet", "--out", str(out), env={"PYTHONPATH": str(bad)},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (case,) = (out / "cases").rglob("recovery.json")
    text = case.read_text()
    assert len(text) < 1_000_000 and text.count("...[cut: 998000 more characters]") >= 1


def test_two_runs_on_one_out_one_proceeds_the_other_exits_2(tmp_path: Path) -> None:
    for k in range(3):
        out = tmp_path / f"same{k}"
        args = ("run", "--scenario", "lost_response", "--tracking", "none", "--no-report", "--quiet", "--out", str(out))
        first = subprocess.Popen([sys.executable, "-m", "harness", *args], cwd=ROOT, stderr=subprocess.PIPE, text=True)
        second = subprocess.Popen([sys.executable, "-m", "harness", *args], cwd=ROOT, stderr=subprocess.PIPE, text=True)
        codes = sorted([first.wait(timeout=300), second.wait(timeout=300)])
        assert codes == [0, 2], (
            first.stderr.read() if first.stderr else "",
            second.stderr.read() if second.stderr else "",
        )


def clean_and_killed(tmp_path: Path, delays: tuple[float, ...]) -> None:
    args = ("run", "--seed-count", "2", "--scenario", "lost_response", "--scenario", "changed_task",
            "--scenario", "connector_crash_points", "--concurrency", "2", "--no-report", "--quiet")  # fmt: skip
    clean = harness(*args, "--out", str(tmp_path / "clean"))
    assert clean.returncode == 0, clean.stderr
    killed_running = []
    for delay in delays:
        out = tmp_path / f"killed-{delay}"
        proc = subprocess.Popen(
            [sys.executable, "-m", "harness", *args, "--out", str(out)], cwd=ROOT, start_new_session=True
        )
        # The delays count from the run's claim of its folder, not from the process's start: on a loaded machine
        # the start-up alone took longer than the first delay, the kill left no folder, and nothing was tested.
        claimed_by = time.monotonic() + 120
        while not (out / "request.json").is_file() and proc.poll() is None and time.monotonic() < claimed_by:
            time.sleep(0.02)
        assert (out / "request.json").is_file(), "the run never claimed its folder"
        time.sleep(delay)
        killed_running.append(proc.poll() is None)
        # A run that has ended may leave a process of its group exiting (multiprocessing's resource tracker), or
        # none: either way there is nothing of the run left to kill.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        resumed = harness("run", "--resume", str(out))
        assert resumed.returncode == 0, resumed.stderr
        assert files(out / "cases") == files(tmp_path / "clean" / "cases"), delay
        assert (out / "summary.csv").read_bytes() == (tmp_path / "clean" / "summary.csv").read_bytes()
        runs = len(list((out / "polyaxon" / "runs").iterdir()))
        assert runs == len(list((tmp_path / "clean" / "polyaxon" / "runs").iterdir()))
        again = harness("run", "--resume", str(out))
        assert again.returncode == 0 and "nothing to resume" in again.stdout + again.stderr
    assert any(killed_running), "every run ended before its kill: nothing was tested"


def files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_killed_run_resumes_to_exactly_a_clean_run(tmp_path: Path) -> None:
    """SIGKILL of the whole process group at several points; --resume completes each, byte for byte, with the same
    number of Polyaxon runs, and a second resume has nothing to do."""
    clean_and_killed(tmp_path, (0.0, 1.2, 2.7))


@pytest.mark.parametrize(("begun", "resumed"), [(2, 1), (1, 2)])
def test_a_run_stopped_part_way_resumes_with_another_concurrency_to_exactly_a_clean_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], begun: int, resumed: int
) -> None:
    """A run begun with --concurrency B, stopped (Ctrl-C) once its first piece had finished, and resumed with
    --concurrency R: the missing pieces run in R worker processes, and the cases (their shares of --failing-files
    included, which depend on how the cells were split), summary.csv, coverage.json and what it prints are those of
    a clean run begun with B. The pieces stay the ones B planned (the manifest is not touched); run.json says both.
    Before, any --concurrency given with --resume was refused."""
    import harness.run.pool as pool
    from harness.cli import EXIT_INTERRUPTED, main

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})  # two cores here, whatever the machine has
    args = ["run", "--policy", "retry_same_key", "--scenario", "connector_no_record_yet", "--scenario",
            "lost_response", "--scenario", "changed_task", "--seed-count", "200", "--records", "compact",
            "--failing-files", "3", "--tracking", "none", "--no-report", "--concurrency", str(begun)]  # fmt: skip
    clean, out = tmp_path / "clean", tmp_path / "stopped"
    assert main([*args, "--quiet", "--out", str(clean)]) == 0
    said_clean = capsys.readouterr().out
    real = pool.supervise
    ran: list[tuple[int, int]] = []

    def first_piece_then_ctrl_c(jobs: Any, concurrency: int, timeout: Any, finished: Any) -> None:
        real(jobs[:1], concurrency, timeout, finished)
        raise KeyboardInterrupt

    monkeypatch.setattr(pool, "supervise", first_piece_then_ctrl_c)
    assert main([*args, "--quiet", "--out", str(out)]) == EXIT_INTERRUPTED
    assert len(list((out / ".parts").glob("*.json"))) == 1 and not (out / "run.json").exists()
    manifest = (out / "manifest.json").read_bytes()

    def noted(jobs: Any, concurrency: int, timeout: Any, finished: Any) -> None:
        ran.append((len(jobs), concurrency))
        real(jobs, concurrency, timeout, finished)

    monkeypatch.setattr(pool, "supervise", noted)
    assert main(["run", "--resume", str(out), "--concurrency", str(resumed)]) == 0
    said = capsys.readouterr()
    assert ran == [(3 * begun - 1, resumed)]  # every piece B planned but the finished one, in R processes
    assert "more than the" not in said.err  # within the cores: no note
    assert (out / "manifest.json").read_bytes() == manifest
    assert files(out / "cases") == files(clean / "cases")
    for name in ("summary.csv", "coverage.json"):
        assert (out / name).read_bytes() == (clean / name).read_bytes(), name
    assert said.out.replace(str(out), "OUT") == said_clean.replace(str(clean), "OUT")
    record, clean_record = (json.loads((folder / "run.json").read_text()) for folder in (out, clean))
    assert (record["concurrency"], record["processes"]) == (begun, resumed)
    assert (clean_record["concurrency"], clean_record["processes"]) == (begun, begun)
    for each in (record, clean_record):
        del each["wall_time_s"], each["processes"]
    assert record == clean_record


def test_a_run_killed_before_it_planned_resumes_from_its_command_line(tmp_path: Path) -> None:
    """A folder holding only the claimed request (the run was killed while it loaded its grid) is planned again
    from the same words, in the same working folder, and ends as a clean run does."""
    args = ["run", "--scenario", "lost_response", "--seed", "1", "--tracking", "none", "--no-report", "--quiet"]
    clean = harness(*args, "--out", str(tmp_path / "clean"))
    assert clean.returncode == 0, clean.stderr
    out = tmp_path / "early"
    out.mkdir()
    (out / "request.json").write_text(json.dumps({"argv": [*args, "--out", "early"], "cwd": str(tmp_path)}))
    resumed = harness("run", "--resume", str(out))
    assert resumed.returncode == 0, resumed.stderr
    assert files(out / "cases") == files(tmp_path / "clean" / "cases")
    assert (out / "manifest.json").is_file() and (out / "run.json").is_file()


@pytest.mark.parametrize("complete", [True, False])
def test_a_run_whose_manifest_was_deleted_is_not_planned_again_over_its_results(tmp_path: Path, complete: bool) -> None:
    """With its manifest gone and its request there, a run that has results was planned again from its words,
    over them: a scenario edited meanwhile gave one run of two inputs' cases, exit 0 (and a complete run ran
    anew). Refused in one line naming the manifest, exit 2, and the folder stays as it was."""
    out = tmp_path / "run"
    args = ["run", "--scenario", "lost_response", "--seed-count", "2", "--tracking", "none", "--no-report"]
    proc = harness(*args, "--quiet", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    (out / "manifest.json").unlink()
    if not complete:  # as if stopped just before its end, run.json not yet written
        (out / "run.json").unlink()
    before = files(out)
    resumed = harness("run", "--resume", str(out))
    assert resumed.returncode == 2, resumed.stderr
    (line,) = resumed.stderr.splitlines()
    assert f"{out / 'manifest.json'}: missing, though the run has results (cases, " in line, line
    assert "fix: start the run anew with another --out" in line
    assert files(out) == before


@pytest.mark.parametrize(
    ("argv", "cwd", "said"),
    [
        (["list"], None, "field 'argv': not the words of a 'harness run' that plans a grid; fix: start the run anew"),
        (["run", "--resume", "x"], None, "field 'argv': not the words of a 'harness run'"),
        (["run", "--seed-count", "zz"], None, "field 'argv': argument --seed-count: seed count 'zz' is not a whole"),
        (["run", "--scenario", "no_such_scenario"], None, "unknown scenario 'no_such_scenario'"),
        (["run", "--seed", "1"], "/nonexistent/gone", "field 'cwd': /nonexistent/gone is no longer a folder, and the"),
    ],
)
def test_a_damaged_request_is_refused_naming_it_and_the_folder_stays(
    tmp_path: Path, argv: list[str], cwd: str | None, said: str
) -> None:
    """A folder stopped before it planned its grid, whose request.json no longer holds the words of a run (or
    the folder it was started from is gone): one line naming request.json and its field, exit 2, the folder as it
    was (it was an internal error, and the request and the lock were deleted, leaving nothing to resume)."""
    out = tmp_path / "early"
    out.mkdir()
    (out / ".lock").touch()
    (out / "request.json").write_text(json.dumps({"argv": argv, "cwd": cwd or str(tmp_path)}))
    proc = harness("run", "--resume", str(out))
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stderr.splitlines()
    assert said in line and "internal error" not in line
    assert sorted(p.name for p in out.iterdir()) == [".lock", "request.json"]


def test_a_run_resumed_from_its_request_takes_quiet_no_report_and_junit(tmp_path: Path) -> None:
    """--quiet, --no-report and --junit given with --resume hold for a run planned again from its request (they
    were dropped: progress lines and a report came all the same). Begun in folder a/ with `--out early`, resumed
    from folder b/ with paths relative to b/: the run completes in a/early and the JUnit file is b/j.xml (both
    were read from a/, where the run began)."""
    began, here = tmp_path / "a", tmp_path / "b"
    out = began / "early"
    out.mkdir(parents=True)
    here.mkdir()
    words = ["run", "--policy", "retry_new_key", "--scenario", "lost_response", "--seed", "1", "--tracking", "none"]
    (out / "request.json").write_text(json.dumps({"argv": [*words, "--out", "early"], "cwd": str(began)}))
    proc = harness("run", "--resume", "../a/early", "--quiet", "--no-report", "--junit", "j.xml", cwd=here)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == "" and not (out / "report.html").exists() and "<testsuites" in (here / "j.xml").read_text()
    assert (out / "run.json").is_file() and not (began / "j.xml").exists()


def test_a_run_resumed_from_its_request_refuses_a_junit_path_that_is_not_a_report(tmp_path: Path) -> None:
    """The --junit given with the resume, or the one in the request's words (relative to where they were said),
    is checked as a new run's is: a file that is not a JUnit report is refused in one line, exit 2, and both it
    and the folder stay as they were (it was written over with the run's JUnit XML)."""
    out = tmp_path / "early"
    out.mkdir()
    (tmp_path / "notes.txt").write_text("precious notes, not junit")
    words = ["run", "--policy", "retry_new_key", "--scenario", "lost_response", "--seed", "1", "--tracking", "none"]
    for argv, given in (([*words, "--junit", "notes.txt"], ()), (words, ("--junit", str(tmp_path / "notes.txt")))):
        (out / "request.json").write_text(json.dumps({"argv": [*argv, "--out", "early"], "cwd": str(tmp_path)}))
        proc = harness("run", "--resume", str(out), "--quiet", *given)
        assert proc.returncode == 2, proc.stderr
        (line,) = proc.stderr.splitlines()
        assert "notes.txt: exists and is not a JUnit report" in line, line
        assert (tmp_path / "notes.txt").read_text() == "precious notes, not junit"
        assert sorted(p.name for p in out.iterdir()) == ["request.json"], argv


def test_bad_input_leaves_nothing_behind(tmp_path: Path) -> None:
    """The folder is claimed first, but an unknown scenario still leaves no folder and no file."""
    out = tmp_path / "never"
    proc = harness("run", "--scenario", "no_such_scenario", "--tracking", "none", "--out", str(out))
    assert proc.returncode == 2 and not out.exists()
    (tmp_path / "empty").mkdir()
    proc = harness("run", "--scenario", "no_such_scenario", "--tracking", "none", "--out", str(tmp_path / "empty"))
    assert proc.returncode == 2 and list((tmp_path / "empty").iterdir()) == []


def test_resume_refuses_a_run_whose_inputs_changed(tmp_path: Path) -> None:
    scenario = tmp_path / "mine.yaml"
    scenario.write_text(
        (ROOT / "scenarios" / "lost_response.yaml").read_text().replace("name: lost_response", "name: mine")
    )
    out = tmp_path / "run"
    first = harness(
        "run", "--scenario", str(scenario), "--tracking", "none", "--no-report", "--quiet", "--out", str(out)
    )
    assert first.returncode == 0, first.stderr
    (out / "run.json").unlink()  # as if it had been killed before the end
    scenario.write_text(scenario.read_text().replace("recovery_deadline_s:", "# changed\nrecovery_deadline_s:"))
    assert harness("run", "--resume", str(out)).returncode == 0  # a comment changes nothing the run depends on
    (out / "run.json").unlink()
    scenario.write_text(scenario.read_text().replace('revision: "1"', 'revision: "2"'))
    refused = harness("run", "--resume", str(out))
    assert refused.returncode == 2
    (line,) = refused.stderr.strip().splitlines()
    assert "changed since the run began" in line and "fix:" in line


@pytest.fixture(scope="module")
def stopped_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run of one case, stopped before its end (no run.json), its manifest as the run wrote it."""
    from harness.cli import main

    out = tmp_path_factory.mktemp("stopped") / "run"
    assert main(["run", "--policy", "retry_new_key", "--scenario", "lost_response", "--seed", "1", "--tracking",
                 "none", "--no-report", "--quiet", "--out", str(out)]) == 0  # fmt: skip
    (out / "run.json").unlink()
    return out


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (lambda m: m["cells"][0].update(policy=5), "field 'cells.0.policy': Input should be a valid string"),
        (lambda m: m["cells"][0].update(seeds=[1.5]), "field 'cells.0.seeds.0': Input should be a valid integer"),
        (lambda m: m["cells"][0].update(seeds=[-1]), "field 'cells.0.seeds.0': Input should be greater than or"),
        (lambda m: m.update(concurrency=0), "field 'concurrency': Input should be greater than or equal to 1"),
        (lambda m: m.update(fingerprints=None), "field 'fingerprints': Input should be a valid dictionary"),
        (lambda m: m["options"].update(tracking="bogus"), "options field 'tracking': Input should be 'offline',"),
        (lambda m: m["options"].update(records=None), "options field 'records': Input should be 'auto', 'full'"),
        (lambda m: m["options"].update(junit=7), "options field 'junit': Input should be a valid string"),
        (lambda m: m["options"].update(case_timeout_s="x"), "options field 'case_timeout_s': Input should be a"),
        # Values the command line would refuse are refused here too (they were run: a budget of -1 s made every
        # case a harness_error, ten million seeds ran past the limit, no cells blamed a policy that had not changed).
        (lambda m: m["options"].update(case_timeout_s=-1), "options field 'case_timeout_s': Input should be greater"),
        (lambda m: m["options"].update(project="Not A/name"), "options field 'project': 'Not A/name' is not a Pol"),
        (lambda m: m.update(cells=[]), "field 'cells': List should have at least 1 item"),
        (lambda m: m["cells"][0].update(seeds=[]), "field 'cells.0.seeds': List should have at least 1 item"),
        (lambda m: m["cells"][0].update(seeds=[2**63]), "field 'cells.0.seeds.0': Input should be less than or"),
        (lambda m: m["cells"][0].update(seeds={"first": 1, "last": 10**7}), "field 'cells.0.seeds': 10,000,000 seeds"),
        (lambda m: m["cells"][0].update(seeds={"first": 5, "last": 1}), "field 'cells.0.seeds': 0 seeds, outside 1.."),
        # Well-formed edits: another concurrency counted the stopped run's pieces twice (107,500 cases of 80,000),
        # more seeds were run as if asked for.
        (lambda m: m.update(concurrency=8), "field 'digest': does not match the rest of the file, so the cells"),
        (lambda m: m["cells"][0].update(seeds=[1, 2]), "field 'digest': does not match the rest of the file"),
        (lambda m: m["options"].update(records="compact"), "field 'digest': does not match the rest of the file"),
    ],
)
def test_a_manifest_edited_by_hand_is_refused_naming_the_field(
    edit: Callable[[dict[str, Any]], None],
    said: str,
    stopped_run: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """--resume reads the manifest a run began with; one edited or damaged so that a field has another type or
    value is refused with exit 2, in one line naming the file and the field, and nothing is run. A policy named
    by a number was a traceback; tracking "bogus" sent the runs to a server; a text --case-timeout was kept."""
    from harness.cli import main

    out = tmp_path / "run"
    shutil.copytree(stopped_run, out)
    manifest = json.loads((out / "manifest.json").read_text())
    edit(manifest)
    (out / "manifest.json").write_text(json.dumps(manifest))
    before = sorted(p.relative_to(out) for p in out.rglob("*"))
    assert main(["run", "--resume", str(out), "--quiet"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"harness: {out / 'manifest.json'}: {said}") and "fix: start the run anew" in line
    assert sorted(p.relative_to(out) for p in out.rglob("*")) == before


def test_a_complete_run_whose_manifest_was_edited_is_refused(
    stopped_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A complete run's resume says "nothing to resume" and may write its JUnit file, from the manifest: one edited
    since is refused as a stopped run's is (it said "nothing to resume" and wrote the JUnit of the edited cells)."""
    from harness.cli import main

    out = tmp_path / "run"
    shutil.copytree(stopped_run, out)
    assert main(["run", "--resume", str(out), "--quiet", "--no-report"]) == 0 and (out / "run.json").is_file()
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["cells"][0]["seeds"] = [1, 2]
    (out / "manifest.json").write_text(json.dumps(manifest))
    capsys.readouterr()
    assert main(["run", "--resume", str(out), "--junit", str(tmp_path / "j.xml")]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "field 'digest': does not match the rest of the file" in line and not (tmp_path / "j.xml").exists()


def test_a_manifest_without_a_digest_is_one_begun_before_it_and_resumes(stopped_run: Path, tmp_path: Path) -> None:
    """A run begun by a harness that kept no digest in its manifest resumes (it was refused as edited), and its
    manifest keeps one from then on."""
    from harness.cli import main

    out = tmp_path / "run"
    shutil.copytree(stopped_run, out)
    manifest = json.loads((out / "manifest.json").read_text())
    del manifest["digest"]
    (out / "manifest.json").write_text(json.dumps(manifest))
    assert main(["run", "--resume", str(out), "--quiet", "--no-report"]) == 0
    assert (out / "run.json").is_file()
    # It keeps a digest from then on (its pieces are written in this harness's format: stopped again, it was
    # refused as edited): the manifest as this harness writes it.
    assert (out / "manifest.json").read_text() == (stopped_run / "manifest.json").read_text()


def test_a_manifest_whose_digest_was_deleted_beside_a_finished_piece_is_refused(
    stopped_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A manifest without a digest beside a piece's tally that only a harness keeping digests writes: the digest
    was deleted, and the edit it would have caught (another concurrency counted the run's pieces twice: 36,000
    cases of a 32,000-case grid) is refused in one line, exit 2, the folder as it was."""
    from harness.cli import main
    from harness.run.cell import execute_cell
    from harness.run.grid import pieces
    from harness.run.plan import Cell

    out = tmp_path / "run"
    shutil.copytree(stopped_run, out)
    manifest = json.loads((out / "manifest.json").read_text())
    (job,) = pieces(Cell("retry_new_key", "lost_response", (1,)), out, manifest["concurrency"], "full")
    execute_cell(job)  # the piece finished before the run was stopped
    assert list((out / ".parts").glob("*.json"))
    del manifest["digest"]
    manifest["concurrency"] += 1
    (out / "manifest.json").write_text(json.dumps(manifest))
    before = sorted(p.relative_to(out) for p in out.rglob("*"))
    assert main(["run", "--resume", str(out), "--quiet"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"harness: {out / 'manifest.json'}: field 'digest': missing, though the run's finished")
    assert sorted(p.relative_to(out) for p in out.rglob("*")) == before


def test_a_cell_whose_tracking_note_is_damaged_is_tracked_anew_in_one_run(tmp_path: Path) -> None:
    """A stopped run notes in .parts/ each cell whose Polyaxon run it recorded (and, before, which run it began).
    A note damaged since (cut short, a field of another type) is not read as tracked: --resume removes the run
    the cell began and tracks the cell anew, so the folder keeps one run for it. It was a traceback."""
    out = tmp_path / "run"
    first = harness("run", "--policy", "retry_new_key", "--scenario", "lost_response", "--seed", "1", "--no-report",
                    "--quiet", "--out", str(out))  # fmt: skip
    assert first.returncode == 0, first.stderr
    (began,) = (p.name for p in (out / "polyaxon" / "runs").iterdir())
    (out / "run.json").unlink()  # stopped after tracking the cell, before the end
    (out / ".parts").mkdir()
    (out / ".parts" / "000000.plx-begun").write_text(began)
    # A field of another type, which json.loads alone would have taken (a note cut short is refused the same way).
    (out / ".parts" / "000000.plx.json").write_text('{"run_uuid": 7, "status": "succeeded", "error": null}')
    resumed = harness("run", "--resume", str(out), "--quiet")
    assert resumed.returncode == 0, resumed.stderr
    runs = [p.name for p in (out / "polyaxon" / "runs").iterdir()]
    assert len(runs) == 1 and runs != [began]
    assert list(json.loads((out / "run.json").read_text())["polyaxon_runs"].values()) == runs


def test_an_incomplete_run_says_so(tmp_path: Path) -> None:
    from harness.present.analysis import load

    out = tmp_path / "run"
    assert harness("run", "--scenario", "lost_response", "--tracking", "none", "--no-report", "--quiet",
                   "--out", str(out)).returncode == 0  # fmt: skip
    (out / "run.json").unlink()
    frame = load(out)
    assert frame.attrs["incomplete"] and str(out) in frame.attrs["incomplete"][0]
    report = harness("report", str(out))
    assert "incomplete" in report.stderr and "--resume" in report.stderr


def test_concurrency_is_capped_at_the_cores_unless_forced(tmp_path: Path) -> None:
    proc = harness("run", "--scenario", "lost_response", "--policy", "stop_on_timeout", "--concurrency", "500",
                   "--tracking", "none", "--no-report", "--quiet", "--out", str(tmp_path / "run"))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert f"--concurrency 500 is more than the {len(os.sched_getaffinity(0))} cores" in proc.stderr


def test_a_polyaxonfile_concurrency_above_the_cores_is_lowered_saying_so(tmp_path: Path) -> None:
    """The same lowering for a concurrency a given polyaxonfile asks (it was lowered without a word), naming it."""
    grid = tmp_path / "grid.yaml"
    text = (ROOT / "polyaxonfiles" / "grid.yaml").read_text().replace("concurrency: 2", "concurrency: 500")
    grid.write_text(text.replace("pathRef: ./component.yaml", f"pathRef: {ROOT / 'polyaxonfiles' / 'component.yaml'}"))
    proc = harness("run", "--polyaxonfile", str(grid), "--seed-count", "1", "--tracking", "none", "--no-report",
                   "--quiet", "--out", str(tmp_path / "run"))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    said = f"harness: {grid}: matrix.concurrency 500 is more than the {len(os.sched_getaffinity(0))} cores here; using"
    assert proc.stderr.startswith(said), proc.stderr
    assert json.loads((tmp_path / "run" / "manifest.json").read_text())["concurrency"] == len(os.sched_getaffinity(0))


@pytest.mark.parametrize("command", ["explore", "check"])
def test_explore_and_check_cap_concurrency_too(command: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """explore and check start one process per core at most, as run does (they started 61 for --concurrency 60)."""
    import harness.explore
    import harness.gate.runner
    from harness.cli import EXIT_INTERRUPTED, main

    seen: list[int] = []

    def spy(*args: object, **kwargs: object) -> None:
        options = next(a for a in (*args, *kwargs.values()) if hasattr(a, "concurrency"))
        seen.append(options.concurrency)  # type: ignore[attr-defined]
        raise KeyboardInterrupt  # stop there: main answers it as a stopped run

    monkeypatch.setattr(harness.explore, "explore", spy)
    monkeypatch.setattr(harness.gate.runner, "check_policy", spy)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    args = [command, "--policy", "retry_same_key", "--scenario", "lost_response", "--concurrency", "60"]
    assert main(args) == main([*args, "--force-concurrency"]) == EXIT_INTERRUPTED
    assert seen == [2, 60]


def secret_fields(model: type, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every field of a scenario model (nested models included) whose type is a pydantic secret."""
    from pydantic import BaseModel, SecretStr

    found = []
    for name, info in model.model_fields.items():  # type: ignore[attr-defined]
        annotation = info.annotation
        if annotation is SecretStr:
            found.append((*prefix, name))
        elif isinstance(annotation, type) and issubclass(annotation, BaseModel):
            found += secret_fields(annotation, (*prefix, name))
    return found


def test_no_secret_reaches_any_file_a_run_writes(tmp_path: Path) -> None:
    """A unique canary in every secret field of every shipped scenario appears in no file of a tracked run with
    its report; a secret equal to another field's value (the action ID, a seed) leaves that field intact."""
    import yaml

    from harness.scenario import Scenario, list_scenarios, resolve_scenario

    fields = secret_fields(Scenario)
    assert fields == [("approval", "token")]
    folder = tmp_path / "scenarios"
    folder.mkdir()
    canaries = {}
    for name in list_scenarios():
        data = yaml.safe_load(Path(resolve_scenario(name)).read_text())
        for path in fields:
            canary = f"CANARY{len(canaries):03d}x{os.getpid()}"
            canaries[name] = canary
            data.setdefault(path[0], {})[path[1]] = canary
        (folder / f"{name}.yaml").write_text(yaml.safe_dump(data))
    equal = yaml.safe_load(Path(resolve_scenario("lost_response")).read_text())
    equal.update(name="token_equals_action", approval={**equal["approval"], "token": equal["action_id"]})
    (folder / "token_equals_action.yaml").write_text(yaml.safe_dump(equal))
    seedlike = {**equal, "name": "token_equals_seed", "approval": {**equal["approval"], "token": "1"}}
    (folder / "token_equals_seed.yaml").write_text(yaml.safe_dump(seedlike))
    out = tmp_path / "run"
    args = ["run", "--policy", "reconcile_and_reauthorize", "--policy", "retry_new_key", "--seed", "1", "--quiet"]
    for path in sorted(folder.glob("*.yaml")):
        args += ["--scenario", str(path)]
    proc = harness(*args, "--out", str(out), "--concurrency", "2")
    assert proc.returncode in (0, 4), proc.stderr
    written = [p for p in out.rglob("*") if p.is_file()]
    assert any(p.name == "report.html" for p in written) and any("polyaxon" in p.parts for p in written)
    for p in written:
        data = p.read_bytes()
        leaked = [c for c in canaries.values() if c.encode() in data]
        assert not leaked, (p, leaked[:3])
    assert not any(c in proc.stdout + proc.stderr for c in canaries.values())
    import json as _json

    for case in (out / "cases").rglob("recovery.json"):
        report = _json.loads(case.read_text())
        if report["scenario"] in ("token_equals_action", "token_equals_seed"):
            assert report["action_id"] == equal["action_id"] and report["reproduce"].endswith("--seed 1")
            assert "[redacted]" not in case.read_text()


def test_load_drops_exact_copies_and_keeps_revisions_apart(tmp_path: Path) -> None:
    import json as _json
    import shutil

    from harness.present.analysis import load, rate_table

    a = tmp_path / "a"
    assert harness("run", "--scenario", "lost_response", "--policy", "retry_same_key", "--policy", "stop_on_timeout",
                   "--tracking", "none", "--no-report", "--quiet", "--out", str(a)).returncode == 0  # fmt: skip
    shutil.copytree(a, tmp_path / "copy")
    once = load(a)
    twice = load([a, tmp_path / "copy"])
    assert len(twice) == len(once) == 6 and twice.attrs["duplicates"] == 6
    newer = tmp_path / "newer"
    shutil.copytree(a, newer)
    for case in (newer / "cases" / "retry_same_key").rglob("recovery.json"):
        data = _json.loads(case.read_text())
        data["policy_revision"] = "99"
        case.write_text(_json.dumps(data))
    both = load([a, newer])
    assert both.attrs["relabelled"] == ["retry_same_key"]
    assert {"retry_same_key@99", "stop_on_timeout"} <= set(both["policy"]) and both["policy"].nunique() == 3
    assert len(both) == 9 and both.attrs["duplicates"] == 3  # stop_on_timeout's copies are exact
    table = rate_table(both)
    assert "retry_same_key@99" in table.index.astype(str).tolist() or "retry_same_key@99" in table.to_string()


def _run_edited_lost_response(tmp_path: Path, revision: str) -> tuple[Path, Path]:
    """A run of the shipped ``lost_response`` and one of a user's file of the same name whose request, not its
    response, is lost (its own ``revision``): each writes its cases under ``lost_response``."""
    shipped_run, edited_run = tmp_path / "shipped", tmp_path / "edited"
    edited = tmp_path / "mine" / "lost_response.yaml"
    edited.parent.mkdir()
    text = (ROOT / "scenarios" / "lost_response.yaml").read_text(encoding="utf-8")
    text = text.replace("response_lost", "request_lost", 1).replace('revision: "1"', f'revision: "{revision}"', 1)
    edited.write_text(text, encoding="utf-8")
    for scenario, out in (("lost_response", shipped_run), (str(edited), edited_run)):
        args = ("run", "--scenario", scenario, "--policy", "retry_same_key", "--tracking", "none", "--no-report")
        assert harness(*args, "--quiet", "--out", str(out)).returncode == 0
    return shipped_run, edited_run


def test_load_keeps_a_scenario_loaded_at_several_revisions_apart(tmp_path: Path) -> None:
    """A user's file named like a shipped scenario, run alone, writes its cases where the shipped one's go: loaded
    beside a run of the shipped one, its seeds were counted as more cases of one cell. Given a revision of its
    own, its rows are labelled ``name@revision``, and the scenario is named in ``attrs["relabelled_scenarios"]``."""
    from harness.present.analysis import load, rate_table

    shipped_run, edited_run = _run_edited_lost_response(tmp_path, "2-mine")
    alone = load(shipped_run, quiet=True)
    assert alone.attrs["relabelled_scenarios"] == [] and set(alone["scenario"]) == {"lost_response"}
    both = load([shipped_run, edited_run], quiet=True)
    assert both.attrs["relabelled_scenarios"] == ["lost_response"] and both.attrs["relabelled"] == []
    assert both.attrs["conflicts"] == []
    assert both.groupby("scenario").size().to_dict() == {"lost_response@1": 3, "lost_response@2-mine": 3}
    assert {"lost_response@1", "lost_response@2-mine"} <= set(rate_table(both).columns.astype(str))


def test_load_says_which_cases_have_other_results_under_the_same_revisions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same file edited without a new revision: nothing tells the two worlds apart but their results. load
    keeps both, and says once per cell which paths differ, with what to do."""
    from harness.present.analysis import load

    shipped_run, edited_run = _run_edited_lost_response(tmp_path, "1")
    both = load([shipped_run, edited_run], quiet=False)
    (conflict,) = both.attrs["conflicts"]
    assert conflict.path == str(edited_run)
    assert conflict.reason.startswith(
        f"3 cases of retry_same_key (revision 1) x lost_response (revision 1) have other results than under "
        f"{shipped_run}, under the same revisions"
    )
    assert f"{edited_run}: {conflict.reason}" in capsys.readouterr().out
    assert len(both) == 6 and both.attrs["relabelled_scenarios"] == [] and both.attrs["duplicates"] == 0
    again = load([shipped_run, shipped_run, edited_run], quiet=True)  # a copy is dropped, not said to differ
    assert again.attrs["duplicates"] == 3 and len(again.attrs["conflicts"]) == 1


def test_a_page_drawn_while_the_run_was_stopped_is_drawn_again_when_it_resumes(tmp_path: Path) -> None:
    """`harness report` on a stopped run draws a page that says it is incomplete; the resumed run, even one
    begun with --no-report, draws it again: no page in the folder tells less than the folder holds."""
    out = tmp_path / "run"
    args = ("run", "--scenario", "lost_response", "--seed-count", "2", "--tracking", "none", "--no-report")
    assert harness(*args, "--quiet", "--out", str(out)).returncode == 0
    assert not (out / "report.html").exists()
    (out / "run.json").unlink()  # as if it had been stopped before its end
    assert harness("report", str(out)).returncode == 0
    assert "Incomplete:" in (out / "report.html").read_text()
    resumed = harness("run", "--resume", str(out))
    assert resumed.returncode == 0, resumed.stderr
    page = (out / "report.html").read_text()
    assert "Incomplete:" not in page and "12 cases" in page


@pytest.mark.parametrize(
    ("source", "needle"),
    [
        (
            "class P:\n    name = 'p'\n    @property\n    def revision(self):\n        raise RuntimeError('boom')\n"
            "    def decide(self, s):\n        return None\nPOLICY = P()\n",
            "reading its name or revision raised RuntimeError: boom",
        ),
        ("import sys\nsys.exit(5)\n", "cannot import 'broken_policy' (SystemExit: 5)"),
        ("raise BaseException('raw')\n", "cannot import 'broken_policy' (BaseException: raw)"),
        (  # it broke the line naming the policy, and JUnit's, in two
            "class P:\n    name, revision = 'p', '1\\n2'\n    def decide(self, s):\n        return None\nPOLICY = P()\n",
            "revision '1\\n2' has a character that is not printable (a line break, a tab, a control character); fix:",
        ),
    ],
)
def test_a_policy_that_fails_while_loading_is_refused_in_one_line(tmp_path: Path, source: str, needle: str) -> None:
    """A revision property that raises, a module that exits or raises a bare BaseException at import, a revision
    with a line break: exit 2
    with one line, and nothing left behind (they gave an internal error, a silent exit 5 or a traceback, and
    left .lock and request.json, so the same --out was then refused as not empty)."""
    (tmp_path / "broken_policy.py").write_text(source)
    out = tmp_path / "out"
    proc = harness("run", "--policy", "broken_policy:POLICY", "--scenario", "lost_response", "--tracking", "none",
                   "--out", str(out), env={"PYTHONPATH": str(tmp_path)})  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert needle in proc.stderr and "fix:" in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert not out.exists()


def test_a_closed_output_pipe_is_not_reported_as_a_bug() -> None:
    """`harness list | head -1`: the reader went away; exit 141 as a shell's SIGPIPE, no "internal error". The
    reader here is `true`, gone before the harness has started, so the pipe is closed at the first write."""
    proc = _into_a_closed_pipe(["list"])
    assert proc.returncode == 141, proc.stderr
    assert proc.stderr == ""


def _into_a_closed_pipe(
    words: list[str], env: dict[str, str] | None = None, stream: str = "stdout"
) -> subprocess.CompletedProcess[str]:
    """``python -m harness WORDS | true``: the reader, ``true``, is gone before the harness starts, so the pipe is
    closed at its first write; the harness's own exit status is returned. ``stream="stderr"``: standard error
    goes into the pipe instead (standard output to /dev/null)."""
    into = " 2>&1 >/dev/null" if stream == "stderr" else ""
    return subprocess.run(
        f"{shlex.quote(sys.executable)} -m harness {shlex.join(words)}{into} | true; exit ${{PIPESTATUS[0]}}",
        shell=True,
        executable="/bin/bash",
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


@pytest.mark.parametrize("command", ["run", "check"])
def test_a_closed_error_pipe_lets_the_run_finish_with_its_own_status(tmp_path: Path, command: str) -> None:
    """`harness run ... 2>&1 >/dev/null | true`-like: the reader of standard error is gone at the first progress
    line. The run finishes, writes every file and exits as it ends (it stopped half-written and exited 0); a
    policy that prints as it decides is judged as it would be (each print raised in its worker, and every case
    ended abandoned by a policy error)."""
    (tmp_path / "chatty_policy.py").write_text(
        "import sys\n"
        "from policies.reconcile_and_reauthorize import ReconcileAndReauthorize\n"
        "class Chatty(ReconcileAndReauthorize):\n"
        "    def decide(self, situation):\n"
        "        print('deciding', file=sys.stderr, flush=True)\n"
        "        print('deciding', flush=True)\n"
        "        return super().decide(situation)\n"
        "POLICY = Chatty()\n"
    )
    out = tmp_path / "out"
    words = [command, "--policy", "chatty_policy:POLICY", "--scenario", "lost_response", "--seed-count", "2",
             "--out", str(out)]  # fmt: skip
    if command == "run":
        words += ["--tracking", "none", "--no-report"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(tmp_path)}
    proc = _into_a_closed_pipe(words, env=env, stream="stderr")
    assert proc.returncode == 0, proc.stderr
    rows = summary_rows(out)
    assert [r["outcome"] for r in rows] == ["correct", "correct"] and not any(r["error"] for r in rows)
    assert not (out / ".parts").exists()


@pytest.mark.parametrize("command", ["run", "check"])
def test_a_closed_output_pipe_does_not_cost_the_junit_file(tmp_path: Path, command: str) -> None:
    """`harness run --junit FILE | head -1` of a grid whose table fills the pipe: the files are written before
    anything is printed, so a reader that stops early ends the printing, not the JUnit XML (it was written after
    the outcome table, or check's FAIL lines, and never written when they could not be printed). Unbuffered, so
    the first line printed meets the closed pipe, as a long table does."""
    junit, out = tmp_path / "cases.xml", tmp_path / "out"
    words = ["--policy", "retry_new_key", "--scenario", "lost_response", "--seed-count", "1", "--junit", str(junit),
             "--out", str(out), "--quiet"]  # fmt: skip
    if command == "run":
        words += ["--tracking", "none", "--no-report"]
    proc = _into_a_closed_pipe([command, *words], env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert proc.returncode == 141, proc.stderr
    assert "<testsuites" in junit.read_text(encoding="utf-8")


def test_a_fault_unfired_because_cases_failed_says_so(tmp_path: Path) -> None:
    """A policy that kills its worker at its first decision never lets uncertain_lookup's lookups happen: the run
    exits 1 for the harness errors, and its word on the unfired fault points at them, not at the scenario."""
    (tmp_path / "exiting.py").write_text(
        "import os\nclass P:\n    name, revision = 'exiting', '1'\n    def decide(self, s):\n        os._exit(3)\n"
        "POLICY = P()\n"
    )
    proc = harness("run", "--policy", "exiting:POLICY", "--scenario", "uncertain_lookup", "--seed", "1",
                   "--tracking", "none", "--no-report", "--quiet", "--out", str(tmp_path / "run"),
                   env={"PYTHONPATH": str(tmp_path)})  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    unfired = [line for line in proc.stderr.splitlines() if "fired in no case of this run that finished" in line]
    assert unfired and all("mend the harness errors above first" in line for line in unfired)
    # coverage.json does not call them unfired either: whether they fire is unknown; nor does run.json, which
    # counted them unfired.
    coverage = json.loads((tmp_path / "run" / "coverage.json").read_text())
    assert (coverage["unfired"], coverage["unknown"]) == (0, len(unfired))
    assert all(f["harness_errors"] == 1 for f in coverage["faults"])
    ended = json.loads((tmp_path / "run" / "run.json").read_text())
    assert (ended["harness_errors"], ended["unfired"], ended["unknown"]) == (1, 0, len(unfired))
    # A resume of the complete run exits as it did.
    assert harness("run", "--resume", str(tmp_path / "run"), env={"PYTHONPATH": str(tmp_path)}).returncode == 1


def test_a_scenario_given_by_a_relative_path_is_found_again_from_another_folder(tmp_path: Path) -> None:
    """The manifest and every reproduce command keep the path made absolute: a replay (or a resume) started
    from another folder reads the same file (it kept 'd/lost_response.yaml', which only the first folder had)."""
    here = tmp_path / "here"
    (here / "d").mkdir(parents=True)
    (here / "d" / "lost_response.yaml").write_text((ROOT / "scenarios" / "lost_response.yaml").read_text())
    out = tmp_path / "run"
    proc = harness("run", "--policy", "reconcile_and_reauthorize", "--scenario", "d/lost_response.yaml", "--seed",
                   "1", "--tracking", "none", "--no-report", "--quiet", "--out", str(out), cwd=here)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (case,) = out.glob("cases/*/*/seed-1/recovery.json")
    reproduce = json.loads(case.read_text())["reproduce"]
    assert f"--scenario {here / 'd' / 'lost_response.yaml'} " in reproduce
    replay = harness("replay", str(case), cwd=tmp_path)
    assert replay.returncode == 0, replay.stdout + replay.stderr


def test_report_of_a_folder_with_only_unreadable_cases_says_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A folder whose one recovery.json is of another schema: the error says so, not "no recovery.json found"."""
    from harness.cli import main
    from harness.run import load_grid, run_case
    from harness.run.files import recovery_json

    (case,) = load_grid(["reconcile_and_reauthorize"], ["lost_response"], [1]).cases
    doc = json.loads(recovery_json(run_case(case)[0]))
    doc["schema_version"] = 999
    path = tmp_path / "cases" / "seed-1" / "recovery.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(doc))
    assert main(["report", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert f"{path}: schema_version 999" in err and "fix:" in err and "\n" not in err


def _tamper_event(timeline: list[dict[str, Any]]) -> None:
    timeline[2]["event"] = "bogus"


def _tamper_keys(timeline: list[dict[str, Any]]) -> None:
    data = timeline[3]["data"]
    del data["model"]
    data["extra"] = 1


def _tamper_kind(timeline: list[dict[str, Any]]) -> None:
    timeline[6]["data"]["kind"] = "bogus"


def _tamper_data(timeline: list[dict[str, Any]]) -> None:
    del timeline[4]["data"]


@pytest.mark.parametrize(
    ("tamper", "why"),
    [
        (_tamper_event, "EventError: the worker records no event 'bogus'"),
        (_tamper_keys, "EventError: controller action_recorded: missing keys ['model'], unknown keys ['extra']"),
        (_tamper_kind, "EventError: transport send: unknown kind 'bogus'"),
        (_tamper_data, "KeyError: 'data'"),
    ],
)
def test_a_timeline_that_cannot_be_drawn_is_said_so_and_the_report_goes_on(
    tamper: Callable[[list[dict[str, Any]]], None], why: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A recovery.json that parses but whose timeline was edited (an entry of no known event, other keys, a kind
    no send has, no data): `harness report` exits 0, says in the picture's place which file and why, and one
    line on stderr; the other failing case's timeline is drawn. It ended the report with exit 2 and a line that
    named no file."""
    from harness.cli import main
    from harness.run import load_grid, run_case
    from harness.run.files import recovery_json

    paths = {}
    for policy in ("retry_new_key", "stop_on_timeout"):
        (case,) = load_grid([policy], ["lost_response"], [1]).cases
        doc = json.loads(recovery_json(run_case(case)[0]))
        assert doc["outcome"] in ("incorrect", "abandoned"), doc["outcome"]  # both drawn by the page
        if policy == "retry_new_key":
            tamper(doc["timeline"])
        paths[policy] = tmp_path / "cases" / policy / "seed-1" / "recovery.json"
        paths[policy].parent.mkdir(parents=True)
        paths[policy].write_text(json.dumps(doc))
    assert main(["report", str(tmp_path)]) == 0
    page = (tmp_path / "report.html").read_text()
    where = f"{paths['retry_new_key']}: {why}"
    assert html.escape(f"Timeline not drawn: {where}") in page
    assert page.count("Timeline not drawn") == 1
    assert 'alt="timeline of stop_on_timeout x lost_response seed 1' in page
    assert 'alt="timeline of retry_new_key' not in page
    err = [line for line in capsys.readouterr().err.splitlines() if "not drawn" in line]
    assert err == [
        f"harness: 1 timeline not drawn, the case's timeline unreadable (the report says so in its place): {where}"
    ]


@pytest.mark.parametrize("policies", [5, "stop_on_timeout", [1, "stop_on_timeout"], {"a": 1}])
def test_a_run_record_edited_out_of_shape_leaves_the_report_in_the_frames_order(
    policies: object, tmp_path: Path
) -> None:
    """The report lists policies in the order run.json recorded; a run.json whose "policies" is no list of names
    is passed over (names in it kept), and the report is drawn. A number there was a traceback."""
    from harness.cli import main
    from harness.run import load_grid, run_case
    from harness.run.files import recovery_json

    for policy in ("stop_on_timeout", "retry_new_key"):
        (case,) = load_grid([policy], ["lost_response"], [1]).cases
        path = tmp_path / "cases" / policy / "seed-1" / "recovery.json"
        path.parent.mkdir(parents=True)
        path.write_text(recovery_json(run_case(case)[0]))
    (tmp_path / "run.json").write_text(json.dumps({"policies": policies}))
    assert main(["report", str(tmp_path)]) == 0
    page = (tmp_path / "report.html").read_text()
    first = "stop_on_timeout" if isinstance(policies, list) else "retry_new_key"  # else the files' order
    rows = re.findall(r'<tr class="policy"><td>([a-z_]+)</td>', page)
    assert rows[0] == first and sorted(rows) == ["retry_new_key", "stop_on_timeout"]


def test_a_resumed_run_writes_the_junit_it_began_with(tmp_path: Path) -> None:
    """The JUnit XML is written when the run completes: by the resume of a stopped run too (its path is kept in
    the manifest; the resume wrote none, and refused both --junit and --no-report)."""
    here = tmp_path / "here"
    here.mkdir()
    out = tmp_path / "run"
    first = harness("run", "--policy", "retry_new_key", "--scenario", "lost_response", "--seed", "1", "--tracking",
                    "none", "--no-report", "--quiet", "--junit", "ju.xml", "--out", str(out), cwd=here)  # fmt: skip
    assert first.returncode == 0, first.stderr
    junit = here / "ju.xml"
    written = junit.read_text()
    junit.unlink()
    (out / "run.json").unlink()  # as a run stopped before its end leaves it
    resumed = harness("run", "--resume", str(out), "--no-report", "--quiet", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert junit.read_text() == written and 'failures="1"' in written


def test_a_run_of_a_users_policy_resumes_from_another_folder(tmp_path: Path) -> None:
    """A run of ``package.module:attr`` started in the policy's folder resumes from anywhere: the module imports
    from the folder the run began in. It was refused ("cannot import ... fix: check the module")."""
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "mypol.py").write_text("from policies.stop_on_timeout import POLICY\n")
    out = tmp_path / "run"
    args = ["--scenario", "lost_response", "--seed", "1", "--tracking", "none", "--no-report", "--quiet"]
    first = harness("run", "--policy", "mypol:POLICY", *args, "--out", str(out), cwd=mine)
    assert first.returncode == 0, first.stderr
    written = (out / "summary.csv").read_text()
    (out / "run.json").unlink()  # as a run stopped before its end leaves it
    elsewhere = harness("run", "--policy", "mypol:POLICY", *args, "--out", str(tmp_path / "other"), cwd=tmp_path)
    assert elsewhere.returncode == 2 and "fix: run from the folder that holds 'mypol'" in elsewhere.stderr
    resumed = harness("run", "--resume", str(out), "--no-report", "--quiet", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert (out / "run.json").is_file() and (out / "summary.csv").read_text() == written


@pytest.mark.parametrize("where", ["a text file", "the run's own summary.csv"])
def test_a_resumed_run_checks_the_junit_path_it_began_with(
    stopped_run: Path, tmp_path: Path, where: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The JUnit path kept in the manifest is checked as --junit is before anything runs: a file that is not a
    JUnit report (put there while the run was stopped, or a path edited in) is not written over. A resume
    replaced both with JUnit XML, the run's own summary.csv included."""
    from harness.cli import main

    out = tmp_path / "run"
    shutil.copytree(stopped_run, out)
    precious = tmp_path / "precious.txt" if where == "a text file" else out / "summary.csv"
    precious.write_text("mine\n")
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["options"]["junit"] = str(precious)
    (out / "manifest.json").write_text(json.dumps(manifest))
    assert main(["run", "--resume", str(out), "--quiet"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"harness: --junit {precious}: ") and "fix:" in line
    assert precious.read_text() == "mine\n" and not (out / "run.json").exists()


@pytest.mark.parametrize(
    "args",
    [
        ["check", "--policy", "retry_new_key", "--scenario", "lost_response", "--junit", "/proc/harness/x.xml"],
        ["run", "--policy", "retry_new_key", "--scenario", "lost_response", "--junit", "/proc/harness/x.xml"],
        ["schema", "--out", "/proc/harness/x.json"],
    ],
)
def test_an_output_file_that_cannot_be_written_is_refused_before_the_work(
    tmp_path: Path, args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """--junit or schema --out in a folder that cannot be made: exit 2 at once, naming the option (it ran every
    case first, then said "internal error: FileNotFoundError ... a bug of the harness")."""
    from harness.cli import main

    out = tmp_path / "out"
    assert main([*args, *(["--out", str(out), "--tracking", "none"] if args[0] == "run" else [])]) == 2
    err = capsys.readouterr().err.strip()
    assert "cannot be written" in err and "fix:" in err and "\n" not in err
    assert not out.exists()


def test_checking_an_output_file_writes_nothing(tmp_path: Path) -> None:
    """The check before a run tries the nearest folder that exists and leaves it as it was: a run refused later
    for another reason leaves no folder made for its --junit."""
    from harness.errors import InputError
    from harness.run.files import check_writable

    check_writable(tmp_path / "a" / "b" / "junit.xml", "--junit")
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "afile").write_text("x")
    with pytest.raises(InputError, match="afile is a file, not a folder"):
        check_writable(tmp_path / "afile" / "junit.xml", "--junit")


@pytest.mark.parametrize(("code", "status"), [(None, 0), (3, 3), (256, 0), (-1, 255), (True, 1), ("bye", 1)])
def test_a_worker_ended_by_sys_exit_says_the_status_it_ends_with(code: object, status: int) -> None:
    """The status a case's reason names is the one the process ends with (the system keeps its low byte): it
    said "status 256" of a worker that ended with 0, and "status True"."""
    from harness.run.pool import _ended_by

    ended = _ended_by(SystemExit(code))
    assert ended == status and type(ended) is int
    if isinstance(code, int):  # what the system keeps of it
        proc = subprocess.run([sys.executable, "-c", f"import sys; sys.exit({code!r})"], check=False)
        assert proc.returncode == status


def test_a_run_interrupted_while_it_plans_again_from_its_request_says_it_is_resumable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Ctrl-C while a run stopped before it planned its grid plans it again: exit 130, one line with the resume
    command (it said only "interrupted"), and the folder as it was, its request kept."""
    import harness.cli
    from harness.cli import main

    out = tmp_path / "early"
    out.mkdir()
    words = ["run", "--policy", "retry_new_key", "--scenario", "lost_response", "--seed", "1", "--tracking", "none"]
    (out / "request.json").write_text(json.dumps({"argv": [*words, "--out", "early"], "cwd": str(tmp_path)}))

    def interrupted(*_: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(harness.cli, "_plan", interrupted)
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--resume", str(out)]) == 130
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line == f"harness: interrupted; {out} is resumable: python -m harness run --resume {out}"
    assert sorted(p.name for p in out.iterdir()) == [".lock", "request.json"]


def test_a_junits_repro_paths_are_the_same_whichever_folder_wrote_it(tmp_path: Path) -> None:
    """With --out given relative, the JUnit's reproduce commands named the repro files relative to the folder
    the command ran in: a resume from another folder wrote other commands, and none ran from elsewhere. They
    are absolute now, as check writes them."""
    here = tmp_path / "here"
    here.mkdir()
    first = harness("run", "--policy", "retry_new_key", "--scenario", "lost_response", "--seed", "1", "--tracking",
                    "none", "--no-report", "--quiet", "--junit", "ju.xml", "--out", "rel", cwd=here)  # fmt: skip
    assert first.returncode == 0, first.stderr
    junit = here / "ju.xml"
    written = junit.read_text()
    repro = here / "rel" / "repro" / "retry_new_key" / "seed-1" / "lost_response.yaml"
    assert repro.is_file() and f"python -m harness replay {repro}" in written
    junit.unlink()
    resumed = harness("run", "--resume", "here/rel", "--quiet", cwd=tmp_path)  # complete: it writes the JUnit
    assert resumed.returncode == 0, resumed.stderr
    assert junit.read_text() == written


def test_a_run_interrupted_while_it_writes_its_junit_says_a_resume_writes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Ctrl-C once the run was complete, while its JUnit file and repro files were written: it said only
    "interrupted", and no resume command. It names the command that writes them."""
    import harness.cli
    from harness.cli import EXIT_INTERRUPTED, main

    real = harness.cli._write_junit

    def interrupted(*_: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(harness.cli, "_write_junit", interrupted)
    out, junit = tmp_path / "run", tmp_path / "ju.xml"
    words = ["run", "--policy", "retry_new_key", "--scenario", "lost_response", "--seed", "1", "--tracking", "none",
             "--no-report", "--quiet", "--junit", str(junit), "--out", str(out)]  # fmt: skip
    assert main(words) == EXIT_INTERRUPTED
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line == (
        f"harness: interrupted while writing --junit {junit}; the run in {out} is complete, and a resume writes "
        f"it: python -m harness run --resume {out}"
    )
    assert not junit.exists()
    monkeypatch.setattr(harness.cli, "_write_junit", real)
    assert main(["run", "--resume", str(out), "--quiet"]) == 0
    assert 'failures="1"' in junit.read_text()


def test_an_interrupt_after_one_that_ended_code_run_from_text_still_exits_130(tmp_path: Path) -> None:
    """CPython exits by SIGINT, whatever status it is given, once a KeyboardInterrupt has ended code it was given
    as text (``exec`` of a string, as dataclasses build their methods while modules are imported). A Ctrl-C that
    landed there at start-up was caught and said ("harness: interrupted"), and the process still died of SIGINT:
    -2 to a caller, for about one interrupt in six. Here the interrupt is made to land there every time."""
    (tmp_path / "sitecustomize.py").write_text(
        textwrap.dedent(
            """
            import harness.cli as cli

            def interrupted(args, words):
                try:
                    exec("raise KeyboardInterrupt")  # ends code run from text
                except KeyboardInterrupt:
                    raise KeyboardInterrupt from None  # and comes on to the harness, which says it

            cli._command = interrupted
            """
        )
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    done = subprocess.run(
        [sys.executable, "-m", "harness", "list"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert (done.returncode, done.stdout, done.stderr) == (130, "", "harness: interrupted\n")
