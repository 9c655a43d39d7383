"""Tests for the lines an adversarial review's and a first-time user's mending changed (d97ca50, 1fcdccb, bb29e8c,
9de71b1) that the forty-sixth mutation pass found unpinned (tests/MUTANTS.md): a retry decided before its
do-not-replay error arrived (the checker and the auditor), a property violated with its count unknown (the
frame's ``violated`` column and the tables that read it), the rate of several outcomes, the run's progress over
a scenario of variants, and the page a report names. Each test states the rule it checks and derives what the
code must say from it; all run in process, function-scoped."""

from __future__ import annotations

import sys
import types
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from conftest import OPENING, dispatch, history
from test_tables_mutants import case, frame

from harness.check.facts import facts
from harness.check.registry import METRICS, PROPERTIES, by_name
from harness.model import OUTCOMES, PASSING, Artifact, Evidence
from harness.model.commands import (
    DISPATCHING,
    Command,
    LookUp,
    ResendCurrentArguments,
    RetryNewKey,
    RetrySameAction,
    VerifyOutcome,
)
from harness.model.events import CommandGiven
from harness.present.analysis import (
    _columns,
    _counted,
    _row,
    metric_table,
    policy_verdicts,
    rate_table,
    rates,
    undecided,
    undecided_cases,
    violated_in,
)
from harness.sim.auditor import Auditor

# --- the checker: a retry decided before the caller was told ------------------------------------------------------


def reply(at: float, n: int, status: str, kind: str = "dispatch") -> str:
    execution = f"a73-x{n}" if kind == "dispatch" else "none"
    return (
        f"{at} transport receive kind={kind} n={n} action_id=a73 execution_id={execution} status={status} "
        "receipt_id=none"
    )


def decided(command: Command | None = None, action: str = "a73") -> tuple[str, Command]:
    """A marker line: the policy's command for ``action`` (a retry of the same key unless said), given here."""
    return (action, command if command is not None else RetrySameAction())


def told_history(*lines: str | tuple[str, Command]) -> Evidence:
    """OPENING (entries 0 to 3), then ``lines`` in order, each an entry: a text line, or a command given (a
    ``CommandGiven`` at the time of the entry before it)."""
    text = [line for line in lines if isinstance(line, str)]
    parsed = list(history(OPENING + "\n".join(text)).history)
    entries = parsed[:4]
    rest = iter(parsed[4:])
    for line in lines:
        if isinstance(line, str):
            entries.append(next(rest))
        else:
            action, command = line
            entries.append(CommandGiven(at_s=entries[-1].at_s, action_id=action, command=command, incarnation=1))
    ev = history(OPENING)
    return replace(ev, history=tuple(replace(e, index=i) for i, e in enumerate(entries)))


def retries(ev: Evidence) -> tuple[int | None, list[tuple[int, ...]]]:
    found = by_name("retries_after_uncertain").function(facts(ev))
    return found.value, [a.witnesses for a in found.anomalies]


def test_the_commands_that_send_the_action_again_are_the_three_retries() -> None:
    """``DISPATCHING``: the kinds of the commands that are decided, then sent: both retries and the resend of the
    current arguments; not a read, a record, a hold, a wait, an escalation or a stop."""
    assert {"retry_same_action", "retry_new_key", "resend_current_arguments"} == DISPATCHING


@pytest.mark.parametrize("command", [RetrySameAction(), RetryNewKey(), ResendCurrentArguments()])
def test_a_retry_decided_before_the_caller_was_told_is_no_retry_after_uncertain(command: Command) -> None:
    """The rule (``retries_after_uncertain``): a dispatch decided before the caller was told "do not replay" was
    on its way already (sent ``worker.retry_send_s`` after), so no read could have come between: no retry after
    an uncertain outcome, whichever command sends it. Decided after being told, with no read between, it is one,
    witnessed by the telling and the dispatch."""
    before = told_history(dispatch(0.0, 1), decided(command), reply(1.0, 1, "connection_error"), dispatch(2.0, 2))
    assert retries(before) == (0, [])
    after = told_history(dispatch(0.0, 1), reply(1.0, 1, "connection_error"), decided(command), dispatch(2.0, 2))
    assert retries(after) == (1, [(5, 7)])


