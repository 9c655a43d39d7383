"""The worker pool's parts that run in this process (the thirty-fourth mutation pass, tests/MUTANTS.md).

A test that starts real worker processes cannot kill a mutant: under mutmut, a spawned worker imports the code
unmutated (or dies looking for it). So the supervision loop is driven here through a fake multiprocessing
context: a "process" that never starts, whose end of the pipe runs the job it is sent at once, in this process,
the way ``_serve`` would (``on_case`` writes into the shared ``where``), and that can die, hang or say what ended
it. ``_serve`` itself is called directly with a fake connection. What stays out of reach is what only a real
process shows: a real kill, a real exit status, the signal mask a spawned child starts with.
"""

from __future__ import annotations

import contextlib
import gc
import io
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

import pytest

from harness.errors import OutlivesReader, RunFailed
from harness.run import pool
from harness.run.pool import _ended_by, _named, _overdue, _Pool, _serve, _why, _Worker, supervise


class _Clock:
    """time.monotonic, as the test says."""

    def __init__(self, *times: float) -> None:
        self.times = deque(times)
        self.last = times[-1] if times else 0.0

    def __call__(self) -> float:
        if self.times:
            self.last = self.times.popleft()
        return self.last


@dataclass
class _Process:
    alive: bool = True
    exitcode: int | None = None
    killed: int = 0
    joins: list[float | None] = field(default_factory=list)
    kill_raises: type[BaseException] | None = None

    def is_alive(self) -> bool:
        return self.alive

    def kill(self) -> None:
        self.killed += 1
        if self.kill_raises is not None:
            raise self.kill_raises("closed")
        if self.alive:
            self.alive, self.exitcode = False, -signal.SIGKILL

    def join(self, timeout: float | None = None) -> None:
        self.joins.append(timeout)


@dataclass
class _Conn:
    sent: list[Any] = field(default_factory=list)
    closed: int = 0
    close_raises: bool = False
    send_raises: type[BaseException] | None = None

    def send(self, obj: Any) -> None:
        if self.send_raises is not None:
            raise self.send_raises("gone")
        self.sent.append(obj)

    def close(self) -> None:
        self.closed += 1
        if self.close_raises:
            raise OSError("bad descriptor")


def _worker(process: _Process | None = None, where: tuple[float, float] = (-1.0, 0.0), **conn: Any) -> _Worker:
    return _Worker(process or _Process(), _Conn(**conn), list(where))  # type: ignore[arg-type]


# --- how a worker ended -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("exc", "status"),
    [
        (SystemExit(), 0),
        (SystemExit(None), 0),
        (SystemExit(0), 0),
        (SystemExit(3), 3),
        (SystemExit(255), 255),
        (SystemExit(256), 0),
        (SystemExit(257), 1),
        (SystemExit(-1), 255),
        (SystemExit(True), 1),
        (SystemExit("bye"), 1),
        (SystemExit(2.0), 1),
        (KeyboardInterrupt(), 1),
        (BaseException(7), 1),
        (GeneratorExit(), 1),
    ],
)
def test_a_worker_ends_with_the_status_sys_exit_leaves_else_1(exc: BaseException, status: int) -> None:
    assert _ended_by(exc) == status


@pytest.mark.parametrize(
    ("exc", "named"),
    [
        (SystemExit(3), "SystemExit: 3"),
        (KeyboardInterrupt(), "KeyboardInterrupt"),
        (SystemExit(), "SystemExit"),
        (BaseException("  two\n\tlines  here "), "BaseException: two lines here"),
        (SystemExit("x" * 200), "SystemExit: " + "x" * 200),
        (SystemExit("x" * 199 + " y"), "SystemExit: " + "x" * 199 + " ..."),
        (SystemExit("y" * 201), "SystemExit: " + "y" * 200 + "..."),
        (SystemExit("\n \t"), "SystemExit"),
    ],
)
def test_what_ended_a_worker_is_named_on_one_line_cut_at_200(exc: BaseException, named: str) -> None:
    assert _named(exc) == named


