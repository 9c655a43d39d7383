"""The command line's small parts, one by one (harness/cli.py): the argument types and their refusals, the parser's
one-line errors, what a finished run prints and its exit status, a resume's reading of its request, the progress lines of a run, a sweep, a report and an
exploration, the durations they print, and the one-line errors of the harness's own bugs. Written for the
thirty-sixth mutation pass (tests/MUTANTS.md); all in process, no run is started."""

from __future__ import annotations

import argparse
import errno
import json
from collections import Counter
from pathlib import Path

import pytest

from harness import cli
from harness.explore.search import JobResult
from harness.present.analysis import Reading
from harness.run.cell import CaseLine, CellJob, CellResult, FaultCoverage
from harness.run.folder import Request
from harness.run.grid import GridSummary, Progress, TrackingNote
from harness.run.plan import Plan, UsageError


def _refused(parse: object, text: str) -> str:
    with pytest.raises(argparse.ArgumentTypeError) as caught:
        parse(text)  # type: ignore[operator]
    return str(caught.value)


# -- argument types ----------------------------------------------------------------------------------------------


def test_a_whole_number_is_taken_inside_its_bounds_only() -> None:
    parse = cli._whole(2, 5, "count")
    assert (parse("2"), parse("5"), parse(" 3 ")) == (2, 5, 3)
    assert _refused(parse, "1") == "count 1 is outside 2..5"
    assert _refused(parse, "6") == "count 6 is outside 2..5"
    assert _refused(parse, "2.0") == "count '2.0' is not a whole number"
    assert _refused(parse, "x") == "count 'x' is not a whole number"


def test_the_bounds_of_seeds_counts_and_ports() -> None:
    assert cli._seed("0") == 0 and cli._seed(str(2**63 - 1)) == 2**63 - 1
    assert _refused(cli._seed, str(2**63)) == f"seed {2**63} is outside 0..{2**63 - 1}"
    assert cli._positive("1") == 1 and cli._positive("10000") == 10_000
    assert _refused(cli._positive, "0") == "count 0 is outside 1..10000"
    assert _refused(cli._positive, "10001") == "count 10001 is outside 1..10000"
    assert cli._port("65535") == 65535
    assert _refused(cli._port, "65536") == "port 65536 is outside 1..65535"


def test_a_path_is_refused_only_when_empty() -> None:
    assert cli._path("a b") == Path("a b")
    assert _refused(cli._path, "") == "an empty path; give a file or folder name"
    assert _refused(cli._path, "  ") == "an empty path; give a file or folder name"


def test_seconds_are_a_number_from_zero_to_a_day() -> None:
    assert (cli._seconds("0"), cli._seconds("2.5"), cli._seconds("86400")) == (0.0, 2.5, 86400.0)
    assert _refused(cli._seconds, "-0.5") == "seconds -0.5 is outside 0..86400"
    assert _refused(cli._seconds, "86400.5") == "seconds 86400.5 is outside 0..86400"
    assert _refused(cli._seconds, "soon") == "seconds 'soon' is not a number"


@pytest.mark.parametrize(("text", "shard"), [("0/1", (0, 1)), ("2/3", (2, 3)), ("9999/10000", (9999, 10000))])
def test_a_shard_is_i_of_n(text: str, shard: tuple[int, int]) -> None:
    assert cli._shard(text) == shard


@pytest.mark.parametrize("text", ["1/1", "3/2", "-1/2", "1", "1/", "/2", "a/2", "1/b", "0/10001", "1-2"])
def test_anything_else_is_not_a_shard(text: str) -> None:
    assert _refused(cli._shard, text) == f"shard '{text}' is not I/N with 0 <= I < N"


def test_a_shard_value_that_starts_with_a_dash_is_attached_to_its_option() -> None:
    assert cli._attached(["explore", "--shard", "-1/2", "x"]) == ["explore", "--shard=-1/2", "x"]
    assert cli._attached(["--shard", "--"]) == ["--shard", "--"]  # the end of options is left alone
    assert cli._attached(["--seed", "-1"]) == ["--seed", "-1"]  # only --shard's value
    assert cli._attached(["-1/2", "--shard"]) == ["-1/2", "--shard"]
    assert cli._attached([]) == []
    assert cli._attached(["--shard", "-1/2"]) == ["--shard=-1/2"]  # the option first: the last word is replaced
    assert cli._attached(["a", "b", "--shard", "-1/2"]) == ["a", "b", "--shard=-1/2"]