@pytest.mark.parametrize(
    "earlier",
    [decided(action="a74"), decided(VerifyOutcome()), decided(LookUp())],
    ids=["another action's retry", "a verification", "a lookup"],
)
def test_only_a_decision_to_send_this_action_again_excuses_its_dispatch(earlier: tuple[str, Command]) -> None:
    """The decision that excuses a dispatch is this action's, and one that sends it (``DISPATCHING``): another
    action's retry, or a read of this one, decided before the caller was told, leaves the dispatch after the
    telling a retry after an uncertain outcome."""
    ev = told_history(dispatch(0.0, 1), earlier, reply(1.0, 1, "connection_error"), dispatch(2.0, 2))
    assert retries(ev) == (1, [(6, 7)])


def test_the_decision_a_dispatch_is_judged_by_is_the_last_one_before_it() -> None:
    """A decision before the telling, then another after it, then the dispatch: it was decided after being told
    (the last decision before it), a retry after an uncertain outcome. A decision after the dispatch excuses
    nothing."""
    ev = told_history(dispatch(0.0, 1), decided(), reply(1.0, 1, "connection_error"), decided(), dispatch(2.0, 2))
    assert retries(ev) == (1, [(6, 8)])
    late = told_history(dispatch(0.0, 1), reply(1.0, 1, "connection_error"), dispatch(2.0, 2), decided())
    assert retries(late) == (1, [(5, 6)])


def test_the_dispatch_after_the_excused_one_is_judged_again() -> None:
    """The excused dispatch is the one on its way when the caller was told; the next one, decided after the
    telling with no read between, is a retry after an uncertain outcome (the comment: "The next one can")."""
    ev = told_history(
        dispatch(0.0, 1),
        decided(),
        reply(1.0, 1, "connection_error"),
        dispatch(2.0, 2),
        decided(),
        dispatch(3.0, 3),
    )
    assert retries(ev) == (1, [(6, 9)])


# --- the auditor: the same rule, judged as it happens --------------------------------------------------------------


class _Controller:
    """Stands in for the controller: every dispatch authorized, no cancellation."""

    class task:
        cancel_requested = False

    def authorized_now(self, action_id: str) -> bool:
        return True


ARTIFACT = Artifact(operation="activate", target="staging/fraud", model="m7", digest="d7")


def audited(*steps: str | tuple[str, str | None]) -> int:
    """The auditor's count of retries after an uncertain outcome for action a73 after ``steps``: ``"decide"``
    (its worker decided to send it again), ``"send"`` (a dispatch leaves, carrying out that worker's last decision
    not yet sent, if any), ``"B decides"`` and ``"B sends"`` (the same, by a second worker recovering a73 beside
    the first), ``"other decides"`` (a74's worker decided), or a reply (kind, status) that reached the caller."""
    auditor = Auditor(120.0)
    auditor.watch(_Controller())  # type: ignore[arg-type]
    auditor.action_recorded("a73")
    auditor.action_recorded("a74")
    decided: dict[str, int | None] = {}
    for n, step in enumerate(steps, start=1):
        worker = "B" if isinstance(step, str) and step.startswith("B ") else "A"
        if step in ("decide", "B decides"):
            decided[worker] = auditor.decided_dispatch("a73")
        elif step == "other decides":
            auditor.decided_dispatch("a74")
        elif step in ("send", "B sends"):
            auditor.dispatched("a73", n, "a73", ARTIFACT, decided.pop(worker, None))
        else:
            assert isinstance(step, tuple)
            kind, status = step
            auditor.reply_reached_caller("a73", kind, status, n)  # type: ignore[arg-type]
    return auditor.retries_after_uncertain