# --- the parent's judgement of a worker ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("budget", "where", "now", "overdue"),
    [
        (None, (0.0, 10.0), 1e9, False),
        (5.0, (-1.0, 10.0), 1e9, False),
        (5.0, (0.0, 10.0), 15.0, False),
        (5.0, (0.0, 10.0), 15.5, True),
        (5.0, (3.0, 10.0), 15.5, True),
        (5.0, (3.0, 10.0), 14.0, False),
        (0.0, (0.0, 10.0), 10.0, False),
        (0.0, (0.0, 10.0), 10.25, True),
        (0.0, (-0.5, 10.0), 20.0, False),
    ],
)
def test_a_case_is_overdue_only_past_its_budget_while_it_runs(
    monkeypatch: pytest.MonkeyPatch, budget: float | None, where: tuple[float, float], now: float, overdue: bool
) -> None:
    monkeypatch.setattr(pool, "time", _Proxy(time, monotonic=_Clock(now)))
    assert _overdue(_worker(where=where), budget) is overdue


@pytest.mark.parametrize(
    ("process", "budget", "why"),
    [
        (
            _Process(alive=True),
            2.5,
            "the case ran longer than its wall-clock budget of 2.5 s (--case-timeout); its worker process was stopped",
        ),
        (
            _Process(alive=True),
            60.0,
            "the case ran longer than its wall-clock budget of 60 s (--case-timeout); its worker process was stopped",
        ),
        (_Process(False, -9), 1.0, "the worker process was killed by SIGKILL while running the case"),
        (_Process(False, -15), 1.0, "the worker process was killed by SIGTERM while running the case"),
        (_Process(False, -1), 1.0, "the worker process was killed by SIGHUP while running the case"),
        (_Process(False, -999), 1.0, "the worker process exited (status -999) while running the case"),
        (_Process(False, 3), 1.0, "the worker process exited (status 3) while running the case"),
        (_Process(False, 0), None, "the worker process exited (status 0) while running the case"),
        (_Process(False, None), None, "the worker process exited (status None) while running the case"),
    ],
)
def test_why_a_case_failed_says_budget_signal_or_status(process: _Process, budget: float | None, why: str) -> None:
    assert _why(_worker(process), budget) == why


# --- a worker's own set-up ----------------------------------------------------------------------------------------


class _Exited(Exception):
    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def test_a_worker_asks_to_die_with_its_parent_and_exits_when_the_parent_is_gone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import ctypes

    calls: list[Any] = []

    class Libc:
        def prctl(self, *args: Any) -> None:
            calls.append(("prctl", args))

    def cdll(name: Any, **kwargs: Any) -> Libc:
        calls.append(("CDLL", name, kwargs))
        return Libc()

    def exit_(code: int) -> None:
        raise _Exited(code)

    parent = [4242]
    monkeypatch.setattr(ctypes, "CDLL", cdll)
    monkeypatch.setattr(pool, "os", _Proxy(os, _exit=exit_, getppid=lambda: parent[0]))
    pool._die_with_parent()
    assert calls == [("CDLL", None, {"use_errno": True}), ("prctl", (1, signal.SIGKILL))]
    parent[0] = 1
    with pytest.raises(_Exited) as exited:
        pool._die_with_parent()
    assert exited.value.code == 1

    def no_libc(name: Any, **kwargs: Any) -> Libc:
        raise OSError("no libc")

    monkeypatch.setattr(ctypes, "CDLL", no_libc)
    parent[0] = 4242
    pool._die_with_parent()  # no prctl: the worker goes on without it


@dataclass
class _Job:
    """A job for ``_serve``: ``on_case`` for each case, then what ``act`` does."""

    cases: int = 2
    act: Callable[[], object] = lambda: "result"
    seen: list[tuple[int, float, float]] = field(default_factory=list)
    where: Any = None

    def execute(self, on_case: Callable[[int], None]) -> object:
        for position in range(self.cases):
            on_case(position)
            self.seen.append((position, self.where[0], self.where[1]))
            on_case(-1)
        return self.act()

    def without(self, position: int, reason: str) -> _Job:
        raise AssertionError("not in a worker")


class _Inbox(_Conn):
    def __init__(self, *tasks: Any, send_raises: type[BaseException] | None = None) -> None:
        super().__init__(send_raises=send_raises)
        self.tasks = deque(tasks)

    def recv(self) -> Any:
        return self.tasks.popleft()


class _Proxy:
    """A module as ``pool`` sees it, with some of its functions replaced (the real module is left alone)."""

    def __init__(self, module: Any, **replaced: Any) -> None:
        self._module, self._replaced = module, replaced

    def __getattr__(self, name: str) -> Any:
        return self._replaced[name] if name in self._replaced else getattr(self._module, name)


