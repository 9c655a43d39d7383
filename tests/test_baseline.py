"""``harness check --baseline``: safe is not done. A policy that records every final absence and never retries passes
every safety property; with a baseline, each case it passes yet leaves the task incomplete where the baseline
completes it fails as ``incomplete``, with the command that runs both on it (an adversarial review's variant
passed ``check`` with the task done in 37 cases of 84 against the correct policy's 47)."""

from __future__ import annotations

import shlex
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import SCENARIO_DIR

from harness.cli import main
from harness.gate.runner import CheckOptions, check_policy
from harness.run.files import read_reports

#: request_lost: the request never arrived, a same-key retry completes the task; lost_response: the effect is
#: there, and a lookup records it (no retry needed).
pytest_plugins = ["pytester"]

SCENARIOS = ("request_lost", "lost_response")

NEVER_RETRIES = '''
from policies.reconcile_and_reauthorize import ReconcileAndReauthorize


class NeverRetries(ReconcileAndReauthorize):
    """Takes no retry for safe: records a final absence and stops, the task left undone."""

    name = "never_retries"

    def retry_is_safe(self, situation, looked_at_s):
        return False


POLICY = NeverRetries()
'''


@pytest.fixture
def never(policy_module: Callable[..., Path]) -> Path:
    """A folder holding the never-retrying policy's module (``tests_never:POLICY``), on sys.path for the test."""
    return policy_module("tests_never", NEVER_RETRIES)


def test_a_safe_policy_that_leaves_the_task_undone_fails_only_against_a_baseline(never: Path, tmp_path: Path) -> None:
    """Without a baseline every case passes; with one, exactly the cases it left incomplete where the baseline
    completed them fail, each saying both outcomes, and the note counts the completed tasks of each."""
    seeds = (1, 2)
    alone = check_policy("tests_never:POLICY", CheckOptions(scenarios=SCENARIOS, seeds=seeds, out=tmp_path / "a"))
    assert alone.ok and not any("baseline" in n for n in alone.notes)
    options = CheckOptions(scenarios=SCENARIOS, seeds=seeds, out=tmp_path / "b", baseline="reconcile_and_reauthorize")
    summary = check_policy("tests_never:POLICY", options)
    mine = read_reports(tmp_path / "b")
    theirs = read_reports(tmp_path / "b" / "baseline")
    expected = sorted(
        f"{scenario} seed {seed}"
        for (_, scenario, seed), report in mine.items()
        if report.metrics["task_completed"] is False
        and theirs[("reconcile_and_reauthorize", scenario, seed)].metrics["task_completed"] is True
    )
    assert expected == ["request_lost seed 1", "request_lost seed 2"]
    failed = [c for c in summary.cases if not c.passed]
    assert sorted(c.name for c in failed) == expected and {c.outcome for c in failed} == {"incomplete"}
    for case in failed:
        assert case.message == (
            "incomplete: correct, but the task was left incomplete where reconcile_and_reauthorize completed it"
        )
        assert (
            "task_completed false" in case.text
            and "the baseline, on the same case: correct, task_completed true" in case.text
        )
    completed = sum(r.metrics["task_completed"] is True for r in mine.values())
    assert (
        f"note: the task ended completed in {completed} of 4 cases, 4 of 4 with the baseline reconcile_and_reauthorize"
        in summary.notes[-1]
    )
    assert completed == 2