ERROR = ("dispatch", "connection_error")


def test_the_auditor_counts_a_dispatch_decided_after_the_caller_was_told() -> None:
    """The rule (``Auditor.dispatched``): a dispatch while the caller is uncertain counts, unless it was decided
    before the caller was told; one never decided (no decision noted) counts."""
    assert audited("send", "decide", ERROR, "send") == 0
    assert audited("send", ERROR, "decide", "send") == 1
    assert audited("send", ERROR, "send") == 1
    assert audited("send", "decide", "send") == 0  # never told: nothing to count


def test_the_auditor_dates_the_telling_from_the_first_uncertain_reply() -> None:
    """``told_at`` is when the caller was first told since the last read that settled it: a second uncertain
    reply after the decision does not move it, so the dispatch decided between the two counts."""
    assert audited("send", ERROR, "decide", ERROR, "send") == 1
    assert audited("send", ERROR, "decide", ("lookup", "unknown_outcome"), "send") == 1


def test_the_auditor_dates_a_telling_after_a_settling_read_anew() -> None:
    """A read that settles the doubt ends it; a later telling is dated anew, so a dispatch decided before that
    telling (and after the first) was on its way: it does not count."""
    settled = ("lookup", "absent")
    assert audited("send", ERROR, settled, "decide", ("lookup", "unknown_outcome"), "send") == 0
    assert audited("send", ERROR, settled, ("lookup", "unknown_outcome"), "decide", "send") == 1


def test_the_auditor_orders_tellings_and_decisions_by_one_count_of_steps() -> None:
    """Replies and decisions are dated on one count, each step after the one before: replies that changed
    nothing, then a decision, then the telling: the decision came first, and the dispatch does not count. Another
    action's decision is not this one's."""
    running = ("lookup", "running")
    assert audited(running, running, running, "decide", ERROR, "send") == 0
    assert audited(running, running, running, ERROR, "decide", "send") == 1
    assert audited("send", "decide", "decide", ERROR, "send") == 0
    assert audited("send", "decide", ERROR, "other decides", "send") == 0
    assert audited("send", ERROR, "other decides", "send") == 1


def test_the_auditor_judges_a_dispatch_by_its_own_decision() -> None:
    """Two workers recovering a73 side by side: one decides a retry, the caller is told "do not replay", then the
    other decides one (its claim to be refused, so it sends nothing): the first worker's dispatch was decided before
    the telling and does not count, whatever was decided since. The second worker's, had it left, would."""
    assert audited("send", "decide", ERROR, "B decides", "send") == 0
    assert audited("send", "decide", ERROR, "B decides", "send", "B sends") == 1
    assert audited("send", "B decides", ERROR, "decide", "B sends") == 0


# --- the frame's violated column and the tables that read it --------------------------------------------------------

NAMES = [m.name for m in PROPERTIES]


def test_a_rows_violated_cell_names_the_properties_its_checks_judged_false_in_the_registrys_order() -> None:
    """The rule (``_row``): ``violated`` names each property whose check is ``false`` (not ``unknown``, not
    ``true``), in the registry's order whatever the order of the case's checks, joined by ", "; a case without
    checks names none."""
    first, second, third = NAMES[0], NAMES[1], NAMES[2]
    data: dict[str, Any] = {
        "policy": "p",
        "policy_revision": "r1",
        "scenario": "s",
        "scenario_revision": "r1",
        "seed": 1,
        "task_id": "t",
        "action_id": "a",
        "outcome": "incorrect",
        "verdict": "false",
        "metrics": {},
        "checks": {third: "false", second: "unknown", first: "false", "task_completed": "false"},
    }
    assert _row(data, "run", "x/recovery.json")["violated"] == f"{first}, {third}"
    assert _row({**data, "checks": None}, "run", "x/recovery.json")["violated"] == ""
    assert _row({k: v for k, v in data.items() if k != "checks"}, "run", "x/recovery.json")["violated"] == ""
    assert _columns().index("violated") == _columns().index("unknown_metrics") - 1


