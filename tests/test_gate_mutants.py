"""The CI gate in process: what the thirty-second mutation pass found no test holding (tests/MUTANTS.md).

``harness check``, ``assert_recovers`` and the pytest plugin decide pass or fail per case, write JUnit XML and
repro files. These tests call harness.gate's pieces directly (cases run by ``run_case``, explorations by
``explore(..., isolate=False)``) and check what they give whole: the verdict, the message, the text, the XML and
the file, character for character.
"""

from __future__ import annotations

import os
import sys
import types
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from harness.errors import InputError
from harness.explore import ExploreOptions, explore
from harness.explore.search import Finding
from harness.gate.cases import (
    POLICY_ERROR_SHOWN,
    GateCase,
    PolicyDoesNotRecover,
    case_name,
    failure_text,
    judge,
    judge_finding,
    message_of,
    status_of,
)
from harness.gate.junit import Suite, _clean, _counts, _is_junit, check_junit_path, junit_xml, write_junit
from harness.gate.repro import ReproFolder, case_timeout, replay_command, repro_path, repro_yaml, violated
from harness.gate.runner import (
    CheckSummary,
    _again,
    _checked_out,
    _checked_seeds,
    _shown,
    _spec_of,
    coverage_notes,
    grid_suites,
    judge_exploration,
    judge_reports,
)
from harness.limits import CASE_TIMEOUT_MAX_S
from harness.model import CaseReport
from harness.model.report import Entry
from harness.policy import load_policy
from harness.run import UsageError, load_grid, run_case
from harness.run.cell import FaultCoverage
from harness.run.plan import Case
from harness.seeds import SEED_MAX
from harness.version import __version__


