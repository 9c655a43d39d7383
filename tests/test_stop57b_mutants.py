"""Tests for the lines the fiftieth mutation pass (tests/MUTANTS.md) found unpinned in 573fca3..d3e2533: the
policies' revision-9 rule where ``send_by_s`` gives no moment (a retry-first check that only it then decides, a
lagging target, nothing sent), and the harness's lines listed in that pass. Everything runs in this process;
scenarios are given by their absolute path, so the current folder does not matter."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from conftest import SCENARIO_DIR
from test_baseline import NEVER_RETRIES
from test_grid_mutants import Supervised  # the in-process stand-in for the worker processes
from test_policies import CONTRACT, situation
from test_report_full_disk import fill_disk_at
from test_sim import controller_at
from test_tracking_mutants import _api

import harness.cli as cli
import harness.gate.runner as runner
import harness.plx.tracking as tracking
import harness.run.pool as pool
from harness.cli import main
from harness.gate.runner import Brief, PolicyDoesNotRecover, assert_recovers
from harness.model import RUN_RECORD, CaseReport
from harness.plx import DEFAULT_PROJECT
from harness.policy import LookupView, RetrySameAction, Situation, Wait
from harness.run import Cell, run_case
from harness.run.files import iter_reports
from harness.run.folder import Manifest
from harness.run.grid import GridOptions, Tracked, TrackingNote, run_grid, tracking_note
from harness.run.plan import load_grid, plan_cells
from harness.scenario import load_scenario
from policies.reconcile_and_reauthorize import POLICY as RECONCILE

pytest_plugins = ["pytester"]

SAFE = "reconcile_and_reauthorize"
#: Every run of pytest here leaves out the plugins it does not need.
QUIET = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-p", "no:xdist", "-p", "no:anyio")

# -- the policies' rule where the read gives no lease: the retry-first check decides alone --------------------------


def answered_before_the_read(window: float) -> Situation:
    """An attempt sent at 0 s and answered at 15 s, a read sent at 15 s that finds the target without it, 15.5 s
    now, requests valid for 60 s: no earlier request can land unseen after the read (``send_by_s`` is ``None``),
    so only the retry-first check (the original arriving as late as 60 s, inside the retry's window) decides."""
    contract = CONTRACT.model_copy(update={"dedupe_window_s": window})
    s = situation(lookups=(LookupView(at_s=15.2, sent_at_s=15.0, effect="absent"),), now=15.5, contract=contract)
    answered = s.attempts[0].model_copy(
        update={"observation": "response", "response_status": "error", "replied_at_s": 15.0}
    )
    return s.model_copy(update={"attempts": (answered,)})


@pytest.mark.parametrize(("window", "retries"), [(44.5, True), (44.25, False), (20.0, False)])
def test_a_retry_whose_window_cannot_outlast_a_late_original_waits_though_the_read_saw_every_attempt(
    window: float, retries: bool
) -> None:
    """The retry-first check alone: the original may arrive until 0 s + 60 s, and the retry's window, counted from
    15.5 s at the earliest, must reach that (44.5 s exactly does: ``<=``); shorter, the policy waits for the absence
    to be final. ``send_by_s`` gives no lease here, so the retry carries the deadline's only (revision 10)."""
    s = answered_before_the_read(window)
    assert RECONCILE.send_by_s(s, 15.0) is None
    assert RECONCILE.retry_is_safe(s, 15.0) is retries
    command = RECONCILE.decide(s)
    if retries:
        assert command == RetrySameAction(claim=True, send_by_s=s.deadline_s - RECONCILE.escalate_margin_s), command
    else:
        assert isinstance(command, Wait) and 15.5 + command.duration_s >= 60.0, command


def test_no_lease_where_the_target_s_reads_lag() -> None:
    """Where reads lag, a retry waits for a read caught up with every attempt (``caught_up_s``), so the read's
    moment gives no lease, even one that leaves the window of an original landing just after it unreached."""
    lagging = CONTRACT.model_copy(update={"lookup_lag_s": 5.0, "dedupe_window_s": 60.25})
    s = situation(lookups=(LookupView(at_s=15.2, sent_at_s=15.0, effect="absent"),), now=15.5, contract=lagging)
    assert RECONCILE.send_by_s(s, 15.0) is None
    assert RECONCILE.inside_unseen_window(s, 15.0) is True
    unlagged = s.model_copy(update={"contract": CONTRACT.model_copy(update={"dedupe_window_s": 60.25})})
    assert RECONCILE.send_by_s(unlagged, 15.0) == 15.25  # the same read without the lag: a lease, already past


def test_no_lease_when_nothing_was_sent() -> None:
    """No attempt reached the wire: no earlier request can land after the read, and a retry carries no lease."""
    s = situation(lookups=(LookupView(at_s=15.2, sent_at_s=15.0, effect="absent"),), now=15.5)
    unsent = s.model_copy(update={"attempts": (s.attempts[0].model_copy(update={"sent": False}),)})
    assert RECONCILE.reached_by_s(unsent) is None
    assert RECONCILE.send_by_s(unsent, 15.0) is None
    assert RECONCILE.inside_unseen_window(unsent, 15.0) is True


# -- harness push: the runs the server has already, skipped ------------------------------------------------------------


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, ...]]:
    """Polyaxon's clients replaced: the server has the project, run ``there`` already, not ``new1`` or ``new2``, and
    answers ``sick`` with 500; every call noted in order."""
    import polyaxon.client

    calls: list[tuple[str, ...]] = []

    class Projects:
        def __init__(self, **kwargs: Any) -> None:
            pass

        def refresh_data(self) -> None:
            pass

    class Runs:
        def __init__(self, **kwargs: Any) -> None:
            self.kwargs = kwargs

        def refresh_data(self) -> None:
            uuid = self.kwargs["run_uuid"]
            assert self.kwargs == {"owner": "acme", "project": "proj", "run_uuid": uuid, "is_offline": False}
            calls.append(("asked", uuid))
            if uuid == "sick":
                raise _api(500, "Internal Server Error")
            if uuid != "there":
                raise _api(404, "Not Found")

        @staticmethod
        def load_offline_run(**kwargs: Any) -> None:
            pass

    def push(client: Any, path: str) -> None:
        calls.append(("sent", client.kwargs["run_uuid"]))

    monkeypatch.setattr(polyaxon.client, "ProjectClient", Projects)
    monkeypatch.setattr(polyaxon.client, "RunClient", Runs)
    monkeypatch.setattr(tracking, "_push_offline_run", push)
    monkeypatch.setattr(tracking, "time", SimpleNamespace(sleep=lambda s: None))
    return calls


