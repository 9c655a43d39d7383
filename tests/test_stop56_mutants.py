"""Tests for the lines the forty-eighth mutation pass (tests/MUTANTS.md) found unpinned in d7eef2f..d47440a:
false_records under a hidden ledger where every dispatch was answered (what the false receipt's detail says, what
an absence contradicted by a rejected reply is called), the pytest plugin's ``--harness-baseline`` (a baseline
given as ``package.module:attr``, whose spec and name differ; the coverage notes kept beside the completion note)
and ``assert_recovers(baseline=...)`` with a policy object. Everything runs in this process: the grid's worker
processes are replaced by test_grid_mutants' in-process stand-in (a worker process would run the harness
unmutated). Each expectation is derived from the rule the code states."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import OPENING, SCENARIO_DIR, dispatch, history, recorded
from test_baseline import NEVER_RETRIES as THE_NEVER_RETRIES
from test_check_mutants import reply, run
from test_grid_mutants import Supervised  # the in-process stand-in for the worker processes
from test_policies import CONTRACT, INSIDE, OUTSIDE, situation

import harness.run.pool as pool
from harness.gate.cases import PolicyDoesNotRecover
from harness.gate.runner import assert_recovers, coverage_notes
from harness.policy import (
    AttemptView,
    CommandResult,
    ContractView,
    Escalate,
    FollowJob,
    LookUp,
    LookupView,
    RetryNewKey,
    RetrySameAction,
    Situation,
    VerifyOutcome,
    load_policy,
)
from harness.run import GridOptions, plan_cells, run_case, run_grid
from harness.run import load_grid as grid_of

pytest_plugins = ["pytester"]

SAFE = "reconcile_and_reauthorize"
#: Every run of pytest here leaves out the plugins it does not need.
QUIET = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-p", "no:xdist", "-p", "no:anyio")

NEVER_RETRIES = THE_NEVER_RETRIES.replace('name = "never_retries"', 'name = "never_retries_stop56"')


def scenario(name: str) -> str:
    """A shipped scenario's file, by its absolute path (the tests do not depend on the current folder)."""
    return str(SCENARIO_DIR / f"{name}.yaml")


@pytest.fixture(autouse=True)
def supervised(monkeypatch: pytest.MonkeyPatch) -> Supervised:
    fake = Supervised()
    monkeypatch.setattr(pool, "supervise", fake)
    return fake


@pytest.fixture
def never(policy_module: Callable[..., Path]) -> Path:
    """A folder holding the never-retrying policy's module (``tests_never_stop56:POLICY``, named
    ``never_retries_stop56``), on sys.path for the test."""
    return policy_module("tests_never_stop56", NEVER_RETRIES)


# -- false_records under a hidden ledger, every dispatch answered ----------------------------------------------------


def _hidden(*lines: str) -> list[tuple[str, tuple[int, ...], str]]:
    """The anomalies ``false_records`` finds with the destination's ledger withheld, after one dispatch (entry 4)."""
    found = run("false_records", history(OPENING + "\n".join([dispatch(0.0, 1), *lines]), visible=False))
    return [(a.kind, a.witnesses, a.detail) for a in found.anomalies]


def test_a_receipt_no_answered_dispatch_named_is_called_so() -> None:
    """Each dispatch answered, none ``applied`` under r9: the effect recorded under r9 is a false record, and its
    detail says the receipt, that it was recorded as applied, and why it is known to be false: no dispatch was
    answered applied under it, and each was answered."""
    assert _hidden(reply(0.5, 1, "applied", "r1"), recorded(20, "r9")) == [
        (
            "false_record",
            (6,),
            "a73: receipt r9 recorded as applied, but no dispatch of it was answered applied under it, and each "
            "was answered",
        )
    ]
    refused = _hidden(reply(0.5, 1, "refused"), recorded(20, "r1"))
    assert refused == [
        (
            "false_record",
            (6,),
            "a73: receipt r1 recorded as applied, but no dispatch of it was answered applied under it, and each "
            "was answered",
        )
    ]


