"""The command line's small parts, one by one (harness/cli.py): the argument types and their refusals, the parser's
one-line errors, the exit status of a finished run, the progress lines of a run, a sweep, a report and an
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
from harness.run.cell import CellJob, CellResult
from harness.run.grid import Progress
from harness.run.plan import Plan


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
    monkeypatch.setattr(cli.os, "cpu_count", lambda: 2)
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
