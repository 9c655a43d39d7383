"""Tests for the lines the forty-seventh mutation pass (tests/MUTANTS.md) found unpinned in 9de71b1..d7eef2f:
false_records under a hidden ledger (what each unsettled or contradicted write is called, and the witnessed
anomalies kept beside a null count), ``check --baseline`` (``check_policy``'s refusal of a bad baseline,
``_against_baseline``'s rule and note, ``_incomplete``'s failure, the command line's summary and note) and
``_escalated_again``'s note. Everything runs in this process: the grid's worker processes are replaced by
test_grid_mutants' in-process stand-in (a worker process would run the harness unmutated, and mutmut cannot run
tests that start one). Each expectation is derived from the rule the code states."""

from __future__ import annotations

import json
import shlex
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import OPENING, dispatch, history, recorded
from test_baseline import KEEPS_ESCALATING as THE_KEEPS_ESCALATING
from test_baseline import NEVER_RETRIES as THE_NEVER_RETRIES
from test_check_mutants import reply, run
from test_grid_mutants import Supervised  # the in-process stand-in for the worker processes

import harness.run.pool as pool
from harness import cli
from harness.check.finding import HIDDEN
from harness.gate.cases import GateCase
from harness.gate.runner import Brief, CheckOptions, _against_baseline, _escalated_again, check_policy
from harness.model import CaseReport
from harness.model.report import Entry
from harness.policy import load_policy
from harness.run import UsageError, load_grid, run_case
from harness.run.files import read_reports

NEVER_RETRIES = THE_NEVER_RETRIES.replace('name = "never_retries"', 'name = "never_retries_late"')

KEEPS_ESCALATING = THE_KEEPS_ESCALATING.replace('"keeps_escalating"', '"keeps_escalating_late"')

#: request_lost: a same-key retry completes the task (the correct policy completes it, the never-retrying one
#: records an absence and passes); lost_response: a lookup records the effect, no retry needed.
SCENARIOS = ("request_lost", "lost_response")


