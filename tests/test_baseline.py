"""``harness check --baseline``: safe is not done. A policy that records every final absence and never retries passes
every safety property; with a baseline, each case it passes yet leaves the task incomplete where the baseline
completes it fails as ``incomplete``, with the command that runs both on it (an adversarial review's variant
passed ``check`` with the task done in 37 cases of 84 against the correct policy's 47)."""

from __future__ import annotations

import shlex
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import SCENARIO_DIR

from harness.cli import main
from harness.gate.runner import CheckOptions, check_policy
from harness.run.files import read_reports

#: request_lost: the request never arrived, a same-key retry completes the task; lost_response: the effect is
#: there, and a lookup records it (no retry needed).
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
def never(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder holding the never-retrying policy's module, on sys.path for the test (and gone from sys.modules
    after it)."""
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "tests_never.py").write_text(NEVER_RETRIES)
    monkeypatch.syspath_prepend(str(folder))
    yield folder
    sys.modules.pop("tests_never", None)


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


def test_an_action_escalated_again_and_again_is_noted_not_failed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An action handed to its owner stays handed over: a policy that escalates it again at every command passes
    (each escalation stands), and the check says in how many cases and how many times at most. The correct policy
    escalates an action once, and no such note is made."""
    (tmp_path / "tests_escalating.py").write_text(KEEPS_ESCALATING)
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        options = CheckOptions(scenarios=("uncertain_lookup", "lost_response"), seeds=(1,))
        summary = check_policy("tests_escalating:POLICY", options)
    finally:
        sys.modules.pop("tests_escalating", None)
    [note] = [n for n in summary.notes if "more than once" in n]
    assert summary.ok and note.startswith(
        "note: keeps_escalating escalated one action more than once in 2 of 2 cases (not a failure: each "
        "escalation stands), "
    )
    most = int(note.split("), ")[1].split(" times")[0])
    assert most > 1 and note.endswith("; once handed over, an action is its owner's")
    safe = check_policy("reconcile_and_reauthorize", options)
    assert not any("more than once" in n for n in safe.notes)