# -- the parser -----------------------------------------------------------------------------------------------------


def test_the_parser_refuses_in_one_line_naming_the_commands_help(capsys: pytest.CaptureFixture[str]) -> None:
    parser = cli._parser()
    with pytest.raises(SystemExit) as ended:
        parser.parse_args(["run", "--seed", "1", "extra\nword"])
    assert ended.value.code == cli.EXIT_USAGE
    assert capsys.readouterr().err == (
        "harness: unrecognized arguments: extra\\nword; fix: see 'python -m harness run --help'\n"
    )
    with pytest.raises(SystemExit):
        parser.parse_args(["nonsense"])
    err = capsys.readouterr().err
    assert err.startswith("harness: argument COMMAND: invalid choice: 'nonsense' (choose from 'run', ")
    assert err.endswith("; fix: see 'python -m harness --help'\n") and err.count("\n") == 1


def test_an_abbreviated_option_is_not_taken_for_a_longer_one(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli._parser().parse_args(["run", "--seed-c", "5"])
    assert "unrecognized arguments: --seed-c 5; fix: see 'python -m harness run --help'" in capsys.readouterr().err


def test_words_left_over_with_no_command_are_refused_by_the_main_parser(capsys: pytest.CaptureFixture[str]) -> None:
    parser = cli._Parser(prog="harness")
    parser.add_argument("--x")
    with pytest.raises(SystemExit):
        parser.parse_args(["--x", "1", "more"])
    assert capsys.readouterr().err == "harness: unrecognized arguments: more; fix: see 'python -m harness --help'\n"
    assert parser.parse_args(["--x", "1"]).x == "1"
    given = argparse.Namespace(y=2)
    assert parser.parse_args(["--x", "1"], namespace=given) is given and (given.x, given.y) == ("1", 2)


def test_a_parser_takes_its_prog_by_position_too(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli._Parser("harness run").error("bad")
    assert capsys.readouterr().err == "harness: bad; fix: see 'python -m harness run --help'\n"


# -- concurrency and exit status --------------------------------------------------------------------------------


def test_concurrency_above_the_cores_is_lowered_saying_so_unless_forced(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(cli.os, "sched_getaffinity", lambda pid: set(range(2)))
    assert cli._within_cores(2, False) == (2, None)
    assert cli._within_cores(5, True) == (5, None)
    lowered, note = cli._within_cores(3, False)
    assert lowered == 2 and note is not None
    note()
    assert capsys.readouterr().err == (
        "harness: --concurrency 3 is more than the 2 cores here; using 2 (pass --force-concurrency to use it anyway)\n"
    )
    note = cli._within_cores(4, False, said="concurrency (polyaxonfile)")[1]
    assert note is not None
    note()
    assert capsys.readouterr().err.startswith("harness: concurrency (polyaxonfile) 4 is more than the 2 cores")
    monkeypatch.delattr(cli.os, "sched_getaffinity")
    monkeypatch.setattr(cli.os, "cpu_count", lambda: None)  # unknown: one core
    assert cli._within_cores(2, False)[0] == 1


@pytest.mark.parametrize(
    ("errors", "unfired", "tracking_ok", "junit_failed", "status"),
    [
        (0, 0, True, False, cli.EXIT_OK),
        (0, 0, False, False, cli.EXIT_TRACKING),
        (0, 2, False, False, cli.EXIT_COVERAGE),
        (1, 2, False, False, cli.EXIT_HARNESS_ERROR),
        (0, 0, True, True, cli.EXIT_HARNESS_ERROR),
        (0, 1, True, True, cli.EXIT_HARNESS_ERROR),
    ],
)
def test_a_runs_exit_status_puts_harness_errors_before_coverage_before_tracking(
    errors: int, unfired: int, tracking_ok: bool, junit_failed: bool, status: int
) -> None:
    assert cli._exit_status(errors, unfired, tracking_ok, junit_failed) == status
    assert (cli.EXIT_OK, cli.EXIT_HARNESS_ERROR, cli.EXIT_USAGE, cli.EXIT_TRACKING, cli.EXIT_COVERAGE) == (
        0,
        1,
        2,
        3,
        4,
    )


def test_a_junit_that_cannot_be_written_for_want_of_room_says_how_to_write_it_later(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    plan = Plan((), 1)
    junit, out = tmp_path / "j u.xml", tmp_path / "run"
    asked: list[tuple[object, ...]] = []

    def full(*args: object) -> None:
        asked.append(args)
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(cli, "_write_junit", full)
    assert cli._junit_problem(junit, plan, out) == (
        f"harness: --junit {junit}: cannot write it (No space left on device); fix: make room or give a writable "
        f"path, then write it: python -m harness run --resume {out} --junit '{junit}'"
    )

    def broken(*_: object) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(cli, "_write_junit", broken)
    with pytest.raises(OSError, match="Input/output error"):
        cli._junit_problem(junit, plan, out)
    monkeypatch.setattr(cli, "_write_junit", lambda *args: asked.append(args))
    assert cli._junit_problem(junit, plan, out) is None
    assert asked == [(junit, plan, out), (junit, plan, out)]  # the file, the run's plan and folder, as given


# -- progress lines ------------------------------------------------------------------------------------------------


def _result(*cells: tuple[str, str, dict[str, int]]) -> CellResult:
    return CellResult(counts={(p, s): Counter(outcomes) for p, s, outcomes in cells})


def _job(seeds: object, part: int = 0, parts: int = 1) -> CellJob:
    return CellJob("spec_p", "spec_s", seeds, Path("out"), part=part, parts=parts)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("seeds", "part", "parts", "which"),
    [
        ((7,), 0, 1, ""),
        ((7,), 1, 2, " (seed 7, piece 2 of 2)"),
        ((1, 2, 3), 0, 3, " (seeds 1, 2, 3, piece 1 of 3)"),
        ((1, 2, 3, 4), 2, 3, " (4 seeds, 1..4, piece 3 of 3)"),
        (range(1001, 3001), 0, 2, " (2,000 seeds, 1001..3000, piece 1 of 2)"),
        (range(5, 7), 0, 2, " (2 seeds, 5..6, piece 1 of 2)"),
    ],
)
def test_a_progress_line_says_which_seeds_a_piece_of_a_cell_ran(
    capsys: pytest.CaptureFixture[str], seeds: tuple[int, ...], part: int, parts: int, which: str
) -> None:
    progress = Progress(pieces_done=3, pieces=12, cases_done=9, cases=40, elapsed_s=1.0)
    cli._progress(progress, _job(seeds, part, parts), _result(("pol", "scen", {"correct": 2, "incorrect": 1})))
    assert capsys.readouterr().err == f"[ 3/12] pol x scen{which}: correct 2, incorrect 1\n"


def test_a_progress_line_names_the_cell_as_the_table_does_and_its_spec_when_it_ran_nothing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    progress = Progress(pieces_done=1, pieces=9, cases_done=1, cases=9, elapsed_s=1.0)
    phases = _result(
        ("pol", "connector-before_started", {"correct": 1}), ("pol", "connector-after_effect", {"correct": 2})
    )
    cli._progress(progress, _job((1,)), phases)
    cli._progress(progress, _job((1,)), _result())
    assert capsys.readouterr().err.splitlines() == ["[1/9] pol x connector: correct 3", "[1/9] spec_p x spec_s: "]


def test_a_long_check_says_how_far_its_cases_have_got_every_ten_seconds(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A CI integrator's review: a check of 1,000 seeds printed its first line after 120 s, long enough for a CI
    job's no-output timeout. A line every ten seconds while cases remain; none in a check that ends sooner."""
    clock = [100.0]
    monkeypatch.setattr(cli.time, "monotonic", lambda: clock[0])
    said = cli._CheckProgress()
    job, result = _job((1,)), _result(("p", "s", {"correct": 1}))
    for at, done in ((109.9, 10), (110.0, 20), (115.0, 30), (120.0, 40), (200.0, 80)):
        clock[0] = at
        said(Progress(done, 80, done, 80, at - 100.0), job, result)
    assert capsys.readouterr().err.splitlines() == [
        "check: 20 of 80 cases, 2 cases/s, about 30 s left",
        "check: 40 of 80 cases, 2 cases/s, about 20 s left",
    ]


def test_a_sweeps_progress_line_adds_the_cases_the_rate_and_the_time_left(capsys: pytest.CaptureFixture[str]) -> None:
    job, result = _job(range(1, 5001)), _result(("p", "s", {"correct": 5000}))
    cli._progress(Progress(1, 4, 5000, 20_000, 2.0), job, result)
    cli._progress(Progress(1, 4, 5000, 9_999, 2.0), job, result)  # not a sweep: no figures
    cli._progress(Progress(1, 4, 5000, 10_000, 2.0), job, result)  # a sweep from SWEEP_FROM cases on
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "[1/4] p x s: correct 5000; 5,000 of 20,000 cases, 2,500 cases/s, about 6 s left"
    assert lines[1] == "[1/4] p x s: correct 5000"
    assert lines[2] == "[1/4] p x s: correct 5000; 5,000 of 10,000 cases, 2,500 cases/s, about 2 s left"
    assert cli.SWEEP_FROM == 10_000


@pytest.mark.parametrize(
    ("progress", "said"),
    [
        (Progress(1, 4, 12_000, 1_000_000, 3.0), "12,000 of 1,000,000 cases, 4,000 cases/s, about 4 min 7 s left"),
        (Progress(4, 4, 20_000, 20_000, 8.0), "20,000 of 20,000 cases, 2,500 cases/s"),
        (Progress(0, 4, 0, 20_000, 0.0), "0 of 20,000 cases"),
        (Progress(1, 4, 5_000, 20_000, 1.0, concurrency=2), "5,000 of 20,000 cases"),
        (Progress(1, 4, 0, 20_000, 1.0), "0 of 20,000 cases"),  # a rate of nothing yet: no time left to say
    ],
)
def test_a_sweep_says_how_far_it_is_and_a_rate_only_once_there_is_one(progress: Progress, said: str) -> None:
    assert cli._sweep(progress) == said


@pytest.mark.parametrize(
    ("seconds", "said"),
    [
        (0.4, "0 s"),
        (59.4, "59 s"),
        (59.5, "1 min 0 s"),
        (60, "1 min 0 s"),
        (253, "4 min 13 s"),
        (3599, "59 min 59 s"),
        (3600, "1 h 00 min"),
        (7500, "2 h 05 min"),
        (90061, "25 h 01 min"),
    ],
)
def test_a_duration_is_in_seconds_then_minutes_then_hours(seconds: float, said: str) -> None:
    assert cli._duration(seconds) == said


def test_reading_lines_come_every_few_seconds_and_once_at_the_end_if_any_came(
    capsys: pytest.CaptureFixture[str],
) -> None:
    lines = cli._ReadingLines(every_s=2.0)
    lines(Reading(files_read=1, files=3, cases=1, elapsed_s=1.9))  # too soon
    lines(Reading(files_read=1, files=3, cases=1, elapsed_s=2.0))
    lines(Reading(files_read=2, files=3, cases=2_000, elapsed_s=3.9))  # 2 s after the last line, not yet
    lines(Reading(files_read=2, files=3, cases=2_000, elapsed_s=4.0))
    lines(Reading(files_read=3, files=3, cases=3_000, elapsed_s=4.5))  # the end, after a line: said
    assert capsys.readouterr().err.splitlines() == [
        "harness: report: read 1 of 3 files, 1 case, in 2 s",
        "harness: report: read 2 of 3 files, 2,000 cases, in 4 s",
        "harness: report: read 3 of 3 files, 3,000 cases, in 4 s; writing report.html",
    ]
    quick = cli._ReadingLines()
    assert quick.every_s == cli.READING_EVERY_S == 5.0
    quick(Reading(files_read=3, files=3, cases=3, elapsed_s=1.0))  # done before any line: nothing said
    assert capsys.readouterr().err == ""


def test_an_explorations_progress_line_counts_violating_cases_and_names_a_part(
    capsys: pytest.CaptureFixture[str],
) -> None:
    one = JobResult("lost_response", schedules=1_234, violating=Counter({"a": 1}))
    part = JobResult("lost_response", shard=1, shards=2, schedules=5, violating=Counter({"a": 2, "b": 1}))
    cli._explore_progress(2, 10, one)
    cli._explore_progress(10, 10, part)
    assert capsys.readouterr().err.splitlines() == [
        "[ 2/10] lost_response: 1,234 schedules, 1 violating case",
        "[10/10] lost_response (part 2 of 2): 5 schedules, 3 violating cases",
    ]


def test_many_says_one_in_the_singular() -> None:
    assert (cli._many(0, "finding"), cli._many(1, "finding"), cli._many(2_000, "finding")) == (
        "0 findings",
        "1 finding",
        "2,000 findings",
    )


# -- schema files, missing packages, the harness's own bugs -------------------------------------------------


def test_only_a_schema_the_harness_wrote_may_be_written_over(tmp_path: Path) -> None:
    path = tmp_path / "schema.json"
    for text, ours in (
        (json.dumps({"title": "CaseReport", "properties": {}}), True),
        (json.dumps({"title": "CaseReport"}), False),
        (json.dumps({"title": "Other", "properties": {}}), False),
        (json.dumps(["CaseReport"]), False),
        ("{", False),
    ):
        path.write_text(text)
        assert cli._is_case_schema(path) is ours, text
    assert cli._is_case_schema(tmp_path / "none.json") is False
    big = {"title": "CaseReport", "properties": {}, "pad": "x" * cli._SCHEMA_MAX}
    path.write_text(json.dumps(big))  # larger than any schema the harness writes: cut, so not JSON
    assert cli._is_case_schema(path) is False
    assert cli._SCHEMA_MAX == 4 * 1024 * 1024


@pytest.mark.parametrize(
    ("name", "missing"),
    [
        ("pandas", True),
        ("polyaxon.client", True),
        ("harness.run", False),
        ("harness.run.grid", False),
        ("policies.x", False),
        (None, False),
    ],
)
def test_a_missing_package_is_told_from_a_missing_module_of_the_harness(name: str | None, missing: bool) -> None:
    assert cli._missing_dependency(ModuleNotFoundError("no", name=name)) is missing


def test_an_internal_error_is_one_line_naming_the_file_with_its_traceback(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(cli.tempfile, "gettempdir", lambda: str(tmp_path))
    try:
        raise KeyError("line one\nline two" + "x" * 400)
    except KeyError as exc:
        assert cli._internal_error(exc) == cli.EXIT_HARNESS_ERROR
    err = capsys.readouterr().err
    where = tmp_path / f"harness-error-{cli.os.getpid()}.txt"
    assert err.startswith("harness: internal error: KeyError: 'line one\\nline two")
    assert err.endswith(f"; this is a bug of the harness (traceback in {where}); fix: report it with that file\n")
    assert err.count("\n") == 1
    said = err.removeprefix("harness: internal error: KeyError: ").partition("; this is a bug")[0]
    assert len(said) == 300  # the message, cut
    assert "Traceback (most recent call last)" in where.read_text(encoding="utf-8")


def test_an_internal_error_is_still_said_when_its_traceback_cannot_be_written(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(cli.tempfile, "gettempdir", lambda: str(tmp_path / "gone"))
    assert cli._internal_error(RuntimeError("boom")) == cli.EXIT_HARNESS_ERROR
    assert capsys.readouterr().err.startswith("harness: internal error: RuntimeError: boom; this is a bug")


def test_a_message_is_kept_on_one_line() -> None:
    assert cli._line("a\nb\rc") == "a\\nb\\rc"
    assert cli._line(ValueError("x")) == "x"


# -- what a finished run prints --------------------------------------------------------------------------------


def _summary(tmp_path: Path, **changes: object) -> GridSummary:
    values: dict[str, object] = {
        "out": tmp_path / "run",
        "policies": ("p",),
        "scenarios": ("s", "t"),
        "counts": {("p", "s"): Counter({"correct": 1}), ("p", "t"): Counter({"incorrect": 2})},
        "notable": (),
        "summary_csv": tmp_path / "run" / "summary.csv",
        "tracking": TrackingNote(True, None),
        "report_html": None,
    }
    return GridSummary(**{**values, **changes})  # type: ignore[arg-type]


def _args(junit: Path | None = None) -> argparse.Namespace:
    return argparse.Namespace(junit=junit, unfired="fail")


def _line_of(policy: str, scenario: str, outcome: str, seed: int = 1, **more: object) -> CaseLine:
    return CaseLine(policy, scenario, seed, outcome, f"repro {policy} {scenario} {seed}", **more)  # type: ignore[arg-type]


def test_a_finished_run_prints_its_table_its_count_and_where_it_is(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    summary = _summary(tmp_path, report_html=tmp_path / "run" / "report.html")
    assert cli._ran(_args(), summary, None) == cli.EXIT_OK
    out = capsys.readouterr()
    assert out.out == (
        "scenario \\ policy  p\n"
        "-----------------  ---------\n"
        "s                  correct\n"
        "t                  incorrect\n"
        f"\n3 cases in {tmp_path / 'run'}  (summary: {tmp_path / 'run' / 'summary.csv'})\n"
        f"report: {tmp_path / 'run' / 'report.html'}\n"
    )
    assert out.err == ""
    one = _summary(tmp_path, counts={("p", "s"): Counter({"correct": 1})}, scenarios=("s",))
    cli._ran(_args(), one, None)
    assert f"\n1 case in {tmp_path / 'run'}  (summary:" in capsys.readouterr().out


def test_a_run_names_the_first_case_of_each_failing_cell_worst_outcome_first(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    notable = (
        _line_of("p", "s", "unresolved", 4),
        _line_of("p", "t", "abandoned", 2, policy_error="ValueError: no\nway " + "x" * 200),
        _line_of("p", "s", "incorrect", 9),
        _line_of("p", "u", "harness_error", 3, error="worker died"),
        _line_of("p", "s", "harness_error", 5, error="over budget"),
    )
    summary = _summary(tmp_path, notable=notable, error_count=2)
    assert cli._ran(_args(), summary, None) == cli.EXIT_HARNESS_ERROR
    out = capsys.readouterr()
    named = out.out.split("reproduce a failing case (the first of each failing cell, worst outcome first):\n")[1]
    assert named.splitlines() == [
        "  incorrect     repro p s 9",
        "  abandoned     repro p t 2  # the policy failed: ValueError: no way " + "x" * 98 + "...",  # cut at 120
        "  harness_error repro p u 3",
    ]
    assert out.err.splitlines() == [
        "harness error in p x u seed 3: worker died",
        "harness error in p x s seed 5: over budget",
    ]


def test_past_twenty_failing_cells_a_run_says_how_many_more_and_where_they_all_are(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    notable = tuple(_line_of("p", f"s{i}", "incorrect") for i in range(22))
    cli._ran(_args(), _summary(tmp_path, notable=notable), None)
    lines = capsys.readouterr().out.splitlines()
    named = [line for line in lines if line.startswith("  incorrect ")]
    assert len(named) == 20 and named[-1] == "  incorrect     repro p s19 1"
    assert lines[-1] == (
        f"  ... and 2 more failing cells; {tmp_path / 'run' / 'summary.csv'} has every case's outcome and reproduce "
        "command"
    )
    cli._ran(_args(), _summary(tmp_path, notable=notable[:20]), None)
    assert "more failing cells" not in capsys.readouterr().out


def test_harness_errors_beyond_those_named_are_counted_with_where_they_all_are(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    notable = (_line_of("p", "s", "harness_error", 1, error="e"),)
    cli._ran(_args(), _summary(tmp_path, notable=notable, error_count=7), None)
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"harness: 7 harness errors in all, 1 named above; every one is in {tmp_path / 'run' / 'summary.csv'}"
    )
    cli._ran(_args(), _summary(tmp_path, notable=notable, error_count=1), None)
    assert "in all" not in capsys.readouterr().err


def test_tracking_is_said_on_stdout_when_it_worked_and_on_stderr_with_exit_3_when_it_did_not(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert cli._ran(_args(), _summary(tmp_path, tracking=TrackingNote(True, "tracked: 2 runs")), None) == 0
    out = capsys.readouterr()
    assert "tracked: 2 runs\n" in out.out and out.err == ""
    assert cli._ran(_args(), _summary(tmp_path, tracking=TrackingNote(False, "tracking failed")), None) == 3
    out = capsys.readouterr()
    assert out.err == "tracking failed\n" and "tracking failed" not in out.out


def test_many_failing_files_beside_compact_records_are_pointed_to_failing_files(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    cli._ran(_args(), _summary(tmp_path, failing_files=(10_001, 2_450_000)), None)
    assert capsys.readouterr().err == (
        "harness: note: 10,001 cases that are not correct each have a recovery.json beside their compact record "
        "(2.5 MB, more on disk); --failing-files N keeps at most N per cell, every case still loaded and replayed "
        "from the records\n"
    )
    cli._ran(_args(), _summary(tmp_path, failing_files=(10_000, 2_345_678)), None)
    assert capsys.readouterr().err == ""
    assert cli.FAILING_FILES_SAID == 10_000


def test_a_fault_that_fired_in_no_case_is_said_with_its_fix_and_exits_4(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    never = FaultCoverage("s", 0, "response_lost n=2", reached=0, fired=0)
    once = FaultCoverage("t", 0, "request_lost", reached=1, fired=1)
    assert cli._ran(_args(), _summary(tmp_path, coverage=(never, once)), None) == cli.EXIT_COVERAGE
    assert capsys.readouterr().err == (
        "harness: scenario s declares fault response_lost n=2, which fired in no case of this run (its site was "
        "reached in 0 cases); fix: run beside these policies one that gets there (none did: a policy that never "
        "does what the fault waits for, a second request or a read, say, never meets it), or make the fault "
        "reachable\n"
    )


def test_an_unfired_fault_where_cases_failed_says_to_mend_those_first(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    never = FaultCoverage("s", 0, "response_lost", reached=1, fired=0)
    counts = {("p", "s"): Counter({"correct": 1, "harness_error": 1}), ("p", "t"): Counter({"correct": 1})}
    errors = (_line_of("p", "s", "harness_error", 2, error="died"),)
    summary = _summary(tmp_path, coverage=(never,), counts=counts, notable=errors, error_count=1)
    assert cli._ran(_args(), summary, None) == cli.EXIT_HARNESS_ERROR
    assert capsys.readouterr().err.splitlines()[-1] == (
        "harness: scenario s declares fault response_lost, which fired in no case of this run that finished (its "
        "site was reached in 1 case); fix: mend the harness errors above first; a case that did not run reached "
        "no fault"
    )


def test_a_run_with_a_junit_writes_it_and_says_where(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    written: list[tuple[object, ...]] = []
    monkeypatch.setattr(cli, "_write_junit", lambda *args: written.append(args))
    plan, junit = Plan((), 1), tmp_path / "j.xml"
    summary = _summary(tmp_path)
    assert cli._ran(_args(junit), summary, plan) == cli.EXIT_OK
    assert written == [(junit, plan, summary.out)]
    assert capsys.readouterr().out.endswith(f"junit: {junit}\n")
    assert cli._ran(_args(junit), summary, None) == cli.EXIT_OK  # no plan (a complete run resumed): not written
    assert len(written) == 1


def test_a_junit_that_cannot_be_written_exits_1_saying_how_to_write_it(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def full(*_: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(cli, "_write_junit", full)
    junit = tmp_path / "j.xml"
    assert cli._ran(_args(junit), _summary(tmp_path), Plan((), 1)) == cli.EXIT_HARNESS_ERROR
    out = capsys.readouterr()
    assert out.err.startswith(f"harness: --junit {junit}: cannot write it (No space left on device); fix:")
    assert "junit:" not in out.out


def test_an_interrupt_while_writing_the_junit_says_the_run_is_complete_and_how_to_write_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def interrupted(*_: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "_write_junit", interrupted)
    junit, summary = tmp_path / "j.xml", _summary(tmp_path, out=tmp_path / "a run")
    with pytest.raises(KeyboardInterrupt) as caught:
        cli._ran(_args(junit), summary, Plan((), 1))
    assert str(caught.value) == (
        f"interrupted while writing --junit {junit}; the run in {tmp_path / 'a run'} is complete, and a resume "
        f"writes it: python -m harness run --resume '{tmp_path / 'a run'}'"
    )


# -- a resume from a run's request --------------------------------------------------------------------------


def _resume(tmp_path: Path, **given: object) -> argparse.Namespace:
    values: dict[str, object] = {"resume": tmp_path, "quiet": False, "no_report": False, "junit": None}
    return argparse.Namespace(**{**values, **given})


def test_a_request_is_read_as_its_run_read_it_with_what_the_resume_adds(tmp_path: Path) -> None:
    request = Request(("run", "--policy", "retry_new_key", "--seed", "x"), str(tmp_path))
    with pytest.raises(UsageError) as caught:  # the words are parsed as the run parsed them: the seed refused
        cli._requested(_resume(tmp_path), request)
    assert str(caught.value) == (
        f"{tmp_path / 'request.json'}: field 'argv': argument --seed: seed 'x' is not a whole number; fix: start "
        "the run anew with another --out (the request was edited or damaged)"
    )
    request = Request(("run", "--policy", "retry_new_key", "--quiet", "--junit", "a.xml"), str(tmp_path))
    again = cli._requested(_resume(tmp_path), request)
    assert (again.policy, again.quiet, again.no_report, again.junit) == (["retry_new_key"], True, False, Path("a.xml"))
    again = cli._requested(_resume(tmp_path, no_report=True, junit=Path("b.xml")), request)
    assert (again.quiet, again.no_report, again.junit) == (True, True, Path("b.xml"))
    plain = cli._requested(_resume(tmp_path, quiet=True), Request(("run",), str(tmp_path)))
    assert (plain.quiet, plain.no_report, plain.junit) == (True, False, None)


def test_a_refused_word_of_a_request_is_shown_whole_whatever_it_holds(tmp_path: Path) -> None:
    """The parser's refusal ends in its own "; fix: ...", which is replaced: a value that holds those words too
    is not cut there."""
    request = Request(("run", "--seed", "1; fix: x"), str(tmp_path))
    with pytest.raises(UsageError) as caught:
        cli._requested(_resume(tmp_path), request)
    assert str(caught.value).startswith(
        f"{tmp_path / 'request.json'}: field 'argv': argument --seed: seed '1; fix: x' is not a whole number; fix: "
        "start the run anew"
    )


@pytest.mark.parametrize("argv", [(), ("explore",), ("run", "--resume", "x")])
def test_a_request_that_is_not_the_words_of_a_run_is_refused(tmp_path: Path, argv: tuple[str, ...]) -> None:
    with pytest.raises(UsageError) as caught:
        cli._requested(_resume(tmp_path), Request(argv, str(tmp_path)))
    assert str(caught.value) == (
        f"{tmp_path / 'request.json'}: field 'argv': not the words of a 'harness run' that plans a grid; fix: start "
        "the run anew with another --out (the request was edited or damaged)"
    )


def test_a_request_whose_folder_is_gone_is_refused_naming_it(tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    with pytest.raises(UsageError) as caught:
        cli._requested(_resume(tmp_path), Request(("run",), str(gone)))
    assert str(caught.value) == (
        f"{tmp_path / 'request.json'}: field 'cwd': {gone} is no longer a folder, and the run's words are read from "
        "there; fix: make that folder again, or start the run anew with another --out"
    )
