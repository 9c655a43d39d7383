"""The command line's commands (harness/cli.py): ``main`` and the errors it turns into exit statuses, the dispatch to
each command, and what ``run`` (and its resumes), ``explore``, ``check``, ``replay``, ``report``, ``list`` and
``schema`` do, refuse and print. Written for the thirty-seventh mutation pass (tests/MUTANTS.md). Everything runs
in this process: the worker processes of a grid, an exploration and a replay are replaced by test_grid_mutants'
in-process stand-in (a worker process would run the harness unmutated), grids are a case or two, explorations are
at depth 1 with no swarm, and the report's page module (pandas, matplotlib) is replaced where the page is not the
point."""

from __future__ import annotations

import argparse
import errno
import json
import os
import signal
import sys
import tempfile
import types
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest
from test_explore_run_mutants import _finding
from test_grid_mutants import Supervised  # the in-process stand-in for the worker processes

import harness.explore as exploration
import harness.gate.runner as runner
import harness.run.pool as pool
import harness.run.replay as replaying
import harness.scenario as scenario_module
from harness import cli
from harness.errors import InputError, OutlivesReader, RunFailed
from harness.explore import Exploration, ExploreOptions, ExploreSummary
from harness.explore.schedule import Schedule
from harness.gate.cases import GateCase
from harness.gate.runner import CheckOptions, CheckSummary
from harness.model import MANIFEST, REQUEST, RUN_RECORD
from harness.run.cell import FaultCoverage
from harness.run.folder import LOCK_FILE, claim
from harness.run.grid import TrackingNote

#: retry_same_key x connector_no_record_yet: incorrect at seeds 1 and 2, correct at 3.
POLICY, SCENARIO = "retry_same_key", "connector_no_record_yet"
QUIET = ["--tracking", "none", "--no-report", "--quiet"]


