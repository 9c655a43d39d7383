"""Shared test helpers: a tiny text notation for hand-written histories, and world builders."""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import hashlib
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from harness.model import Evidence, Scalar
from harness.model.events import parse_event
from harness.scenario import Scenario, load_scenario, resolve_scenario

SCENARIO_DIR = Path(__file__).resolve().parent.parent / "scenarios"
#: A small grid with every kind of cell: correct, incorrect, unresolved, and an unknown duplicate count.
SMALL_GRID = (
    "--policy",
    "retry_same_key",
    "--policy",
    "reconcile_and_reauthorize",
    "--scenario",
    "lost_response",
    "--scenario",
    "uncertain_lookup",
)


#: Tables a test wants shown after the run, by title: printed at the end of pytest's output.
SUMMARIES: dict[str, str] = {}
#: Counts a test wants shown after the run, by title (``kind count, ...``): under pytest-xdist each worker counts
#: what it ran, and the counts shown are their sums.
COUNTS: dict[str, Counter[str]] = {}


def pytest_sessionfinish(session: pytest.Session) -> None:
    """No background command outlives the session (after ``-x`` or Ctrl-C its test may never have run); a
    pytest-xdist worker hands its summaries to the process that prints them."""
    for run in _BACKGROUND.values():
        run.stop()
    _BACKGROUND.clear()
    output = getattr(session.config, "workeroutput", None)
    if output is not None:
        output["summaries"] = dict(SUMMARIES)
        output["counts"] = {title: dict(counts) for title, counts in COUNTS.items()}


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    """pytest-xdist: a worker is done; take its summaries (a table two workers both made is the same table)."""
    output = getattr(node, "workeroutput", {})
    SUMMARIES.update(output.get("summaries", {}))
    for title, counts in output.get("counts", {}).items():
        COUNTS.setdefault(title, Counter()).update(counts)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    shown = {**SUMMARIES, **{t: ", ".join(f"{k} {n:,}" for k, n in sorted(c.items())) for t, c in COUNTS.items()}}
    for title, text in shown.items():
        terminalreporter.write_sep("-", title)
        terminalreporter.write_line(text)


#: The marker that names a test's ``python -m harness`` command to run in the background (see ``Background``).
BACKGROUND = "background_harness"
#: The default run: every policy x scenario of polyaxonfiles/grid.yaml at its seeds, tracked offline, with its report.
DEFAULT_RUN = ("run", "--quiet")
#: How much less CPU priority a background command gets than the tests running meanwhile (nice(1) units).
BACKGROUND_NICENESS = 10


@dataclass(frozen=True, slots=True)
class Finished:
    """A background command, done: its exit status, what it printed, and the folder it was given as --out."""

    returncode: int
    stdout: str
    stderr: str
    out: Path