@pytest.fixture
def serving(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """``_serve`` in this process: its process-wide changes recorded, not made."""
    done: list[Any] = []

    def exit_(code: int) -> None:
        done.append(("_exit", code))
        raise _Exited(code)

    monkeypatch.setattr(
        pool,
        "signal",
        _Proxy(
            signal,
            signal=lambda *a: done.append(("signal", a)),
            pthread_sigmask=lambda *a: done.append(("pthread_sigmask", a)),
        ),
    )
    monkeypatch.setattr(pool, "_die_with_parent", lambda: done.append("die_with_parent"))
    monkeypatch.setattr(pool, "os", _Proxy(os, dup2=lambda *a: done.append(("dup2", a)), _exit=exit_))
    monkeypatch.setattr(
        pool,
        "gc",
        _Proxy(gc, freeze=lambda: done.append("freeze"), set_threshold=lambda *a: done.append(("set_threshold", a))),
    )
    monkeypatch.setattr(pool, "time", _Proxy(time, monotonic=_Clock(11.0, 12.0, 13.0, 14.0, 15.0)))
    monkeypatch.setattr(sys, "stdout", io.StringIO())
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    return done


def test_a_worker_runs_each_job_it_is_sent_and_says_where_it_is(serving: list[Any]) -> None:
    where = [5.0, 0.0]
    first, second = _Job(where=where), _Job(cases=1, act=lambda: {"n": 2}, where=where)
    stdout, stderr = sys.stdout, sys.stderr
    conn = _Inbox((0, first), (1, second), None, (2, _Job(where=where)))
    _serve(conn, where)  # type: ignore[arg-type]
    assert serving == [
        ("signal", (signal.SIGINT, signal.SIG_IGN)),
        ("pthread_sigmask", (signal.SIG_UNBLOCK, {signal.SIGINT})),  # ignored first: a Ctrl-C held is dropped
        "die_with_parent",
        ("dup2", (2, 1)),
        "freeze",
        ("set_threshold", (50_000, 50, 100)),
    ]
    # on_case notes the start first, then the position: the parent never sees a position with an old start.
    assert first.seen == [(0, 0.0, 11.0), (1, 1.0, 13.0)] and second.seen == [(0, 0.0, 15.0)]
    assert conn.sent == [("done", "result"), ("done", {"n": 2})]
    assert where[0] == -1.0
    assert len(conn.tasks) == 1  # None ends it: the job after it is not read
    assert isinstance(sys.stdout, OutlivesReader) and isinstance(sys.stderr, OutlivesReader)
    assert (sys.stdout._stream, sys.stderr._stream) == (stdout, stderr)


def test_a_worker_whose_output_cannot_be_moved_still_runs_its_jobs(
    serving: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_dup2(*args: Any) -> None:
        raise OSError(9, "Bad file descriptor")

    monkeypatch.setattr(pool, "os", _Proxy(os, dup2=no_dup2))
    where = [-1.0, 0.0]
    conn = _Inbox((0, _Job(cases=1, where=where)), None)
    _serve(conn, where)  # type: ignore[arg-type]
    assert conn.sent == [("done", "result")] and "freeze" in serving


def test_a_worker_is_between_cases_after_each_job(serving: list[Any]) -> None:
    where = [5.0, 0.0]

    class Ends(_Job):
        def execute(self, on_case: Callable[[int], None]) -> object:
            on_case(4)
            return "left mid-case"

    conn = _Inbox((0, Ends(where=where)), None)
    _serve(conn, where)  # type: ignore[arg-type]
    assert where == [-1.0, 11.0] and conn.sent == [("done", "left mid-case")]


@pytest.mark.parametrize(
    ("error", "payload"),
    [
        (OSError(28, "No space left on device", "/out/x.csv"), (28, "No space left on device", "/out/x.csv")),
        (OSError(13, "Permission denied"), (13, "Permission denied", None)),
        (OSError("no errno"), (None, "no errno", None)),
    ],
)
def test_a_worker_that_cannot_write_sends_the_error_and_stops(
    serving: list[Any], error: OSError, payload: tuple[Any, ...]
) -> None:
    def fail() -> object:
        raise error

    where = [-1.0, 0.0]
    conn = _Inbox((0, _Job(act=fail, where=where)), (1, _Job(where=where)))
    _serve(conn, where)  # type: ignore[arg-type]
    assert conn.sent == [("oserror", payload)] and len(conn.tasks) == 1
    assert ("_exit", 0) not in serving


def test_the_harnesss_own_failure_in_a_worker_is_raised_with_its_traceback(serving: list[Any]) -> None:
    def fail() -> object:
        raise ValueError("harness bug")

    where = [-1.0, 0.0]
    conn = _Inbox((0, _Job(act=fail, where=where)))
    with pytest.raises(ValueError, match="harness bug"):
        _serve(conn, where)  # type: ignore[arg-type]
    assert conn.sent == []


@pytest.mark.parametrize(
    ("exc", "code", "said"),
    [
        (SystemExit(3), 3, "SystemExit: 3"),
        (SystemExit(), 0, "SystemExit"),
        (KeyboardInterrupt(), 1, "KeyboardInterrupt"),
    ],
)
def test_a_case_that_ends_its_worker_says_what_did_and_exits_with_its_status(
    serving: list[Any], exc: BaseException, code: int, said: str
) -> None:
    def end() -> object:
        raise exc

    where = [-1.0, 0.0]
    conn = _Inbox((0, _Job(act=end, where=where)), (1, _Job(where=where)))
    with pytest.raises(_Exited) as exited:
        _serve(conn, where)  # type: ignore[arg-type]
    assert exited.value.code == code and serving[-1] == ("_exit", code)
    assert conn.sent == [("ended", f"the worker process exited (status {code}) while running the case: {said}")]
    assert len(conn.tasks) == 1


@pytest.mark.parametrize("error", [OSError, ValueError])
def test_a_worker_ends_even_when_its_parent_cannot_hear_why(serving: list[Any], error: type[BaseException]) -> None:
    def end() -> object:
        raise SystemExit(4)

    where = [-1.0, 0.0]
    conn = _Inbox((0, _Job(act=end, where=where)), send_raises=error)
    with pytest.raises(_Exited) as exited:
        _serve(conn, where)  # type: ignore[arg-type]
    assert exited.value.code == 4


def test_a_worker_flushes_its_errors_before_it_exits(serving: list[Any], monkeypatch: pytest.MonkeyPatch) -> None:
    def end() -> object:
        print("last words", file=sys.stderr)
        raise SystemExit(2)

    written = io.StringIO()
    flushed: list[str] = []

    class Stream(io.StringIO):
        def flush(self) -> None:
            flushed.append(self.getvalue())
            written.write(self.getvalue())

    monkeypatch.setattr(sys, "stderr", Stream())
    where = [-1.0, 0.0]
    with pytest.raises(_Exited):
        _serve(_Inbox((0, _Job(act=end, where=where))), where)  # type: ignore[arg-type]
    assert flushed and flushed[-1] == "last words\n"


# --- the pool ------------------------------------------------------------------------------------------------------


class _Peer(_Conn):
    """The parent's end of a fake pipe: what the worker sends lands in ``inbox``."""

    def __init__(self) -> None:
        super().__init__()
        self.inbox: deque[Any] = deque()
        self.worker: _FakeWorker | None = None
        self.recv_raises: type[BaseException] | None = None

    def send(self, obj: Any) -> None:
        super().send(obj)
        assert self.worker is not None
        self.worker.receive(obj)

    def recv(self) -> Any:
        if self.recv_raises is not None:
            raise self.recv_raises("broken pipe")
        if self.inbox:
            return self.inbox.popleft()
        raise EOFError

    def ready(self) -> bool:
        assert self.worker is not None
        return bool(self.inbox) or not self.worker.process.alive or self.recv_raises is not None


class _Die(BaseException):
    """The fake worker dies: with ``code`` as its exit status, saying ``said`` first (``ended``) or nothing."""

    def __init__(self, code: int, said: str | None = None) -> None:
        super().__init__(code)
        self.code, self.said = code, said


class _Hang(BaseException):
    """The fake worker is stuck in the case it is on."""


class _Full(BaseException):
    def __init__(self, payload: tuple[Any, ...]) -> None:
        super().__init__(payload)
        self.payload = payload


class _FakeWorker:
    """A worker process that runs what it is sent at once, in this process, as ``_serve`` would."""

    def __init__(self, context: _Context, target: Any, args: tuple[Any, ...], daemon: bool) -> None:
        self.context, self.target, self.child, self.where = context, target, *args
        self.daemon = daemon
        self.process = _Process()
        self.process.alive = False  # until started
        self.started_with: tuple[Any, ...] = ()
        self.peer: _Peer | None = None

    # the Process interface
    def start(self) -> None:
        self.started_with = (
            signal.getsignal(signal.SIGINT),
            signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, set()),
        )
        self.process.alive = True
        self.context.started.append(self)

    def is_alive(self) -> bool:
        return self.process.is_alive()

    @property
    def exitcode(self) -> int | None:
        return self.process.exitcode

    def kill(self) -> None:
        self.context.log.append(("kill", self.context.started.index(self)))
        self.process.kill()

    def join(self, timeout: float | None = None) -> None:
        self.process.join(timeout)

    # the worker's side
    def receive(self, task: Any) -> None:
        if task is None:
            self.context.log.append(("stop", self.context.started.index(self)))
            self.process.alive, self.process.exitcode = False, 0
            return
        assert self.process.alive
        _index, job = task

        def on_case(position: int) -> None:
            self.where[1] = time.monotonic()
            self.where[0] = float(position)

        assert self.peer is not None
        try:
            result = job.execute(on_case)
        except _Die as death:
            if death.said is not None:
                self.peer.inbox.append(("ended", death.said))
            self.process.alive, self.process.exitcode = False, death.code
            return
        except _Hang:
            self.where[1] -= 1000  # a case that started long ago
            return
        except _Full as full:
            self.peer.inbox.append(("oserror", full.payload))
            return
        self.where[0] = -1.0
        self.peer.inbox.append(("done", result))


class _Context:
    def __init__(self) -> None:
        self.started: list[_FakeWorker] = []
        self.made: list[_FakeWorker] = []
        self.log: list[Any] = []
        self.pipes: list[tuple[_Peer, _Conn]] = []

    def Pipe(self) -> tuple[_Peer, _Conn]:  # multiprocessing's name
        pair = (_Peer(), _Conn())
        self.pipes.append(pair)
        return pair

    def Process(self, target: Any, args: tuple[Any, ...], daemon: bool) -> _FakeWorker:
        worker = _FakeWorker(self, target, args, daemon)
        parent, child = self.pipes[-1]
        assert args[0] is child
        parent.worker, worker.peer = worker, parent
        self.made.append(worker)
        return worker


@dataclass(frozen=True)
class _Cases:
    """A job of cases, each ``ok``, ``die`` (killed), ``exit`` (status 3), ``ended`` (says why), ``hang`` or
    ``full`` (a disk error); ``skipped`` are those accounted for as failed. ``before`` deaths outside any case come
    first, one per run of the job (``deaths``, shared between its copies, counts them)."""

    name: str
    cases: tuple[str, ...]
    log: list[Any]
    skipped: tuple[tuple[int, str], ...] = ()
    before: int = 0
    deaths: list[int] = field(default_factory=lambda: [0])

    def execute(self, on_case: Callable[[int], None]) -> object:
        self.log.append(("run", self.name, tuple(p for p, _ in self.skipped)))
        if self.deaths[0] < self.before:
            self.deaths[0] += 1
            raise _Die(-signal.SIGKILL)
        skipped = dict(self.skipped)
        out = []
        for position, case in enumerate(self.cases):
            if position in skipped:
                out.append(f"failed: {skipped[position]}")
                continue
            on_case(position)
            if case == "die":
                raise _Die(-signal.SIGKILL)
            if case == "exit":
                raise _Die(3)
            if case == "ended":
                raise _Die(1, f"{self.name} said why")
            if case == "hang":
                raise _Hang
            if case == "full":
                raise _Full((28, "No space left on device", None if self.name == "nameless" else f"/{self.name}"))
            on_case(-1)
            out.append(case)
        return (self.name, tuple(out))

    def without(self, position: int, reason: str) -> _Cases:
        return _Cases(self.name, self.cases, self.log, (*self.skipped, (position, reason)), self.before, self.deaths)


@pytest.fixture
def context(monkeypatch: pytest.MonkeyPatch) -> _Context:
    """``supervise`` with fake processes and a ``wait`` that answers at once (and gives up if the loop spins)."""
    made = _Context()
    spawn = _Proxy(multiprocessing, get_context=lambda method: made if method == "spawn" else None)
    monkeypatch.setattr(pool, "multiprocessing", spawn)
    waits: list[float] = []

    def wait(conns: list[_Peer], timeout: float) -> list[_Peer]:
        waits.append(timeout)
        assert len(waits) < 500, "the loop spins"
        assert timeout == pool._TICK_S
        return [c for c in conns if c.ready()]

    monkeypatch.setattr(pool, "wait", wait)
    return made


def _run(jobs: list[_Cases], concurrency: int = 1, budget: float | None = None) -> list[tuple[int, Any]]:
    finished: list[tuple[int, Any]] = []
    supervise(jobs, concurrency, budget, lambda index, result: finished.append((index, result)))
    return finished


def test_every_job_is_run_once_and_finished_with_its_index(context: _Context) -> None:
    log: list[Any] = []
    jobs = [_Cases("a", ("ok", "ok"), log), _Cases("b", ("ok",), log), _Cases("c", (), log)]
    assert _run(jobs) == [(0, ("a", ("ok", "ok"))), (1, ("b", ("ok",))), (2, ("c", ()))]
    assert log == [("run", "a", ()), ("run", "b", ()), ("run", "c", ())]
    (worker,) = context.made
    assert worker.target is pool._serve and worker.daemon is True
    assert [task for task in context.pipes[0][0].sent if task is not None] == [(0, jobs[0]), (1, jobs[1]), (2, jobs[2])]
    # Every worker is stopped at the end: told to go, waited for, its pipe closed.
    assert context.log == [("stop", 0), ("kill", 0)] and context.pipes[0][0].sent[-1] is None
    assert context.pipes[0][0].closed == 1 and worker.process.joins[0] is not None


@pytest.mark.parametrize(("concurrency", "jobs", "workers"), [(1, 3, 1), (2, 5, 2), (4, 2, 2), (0, 3, 1), (-1, 2, 1)])
def test_the_pool_has_as_many_workers_as_asked_but_no_more_than_jobs(
    context: _Context, concurrency: int, jobs: int, workers: int
) -> None:
    log: list[Any] = []
    done = _run([_Cases(str(n), ("ok",), log) for n in range(jobs)], concurrency)
    assert sorted(done) == [(n, (str(n), ("ok",))) for n in range(jobs)]
    assert len(context.made) == workers and len(context.started) == workers


def test_no_jobs_start_one_worker_and_finish_nothing(context: _Context) -> None:
    assert _run([], 3) == []
    assert len(context.started) == 1 and context.log == [("stop", 0), ("kill", 0)]


def test_a_worker_starts_with_ctrl_c_blocked_and_the_parent_gets_its_mask_back(
    context: _Context, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = signal.getsignal(signal.SIGINT)
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, set())
    tracker: list[bool] = []  # SIGINT blocked when the resource tracker was made sure of: it must not be yet
    monkeypatch.setattr(
        pool,
        "resource_tracker",
        _Proxy(
            pool.resource_tracker,
            ensure_running=lambda: tracker.append(signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, set())),
        ),
    )
    _run([_Cases("a", ("ok",), [])])
    assert tracker == [signal.SIGINT in blocked]  # before the block: its start lets SIGINT in again
    assert context.started[0].started_with == (before, True)  # blocked, and the parent's handler left as it was
    assert signal.getsignal(signal.SIGINT) == before
    assert signal.pthread_sigmask(signal.SIG_BLOCK, set()) == blocked


