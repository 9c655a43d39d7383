"""Tests for the lines the fifty-first mutation pass (tests/MUTANTS.md) found unpinned in 3aeb0ea..8c3999b: a
check's folder refused in process (``is_check``, ``checked_here``, ``resume_grid``), the early outcome table,
``--maxfail``'s count and note, ``cut_keeping_place``'s edges, a bridge call that lands after its error, and the
plugin's scratch file. Everything runs in this process; scenarios are given by their absolute path, so the current
folder does not matter."""

from __future__ import annotations

import io
import json
import os
from collections import Counter
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from conftest import SCENARIO_DIR
from test_grid_mutants import Supervised  # the in-process stand-in for the worker processes
from test_sim import with_changes

import harness.run.files as files
import harness.run.pool as pool
from harness.cli import _EarlyTable, main
from harness.errors import cut_keeping_place
from harness.gate.runner import CheckOptions, CheckSummary, _CountFailures, _Enough, _stopped_early
from harness.model.commands import Escalate, RetrySameAction, Wait
from harness.model.events import CallReplayed
from harness.policy import Command, Situation
from harness.present.table import outcome_table
from harness.run import GridOptions, plan_cells, run_grid
from harness.run.files import check_writable_folder
from harness.run.folder import MANIFEST, RUN_RECORD, is_check, not_empty
from harness.run.grid import resume_grid
from harness.run.plan import UsageError
from harness.scenario import load_scenario
from harness.sim import simulate

pytest_plugins = ["pytester"]

LOST = str(SCENARIO_DIR / "lost_response.yaml")


@pytest.fixture(autouse=True)
def supervised(monkeypatch: pytest.MonkeyPatch) -> Supervised:
    fake = Supervised()
    monkeypatch.setattr(pool, "supervise", fake)
    return fake


# -- a check's folder: marked in its manifest, refused by the same check again and by run --resume ------------------


def _checked_folder(out: Path, check: bool = True) -> Path:
    plan = plan_cells(["stop_on_timeout"], [LOST], [1], None, 1)
    run_grid(plan, GridOptions(out=out, tracking="none", report=False, check=check))
    return out


def _refusal(out: Path, stopped: bool) -> str:
    held = "the cases of a check" + (" that was stopped before its end" if stopped else "")
    return (
        f"--out {out}: holds {held}, and a check is not resumable; fix: run the check again with a new or empty --out"
    )


def test_a_checks_folder_is_refused_whole_or_stopped_and_by_resume(tmp_path: Path) -> None:
    """The manifest's options say ``check``: ``not_empty`` (the same check again) and ``resume_grid`` (``run
    --resume``) both refuse the folder with the one line naming it, whole, or stopped before its end while its
    ``.parts`` remain; a plain run's folder is no check's."""
    out = _checked_folder(tmp_path / "check")
    assert json.loads((out / MANIFEST).read_text(encoding="utf-8"))["options"]["check"] is True
    assert is_check(out) and (out / RUN_RECORD).is_file()
    assert not_empty(out) == _refusal(out, stopped=False)
    (out / ".parts").mkdir(exist_ok=True)
    assert not_empty(out) == _refusal(out, stopped=True)
    with pytest.raises(UsageError) as refused:
        resume_grid(out)
    assert str(refused.value) == _refusal(out, stopped=True)
    (out / ".parts").rmdir()
    (out / RUN_RECORD).unlink()  # a check stopped before run.json: stopped, though no .parts
    assert not_empty(out) == _refusal(out, stopped=True)
    plain = _checked_folder(tmp_path / "plain", check=False)
    assert not is_check(plain) and not_empty(plain).endswith("holds a complete run; fix: give a new or empty folder")


@pytest.mark.parametrize(
    "manifest",
    [None, "not json", '["options"]', '{"options": ["check"]}', '{"options": {"check": "true"}}', '{"check": true}'],
)
def test_a_manifest_that_does_not_say_check_in_its_options_is_no_checks(tmp_path: Path, manifest: str | None) -> None:
    """Only ``options.check`` being ``true`` marks a check: no manifest, one that is not JSON, not an object,
    options that are not an object, a check that is not the boolean, or ``check`` outside the options do not."""
    if manifest is not None:
        (tmp_path / MANIFEST).write_text(manifest, encoding="utf-8")
    assert is_check(tmp_path) is False
    (tmp_path / MANIFEST).write_text('{"options": {"check": true}}', encoding="utf-8")
    assert is_check(tmp_path) is True


# -- the early outcome table ----------------------------------------------------------------------------------------


COUNTS = {("stop_on_timeout", "lost_response"): Counter({"abandoned": 2})}


class _Flushed(io.StringIO):
    def __init__(self) -> None:
        super().__init__()
        self.flushed_at: list[int] = []

    def flush(self) -> None:
        self.flushed_at.append(len(self.getvalue()))