def test_a_push_that_skips_present_runs_asks_for_each_and_sends_the_rest(
    server: list[tuple[str, ...]], tmp_path: Path
) -> None:
    result = tracking.push_runs(tmp_path, ["new1", "there", "new2"], "acme/proj", skip_present=True)
    assert result == tracking.PushResult(("new1", "new2"), None, ("there",))
    assert server == [("asked", "new1"), ("sent", "new1"), ("asked", "there"), ("asked", "new2"), ("sent", "new2")]


def test_a_push_that_does_not_skip_asks_for_none(server: list[tuple[str, ...]], tmp_path: Path) -> None:
    """A run's own push (``skip_present`` off, its default) sends every run without asking the server first."""
    assert tracking.push_runs(tmp_path, ["new1", "there"], "acme/proj") == tracking.PushResult(("new1", "there"), None)
    assert server == [("sent", "new1"), ("sent", "there")]


def test_a_server_that_cannot_say_whether_it_has_a_run_stops_the_push(
    server: list[tuple[str, ...]], tmp_path: Path
) -> None:
    """Only a 404 means the run is not there: any other refusal is an error, with what was sent and skipped."""
    result = tracking.push_runs(tmp_path, ["there", "new1", "sick", "new2"], "acme/proj", skip_present=True)
    assert result == tracking.PushResult(("new1",), "ApiException: Internal Server Error", ("there",))
    assert server == [("asked", "there"), ("asked", "new1"), ("sent", "new1"), ("asked", "sick")]


def _offline_runs(out: Path, *uuids: str) -> None:
    for uuid in uuids:
        (tracking.offline_root(out) / "runs" / uuid).mkdir(parents=True)
    (tracking.offline_root(out) / "runs" / "not-a-run.json").write_text("{}")  # a file is no run


class Pushes(list[tuple[Path, list[str], str, bool]]):
    """How ``push_runs`` was called, each time; it answers ``answer``."""

    answer = tracking.PushResult(("b",), None, ("a",))


@pytest.fixture
def pushed(monkeypatch: pytest.MonkeyPatch) -> Pushes:
    """``push_runs`` replaced: notes how it was called, and answers as told."""
    calls = Pushes()

    def push(root: Path, uuids: Sequence[str], project: str, skip_present: bool = False) -> tracking.PushResult:
        calls.append((root, list(uuids), project, skip_present))
        return calls.answer

    monkeypatch.setattr(tracking, "push_runs", push)
    return calls