class Background:
    """``python -m harness ARGS... --out DIR`` for one test, started when collection ends rather than when the test
    runs. The default grid and the safe policies' exploration are minutes of work for two processes, while most of
    the suite runs one process at a time and leaves the other core idle. Started at a lower priority, such a command
    takes what the tests before it leave idle; its test runs last (``pytest_collection_modifyitems``), and
    ``wait()`` gives it back the tests' priority (where the OS allows) and returns what it did. The command, its
    output folder and the test's checks are the ones the test would run in place; only the start is earlier.

    A test asks for it with ``@pytest.mark.background_harness(*ARGS)`` and the ``background_harness`` fixture; tests
    that give the same ARGS share one run, so each must only read what it wrote. Under
    ``--collect-only``, or in a pytest-xdist worker (which collects every test but runs some; tests/run.sh runs the
    suite over two where there are two cores), nothing starts early: ``wait()`` starts the command then, in the first
    worker that waits for it; the others wait for that run."""

    def __init__(self, args: tuple[str, ...], shared: Path | None = None) -> None:
        self.args = args
        self.niceness = os.getpriority(os.PRIO_PROCESS, 0)  # the tests' own
        #: Under pytest-xdist, the folder all workers use for these ARGS: the first worker to need the run makes
        #: it, the others wait for it and read what it did (``wait``), so it runs once, not once per worker.
        self.shared = shared
        if shared is None:
            self.folder = Path(tempfile.mkdtemp(prefix="pytest-background-"))
        else:
            self.folder = shared / hashlib.sha256("\0".join(args).encode()).hexdigest()[:16]
            self.folder.mkdir(exist_ok=True)
        self.out = self.folder / "out"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> subprocess.Popen[bytes]:
        if self.process is None:
            with (self.folder / "stdout").open("wb") as stdout, (self.folder / "stderr").open("wb") as stderr:
                self.process = subprocess.Popen(
                    [sys.executable, "-m", "harness", *self.args, "--out", str(self.out)],
                    cwd=SCENARIO_DIR.parent,
                    stdout=stdout,
                    stderr=stderr,
                    start_new_session=True,  # its own process group: its workers are reniced and stopped with it
                    preexec_fn=_die_with_parent,
                )
            # Before the command has imported its way to starting any worker: they inherit the priority.
            self._renice(min(19, self.niceness + BACKGROUND_NICENESS))
        return self.process

    def _renice(self, niceness: int) -> None:
        assert self.process is not None
        with contextlib.suppress(OSError):  # raising the priority again needs the right to; without it, it stays
            os.setpriority(os.PRIO_PGRP, self.process.pid, niceness)

    def wait(self) -> Finished:
        if self.shared is None:
            returncode = self._waited()
        else:
            # One worker runs it while holding the lock; the others block on the lock, then find its status. A
            # worker that dies mid-run lets go of the lock and leaves no status: the next one runs it again.
            done = self.folder / "returncode"
            with (self.folder / "lock").open("w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                if not done.exists():
                    done.write_text(str(self._waited()))
                returncode = int(done.read_text())
        return Finished(
            returncode,
            (self.folder / "stdout").read_text(encoding="utf-8", errors="replace"),
            (self.folder / "stderr").read_text(encoding="utf-8", errors="replace"),
            self.out,
        )

    def _waited(self) -> int:
        process = self.start()
        if process.poll() is None:
            self._renice(self.niceness)  # the tests wait for it now: nothing else to leave room for
        return process.wait()

    def stop(self) -> None:
        """Kill the command and its workers if still running (the session ended first), and remove its folder."""
        if self.process is not None and self.process.poll() is None:
            with contextlib.suppress(OSError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        if self.shared is None:  # a shared folder goes with the session's (``pytest_unconfigure``)
            shutil.rmtree(self.folder, ignore_errors=True)


#: By command: tests that name the same command share one run of it (they only read what it wrote).
_BACKGROUND: dict[tuple[str, ...], Background] = {}
#: prctl(2), looked up before any fork: a forked child calls it and nothing else of Python's.
_PRCTL = getattr(ctypes.CDLL(None, use_errno=True), "prctl", None) if sys.platform == "linux" else None


def _die_with_parent() -> None:
    """In the background command, before it starts: the kernel kills it if pytest dies without stopping it (a kill
    signal, a crash), as the harness's own workers die with it (``harness.run.pool``)."""
    if _PRCTL is not None:
        _PRCTL(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _background(item: pytest.Item) -> Background:
    marker = item.get_closest_marker(BACKGROUND)
    if marker is None:
        raise pytest.UsageError(f"{item.nodeid} asks for background_harness without @pytest.mark.{BACKGROUND}(...)")
    args = tuple(str(a) for a in marker.args)
    if args not in _BACKGROUND:
        shared = os.environ.get(_SHARED) if hasattr(item.config, "workerinput") else None
        _BACKGROUND[args] = Background(args, Path(shared) if shared else None)
    return _BACKGROUND[args]


#: The environment variable naming the folder where pytest-xdist workers share background runs: made by the
#: controlling process before it starts the workers (they inherit it), removed by it at the end.
_SHARED = "HARNESS_TEST_SHARED_BACKGROUND"
_SHARED_KEY = pytest.StashKey[str]()


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):
        config.stash[_SHARED_KEY] = os.environ[_SHARED] = tempfile.mkdtemp(prefix="pytest-background-shared-")
    config.addinivalue_line(
        "markers",
        f"{BACKGROUND}(*args): run `python -m harness ARGS... --out DIR` from the end of collection on, in the "
        "background; the test runs last and gets it from the background_harness fixture (tests/conftest.py)",
    )


def pytest_unconfigure(config: pytest.Config) -> None:
    shared = config.stash.get(_SHARED_KEY, None)
    if shared is not None:
        shutil.rmtree(shared, ignore_errors=True)
        os.environ.pop(_SHARED, None)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests whose command runs in the background go last (in their order), so the rest runs meanwhile."""
    items.sort(key=lambda item: item.get_closest_marker(BACKGROUND) is not None)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start every background command of the tests selected to run."""
    if session.config.option.collectonly or hasattr(session.config, "workerinput"):
        return
    for item in session.items:
        if item.get_closest_marker(BACKGROUND) is not None:
            _background(item).start()


@pytest.fixture
def background_harness(request: pytest.FixtureRequest) -> Background:
    """This test's background command (``@pytest.mark.background_harness``); ``.wait()`` for what it did."""
    return _background(request.node)


def run_into(out: Path, *args: str) -> int:
    """``python -m harness run --out OUT --quiet ARGS...`` in this process; returns the exit status."""
    from harness.cli import main

    return main(["run", "--out", str(out), "--quiet", *args])


def _value(text: str) -> Scalar:
    if text == "none":
        return None
    if text in ("true", "false"):
        return text == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def history(text: str, *, visible: bool = True, deadline_s: float = 120.0) -> Evidence:
    """Build evidence from lines of ``<at_s> <actor> <event> key=value ...``; ``#`` starts a comment.

    Values ``none``, ``true``, ``false`` and numbers are converted; everything else stays a string. Each line
    becomes the typed record of its event, so a misspelt key fails here, not silently in a checker.
    """
    entries = []
    for line in text.strip().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        at, actor, event, *pairs = shlex.split(line)
        data = {k: _value(v) for k, v in (p.split("=", 1) for p in pairs)}
        entries.append(parse_event(actor, event, data, index=len(entries), at_s=float(at)))
    return Evidence(
        task_id="release-42",
        recovery_deadline_s=deadline_s,
        destination_visible=visible,
        history=tuple(entries),
    )


#: The opening every hand-written history shares: revision 17, its approval, action a73, a successful claim.
OPENING = """
0 controller task_revision task_id=release-42 revision=17 operation=activate target=staging/fraud model=m7 digest=d7
0 controller approval_granted approval_id=apr-17 revision=17 operation=activate target=staging/fraud digest=d7 expires_at_s=none
0 controller action_recorded action_id=a73 task_id=release-42 revision=17 operation=activate target=staging/fraud model=m7 digest=d7 approval_id=apr-17
0 controller claim action_id=a73 revision=17 ok=true reason=none
"""


def dispatch(at: float, n: int, key: str = "a73", model: str = "m7", digest: str = "d7") -> str:
    return (
        f"{at} transport send kind=dispatch n={n} action_id=a73 execution_id=a73-x{n} idempotency_key={key} "
        f"operation=activate target=staging/fraud model={model} digest={digest}"
    )


def applied(at: float, n: int, receipt: str, key: str = "a73") -> str:
    return (
        f"{at} destination applied receipt_id={receipt} idempotency_key={key} execution_id=a73-x{n} "
        "operation=activate target=staging/fraud model=m7 digest=d7"
    )


def recorded(at: float, receipt: str, event: str = "effect_recorded", version: int = 1) -> str:
    return (
        f"{at} controller {event} action_id=a73 receipt_id={receipt} idempotency_key=a73 operation=activate "
        f"target=staging/fraud model=m7 digest=d7 action_revision=17 version={version} guarded=true"
    )


class Says:
    """A policy that answers ``answer`` to every question: a command, or whatever a buggy policy returns."""

    name, revision = "says", "test"

    def __init__(self, answer: object) -> None:
        self.answer = answer

    def decide(self, situation: object) -> object:
        return self.answer


def shipped(name: str) -> Scenario:
    return load_scenario(resolve_scenario(name, SCENARIO_DIR))


@pytest.fixture
def lost_response() -> Scenario:
    return shipped("lost_response")


@pytest.fixture
def policy_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., Path]]:
    """``policy_module(module, text, folder="mine")``: writes a user's policy module into a folder of the test's
    own, puts that folder on sys.path for the test, and returns it; every module so written is gone from
    sys.modules after the test (the next test's module of that name is its own)."""
    written: list[str] = []

    def write(module: str, text: str, folder: str = "mine") -> Path:
        where = tmp_path / folder
        where.mkdir(exist_ok=True)
        (where / f"{module}.py").write_text(text)
        monkeypatch.syspath_prepend(str(where))
        written.append(module)
        return where

    yield write
    for module in written:
        sys.modules.pop(module, None)
