"""Exploration and the gates under supervision: a policy that never returns or kills its process costs one
case's budget, is reported with a runnable file and a command, takes nothing from the other policies'
exploration, and never hangs or kills `harness check`, `harness run --junit` or a pytest session."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from test_hardening import BAD_POLICIES, ROOT, harness

from harness.explore import ExploreOptions, explore
from harness.explore.schedule import Schedule, elements_of
from harness.explore.search import ExploreJob, JobResult, explore_job
from harness.scenario import load_scenario, resolve_scenario

GOOD, OTHER = "reconcile_and_reauthorize", "retry_same_key"


@pytest.fixture(scope="module")
def bad(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("policies")
    (folder / "badpol.py").write_text(BAD_POLICIES)
    return folder


def job(*policies: str) -> ExploreJob:
    return ExploreJob(policies, "lost_response", depth=1, swarm=3, seeds=(1,))


def positions(j: ExploreJob) -> tuple[list[int], JobResult]:
    """The positions a job announces before each case it simulates, and its result."""
    seen: list[int] = []
    result = explore_job(j, lambda p: seen.append(p) if p >= 0 else None)
    return seen, result


def test_a_job_announces_every_case_it_simulates_in_order() -> None:
    seen, result = positions(job(GOOD, OTHER))
    assert seen == list(range(len(seen)))
    # Every case the judge ran (it remembers what shrinking asks again, and judges some without running them),
    # plus the template run once per policy to see what it reaches.
    assert len(seen) == sum(result.simulated.values()) + 2


@pytest.mark.parametrize("position", [0, 1, 2, 7])
def test_a_failed_case_stops_only_its_policy_and_is_reported_once(position: int) -> None:
    """Positions 0 and 1 are each policy's first run of the template (what it reaches decides the schedules):
    a policy failing there adds nothing to them, and the other is explored as if alone. Later, the other
    policy is explored exactly as when nothing failed."""
    _, whole = positions(job(GOOD, OTHER))
    seen, result = positions(job(GOOD, OTHER).without(position, "its worker process died"))
    assert seen[:position] == list(range(position))  # the same cases up to the failed one
    assert position not in seen
    (stuck,) = result.stuck
    assert stuck.outcome == "harness_error" and stuck.error == "its worker process died"
    other = OTHER if stuck.policy != OTHER else GOOD
    expected = positions(job(other))[1] if position < 2 else whole
    assert result.cases[other] == expected.cases[other]
    assert result.violations.get(other) == expected.violations.get(other)
    assert [f.schedule for f in result.findings if f.policy == other] == [
        f.schedule for f in expected.findings if f.policy == other
    ]
    # The one that failed was explored less than when nothing failed, and it has no finding after it stopped.
    assert result.cases[stuck.policy] < whole.cases[stuck.policy]


def test_a_case_failed_before_its_policy_ran_anything_explores_nothing_for_it() -> None:
    _, result = positions(job(GOOD).without(0, "over budget"))
    assert result.schedules == 0 and not result.cases and not result.findings
    (stuck,) = result.stuck
    template = load_scenario(resolve_scenario("lost_response"))
    assert stuck.schedule == Schedule.of(elements_of(template))  # the template as written


def test_endless_and_dying_policies_cost_one_budget_each_and_lose_nothing(bad: Path, tmp_path: Path) -> None:
    out = tmp_path / "explore"
    started = time.monotonic()
    proc = harness(
        "explore",
        "--policy",
        GOOD,
        "--policy",
        "badpol:LOOP",
        "--policy",
        "badpol:OSEXIT",
        "--scenario",
        "lost_response",
        "--depth",
        "1",
        "--swarm",
        "3",
        "--concurrency",
        "2",
        "--case-timeout",
        "2",
        "--tracking",
        "none",
        "--quiet",
        "--out",
        str(out),
        env={"PYTHONPATH": str(bad)},
    )
    assert proc.returncode == 1, proc.stderr
    assert time.monotonic() - started < 120
    errors = [line for line in proc.stderr.splitlines() if line.startswith("harness error")]
    assert len(errors) == 2, proc.stderr
    loop = next(e for e in errors if ": loop seed 1:" in e)
    osexit = next(e for e in errors if ": osexit seed 1:" in e)
    assert "wall-clock budget of 2 s" in loop and "exited (status 9)" in osexit
    for line in (loop, osexit):
        command = line.split("reproduce: ", 1)[1]
        assert command.startswith("python -m harness run --policy badpol:") and command.endswith("--case-timeout 2")
        written = Path(command.split("--scenario ", 1)[1].split(" ", 1)[0])
        scenario = load_scenario(written)
        assert scenario.reproduces is None and "could not be judged" in scenario.description
    # The correct policy's exploration is exactly what it is alone, in process.
    alone = explore([GOOD], ["lost_response"], _alone(tmp_path / "alone"))
    record = json.loads((out / "explore.json").read_text())
    (row,) = [e for e in record["explorations"] if e["policy"] == GOOD]
    (expected,) = alone.explorations
    assert (row["schedules"], row["cases"], row["violating_cases"]) == (
        expected.schedules,
        expected.cases,
        expected.violating,
    )
    # The reproduce command runs the case under the same budget, and it ends as a harness error again.
    rerun = harness(
        *loop.split("reproduce: python -m harness ", 1)[1].split(),
        "--tracking",
        "none",
        "--no-report",
        "--quiet",
        "--out",
        str(tmp_path / "rerun"),
        env={"PYTHONPATH": str(bad)},
    )
    assert rerun.returncode == 1 and "wall-clock budget of 2 s" in rerun.stderr


def _alone(out: Path) -> ExploreOptions:
    return ExploreOptions(out=out, depth=1, swarm=3, tracking="none", isolate=False)


@pytest.mark.parametrize("policy", ["badpol:LOOP", "badpol:OSEXIT"])
def test_the_gate_fails_a_policy_that_hangs_or_dies_without_running_it_in_its_own_process(
    policy: str, bad: Path, tmp_path: Path
) -> None:
    """`check` (and `run --junit`) judge every failing case, replaying it to prove its repro file; a case that
    hung or killed its worker is not replayed in the gate's own process (it would hang or kill the gate)."""
    started = time.monotonic()
    proc = harness(
        "check", "--policy", policy, "--scenario", "lost_response", "--seed-count", "1", "--case-timeout", "1",
        "--explore", "--quiet", "--junit", str(tmp_path / "check.xml"), "--out", str(tmp_path / "check"),
        env={"PYTHONPATH": str(bad)}, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    fails = [line for line in proc.stdout.splitlines() if line.startswith("FAIL ")]
    assert len(fails) == 2 and all("harness_error" in f and "reproduce: python -m harness run" in f for f in fails)
    assert "explored schedules" in fails[1] and all(f.endswith("--case-timeout 1") for f in fails), fails
    assert (tmp_path / "check.xml").read_text().count("<error") == 2
    # Nothing of lost_response finished, so nothing is said of what it fired: its coverage is unknown.
    assert "declares" not in proc.stderr, proc.stderr
    run = harness(
        "run", "--policy", policy, "--scenario", "lost_response", "--seed", "1", "--case-timeout", "1",
        "--tracking", "none", "--no-report", "--quiet", "--junit", str(tmp_path / "run.xml"),
        "--out", str(tmp_path / "run"), env={"PYTHONPATH": str(bad)}, timeout=120,
    )  # fmt: skip
    assert run.returncode == 1 and (tmp_path / "run.xml").read_text().count("<error") == 1
    # The case's own reproduce command runs it under the budget it failed under (not the default minute).
    (saved,) = (tmp_path / "run" / "cases").rglob("recovery.json")
    reproduce = json.loads(saved.read_text())["reproduce"]
    assert reproduce == f"python -m harness run --policy {policy} --scenario lost_response --seed 1 --case-timeout 1"
    assert time.monotonic() - started < 100


def test_the_pytest_plugin_fails_the_items_of_a_policy_that_hangs_or_dies_and_goes_on(
    bad: Path, tmp_path: Path
) -> None:
    """The plugin runs the selected cases in supervised worker processes: an endless policy's items fail after
    their budget, a process-killing one's fail at once, each with its reason and reproduce command, and the
    correct policy's items pass in the same session."""
    empty = tmp_path / "empty"
    empty.mkdir()
    started = time.monotonic()
    proc = subprocess.run(
        [
            sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--harness-policy", "badpol:LOOP",
            "--harness-policy", "badpol:OSEXIT", "--harness-policy", GOOD, "--harness-scenario", "lost_response",
            "--harness-seed-count", "2", "--harness-case-timeout", "2", "--harness-out", str(tmp_path / "repro"),
        ],
        capture_output=True, text=True, cwd=empty, env={**os.environ, "PYTHONPATH": str(bad)}, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "4 failed, 2 passed" in proc.stdout
    assert time.monotonic() - started < 100
    assert proc.stdout.count("the case ran longer than its wall-clock budget of 2 s") >= 2
    assert proc.stdout.count("the worker process exited (status 9)") >= 2
    assert "reproduce: python -m harness run --policy badpol:LOOP --scenario lost_response --seed 2" in proc.stdout


def test_a_case_that_fails_while_shrinking_leaves_no_finding_from_that_shrink() -> None:
    """retry_same_key violates on some schedules; a case failing in the middle of shrinking one of them stops the
    policy there, and no half-shrunk schedule is reported as a finding."""
    seen, whole = positions(job(OTHER))
    assert whole.findings
    # Every position from the template runs up to well past the first finding's shrink: each stops the policy
    # somewhere, and every finding left must be one the whole exploration found too.
    for position in range(2, min(len(seen), 60), 3):
        _, result = positions(job(OTHER).without(position, "stopped"))
        assert {f.schedule.key for f in result.findings} <= {f.schedule.key for f in whole.findings}, position
        assert all(f.properties for f in result.findings)


def test_a_worker_never_acts_on_ctrl_c_from_its_first_instruction() -> None:
    """A worker used to ignore SIGINT only once it reached _serve, after a few hundred milliseconds of imports: a
    Ctrl-C then printed its KeyboardInterrupt traceback. It is started with SIGINT blocked, and ignores it before
    it lets it in (the kernel's view of it, read as it starts and again once it serves); the parent's own handler
    and mask are as they were when start() returns. In a fresh process, as a command is: there the first worker
    also starts multiprocessing's resource tracker, whose start let SIGINT in again, so that first worker once
    started with nothing keeping a Ctrl-C from it."""
    script = textwrap.dedent(
        """
        import json, multiprocessing, signal, time
        from pathlib import Path
        from harness.run.pool import _Pool

        def masks(pid):
            lines = Path(f"/proc/{pid}/status").read_text().splitlines()
            bits = {l.split(":")[0]: int(l.split()[1], 16) for l in lines if l.startswith(("SigBlk:", "SigIgn:"))}
            return (bool(bits["SigBlk"] & 2), bool(bits["SigIgn"] & 2))  # SIGINT: blocked, ignored

        # As a command typed in a shell starts: Ctrl-C neither ignored nor blocked (a test runner's worker process,
        # which starts this one, may ignore it, and this process would inherit that).
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
        before, blocked = signal.getsignal(signal.SIGINT), signal.pthread_sigmask(signal.SIG_BLOCK, set())
        pool = _Pool(multiprocessing.get_context("spawn"), 1)
        worker = pool.start()
        first = masks(worker.process.pid)
        kept = signal.getsignal(signal.SIGINT) is before and signal.pthread_sigmask(signal.SIG_BLOCK, set()) == blocked
        deadline = time.monotonic() + 30
        # Until it serves: SIGINT ignored, then let in (the two are two calls; between them it is both).
        while masks(worker.process.pid) != (False, True) and time.monotonic() < deadline:
            time.sleep(0.02)
        print(json.dumps([first, kept, masks(worker.process.pid)]))
        pool.close()
        """
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    first, kept, serving = json.loads(done.stdout)
    # Blocked as it imports, ignored once it serves, or both in the instant between (it ignores SIGINT, then lets
    # it in): never neither, a worker a Ctrl-C would act on.
    assert first in ([True, False], [True, True], [False, True])
    assert kept is True and serving == [False, True]  # the parent as it was; the worker ignores it, let in


@dataclass(frozen=True)
class NoRoom:
    """A job whose files cannot be written, as on a full disk."""

    filename: str | None

    def execute(self, on_case: Callable[[int], None]) -> object:
        raise OSError(errno.ENOSPC, "No space left on device", *([self.filename] if self.filename else []))

    def without(self, position: int, reason: str) -> NoRoom:
        return self


@pytest.mark.parametrize("filename", ["/full/cases/x.json", None])
def test_a_worker_that_cannot_write_its_files_raises_the_systems_error_in_the_parent(filename: str | None) -> None:
    """The worker sent 'cannot write the run's files (No space left on device): ', which the run printed as it
    was: no folder, no fix, a dangling colon. The parent now gets the OSError itself, and the command that
    began the work says whose files they are and how to go on."""
    from harness.run.pool import supervise

    with pytest.raises(OSError) as raised:
        supervise([NoRoom(filename)], 1, None, lambda _index, _result: None)
    assert (raised.value.errno, raised.value.strerror, raised.value.filename) == (
        errno.ENOSPC,
        "No space left on device",
        filename,
    )


def test_an_exploration_that_cannot_write_says_so_in_one_line_and_can_be_resumed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A full disk while exploration wrote its findings gave "internal error: OSError ... a bug of the harness"
    and left a half-written findings/ folder. It is one line naming the folder and the fix, exit 1; the folder
    keeps the request and the finished parts, and the resume it names writes the whole exploration. So does an
    interrupted one's. A disk too full for the request itself leaves nothing to resume: nothing stays."""
    import harness.explore as exploration
    from harness.cli import main

    real = exploration.write_atomic

    def full(path: Path, text: str) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text[:10])  # as far as it got
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(exploration, "write_atomic", full)
    out = tmp_path / "ex"
    args = ["explore", "--policy", "retry_new_key", "--scenario", "lost_response", "--depth", "1", "--swarm", "0"]
    assert main([*args, "--tracking", "none", "--quiet", "--out", str(out)]) == 1
    err = capsys.readouterr().err.strip()
    assert err == (
        f"harness: cannot write the exploration's files in {out} (No space left on device); fix: make room or give "
        f"a writable folder, then resume: python -m harness explore --resume {out}"
    )
    assert sorted(p.name for p in out.iterdir()) == [".parts", "explore-request.json", "findings"]
    monkeypatch.setattr(exploration, "write_atomic", real)
    assert main(["explore", "--resume", str(out), "--quiet"]) == 1  # findings: retry_new_key is unsafe
    assert sorted(p.name for p in out.iterdir()) == ["explore.json", "findings"]
    assert all(p.read_text().startswith("name: lost_response-") for p in (out / "findings").rglob("*.yaml"))
    capsys.readouterr()

    # Into a folder the user made: the request could not be written, so nothing stays but the folder.
    given = tmp_path / "given"
    given.mkdir()
    import harness.explore.parts as parts

    monkeypatch.setattr(parts, "write_atomic", full)
    assert main([*args, "--tracking", "none", "--quiet", "--out", str(given)]) == 1
    assert given.is_dir() and list(given.iterdir()) == []
    assert capsys.readouterr().err.strip().endswith("fix: make room or give a writable folder, then explore again")
    monkeypatch.setattr(parts, "write_atomic", real)

    def stopped(*_: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(exploration, "_run", stopped)
    assert main([*args, "--tracking", "none", "--quiet", "--out", str(given)]) == 130
    assert sorted(p.name for p in given.iterdir()) == ["explore-request.json"]
    # Said in one line with what to do (it said only "interrupted").
    assert capsys.readouterr().err.strip() == (
        f"harness: interrupted; {given} is resumable: python -m harness explore --resume {given}"
    )


@dataclass(frozen=True)
class Sleeper:
    """A job that says it started, sleeps, then leaves a mark (unless it is stopped first)."""

    folder: str
    seconds: float

    def execute(self, on_case: Callable[[int], None]) -> object:
        Path(self.folder, "started").touch()
        time.sleep(self.seconds)
        Path(self.folder, "finished").touch()
        return None

    def without(self, position: int, reason: str) -> Sleeper:
        return self


def test_work_stopped_midway_kills_its_busy_workers_at_once(tmp_path: Path) -> None:
    """Ctrl-C (here: the first job's result handler raising it) stops the pool: a worker still busy is killed
    then, not waited for (every interrupted command took 2 s to exit, the busy workers' grace)."""
    from harness.run.pool import supervise

    quick, slow = tmp_path / "quick", tmp_path / "slow"
    quick.mkdir()
    slow.mkdir()

    def finished(index: int, result: object) -> None:
        deadline = time.monotonic() + 60
        while not (slow / "started").exists() and time.monotonic() < deadline:
            time.sleep(0.01)  # the slow job is running in the other worker
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        supervise([Sleeper(str(quick), 0.0), Sleeper(str(slow), 1.0)], 2, None, finished)
    assert (slow / "started").exists()
    time.sleep(1.5)  # it would have finished by now, had it been left to
    assert not (slow / "finished").exists()


def test_a_stopped_policy_does_not_hide_what_the_others_never_fired(bad: Path, tmp_path: Path) -> None:
    """One policy that hangs stopped its exploration of a template, and the fault no policy reaches went
    unreported for all of them. It is reported, counted over the runs that finished, with the fix a run gives in
    that case: mend the error first (a case that did not run reached no fault); the exit is 1 for the error."""
    text = resolve_scenario("lost_response").read_text().replace("name: lost_response", "name: never")
    path = tmp_path / "never.yaml"
    path.write_text(text.replace("{boundary: response_lost, nth: 1}", "{boundary: response_lost, nth: 1}\n"
                                 "  - {boundary: request_lost, nth: 9}"))  # fmt: skip
    proc = harness("explore", "--policy", GOOD, "--policy", "badpol:LOOP", "--scenario", str(path), "--depth", "1",
                   "--swarm", "0", "--case-timeout", "2", "--tracking", "none", "--quiet", "--out",
                   str(tmp_path / "ex"), env={"PYTHONPATH": str(bad)})  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    said = [line for line in proc.stderr.splitlines() if "declares fault request_lost nth=9" in line]
    assert len(said) == 1 and said[0].endswith(
        "fix: mend the harness errors above first; a case that did not run reached no fault"
    ), proc.stderr
    unfired = json.loads((tmp_path / "ex" / "explore.json").read_text())["unfired"]
    assert [u["fault"] for u in unfired] == ["request_lost nth=9"]