@pytest.fixture(autouse=True)
def in_process(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Supervised:
    """Every worker process runs here instead, and every run starts in its test's own folder."""
    fake = Supervised()
    monkeypatch.setattr(pool, "supervise", fake)
    monkeypatch.setattr(exploration, "supervise", fake)
    monkeypatch.setattr(replaying, "supervise", fake)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return fake


def _out(capsys: pytest.CaptureFixture[str]) -> tuple[str, str]:
    said = capsys.readouterr()
    return said.out, said.err


def _noting(calls: list[Any], returns: object) -> Callable[..., Any]:
    """A stand-in that notes the arguments of each call and returns ``returns``."""

    def call(*args: Any) -> object:
        calls.append(args)
        return returns

    return call


def _run(out: Path, *more: str, seeds: Sequence[int] = (1,)) -> list[str]:
    words = ["run", "--policy", POLICY, "--scenario", SCENARIO, "--out", str(out), *QUIET]
    return words + [w for s in seeds for w in ("--seed", str(s))] + list(more)


# -- main: the exit statuses of what a command raises ---------------------------------------------------------------


def test_main_reads_its_words_from_the_command_line_unless_given(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "argv", ["harness", "schema"])
    assert cli.main() == 0
    out, err = _out(capsys)
    assert json.loads(out)["title"] == "CaseReport" and err == ""
    assert cli.main(["list"]) == 0
    assert _out(capsys)[0].startswith("policies:\n")


def test_a_command_writes_its_errors_through_a_stream_that_outlives_its_reader_and_sigterm_stops_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    seen: list[tuple[object, object, object]] = []

    def command(args: argparse.Namespace, words: Sequence[str]) -> int:
        seen.append((sys.stderr, signal.getsignal(signal.SIGTERM), (args.command, list(words))))
        return 7

    before, stderr = signal.getsignal(signal.SIGTERM), sys.stderr
    monkeypatch.setattr(cli, "_command", command)
    assert cli.main(["explore"]) == 7
    ((stream, handler, given),) = seen
    assert isinstance(stream, OutlivesReader) and handler is cli._stop and given == ("explore", ["explore"])
    assert sys.stderr is stderr and signal.getsignal(signal.SIGTERM) is before
    with pytest.raises(KeyboardInterrupt):
        cli._stop(signal.SIGTERM, None)


def test_the_words_reach_the_command_as_given_and_a_shards_dash_value_is_read_as_its_own(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    seen: list[tuple[argparse.Namespace, list[str]]] = []
    monkeypatch.setattr(cli, "_command", _noting(seen, 0))
    assert cli.main(["explore", "--shard", "1/2"]) == 0
    assert seen[0][0].shard == (1, 2) and seen[0][1] == ["explore", "--shard", "1/2"]
    with pytest.raises(SystemExit) as refused:
        cli.main(["explore", "--shard", "-1/2"])
    assert refused.value.code == 2
    assert _out(capsys)[1] == (
        "harness: argument --shard: shard '-1/2' is not I/N with 0 <= I < N; fix: see 'python -m harness explore "
        "--help'\n"
    )


def test_sigterm_during_a_command_stops_it_as_an_interrupt_does(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def command(args: argparse.Namespace, words: Sequence[str]) -> int:
        os.kill(os.getpid(), signal.SIGTERM)
        return 0

    monkeypatch.setattr(cli, "_command", command)
    assert cli.main(["list"]) == 130
    assert _out(capsys) == ("", "harness: interrupted\n")


@pytest.fixture
def python_sigint() -> Any:
    """SIGINT handled as Python handles it when it starts with SIGINT not ignored (a test worker may ignore it)."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


def test_a_ctrl_c_that_surfaces_as_another_error_exits_as_an_interrupt_not_as_a_bug(
    python_sigint: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A Ctrl-C that landed in an import, while pydantic built a model, was reported as a bug of the harness
    (``internal error: RuntimeError: Error calling __set_name__ ...``, or pydantic-core's ``SchemaError``, which
    keeps only the interrupt's text), exit 1, with a traceback file left behind."""
    monkeypatch.setattr(tempfile, "gettempdir", lambda: str(tmp_path))
    seen: list[object] = []

    def wrapped(args: argparse.Namespace, words: Sequence[str]) -> int:  # as Python wraps it: the interrupt chained
        seen.append(signal.getsignal(signal.SIGINT))
        raise RuntimeError("Error calling __set_name__ on 'Field' instance 'cases' in 'JobResult'") from (
            KeyboardInterrupt()
        )

    monkeypatch.setattr(cli, "_command", wrapped)
    assert cli.main(["list"]) == 130
    assert _out(capsys) == ("", "harness: interrupted\n")
    assert seen == [cli._stop] and signal.getsignal(signal.SIGINT) is signal.default_int_handler

    def flattened(args: argparse.Namespace, words: Sequence[str]) -> int:  # as pydantic-core does: text, no chain
        try:
            os.kill(os.getpid(), signal.SIGINT)
        except KeyboardInterrupt:
            raise ValueError('Error building "model" validator: KeyboardInterrupt:') from None
        return 0

    monkeypatch.setattr(cli, "_command", flattened)
    assert cli.main(["list"]) == 130
    assert _out(capsys) == ("", "harness: interrupted\n")
    assert list(tmp_path.iterdir()) == []  # no traceback of a bug that was not one

    def failed(args: argparse.Namespace, words: Sequence[str]) -> int:  # no interrupt this time: a bug
        raise ValueError("a bug") from RuntimeError("under it")

    monkeypatch.setattr(cli, "_command", failed)
    assert cli.main(["list"]) == 1
    assert "harness: internal error: ValueError: a bug; this is a bug of the harness" in _out(capsys)[1]
    assert [p.name for p in tmp_path.iterdir()] == [f"harness-error-{os.getpid()}.txt"]


def test_sigint_is_left_alone_where_python_started_with_it_ignored(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A command started in the background of a shell, SIGINT ignored, is not made interruptible by it."""
    seen: list[object] = []

    def command(args: argparse.Namespace, words: Sequence[str]) -> int:
        seen.append(signal.getsignal(signal.SIGINT))
        return 0

    monkeypatch.setattr(cli, "_command", command)
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        assert cli.main(["list"]) == 0
        assert seen == [signal.SIG_IGN] and signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, before)


def test_an_interrupt_ends_only_the_command_it_came_in(
    python_sigint: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The next command in the same process (a test's, a notebook's) that meets a bug says it is one."""
    monkeypatch.setattr(tempfile, "gettempdir", lambda: str(tmp_path))

    def interrupted(args: argparse.Namespace, words: Sequence[str]) -> int:
        os.kill(os.getpid(), signal.SIGINT)
        return 0

    def failed(args: argparse.Namespace, words: Sequence[str]) -> int:
        raise ValueError("a bug")

    monkeypatch.setattr(cli, "_command", interrupted)
    assert cli.main(["list"]) == 130
    monkeypatch.setattr(cli, "_command", failed)
    assert cli.main(["list"]) == 1
    assert "internal error: ValueError: a bug" in _out(capsys)[1]


def _full(filename: str | None = None) -> OSError:
    return OSError(errno.ENOSPC, "No space left on device", *([filename] if filename else []))


def _quiet_oserror() -> OSError:
    exc = OSError("disk gone")
    exc.errno = errno.EROFS
    return exc


@pytest.mark.parametrize(
    ("raised", "status", "said"),
    [
        (RunFailed("cannot\nwrite"), 1, "harness: cannot\\nwrite\n"),
        (InputError("bad\rinput"), 2, "harness: bad\\rinput\n"),
        (KeyboardInterrupt(), 130, "harness: interrupted\n"),
        (KeyboardInterrupt("stopped\nhere"), 130, "harness: stopped\\nhere\n"),
        (BrokenPipeError(errno.EPIPE, "Broken pipe"), 141, ""),
        (
            _full("/x/f"),
            1,
            "harness: cannot write a file (/x/f): No space left on device; fix: make room or give a writable folder, "
            "then run the command again\n",
        ),
        (
            _full(),
            1,
            "harness: cannot write a file: No space left on device; fix: make room or give a writable folder, then "
            "run the command again\n",
        ),
        (
            _quiet_oserror(),
            1,
            "harness: cannot write a file: disk gone; fix: make room or give a writable folder, then run the "
            "command again\n",
        ),
        (
            ModuleNotFoundError("No module named 'yaml'", name="yaml"),
            2,
            f"harness: this Python ({sys.executable}) cannot import 'yaml', which the harness needs; fix: run the "
            "harness with the Python it was installed for (.venv/bin/python -m harness ..., or activate that venv "
            "first), or install it for this one: pip install -e .\n",
        ),
    ],
)
def test_what_a_command_raises_is_one_line_and_an_exit_status(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    raised: BaseException,
    status: int,
    said: str,
) -> None:
    def command(args: argparse.Namespace, words: Sequence[str]) -> int:
        raise raised

    before = signal.getsignal(signal.SIGTERM)
    monkeypatch.setattr(cli, "_command", command)
    assert cli.main(["list"]) == status
    assert _out(capsys) == ("", said)
    assert signal.getsignal(signal.SIGTERM) is before


@pytest.mark.parametrize(
    ("raised", "kind"),
    [
        (FileNotFoundError(errno.ENOENT, "No such file or directory", "gone"), "FileNotFoundError"),
        (ModuleNotFoundError("No module named 'harness.nope'", name="harness.nope"), "ModuleNotFoundError"),
        (ModuleNotFoundError("No module named 'policies.x'", name="policies.x"), "ModuleNotFoundError"),
        (ZeroDivisionError("division by zero"), "ZeroDivisionError"),
    ],
)
def test_anything_else_a_command_raises_is_a_bug_said_in_one_line_with_its_traceback_kept(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    raised: BaseException,
    kind: str,
) -> None:
    def command(args: argparse.Namespace, words: Sequence[str]) -> int:
        raise raised

    monkeypatch.setattr(cli, "_command", command)
    assert cli.main(["list"]) == 1
    out, err = _out(capsys)
    where = tmp_path / f"harness-error-{os.getpid()}.txt"
    assert out == "" and err == (
        f"harness: internal error: {kind}: {raised}; this is a bug of the harness (traceback in {where}); fix: "
        "report it with that file\n"
    )
    assert where.read_text(encoding="utf-8").startswith("Traceback")


def test_a_reader_gone_away_leaves_the_rest_of_the_output_going_nowhere(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    target = tmp_path / "stdout"

    class Stream:
        def __init__(self) -> None:
            self.handle = open(target, "w")  # noqa: SIM115 - closed below

        def fileno(self) -> int:
            return self.handle.fileno()

    stream = Stream()

    def command(args: argparse.Namespace, words: Sequence[str]) -> int:
        raise BrokenPipeError

    monkeypatch.setattr(cli, "_command", command)
    monkeypatch.setattr(sys, "stdout", stream)
    try:
        assert cli.main(["list"]) == 141
        os.write(stream.fileno(), b"after")
    finally:
        stream.handle.close()
    assert target.read_bytes() == b""


@pytest.mark.parametrize("fails", [ValueError("I/O operation on closed file"), OSError(errno.EBADF, "Bad file")])
def test_a_reader_gone_away_from_an_output_with_no_descriptor_still_exits_141(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], fails: Exception
) -> None:
    class Stream:
        def fileno(self) -> int:
            raise fails

    def command(args: argparse.Namespace, words: Sequence[str]) -> int:
        raise BrokenPipeError

    monkeypatch.setattr(cli, "_command", command)
    monkeypatch.setattr(sys, "stdout", Stream())
    assert cli.main(["list"]) == 141
    assert _out(capsys)[1] == ""


# -- each command is called with its own arguments ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("words", "called"),
    [
        (["run", "--policy", "p"], "_run"),
        (["list"], "_list"),
        (["report", "r", "--out", "o.html"], "_report"),
        (["explore"], "_explore"),
        (["replay", "c.json"], "_replay"),
        (["check", "--policy", "p"], "_check"),
        (["schema"], "_schema"),
    ],
)
def test_each_command_calls_its_own_function_with_its_arguments(
    monkeypatch: pytest.MonkeyPatch, words: list[str], called: str
) -> None:
    calls: dict[str, list[tuple[Any, ...]]] = {}
    for name in ("_run", "_list", "_report", "_explore", "_replay", "_check", "_schema"):
        monkeypatch.setattr(cli, name, _noting(calls.setdefault(name, []), 5))
    assert cli.main(words) == 5
    ((name, given),) = [(name, call) for name, made in calls.items() for call in made]
    assert name == called
    if called == "_run":
        assert given[0].policy == ["p"] and given[1] == words
    elif called == "_report":
        assert given == (Path("r"), Path("o.html"))
    elif called == "_replay":
        assert given == (Path("c.json"),)
    elif called == "_explore":  # its words too: what --resume may be given with is what was typed
        assert given[0].command == words[0] and given[1] == words
    elif called in ("_check", "_schema"):
        assert given[0].command == words[0] and len(given) == 1
    else:
        assert given == (None,)  # no --scenario: every shipped one


def test_view_is_called_with_its_folder_and_port(monkeypatch: pytest.MonkeyPatch) -> None:
    import harness.plx.viewer as viewer

    calls: list[tuple[Path, int]] = []
    monkeypatch.setattr(viewer, "view", _noting(calls, 6))
    assert cli.main(["view", "d", "--port", "8123"]) == 6
    assert cli.main(["view", "e"]) == 6
    assert calls == [(Path("d"), 8123), (Path("e"), 8000)]


# -- list -------------------------------------------------------------------------------------------------------


class _Boundary:
    """A ``frozen ``markup``: and a colon. And a second sentence."""

    side = "wire"


class _Bare:
    __doc__ = None
    side = "caller"


class _Dotted:
    """Ends at its dot.   Not here."""

    side = "destination"


class _Capital:
    """Up to a MAX. Then more."""

    side = "wire"


def test_list_names_policies_scenarios_with_their_variants_and_the_first_sentence_of_each_boundary(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import harness.policy as policy_module
    from harness.scenario import scenario_cases

    one = scenario_cases("lost_response")
    many = scenario_cases("connector_crash_points")
    monkeypatch.setattr(policy_module, "builtin_policy_names", lambda: ["retry_same_key", "stop_on_timeout"])
    names = ["lost_response", "connector_crash_points", "two"]
    monkeypatch.setattr(scenario_module, "list_scenarios", lambda: names)
    cases = {"lost_response": one, "connector_crash_points": many, "two": many[:2]}
    monkeypatch.setattr(scenario_module, "scenario_cases", cases.get)
    monkeypatch.setattr(scenario_module, "BOUNDARIES", {"b1": _Boundary, "b2": _Bare, "b3": _Dotted, "b4": _Capital})
    assert cli.main(["list"]) == 0
    out, err = _out(capsys)
    variants = ", ".join(f"connector_crash_points@{v}" for v in
                         ("before_started", "after_started", "after_effect", "after_completed"))  # fmt: skip
    assert err == "" and out == (
        "policies:\n"
        "  retry_same_key (revision 1)\n"
        "  stop_on_timeout (revision 1)\n"
        "scenarios:\n"
        "  lost_response (revision 1)\n"
        "      Release-42 revision 17 authorizes activating m7 on staging/fraud.\n"
        f"  connector_crash_points (revision 1; 4 cases: {variants})\n"
        f"      {cli._first_sentence(many[0][1].description)}\n"
        "  two (revision 1; 2 cases: connector_crash_points@before_started, connector_crash_points@after_started)\n"
        f"      {cli._first_sentence(many[0][1].description)}\n"
        "fault boundaries:\n"
        "  b1 (wire): A frozen markup\n"
        "  b2 (caller): \n"
        "  b3 (destination): Ends at its dot\n"
        "  b4 (wire): Up to a MAX\n"
    )


def test_list_of_a_scenario_shows_it_alone_and_checks_a_file_of_yours(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A scenario author's review: the only way to check a file of their own was to run it. ``list --scenario``
    loads each as a run does and shows it alone (a file by the name it gives itself, and where it is); a file
    that does not load is the run's one-line error, exit 2, and nothing is listed."""
    from conftest import SCENARIO_DIR

    mine = tmp_path / "mine.yaml"
    mine.write_text((SCENARIO_DIR / "request_lost.yaml").read_text().replace("name: request_lost", "name: mine"))
    assert cli.main(["list", "--scenario", str(mine), "--scenario", "lost_response"]) == 0
    lines = _out(capsys)[0].splitlines()
    assert lines[0] == "scenarios:" and lines[1] == f"  mine (revision 1) in {mine}"
    assert lines[2].startswith("      The first dispatch of a73 is lost") and lines[3] == "  lost_response (revision 1)"
    assert len(lines) == 5
    mine.write_text(mine.read_text().replace("nth: 1}", "nth: 1, nht: 2}"))
    assert cli.main(["list", "--scenario", str(mine)]) == 2
    out, err = _out(capsys)
    assert out == "" and "field 'faults.0.nht'" in err and "rename it 'nth'" in err


def test_list_of_the_shipped_ones_names_every_policy_scenario_and_boundary(capsys: pytest.CaptureFixture[str]) -> None:
    from harness.policy import builtin_policy_names
    from harness.scenario import BOUNDARIES, list_scenarios

    assert cli.main(["list"]) == 0
    lines = _out(capsys)[0].splitlines()
    assert lines[0] == "policies:" and lines[1 : 1 + len(builtin_policy_names())] == [
        f"  {name} (revision {r})"
        for name, r in zip(builtin_policy_names(), ("12", "13", "1", "1", "1", "10"), strict=True)
    ]
    assert len(lines) == 3 + len(builtin_policy_names()) + 2 * len(list_scenarios()) + len(BOUNDARIES)
    assert "  request_lost (wire): The dispatch is lost in the transport before it reaches the destination" in lines
    assert lines[-len(BOUNDARIES) - 1] == "fault boundaries:"


def test_list_prints_nothing_when_a_scenario_does_not_load(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from harness.scenario import ScenarioError

    def broken(name: str) -> Any:
        raise ScenarioError(f"{name}: broken; fix: mend it")

    monkeypatch.setattr(scenario_module, "scenario_cases", broken)
    assert cli.main(["list"]) == 2
    out, err = _out(capsys)
    assert out == "" and err.startswith("harness: ") and "broken; fix: mend it" in err


# -- a description's first sentence -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "first"),
    [
        ("One.  Two.", "One."),
        ("One\n  line. Two.", "One line."),
        ("No stop at all", "No stop at all"),
        ("Ends with a stop.", "Ends with a stop."),
        ("Wait... then. More.", "Wait... then."),
        ("Wait.. then. More.", "Wait.. then."),
        ('He said "stop. now" and left. More.', 'He said "stop. now" and left.'),
        ('A 3.5" disk. More.', 'A 3.5" disk.'),
        ('A 3.5" disk. More. "x', 'A 3.5" disk. More. "x'),
        ('"a. b" c. "d. e" f. g', '"a. b" c.'),
        ("x.y. z", "x.y."),
    ],
)
def test_a_descriptions_first_sentence_ends_at_a_full_stop_outside_quotes(text: str, first: str) -> None:
    assert cli._first_sentence(text) == first


def test_a_long_first_sentence_is_cut_at_a_word_within_the_limit() -> None:
    words = "abcd " * 60
    assert cli._first_sentence(words) == " ".join(["abcd"] * 39) + "..."
    assert cli._first_sentence(words, limit=12) == "abcd..."
    assert cli._first_sentence(words, limit=13) == "abcd abcd..."
    assert cli._first_sentence("x" * 250) == "x" * 197 + "..."
    assert cli._first_sentence("x" * 200) == "x" * 200
    assert cli._first_sentence("ab  " + "c" * 10, limit=10) == "ab..."
    assert cli._first_sentence("a" * 198 + " b") == "a" * 198 + " b"
    assert cli._first_sentence("a" * 198 + " bc") == "a" * 197 + "..."
    assert cli._first_sentence("a" * 190 + " bcdefghijk") == "a" * 190 + "..."


# -- schema -----------------------------------------------------------------------------------------------------


def test_schema_is_printed_or_written_over_only_a_schema(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from harness.present.shape import recovery_schema

    text = json.dumps(recovery_schema(), indent=2) + "\n"
    assert cli.main(["schema"]) == 0
    assert _out(capsys) == (text, "")
    out = tmp_path / "schema.json"
    assert cli.main(["schema", "--out", str(out)]) == 0
    assert _out(capsys) == (f"{out}\n", "") and out.read_text(encoding="utf-8") == text
    out.write_text(text.replace('"properties"', '"properties"', 1)[:-1])  # an earlier one: written over
    assert cli.main(["schema", "--out", str(out)]) == 0 and out.read_text(encoding="utf-8") == text
    _out(capsys)
    other = tmp_path / "notes.json"
    other.write_text("{}")
    assert cli.main(["schema", "--out", str(other)]) == 2
    assert _out(capsys) == (
        "",
        f"harness: --out {other}: exists and is not a schema of recovery.json; fix: give a new file name, or remove "
        "it\n",
    )
    assert other.read_text() == "{}"
    under = other / "schema.json"  # a file where a folder would have to be
    assert cli.main(["schema", "--out", str(under)]) == 2
    assert _out(capsys) == ("", f"harness: --out {under}: {other} is a file, not a folder; fix: give another path\n")
    missing = tmp_path / "new" / "schema.json"  # the folders on its way are made
    assert cli.main(["schema", "--out", str(missing)]) == 0 and missing.read_text(encoding="utf-8") == text


# -- replay -----------------------------------------------------------------------------------------------------


def _case(tmp_path: Path, capsys: pytest.CaptureFixture[str], seed: int = 1) -> Path:
    out = tmp_path / f"run{seed}"
    assert cli.main(_run(out, "--records", "full", seeds=(seed,))) in (0, 4)
    _out(capsys)
    (case,) = out.rglob("recovery.json")
    return case


def test_replay_prints_the_timeline_the_verdict_and_the_anomalies_and_exits_0_when_the_same(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from harness.run.replay import printable, replay, timeline_text

    case = _case(tmp_path, capsys)
    report = replay(case, supervised=False).report
    assert report.outcome == "incorrect" and report.anomalies
    assert cli.main(["replay", str(case)]) == 0
    out, err = _out(capsys)
    anomalies = "".join(
        f"  {a.kind}: {printable(a.detail)} (entries {', '.join(map(str, a.witnesses))})\n" for a in report.anomalies
    )
    assert err == "" and out == (
        f"{timeline_text(report)}\n\n{POLICY} x {SCENARIO} seed 1: incorrect (verdict {report.verdict})\n{anomalies}"
        "replayed: the same as recorded\n"
    )
    assert any(len(a.witnesses) > 1 for a in report.anomalies)


def test_replay_of_a_case_recorded_otherwise_says_each_difference_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from harness.run.replay import replay

    case = _case(tmp_path, capsys, seed=3)
    data = json.loads(case.read_text(encoding="utf-8"))
    data["outcome"] = "incorrect"
    data["verdict"] = "false" if data["verdict"] == "true" else "true"
    case.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    differences = replay(case, supervised=False).differences
    assert len(differences) >= 2
    assert cli.main(["replay", str(case)]) == 1
    out, err = _out(capsys)
    assert err == "".join(f"harness: replay differs: {d}\n" for d in differences)
    assert "replayed: the same" not in out and f"{POLICY} x {SCENARIO} seed 3: correct" in out


def test_a_finding_is_replayed_to_its_differences_and_one_that_is_not_a_case_to_its_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    (said,) = cli._replayed(bad)
    assert said.startswith(f"{bad}: not a recovery.json (") and said.endswith("; fix: give a case file")
    assert cli._replayed(tmp_path / "none.yaml") == (
        f"{tmp_path / 'none.yaml'}: no such file; fix: give a recovery.json or a scenario file written by explore",
    )


# -- report -----------------------------------------------------------------------------------------------------


class _Page:
    """Stands in for the report's page module (pandas, matplotlib): notes each call, draws through what it is
    given, says a line, and writes a page or raises ``fails``."""

    def __init__(self) -> None:
        self.calls: list[tuple[Path, Path | None, Callable[[Sequence[Path]], None] | None, object]] = []
        self.drawn: list[tuple[tuple[Path, ...], int]] = []
        self.fails: BaseException | None = None

    def write_report(self, run_dir: Path, out: Path | None, *, draw: Any, tell: Callable[[str], None],
                     progress: object) -> Path:  # fmt: skip
        self.calls.append((run_dir, out, draw, progress))
        tell("a note\non two lines")
        if draw is not None:
            draw([run_dir / "a.json"])
            draw([run_dir / "a.json", run_dir / "b.json"])
        if self.fails is not None:
            raise self.fails
        page = out if out is not None else run_dir / "report.html"
        page.write_text("page")
        return page

    def draw_timelines(self, paths: Sequence[Path], concurrency: int) -> None:
        self.drawn.append((tuple(paths), concurrency))


@pytest.fixture
def page(monkeypatch: pytest.MonkeyPatch) -> _Page:
    import harness.run.pictures as pictures

    fake = _Page()
    module = types.ModuleType("harness.present.html_report")
    module.write_report = fake.write_report  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "harness.present.html_report", module)
    monkeypatch.setattr(pictures, "draw_timelines", fake.draw_timelines)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(3)))
    return fake


def _folder(tmp_path: Path, *files: str) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    for name in files:
        (run / name).mkdir() if name == "cases" else (run / name).write_text("{}")
    return run


def test_report_writes_the_page_of_a_folder_drawing_its_timelines_and_saying_its_notes(
    tmp_path: Path, page: _Page, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    run = _folder(tmp_path, MANIFEST, RUN_RECORD)
    assert cli.main(["report", str(run)]) == 0
    assert _out(capsys) == (
        f"{run / 'report.html'}\n",
        "harness: a note\\non two lines\ndrawing 1 timeline...\ndrawing 2 timelines...\n",
    )
    ((run_dir, out, draw, progress),) = page.calls
    assert (run_dir, out, draw is not None, type(progress)) == (run, None, True, cli._ReadingLines)
    assert page.drawn == [((run / "a.json",), 3), ((run / "a.json", run / "b.json"), 3)]
    page.calls.clear()
    monkeypatch.delattr(os, "sched_getaffinity")
    monkeypatch.setattr(os, "cpu_count", lambda: None)
    assert cli.main(["report", str(run)]) == 0
    assert page.drawn[-1] == ((run / "a.json", run / "b.json"), 1)


@pytest.mark.parametrize("name", ["p.html", "p.HTM", "p.Html"])
def test_report_to_a_page_elsewhere_draws_nothing_into_the_folder(
    tmp_path: Path, page: _Page, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    run = _folder(tmp_path)
    out = tmp_path / name
    assert cli.main(["report", str(run), "--out", str(out)]) == 0
    assert _out(capsys) == (f"{out}\n", "harness: a note\\non two lines\n")
    assert [(c[0], c[1], c[2]) for c in page.calls] == [(run, out, None)] and page.drawn == []


def test_report_of_a_stopped_run_says_it_is_incomplete_and_how_to_resume_it(
    tmp_path: Path, page: _Page, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _folder(tmp_path, MANIFEST)
    assert cli.main(["report", str(run), "--out", str(tmp_path / "p.html")]) == 0
    assert _out(capsys)[1].endswith(
        f"harness: {run} is incomplete (the run was stopped before it ended), and so is its report; resume: python -m "
        f"harness run --resume {run}\n"
    )
    (run / MANIFEST).unlink()
    (run / RUN_RECORD).write_text("{}")  # a folder of cases that no run wrote: nothing to resume
    assert cli.main(["report", str(run), "--out", str(tmp_path / "p.html")]) == 0
    assert _out(capsys)[1] == "harness: a note\\non two lines\n"


def test_report_of_a_folder_named_relatively_says_its_commands_by_absolute_paths(
    tmp_path: Path, page: _Page, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The resume and replay commands it said named the folder as given (``relrun``), a path that holds only
    where the words were said; every command the harness prints runs from any folder."""
    (tmp_path / "a b").mkdir()
    run = _folder(tmp_path / "a b", MANIFEST)
    monkeypatch.chdir(tmp_path)
    assert cli.main(["report", "a b/run", "--out", str(tmp_path / "p.html")]) == 0
    assert _out(capsys)[1].endswith(f"resume: python -m harness run --resume '{run}'\n")
    assert page.calls[0][0] == run
    (run / "explore.json").write_text("{}")  # and no cases: an exploration
    assert cli.main(["report", "a b/run"]) == 2
    assert f"fix: replay a finding with python -m harness replay '{run}'/findings/<policy>/" in _out(capsys)[1]


def test_report_refuses_what_is_not_a_run_folder_or_not_a_pages_name_before_writing(
    tmp_path: Path, page: _Page, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "none"
    assert cli.main(["report", str(missing)]) == 2
    assert _out(capsys) == ("", f"harness: {missing}: not a folder; fix: give a folder written by 'harness run'\n")
    (tmp_path / "file").write_text("")
    assert cli.main(["report", str(tmp_path / "file")]) == 2
    assert "not a folder" in _out(capsys)[1]
    run = _folder(tmp_path, "explore.json")
    assert cli.main(["report", str(run)]) == 2
    assert _out(capsys) == (
        "",
        f"harness: {run}: an exploration (explore.json), not a run: it holds findings, not cases; fix: replay a "
        f"finding with python -m harness replay {run}/findings/<policy>/<file>.yaml, or load them all with "
        "harness.present.analysis.load_explorations\n",
    )
    (run / "cases").mkdir()  # a run that explored too: a run
    for name in ("p.txt", "p.html.bak", "p"):
        assert cli.main(["report", str(run), "--out", str(tmp_path / name)]) == 2
        out = tmp_path / name
        assert _out(capsys) == (
            "",
            f"harness: --out {out}: not a page's name; fix: give a file name ending in .html, as in --out {out}.html\n",
        )
    assert page.calls == []
    assert cli.main(["report", str(run)]) == 0 and len(page.calls) == 1


def test_report_refuses_a_folder_a_run_is_still_writing(
    tmp_path: Path, page: _Page, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _folder(tmp_path)
    hold = claim(run, fresh=False)
    try:
        assert cli.main(["report", str(run)]) == 2
    finally:
        hold.release()
    assert _out(capsys) == (
        "",
        f"harness: {run}: a harness run is still writing it; fix: wait for that run to end (it writes its own "
        "report.html unless given --no-report), then run this again\n",
    )
    assert page.calls == []
    assert cli.main(["report", str(run)]) == 0


def test_a_folder_the_page_cannot_be_made_of_is_refused_in_its_own_words(
    tmp_path: Path, page: _Page, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _folder(tmp_path)
    page.fails = ValueError(f"{run}: no case in it; fix: give a run's folder")
    assert cli.main(["report", str(run)]) == 2
    out, err = _out(capsys)
    assert out == "" and err.endswith(f"harness: {run}: no case in it; fix: give a run's folder\n")


@pytest.mark.parametrize(
    ("filename", "where"), [("/r/report.html", " (/r/report.html)"), (None, "")]
)  # fmt: skip
def test_a_page_with_no_room_in_its_folder_says_to_write_it_elsewhere(
    tmp_path: Path, page: _Page, capsys: pytest.CaptureFixture[str], filename: str | None, where: str
) -> None:
    run = tmp_path / "my run"
    run.mkdir()
    page.fails = _full(filename)
    assert cli.main(["report", str(run)]) == 1
    out, err = _out(capsys)
    assert out == "" and err.endswith(
        f"harness: {run}: cannot write its report{where}: No space left on device; fix: write it elsewhere, as in "
        f"python -m harness report '{run}' --out /tmp/report.html\n"
    )


def test_a_page_elsewhere_with_no_room_or_another_failure_is_not_told_to_go_elsewhere(
    tmp_path: Path, page: _Page, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _folder(tmp_path)
    page.fails = _full("/p.html")
    assert cli.main(["report", str(run), "--out", str(tmp_path / "p.html")]) == 1
    assert _out(capsys)[1].endswith(
        "harness: cannot write a file (/p.html): No space left on device; fix: make room or give a writable folder, "
        "then run the command again\n"
    )
    page.fails = FileNotFoundError(errno.ENOENT, "No such file or directory", "x.json")
    assert cli.main(["report", str(run)]) == 1
    assert "harness: internal error: FileNotFoundError" in _out(capsys)[1]


# -- check ------------------------------------------------------------------------------------------------------


def test_check_of_a_failing_policy_prints_each_failure_its_count_its_files_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, junit = tmp_path / "out", tmp_path / "j.xml"
    words = ["check", "--policy", POLICY, "--scenario", SCENARIO, "--seed-count", "2", "--out", "out"]
    assert cli.main([*words, "--junit", str(junit)]) == 1
    repro = out / "repro" / POLICY
    failed = (
        f"FAIL {POLICY} x {SCENARIO} seed {{}}: incorrect: duplicate_effects, abandoned_actions violated; reproduce: "
    )
    assert _out(capsys) == (
        f"{failed.format(1)}python -m harness replay {repro / 'seed-1' / SCENARIO}.yaml\n"
        f"{failed.format(2)}python -m harness replay {repro / 'seed-2' / SCENARIO}.yaml\n"
        f"{POLICY} (revision 1): 0 of 2 cases correct or escalated; not: incorrect 2; cases and repro files in {out}\n"
        f"junit: {junit}\ncheck: failed\n",
        "",
    )
    assert junit.read_text(encoding="utf-8").count("<testcase") == 2


def test_check_of_a_passing_policy_keeps_nothing_and_exits_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    words = ["check", "--policy", "reconcile_and_reauthorize", "--scenario", "lost_response", "--seed-count", "1"]
    assert cli.main(words) == 0
    assert _out(capsys) == (
        "reconcile_and_reauthorize (revision 13): 1 of 1 cases correct or escalated\ncheck: passed\n",
        "",
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # its temporary folder went


class _Checks:
    """Stands in for ``check_policy``: notes each call, returns ``summary``."""

    def __init__(self, summary: CheckSummary) -> None:
        self.summary = summary
        self.calls: list[tuple[str, CheckOptions, object]] = []

    def __call__(
        self, policy: str, options: CheckOptions, progress: object = None, cases_progress: object = None
    ) -> CheckSummary:
        self.calls.append((policy, options, progress))
        self.cases_progress = cases_progress
        return self.summary


def _gate(name: str, outcome: str = "correct", **more: Any) -> GateCase:
    status = "passed" if outcome in ("correct", "escalated") else "error" if outcome == "harness_error" else "failed"
    return GateCase("p", name, outcome, status, **more)  # type: ignore[arg-type]


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> _Checks:
    fake = _Checks(CheckSummary("p", "7", None, (_gate("s seed 1"),)))
    monkeypatch.setattr(runner, "check_policy", fake)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(4)))
    return fake


def test_check_is_asked_for_the_scenarios_seeds_folder_processes_and_budget_given(
    tmp_path: Path, checks: _Checks, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["check", "--policy", "p"]) == 0
    assert checks.calls == [("p", CheckOptions(seeds=(1, 2, 3), concurrency=1, case_timeout_s=60.0),
                             cli._explore_progress)]  # fmt: skip
    assert _out(capsys) == ("p (revision 7): 1 of 1 cases correct or escalated\ncheck: passed\n", "")
    words = ["check", "--policy", "q", "--scenario", "a", "--scenario", "b", "--seed-count", "2", "--explore"]
    more = ["--out", "o", "--concurrency", "4", "--case-timeout", "0", "--quiet"]
    assert cli.main(words + more) == 0
    assert checks.calls[1] == (
        "q",
        CheckOptions(scenarios=("a", "b"), seeds=(1, 2), explore=True, out=tmp_path / "o", concurrency=4,
                     case_timeout_s=None),
        None,
    )  # fmt: skip
    assert cli.main(["check", "--policy", "q", "--case-timeout", "2.5", "--concurrency", "5"]) == 0
    assert checks.calls[2][1].case_timeout_s == 2.5 and checks.calls[2][1].concurrency == 4
    assert _out(capsys)[1] == (
        "harness: --concurrency 5 is more than the 4 cores here; using 4 (pass --force-concurrency to use it anyway)\n"
    )
    assert cli.main(["check", "--policy", "q", "--concurrency", "5", "--force-concurrency"]) == 0
    assert checks.calls[3][1].concurrency == 5 and _out(capsys)[1] == ""


def test_check_gates_one_policy_and_refuses_a_junit_it_could_not_write_before_running(
    tmp_path: Path, checks: _Checks, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["check", "--policy", "p", "--policy", "q"]) == 2
    assert _out(capsys) == (
        "",
        "harness: --policy given more than once: check gates one policy; fix: run check once per policy\n",
    )
    inside = tmp_path / "o" / "junit"
    assert cli.main(["check", "--policy", "p", "--out", "o", "--junit", str(inside)]) == 2
    assert _out(capsys)[1] == (
        f"harness: --junit {inside}: inside the run's folder o, where it could replace a file the run writes; fix: "
        "give a name ending in .xml, such as o/junit.xml\n"
    )
    assert cli.main(["check", "--policy", "p", "--junit", str(tmp_path)]) == 2
    assert "is a folder" in _out(capsys)[1]
    assert checks.calls == []


def test_check_prints_each_failure_its_warnings_its_notes_and_the_outcomes_not_passed(
    tmp_path: Path, checks: _Checks, capsys: pytest.CaptureFixture[str]
) -> None:
    checks.summary = CheckSummary(
        "p",
        "7",
        tmp_path / "o",
        (
            _gate("s seed 1", "incorrect", message="incorrect: x violated", reproduce="python -m harness replay r1",
                  differences=("outcome: a != b", "seed: 1 != 2")),
            _gate("s seed 2", "harness_error", message="harness_error: over its budget"),
            _gate("s seed 3"),
            _gate("t seed 1", "incorrect", message="incorrect: y violated", reproduce="r3"),
            _gate("t seed 2", "escalated"),
        ),
        notes=("note: one", "note: two"),
    )  # fmt: skip
    assert cli.main(["check", "--policy", "p"]) == 1
    assert _out(capsys) == (
        "FAIL p x s seed 1: incorrect: x violated; reproduce: python -m harness replay r1\n"
        "  warning: its repro file does not replay to this case: outcome: a != b\n"
        "  warning: its repro file does not replay to this case: seed: 1 != 2\n"
        "FAIL p x s seed 2: harness_error: over its budget; reproduce: (see the JUnit)\n"
        "FAIL p x t seed 1: incorrect: y violated; reproduce: r3\n"
        f"p (revision 7): 2 of 5 cases correct or escalated; not: incorrect 2, harness_error 1; cases and repro files "
        f"in {tmp_path / 'o'}\n"
        "check: failed\n",
        "note: one\nnote: two\n",
    )


def test_checks_counts_are_written_with_thousands_separators(
    checks: _Checks, capsys: pytest.CaptureFixture[str]
) -> None:
    """As its progress lines write them (a demanding user's review: "28500 of 28500 cases" beside "12,300 of
    28,500")."""
    passing = tuple(_gate(f"s seed {n}") for n in range(1, 1101))
    failing = tuple(_gate(f"t seed {n}", "incorrect", message="incorrect", reproduce="r") for n in range(1, 1002))
    checks.summary = CheckSummary("p", "7", None, passing + failing)
    assert cli.main(["check", "--policy", "p", "--quiet"]) == 1
    assert "p (revision 7): 1,100 of 2,101 cases correct or escalated; not: incorrect 1,001\n" in _out(capsys)[0]


def test_check_with_exploration_says_the_schedules_the_findings_and_what_stopped_it(
    checks: _Checks, capsys: pytest.CaptureFixture[str]
) -> None:
    explored = (
        _gate("explored s-1 seed 1", "incorrect", message="incorrect", reproduce="r"),
        _gate("explored s-2 seed 1", "harness_error", message="harness_error: s: over its 60 s budget"),
        _gate("explored s-3 seed 1", "harness_error", message="harness_error: second"),
        _gate("explored t seed 1"),
    )
    checks.summary = CheckSummary("p", "7", None, (_gate("s seed 1"),), explored, schedules=12_345)
    assert cli.main(["check", "--policy", "p", "--explore"]) == 1
    out = _out(capsys)[0].splitlines()
    assert out[-2:] == [
        "p (revision 7): 1 of 1 cases correct or escalated; 12,345 schedules explored (each at every seed), 1 finding "
        "(s: over its 60 s budget)",
        "check: failed",
    ]
    checks.summary = replace(checks.summary, explored=explored[:1] * 2 + explored[3:])
    assert cli.main(["check", "--policy", "p", "--explore"]) == 1
    assert _out(capsys)[0].splitlines()[-2].endswith("; 12,345 schedules explored (each at every seed), 2 findings")
    checks.summary = replace(checks.summary, explored=explored[3:])
    assert cli.main(["check", "--policy", "p", "--explore"]) == 0
    assert _out(capsys)[0].splitlines()[-2].endswith("(each at every seed), 0 findings")
    assert cli.main(["check", "--policy", "p"]) == 0  # the same summary, not asked to explore: not said
    assert _out(capsys)[0] == "p (revision 7): 1 of 1 cases correct or escalated\ncheck: passed\n"


@pytest.mark.parametrize(("out", "again"), [(None, "the same command"),
                                            ("o", "with a new --out (this one holds the cases)")])  # fmt: skip
def test_a_junit_with_no_room_fails_the_check_saying_how_to_write_it(
    tmp_path: Path,
    checks: _Checks,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    out: str | None,
    again: str,
) -> None:
    import harness.gate.junit as junit_module

    def full(path: Path, suites: object) -> None:
        raise _full(str(path))

    monkeypatch.setattr(junit_module, "write_junit", full)
    junit = tmp_path / "j.xml"
    words = ["check", "--policy", "p", "--junit", str(junit), *(["--out", out] if out else [])]
    assert cli.main(words) == 1
    assert _out(capsys) == (
        "p (revision 7): 1 of 1 cases correct or escalated\ncheck: failed (no JUnit file)\n",
        f"harness: --junit {junit}: cannot write it (No space left on device); fix: make room or give a writable path, "
        f"then run {again}\n",
    )
    monkeypatch.setattr(junit_module, "write_junit", lambda path, suites: (_ for _ in ()).throw(_quiet_oserror()))
    assert cli.main(words) == 1
    assert "cannot write it (disk gone)" in _out(capsys)[1]


def test_a_junit_that_fails_otherwise_is_not_taken_for_a_full_disk(
    tmp_path: Path, checks: _Checks, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import harness.gate.junit as junit_module

    def gone(path: Path, suites: object) -> None:
        raise FileNotFoundError(errno.ENOENT, "No such file or directory", str(path))

    monkeypatch.setattr(junit_module, "write_junit", gone)
    assert cli.main(["check", "--policy", "p", "--junit", str(tmp_path / "j.xml")]) == 1
    out, err = _out(capsys)
    assert out == "" and "internal error: FileNotFoundError" in err


def test_a_check_with_a_junit_writes_the_summarys_suites(
    tmp_path: Path, checks: _Checks, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import harness.gate.junit as junit_module

    written: list[tuple[Path, object]] = []
    monkeypatch.setattr(junit_module, "write_junit", lambda path, suites: written.append((path, suites)))
    junit = tmp_path / "j.xml"
    assert cli.main(["check", "--policy", "p", "--junit", str(junit)]) == 0
    assert written == [(junit, checks.summary.suites())]
    assert _out(capsys)[0].endswith(f"junit: {junit}\ncheck: passed\n")


# -- explore ----------------------------------------------------------------------------------------------------


class _Explores:
    """Wraps ``explore`` as the command calls it: notes each call, then explores for real, or returns ``summary``."""

    def __init__(self, summary: ExploreSummary | None = None) -> None:
        self.summary = summary
        self.calls: list[tuple[list[str], list[str], ExploreOptions, object]] = []
        self.explored: list[ExploreSummary] = []

    def __call__(self, policies: Sequence[str], scenarios: Sequence[str], options: ExploreOptions,
                 progress: object = None) -> ExploreSummary:  # fmt: skip
        self.calls.append((list(policies), list(scenarios), options, progress))
        if self.summary is not None:
            return self.summary
        self.explored.append(explore_for_real(policies, scenarios, options, progress))  # type: ignore[arg-type]
        return self.explored[-1]


explore_for_real = exploration.explore


@pytest.fixture
def explores(monkeypatch: pytest.MonkeyPatch) -> _Explores:
    fake = _Explores()
    monkeypatch.setattr(exploration, "explore", fake)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(4)))
    return fake


def test_explore_says_what_it_explored_and_found_and_replays_each_finding_shown(
    tmp_path: Path, explores: _Explores, capsys: pytest.CaptureFixture[str], in_process: Supervised
) -> None:
    words = ["explore", "--policy", "retry_new_key", "--policy", "reconcile_and_reauthorize", "--scenario",
             "lost_response", "--depth", "1", "--swarm", "0", "--tracking", "none", "--out", "out"]  # fmt: skip
    assert cli.main(words) == 1
    (summary,) = explores.explored
    out, err = _out(capsys)
    found = tmp_path / "out" / "findings" / "retry_new_key"
    rate = f"{summary.schedules / summary.elapsed_s:,.0f}"
    assert out == (
        f"{summary.schedules} schedules, {summary.cases} cases judged with {summary.simulated} simulations "
        "(shrinking's included; a schedule that adds what a smaller schedule's run never reached is judged from that "
        f"run) in {summary.elapsed_s:.1f} s ({rate} schedules/s); {summary.violating} violating cases, 3 findings in "
        f"{tmp_path / 'out'}\n"
        + "".join(f"  {name}: {count} violating cases\n" for name, count in sorted(summary.violations.items()))
        + f"  retry_new_key x lost_response: 3 findings in {found}\n"
        "replay a finding:\n"
        f"  incorrect  duplicate_effects: python -m harness replay {found / 'lost_response-1.yaml'}\n"
        f"  incorrect  unauthorized_dispatches, duplicate_effects: python -m harness replay "
        f"{found / 'lost_response-2.yaml'}\n"
        f"  incorrect  unauthorized_dispatches, duplicate_effects, effects_after_cancel: python -m harness replay "
        f"{found / 'lost_response-3.yaml'}\n"
    )
    assert list(summary.violations) and sorted(summary.violations) != list(summary.violations)
    assert err == f"[1/1] lost_response: {summary.schedules} schedules, {summary.violating} violating cases\n"
    # The template explored as one job (both policies), then the three findings replayed, each here.
    assert [c[0] for c in in_process.calls] == [1, 1, 1, 1]


def test_explore_is_asked_for_what_was_given_and_every_shipped_policy_and_scenario_by_default(
    tmp_path: Path, explores: _Explores, capsys: pytest.CaptureFixture[str]
) -> None:
    from harness.policy import builtin_policy_names
    from harness.scenario import list_scenarios

    explores.summary = ExploreSummary(tmp_path / "o")
    assert cli.main(["explore"]) == 0
    assert explores.calls == [(builtin_policy_names(), list_scenarios(),
                               ExploreOptions(seeds=(1,), case_timeout_s=60.0, resumable=True), cli._explore_progress)]  # fmt: skip
    words = ["explore", "--policy", "p", "--scenario", "s", "--depth", "3", "--swarm", "5", "--seed-count", "2",
             "--concurrency", "3", "--shard", "1/3", "--out", "o", "--tracking", "server", "--project", "me/it",
             "--case-timeout", "0", "--unfired", "note", "--quiet"]  # fmt: skip
    assert cli.main(words) == 0
    assert explores.calls[1] == (
        ["p"],
        ["s"],
        ExploreOptions(out=tmp_path / "o", depth=3, swarm=5, seeds=(1, 2), concurrency=3, shard=1, shards=3,
                       tracking="server", project="me/it", case_timeout_s=None, unfired="note", resumable=True),
        None,
    )  # fmt: skip
    assert _out(capsys)[1] == ""
    assert cli.main(["explore", "--concurrency", "6", "--case-timeout", "1.5"]) == 0
    assert explores.calls[2][2].concurrency == 4 and explores.calls[2][2].case_timeout_s == 1.5
    assert _out(capsys)[1] == (
        "harness: --concurrency 6 is more than the 4 cores here; using 4 (pass --force-concurrency to use it anyway)\n"
    )
    assert cli.main(["explore", "--concurrency", "6", "--force-concurrency"]) == 0
    assert explores.calls[3][2].concurrency == 6 and _out(capsys)[1] == ""


def _explored(out: Path, findings: int, **more: Any) -> ExploreSummary:
    made = [(_finding(Schedule(()), first_seen=k, properties=("p", f"q{k}")), out / f"f{k}.yaml")
            for k in range(findings)]  # fmt: skip
    row = Exploration("retry_new_key", "retry_new_key", "3", "lost_response", "1", schedules=2_000, cases=3_000,
                      simulated=1_500, violating=1, violations=Counter(z=1, a=2_000), findings=made)  # fmt: skip
    return ExploreSummary(out, [row], elapsed_s=more.pop("elapsed_s", 0.0), **more)


def test_explore_shows_the_first_ten_findings_and_says_where_the_rest_are(
    tmp_path: Path, explores: _Explores, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    replayed: list[tuple[Path]] = []
    monkeypatch.setattr(cli, "_replayed", _noting(replayed, ()))
    explores.summary = _explored(tmp_path, 12)
    assert cli.main(["explore"]) == 1
    lines = _out(capsys)[0].splitlines()
    assert lines[0] == (
        "2,000 schedules, 3,000 cases judged with 1,500 simulations (shrinking's included; a schedule that adds what a "
        "smaller schedule's run never reached is judged from that run) in 0.0 s (0 schedules/s); 1 violating case, 12 "
        f"findings in {tmp_path}"
    )
    assert lines[1:5] == [
        "  a: 2,000 violating cases",
        "  z: 1 violating case",
        f"  retry_new_key x lost_response: 12 findings in {tmp_path}",
        "the first 10 findings:",
    ]
    assert lines[5:] == [
        *(f"  incorrect  p, q{k}: python -m harness replay {tmp_path / f'f{k}.yaml'}" for k in range(10)),
        f"  ... and 2 more, listed in {tmp_path / 'explore.json'}",
    ]
    assert replayed == [(tmp_path / f"f{k}.yaml",) for k in range(10)]


def test_explore_warns_of_a_finding_that_does_not_replay_and_replays_none_it_could_not_judge(
    tmp_path: Path, explores: _Explores, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    differs = {
        tmp_path / "f1.yaml": ("first of f1", "second of f1", "last of f1"),
        tmp_path / "f2.yaml": ("only of f2",),
    }
    replayed: list[Path] = []

    def replays(path: Path) -> tuple[str, ...]:
        replayed.append(path)
        return differs.get(path, ())

    monkeypatch.setattr(cli, "_replayed", replays)
    summary = _explored(tmp_path, 4, elapsed_s=4.0)
    stuck = replace(summary.explorations[0].findings[3][0], outcome="harness_error")
    summary.explorations[0].findings[3] = (stuck, tmp_path / "f3.yaml")
    explores.summary = summary
    assert cli.main(["explore"]) == 1
    lines = _out(capsys)[0].splitlines()
    assert "in 4.0 s (500 schedules/s)" in lines[0]
    assert lines[4:] == [
        "replay a finding:",
        f"  incorrect  p, q0: python -m harness replay {tmp_path / 'f0.yaml'}",
        f"  incorrect  p, q1: python -m harness replay {tmp_path / 'f1.yaml'}",
        "    warning: it does not replay: first of f1",
        f"  incorrect  p, q2: python -m harness replay {tmp_path / 'f2.yaml'}",
        "    warning: it does not replay: only of f2",
        f"  harness_error p, q3: python -m harness replay {tmp_path / 'f3.yaml'}",
        "  warning: a finding above does not replay: last of f1",
    ]
    assert replayed == [tmp_path / f"f{k}.yaml" for k in range(3)]


def test_the_findings_of_a_shard_are_said_to_be_candidates(
    tmp_path: Path, explores: _Explores, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cli, "_replayed", lambda path: ())
    explores.summary = _explored(tmp_path, 1)
    assert cli.main(["explore", "--shard", "1/2"]) == 1
    assert _out(capsys)[0].splitlines()[-1] == (
        "  shard 1 of 2: these are candidates (every copy the choice over all shards could need); load_explorations "
        "of every shard's folder chooses the findings one exploration would write"
    )
    assert cli.main(["explore"]) == 1
    assert "candidates" not in _out(capsys)[0]
    explores.summary = _explored(tmp_path, 0)
    assert cli.main(["explore", "--shard", "1/2"]) == 0
    assert _out(capsys)[0].splitlines()[1:] == ["  a: 2,000 violating cases", "  z: 1 violating case"]


def _coverage(scenario: str) -> FaultCoverage:
    return FaultCoverage(scenario, 0, "request_lost nth=2", 3, 0)


@pytest.mark.parametrize(
    ("more", "status", "out", "err"),
    [
        ({}, 0, "", ""),
        ({"tracking": TrackingNote(True, "tracked: 1 run")}, 0, "tracked: 1 run\n", ""),
        ({"tracking": TrackingNote(False, "tracking failed")}, 3, "", "tracking failed\n"),
        ({"tracking": TrackingNote(False, None)}, 3, "", ""),
        ({"errors": ["e1", "e2"]}, 1, "",
         "harness error (exploration went on): e1\nharness error (exploration went on): e2\n"),
        ({"unfired": [_coverage("s")]}, 4, "",
         "harness: scenario s declares fault request_lost nth=2, which fired in no case of the policies explored (its "
         "site was reached in 3 cases); fix: make the fault reachable, or run a policy that reaches it\n"),
        ({"unfired": [_coverage("s")], "stopped_in": {"s"}, "errors": ["e"]}, 1, "",
         "harness error (exploration went on): e\nharness: scenario s declares fault request_lost nth=2, which fired "
         "in no case of the policies explored (its site was reached in 3 cases); fix: mend the harness errors above "
         "first; a case that did not run reached no fault\n"),
        ({"unfired": [_coverage("s")], "tracking": TrackingNote(False, "t")}, 4, "", None),
    ],
)  # fmt: skip
def test_an_explorations_errors_unfired_faults_and_tracking_are_said_and_make_its_exit_status(
    tmp_path: Path,
    explores: _Explores,
    capsys: pytest.CaptureFixture[str],
    more: dict[str, Any],
    status: int,
    out: str,
    err: str | None,
) -> None:
    explores.summary = _explored(tmp_path, 0, **more)
    assert cli.main(["explore"]) == status
    said_out, said_err = _out(capsys)
    assert said_out.splitlines(keepends=True)[3:] == ([out] if out else [])
    if err is not None:
        assert said_err == err


# -- run: planning, the options of the grid, and what bad input leaves -------------------------------------------


@dataclass
class _Grids:
    """Wraps ``plan_cells`` and ``run_grid`` as the command calls them: notes what each was given, then does it
    (planned with ``concurrency`` instead of the plan's, when set)."""

    planned: list[tuple[object, ...]] = field(default_factory=list)
    ran: list[tuple[Any, dict[str, Any]]] = field(default_factory=list)
    concurrency: int | None = None
    fails: BaseException | None = None


@pytest.fixture
def grids(monkeypatch: pytest.MonkeyPatch) -> _Grids:
    import harness.run as run_module
    from harness.run.plan import Plan

    fake = _Grids()
    plan_cells, run_grid = run_module.plan_cells, run_module.run_grid

    def planned(*args: Any) -> Plan:
        fake.planned.append(args)
        if args[0] is None and args[1] is None and args[3] is None:  # the default grid: one cell of it
            args = (["stop_on_timeout"], ["lost_response"], args[2], None, args[4])
        plan = plan_cells(*args)
        return plan if fake.concurrency is None else Plan(plan.cells, fake.concurrency)

    def ran(plan: Any, options: Any, **kw: Any) -> Any:
        fake.ran.append((options, kw))
        if fake.fails is not None:
            raise fake.fails
        return run_grid(plan, options, **kw)

    monkeypatch.setattr(run_module, "plan_cells", planned)
    monkeypatch.setattr(run_module, "run_grid", ran)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(2)))
    return fake


def test_a_run_plans_its_seeds_as_given_and_runs_with_the_options_given(
    tmp_path: Path, grids: _Grids, capsys: pytest.CaptureFixture[str]
) -> None:
    words = ["run", "--policy", POLICY, "--scenario", SCENARIO, "--seed", "2", "--seed", "1", "--out", "rel",
             "--tracking", "none", "--project", "me/it", "--no-report", "--records", "compact", "--failing-files", "1",
             "--case-timeout", "0", "--junit", "j.xml"]  # fmt: skip
    assert cli.main(words) == 0
    assert grids.planned == [([POLICY], [SCENARIO], (2, 1), None, None)]
    ((options, kw),) = grids.ran
    out = tmp_path / "rel"
    assert (options.out, options.tracking, options.project, options.report, options.records, options.failing_files,
            options.case_timeout_s, options.junit) == (out, "none", "me/it", False, "compact", 1, None,
                                                       tmp_path / "j.xml")  # fmt: skip
    assert options.isolate
    assert kw["progress"] is cli._progress and isinstance(kw["reading"], cli._ReadingLines)
    assert kw["begun"].out == out and kw["checked"] is None
    said, err = _out(capsys)
    assert f"2 cases in {out}  (summary: {out / 'summary.csv'})" in said and said.endswith("\njunit: j.xml\n")
    assert (tmp_path / "j.xml").is_file()
    assert err == f"[1/1] {POLICY} x {SCENARIO}: incorrect 2\n"
    assert json.loads((out / REQUEST).read_text()) == {"argv": words, "cwd": str(tmp_path)}


def test_a_run_of_seeds_one_to_n_with_defaults_and_quiet(
    tmp_path: Path, grids: _Grids, capsys: pytest.CaptureFixture[str]
) -> None:
    grids.fails = RunFailed("stopped as it began")  # what it was asked is known: enough (tracking takes seconds)
    assert cli.main(["run", "--policy", POLICY, "--scenario", SCENARIO, "--seed-count", "2", "--quiet"]) == 1
    assert grids.planned == [([POLICY], [SCENARIO], range(1, 3), None, None)]
    ((options, kw),) = grids.ran
    assert (options.tracking, options.project, options.report, options.records, options.failing_files,
            options.case_timeout_s, options.junit) == ("offline", "default/recovery-harness", True, "auto", None,
                                                       60.0, None)  # fmt: skip
    assert kw["progress"] is None and kw["reading"] is None
    assert options.out.parent == tmp_path / "reports" / "runs" and options.out.is_absolute()
    assert _out(capsys) == ("", "harness: stopped as it began\n")
    grids.fails = None
    assert cli.main(["run", "--quiet", "--tracking", "none", "--no-report"]) == 0
    assert grids.planned[1] == (None, None, None, None, None)


def test_a_concurrency_given_or_in_a_given_polyaxonfile_is_lowered_saying_where_it_came_from(
    tmp_path: Path, grids: _Grids, capsys: pytest.CaptureFixture[str]
) -> None:
    grids.concurrency = 3
    assert cli.main(_run(tmp_path / "a", "--concurrency", "3")) == 0
    assert grids.planned[0][4] == 3 and grids.ran[0][1]["checked"] is not None
    assert _out(capsys)[1] == (
        "harness: --concurrency 3 is more than the 2 cores here; using 2 (pass --force-concurrency to use it anyway)\n"
    )
    assert json.loads((tmp_path / "a" / MANIFEST).read_text())["concurrency"] == 2
    assert cli.main(_run(tmp_path / "b", "--concurrency", "3", "--force-concurrency")) == 0
    assert _out(capsys)[1] == "" and json.loads((tmp_path / "b" / MANIFEST).read_text())["concurrency"] == 3
    grid_file = Path(__file__).resolve().parent.parent / "polyaxonfiles" / "grid.yaml"
    words = ["run", "--polyaxonfile", str(grid_file), "--out", str(tmp_path / "c"), *QUIET]
    grids.fails = KeyboardInterrupt("stopped here")  # planned: enough (what was said is said once it ran)
    assert cli.main(words) == 130
    assert _out(capsys)[1] == "harness: stopped here\n"
    assert grids.planned[-1] == (None, None, None, grid_file, None)
    assert grids.ran[-1][1]["checked"] is not None
    grids.ran[-1][1]["checked"]()
    assert _out(capsys)[1] == (
        f"harness: {grid_file}: matrix.concurrency 3 is more than the 2 cores here; using 2 (pass --force-concurrency "
        "to use it anyway)\n"
    )
    grids.fails = None
    assert cli.main(["run", "--out", str(tmp_path / "d"), *QUIET]) == 0  # the default grid's: lowered silently
    assert grids.ran[-1][1]["checked"] is None and _out(capsys)[1] == ""
    assert json.loads((tmp_path / "d" / MANIFEST).read_text())["concurrency"] == 2


def test_a_run_refuses_failing_files_with_full_records_before_making_its_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(_run(tmp_path / "o", "--records", "full", "--failing-files", "2")) == 2
    assert _out(capsys) == (
        "",
        "harness: --failing-files: limits the recovery.json files of cells written as compact records, and --records "
        "full writes one for every case; fix: drop --failing-files, or give --records compact or auto\n",
    )
    assert not (tmp_path / "o").exists()
    assert cli.main(_run(tmp_path / "o", "--records", "compact", "--failing-files", "2")) == 0


def test_a_run_refuses_a_junit_it_could_not_write_before_making_its_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(_run(tmp_path / "o", "--junit", str(tmp_path / "o" / "j"))) == 2
    assert _out(capsys)[1] == (
        f"harness: --junit {tmp_path / 'o' / 'j'}: inside the run's folder {tmp_path / 'o'}, where it could replace a "
        f"file the run writes; fix: give a name ending in .xml, such as {tmp_path / 'o' / 'junit.xml'}\n"
    )
    assert not (tmp_path / "o").exists()
    assert cli.main(["run", "--out", "o", "--junit", "o/j", *QUIET]) == 2  # the folder made absolute first
    assert f"inside the run's folder {tmp_path / 'o'}," in _out(capsys)[1]


@pytest.mark.parametrize("made", [True, False])
def test_bad_input_leaves_no_trace_of_the_run_and_a_folder_it_made_goes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], made: bool
) -> None:
    out = tmp_path / "o"
    if not made:
        out.mkdir()
    assert cli.main(["run", "--policy", "nope", "--scenario", SCENARIO, "--out", str(out), *QUIET]) == 2
    assert "nope" in _out(capsys)[1]
    assert out.exists() is (not made) and (made or list(out.iterdir()) == [])


def test_bad_input_found_by_the_grid_before_its_manifest_leaves_nothing_and_after_it_leaves_the_folder(
    tmp_path: Path, grids: _Grids, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    grids.fails = InputError("bad; fix: mend it")
    assert cli.main(_run(tmp_path / "o")) == 2
    assert _out(capsys)[1] == "harness: bad; fix: mend it\n" and not (tmp_path / "o").exists()
    grids.fails = RunFailed("cannot write; fix: make room")
    assert cli.main(_run(tmp_path / "p")) == 1
    assert _out(capsys)[1] == "harness: cannot write; fix: make room\n"
    assert sorted(p.name for p in (tmp_path / "p").iterdir()) == [LOCK_FILE, REQUEST]

    def manifest_then_bad(plan: Any, options: Any, **kw: Any) -> Any:
        (options.out / MANIFEST).write_text("{}")
        raise InputError("late; fix: mend it")

    import harness.run as run_module

    monkeypatch.setattr(run_module, "run_grid", manifest_then_bad)
    assert cli.main(_run(tmp_path / "r")) == 2
    assert _out(capsys)[1] == "harness: late; fix: mend it\n"
    assert sorted(p.name for p in (tmp_path / "r").iterdir()) == [LOCK_FILE, MANIFEST, REQUEST]


def test_a_runs_junit_has_a_case_per_scenario_and_seed_in_order_with_absolute_repro_paths(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import xml.etree.ElementTree as ET

    junit = tmp_path / "j.xml"
    assert cli.main(["run", "--policy", POLICY, "--scenario", SCENARIO, "--seed", "3", "--seed", "1", "--out", "o",
                     "--junit", "j.xml", *QUIET]) == 0  # fmt: skip
    cases = ET.parse(junit).getroot().iter("testcase")
    names = [(c.get("name"), [f.tag for f in c]) for c in cases]
    assert names == [(f"{SCENARIO} seed 1", ["failure"]), (f"{SCENARIO} seed 3", [])]
    repro = tmp_path / "o" / "repro" / POLICY / "seed-1" / f"{SCENARIO}.yaml"
    assert f"python -m harness replay {repro}" in junit.read_text() and repro.is_file()
    assert _out(capsys)[0].endswith("\njunit: j.xml\n")


def test_the_junit_of_a_grid_names_each_cell_and_seeds_in_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from harness.run import plan_cells

    assert cli.main(_run(tmp_path / "o", seeds=(2, 1))) == 0
    plan = plan_cells([POLICY], [SCENARIO], [2, 1], None, 1)
    junit = tmp_path / "j.xml"
    cli._write_junit(junit, plan, Path("o"))  # the repro files named from anywhere
    text = junit.read_text()
    assert text.index(f"{SCENARIO} seed 1") < text.index(f"{SCENARIO} seed 2")
    assert text.count("<testcase") == 2 and text.count("<failure") == 2
    assert f"python -m harness replay {tmp_path / 'o' / 'repro' / POLICY / 'seed-2' / SCENARIO}.yaml" in text


# -- run --resume ------------------------------------------------------------------------------------------------


def test_a_resume_refuses_every_option_the_manifest_gives_naming_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "o"
    assert cli.main(["run", "--resume", str(out), "--seed", "1", "--tracking", "none"]) == 2
    assert _out(capsys) == (
        "",
        "harness: --resume takes its cells and options from the run's manifest, not --seed, --tracking; fix: drop "
        "them\n",
    )
    assert cli.main(["run", "--resume", str(out), "--failing-files", "0"]) == 2
    assert _out(capsys)[1] == (
        "harness: --resume takes its cells and options from the run's manifest, not --failing-files; fix: drop it\n"
    )
    assert not out.exists()


def test_a_resume_runs_what_is_missing_in_the_processes_given_capped_at_the_cores_as_a_new_run_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, in_process: Supervised
) -> None:
    """--concurrency N with --resume: the pieces still missing run in N processes (run.json's "processes"), lowered
    to the cores this process may use with the same note as a new run's unless --force-concurrency; the pieces stay
    those the manifest's concurrency planned. The note comes once the run is known to be resumable: a complete run
    or a refused resume says only what it says without it. Before, --concurrency with --resume was refused."""
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    out = _stopped(tmp_path, capsys, "--concurrency", "2")
    manifest = (out / MANIFEST).read_text()
    note = (
        "harness: --concurrency 60 is more than the 2 cores here; using 2 (pass --force-concurrency to use it anyway)\n"
    )
    for given, processes, said in (
        (["--concurrency", "60"], 2, note),
        (["--concurrency", "60", "--force-concurrency"], 60, ""),
        (["--concurrency", "1"], 1, ""),
        (["--force-concurrency", "--concurrency", "1"], 1, ""),
    ):
        assert cli.main(["run", "--resume", str(out), "--quiet", *given]) == 0, given
        assert _out(capsys)[1] == said, given
        assert in_process.calls[-1][:2] == (1, processes), given  # its one piece, in that many processes
        record = json.loads((out / RUN_RECORD).read_text())
        assert (record["concurrency"], record["processes"]) == (2, processes), given
        assert (out / MANIFEST).read_text() == manifest
        (out / RUN_RECORD).unlink()
        (out / ".parts").mkdir()
    calls = len(in_process.calls)
    out = tmp_path / "whole"
    assert cli.main(_run(out)) == 0  # a complete run: nothing to run, nothing to lower
    _out(capsys)
    assert cli.main(["run", "--resume", str(out), "--concurrency", "60"]) == 0
    assert _out(capsys) == (f"nothing to resume: the run in {out} is complete\n", "")
    (out / RUN_RECORD).unlink()
    (out / MANIFEST).write_text((out / MANIFEST).read_text().replace('"concurrency": 1', '"concurrency": 2'))
    assert cli.main(["run", "--resume", str(out), "--concurrency", "60"]) == 2  # an edited manifest: one line
    (line,) = _out(capsys)[1].splitlines()
    assert line.startswith(f"harness: {out / MANIFEST}: field 'digest': does not match the rest of the file")
    assert len(in_process.calls) == calls + 1  # only the complete run's own


def test_a_run_stopped_before_it_planned_resumes_in_the_processes_given_split_as_its_words_say(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, in_process: Supervised
) -> None:
    """Planned again from its request, the run splits its cells by the concurrency its words give (what a clean run
    of those words writes), and runs them in the processes the resume gives."""
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    words = ["run", "--policy", POLICY, "--scenario", SCENARIO, "--seed-count", "200", "--concurrency", "2", *QUIET]
    out, _ = _requested(tmp_path, words, monkeypatch)
    assert cli.main(["run", "--resume", str(out), "--concurrency", "1"]) == 0
    assert _out(capsys)[1] == ""
    assert in_process.calls == [(2, 1, 60.0)]  # the two pieces its words plan, in one process
    assert json.loads((out / MANIFEST).read_text())["concurrency"] == 2
    record = json.loads((out / RUN_RECORD).read_text())
    assert (record["concurrency"], record["processes"], record["cases"]) == (2, 1, 200)


def _requested(tmp_path: Path, words: list[str], monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A run stopped before it planned its grid: its request, said in ``from``; the resume is in ``else``."""
    from harness.run.grid import begin

    said, elsewhere = tmp_path / "from", tmp_path / "else"
    said.mkdir(exist_ok=True)
    elsewhere.mkdir()
    monkeypatch.chdir(said)
    begin(Path("../o"), words).release()
    monkeypatch.chdir(elsewhere)
    return tmp_path / "o", said


def test_a_run_stopped_before_it_planned_is_planned_again_from_its_words_where_they_were_said(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "from").mkdir()
    (tmp_path / "from" / f"{SCENARIO}.yaml").write_text(
        (Path(__file__).resolve().parent.parent / "scenarios" / f"{SCENARIO}.yaml").read_text()
    )
    out, said = _requested(tmp_path, ["run", "--policy", POLICY, "--scenario", f"{SCENARIO}.yaml", "--seed", "1",
                                      "--tracking", "none", "--no-report"], monkeypatch)  # fmt: skip
    assert cli.main(["run", "--resume", "../o", "--quiet", "--junit", "k.xml"]) == 0
    assert Path.cwd() == said
    printed, err = _out(capsys)
    assert f"1 case in {tmp_path / 'else' / '..' / 'o'}  (summary" in printed and err == ""
    assert (tmp_path / "else" / "k.xml").is_file() and (out.resolve() / MANIFEST).is_file()


def test_a_requested_run_whose_junit_cannot_be_written_is_refused_leaving_its_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    words = ["run", "--policy", POLICY, "--scenario", SCENARIO, "--junit", "j.xml", *QUIET]
    out, said = _requested(tmp_path, words, monkeypatch)
    (said / "j.xml").mkdir()
    assert cli.main(["run", "--resume", str(out)]) == 2
    assert _out(capsys)[1] == (
        f"harness: --junit {said / 'j.xml'}: is a folder; fix: give a file name, such as {said / 'j.xml' / 'junit.xml'}\n"
    )
    assert sorted(p.name for p in out.iterdir()) == [LOCK_FILE, REQUEST]


def test_a_requested_runs_junit_named_in_its_words_is_said_by_a_path_that_holds_from_any_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The JUnit file the run's words name (relative to where they were said) is written there, and said so: not
    as the relative path of the words, which from the folder the resume runs in names another file."""
    words = ["run", "--policy", POLICY, "--scenario", SCENARIO, "--seed", "1", "--junit", "j.xml", *QUIET]
    out, said = _requested(tmp_path, words, monkeypatch)
    monkeypatch.chdir(tmp_path / "else")
    assert cli.main(["run", "--resume", str(out)]) == 0
    assert _out(capsys)[0].endswith(f"\njunit: {said / 'j.xml'}\n")
    assert (said / "j.xml").is_file() and not (tmp_path / "else" / "j.xml").exists()


def test_a_requested_run_whose_junit_is_inside_its_folder_without_xml_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    words = ["run", "--policy", POLICY, "--scenario", SCENARIO, "--junit", "../o/junit", *QUIET]
    out, said = _requested(tmp_path, words, monkeypatch)
    assert cli.main(["run", "--resume", str(out)]) == 2
    assert _out(capsys)[1] == (
        f"harness: --junit {said / '..' / 'o' / 'junit'}: inside the run's folder {out}, where it could replace a file "
        f"the run writes; fix: give a name ending in .xml, such as {out / 'junit.xml'}\n"
    )
    assert sorted(p.name for p in out.iterdir()) == [LOCK_FILE, REQUEST]


def test_a_requested_run_that_does_not_plan_leaves_its_request_to_be_mended(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    out, _ = _requested(tmp_path, ["run", "--policy", "nope", "--scenario", SCENARIO, *QUIET], monkeypatch)
    assert cli.main(["run", "--resume", str(out)]) == 2
    assert "nope" in _out(capsys)[1]
    assert sorted(p.name for p in out.iterdir()) == [LOCK_FILE, REQUEST]
    claim(out, fresh=False).release()  # not held


def test_a_requested_run_interrupted_while_it_plans_again_is_as_resumable_as_it_was(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    out, _ = _requested(tmp_path, ["run", "--policy", POLICY, "--scenario", SCENARIO, *QUIET], monkeypatch)

    def stopped(args: argparse.Namespace) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "_plan", stopped)
    assert cli.main(["run", "--resume", "../o"]) == 130
    assert _out(capsys)[1] == (
        f"harness: interrupted; {tmp_path / 'else' / '..' / 'o'} is resumable: python -m harness run --resume "
        f"{tmp_path / 'else' / '..' / 'o'}\n"
    )
    assert sorted(p.name for p in out.iterdir()) == [LOCK_FILE, REQUEST]
    claim(out, fresh=False).release()


def test_a_run_interrupted_while_it_runs_is_said_as_the_grid_says_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, grids: _Grids
) -> None:
    from harness.run.grid import RunInterrupted

    out, _ = _requested(tmp_path, ["run", "--policy", POLICY, "--scenario", SCENARIO, *QUIET], monkeypatch)
    grids.fails = RunInterrupted(Path("/said/by/the/grid"))
    assert cli.main(["run", "--resume", str(out)]) == 130
    assert _out(capsys)[1] == (
        "harness: interrupted; /said/by/the/grid is resumable: python -m harness run --resume /said/by/the/grid\n"
    )


def _stopped(tmp_path: Path, capsys: pytest.CaptureFixture[str], *more: str) -> Path:
    """A run whose cases are all on disk, stopped before its end (its run.json not written)."""
    out = tmp_path / "o"
    assert cli.main(_run(out, *more, seeds=(1, 3))) == 0
    (out / RUN_RECORD).unlink()
    (out / ".parts").mkdir()
    _out(capsys)
    return out


class _Resumes:
    def __init__(self) -> None:
        self.calls: list[tuple[Path, dict[str, Any]]] = []
        self.fails: BaseException | None = None


@pytest.fixture
def resumes(monkeypatch: pytest.MonkeyPatch) -> _Resumes:
    import harness.run.grid as grid

    fake = _Resumes()
    real = grid.resume_grid

    def resume(out: Path, **kw: Any) -> Any:
        fake.calls.append((out, kw))
        if fake.fails is not None:
            raise fake.fails
        return real(out, **kw)

    monkeypatch.setattr(grid, "resume_grid", resume)
    return fake


def test_a_stopped_run_is_resumed_with_what_the_resume_asks_and_its_policies_found_where_it_began(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, resumes: _Resumes
) -> None:
    out = _stopped(tmp_path, capsys)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p != str(tmp_path)])
    monkeypatch.chdir(tmp_path / "o")
    assert cli.main(["run", "--resume", "."]) == 0
    assert sys.path.count(str(tmp_path)) == 1
    ((resumed, kw),) = resumes.calls
    assert resumed == out and kw["progress"] is cli._progress and kw["report"] is True
    assert isinstance(kw["reading"], cli._ReadingLines) and isinstance(kw["tallied"], cli._EarlyTable)
    printed, err = _out(capsys)
    assert f"2 cases in {out}  (summary: {out / 'summary.csv'})" in printed
    assert err == f"[1/1] {POLICY} x {SCENARIO}: incorrect 1, correct 1\n"
    (out / RUN_RECORD).unlink()
    assert cli.main(["run", "--resume", str(out), "--quiet", "--no-report"]) == 0
    assert sys.path.count(str(tmp_path)) == 1
    assert {k: v for k, v in resumes.calls[1][1].items() if k != "tallied"} == {
        "progress": None,
        "report": False,
        "reading": None,
        "processes": None,  # no --concurrency: the run's own
        "checked": None,
    }
    assert _out(capsys)[1] == ""


def test_a_stopped_run_that_began_with_a_junit_writes_it_once_complete_unless_a_file_took_its_place(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], resumes: _Resumes
) -> None:
    junit = tmp_path / "j.xml"
    out = _stopped(tmp_path, capsys, "--junit", str(junit))
    junit.unlink()
    assert cli.main(["run", "--resume", str(out)]) == 0
    assert _out(capsys)[0].endswith(f"\njunit: {junit}\n") and junit.read_text().count("<testcase") == 2
    (out / RUN_RECORD).unlink()
    junit.write_text("mine")
    assert cli.main(["run", "--resume", str(out)]) == 2
    assert _out(capsys)[1] == (
        f"harness: --junit {junit}: exists and is not a JUnit report; fix: give a new file name, or remove it\n"
    )
    inside = out / "junit"
    assert cli.main(["run", "--resume", str(out), "--junit", str(inside)]) == 2
    assert _out(capsys)[1] == (
        f"harness: --junit {inside}: inside the run's folder {out}, where it could replace a file the run writes; fix: "
        f"give a name ending in .xml, such as {out / 'junit.xml'}\n"
    )
    other = tmp_path / "k.xml"
    assert cli.main(["run", "--resume", str(out), "--junit", str(other)]) == 0  # given now: that one
    assert _out(capsys)[0].endswith(f"\njunit: {other}\n") and other.is_file() and junit.read_text() == "mine"
    assert len(resumes.calls) == 2


@pytest.mark.parametrize("raised", ["plain", "grid"])
def test_a_resume_interrupted_before_its_cells_ran_is_as_resumable_as_it_was(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], resumes: _Resumes, raised: str
) -> None:
    from harness.run.grid import RunInterrupted

    out = _stopped(tmp_path, capsys)
    resumes.fails = KeyboardInterrupt() if raised == "plain" else RunInterrupted(Path("/grid"))
    assert cli.main(["run", "--resume", "o"]) == 130
    said = out if raised == "plain" else Path("/grid")
    assert _out(capsys)[1] == f"harness: interrupted; {said} is resumable: python -m harness run --resume {said}\n"


@pytest.mark.parametrize(
    ("record", "status", "said"),
    [
        ({}, 0, ""),
        ({"harness_errors": 2}, 1, "; it ended with harness errors (summary.csv names them), so it exits 1 again"),
        ({"unfired": 1}, 4, "; a fault or operator event it declares fired in no case (coverage.json), so it exits 4 "
                            "again"),
        ({"tracking_ok": False}, 3, "; its Polyaxon tracking failed, so it exits 3 again"),
    ],
)  # fmt: skip
def test_a_complete_run_is_not_run_again_and_exits_as_it_did(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], record: dict[str, Any], status: int, said: str
) -> None:
    out = tmp_path / "o"
    assert cli.main(_run(out)) == 0
    _out(capsys)
    data = json.loads((out / RUN_RECORD).read_text())
    (out / RUN_RECORD).write_text(json.dumps({**data, "harness_errors": 0, "unfired": 0, **record}))
    assert cli.main(["run", "--resume", str(out)]) == status
    assert _out(capsys) == (f"nothing to resume: the run in {out} is complete{said}\n", "")


def test_a_complete_run_says_which_of_its_files_are_gone_and_writes_a_junit_asked_for_now_or_never_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    junit = tmp_path / "j.xml"
    out = tmp_path / "o"
    assert cli.main(_run(out, "--junit", str(junit))) == 0
    _out(capsys)
    first = junit.read_text()
    junit.write_text(first.replace("<testsuites", "<testsuites x='1'"))
    assert cli.main(["run", "--resume", str(out)]) == 0  # written when it completed: left alone
    assert _out(capsys) == (f"nothing to resume: the run in {out} is complete\n", "")
    assert "x='1'" in junit.read_text()
    junit.unlink()
    (out / "summary.csv").unlink()
    (out / "coverage.json").unlink()
    assert cli.main(["run", "--resume", str(out)]) == 0
    warning = ("harness: warning: {} is missing (deleted since the run completed), and a complete run is not run "
               "again; fix: run its grid anew with another --out\n")  # fmt: skip
    assert _out(capsys) == (
        f"nothing to resume: the run in {out} is complete\njunit: {junit}\n",
        warning.format(out / "summary.csv") + warning.format(out / "coverage.json"),
    )
    assert junit.read_text() == first
    other = tmp_path / "k.xml"
    assert cli.main(["run", "--resume", str(out), "--junit", str(other)]) == 0
    assert _out(capsys)[0].endswith(f"\njunit: {other}\n") and other.read_text() == first


def test_a_complete_run_without_a_junit_writes_none(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "o"
    assert cli.main(_run(out)) == 0
    _out(capsys)
    assert cli.main(["run", "--resume", str(out)]) == 0
    assert _out(capsys) == (f"nothing to resume: the run in {out} is complete\n", "")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o"]


# -- the help every command prints ----------------------------------------------------------------------------


#: Each command's --help, its white space made single spaces (the terminal's width changes only where lines break).
HELP = {
    "": (
        "usage: harness [-h] COMMAND ... Run recovery policies against scenarios of lost replies, and judge "
        "each case from the evidence. Exit statuses: 0 every case ran and was judged (whatever the outcomes: "
        "an incorrect policy is a finding, not an error) 1 at least one case ended in harness_error (its "
        "reproduce command is printed: a harness failure, a case over --case-timeout, a worker that died), or "
        "the run's folder could not be written (resume it once fixed) 2 bad usage or input (unknown policy or "
        "scenario, malformed scenario file or polyaxonfile, an --out in use by another run, a --resume whose "
        "inputs changed); nothing was written 3 the cases are complete on disk, but Polyaxon tracking or the "
        "push to the server failed (the message says how to send the runs later) 4 everything is written, but "
        "a fault or operator event a scenario declares fired in no case (the scenario tested nothing it "
        "claims to; the message names the scenario and the fault or event); --unfired note says it as a note "
        "instead, and the status is what it would be had it fired 130 interrupted (Ctrl-C, SIGTERM): a run's "
        "folder is resumable with 'harness run --resume DIR', an exploration's with 'harness explore --resume "
        "DIR' (a check is not: run it again) 141 the program reading the output went away (as in 'harness "
        "list | true') explore: 0 no finding, 1 findings (each a runnable file) or harness errors on some "
        "schedules (a case over --case-timeout or a worker that died stops that policy's exploration of that "
        "template), 2 bad usage or input, 3 Polyaxon tracking failed, 4 a declared fault or operator event "
        "fired in no case of the template as written, for the policies explored (--unfired note: said, not a "
        "status). replay: 0 the case came out the same as recorded, 1 it did not, 2 bad input. check: 0 every "
        "case is correct or escalated, 1 some case is not (each printed with its reproduce command and repro "
        "file), 2 bad usage or input. push: 0 every offline run is on the server (sent now, or there "
        "already), 2 bad input, 3 some could not be sent (given again, it sends the rest). positional "
        "arguments: COMMAND run run the policy x scenario grid explore explore fault schedules from "
        "scenarios, shrink every violation to a minimal runnable file check gate one policy: exit 1 unless "
        "every case is correct or escalated; JUnit XML, repro files replay re-run a recorded case "
        "(recovery.json or a finding) and check it is the same report write report.html for a run folder "
        "(tables, heatmap, timelines) list show policies, scenarios and fault boundaries schema print the "
        "JSON Schema of recovery.json push send a folder's offline Polyaxon runs to the server "
        "(POLYAXON_HOST), one request at a time, skipping those it has already: given again after a failure, "
        "it sends the rest view browse a run's Polyaxon runs in the Polyaxon UI (haupt viewer) options: -h, "
        "--help show this help message and exit"
    ),
    "push": (
        "usage: harness push [-h] [--project [OWNER/]NAME] RUN_DIR positional arguments: RUN_DIR a folder "
        "written by 'harness run' or 'explore' options: -h, --help show this help message and exit --project "
        "[OWNER/]NAME the project to send them to (default: the run's own, from its manifest; else "
        "default/recovery-harness); created if the server lacks it"
    ),
    "run": (
        "usage: harness run [-h] [--policy NAME|MODULE:ATTR] [--scenario NAME|PATH] [--seed N | --seed-count "
        "N] [--polyaxonfile FILE] [--concurrency N] [--out DIR] [--tracking {offline,server,none}] "
        "[--project [OWNER/]NAME] [--records {auto,full,compact}] [--failing-files N] [--quiet] "
        "[--no-report] [--case-timeout SECONDS] [--unfired {fail,note}] [--force-concurrency] [--resume DIR] "
        "[--junit FILE] options: -h, --help show this help message and exit --policy NAME|MODULE:ATTR a "
        "shipped policy or package.module:attr (repeatable; default: the grid file's, or every shipped "
        "policy by name when only --scenario is given) --scenario NAME|PATH a shipped scenario or a YAML "
        "file (repeatable; default: the grid file's, or every shipped scenario by name when only --policy is "
        "given) --seed N a seed (repeatable) --seed-count N seeds 1..N, N up to 1,000,000 (default: the grid "
        "file's seed_count, else 3) --polyaxonfile FILE expand this Polyaxon grid operation's matrix and run "
        "its cells (default: polyaxonfiles/grid.yaml when neither --policy nor --scenario is given) "
        "--concurrency N processes side by side; a cell of many seeds is shared among them (default: the "
        "matrix's, else 1); with --resume, the processes that run what is missing (the cells stay split as the "
        "run began) --out DIR output folder (default: reports/runs/<run-id>) --tracking "
        "{offline,server,none} Polyaxon tracking: one run per cell, offline into <out>/polyaxon (default), "
        "pushed to the configured server as well, or none --project [OWNER/]NAME Polyaxon project for the "
        "runs (default: default/recovery-harness) --records {auto,full,compact} full: a recovery.json per "
        "case; compact: one gzipped JSON line per case in records-*.jsonl.gz, and a recovery.json only for "
        "cases that are not correct; auto (default): compact for cells of more than 1,000 seeds "
        "--failing-files N with compact records, a recovery.json for at most N of a cell's cases that are "
        "not correct (shared evenly among its pieces; every case stays in the records, and 'harness replay' "
        "re-creates any); default: every one --quiet no progress lines --no-report skip report.html, "
        "heatmap.png and the timelines --case-timeout SECONDS wall-clock budget of one case; a case over it, "
        "or one whose worker process dies, is stopped and counted as a harness error (default 60; 0: no "
        "budget) --unfired {fail,note} a fault or operator event a scenario declares that fired in no case "
        "of this run: fail (default) exits 4; note says it all the same, and exits as if it had fired (for a "
        "job that runs one cell of a grid, as a Polyaxon grid's does: another policy may fire it) "
        "--force-concurrency use --concurrency as given even when it is more than the cores this process may "
        "use --resume DIR complete a run that was stopped (killed, Ctrl-C, a full disk): only what is "
        "missing is run, with the options it began with; only --no-report, --junit, --quiet and --concurrency "
        "(with --force-concurrency) may be given with it --junit FILE also write JUnit XML: one testcase per "
        "scenario x seed, a failure per case neither correct nor escalated (with a repro file under "
        "<out>/repro)"
    ),
    "explore": (
        "usage: harness explore [-h] [--policy NAME|MODULE:ATTR] [--scenario NAME|PATH] [--depth K] [--swarm "
        "N] [--seed-count S] [--concurrency N] [--force-concurrency] [--shard I/N] [--out DIR] [--tracking "
        "{offline,server,none}] [--project [OWNER/]NAME] [--case-timeout SECONDS] [--unfired {fail,note}] "
        "[--resume DIR] [--quiet] options: -h, --help show this help message and exit --policy "
        "NAME|MODULE:ATTR a policy (repeatable; default: all shipped) --scenario NAME|PATH a template "
        "(repeatable; default: all shipped) --depth K combine up to K added elements (default 2) --swarm N "
        "random swarm schedules per template (default 20) --seed-count S seeds 1..S for every schedule, S up "
        "to 100 (default 1) --concurrency N processes side by side (default 1) --force-concurrency use "
        "--concurrency as given even when it is more than the cores this process may use --shard I/N explore "
        "only shard I of N of every template's schedules (0-based) --out DIR output folder (default: "
        "reports/runs/<run-id>) --tracking {offline,server,none} Polyaxon tracking: one run per (policy, "
        "scenario) explored, offline into <out>/polyaxon (default), pushed to the configured server as well, "
        "or none --project [OWNER/]NAME Polyaxon project for the runs (default: default/recovery-harness) "
        "--case-timeout SECONDS wall-clock budget of one case; a case over it, or one whose worker process "
        "dies, is stopped and reported as a harness error, and its policy explored no further in that part "
        "(default 60; 0: no budget) --unfired {fail,note} a fault or operator event a scenario declares that "
        "fired in no case of this exploration: fail (default) exits 4; note says it all the same, and exits "
        "as if it had fired (for a job that runs one cell of a grid, as a Polyaxon grid's does: another "
        "policy may fire it) --resume DIR complete an exploration that was stopped (Ctrl-C, SIGTERM, a full "
        "disk): only its parts that are missing are explored, with the options it began with; only --quiet "
        "and --concurrency (with --force-concurrency) may be given with it --quiet no progress lines"
    ),
    "check": (
        "usage: harness check [-h] --policy NAME|MODULE:ATTR [--scenario NAME|PATH] [--seed-count N] "
        "[--explore] [--baseline NAME|MODULE:ATTR] [--junit FILE] [--out DIR] [--concurrency N] "
        "[--force-concurrency] [--case-timeout SECONDS] [--maxfail N] [--quiet] options: -h, --help show "
        "this help message and exit --policy NAME|MODULE:ATTR the policy to gate: a shipped name or "
        "package.module:attr --scenario NAME|PATH a scenario (repeatable; default: all shipped) --seed-count "
        "N seeds 1..N for every scenario, N up to 10,000 (default 3) --explore also explore each scenario's "
        "schedules (as 'harness explore' at its defaults, at the same seeds) --baseline NAME|MODULE:ATTR "
        "also run this policy on the same cases, and fail each case that passes yet leaves the task "
        "incomplete where the baseline completes it (safe is not done) --junit FILE write JUnit XML to FILE "
        "--out DIR folder for cases and repro files (default: a new temporary folder) --concurrency N "
        "processes side by side (default 1) --force-concurrency use --concurrency as given even when it is "
        "more than the cores this process may use --case-timeout SECONDS wall-clock budget of one case; a "
        "case over it, or one whose worker process dies, is stopped and a failure of the gate (a harness "
        "error) (default 60; 0: no budget) --maxfail N stop once N cases failed (harness errors included), "
        "judging what ran; the rest, the baseline and the exploration are left out (a policy that hangs "
        "costs --case-timeout a case) --quiet no progress lines (every 10 s of a long check, and while "
        "exploring)"
    ),
    "replay": (
        "usage: harness replay [-h] CASE positional arguments: CASE a recovery.json, a compact record "
        "(records-*.jsonl.gz#seed-N), or a scenario file with 'reproduces' (a finding written by explore, a "
        "repro file written by check, run --junit or the pytest plugin) options: -h, --help show this help "
        "message and exit"
    ),
    "report": (
        "usage: harness report [-h] [--out FILE] RUN_DIR positional arguments: RUN_DIR a folder written by "
        "'harness run', or a folder of recovery.json files options: -h, --help show this help message and "
        "exit --out FILE write the page to FILE (and heatmap.png beside it) instead of RUN_DIR/report.html; "
        "nothing is written into RUN_DIR (a read- only run folder, say): timelines not drawn there yet are "
        "drawn into the page alone"
    ),
    "list": (
        "usage: harness list [-h] [--scenario NAME|PATH] options: -h, --help show this help message and exit "
        "--scenario NAME|PATH show only this scenario, loaded as a run loads it: a file of yours is checked "
        "(repeatable)"
    ),
    "schema": (
        "usage: harness schema [-h] [--out FILE] options: -h, --help show this help message and exit --out "
        "FILE write it to FILE instead"
    ),
    "view": (
        "usage: harness view [-h] [--port PORT] RUN_DIR positional arguments: RUN_DIR a folder written by "
        "'harness run' options: -h, --help show this help message and exit --port PORT port on 127.0.0.1 "
        "(default: 8000)"
    ),
}


@pytest.mark.parametrize("command", list(HELP))
def test_each_commands_help_names_its_options_their_values_and_defaults(
    command: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a user reads of the command line: every option with its value's name and what it does, and the exit
    statuses; the text as a whole, so that an option whose help or value's name goes missing is seen."""
    monkeypatch.setenv("COLUMNS", "80")
    with pytest.raises(SystemExit) as ended:
        cli.main([*([command] if command else []), "--help"])
    assert ended.value.code == 0
    out, err = _out(capsys)
    assert " ".join(out.split()) == "".join(HELP[command]) and err == ""


@pytest.mark.parametrize(
    ("words", "said"),
    [
        ([], "the following arguments are required: COMMAND; fix: see 'python -m harness --help'"),
        (["run", "--seed-count", "0"], "argument --seed-count: seed count 0 is outside 1..1000000"),
        (["run", "--seed-count", "1000001"], "argument --seed-count: seed count 1000001 is outside 1..1000000"),
        (["run", "--failing-files", "x"], "argument --failing-files: failing files 'x' is not a whole number"),
        (["run", "--failing-files", "-1"], "argument --failing-files: failing files -1 is outside 0..1000000"),
        (["explore", "--seed-count", "101"], "argument --seed-count: seed count 101 is outside 1..100"),
        (["explore", "--seed-count", "0"], "argument --seed-count: seed count 0 is outside 1..100"),
        (["explore", "--depth", "4"], "argument --depth: depth 4 is outside 1..3"),
        (["explore", "--depth", "0"], "argument --depth: depth 0 is outside 1..3"),
        (["explore", "--swarm", "x"], "argument --swarm: swarm 'x' is not a whole number"),
        (["explore", "--swarm", "10001"], "argument --swarm: swarm 10001 is outside 0..10000"),
    ],
)
def test_each_count_is_refused_outside_its_bounds_naming_it(
    words: list[str], said: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    called: list[object] = []
    monkeypatch.setattr(cli, "_command", _noting(called, 0))  # a count taken would run nothing here: it fails fast
    with pytest.raises(SystemExit) as refused:
        cli.main(words)
    assert refused.value.code == 2
    fix = "" if not words else f"; fix: see 'python -m harness {words[0]} --help'"
    assert _out(capsys) == ("", f"harness: {said}{fix}\n") and called == []


def test_each_count_is_taken_at_its_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    called: list[tuple[argparse.Namespace, list[str]]] = []
    monkeypatch.setattr(cli, "_command", _noting(called, 0))
    for words in (["run", "--seed-count", "1", "--failing-files", "0"], ["run", "--seed-count", "1000000"],
                  ["explore", "--seed-count", "1", "--depth", "1", "--swarm", "0"],
                  ["explore", "--seed-count", "100", "--depth", "3", "--swarm", "10000"]):  # fmt: skip
        assert cli.main(words) == 0
    seen = [args for args, _ in called]
    assert [(a.seed_count, getattr(a, "failing_files", None)) for a in seen[:2]] == [(1, 0), (1_000_000, None)]
    assert [(a.seed_count, a.depth, a.swarm) for a in seen[2:]] == [(1, 1, 0), (100, 3, 10_000)]


def test_the_help_keeps_the_exit_statuses_one_per_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    out = _out(capsys)[0]
    assert (
        "\nExit statuses:\n  0  every case ran and was judged (whatever the outcomes: an incorrect policy is a " in out
    )
    assert "\n  141 the program reading the output went away (as in 'harness list | true')\n" in out


def test_an_error_whose_causes_loop_is_judged_once_round_the_loop() -> None:
    """Causes and contexts can form a loop (an error raised again while handling itself): it is walked once."""
    first, second = ValueError("one"), RuntimeError("two")
    first.__context__, second.__context__ = second, first
    assert cli._caused_by_interrupt(first) is False
    interrupt = KeyboardInterrupt()
    second.__context__ = interrupt
    interrupt.__context__ = first
    assert cli._caused_by_interrupt(first) is True


def test_stop_notes_the_signal_that_came(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli, "_STOPPED", [])
    with pytest.raises(KeyboardInterrupt):
        cli._stop(signal.SIGTERM, None)
    assert cli._STOPPED == [signal.SIGTERM]