def test_violated_in_reads_each_name_of_a_cell_whole() -> None:
    """``violated_in(frame, name)``: per case, whether its ``violated`` cell names ``name``, one of the names it
    joins by ", " (not a part of one), a missing cell naming none; a boolean series."""
    first, second = NAMES[0], NAMES[1]
    cases = frame(
        case(seed=1, violated=f"{first}, {second}"),
        case(seed=2, violated=second),
        case(seed=3, violated=None),
        case(seed=4, violated=""),
    )
    assert violated_in(cases, second).tolist() == [True, True, False, False]
    assert violated_in(cases, first).tolist() == [True, False, False, False]
    assert violated_in(cases, first[:-1]).tolist() == [False] * 4
    assert violated_in(cases, first).dtype == bool


def test_a_case_is_undecided_by_any_property_it_left_unknown_and_did_not_judge_violated() -> None:
    """The rule (``undecided``): a property the ``unknown_metrics`` cell lists leaves the case undecided unless the
    ``violated`` cell names it (each name whole, among several); a measure does not; ``*`` does."""
    first, second = NAMES[0], NAMES[1]
    assert undecided(f"{first}, {second}", f"{second}, {first}") is False
    assert undecided(f"{first}, {second}", first) is True
    assert undecided(second, f"{first}, {second}") is False
    assert undecided(first) is True and undecided("task_completed") is False
    assert undecided("*", f"{first}, {second}") is True and undecided("") is False


def test_undecided_cases_counts_the_cases_without_a_violated_column_too() -> None:
    """``undecided_cases``: how many cases ``undecided`` holds of, reading each case's own ``violated`` cell (a
    missing one names none), and every unknown property undecided in a frame without that column (an older
    frame, one built by hand)."""
    first, second = NAMES[0], NAMES[1]
    cases = frame(
        case(seed=1, unknown_metrics=first, violated=first),
        case(seed=2, unknown_metrics=first, violated=None),
        case(seed=3, unknown_metrics=f"{first}, {second}", violated=first),
        case(seed=4, unknown_metrics="", violated=second),
        case(seed=5, unknown_metrics=second, violated=second),
    )
    assert undecided_cases(cases) == 2
    assert undecided_cases(cases.drop(columns="violated")) == 4
    assert undecided_cases(cases.iloc[:0]) == 0


def test_a_policys_violated_properties_include_those_judged_with_their_count_unknown() -> None:
    """``policy_verdicts``' violated: each property a case counted above zero or judged violated with its count
    unknown, in the registry's order, per policy; "-" for a policy with none."""
    first, second, third = NAMES[0], NAMES[1], NAMES[2]
    cases = frame(
        case("p", "s", 1, "incorrect", **{third: None, "violated": third, "unknown_metrics": third}),
        case("p", "s", 2, "incorrect", **{first: 2, "violated": first}),
        case("q", "s", 1, "unresolved", **{second: None, "unknown_metrics": second}),
        case("r", "s", 1, "incorrect", **{second: None, "violated": second, "unknown_metrics": second}),
    )
    assert policy_verdicts(cases)["violated"].tolist() == [f"{first}, {third}", "-", second]