def test_check_with_a_baseline_fails_with_junit_and_a_command_that_shows_both(
    never: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The command line: exit 1, a FAIL line per incomplete case whose command runs the policy and the baseline
    on it (and shows one correct and incomplete, the other completing it), a JUnit failure of type incomplete,
    and the summary line saying what a pass now means."""
    junit = tmp_path / "junit.xml"
    args = ["check", "--policy", "tests_never:POLICY", "--scenario", "request_lost", "--seed-count", "1"]
    assert (
        main([*args, "--baseline", "reconcile_and_reauthorize", "--junit", str(junit), "--out", str(tmp_path / "o")])
        == 1
    )
    out = capsys.readouterr().out
    [fail] = [line for line in out.splitlines() if line.startswith("FAIL ")]
    assert fail.startswith("FAIL never_retries x request_lost seed 1: incomplete: correct, but the task was left")
    command = fail.partition("; reproduce: ")[2]
    assert command == (
        f"PYTHONPATH={shlex.quote(str(never))} python -m harness run --policy tests_never:POLICY --policy "
        "reconcile_and_reauthorize --scenario request_lost --seed 1"
    )
    assert "1 of 1 cases correct or escalated" not in out
    assert "0 of 1 cases correct or escalated and complete where the baseline completes; not: incomplete 1" in out
    [failure] = ET.parse(junit).getroot().iter("failure")
    assert failure.get("type") == "incomplete"
    ran = subprocess.run(
        [
            "bash",
            "-c",
            command.replace("python -m", f"{shlex.quote(sys.executable)} -m", 1)
            + f" --out {tmp_path / 'r'} --tracking none --quiet",
        ],
        cwd=SCENARIO_DIR.parent,
        capture_output=True,
        text=True,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr
    both = {(r.policy, r.metrics["task_completed"]) for r in read_reports(tmp_path / "r").values()}
    assert both == {("never_retries", False), ("reconcile_and_reauthorize", True)}


def test_a_policy_as_good_as_its_baseline_passes_and_a_bad_baseline_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["check", "--policy", "reconcile_and_reauthorize", "--scenario", "request_lost", "--seed-count", "1"]
    assert main([*args, "--baseline", "retry_same_key"]) == 0
    out = capsys.readouterr().out
    assert "1 of 1 cases correct or escalated and complete where the baseline completes" in out
    assert main([*args, "--baseline", "retry_sam_key", "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("harness: --baseline: unknown policy 'retry_sam_key'") and not (tmp_path / "x").exists()


KEEPS_ESCALATING = '''
from harness.policy import Escalate


class KeepsEscalating:
    """Escalates, and escalates again at every command after (never stops): safe, and a pager's nightmare."""

    name, revision = "keeps_escalating", "test"

    def decide(self, situation):
        return Escalate(reason="outcome unknown")


POLICY = KeepsEscalating()
'''


def test_an_action_escalated_again_and_again_is_noted_not_failed(policy_module: Callable[..., Path]) -> None:
    """An action handed to its owner stays handed over: a policy that escalates it again at every command passes
    (each escalation stands), and the check says in how many cases and how many times at most. The correct policy
    escalates an action once, and no such note is made."""
    policy_module("tests_escalating", KEEPS_ESCALATING)
    options = CheckOptions(scenarios=("uncertain_lookup", "lost_response"), seeds=(1,))
    summary = check_policy("tests_escalating:POLICY", options)
    [note] = [n for n in summary.notes if "more than once" in n]
    assert summary.ok and note.startswith(
        "note: keeps_escalating escalated one action more than once in 2 of 2 cases (not a failure: each "
        "escalation stands), "
    )
    most = int(note.split("), ")[1].split(" times")[0])
    assert most > 1 and note.endswith("; once handed over, an action is its owner's")
    safe = check_policy("reconcile_and_reauthorize", options)
    assert not any("more than once" in n for n in safe.notes)


# --- The same gate from pytest and from a user's own test ---------------------------------------------------------

#: pytest run in this process, without the plugins these runs do not need.
QUIET = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-p", "no:xdist", "-p", "no:anyio")
SAFE = "reconcile_and_reauthorize"


@pytest.fixture
def in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """The cases run here, one after another, instead of in worker processes."""
    from test_grid_mutants import Supervised

    import harness.run.pool as pool

    monkeypatch.setattr(pool, "supervise", Supervised())


def _left_undone(policy: str, baseline: str, scenarios: tuple[str, ...], seeds: tuple[int, ...]) -> list[str]:
    """The cases (``<scenario> seed <n>``) the policy passes yet leaves incomplete where the baseline completes the
    task, from running each on each case here: what every form of the gate must fail, and nothing else."""
    from harness.model import PASSING
    from harness.run import load_grid, run_case

    def runs(spec: str) -> dict[tuple[str, int], Any]:
        return {(c.scenario.name, c.seed): run_case(c)[0] for c in load_grid([spec], list(scenarios), seeds).cases}

    mine, theirs = runs(policy), runs(baseline)
    return [
        f"{scenario} seed {seed}"
        for (scenario, seed), report in mine.items()
        if report.outcome in PASSING
        and report.metrics["task_completed"] is False
        and theirs[(scenario, seed)].metrics["task_completed"] is True
    ]


def test_the_pytest_plugin_fails_the_items_left_incomplete_where_the_baseline_completes(
    never: Path, pytester: pytest.Pytester, in_process: None
) -> None:
    """``--harness-baseline``: an item that passes yet whose task the baseline completes fails with check's words;
    the others pass; the session ends with the completed tasks of each counted. Without it every item passes."""
    scenarios = ("lost_response", "request_lost")
    args = [*QUIET, "--harness-policy", "tests_never:POLICY", "--harness-seed-count", "1"]
    for s in scenarios:
        args += ["--harness-scenario", s]
    pytester.inline_run(*args).assertoutcome(passed=2)
    undone = _left_undone("tests_never:POLICY", SAFE, scenarios, (1,))
    assert undone == ["request_lost seed 1"]
    recorder = pytester.inline_run(*args, "--harness-baseline", SAFE)
    reports = [r for r in recorder.getreports("pytest_runtest_logreport") if r.when == "call"]
    failed = [r.nodeid for r in reports if r.failed]
    assert failed == ["never_retries::request_lost[seed-1]"] and len(reports) == 2
    [text] = [r.longreprtext for r in reports if r.failed]
    assert text.startswith(
        "incomplete: correct, but the task was left incomplete where reconcile_and_reauthorize completed it\n"
    )
    assert "the baseline, on the same case: correct, task_completed true" in text
    assert text.endswith(
        f"reproduce: PYTHONPATH={shlex.quote(str(never))} python -m harness run --policy tests_never:POLICY "
        f"--policy {SAFE} --scenario request_lost --seed 1"
    )
    result = pytester.runpytest_inprocess(*args, "--harness-baseline", SAFE)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [f"note: the task ended completed in 1 of 2 cases, 2 of 2 with the baseline {SAFE} (never_retries)"]
    )


def test_the_pytest_plugin_refuses_a_baseline_it_cannot_tell_apart(
    never: Path, policy_module: Callable[..., Path], pytester: pytest.Pytester
) -> None:
    """An unknown baseline is refused as check refuses it, and so is one named as a gated policy is (their cases
    would be taken for one policy's)."""
    policy_module("tests_namesake", NEVER_RETRIES.replace('"never_retries"', f'"{SAFE}"'))
    args = [*QUIET, "--harness-policy", "tests_never:POLICY", "--harness-scenario", "request_lost"]
    with pytest.raises(pytest.UsageError, match=r"^harness: --harness-baseline: unknown policy 'retry_sam_key'"):
        pytester.parseconfigure(*args, "--harness-baseline", "retry_sam_key")
    namesake = [*QUIET, "--harness-policy", "tests_namesake:POLICY", "--harness-scenario", "request_lost"]
    with pytest.raises(pytest.UsageError) as refused:
        pytester.parseconfigure(*namesake, "--harness-baseline", SAFE)
    assert str(refused.value) == (
        f"harness: --harness-baseline {SAFE}: its name '{SAFE}' is that of --harness-policy tests_namesake:POLICY, "
        "and the cases of both would be taken for one policy's; fix: give one of them another name"
    )
    pytester.parseconfigure(*[*QUIET, "--harness-policy", SAFE], "--harness-baseline", SAFE)  # itself: the same


def test_assert_recovers_with_a_baseline_fails_the_cases_left_incomplete(never: Path, tmp_path: Path) -> None:
    from harness.errors import InputError
    from harness.gate.cases import PolicyDoesNotRecover
    from harness.gate.runner import assert_recovers

    scenarios = ("lost_response", "request_lost")
    alone = assert_recovers("tests_never:POLICY", scenarios, seeds=[1, 2], out=tmp_path)
    assert all(v.passed for v in alone) and len(alone) == 4
    with pytest.raises(PolicyDoesNotRecover) as failed:
        assert_recovers("tests_never:POLICY", scenarios, seeds=[1, 2], out=tmp_path, baseline=SAFE)
    undone = _left_undone("tests_never:POLICY", SAFE, scenarios, (1, 2))
    assert [f.name for f in failed.value.failures] == undone and len(undone) == 2
    assert {f.outcome for f in failed.value.failures} == {"incomplete"} and failed.value.total == 4
    assert str(failed.value).startswith("never_retries does not recover in 2 of 4 cases")
    assert len(assert_recovers(SAFE, scenarios, seeds=[1, 2], baseline="retry_same_key")) == 4
    with pytest.raises(InputError, match=r"^assert_recovers: argument 'baseline': unknown policy 'retry_sam_key'"):
        assert_recovers(SAFE, scenarios, seeds=[1], baseline="retry_sam_key")


def test_a_baseline_that_is_itself_unsafe_is_said_to_be(tmp_path: Path, in_process: None) -> None:
    """The baseline's safety is not gated, but a comparison with one that is not correct or escalated in some
    cases says how many, and the first."""
    options = CheckOptions(scenarios=("lost_response", "request_lost"), seeds=(1, 2), out=tmp_path / "c",
                           baseline="retry_new_key")  # fmt: skip
    summary = check_policy(SAFE, options)
    theirs = read_reports(tmp_path / "c" / "baseline")
    unsafe = sorted((s, n, r.outcome) for (_, s, n), r in theirs.items() if r.outcome not in ("correct", "escalated"))
    assert unsafe, "retry_new_key applies lost_response's effect twice"
    scenario, seed, outcome = unsafe[0]
    [note] = [n for n in summary.notes if "with the baseline" in n]
    assert (
        f"(the baseline itself is not correct or escalated in {len(unsafe)} of them, {scenario} seed {seed} first: "
        f"{outcome}); its cases are in {tmp_path / 'c' / 'baseline'}"
    ) in note
    safe = check_policy(SAFE, replace_baseline(options, tmp_path / "d", SAFE))
    assert not any("baseline itself" in n for n in safe.notes)


def replace_baseline(options: CheckOptions, out: Path, baseline: str) -> CheckOptions:
    from dataclasses import replace

    return replace(options, out=out, baseline=baseline)


def test_a_task_the_baseline_completed_unsafely_fails_no_case(tmp_path: Path, in_process: None) -> None:
    """retry_same_key completes retry_delayed_past_window's task by applying m7 twice (incorrect), where the safe
    policy escalates: the safe case passes, and the note says the baseline was not safe there."""
    options = CheckOptions(scenarios=("retry_delayed_past_window",), seeds=(1,), out=tmp_path / "c",
                           baseline="retry_same_key")  # fmt: skip
    summary = check_policy(SAFE, options)
    [theirs] = read_reports(tmp_path / "c" / "baseline").values()
    [mine] = read_reports(tmp_path / "c").values()
    assert theirs.outcome == "incorrect" and theirs.metrics["task_completed"] is True
    assert mine.outcome == "escalated" and mine.metrics["task_completed"] is False
    assert summary.ok, [c.message for c in summary.failures]
    [note] = [n for n in summary.notes if "with the baseline" in n]
    assert "(the baseline itself is not correct or escalated in 1 of them, retry_delayed_past_window seed 1 first: " \
        "incorrect)" in note  # fmt: skip


def test_an_incomplete_cases_command_finds_a_policy_and_a_baseline_from_two_folders(
    never: Path, policy_module: Callable[..., Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The policy and its baseline imported from two folders, neither the current one: the command names both on
    one ``PYTHONPATH`` (the shell keeps one assignment of a variable: two lost the first), and runs from a third
    folder."""
    reference = (
        "from policies.reconcile_and_reauthorize import ReconcileAndReauthorize\n\n\n"
        "class Reference(ReconcileAndReauthorize):\n    name = 'reference'\n\n\nPOLICY = Reference()\n"
    )
    theirs = policy_module("tests_reference", reference, folder="theirs")
    args = ["check", "--policy", "tests_never:POLICY", "--scenario", "request_lost", "--seed-count", "1"]
    assert main([*args, "--baseline", "tests_reference:POLICY", "--out", str(tmp_path / "o")]) == 1
    [fail] = [line for line in capsys.readouterr().out.splitlines() if line.startswith("FAIL ")]
    command = fail.partition("; reproduce: ")[2]
    assert command.startswith(f"PYTHONPATH={shlex.quote(f'{never}:{theirs}')} python -m harness run ")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    ran = subprocess.run(
        ["bash", "-c", command.replace("python -m", f"{shlex.quote(sys.executable)} -m", 1)
         + f" --out {tmp_path / 'r'} --tracking none --quiet"],
        cwd=elsewhere, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    both = {(r.policy, r.metrics["task_completed"]) for r in read_reports(tmp_path / "r").values()}
    assert both == {("never_retries", False), ("reference", True)}


def test_an_incomplete_cases_command_names_a_scenario_file_by_its_whole_path(
    never: Path, tmp_path: Path, pytester: pytest.Pytester, in_process: None
) -> None:
    """A scenario given as a file: the command that runs the policy and the baseline on it names the file by its
    absolute path, from check, from assert_recovers and from the plugin alike (it named the scenario, which no
    folder but the shipped one resolves)."""
    from harness.gate.cases import PolicyDoesNotRecover
    from harness.gate.runner import assert_recovers

    mine = tmp_path / "files" / "lost_on_the_way.yaml"
    mine.parent.mkdir()
    mine.write_text(
        (SCENARIO_DIR / "request_lost.yaml").read_text().replace("name: request_lost", "name: lost_on_the_way")
    )
    expected = f"--scenario {mine} --seed 1"
    options = CheckOptions(scenarios=(str(mine),), seeds=(1,), out=tmp_path / "c", baseline=SAFE)
    [failed] = check_policy("tests_never:POLICY", options).failures
    assert failed.reproduce is not None and failed.reproduce.endswith(expected)
    with pytest.raises(PolicyDoesNotRecover) as raised:
        assert_recovers("tests_never:POLICY", [str(mine)], seeds=[1], baseline=SAFE)
    assert raised.value.failures[0].reproduce.endswith(expected)  # type: ignore[union-attr]
    result = pytester.runpytest_inprocess(*QUIET, "--harness-policy", "tests_never:POLICY", f"--harness-scenario={mine}",
                                          "--harness-seed-count", "1", "--harness-baseline", SAFE)  # fmt: skip
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"*{expected}"])


def test_check_and_assert_recovers_refuse_a_baseline_named_as_the_policy(
    policy_module: Callable[..., Path], tmp_path: Path
) -> None:
    """A fork that kept the shipped name, gated against the shipped policy: refused before anything runs, as the
    plugin refuses it (their cases would be taken for one policy's, and the command running both is refused)."""
    from harness.errors import InputError
    from harness.gate.runner import assert_recovers

    policy_module("tests_fork", NEVER_RETRIES.replace('"never_retries"', f'"{SAFE}"'))
    options = CheckOptions(scenarios=("request_lost",), seeds=(1,), out=tmp_path / "c", baseline=SAFE)
    with pytest.raises(InputError) as refused:
        check_policy("tests_fork:POLICY", options)
    assert str(refused.value) == (
        f"--baseline {SAFE}: its name '{SAFE}' is that of --policy tests_fork:POLICY, and the cases of both would "
        "be taken for one policy's; fix: give one of them another name"
    )
    assert not (tmp_path / "c").exists()
    with pytest.raises(InputError, match=r"^assert_recovers: argument 'baseline' reconcile_and_reauthorize: its"):
        assert_recovers("tests_fork:POLICY", ["request_lost"], seeds=[1], baseline=SAFE)
    assert check_policy(SAFE, CheckOptions(scenarios=("request_lost",), seeds=(1,), baseline=SAFE)).ok  # itself


def test_the_plugins_coverage_notes_are_the_gated_policys_own_with_a_baseline(
    pytester: pytest.Pytester, in_process: None
) -> None:
    """A declared fault the gated policy never reaches is noted whether or not a baseline ran beside it and reached
    it (the baseline's cases ran in the policy's run, and its firing hid the note; a mutation pass found it):
    stop_on_timeout never sends connector_no_record_yet's second request, retry_same_key does."""
    args = [*QUIET, "--harness-policy", "stop_on_timeout", "--harness-scenario", "connector_no_record_yet",
            "--harness-seed-count", "1"]  # fmt: skip
    note = "note: scenario connector_no_record_yet declares fault request_delayed nth=2 delay_s=20.0, which fired in no"
    alone = pytester.runpytest_inprocess(*args)
    alone.stdout.fnmatch_lines([f"{note} case of stop_on_timeout*"])
    beside = pytester.runpytest_inprocess(*args, "--harness-baseline", "retry_same_key")
    beside.stdout.fnmatch_lines([f"{note} case of stop_on_timeout*", "note: the task ended completed in *"])