def test_an_absence_after_a_rejected_reply_is_a_false_record() -> None:
    """Answered ``rejected`` (accepted first), heard or not: an absence recorded after that reply is a false record
    of kind ``false_record``, witnessed by the write and the reply, saying the dispatch was accepted."""
    absent = "30 controller absence_recorded action_id=a73 reason=x version=1"
    for rejected in (
        reply(12, 1, "rejected", "r1"),
        reply(12, 1, "rejected", "r1").replace(" receive ", " undeliverable "),
    ):
        assert _hidden(rejected, absent) == [
            ("false_record", (6, 5), "a73 recorded absent, but a dispatch of it was accepted (answered rejected)")
        ]


# -- the pytest plugin's --harness-baseline ---------------------------------------------------------------------


def _args(policy: str, *scenarios: str, seeds: int = 1) -> list[str]:
    args = [*QUIET, "--harness-policy", policy, "--harness-seed-count", str(seeds)]
    for s in scenarios:
        args += ["--harness-scenario", scenario(s)]
    return args


def test_a_baseline_given_as_module_attr_runs_by_its_spec(never: Path, pytester: pytest.Pytester) -> None:
    """``--harness-baseline tests_never_stop56:POLICY``: its cases are run from that spec (its name,
    never_retries_stop56, is no policy the harness could load), on the gated policy's cases; the correct policy
    completes every task the never-retrying one does, so every item passes, and the note names the baseline by
    its name."""
    result = pytester.runpytest_inprocess(
        *_args(SAFE, "request_lost", "lost_response"), "--harness-baseline", "tests_never_stop56:POLICY"
    )
    result.assert_outcomes(passed=2)
    mine = [run_case(c)[0] for c in grid_of([SAFE], [scenario("request_lost"), scenario("lost_response")], [1]).cases]
    theirs = [
        run_case(c)[0]
        for c in grid_of(
            ["tests_never_stop56:POLICY"], [scenario("request_lost"), scenario("lost_response")], [1]
        ).cases
    ]
    done = sum(r.metrics.get("task_completed") is True for r in mine)
    their_done = sum(r.metrics.get("task_completed") is True for r in theirs)
    assert their_done < done  # the never-retrying policy leaves request_lost undone
    result.stdout.fnmatch_lines(
        [
            f"note: the task ended completed in {done} of 2 cases, {their_done} of 2 with the baseline "
            f"never_retries_stop56 ({SAFE})"
        ]
    )


def test_the_coverage_notes_stay_beside_the_baseline_note(pytester: pytest.Pytester, tmp_path: Path) -> None:
    """A baseline adds its completion note to the session's notes; the notes of the faults that fired in no case
    stay. stop_on_timeout gives up before connector_no_record_yet's second delayed request: that fault fired in no
    case of it (the correct policy, the baseline here, never sends one either, so the session's one run of both
    policies notes it too)."""
    cases = [scenario("connector_no_record_yet")]
    alone = run_grid(
        plan_cells(["stop_on_timeout"], cases, [1], None, 1),
        GridOptions(out=tmp_path / "direct", tracking="none", report=False, isolate=False),
    )
    notes = coverage_notes(alone, "stop_on_timeout")
    assert notes
    result = pytester.runpytest_inprocess(
        *_args("stop_on_timeout", "connector_no_record_yet"), "--harness-baseline", SAFE
    )
    lines = result.outlines
    at = next(i for i, line in enumerate(lines) if "recovery harness: coverage" in line)
    assert lines[at + 1 : at + 1 + len(notes)] == notes
    completion = lines[at + 1 + len(notes)]
    assert completion.startswith("note: the task ended completed in ")
    assert completion.endswith(f" of 1 with the baseline {SAFE} (stop_on_timeout)")


# -- assert_recovers with a baseline given as a policy object --------------------------------------------------------