@pytest.fixture(autouse=True)
def supervised(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Supervised:
    """Every worker process runs here instead; the current folder and the temporary folders are the test's own
    (the commands a check prints name the folder a user's policy was imported from unless it is the current one)."""
    fake = Supervised()
    monkeypatch.setattr(pool, "supervise", fake)
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return fake


@pytest.fixture
def modules(policy_module: Callable[..., Path]) -> Path:
    """A folder holding the never-retrying and the ever-escalating policies' modules, on sys.path for the test."""
    policy_module("late_never", NEVER_RETRIES)
    return policy_module("late_escalating", KEEPS_ESCALATING)


# -- false_records under a hidden ledger: what is named, what is kept ------------------------------------------------


ABSENT = "15 controller absence_recorded action_id=a73 reason=x version=1"
REJECTED = recorded(15, "r1", event="rejection_recorded")


@pytest.mark.parametrize(("write", "status"), [(REJECTED, "rejected"), (ABSENT, "absent")])
def test_a_write_the_dispatch_replies_contradict_says_what_was_recorded(write: str, status: str) -> None:
    """A rejection or an absence recorded for an action one of whose dispatches was answered applied is a
    false record naming what was recorded and the receipt, witnessed by the write and that reply; with no such
    reply it is unsettled, and the reason names what was recorded."""
    lines = [dispatch(0.0, 1), reply(0.5, 1, "applied", "r1"), write]
    found = run("false_records", history(OPENING + "\n".join(lines), visible=False))
    assert found.value == 1
    [anomaly] = found.anomalies
    assert (anomaly.kind, anomaly.witnesses) == ("false_record", (6, 5))
    assert anomaly.detail == f"a73 recorded {status}, but a dispatch of it was answered applied (r1)"
    unsettled = run("false_records", history(OPENING + "\n".join([dispatch(0.0, 1), write]), visible=False))
    assert (unsettled.value, unsettled.anomalies) == (None, ())
    assert unsettled.reason == f"{HIDDEN}, and no dispatch's reply settles a73 recorded {status}"


def test_a_null_count_keeps_the_false_records_the_replies_witness() -> None:
    """An absence the replies contradict beside a receipt no reply settles (a second dispatch was never
    answered): the count is null (it would be a lower bound), and the witnessed false record is kept with it, the
    reason naming the unsettled write."""
    lines = [dispatch(0.0, 1), reply(0.5, 1, "applied", "r1"), dispatch(10.0, 2), ABSENT, recorded(16, "r9")]
    found = run("false_records", history(OPENING + "\n".join(lines), visible=False))
    assert found.value is None
    assert [(a.kind, a.witnesses) for a in found.anomalies] == [("false_record", (7, 5))]
    assert found.reason == f"{HIDDEN}, and no dispatch's reply settles a73's receipt r9"


# -- _escalated_again: the note of an action escalated more than once -----------------------------------------------


_BASE: list[CaseReport] = []


def _base() -> CaseReport:
    """A real report (the correct policy on lost_response at seed 1, run here once), to copy with other fields."""
    if not _BASE:
        (case,) = load_grid(["reconcile_and_reauthorize"], ["lost_response"], [1]).cases
        _BASE.append(run_case(case)[0])
    return _BASE[0]


def _escalations(*actions: str) -> tuple[Entry, ...]:
    """A timeline: each action's escalation, in order, and a claim of a73 between each two (an entry that names
    the action and is no escalation)."""
    entries: list[Entry] = []
    for action in actions:
        data: dict[str, str | int | float | bool | None] = {"action_id": action, "owner": "o", "reason": "r"}
        entries.append(Entry(index=len(entries), at_s=1.0, actor="controller", event="escalated", data=data))
        claim = {"action_id": "a73", "revision": 17, "ok": False, "reason": "x"}
        entries.append(Entry(index=len(entries), at_s=1.0, actor="controller", event="claim", data=claim))
    return tuple(entries)


def _report(scenario: str, seed: int, *escalated: str) -> tuple[tuple[str, str, int], Brief]:
    report = _base().model_copy(
        update={"policy": "pager", "scenario": scenario, "seed": seed, "timeline": _escalations(*escalated)}
    )
    return ("pager", scenario, seed), Brief.of(report)


def test_the_note_counts_the_cases_an_action_was_escalated_in_more_than_once_and_names_the_worst() -> None:
    """Escalations are counted per action (two actions escalated once each are no repetition, and no other entry
    counts); a case is noted when one action was escalated more than once (twice is enough). The worst case is
    the one with the most escalations of one action, the lowest seed among equals."""
    reports = dict(
        [
            _report("s", 2, "a73", "a73", "a73"),
            _report("s", 1, "a73", "b9", "a73", "a73"),
            _report("t", 4, "a73", "b9"),
            _report("t", 3, "a73", "a73"),
            _report("u", 5),
        ]
    )
    assert _escalated_again(reports) == (
        "note: pager escalated one action more than once in 3 of 5 cases (not a failure: each escalation stands), "
        "3 times at most (s seed 1); once handed over, an action is its owner's"
    )
    assert _escalated_again(dict([_report("t", 4, "a73", "b9"), _report("u", 5)])) is None


def test_a_check_notes_a_policy_that_escalates_again_and_not_one_that_does_not(modules: Path) -> None:
    """check_policy adds the note to the summary's notes (the correct policy escalates an action once, and gets
    none)."""
    options = CheckOptions(scenarios=("uncertain_lookup",), seeds=(1,))
    summary = check_policy("late_escalating:POLICY", options)
    reports_note = [n for n in summary.notes if "more than once" in n]
    assert summary.ok and len(reports_note) == 1
    assert reports_note[0].startswith("note: keeps_escalating_late escalated one action more than once in 1 of 1 ")
    assert all(isinstance(n, str) for n in summary.notes)
    safe = check_policy("reconcile_and_reauthorize", options)
    assert not any("more than once" in n for n in safe.notes) and None not in safe.notes


# -- check --baseline: the refusal, the rule, the failure, the note -------------------------------------------------


def test_a_bad_baseline_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    options = CheckOptions(scenarios=SCENARIOS, seeds=(1,), out=tmp_path / "x", baseline="retry_sam_key")
    with pytest.raises(UsageError) as refused:
        check_policy("reconcile_and_reauthorize", options)
    assert str(refused.value).startswith("--baseline: unknown policy 'retry_sam_key'")
    assert not (tmp_path / "x").exists()


def test_check_against_a_baseline_fails_what_the_baseline_completes_and_the_policy_leaves_undone(
    modules: Path, tmp_path: Path, supervised: Supervised
) -> None:
    """The baseline runs on the same scenarios and seeds, in the same processes and budget, into the check's
    folder's ``baseline`` (no tracking, no report page); each case the policy passed with the task left
    incomplete where the baseline completed it fails as ``incomplete``, its text saying both outcomes and its
    command running both on the case (with the folder the policy was imported from on PYTHONPATH); the note counts
    the completed tasks of each and says where the baseline's cases are."""
    out = tmp_path / "b"
    options = CheckOptions(
        scenarios=SCENARIOS, seeds=(1, 2), out=out, baseline="reconcile_and_reauthorize", concurrency=2,
        case_timeout_s=7.0,
    )  # fmt: skip
    started = time.perf_counter()
    summary = check_policy("late_never:POLICY", options)
    took = time.perf_counter() - started
    assert 0 <= summary.elapsed_s <= took + 0.001
    mine, theirs = read_reports(out), read_reports(out / "baseline")
    assert sorted(theirs) == sorted(("reconcile_and_reauthorize", s, seed) for s in SCENARIOS for seed in (1, 2))
    assert len(supervised.calls) == 2 and supervised.calls[0] == supervised.calls[1]
    assert supervised.calls[1][1:] == (2, 7.0)
    manifest = json.loads((out / "baseline" / "manifest.json").read_text())
    assert {k: manifest["options"][k] for k in ("tracking", "report", "case_timeout_s")} == {
        "tracking": "none",
        "report": False,
        "case_timeout_s": 7.0,
    }
    undone = {
        (scenario, seed)
        for (_, scenario, seed), report in mine.items()
        if report.metrics["task_completed"] is False
        and theirs[("reconcile_and_reauthorize", scenario, seed)].metrics["task_completed"] is True
    }
    assert undone == {("request_lost", 1), ("request_lost", 2)}
    for case in summary.cases:
        if (case.name.split(" seed ")[0], int(case.name.split(" seed ")[1])) not in undone:
            assert (case.outcome, case.status) == ("correct", "passed")
            continue
        report = mine[("never_retries_late", "request_lost", int(case.name[-1]))]
        reference = theirs[("reconcile_and_reauthorize", "request_lost", report.seed)]
        command = (
            f"PYTHONPATH={shlex.quote(str(modules))} python -m harness run --policy late_never:POLICY --policy "
            f"reconcile_and_reauthorize --scenario request_lost --seed {report.seed}"
        )
        assert (case.policy, case.outcome, case.status, case.reproduce) == (
            "never_retries_late",
            "incomplete",
            "failed",
            command,
        )
        assert case.message == (
            "incomplete: correct, but the task was left incomplete where reconcile_and_reauthorize completed it"
        )
        assert case.text == (
            f"never_retries_late (revision {report.policy_revision}) on request_lost (revision "
            f"{report.scenario_revision}) at seed {report.seed}: correct, task_completed false\n"
            f"reconcile_and_reauthorize (revision {reference.policy_revision}), the baseline, on the same case: "
            f"correct, task_completed true\n"
            f"reproduce: {command}"
        )
    completed = sum(r.metrics["task_completed"] is True for r in mine.values())
    assert completed == 2
    said = (
        f"note: the task ended completed in 2 of 4 cases, 4 of 4 with the baseline reconcile_and_reauthorize; its "
        f"cases are in {out / 'baseline'}"
    )
    assert said in summary.notes and all(isinstance(n, str) for n in summary.notes)


def test_without_out_the_note_does_not_name_the_baseline_folder(modules: Path) -> None:
    summary = check_policy(
        "late_never:POLICY", CheckOptions(scenarios=("request_lost",), seeds=(1,), baseline="reconcile_and_reauthorize")
    )
    assert "note: the task ended completed in 0 of 1 cases, 1 of 1 with the baseline reconcile_and_reauthorize" in (
        summary.notes
    )


def _gate(name: str, passed: bool = True) -> GateCase:
    return GateCase("mine", name, "correct" if passed else "incorrect", "passed" if passed else "failed")


def test_only_a_passing_case_left_incomplete_where_the_baseline_completed_it_fails(tmp_path: Path) -> None:
    """The rule, case by case (hand-made outcomes of the policy, the baseline run): a passing case whose task is
    false fails; one whose task is unknown (null) or true, one that failed already, one with no report, and one the
    baseline did not run (another seed) stand as they were. Against a baseline that completes nothing, nothing
    fails. The note counts the completed tasks of the policy's reports and of the baseline's, and names the
    baseline by its policy's name."""

    def mine(seed: int, completed: bool | None) -> tuple[tuple[str, str, int], Brief]:
        metrics = {**_base().metrics, "task_completed": completed}
        report = _base().model_copy(update={"scenario": "request_lost", "seed": seed, "metrics": metrics})
        return ("mine", "request_lost", seed), Brief.of(report)

    reports = dict([mine(1, False), mine(2, None), mine(3, True), mine(4, False), mine(6, False)])
    cases = (_gate("request_lost seed 1"), _gate("request_lost seed 2"), _gate("request_lost seed 3"),
             _gate("request_lost seed 4", passed=False), _gate("request_lost seed 5"), _gate("request_lost seed 6"))  # fmt: skip
    options = CheckOptions(scenarios=("request_lost",), seeds=(1, 2, 3, 4, 5), out=tmp_path)
    spec = "policies.reconcile_and_reauthorize:POLICY"
    run = load_grid(["reconcile_and_reauthorize"], ["request_lost"], range(1, 7)).cases  # the cases' own scenarios
    judged, said = _against_baseline("mine_spec", spec, cases, reports, ["request_lost"], run, tmp_path, options)
    assert [(c.name, c.outcome) for c in judged] == [
        ("request_lost seed 1", "incomplete"),
        *[(c.name, c.outcome) for c in cases[1:]],
    ]
    assert judged[1:] == cases[1:]
    assert said == (
        f"note: the task ended completed in 1 of 5 cases, 5 of 5 with the baseline reconcile_and_reauthorize; its "
        f"cases are in {tmp_path / 'baseline'}"
    )
    again, said = _against_baseline(
        "mine_spec", "stop_on_timeout", cases, reports, ["request_lost"], run, tmp_path / "other", options
    )
    assert again == cases
    assert said.startswith("note: the task ended completed in 1 of 5 cases, 0 of 5 with the baseline stop_on_timeout")


# -- the command line: what a pass means, and the baseline's note ---------------------------------------------------


def test_check_says_a_pass_is_complete_where_the_baseline_completes_and_prints_its_note(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = ["check", "--policy", "reconcile_and_reauthorize", "--scenario", "request_lost", "--seed-count", "1"]
    revision = load_policy("reconcile_and_reauthorize").revision
    assert cli.main([*args, "--baseline", "retry_same_key"]) == 0
    said = capsys.readouterr()
    assert said.out == (
        f"reconcile_and_reauthorize (revision {revision}): 1 of 1 cases correct or escalated and complete where the "
        "baseline "
        "completes\ncheck: passed\n"
    )
    assert said.err == "note: the task ended completed in 1 of 1 cases, 1 of 1 with the baseline retry_same_key\n"
    assert cli.main(args) == 0
    said = capsys.readouterr()
    assert (said.out, said.err) == (f"reconcile_and_reauthorize (revision {revision}): 1 of 1 cases correct or escalated\n"
                                    "check: passed\n", "")  # fmt: skip