def test_a_ctrl_c_while_a_worker_starts_reaches_the_parent_though_another_thread_takes_it(
    context: _Context, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The parent blocked SIGINT in its own thread and ignored it while a worker started. The kernel gives a
    signal sent to the process to a thread that does not block it; pandas' numeric libraries start such threads,
    and there the ignored Ctrl-C was dropped: a `harness check` interrupted as its workers started ran on to its
    end (2 of 36 tries at 0.4 s)."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    idle = threading.Event()
    other = threading.Thread(target=idle.wait, daemon=True)  # a thread that does not block SIGINT
    other.start()
    start = _FakeWorker.start

    def interrupted(worker: _FakeWorker) -> None:
        start(worker)
        os.kill(os.getpid(), signal.SIGINT)  # to the process: this thread blocks it, so the other one takes it
        time.sleep(0.05)

    monkeypatch.setattr(_FakeWorker, "start", interrupted)
    try:
        with pytest.raises(KeyboardInterrupt):
            _run([_Cases("a", ("ok",), [])])
            time.sleep(0.05)  # where the interrupt would come, had it been held to the end of the start
    finally:
        idle.set()
        other.join()
        signal.signal(signal.SIGINT, before)


def test_a_started_worker_is_between_cases_and_its_child_end_is_closed(context: _Context) -> None:
    workers = _Pool(context, 2)
    worker = workers.start()
    assert list(worker.where) == [-1.0, 0.0] and len(worker.where) == 2
    assert workers.workers == [worker] and worker.task is None
    parent, child = context.pipes[0]
    assert cast(object, worker.conn) is parent and child.closed == 1 and parent.closed == 0
    assert cast(object, worker.process) is context.made[0] and context.started == context.made
    assert context.made[0].where is worker.where


@pytest.mark.parametrize("case", ["die", "exit", "ended", "hang"])
def test_a_first_case_that_fails_its_worker_is_a_case_not_a_death_outside_one(context: _Context, case: str) -> None:
    log: list[Any] = []
    done = _run([_Cases("a", (case, "ok"), log)], budget=1.0)
    assert done[0][1][1][0].startswith("failed: ") and done[0][1][1][1] == "ok"
    assert log == [("run", "a", ()), ("run", "a", (0,))]


@pytest.mark.parametrize("case", ["die", "exit", "ended", "hang"])
def test_a_case_that_fails_its_worker_is_accounted_for_and_the_job_goes_on_in_a_fresh_one(
    context: _Context, case: str
) -> None:
    log: list[Any] = []
    jobs = [_Cases("a", ("ok", case, "ok"), log), _Cases("b", ("ok",), log)]
    done = _run(jobs, budget=1.0)
    reason = {
        "die": "the worker process was killed by SIGKILL while running the case",
        "exit": "the worker process exited (status 3) while running the case",
        "ended": "a said why",
        "hang": "the case ran longer than its wall-clock budget of 1 s (--case-timeout); its worker process was stopped",
    }[case]
    assert done == [(0, ("a", ("ok", f"failed: {reason}", "ok"))), (1, ("b", ("ok",)))]
    # The job runs again first, before the next, without that case; the failed worker was killed and replaced.
    assert log == [("run", "a", ()), ("run", "a", (1,)), ("run", "b", ())]
    assert len(context.started) == 2 and context.made[0].process.killed == 1
    assert context.log[0] == ("kill", 0)


def test_a_case_that_runs_on_without_a_budget_is_left_to_run(context: _Context) -> None:
    log: list[Any] = []
    with pytest.raises(AssertionError, match="the loop spins"):
        _run([_Cases("a", ("hang",), log)], budget=None)
    assert log == [("run", "a", ())]


def test_a_worker_on_a_long_case_does_not_hold_up_the_others(context: _Context) -> None:
    """While one worker's case runs on, the other workers' results are taken and they get the next jobs."""
    log: list[Any] = []
    finished: list[tuple[int, Any]] = []
    jobs = [_Cases("slow", ("hang",), log), _Cases("b", ("ok",), log), _Cases("c", ("ok",), log)]
    with pytest.raises(AssertionError, match="the loop spins"):
        supervise(jobs, 2, None, lambda index, result: finished.append((index, result)))
    assert finished == [(1, ("b", ("ok",))), (2, ("c", ("ok",)))]


def test_a_case_within_its_budget_is_left_to_run(context: _Context) -> None:
    log: list[Any] = []
    with pytest.raises(AssertionError, match="the loop spins"):
        _run([_Cases("a", ("hang",), log)], budget=10_000.0)
    assert log == [("run", "a", ())]


def test_a_worker_that_dies_outside_any_case_runs_its_job_again_whole(context: _Context) -> None:
    log: list[Any] = []
    jobs = [_Cases("a", ("ok",), log, before=2), _Cases("b", ("ok",), log, before=2)]
    done = _run(jobs)
    assert done == [(0, ("a", ("ok",))), (1, ("b", ("ok",)))]
    assert log == [("run", "a", ())] * 3 + [("run", "b", ())] * 3
    assert len(context.started) == 5


@pytest.mark.parametrize("pipe_error", [None, OSError])
def test_a_job_whose_worker_dies_outside_any_case_three_times_fails_the_run(
    context: _Context, pipe_error: type[BaseException] | None
) -> None:
    log: list[Any] = []
    jobs = [_Cases("a", ("ok",), log, before=3), _Cases("b", ("ok",), log)]
    original = context.Pipe

    def pipe() -> tuple[_Peer, _Conn]:
        parent, child = original()
        parent.recv_raises = pipe_error
        return parent, child

    if pipe_error is not None:
        context.Pipe = pipe  # type: ignore[method-assign]
    with pytest.raises(RunFailed) as failed:
        _run(jobs)
    assert str(failed.value) == (
        "a worker process died outside any case, 3 times "
        "(the worker process was killed by SIGKILL while running the case)"
    )
    assert log == [("run", "a", ())] * 3
    # Every worker is stopped, the last one included.
    assert all(not w.process.alive for w in context.made) and len(context.made) == 4


@pytest.mark.parametrize(
    ("name", "filename", "text"),
    [
        ("a", "/a", "[Errno 28] No space left on device: '/a'"),
        ("nameless", None, "[Errno 28] No space left on device"),
    ],
)
def test_a_worker_that_cannot_write_raises_the_same_error_in_the_parent(
    context: _Context, name: str, filename: str | None, text: str
) -> None:
    log: list[Any] = []
    with pytest.raises(OSError) as raised:
        _run([_Cases(name, ("full",), log), _Cases("b", ("ok",), log)])
    assert (raised.value.errno, raised.value.strerror, raised.value.filename) == (
        28,
        "No space left on device",
        filename,
    )
    assert str(raised.value) == text and type(raised.value) is OSError
    # The same error as the worker's: no filename stands in for a missing one.
    assert raised.value.args == (28, "No space left on device")
    assert log == [("run", name, ())]
    # Its worker was still busy with the job: it is killed, not told to stop.
    assert context.log == [("kill", 0)] and None not in context.pipes[0][0].sent


def test_two_workers_share_the_jobs_and_each_result_is_its_own(context: _Context) -> None:
    log: list[Any] = []
    jobs = [_Cases(str(n), ("ok",) * n, log) for n in range(5)]
    done = _run(jobs, concurrency=2)
    assert sorted(done) == [(n, (str(n), ("ok",) * n)) for n in range(5)]
    sent = [t for parent, _ in context.pipes for t in parent.sent if t is not None]
    assert sorted(index for index, _ in sent) == [0, 1, 2, 3, 4]
    assert all(len([t for t in parent.sent if t is not None]) >= 2 for parent, _ in context.pipes)


# --- stopping the pool ----------------------------------------------------------------------------------------------


def test_retiring_a_worker_kills_it_waits_closes_its_pipe_and_forgets_it() -> None:
    workers = _Pool(None, 1)
    worker = _worker()
    workers.workers.append(worker)
    workers.retire(worker)
    process, conn = worker.process, worker.conn
    assert (process.killed, process.joins, conn.closed, workers.workers) == (1, [5], 1, [])  # type: ignore[attr-defined]


@pytest.mark.parametrize("error", [OSError, ValueError])
def test_retiring_a_worker_that_is_gone_or_closed_still_forgets_it(error: type[BaseException]) -> None:
    workers = _Pool(None, 1)
    worker = _worker(_Process(kill_raises=error), close_raises=True)
    workers.workers.append(worker)
    workers.retire(worker)
    assert workers.workers == [] and worker.process.joins == [5]  # type: ignore[attr-defined]


def test_closing_the_pool_kills_busy_workers_and_lets_idle_ones_go(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pool, "time", _Proxy(time, monotonic=_Clock(100.0, 100.5, 103.0)))
    busy, idle, dead = _worker(), _worker(), _worker(_Process(alive=False, exitcode=0))
    busy.task = (0, object())  # type: ignore[assignment]
    workers = _Pool(None, 3, [busy, idle, dead])
    workers.close()
    assert workers.workers == []
    assert busy.process.killed == 1 and busy.conn.sent == []  # type: ignore[attr-defined]
    assert idle.conn.sent == [None] and dead.conn.sent == []  # type: ignore[attr-defined]
    # The busy one was killed at once; the idle ones were given what is left of 2 s, then retired.
    assert busy.process.joins == [5]  # type: ignore[attr-defined]
    assert idle.process.joins == [1.5, 5] and dead.process.joins == [0.0, 5]  # type: ignore[attr-defined]
    assert (idle.conn.closed, dead.conn.closed) == (1, 1)


@pytest.mark.parametrize("error", [OSError, BrokenPipeError])
def test_closing_the_pool_goes_on_when_an_idle_worker_cannot_be_told(
    monkeypatch: pytest.MonkeyPatch, error: type[BaseException]
) -> None:
    monkeypatch.setattr(pool, "time", _Proxy(time, monotonic=_Clock(100.0, 100.0, 100.0)))
    deaf, other = _worker(send_raises=error), _worker()
    workers = _Pool(None, 2, [deaf, other])
    workers.close()
    assert workers.workers == [] and other.conn.sent == [None]  # type: ignore[attr-defined]
    assert deaf.process.joins == [2.0, 5] and other.process.joins == [2.0, 5]  # type: ignore[attr-defined]


def test_a_pool_stopped_by_an_error_stops_every_worker(context: _Context) -> None:
    log: list[Any] = []

    def finished(index: int, result: Any) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt), contextlib.suppress(RunFailed):
        supervise([_Cases("a", ("ok",), log), _Cases("b", ("ok",), log)], 2, None, finished)
    assert all(not w.process.alive for w in context.made)
    assert {entry[0] for entry in context.log} == {"kill", "stop"}