def test_assert_recovers_takes_a_baseline_object_by_its_spec(never: Path, tmp_path: Path) -> None:
    """``baseline`` is given as ``policy`` is: a policy object is found by its spec (a shipped policy's name, or
    ``module:attr``), and the baseline is run from it. The never-retrying policy leaves request_lost undone where
    the correct one, given as its object, completes it: that case fails as incomplete, with the command naming
    both by spec; the other way round, with the never-retrying policy's object as the baseline, every case
    passes."""
    with pytest.raises(PolicyDoesNotRecover) as failed:
        assert_recovers(
            "tests_never_stop56:POLICY",
            [scenario("request_lost")],
            seeds=[1],
            out=tmp_path / "r",
            baseline=load_policy(SAFE),
        )
    [failure] = failed.value.failures
    assert failure.outcome == "incomplete" and failure.name == "request_lost seed 1"
    assert f"--policy tests_never_stop56:POLICY --policy {SAFE} --scenario " in (failure.reproduce or "")
    other = sys.modules["tests_never_stop56"].POLICY
    verdicts = assert_recovers(SAFE, [scenario("request_lost"), scenario("lost_response")], seeds=[1], baseline=other)
    assert [v.status for v in verdicts] == ["passed", "passed"]


# -- the safe policies' revision-8 rule: a retry or a first read within the margin escalates -------------------------

FOLLOW = load_policy("follow_and_inspect")
CONNECTOR = ContractView(**{**CONTRACT.model_dump(), "via": "connector"})
MARGIN = "only 15 s left before the deadline, too little for an answer to come back"


def _connector(now: float, lookups: tuple[LookupView, ...] = (), *attempts: AttemptView) -> Situation:
    """The test_policies situation behind a connector, with these attempts in place of its one timed-out attempt."""
    base = situation(now=now, lookups=lookups, contract=CONNECTOR).model_dump()
    return Situation(**(base if not attempts else {**base, "attempts": [a.model_dump() for a in attempts]}))


def test_a_first_follow_of_the_job_within_the_margin_escalates() -> None:
    """Behind a connector, follow_and_inspect's first read of an unanswered attempt follows its job: a first read
    like any other, so within the margin it escalates, and a moment earlier it is sent. Every kind of read is one
    unless a wait came right before it: after a read it escalates, after a wait it is sent."""
    assert FOLLOW.decide(_connector(OUTSIDE)) == FollowJob()
    assert FOLLOW.decide(_connector(INSIDE)) == Escalate(reason=MARGIN)
    read_before = (LookupView(at_s=INSIDE - 10.0, effect="unknown"),)
    for read in (LookUp(), VerifyOutcome(), FollowJob()):
        assert FOLLOW.last_chance(_connector(INSIDE), read) == MARGIN
        assert FOLLOW.last_chance(_connector(OUTSIDE), read) is None
        after_read = _connector(INSIDE, read_before).model_copy(update={"last": CommandResult(kind=read.kind)})
        assert FOLLOW.last_chance(after_read, read) == MARGIN
        after_wait = after_read.model_copy(update={"last": CommandResult(kind="wait")})
        assert FOLLOW.last_chance(after_wait, read) is None


def test_a_new_key_retry_within_the_margin_escalates() -> None:
    """A job the connector reported dead is followed by a new operation (``RetryNewKey``) once the target shows the
    effect absent: a retry, decided on a read, so within the margin it escalates as a same-key retry does."""
    dead = AttemptView(
        execution_id="a73-x1",
        idempotency_key="a73",
        recorded_at_s=0.0,
        sent=True,
        sent_at_s=0.0,
        observation="response",
        response_status="unknown_outcome",
        replied_at_s=1.0,
    )
    absent = (LookupView(at_s=OUTSIDE - 0.2, sent_at_s=OUTSIDE - 1.0, effect="absent"),)
    # Leased to the deadline less the margin, as a same-key retry is (follow revision 11).
    leased = RetryNewKey(claim=True, send_by_s=120.0 - FOLLOW.escalate_margin_s)
    assert FOLLOW.decide(_connector(OUTSIDE, absent, dead)) == leased
    assert FOLLOW.decide(_connector(INSIDE, absent, dead)) == Escalate(reason=MARGIN)
    for retry in (RetryNewKey(claim=True), RetrySameAction(claim=True)):
        assert FOLLOW.last_chance(_connector(INSIDE, absent), retry) == MARGIN
        assert FOLLOW.last_chance(_connector(OUTSIDE, absent), retry) is None