def test_the_early_table_is_flushed_as_it_is_printed(monkeypatch: pytest.MonkeyPatch) -> None:
    """The table is said before the page takes its seconds to draw: flushed at once (through a pipe, stdout is
    block-buffered), and marked printed so that the end of the run does not print it again."""
    out = _Flushed()
    monkeypatch.setattr("sys.stdout", out)
    table = _EarlyTable()
    assert (table.printed, table.reader_gone) == (False, False)
    table(COUNTS, ["stop_on_timeout"], ["lost_response"])
    text = outcome_table(COUNTS, ["stop_on_timeout"], ["lost_response"]) + "\n"
    assert out.getvalue() == text and len(text) in out.flushed_at
    assert (table.printed, table.reader_gone) == (True, False)


def test_a_reader_gone_at_the_early_table_sends_the_rest_to_devnull(monkeypatch: pytest.MonkeyPatch) -> None:
    """A stdout whose reader went away (a pipe whose other end is closed): the table is marked printed and the
    reader gone, and stdout's descriptor now writes to /dev/null, so what the run prints later does not fail."""
    read, write = os.pipe()
    os.close(read)
    stdout = os.fdopen(write, "w")
    monkeypatch.setattr("sys.stdout", stdout)
    try:
        table = _EarlyTable()
        table(COUNTS, ["stop_on_timeout"], ["lost_response"])
        assert (table.printed, table.reader_gone) == (True, True)
        print("x" * 100_000, file=stdout, flush=True)  # a broken pipe, but for the descriptor moved to /dev/null
    finally:
        monkeypatch.undo()
        stdout.close()


class _GoneWithoutAFile(io.StringIO):
    def __init__(self, fileno_error: Exception) -> None:
        super().__init__()
        self.fileno_error = fileno_error

    def write(self, text: str) -> int:
        raise BrokenPipeError

    def fileno(self) -> int:
        raise self.fileno_error


@pytest.mark.parametrize("error", [OSError("no descriptor"), ValueError("I/O operation on closed file")])
def test_a_gone_reader_whose_stdout_has_no_descriptor_is_still_marked_gone(
    monkeypatch: pytest.MonkeyPatch, error: Exception
) -> None:
    """Moving stdout to /dev/null is best effort: a stdout with no descriptor (``OSError``) or a closed one
    (``ValueError``) leaves it as it is, and the reader is still marked gone (the run exits 141)."""
    monkeypatch.setattr("sys.stdout", _GoneWithoutAFile(error))
    table = _EarlyTable()
    table(COUNTS, ["stop_on_timeout"], ["lost_response"])
    assert (table.printed, table.reader_gone) == (True, True)


WORDS = ["run", "--policy", "stop_on_timeout", "--scenario", LOST, "--seed-count", "2", "--tracking", "none", "--quiet"]