def test_a_metric_cell_counts_the_violated_apart_from_the_merely_unknown() -> None:
    """The rule (``metric_table``): of the cases that left a property's count unknown, those judged violated
    read ``violated xN, count unknown`` (all unknown) or ``N violated, count unknown`` beside known values; the
    rest ``unknown xN`` or ``N unknown``. A case judged violated whose count is known is no unknown count."""
    name = "duplicate_effects"
    witnessed = {name: None, "violated": name, "unknown_metrics": name, "outcome": "incorrect"}
    merely = {name: None, "unknown_metrics": name, "outcome": "unresolved"}
    cases = frame(
        case("p", "all witnessed", 1, **witnessed),
        case("p", "all witnessed", 2, **witnessed),
        case("p", "all witnessed", 3, **witnessed),
        case("p", "mixed", 1, **witnessed),
        case("p", "mixed", 2, **merely),
        case("p", "mixed", 3, **merely),
        case("p", "known", 1, **{name: 2, "violated": name}),
        case("p", "known", 2, **witnessed),
        case("p", "known", 3, **merely),
        case("p", "known", 4, **merely),
        case("p", "known, counted", 1, **{name: 1, "violated": name}),
        case("p", "known, counted", 2, **{name: 3, "violated": name}),
        case("p", "merely", 1, **merely),
        case("p", "merely", 2, **merely),
    )
    table = metric_table(cases, name)
    assert table.loc["p"].to_dict() == {
        "all witnessed": "violated x3, count unknown",
        "mixed": "violated x1, count unknown · unknown x2",
        "known": "2 · 1 violated, count unknown · 2 unknown",
        "known, counted": "2 (1-3)",
        "merely": "unknown x2",
    }


def test_a_measure_has_no_violated_count_whatever_a_violated_cell_says() -> None:
    """A measure is no property: its unknown cases are merely unknown, whatever a case's ``violated`` cell names
    (the column speaks of properties only)."""
    measure = next(m.name for m in METRICS if m.name not in NAMES and m.value == "count")
    cases = frame(
        case("p", "s", 1, **{measure: None, "violated": measure, "unknown_metrics": measure}),
        case("p", "s", 2, **{measure: 4}),
    )
    assert metric_table(cases, measure).loc["p", "s"] == "4 · 1 unknown"


# --- the rate of one outcome or of several -----------------------------------------------------------------------


def test_counted_names_the_outcomes_in_their_own_order_and_refuses_one_no_case_can_have() -> None:
    """The rule (``_counted``): one outcome is its own column; several, in the outcomes' order whatever order
    they are given in, joined by " or "; an outcome that is none (the first such named, repr'd) or none at all is
    refused, listing the outcomes."""
    assert _counted("escalated") == ("escalated", ("escalated",))
    assert _counted(("escalated",)) == ("escalated", ("escalated",))
    assert _counted(["escalated", "correct"]) == ("correct or escalated", ("correct", "escalated"))
    assert _counted(PASSING) == ("correct or escalated", ("correct", "escalated"))
    assert _counted(iter(OUTCOMES[::-1])) == (" or ".join(OUTCOMES), tuple(OUTCOMES))
    listed = ", ".join(OUTCOMES)
    with pytest.raises(ValueError) as caught:
        _counted(["correct", "safe", "done"])
    assert str(caught.value) == f"outcome 'safe' is not an outcome; the outcomes: {listed}"
    with pytest.raises(ValueError) as caught:
        _counted([])
    assert str(caught.value) == f"outcome () is not an outcome; the outcomes: {listed}"


def test_rates_of_several_outcomes_count_each_case_once_in_one_column() -> None:
    """``rates(frame, PASSING)``: the hits are the cases of any outcome given, in a column named for them all;
    the rate, interval and pass^k follow from them; unknown counts the undecided cases only."""
    first = NAMES[0]
    cases = frame(
        case(seed=1, outcome="escalated"),
        case(seed=2, outcome="correct"),
        case(seed=3, outcome="incorrect", **{first: None, "violated": first, "unknown_metrics": first}),
        case(seed=4, outcome="unresolved", **{first: None, "unknown_metrics": first}),
    )
    [row] = rates(cases, PASSING, k=2).to_dict("records")
    assert list(row) == [
        "policy",
        "scenario",
        "cases",
        "correct or escalated",
        "rate",
        "wilson_low",
        "wilson_high",
        "pass^2",
        "unknown",
    ]
    assert (row["cases"], row["correct or escalated"], row["rate"], row["pass^2"], row["unknown"]) == (
        4,
        2,
        0.5,
        1 / 6,
        1,
    )
    [alone] = rates(cases).to_dict("records")
    assert (alone["correct"], alone["pass^3"]) == (1, 0.0)
    table = rate_table(cases, PASSING)
    assert table.loc["p", "s"] == "2/4 · 1 unknown"
    with pytest.raises(ValueError, match="outcome 'passing' is not an outcome"):
        rate_table(cases.iloc[:0], "passing")  # refused even with nothing to rate