@pytest.fixture(autouse=True)
def no_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    """The gate replays a repro file in this process: a replay in a supervised worker fails the test."""
    import harness.run.replay

    def supervise(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the gate replayed a case in a worker process")

    monkeypatch.setattr(harness.run.replay, "supervise", supervise)


# --- shared cases --------------------------------------------------------------------------------------------------

_RUN: dict[tuple[str, str, int], tuple[Case, CaseReport]] = {}


def ran(policy: str = "retry_new_key", scenario: str = "lost_response", seed: int = 1) -> tuple[Case, CaseReport]:
    """The case and its report (run once per test session, in this process)."""
    key = (policy, scenario, seed)
    if key not in _RUN:
        (case,) = load_grid([policy], [scenario], [seed]).cases
        _RUN[key] = (case, run_case(case)[0])
    return _RUN[key]


#: retry_new_key x lost_response seed 1, as its failure text shows it (the anomalies and their entries).
ANOMALIES = (
    "anomaly duplicate_effect: a73 took effect 2 times (receipts r1, r2) (entries 9, 18)\n"
    "anomaly new_key_while_unknown: a73-x2 sent under a new key a73.k1 while the outcome of a73 was unknown "
    "(entries 15)"
)
ENTRIES = (
    "timeline entries (* witnesses an anomaly, ! an injected fault):\n"
    "*    9      0.558s  destination applied              receipt_id=r1 idempotency_key=a73 execution_id=a73-x1 "
    "operation=activate_model target=staging/fraud model=m7 digest=sha256:d7d7d7\n"
    "!   10      0.558s  injector    fault                boundary=response_lost action_id=a73 occurrence=1\n"
    "*   15     15.000s  transport   send                 kind=dispatch n=2 action_id=a73 execution_id=a73-x2 "
    "idempotency_key=a73.k1 operation=activate_model target=staging/fraud model=m7 digest=sha256:d7d7d7\n"
    "*   18     15.566s  destination applied              receipt_id=r2 idempotency_key=a73.k1 execution_id=a73-x2 "
    "operation=activate_model target=staging/fraud model=m7 digest=sha256:d7d7d7"
)
HEAD = "retry_new_key (revision 1) on lost_response (revision 1) at seed 1: incorrect, verdict false"
RUN_IT = "python -m harness run --policy retry_new_key --scenario lost_response --seed 1"


def with_policy_error(report: CaseReport, error: str, at: int = 5) -> CaseReport:
    """``report`` with a policy_error entry added to its timeline (its first error is ``error``)."""
    entry = Entry(index=900 + at, at_s=1.0, actor="worker", event="policy_error", data={"error": error})
    return report.model_copy(update={"timeline": (*report.timeline, entry)})


def checks(report: CaseReport, **verdicts: str) -> CaseReport:
    """``report`` with every check ``true`` but those given."""
    return report.model_copy(update={"checks": {name: verdicts.get(name, "true") for name in report.checks}})


# --- cases.py: status, names, the exception ------------------------------------------------------------------------


def test_each_outcome_has_its_status() -> None:
    assert [status_of(o) for o in ("correct", "escalated", "unresolved", "abandoned", "incorrect")] == [
        "passed",
        "passed",
        "failed",
        "failed",
        "failed",
    ]
    assert status_of("harness_error") == "error"
    assert status_of("something_else") == "failed"
    assert case_name("lost_response", 7) == "lost_response seed 7"


def test_a_gate_case_describes_itself_as_its_message_then_its_text() -> None:
    case = GateCase("p", "s seed 1", "incorrect", "failed", message="incorrect: x violated", text="line 1\nline 2")
    assert case.describe() == "incorrect: x violated\nline 1\nline 2"
    assert GateCase("p", "s seed 1", "incorrect", "failed", message="only").describe() == "only"
    assert not case.passed and GateCase("p", "n", "correct", "passed").passed


def test_policy_does_not_recover_lists_each_failure_whole() -> None:
    one = GateCase("p", "a seed 1", "incorrect", "failed", message="m1", text="t1")
    two = GateCase("p", "b seed 2", "harness_error", "error", message="m2")
    raised = PolicyDoesNotRecover("my_policy", [one, two], 5)
    assert str(raised) == "my_policy does not recover in 2 of 5 cases\n\nm1\nt1\n\nm2"
    assert isinstance(raised, AssertionError)
    assert (raised.policy, raised.failures, raised.total) == ("my_policy", (one, two), 5)


# --- cases.py: the message line ------------------------------------------------------------------------------------


def test_the_message_names_the_outcome_and_the_violated_properties_in_order() -> None:
    _, report = ran()
    assert message_of(report) == "incorrect: duplicate_effects violated"
    two = checks(report, unauthorized_dispatches="false", duplicate_effects="false", abandoned_actions="unknown")
    assert message_of(two) == "incorrect: unauthorized_dispatches, duplicate_effects violated"


def test_the_message_names_the_undecided_properties_when_none_is_violated() -> None:
    _, report = ran()
    undecided = checks(report, duplicate_effects="unknown", abandoned_actions="unknown").model_copy(
        update={"outcome": "unresolved"}
    )
    assert message_of(undecided) == "unresolved: duplicate_effects, abandoned_actions undecided by the evidence"
    plain = checks(report).model_copy(update={"outcome": "abandoned"})
    assert message_of(plain) == "abandoned"


def test_the_message_of_a_harness_error_is_its_error_on_one_line() -> None:
    _, report = ran()
    error = report.model_copy(update={"outcome": "harness_error", "error": "its worker\n  died"})
    assert message_of(error) == "harness_error: its worker died"
    assert message_of(error.model_copy(update={"error": None})) == "harness_error: the harness failed"
    assert message_of(error.model_copy(update={"error": ""})) == "harness_error: the harness failed"


def test_the_message_adds_the_policys_own_error_cut_at_its_limit() -> None:
    _, report = ran()
    assert POLICY_ERROR_SHOWN == 160
    boom = with_policy_error(report, "ValueError: boom\n  at line 3")
    assert message_of(boom) == "incorrect: duplicate_effects violated; the policy failed: ValueError: boom at line 3"
    undecided = checks(boom, duplicate_effects="unknown")
    assert message_of(undecided) == (
        "incorrect: duplicate_effects undecided by the evidence; the policy failed: ValueError: boom at line 3"
    )
    assert message_of(checks(boom)) == "incorrect; the policy failed: ValueError: boom at line 3"
    exact = "x" * 160
    assert message_of(with_policy_error(report, exact)).endswith(f"; the policy failed: {exact}")
    long = "y" * 159 + "zw"
    assert message_of(with_policy_error(report, long)).endswith(f"; the policy failed: {'y' * 157}...")
    # Cut in its middle, where the policy raised it stays whole (a CI user's review: it read "at line 41 of agentrt.r...").
    place = " (at line 41 of agentrt.recovery.odd, in decide)"
    placed = "ValidationError: " + "v" * 200 + place
    kept = message_of(with_policy_error(report, placed)).split("; the policy failed: ")[1]
    assert kept == f"ValidationError: {'v' * (160 - 3 - len(place) - 17)}...{place}" and len(kept) == 160
    assert message_of(with_policy_error(report, "a\x1bb")).endswith("; the policy failed: a\\x1bb")
    # Only the first error is named.
    twice = with_policy_error(with_policy_error(report, "first", at=1), "second", at=2)
    assert message_of(twice).endswith("; the policy failed: first")


# --- cases.py: the failure text ------------------------------------------------------------------------------------


def test_the_failure_text_holds_the_anomalies_their_entries_and_the_commands() -> None:
    _, report = ran()
    text = failure_text(report, "REPRODUCE", "ALSO", Path("/r/f.yaml"), ["one", "two"])
    assert text == (
        f"{HEAD}\n{ANOMALIES}\n{ENTRIES}\nreproduce: REPRODUCE\nor run it: ALSO\nrepro file: /r/f.yaml\n"
        "warning: the repro file does not replay to this case: one\n"
        "warning: the repro file does not replay to this case: two"
    )
    assert failure_text(report, "R", None, Path("f.yaml")) == (
        f"{HEAD}\n{ANOMALIES}\n{ENTRIES}\nreproduce: R\nrepro file: f.yaml"
    )
    assert failure_text(report, "R", "", Path("f.yaml")) == failure_text(report, "R", None, Path("f.yaml"))


def test_the_failure_text_names_the_harness_error_and_the_undecided_properties() -> None:
    _, report = ran()
    bare = report.model_copy(
        update={
            "anomalies": (),
            "timeline": tuple(e for e in report.timeline if e.actor != "injector"),
            "error": "over its budget",
            "checks": {**report.checks, "duplicate_effects": "unknown", "abandoned_actions": "unknown"},
            "unknown": {"duplicate_effects": "the ledger is unavailable"},
        }
    )
    assert failure_text(bare, "R", None, Path("f.yaml")) == (
        f"{HEAD}\nharness error: over its budget\n"
        "undecided duplicate_effects: the ledger is unavailable\n"
        "undecided abandoned_actions: not established\n"
        "reproduce: R\nrepro file: f.yaml"
    )


def test_the_failure_text_shows_the_policys_error_entries() -> None:
    _, report = ran()
    bare = report.model_copy(
        update={"anomalies": (), "timeline": tuple(e for e in report.timeline if e.actor != "injector")}
    )
    boom = with_policy_error(bare, "boom")
    assert failure_text(boom, "R", None, Path("f.yaml")) == (
        f"{HEAD}\ntimeline entries (* witnesses an anomaly, ! an injected fault):\n"
        "   905      1.000s  worker      policy_error         error=boom\n"
        "reproduce: R\nrepro file: f.yaml"
    )


# --- cases.py: judging a case --------------------------------------------------------------------------------------


def test_a_failing_case_is_judged_with_its_repro_file_replayed(tmp_path: Path) -> None:
    case, report = ran()
    judged = judge(report, case, ReproFolder(tmp_path))
    path = tmp_path / "retry_new_key" / "seed-1" / "lost_response.yaml"
    command = f"python -m harness replay {path}"
    assert judged == GateCase(
        "retry_new_key",
        "lost_response seed 1",
        "incorrect",
        "failed",
        message="incorrect: duplicate_effects violated",
        text=f"{HEAD}\n{ANOMALIES}\n{ENTRIES}\nreproduce: {command}\nor run it: {RUN_IT}\nrepro file: {path}",
        reproduce=command,
        repro=path,
        differences=(),
        raised="",
    )
    assert path.read_text(encoding="utf-8") == repro_yaml(case.scenario, report, case.policy_spec)


def test_a_repro_file_that_does_not_replay_is_warned_of(tmp_path: Path) -> None:
    case, report = ran()
    other = report.model_copy(update={"policy_revision": "0"})  # recorded under another revision
    judged = judge(other, case, ReproFolder(tmp_path))
    assert judged.differences == ("policy revision: recorded 0, now 1",)
    assert judged.text.endswith(
        "\nwarning: the repro file does not replay to this case: policy revision: recorded 0, now 1"
    )


def test_a_harness_error_is_judged_without_replaying_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import harness.gate.cases as cases

    def no_replay(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a harness error is not replayed")

    monkeypatch.setattr(cases, "replay", no_replay)
    case, report = ran()
    error = report.model_copy(update={"outcome": "harness_error", "verdict": "unknown", "error": "its worker died"})
    judged = judge(error, case, ReproFolder(tmp_path))
    path = tmp_path / "retry_new_key" / "seed-1" / "lost_response.yaml"
    assert judged == GateCase(
        "retry_new_key",
        "lost_response seed 1",
        "harness_error",
        "error",
        message="harness_error: its worker died",
        text=(
            "retry_new_key (revision 1) on lost_response (revision 1) at seed 1: harness_error, verdict unknown\n"
            f"harness error: its worker died\n{ANOMALIES}\n{ENTRIES}\nreproduce: {RUN_IT}\nrepro file: {path}"
        ),
        reproduce=RUN_IT,
        repro=path,
    )
    assert path.is_file()


def test_a_passing_case_writes_nothing_and_says_when_its_policy_raised(tmp_path: Path) -> None:
    case, report = ran("reconcile_and_reauthorize")
    repros = ReproFolder(tmp_path / "repro")
    assert judge(report, case, repros) == GateCase(
        "reconcile_and_reauthorize", "lost_response seed 1", "correct", "passed"
    )
    raised = judge(with_policy_error(report, "ValueError:\nboom"), case, repros)
    assert raised == GateCase(
        "reconcile_and_reauthorize",
        "lost_response seed 1",
        "correct",
        "passed",
        raised=(
            "the policy failed: ValueError: boom; run it again: python -m harness run --policy "
            "reconcile_and_reauthorize --scenario lost_response --seed 1"
        ),
    )
    assert not (tmp_path / "repro").exists()


# --- cases.py: an explored finding ---------------------------------------------------------------------------------


def _explore(tmp_path_factory: pytest.TempPathFactory, policy: str) -> Any:
    out = tmp_path_factory.mktemp(f"explore-{policy}")
    options = ExploreOptions(out=out, depth=1, swarm=0, tracking="none", isolate=False, seeds=(1, 2))
    return explore([policy], ["lost_response"], options)


# Fixtures of the session, not a module's memory: mutmut runs sessions one after another in one process, and a
# finding file of an earlier session's temporary folder may be gone.
@pytest.fixture(scope="session")
def unsafe_explored(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """explore of retry_new_key x lost_response, depth 1, no swarm, seeds 1 and 2, in process."""
    return _explore(tmp_path_factory, "retry_new_key")


@pytest.fixture(scope="session")
def safe_explored(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return _explore(tmp_path_factory, "reconcile_and_reauthorize")


def test_an_explored_finding_is_a_failure_with_its_file_as_repro(unsafe_explored: Any) -> None:
    summary = unsafe_explored
    finding, path = summary.explorations[0].findings[1]
    assert finding.properties == ("unauthorized_dispatches", "duplicate_effects")
    judged = judge_finding(finding, path)
    command = f"python -m harness replay {path}"
    assert judged.text.startswith(
        "retry_new_key (revision 1) on lost_response-2 (revision 1+explore) at seed 1: incorrect, verdict false\n"
    )
    assert judged == GateCase(
        "retry_new_key",
        "explored lost_response-2 seed 1",
        "incorrect",
        "failed",
        message="incorrect: unauthorized_dispatches, duplicate_effects violated",
        text=judged.text,
        reproduce=command,
        repro=path,
        differences=(),
    )
    assert judged.text.endswith(
        f"\nreproduce: {command}\nor run it: python -m harness run --policy retry_new_key --scenario {path} "
        f"--seed 1\nrepro file: {path}"
    )


def test_an_explored_finding_quotes_its_paths_and_names_the_policys_error(tmp_path: Path) -> None:
    """A finding's file under a folder with a space, its policy spec with one too, and a replay whose policy
    raised: the commands quote them and the message names the error."""
    case, report = ran()
    folder = tmp_path / "a b"
    path = ReproFolder(folder).write(case.scenario, report, case.policy_spec)
    finding = Finding(
        policy="retry_new_key",
        policy_spec="retry_new_key",
        policy_revision="1",
        scenario="lost_response",
        scenario_spec="lost_response",
        properties=("duplicate_effects",),
        outcome="incorrect",
        seed=1,
        schedule=(),  # type: ignore[arg-type]
        first_seen=0,
    )
    judged = judge_finding(finding, path)
    quoted = f"'{path}'"
    assert judged.name == "explored lost_response seed 1"
    assert judged.reproduce == f"python -m harness replay {quoted}"
    assert f"\nor run it: python -m harness run --policy retry_new_key --scenario {quoted} --seed 1\n" in judged.text
    assert judged.differences == () and "warning:" not in judged.text
    # A finding file recorded under another revision of the policy: the replay differs, and that is said.
    older = ReproFolder(tmp_path / "older").write(
        case.scenario, report.model_copy(update={"policy_revision": "0"}), "retry_new_key"
    )
    judged = judge_finding(finding, older)
    assert judged.differences == ("policy revision: recorded 0, now 1",)
    assert judged.text.endswith(
        f"\nrepro file: {older}\nwarning: the repro file does not replay to this case: policy revision: recorded 0, now 1"
    )


# --- repro.py ------------------------------------------------------------------------------------------------------


def test_violated_properties_are_the_false_ones_in_order() -> None:
    _, report = ran()
    assert violated(report) == ("duplicate_effects",)
    both = checks(report, abandoned_actions="false", unauthorized_dispatches="false", false_records="unknown")
    assert violated(both) == ("unauthorized_dispatches", "abandoned_actions")


REPRO_TEXT = """\
name: lost_response
revision: '1'
description: 'One failing case, written for harness replay: retry_new_key (revision 1) at seed 1 is incorrect, violating
  duplicate_effects. Scenario lost_response (revision 1): Release-42 revision 17 authorizes activating m7 on staging/fraud.
  Action a73 is claimed and sent; the destination applies it and records a receipt, and the response is lost on
  the way back. Nothing changes in the task. Exercises the ordinary lost reply: a missing response does not prove
  a missing effect, so a policy must account for the applied effect without applying it twice.'
reproduces:
  policy: retry_new_key
  policy_revision: '1'
  seed: 1
  outcome: incorrect
  properties:
  - duplicate_effects
task:
  task_id: release-42
  revision: 17
  target: staging/fraud
  model: m7
  digest: sha256:d7d7d7
action_id: a73
approval:
  approval_id: apr-17
faults:
- boundary: response_lost
operator: []
"""


def test_a_repro_file_is_the_scenario_with_what_it_reproduces() -> None:
    case, report = ran()
    assert repro_yaml(case.scenario, report, case.policy_spec) == REPRO_TEXT


def test_a_repro_file_names_the_budget_of_a_case_over_it_and_no_violation_when_none() -> None:
    case, report = ran()
    timed = checks(report).model_copy(
        update={"outcome": "harness_error", "reproduce": f"{RUN_IT} --case-timeout 2.5", "policy_revision": "9"}
    )
    text = repro_yaml(case.scenario, timed, "pkg.mod:ATTR")
    data = yaml.safe_load(text)
    assert data["description"].startswith(
        "One failing case, written for harness replay: retry_new_key (revision 9) at seed 1 is harness_error. "
        "Scenario lost_response (revision 1): Release-42"
    )
    assert data["reproduces"] == {
        "policy": "pkg.mod:ATTR",
        "policy_revision": "9",
        "seed": 1,
        "outcome": "harness_error",
        "properties": [],
        "case_timeout_s": 2.5,
    }
    assert list(data) == [
        "name",
        "revision",
        "description",
        "reproduces",
        "task",
        "action_id",
        "approval",
        "faults",
        "operator",
    ]
    assert text.startswith(
        "name: lost_response\nrevision: '1'\ndescription: 'One failing case, written for harness replay: retry_new_key "
        "(revision 9) at seed 1 is harness_error.\n  Scenario lost_response (revision 1): Release-42 revision 17"
    )
    assert (
        "\nreproduces:\n  policy: pkg.mod:ATTR\n  policy_revision: '9'\n  seed: 1\n  outcome: harness_error\n" in text
    )
    assert "\n  properties: []\n  case_timeout_s: 2.5\ntask:\n" in text


def test_a_repro_files_lines_are_cut_at_110_characters() -> None:
    """A description whose third word would end at column 111: it goes on the next line."""
    case, report = ran()
    scenario = case.scenario.model_copy(update={"description": f"  {'a' * 12} {'x' * 40} {'y' * 80}\n\n"})
    assert repro_yaml(scenario, report, case.policy_spec).startswith(
        "name: lost_response\nrevision: '1'\n"
        "description: 'One failing case, written for harness replay: retry_new_key (revision 1) at seed 1 is incorrect, "
        "violating\n"
        f"  duplicate_effects. Scenario lost_response (revision 1): {'a' * 12} {'x' * 40}\n"
        f"  {'y' * 80}'\nreproduces:\n"
    )


def test_a_repro_file_writes_every_operator_event_in_its_yaml_form() -> None:
    (case,) = load_grid(["retry_new_key"], ["cancel_inflight"], [1]).cases
    assert repro_yaml(case.scenario, run_case(case)[0], case.policy_spec) == (
        "name: cancel_inflight\n"
        "revision: '1'\n"
        "description: 'One failing case, written for harness replay: retry_new_key (revision 1) at seed 1 is "
        "incorrect, violating\n"
        "  unauthorized_dispatches, duplicate_effects, effects_after_cancel. Scenario cancel_inflight (revision 1): "
        "Action\n"
        "  a73 is claimed and sent; the destination applies it and the reply is lost. One second after the "
        "destination applied\n"
        "  it, while the caller is still waiting, cancellation is recorded. The claim was made before the "
        "cancellation, so\n"
        "  the first dispatch was authorized; any dispatch after the cancellation is not, and the effect that "
        "already happened\n"
        "  must still be accounted for.'\n"
        "reproduces:\n"
        "  policy: retry_new_key\n"
        "  policy_revision: '1'\n"
        "  seed: 1\n"
        "  outcome: incorrect\n"
        "  properties:\n"
        "  - unauthorized_dispatches\n"
        "  - duplicate_effects\n"
        "  - effects_after_cancel\n"
        "task:\n"
        "  task_id: release-42\n"
        "  revision: 17\n"
        "  target: staging/fraud\n"
        "  model: m7\n"
        "  digest: sha256:d7d7d7\n"
        "action_id: a73\n"
        "approval:\n"
        "  approval_id: apr-17\n"
        "faults:\n"
        "- boundary: response_lost\n"
        "operator:\n"
        "- do: request_cancel\n"
        "  when:\n"
        "    after:\n"
        "      actor: destination\n"
        "      event: applied\n"
        "    delay_s: 1.0\n"
        "  reason: the owner cancelled the release\n"
    )


def test_a_repro_file_keeps_the_approvals_expiry_but_not_its_token() -> None:
    (case,) = load_grid(["retry_new_key"], ["approval_expired_before_dispatch"], [1]).cases
    assert case.scenario.approval.token.get_secret_value()
    text = repro_yaml(case.scenario, run_case(case)[0], case.policy_spec)
    assert text.endswith(
        "action_id: a73\nworker:\n  dispatch_at_s: 2.0\napproval:\n  approval_id: apr-17\n  expires_at_s: 1.0\n"
        "faults: []\noperator: []\n"
    )
    assert "reproduces:\n  policy: retry_new_key\n  policy_revision: '1'\n  seed: 1\n  outcome: correct\n" in text
    assert "  properties: []\ntask:\n" in text
    assert "token" not in text and case.scenario.approval.token.get_secret_value() not in text


@pytest.mark.parametrize(
    ("reproduce", "budget"),
    [
        (RUN_IT, None),
        (f"{RUN_IT} --case-timeout 2.5", 2.5),
        (f"--case-timeout 7 {RUN_IT}", 7.0),
        (f"{RUN_IT} --case-timeout", None),  # nothing after it
        (f"{RUN_IT} --case-timeout x", None),
        (f"{RUN_IT} --case-timeout 0", None),
        (f"{RUN_IT} --case-timeout -1", None),
        (f"{RUN_IT} --case-timeout {CASE_TIMEOUT_MAX_S}", float(CASE_TIMEOUT_MAX_S)),
        (f"{RUN_IT} --case-timeout {CASE_TIMEOUT_MAX_S + 0.5}", None),
        (f"{RUN_IT} --case-timeout 0.001", 0.001),
        (f"{RUN_IT} --case-timeout 'unclosed", None),
        (f"{RUN_IT} --case-timeout 3 --case-timeout 4", 3.0),
    ],
)
def test_the_budget_a_reproduce_command_names(reproduce: str, budget: float | None) -> None:
    _, report = ran()
    assert case_timeout(report.model_copy(update={"reproduce": reproduce})) == budget


def test_repro_paths_and_replay_commands() -> None:
    _, report = ran()
    assert repro_path(Path("/f"), report) == Path("/f/retry_new_key/seed-1/lost_response.yaml")
    assert replay_command(Path("/a b/c.yaml")) == "python -m harness replay '/a b/c.yaml'"
    assert replay_command(Path("/a/c.yaml")) == "python -m harness replay /a/c.yaml"


def test_a_repro_folder_is_made_when_first_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    case, report = ran()
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    folder = ReproFolder(None, prefix="mine-")
    assert list(tmp_path.iterdir()) == []
    path = folder.write(case.scenario, report, "pkg.mod:ATTR")
    (made,) = tmp_path.iterdir()
    assert made.name.startswith("mine-") and folder.path == made
    assert path == made / "retry_new_key" / "seed-1" / "lost_response.yaml"
    assert path.read_text(encoding="utf-8") == repro_yaml(case.scenario, report, "pkg.mod:ATTR")
    assert [p.name for p in path.parent.iterdir()] == ["lost_response.yaml"]
    default = ReproFolder(None)
    assert default.path.name.startswith("harness-repro-") and default.path.parent == tmp_path
    given = ReproFolder(tmp_path / "given")
    assert given.path == tmp_path / "given" and not (tmp_path / "given").exists()


# --- junit.py ------------------------------------------------------------------------------------------------------


def failing(name: str, status: str = "failed", policy: str = "my_policy") -> GateCase:
    return GateCase(
        policy,
        name,
        "incorrect" if status == "failed" else "harness_error",
        status,  # type: ignore[arg-type]
        message=f"msg <{name}> & \x01",
        text=f"text of {name}\nline \x1b two",
    )


def test_junit_xml_whole() -> None:
    suites = (
        Suite(
            "my_policy",
            (GateCase("my_policy", "a seed 1", "correct", "passed"), failing("a seed 2"), failing("b seed 1", "error")),
            1.5,
            (("policy_revision", "3"), ("k\x02", "v\x03")),
        ),
        Suite("my_policy explored", (failing("explored x seed 1"),), 0.25),
        Suite("other\x07", (GateCase("o\x08", "c\x0b seed 1", "escalated", "passed"),)),
    )
    assert junit_xml(suites) == (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<testsuites name="recovery-harness" tests="5" failures="2" errors="1" time="1.750">\n'
        '  <testsuite name="my_policy" tests="3" failures="1" errors="1" skipped="0" time="1.500">\n'
        "    <properties>\n"
        '      <property name="policy_revision" value="3" />\n'
        '      <property name="k\ufffd" value="v\ufffd" />\n'
        "    </properties>\n"
        '    <testcase classname="my_policy" name="a seed 1" />\n'
        '    <testcase classname="my_policy" name="a seed 2">\n'
        '      <failure message="msg &lt;a seed 2&gt; &amp; \ufffd" type="incorrect">text of a seed 2\n'
        "line \ufffd two</failure>\n"
        "    </testcase>\n"
        '    <testcase classname="my_policy" name="b seed 1">\n'
        '      <error message="msg &lt;b seed 1&gt; &amp; \ufffd" type="harness_error">text of b seed 1\n'
        "line \ufffd two</error>\n"
        "    </testcase>\n"
        "  </testsuite>\n"
        '  <testsuite name="my_policy explored" tests="1" failures="1" errors="0" skipped="0" time="0.250">\n'
        '    <testcase classname="my_policy" name="explored x seed 1">\n'
        '      <failure message="msg &lt;explored x seed 1&gt; &amp; \ufffd" type="incorrect">text of explored x '
        "seed 1\nline \ufffd two</failure>\n"
        "    </testcase>\n"
        "  </testsuite>\n"
        '  <testsuite name="other\ufffd" tests="1" failures="0" errors="0" skipped="0">\n'
        '    <testcase classname="o\ufffd" name="c\ufffd seed 1" />\n'
        "  </testsuite>\n"
        "</testsuites>\n"
    )


def test_junit_xml_without_times_or_suites_and_under_another_name() -> None:
    assert junit_xml((), name="gate") == (
        '<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="gate" tests="0" failures="0" errors="0" />\n'
    )
    untimed = junit_xml((Suite("p", ()),))
    assert untimed == (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<testsuites name="recovery-harness" tests="0" failures="0" errors="0">\n'
        '  <testsuite name="p" tests="0" failures="0" errors="0" skipped="0" />\n'
        "</testsuites>\n"
    )
    zero = junit_xml((Suite("p", (), 0.0),))
    assert '<testsuites name="recovery-harness" tests="0" failures="0" errors="0" time="0.000">' in zero
    assert '<testsuite name="p" tests="0" failures="0" errors="0" skipped="0" time="0.000" />' in zero


def test_counts_count_each_status() -> None:
    cases = [failing("a"), failing("b", "error"), failing("c"), GateCase("p", "d", "correct", "passed")]
    assert _counts(cases) == {"tests": "4", "failures": "2", "errors": "1"}
    assert _counts([]) == {"tests": "0", "failures": "0", "errors": "0"}


def test_clean_replaces_exactly_what_xml_cannot_hold() -> None:
    kept = "\t\n\r \x7f\x80\ud7ff\ue000\ufffd\U00010000\U0010ffffabc<&>"
    assert _clean(kept) == kept
    for bad in ("\x00", "\x01", "\x08", "\x0b", "\x0c", "\x0e", "\x1f", "\ud800", "\udfff", "\ufffe", "\uffff"):
        assert _clean(f"a{bad}b{bad}") == "a\ufffdb\ufffd", repr(bad)


@given(st.text())
def test_any_text_cleaned_parses_back_as_itself_cleaned(text: str) -> None:
    suite = Suite(text, (GateCase(text, text, "incorrect", "failed", message=text, text=text),), None, ((text, text),))
    root = ET.fromstring(junit_xml([suite]))
    failure = root.find("testsuite/testcase/failure")
    assert failure is not None
    cleaned = _clean(text)
    assert len(cleaned) == len(text)
    # ElementTree reads a carriage return in text as a line break, as XML parsers must.
    assert (failure.text or "") == cleaned.replace("\r\n", "\n").replace("\r", "\n")
    assert failure.get("message") == cleaned


def test_write_junit_writes_junit_xml(tmp_path: Path) -> None:
    suites = (Suite("p", (failing("a"),), 2.0),)
    path = tmp_path / "j.xml"
    write_junit(path, suites)
    assert path.read_text(encoding="utf-8") == junit_xml(suites)
    assert [p.name for p in tmp_path.iterdir()] == ["j.xml"]


def test_a_junit_path_is_refused_with_its_fix(tmp_path: Path) -> None:
    def refused(path: Path, out: Path | None = None) -> str:
        with pytest.raises(UsageError) as raised:
            check_junit_path(path, out)
        return str(raised.value)

    out = tmp_path / "run"
    assert refused(tmp_path) == f"--junit {tmp_path}: is a folder; fix: give a file name, such as {tmp_path}/junit.xml"
    assert refused(out, out) == f"--junit {out}: is the run's folder (--out {out}); fix: give another file name"
    assert refused(out, out / "deep") == (
        f"--junit {out}: is the run's folder (--out {out / 'deep'}); fix: give another file name"
    )
    inside = out / "summary.csv"
    assert refused(inside, out) == (
        f"--junit {inside}: inside the run's folder {out}, where it could replace a file the run writes; fix: give "
        f"a name ending in .xml, such as {out}/junit.xml"
    )
    check_junit_path(out / "junit.xml", out)
    check_junit_path(out / "JUNIT.XML", out)
    check_junit_path(tmp_path / "beside.txt", out)  # outside the run's folder: no need for .xml
    check_junit_path(tmp_path / "new.txt")
    other = tmp_path / "notes.xml"
    other.write_text("<notes/>", encoding="utf-8")
    assert refused(other) == (
        f"--junit {other}: exists and is not a JUnit report; fix: give a new file name, or remove it"
    )
    (tmp_path / "file").write_text("x", encoding="utf-8")
    assert refused(tmp_path / "file" / "j.xml") == (
        f"--junit {tmp_path / 'file' / 'j.xml'}: {tmp_path / 'file'} is a file, not a folder; fix: give another path"
    )
    for root in ("testsuites", "testsuite"):
        earlier = tmp_path / f"{root}.xml"
        earlier.write_text(f'<?xml version="1.0"?>\n<{root} name="x"><testcase name="a"/></{root}>', encoding="utf-8")
        check_junit_path(earlier)
        check_junit_path(earlier, out)


def test_only_a_file_whose_root_is_a_test_suite_is_a_junit_report(tmp_path: Path) -> None:
    cases = {
        "suites.xml": ("<testsuites/>", True),
        "suite.xml": ("<testsuite><other/></testsuite>", True),
        "nested.xml": ("<report><testsuites/></report>", False),
        "bad.xml": ("<testsuites", False),
        "broken.xml": ("<testsuites><a></b></testsuites>", True),  # only the start is read
        "empty.xml": ("", False),
        "text.xml": ("not xml at all", False),
    }
    for name, (text, junit) in cases.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
        assert _is_junit(tmp_path / name) is junit, name
    assert _is_junit(tmp_path / "missing.xml") is False
    # Read as bytes: the parser follows the file's own encoding, and bytes that are not text are no report.
    latin = tmp_path / "latin.xml"
    latin.write_bytes(b'<?xml version="1.0" encoding="ISO-8859-1"?>\n<testsuites name="caf\xe9"/>')
    assert _is_junit(latin) is True
    binary = tmp_path / "binary.xml"
    binary.write_bytes(b"\x1f\x8b\x08\x00\xff\xfe\xfd")
    assert _is_junit(binary) is False
    with pytest.raises(UsageError, match="exists and is not a JUnit report"):
        check_junit_path(binary)
    assert _is_junit(tmp_path) is False


# --- runner.py: the summary ----------------------------------------------------------------------------------------


def test_a_check_summary_has_its_suites_and_failures() -> None:
    passed = GateCase("p", "a seed 1", "correct", "passed")
    bad = failing("a seed 2", policy="p")
    summary = CheckSummary("p", "7", None, (passed, bad), seeds=(1, 2), elapsed_s=1.25)
    assert summary.failures == (bad,) and not summary.ok
    properties = (("policy_revision", "7"), ("harness_version", __version__), ("seeds", "1 2"))
    assert summary.suites() == (Suite("p", (passed, bad), 1.25, properties),)
    explored_bad = failing("explored x seed 1", "error", policy="p")
    both = CheckSummary(
        "p", "7", None, (passed,), (explored_bad,), elapsed_s=1.0, explore_elapsed_s=2.5, schedules=40, seeds=(3,)
    )
    properties = (("policy_revision", "7"), ("harness_version", __version__), ("seeds", "3"))
    assert both.suites() == (
        Suite("p", (passed,), 1.0, properties),
        Suite("p explored", (explored_bad,), 2.5, (*properties, ("schedules_explored", "40"))),
    )
    assert both.failures == (explored_bad,) and not both.ok
    assert CheckSummary("p", "7", None, (passed,)).ok


# --- runner.py: coverage notes -------------------------------------------------------------------------------------


@dataclass
class Grid:
    unfired: list[FaultCoverage]
    done: dict[str, tuple[int, int]] = field(default_factory=dict)

    def finished(self, scenario: str) -> tuple[int, int]:
        return self.done[scenario]


def test_coverage_notes_say_what_fired_in_no_finished_case() -> None:
    grid = Grid(
        [
            FaultCoverage("s1", 0, "response_lost on a73", 3, 0),
            FaultCoverage("s2", 1, "cancel at 5s", 1, 0, kind="operator"),
            FaultCoverage("s3", 0, "crash", 0, 0),
            FaultCoverage("s4", 0, "request_lost", 2, 0),
        ],
        {"s1": (3, 0), "s2": (1, 0), "s3": (0, 2), "s4": (2, 1)},
    )
    assert coverage_notes(grid, "pol") == [  # type: ignore[arg-type]
        "note: scenario s1 declares fault response_lost on a73, which fired in no case of pol (its site was "
        "reached in 3 cases): that scenario tested nothing of this fault for this policy",
        "note: scenario s2 declares operator event cancel at 5s, which fired in no case of pol (its trigger came "
        "in 1 case): that scenario tested nothing of this operator event for this policy",
        "note: scenario s4 declares fault request_lost, which fired in none of the 2 cases of pol that finished "
        "(its site was reached in 2 of them); not counted: 1 that ended in harness_error, whose coverage is unknown",
    ]
    assert coverage_notes(Grid([]), "pol") == []  # type: ignore[arg-type]


# --- runner.py: judging reports and explorations -------------------------------------------------------------------


def test_reports_are_judged_in_the_grids_order_and_cases_not_run_are_left_out(tmp_path: Path) -> None:
    grid = load_grid(["retry_new_key", "reconcile_and_reauthorize"], ["lost_response"], [1, 2])
    reports = {
        (c.policy.name, c.scenario.name, c.seed): ran(c.policy.name, c.scenario.name, c.seed)[1]
        for c in grid.cases
        if c.seed == 1 or c.policy.name == "reconcile_and_reauthorize"
    }
    judged = judge_reports(reversed(reports.values()), grid.cases, ReproFolder(tmp_path))
    assert [(j.policy, j.name, j.status) for j in judged] == [
        ("retry_new_key", "lost_response seed 1", "failed"),
        ("reconcile_and_reauthorize", "lost_response seed 1", "passed"),
        ("reconcile_and_reauthorize", "lost_response seed 2", "passed"),
    ]
    assert judged[0].repro == tmp_path / "retry_new_key" / "seed-1" / "lost_response.yaml"
    assert judge_reports([], grid.cases, ReproFolder(tmp_path)) == ()


def test_grid_suites_are_one_per_policy_in_the_grids_order(tmp_path: Path) -> None:
    grid = load_grid(["retry_new_key", "reconcile_and_reauthorize"], ["lost_response", "uncertain_lookup"], [1])
    reports = {(c.policy.name, c.scenario.name, c.seed): ran(c.policy.name, c.scenario.name)[1] for c in grid.cases}
    specs = [
        ("retry_new_key", "lost_response"),
        ("retry_new_key", "uncertain_lookup"),
        ("reconcile_and_reauthorize", "lost_response"),
        ("reconcile_and_reauthorize", "uncertain_lookup"),
    ]
    suites = grid_suites(specs, [1], reversed(reports.values()), ReproFolder(tmp_path))
    judged = judge_reports(reports.values(), grid.cases, ReproFolder(tmp_path / "again"))
    assert [s.name for s in suites] == ["retry_new_key", "reconcile_and_reauthorize"]
    assert [(s.time_s, s.properties) for s in suites] == [
        (None, (("policy_revision", "1"), ("harness_version", __version__))),
        (None, (("policy_revision", grid.cases[-1].policy.revision), ("harness_version", __version__))),
    ]
    assert [[(c.name, c.status, c.message) for c in s.cases] for s in suites] == [
        [(c.name, c.status, c.message) for c in judged[:2]],
        [(c.name, c.status, c.message) for c in judged[2:]],
    ]
    assert [[c.name for c in s.cases] for s in suites] == [
        ["lost_response seed 1", "uncertain_lookup seed 1"],
        ["lost_response seed 1", "uncertain_lookup seed 1"],
    ]


def test_an_exploration_passes_each_seed_only_when_clean(safe_explored: Any, unsafe_explored: Any) -> None:
    safe = safe_explored
    assert judge_exploration(safe, (1, 2)) == (
        GateCase("reconcile_and_reauthorize", "explored lost_response seed 1", "no_violation", "passed"),
        GateCase("reconcile_and_reauthorize", "explored lost_response seed 2", "no_violation", "passed"),
    )
    unsafe = unsafe_explored
    judged = judge_exploration(unsafe, (2, 1))
    findings = unsafe.explorations[0].findings
    assert [f.seed for f, _ in findings] == [1, 1, 1]
    assert judged == tuple(judge_finding(f, p) for f, p in findings)


@dataclass
class FakeExploration:
    policy: str
    scenario_name: str
    findings: list[tuple[Any, Path]] = field(default_factory=list)
    violating: int = 0
    errors: int = 0


@dataclass
class FakeSummary:
    explorations: list[FakeExploration]
    errors: list[str] = field(default_factory=list)
    reproduce: list[str] = field(default_factory=list)


def test_an_exploration_judged_seed_by_seed(monkeypatch: pytest.MonkeyPatch) -> None:
    import harness.gate.runner as runner

    monkeypatch.setattr(
        runner, "judge_finding", lambda f, path: GateCase(f.policy, f"found {path} {f.seed}", "incorrect", "failed")
    )
    finding = types.SimpleNamespace
    summary = FakeSummary(
        [
            FakeExploration("p", "clean"),
            FakeExploration("p", "violating", violating=1),
            FakeExploration("p", "erred", errors=1),
            FakeExploration(
                "p", "found", [(finding(policy="p", seed=2), Path("a")), (finding(policy="p", seed=1), Path("b"))]
            ),
        ]
    )
    assert [(c.name, c.status) for c in judge_exploration(summary, [1, 2])] == [  # type: ignore[arg-type]
        ("explored clean seed 1", "passed"),
        ("explored clean seed 2", "passed"),
        ("found b 1", "failed"),
        ("found a 2", "failed"),
    ]


def test_the_harness_errors_of_an_exploration_are_one_error_case() -> None:
    summary = FakeSummary([FakeExploration("p", "erred", errors=2)], ["first error", "second"], ["run it", "two"])
    assert judge_exploration(summary, [1]) == (  # type: ignore[arg-type]
        GateCase(
            "p",
            "explored schedules: harness errors",
            "harness_error",
            "error",
            message="harness_error: the harness failed on 2 explored schedules",
            text="first error\nsecond",
            reproduce="run it",
        ),
    )
    bare = FakeSummary([], ["crash"])
    assert judge_exploration(bare, [1]) == (  # type: ignore[arg-type]
        GateCase(
            "?",
            "explored schedules: harness errors",
            "harness_error",
            "error",
            message="harness_error: the harness failed on 1 explored schedule",
            text="crash",
            reproduce=None,
        ),
    )


# --- runner.py: a policy object's spec -----------------------------------------------------------------------------


class HomePolicy:
    name = "home_policy"
    revision = "1"

    def decide(self, situation: Any) -> Any:
        raise NotImplementedError


HOME = HomePolicy()
ALSO_HOME = HOME


def test_a_policy_objects_spec_names_where_it_lives() -> None:
    assert _spec_of(load_policy("retry_new_key")) == "retry_new_key"
    assert _spec_of(HOME) == f"{__name__}:HOME"
    assert _spec_of(HomePolicy) == f"{__name__}:HomePolicy"  # type: ignore[arg-type]


def test_a_policy_object_found_in_another_module_first_by_its_home(monkeypatch: pytest.MonkeyPatch) -> None:
    loose = HomePolicy()
    a = types.ModuleType("aaa_gate_mutants_first")
    a.P = loose  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, a.__name__, a)
    assert _spec_of(loose) == "aaa_gate_mutants_first:P"  # its home has no attribute holding it
    monkeypatch.setattr(sys.modules[__name__], "ZZ_LOOSE", loose, raising=False)
    assert _spec_of(loose) == f"{__name__}:ZZ_LOOSE"  # its class's module first
    main = types.ModuleType("__main__")
    main.Q = HomePolicy()  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "__main__", main)
    monkeypatch.setitem(sys.modules, "aaa_gate_mutants_none", None)  # type: ignore[arg-type]
    with pytest.raises(InputError) as raised:
        _spec_of(main.Q)  # type: ignore[attr-defined]
    assert str(raised.value) == (
        "policy 'home_policy': not a module-level attribute of any module, so a failure could not be reproduced "
        "from a file; fix: define it at module level, or pass 'package.module:attr'"
    )

    class Nameless:
        pass

    nameless = Nameless()
    with pytest.raises(InputError) as raised:
        _spec_of(nameless)  # type: ignore[arg-type]
    assert str(raised.value).startswith(f"policy '{nameless}': not a module-level attribute of any module")


# --- runner.py: assert_recovers' arguments -------------------------------------------------------------------------


def test_out_is_a_folders_path_or_none(tmp_path: Path) -> None:
    where = "assert_recovers: argument 'out'"
    assert _checked_out(None, where) is None
    assert _checked_out(str(tmp_path / "a"), where) == tmp_path / "a"
    assert _checked_out(tmp_path, where) == tmp_path
    assert _checked_out(os.fsencode(tmp_path / "b").decode(), where) == tmp_path / "b"

    def refused(out: object) -> str:
        with pytest.raises(InputError) as raised:
            _checked_out(out, where)
        return str(raised.value)

    fix = "fix: give a path, as out=tmp_path / 'repro'"
    assert refused(3) == f"{where}: 3 is not a folder's path; {fix}"
    assert refused("") == f"{where}: '' is not a folder's path; {fix}"
    assert refused(b"x") == f"{where}: b'x' is not a folder's path; {fix}"
    (tmp_path / "f").write_text("x", encoding="utf-8")
    assert refused(tmp_path / "f") == f"{where}: {tmp_path / 'f'} is a file; fix: give a folder"


def test_seeds_are_whole_numbers_in_range() -> None:
    where = "w"
    fix = "fix: give whole numbers such as seeds=[1, 2, 3]"
    assert _checked_seeds(5, where) == [5]
    assert _checked_seeds(range(3), where) == [0, 1, 2]
    assert _checked_seeds((0, SEED_MAX), where) == [0, SEED_MAX]
    assert _checked_seeds(iter([4, 4]), where) == [4, 4]

    def refused(seeds: object) -> str:
        with pytest.raises(InputError) as raised:
            _checked_seeds(seeds, where)
        return str(raised.value)

    assert refused("12") == f"w: '12' is not a collection of seeds; {fix}"
    assert refused(b"12") == f"w: b'12' is not a collection of seeds; {fix}"
    assert refused(1.5) == f"w: 1.5 is not a collection of seeds; {fix}"
    assert refused(None) == f"w: None is not a collection of seeds; {fix}"
    assert refused([]) == f"w: no seed given, so no case would run; {fix}"
    not_seed = f"is not a seed (a whole number in 0..{SEED_MAX}, as --seed takes); {fix}"
    assert refused([1, -1]) == f"w: -1 {not_seed}"
    assert refused([SEED_MAX + 1]) == f"w: {SEED_MAX + 1} {not_seed}"
    assert refused([True]) == f"w: True {not_seed}"
    assert refused(True) == f"w: True {not_seed}"
    assert refused([2.0]) == f"w: 2.0 {not_seed}"
    assert refused(["3"]) == f"w: '3' {not_seed}"
    assert refused(-2) == f"w: -2 {not_seed}"


def test_a_value_is_shown_as_its_repr_on_one_line_cut_short() -> None:
    assert _shown("a\nb") == "'a\\nb'"
    assert _shown(["x\ny", 1]) == "['x\\ny', 1]"
    assert _shown("x" * 100) == "'" + "x" * 59
    assert len(_shown(list(range(100)))) == 60
    assert _shown(types.SimpleNamespace(a="1\n 2")) == "namespace(a='1\\n 2')"


NAMESPACE_POLICY = types.SimpleNamespace(name="namespace_policy", revision="1", decide=lambda situation: None)


def test_a_policy_object_with_no_module_of_its_own_is_found_where_it_is_held(monkeypatch: pytest.MonkeyPatch) -> None:
    """A policy object whose type is a builtin (a namespace holding ``decide``) has no ``__module__``: the modules
    are searched in order, passing over entries of ``sys.modules`` that are None or hold no ``__dict__``."""
    monkeypatch.setitem(sys.modules, "aaa_gate_mutants_0none", None)  # type: ignore[arg-type]
    monkeypatch.setitem(sys.modules, "aaa_gate_mutants_1bare", object())  # type: ignore[arg-type]
    assert _spec_of(NAMESPACE_POLICY) == f"{__name__}:NAMESPACE_POLICY"  # type: ignore[arg-type]
    loose = types.SimpleNamespace(name="loose", revision="1", decide=lambda situation: None)
    held = types.ModuleType("aaa_gate_mutants_2held")
    held.LOOSE = loose  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, held.__name__, held)
    assert _spec_of(loose) == "aaa_gate_mutants_2held:LOOSE"  # type: ignore[arg-type]


class MultiLine:
    def __repr__(self) -> str:
        return "first\n   second"


def test_a_multi_line_repr_is_shown_on_one_line() -> None:
    assert _shown(MultiLine()) == "first second"


def test_a_check_that_stopped_says_how_to_run_it_again(tmp_path: Path) -> None:
    temporary = tmp_path / "tmp"
    (temporary / "cases").mkdir(parents=True)
    assert _again(temporary, None) == "run the same command again"
    assert not temporary.exists()
    assert _again(tmp_path / "missing", None) == "run the same command again"
    given = tmp_path / "given"
    given.mkdir()
    assert _again(given, given) == f"run the same command again with a new --out ({given} holds what it wrote)"
    assert given.is_dir()


# --- today's repro files: the folder a user's policy came from (forty-second pass) ---------------------------------


def _module(name: str, **attrs: Any) -> types.ModuleType:
    module = types.ModuleType(name)
    for key, value in attrs.items():
        setattr(module, key, value)
    return module


def test_import_root_is_the_folder_above_a_package_or_beside_a_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.policy import import_root

    monkeypatch.chdir(tmp_path)
    pkg = _module("h42_pkg", __path__=["rel/h42_pkg", "/elsewhere/h42_pkg"], __file__="/nowhere/h42_pkg/__init__.py")
    monkeypatch.setitem(sys.modules, "h42_pkg", pkg)
    monkeypatch.setitem(sys.modules, "h42_flat", _module("h42_flat", __file__="flat/h42_flat.py"))
    monkeypatch.setitem(sys.modules, "h42_empty", _module("h42_empty", __path__=[], __file__="/e/f/h42_empty.py"))
    monkeypatch.setitem(sys.modules, "h42_none", _module("h42_none", __path__=None, __file__="/n/h42_none.py"))
    monkeypatch.setitem(sys.modules, "h42_nofile", _module("h42_nofile", __file__=None))
    monkeypatch.setitem(sys.modules, "h42_bare", _module("h42_bare"))
    monkeypatch.delitem(sys.modules, "h42_absent", raising=False)

    # The package's first folder, made absolute from here, then the folder above it; its top package stands for
    # any module under it.
    assert import_root("h42_pkg:P") == tmp_path / "rel"
    assert import_root("h42_pkg.sub.mod:P") == tmp_path / "rel"
    assert import_root("h42_flat:P") == tmp_path / "flat"  # a module: its own folder
    assert (
        import_root("h42_flat:A:B") == tmp_path / "flat"
    )  # the module before the first colon, as load_policy reads it
    assert import_root("h42_empty:P") == Path("/e/f")  # no folder of its own as a package: its file's
    assert import_root("h42_none:P") == Path("/n")
    assert import_root("h42_nofile:P") is None
    assert import_root("h42_bare:P") is None
    assert import_root("h42_absent:P") is None  # not loaded
    assert import_root("h42_pkg") is None  # no colon: a shipped policy's name
    assert import_root("sys:path") is None  # built in


def test_a_repro_file_names_the_folder_of_its_policy_last_and_only_when_there_is_one() -> None:
    case, report = ran()
    without = repro_yaml(case.scenario, report, "pkg.mod:ATTR")
    text = repro_yaml(case.scenario, report, "pkg.mod:ATTR", Path("/a b/tests"))
    assert "policy_path" not in without
    reproduces = yaml.safe_load(text)["reproduces"]
    assert list(reproduces)[-1] == "policy_path"
    assert reproduces["policy_path"] == "/a b/tests"
    assert {k: v for k, v in reproduces.items() if k != "policy_path"} == yaml.safe_load(without)["reproduces"]


def test_a_repro_folder_writes_the_folder_its_users_policy_was_imported_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    case, report = ran()
    monkeypatch.setitem(sys.modules, "h42_user", _module("h42_user", __file__=str(tmp_path / "t" / "h42_user.py")))
    path = ReproFolder(tmp_path / "out").write(case.scenario, report, "h42_user:POLICY")
    assert path == tmp_path / "out" / "retry_new_key" / "seed-1" / "lost_response.yaml"
    assert path.read_text(encoding="utf-8") == repro_yaml(case.scenario, report, "h42_user:POLICY", tmp_path / "t")
    shipped = ReproFolder(tmp_path / "shipped").write(case.scenario, report, case.policy_spec)
    assert shipped.read_text(encoding="utf-8") == repro_yaml(case.scenario, report, case.policy_spec)


def test_replay_puts_a_repro_files_policy_folder_last_on_the_path_once_and_only_if_it_is_a_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.run.replay import replay

    case, report = ran()
    monkeypatch.setattr(sys, "path", list(sys.path))
    there = tmp_path / "tests"
    there.mkdir()
    (tmp_path / "a_file").write_text("")

    def replayed(policy_path: Path | None, name: str) -> list[str]:
        (tmp_path / "repros" / name).mkdir(parents=True)
        repro = tmp_path / "repros" / name / "lost_response.yaml"
        repro.write_text(repro_yaml(case.scenario, report, case.policy_spec, policy_path), encoding="utf-8")
        before = list(sys.path)
        result = replay(repro, supervised=False)
        assert result.differences == ()
        return sys.path[len(before) :] if sys.path[: len(before)] == before else ["changed", *sys.path]

    assert replayed(None, "none") == []
    assert replayed(there, "there") == [str(there)]
    assert sys.path.count(str(there)) == 1
    assert replayed(there, "again") == []  # already there: not added twice
    assert sys.path.count(str(there)) == 1
    assert replayed(tmp_path / "missing", "missing") == []
    assert replayed(tmp_path / "a_file", "a_file") == []


def test_beyond_three_unmet_faults_one_note_lists_them_a_line_each() -> None:
    """A safe policy over every shipped scenario never meets over a dozen declared faults: one note lists them (a
    line each, in the order found), not a dozen long lines; a fault of a scenario with harness errors keeps its own
    note after it. Three or fewer are said apart, as above."""
    unmet = [FaultCoverage(f"s{i}", 0, f"response_lost nth={i}", i - 1, 0) for i in range(1, 4)]
    event = FaultCoverage("s4", 1, "cancel at 5s", 0, 0, kind="operator")
    partly = FaultCoverage("s5", 0, "request_lost", 2, 0)
    done = {"s1": (3, 0), "s2": (3, 0), "s3": (3, 0), "s4": (3, 0), "s5": (2, 1)}
    apart = coverage_notes(Grid([*unmet, partly], done), "pol")  # type: ignore[arg-type]
    assert len(apart) == 4 and all(n.startswith("note: scenario s") for n in apart)
    assert coverage_notes(Grid([*unmet, event, partly], done), "pol") == [  # type: ignore[arg-type]
        "note: 3 declared faults and 1 declared operator event fired in no case of pol, so their scenarios tested "
        "nothing of them for this policy (a policy that never does what one waits for, a second request or a read, "
        "never meets it):\n"
        "  s1: fault response_lost nth=1 (its site was reached in 0 cases)\n"
        "  s2: fault response_lost nth=2 (its site was reached in 1 case)\n"
        "  s3: fault response_lost nth=3 (its site was reached in 2 cases)\n"
        "  s4: operator event cancel at 5s (its trigger came in 0 cases)",
        "note: scenario s5 declares fault request_lost, which fired in none of the 2 cases of pol that finished "
        "(its site was reached in 2 of them); not counted: 1 that ended in harness_error, whose coverage is unknown",
    ]
    one_kind = coverage_notes(Grid([*unmet, FaultCoverage("s4", 0, "crash", 0, 0)], done), "pol")  # type: ignore[arg-type]
    assert one_kind[0].startswith("note: 4 declared faults fired in no case of pol, so")