def test_a_resumed_run_prints_its_table_once_before_its_page(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``run --resume`` of a run stopped while its page was drawn: the table is printed as every case is counted,
    before the page, and not again at the end (the resume passes its early table on to ``_ran``)."""
    import harness.present.html_report as html_report

    out = tmp_path / "run"
    drawn = html_report.write_report

    def stopped(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    with monkeypatch.context() as patched:
        patched.setattr(html_report, "write_report", stopped)
        assert main([*WORDS, "--out", str(out)]) == 130
    capsys.readouterr()
    said_before: list[str] = []

    def drawing(*args: object, **kwargs: object) -> Path:
        said_before.append(capsys.readouterr().out)
        return drawn(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(html_report, "write_report", drawing)
    assert main(["run", "--resume", str(out), "--quiet"]) == 0
    after = capsys.readouterr().out
    table = outcome_table({("stop_on_timeout", "lost_response"): Counter({"abandoned": 2})}, ["stop_on_timeout"],
                          ["lost_response"])  # fmt: skip
    assert said_before == [table + "\n"] and "policy \\ scenario" not in after


def test_resume_grid_passes_its_tally_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``resume_grid(tallied=...)``: called once with the counts and the grid's order, as ``run_grid``'s is."""
    import harness.present.html_report as html_report

    out = tmp_path / "run"
    plan = plan_cells(["stop_on_timeout"], [LOST], [1, 2], None, 1)
    with monkeypatch.context() as patched:
        patched.setattr(html_report, "write_report", lambda *a, **k: (_ for _ in ()).throw(KeyboardInterrupt))
        with pytest.raises(KeyboardInterrupt):
            run_grid(plan, GridOptions(out=out, tracking="none"))
    said: list[tuple[Any, ...]] = []
    resume_grid(out, tallied=lambda *a: said.append(a))
    assert said == [(COUNTS, ("stop_on_timeout",), ("lost_response",))]


# -- --maxfail: the count, and the note of what was left out ---------------------------------------------------------


def _result(**outcomes: int) -> Any:
    return SimpleNamespace(counts={("p", "s"): Counter(outcomes)})


def test_the_failures_are_counted_over_pieces_until_exactly_maxfail() -> None:
    """Each piece's failing outcomes add up (``correct`` and ``incomplete``-free passes do not), the progress
    callback it wraps gets each piece's arguments first, and the check stops on reaching ``maxfail``, not after."""
    seen: list[tuple[object, ...]] = []
    counting = _CountFailures(3, lambda *a: seen.append(a))
    first, second = _result(correct=5, incorrect=1), _result(abandoned=1, harness_error=0)
    counting("P1", "J1", first)  # type: ignore[arg-type]
    counting("P2", "J2", second)  # type: ignore[arg-type]
    assert counting.failed == 2 and seen == [("P1", "J1", first), ("P2", "J2", second)]
    with pytest.raises(_Enough):
        counting("P3", "J3", _result(harness_error=1))  # type: ignore[arg-type]
    assert counting.failed == 3 and len(seen) == 3
    quiet = _CountFailures(1, None)
    with pytest.raises(_Enough):
        quiet("P", "J", _result(incorrect=1))  # type: ignore[arg-type]


def test_a_check_stopped_early_says_one_failing_case_and_everything_left_out(tmp_path: Path) -> None:
    """The summary of a stopped check: the policy by name and revision, the cases that ran, the seeds asked for,
    the time to the millisecond, and a note in the singular for one failure naming the baseline and the
    exploration as left out."""
    policy = SimpleNamespace(name="mine", revision="7")
    cases = (SimpleNamespace(passed=False, name="s seed 0"), SimpleNamespace(passed=True, name="s seed 1"))
    planned = [SimpleNamespace(scenario=SimpleNamespace(name="s"), seed=n) for n in range(1234)]
    options = CheckOptions(seeds=(4, 5), maxfail=1, baseline="stop_on_timeout", explore=True)
    summary = _stopped_early(policy, cases, planned, tmp_path, options, 1.23456)  # type: ignore[arg-type]
    assert summary == CheckSummary(
        policy="mine",
        policy_revision="7",
        out=tmp_path,
        cases=cases,  # type: ignore[arg-type]
        notes=(
            "note: stopped after 1 failing case (--maxfail 1): 1,232 of 1,234 cases not run, nor the baseline and "
            "the exploration",
        ),
        elapsed_s=1.235,
        seeds=(4, 5),
        not_run=tuple(f"s seed {n}" for n in range(2, 1234)),
        not_run_why="not run: the check stopped after 1 failing case (--maxfail 1)",
    )
    explored = _stopped_early(policy, cases, planned[:2], tmp_path, replace(options, baseline=None), 0.0)  # type: ignore[arg-type]
    assert explored.notes == (
        "note: stopped after 1 failing case (--maxfail 1): 0 of 2 cases not run, nor the exploration",
    )


# -- cut_keeping_place's edges ---------------------------------------------------------------------------------------


def test_the_place_kept_is_the_last_one_in_the_error() -> None:
    """An error whose text itself holds `` (at line `` (a traceback quoted in it): the place kept is the one at
    its end, where the harness says where the policy raised it."""
    place = " (at line 41 of m, in decide)"
    text = "E: quoting (at line 1 of other, in f) " + "v" * 200 + place
    cut = cut_keeping_place(text, 160)
    assert cut.endswith("..." + place) and len(cut) == 160 and cut.startswith("E: quoting (at line 1")


@pytest.mark.parametrize("end", [" (no place)", " (at noon)", " (at line 1 of m, in f) and on"])
def test_an_error_that_does_not_end_in_a_place_is_cut_at_its_end(end: str) -> None:
    """A long error that ends in ``)`` but says no place (not even one that starts `` (at``), or says one that is
    not its end, is cut at its end, as any other."""
    text = "E: " + "w" * 200 + end
    assert cut_keeping_place(text, 160) == text[:157] + "..."


@pytest.mark.parametrize(("extra", "kept"), [(0, True), (1, False)])
def test_a_place_is_kept_while_it_leaves_27_characters_of_the_error(extra: int, kept: bool) -> None:
    """A place that leaves 27 characters of the error and the ``...`` (130 of 160) is kept whole; one character
    longer, the error is cut at its end (a place that long would leave too little of the error). Half the limit
    was the bound until a review found run's reproduce list (120 characters) losing a 63-character place."""
    place = " (at line 1 of " + "m" * (130 - 27 + extra) + ", in decide)"
    assert len(place) == 130 + extra
    text = "E: " + "v" * 300 + place
    cut = cut_keeping_place(text, 160)
    assert len(cut) == 160
    assert cut == (f"{text[: 160 - 3 - len(place)]}...{place}" if kept else f"{text[:157]}...")


# -- the bridge: a call that lands after its error keeps its reply -----------------------------------------------------


class _RetryAfterItLanded:
    """Waits 10 s after the bridge's error, retries once under the same UUID, then escalates."""

    name, revision = "retry_after_it_landed", "test"

    def decide(self, situation: Situation) -> Command:
        if situation.now_s < 10.0:
            return Wait(duration_s=10.0 - situation.now_s)
        if len(situation.attempts) < 2:
            return RetrySameAction(claim=False)
        return Escalate(reason="done")


def test_a_call_landing_after_its_error_is_answered_from_its_receipt() -> None:
    """``lands_after_s`` without the bridge's restart: the call reaches the tool server 4.5 s after the error, and
    its reply is kept under its UUID, so the same-UUID retry is replayed with the call's receipt (not pending)."""
    base = load_scenario(SCENARIO_DIR / "bridge_error_before_call_lands.yaml")
    kept = with_changes(
        base,
        faults=[{"boundary": "bridge_connection_error", "nth": 1, "forwarded": True, "lands_after_s": 4.5}],
        worker={"retry_send_s": 0.0},
    )
    history = simulate(kept, _RetryAfterItLanded(), 1).evidence.history
    replayed = [e for e in history if isinstance(e, CallReplayed)]
    assert len(replayed) == 1 and replayed[0].receipt_id is not None, replayed


# -- the plugin's (and check's) writable-folder check: its scratch file -----------------------------------------------


def test_the_scratch_file_is_a_temporary_a_stopped_run_removes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``check_writable_folder`` tries a hidden ``.harness-*.tmp`` file, the name ``stray_temporaries`` removes
    should the process die between making and removing it, and leaves nothing."""
    from harness.run.folder import _temporary

    made: list[str] = []
    real = files.tempfile.mkstemp

    def mkstemp(**kwargs: Any) -> tuple[int, str]:
        fd, name = real(**kwargs)
        made.append(name)
        return fd, name

    monkeypatch.setattr(files.tempfile, "mkstemp", mkstemp)
    check_writable_folder(tmp_path / "new" / "out", "--harness-out")
    [name] = made
    assert Path(name).parent == tmp_path and Path(name).name.startswith(".harness-") and _temporary(Path(name))
    assert list(tmp_path.iterdir()) == []


# -- --maxfail through the command line and check_policy, and the baseline's folder ------------------------------------

TWO = ("--scenario", LOST, "--scenario", str(SCENARIO_DIR / "request_lost.yaml"), "--seed-count", "2")


def test_harness_check_passes_maxfail_on(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``harness check --maxfail 1``: the check stops after the piece that failed (two cases, both failed), and says
    so in its note on stderr."""
    status = main(
        ["check", "--policy", "retry_new_key", *TWO, "--maxfail", "1", "--out", str(tmp_path / "o"), "--quiet"]
    )
    assert status == 1
    said = capsys.readouterr()
    assert said.err == "note: stopped after 2 failing cases (--maxfail 1): 2 of 4 cases not run\n"
    assert said.out.count("FAIL retry_new_key x ") == 2


def test_a_stopped_check_still_reports_progress_and_times_itself(tmp_path: Path) -> None:
    """With ``maxfail``, ``cases_progress`` is still called for each piece that ran (the progress lines), and the
    stopped check's time is the time it took."""
    from time import perf_counter

    from harness.gate.runner import check_policy

    pieces: list[object] = []
    asked = CheckOptions(scenarios=(LOST, str(SCENARIO_DIR / "request_lost.yaml")), seeds=(1, 2), maxfail=1)
    started = perf_counter()
    stopped = check_policy(
        "retry_new_key", replace(asked, out=tmp_path / "o"), cases_progress=lambda *a: pieces.append(a)
    )
    took = perf_counter() - started
    assert len(pieces) == 1 and len(stopped.cases) == 2
    assert 0 <= stopped.elapsed_s <= took + 0.001


def test_the_baselines_folder_is_a_checks_too(tmp_path: Path) -> None:
    """``check --baseline``: the baseline's grid, in ``OUT/baseline``, is marked a check's cases as the policy's
    are, so a ``run --resume`` of it is refused in the same one line."""
    from harness.gate.runner import check_policy

    out = tmp_path / "o"
    check_policy("stop_on_timeout", CheckOptions(scenarios=(LOST,), seeds=(1,), out=out, baseline="stop_on_timeout"))
    assert is_check(out) and is_check(out / "baseline")
    with pytest.raises(UsageError, match="a check is not resumable"):
        resume_grid(out / "baseline")