# --- the run's progress over a scenario of variants ---------------------------------------------------------------


def test_a_runs_progress_counts_each_case_of_a_scenario_of_variants(tmp_path: Path) -> None:
    """The rule (``_complete``): a scenario of variants (connector_crash_points, one case per boundary a seed) is
    that many cases a seed, in the cases to do and in those done as each piece ends; the count is each piece's
    cases as it wrote them."""
    from harness.run import GridOptions, plan_cells, run_grid
    from harness.run.grid import Progress

    seen: list[tuple[Progress, int]] = []
    plan = plan_cells(["stop_on_timeout"], ["connector_crash_points", "lost_response"], [1, 2], None, 1)
    options = GridOptions(tracking="none", report=False, isolate=False, out=tmp_path / "run")
    run_grid(plan, options, progress=lambda p, job, result: seen.append((p, result.cases)))
    written = [cases for _, cases in seen]
    assert written[1] == 2 and written[0] > 2  # lost_response is a case a seed; the crash points more
    assert [(p.pieces_done, p.pieces, p.cases_done, p.cases) for p, _ in seen] == [
        (1, 2, written[0], sum(written)),
        (2, 2, sum(written), sum(written)),
    ]


# --- the page a report names, a folder in use, the viewer -------------------------------------------------------------


def test_a_report_written_elsewhere_names_its_own_page_when_it_is_done(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``harness report --out mine.html`` says ``writing mine.html`` once every file is read (it said
    report.html); without --out, report.html. The progress is made for the page the report writes."""
    import harness.run.pictures as pictures
    from harness import cli
    from harness.present.analysis import Reading

    given: list[Any] = []

    def write_report(run_dir: Path, out: Path | None, *, draw: Any, tell: Any, progress: Any) -> Path:
        given.append(progress)
        page = out if out is not None else run_dir / "report.html"
        page.write_text("page")
        return page

    module = types.ModuleType("harness.present.html_report")
    module.write_report = write_report  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "harness.present.html_report", module)
    monkeypatch.setattr(pictures, "draw_timelines", lambda paths, concurrency: None)
    run = tmp_path / "run"
    run.mkdir()
    assert cli.main(["report", str(run), "--out", str(tmp_path / "mine.html")]) == 0
    assert cli.main(["report", str(run)]) == 0
    assert [(type(p), p.page, p.every_s) for p in given] == [
        (cli._ReadingLines, "mine.html", cli.READING_EVERY_S),
        (cli._ReadingLines, "report.html", cli.READING_EVERY_S),
    ]
    capsys.readouterr()
    for progress in given:
        progress(Reading(files_read=1, files=2, cases=1, elapsed_s=10.0))
        progress(Reading(files_read=2, files=2, cases=2, elapsed_s=11.0))
    said = capsys.readouterr().err.splitlines()
    assert said == [
        "harness: report: read 1 of 2 files, 1 case, in 10 s",
        "harness: report: read 2 of 2 files, 2 cases, in 11 s; writing mine.html",
        "harness: report: read 1 of 2 files, 1 case, in 10 s",
        "harness: report: read 2 of 2 files, 2 cases, in 11 s; writing report.html",
    ]
    assert cli._ReadingLines().page == "report.html"