def test_harness_push_sends_a_folders_runs_in_order_skipping_those_there(
    pushed: Pushes, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _offline_runs(tmp_path, "b", "a")
    assert main(["push", str(tmp_path)]) == 0
    assert pushed == [(tmp_path / "polyaxon", ["a", "b"], DEFAULT_PROJECT, True)]
    assert capsys.readouterr() == (
        f"Polyaxon: 1 of 2 runs sent to project {DEFAULT_PROJECT} (1 the server had already)\n",
        "",
    )


def test_harness_push_sends_to_the_runs_own_project_from_its_manifest(
    pushed: Pushes, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _offline_runs(tmp_path, "a")
    manifest = Manifest((Cell("stop_on_timeout", "lost_response", (1,)),), 1, {"project": "acme/proj"}, {})
    (tmp_path / "manifest.json").write_text(manifest.to_json())
    pushed.answer = tracking.PushResult(("a",), None)
    assert main(["push", str(tmp_path)]) == 0
    assert pushed == [(tmp_path / "polyaxon", ["a"], "acme/proj", True)]
    assert capsys.readouterr().out == "Polyaxon: 1 of 1 run sent to project acme/proj\n"
    assert main(["push", str(tmp_path), "--project", "other"]) == 0  # given, it wins over the manifest's
    assert pushed[1][2] == "other"
    assert main(["push", str(tmp_path), "--project", "Not A Name"]) == 2
    assert len(pushed) == 2


def test_a_manifest_without_a_project_pushes_to_the_default(pushed: Pushes, tmp_path: Path) -> None:
    _offline_runs(tmp_path, "a")
    manifest = Manifest((Cell("stop_on_timeout", "lost_response", (1,)),), 1, {}, {})
    (tmp_path / "manifest.json").write_text(manifest.to_json())
    assert main(["push", str(tmp_path)]) == 0
    assert pushed[0][2] == DEFAULT_PROJECT


@pytest.mark.parametrize(("host", "project"), [(None, None), ("http://polyaxon:8000", "acme/proj")])
def test_a_push_that_fails_says_how_far_it_got_and_the_command_to_give_again(
    pushed: Pushes,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    host: str | None,
    project: str | None,
) -> None:
    if host is None:
        monkeypatch.delenv("POLYAXON_HOST", raising=False)
    else:
        monkeypatch.setenv("POLYAXON_HOST", host)
    out = tmp_path / "a run"
    _offline_runs(out, "a", "b", "c")
    pushed.answer = tracking.PushResult(("b",), "ConnectionError: refused", ("a",))
    assert main(["push", str(out), *(["--project", project] if project else [])]) == 3
    unset = "" if host else "; POLYAXON_HOST is not set: set it to the server's address"
    named = f" --project {project}" if project else ""
    assert capsys.readouterr() == (
        "",
        f"harness: could not send runs to Polyaxon (ConnectionError: refused{unset}); 1 of 3 runs sent to project "
        f"{project or DEFAULT_PROJECT} (1 the server had already); nothing local is lost: give the same command "
        f"again, and it sends the rest: python -m harness push '{out}'{named}\n",
    )


@pytest.mark.parametrize("runs_folder", [True, False])
def test_harness_push_refuses_a_folder_without_offline_runs(
    pushed: Pushes, tmp_path: Path, capsys: pytest.CaptureFixture[str], runs_folder: bool
) -> None:
    """No offline run: a runs folder holding only a file, or none at all."""
    if runs_folder:
        (tracking.offline_root(tmp_path) / "runs").mkdir(parents=True)
        (tracking.offline_root(tmp_path) / "runs" / "not-a-run.json").write_text("{}")
    assert main(["push", str(tmp_path)]) == 2
    runs = tmp_path / "polyaxon" / "runs"
    assert capsys.readouterr().err == (
        f"harness: {tmp_path}: holds no offline Polyaxon run ({runs} is missing or empty); fix: give a folder "
        "'harness run' or 'harness explore' wrote with --tracking offline (the default)\n"
    )
    assert pushed == []


# -- the claim's lease, at its edge ----------------------------------------------------------------------------------


def test_a_claim_made_at_its_lease_is_granted_and_one_made_after_it_refused() -> None:
    """``send_by_s`` is the latest moment the claim may be made: at it, granted; after it, refused, saying when."""
    env, controller = controller_at(load_scenario(SCENARIO_DIR / "lost_response.yaml"))
    env.run(until=7.0)
    assert controller.claim_if_revision("a73", 17, None, 7.0) is None
    assert controller.claim_if_revision("a73", 17, None, 6.9996) == (
        "made after 7.000 s, the latest moment the decision allowed it"  # said to the millisecond
    )
    assert controller.claim_if_revision("a73", 17, None, None) is None  # no lease: no bound


# -- harness report on a full disk: a heatmap that was there before is left --------------------------------------------


def test_a_page_that_cannot_be_written_leaves_the_heatmap_an_earlier_page_shows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The heatmap a failed page wrote is removed only when it is the failed page's own: one an earlier page beside
    it shows stays, as does that page."""
    monkeypatch.setattr(pool, "supervise", Supervised())
    run = tmp_path / "run"
    args = ["--policy", "retry_new_key", "--scenario", str(SCENARIO_DIR / "lost_response.yaml"), "--seed", "1"]
    assert main(["run", *args, "--tracking", "none", "--no-report", "--quiet", "--out", str(run)]) == 0
    page = tmp_path / "pages" / "p.html"
    assert main(["report", str(run), "--out", str(page)]) == 0
    before = page.read_bytes()
    fill_disk_at(page, monkeypatch)
    capsys.readouterr()
    assert main(["report", str(run), "--out", str(page)]) == 1
    assert capsys.readouterr().err.startswith(f"harness: cannot write a file ({page}): No space left on device")
    assert sorted(p.name for p in page.parent.iterdir()) == ["heatmap.png", "p.html"]
    assert page.read_bytes() == before


# -- the installed command: the folder it is run in first on the import path -----------------------------------------


def test_the_installed_command_puts_the_folder_it_is_run_in_first_and_exits_as_main(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", ["/elsewhere", *sys.path])
    seen: list[list[str]] = []

    def fake_main(argv: Sequence[str] | None = None) -> int:
        assert argv is None  # the command line, as main reads it
        seen.append(list(sys.path))
        return 7

    monkeypatch.setattr(cli, "main", fake_main)
    assert cli.script() == 7
    assert seen[0][:2] == [os.getcwd(), "/elsewhere"]


# -- --unfired, kept for a resume that runs the rest -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("unfired", "status", "said"), [("note", 0, "harness: note: scenario"), ("fail", 4, "harness: scenario")]
)
def test_a_stopped_run_resumed_says_an_unfired_fault_as_the_run_began(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    unfired: str,
    status: int,
    said: str,
) -> None:
    """A run stopped before its end (its run.json not written) and resumed: the manifest's ``--unfired`` says the
    unfired fault as a note or as the error, and sets the exit status."""
    monkeypatch.setattr(pool, "supervise", Supervised())
    out = tmp_path / "run"
    cell = ["--policy", "reconcile_and_reauthorize", "--scenario", str(SCENARIO_DIR / "retry_with_seconds_left.yaml")]
    given = [*cell, "--seed-count", "1", "--tracking", "none", "--no-report", "--quiet", "--unfired", unfired]
    assert main(["run", *given, "--out", str(out)]) == status
    (out / RUN_RECORD).unlink()
    (out / ".parts").mkdir()
    capsys.readouterr()
    assert main(["run", "--resume", str(out), "--quiet", "--no-report"]) == status
    err = capsys.readouterr().err
    assert err.startswith(f"{said} retry_with_seconds_left declares fault response_lost nth=2"), err


# -- the plugin's warning for its options given without --harness-policy -----------------------------------------------


def test_the_plugins_options_without_a_policy_are_warned_of_in_full_from_the_plugin(pytester: pytest.Pytester) -> None:
    """The whole warning, fix and all, and where it is said from: the plugin's own line, not pytest's machinery."""
    pytester.makepyfile(test_own="def test_own():\n    pass\n")
    ran = pytester.runpytest_inprocess(*QUIET, "--harness-case-timeout", "5")
    assert ran.ret == pytest.ExitCode.OK
    said = (
        "PytestConfigWarning: harness: --harness-case-timeout given without --harness-policy, so no case is "
        "collected and nothing is gated; fix: add --harness-policy SPEC (or drop them)"
    )
    [line] = [line for line in ran.outlines if said in line]
    assert line.strip().split(": ")[0].rsplit(":", 1)[0].endswith(str(Path("harness", "gate", "pytest_plugin.py")))


# -- the gate's briefs: what the notes and a baseline's comparison read --------------------------------------------


def test_an_incomplete_case_says_both_policies_and_the_scenario_by_their_revisions(
    policy_module: Callable[..., Path],
) -> None:
    """The brief keeps each report's revisions: the failure's text names them, as it did from the reports."""
    policy_module("tests_never_stop57b", NEVER_RETRIES)
    with pytest.raises(PolicyDoesNotRecover) as failed:
        assert_recovers(
            "tests_never_stop57b:POLICY", [str(SCENARIO_DIR / "request_lost.yaml")], seeds=[1], baseline=SAFE
        )
    [failure] = failed.value.failures
    scenario_revision = load_scenario(SCENARIO_DIR / "request_lost.yaml").revision
    first, second = (failure.text or "").splitlines()[:2]
    assert first.startswith(f"never_retries (revision 13) on request_lost (revision {scenario_revision}) at seed 1: ")
    assert first.endswith(", task_completed false")
    assert second.startswith(f"{SAFE} (revision 13), the baseline, on the same case: ")


def brief(seed: int, escalations_most: int) -> Brief:
    return Brief("p", "1", "s", "1", seed, "escalated", False, escalations_most)


def test_an_action_escalated_exactly_twice_is_noted() -> None:
    """More than once is twice already; once is not noted."""
    twice = {("p", "s", 1): brief(1, 2), ("p", "s", 2): brief(2, 1)}
    assert runner._escalated_again(twice) == (
        "note: p escalated one action more than once in 1 of 2 cases (not a failure: each escalation stands), 2 times "
        "at most (s seed 1); once handed over, an action is its owner's"
    )
    assert runner._escalated_again({("p", "s", 2): brief(2, 1)}) is None


# -- the offline runs' note: the push command, the project named only when it is not the default ------------------


def test_the_offline_note_names_no_project_for_the_default(tmp_path: Path) -> None:
    runs = [Tracked("u1", "succeeded")]
    assert tracking_note("offline", DEFAULT_PROJECT, tmp_path, runs) == TrackingNote(
        True,
        f"Polyaxon: 1 offline run in {tmp_path / 'polyaxon'}; browse: python -m harness view {tmp_path}; send to a "
        f"server: python -m harness push {tmp_path}",
    )


# -- a run's cases read back: a case in a compact record and in a recovery.json is read once, from the file --------


def test_each_case_is_read_once_and_a_failing_one_from_its_recovery_json(tmp_path: Path) -> None:
    """Compact records hold every case; a failing case's recovery.json too: read once each, the failing ones from
    their recovery.json (which ``read_reports`` keeps as well)."""
    cells = load_grid(["retry_new_key"], [str(SCENARIO_DIR / "lost_response.yaml")], list(range(1, 9)))
    plan = plan_cells(cells.policies, [str(SCENARIO_DIR / "lost_response.yaml")], list(range(1, 9)), None, 1)
    options = GridOptions(out=tmp_path / "run", tracking="none", report=False, records="compact", isolate=False)
    out = run_grid(plan, options).out
    files = [CaseReport.model_validate_json(p.read_bytes()) for p in (out / "cases").rglob("recovery.json")]
    assert files  # some case failed, and has its file beside the records
    read = list(iter_reports(out))
    assert sorted(r.seed for r in read) == list(range(1, 9))
    by_key = {(r.policy, r.scenario, r.seed): r for r in read}
    assert all(by_key[(r.policy, r.scenario, r.seed)] == r for r in files)


def test_a_brief_counts_the_escalations_of_each_action_apart() -> None:
    """Two actions escalated once each (an older write and a newer one on one target, say) are not one action
    escalated twice; one action escalated twice is."""
    grid = load_grid([SAFE], [str(SCENARIO_DIR / "uncertain_lookup.yaml")], [1])
    report = run_case(grid.cases[0])[0]
    [once] = [e for e in report.timeline if e.event == "escalated"]
    assert Brief.of(report).escalations_most == 1
    other = once.model_copy(update={"index": once.index + 1, "data": {**once.data, "action_id": "a74"}})
    assert Brief.of(report.model_copy(update={"timeline": (*report.timeline, other)})).escalations_most == 1
    again = once.model_copy(update={"index": once.index + 1})
    assert Brief.of(report.model_copy(update={"timeline": (*report.timeline, again)})).escalations_most == 2
    brief = Brief.of(report)
    assert (brief.policy, brief.policy_revision, brief.scenario, brief.seed) == (SAFE, "13", "uncertain_lookup", 1)
    assert brief.scenario_revision == report.scenario_revision and brief.task_completed is report.metrics.get(
        "task_completed"
    )
