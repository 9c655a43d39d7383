"""Worker processes the harness supervises: every case under a wall-clock budget, and no case can take it down.

Jobs (pieces of a run's cells, or parts of an exploration) go to worker processes one at a time. Before each
case a worker writes, into memory it shares with the parent, which case it is on and when it began. The parent
watches: a case over its budget gets its worker killed, and a worker that dies (``os._exit``, a signal, an
out-of-memory kill, ``sys.exit`` in a policy) is noticed. Either way the job is told which case failed and why
(``without``): a run writes it as a ``harness_error`` case with its reproduce command, an exploration reports it
and explores that policy no further in that job. A fresh worker takes the job again (the cases before it come
out byte-identical: they are deterministic), and the rest goes on. Workers ignore Ctrl-C (the parent stops them)
and are killed by the kernel when the parent dies, so none is ever orphaned.
"""

from __future__ import annotations

import contextlib
import gc
import multiprocessing
import os
import signal
import sys
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from multiprocessing import resource_tracker
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from multiprocessing.sharedctypes import RawArray
from typing import Any, Protocol, Self

from harness.errors import OutlivesReader, RunFailed

__all__ = ["RunFailed", "Supervised", "supervise"]
#: How often the parent looks at its workers.
_TICK_S = 0.1
#: A job whose worker dies outside any case is tried this many times before the run gives up.
_RETRIES = 2


class Supervised(Protocol):
    """A job a worker process runs: picklable, deterministic, and able to skip a case that failed."""

    def execute(self, on_case: Callable[[int], None]) -> object:
        """Run the job; call ``on_case(position)`` before each case (counted from 0 in the job) and
        ``on_case(-1)`` after it."""
        ...

    def without(self, position: int, reason: str) -> Self:
        """The same job, with the case at ``position`` not run again but accounted for as failed for ``reason``."""
        ...


@dataclass(slots=True)
class _Worker:
    process: BaseProcess
    conn: Connection
    #: [position of the current case among the job's cases (-1: between cases), its start (time.monotonic())]
    where: Any
    #: (index in the job list, the job) while busy
    task: tuple[int, Supervised] | None = None


@dataclass(slots=True)
class _Pool:
    context: Any
    size: int
    workers: list[_Worker] = field(default_factory=list)

    def start(self) -> _Worker:
        parent, child = self.context.Pipe()
        where = RawArray("d", 2)
        where[0] = -1.0
        process = self.context.Process(target=_serve, args=(child, where), daemon=True)
        # Ctrl-C is the parent's to handle. A worker ignores it once it runs _serve, but it takes a while to import
        # its way there: started with SIGINT blocked (a mask fork and exec keep, and Python leaves as it finds it),
        # it holds any Ctrl-C pending until _serve ignores it, which discards it. Only this thread blocks it, and
        # SIGINT is not ignored here: a Ctrl-C meant for the parent meanwhile goes to another of its threads (the
        # numeric libraries pandas loads start some), whose handler is Python's, and is not lost. Ignored here,
        # as it once was, it was: 2 of 36 checks interrupted at 0.4 s ran on to the end. multiprocessing's resource
        # tracker is started first, if it is not yet running: starting it lets SIGINT in again in this thread,
        # and would, from within the first worker's start(), have that worker start with it let in.
        resource_tracker.ensure_running()
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            process.start()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        child.close()
        worker = _Worker(process, parent, where)
        self.workers.append(worker)
        return worker

    def retire(self, worker: _Worker) -> None:
        """Kill a worker now (it may be stuck in a policy that never returns) and forget it."""
        with contextlib.suppress(OSError, ValueError):
            worker.process.kill()
        worker.process.join(timeout=5)
        with contextlib.suppress(OSError):
            worker.conn.close()
        self.workers.remove(worker)

    def close(self) -> None:
        """Let idle workers exit (up to 2 s) and kill busy ones now: a pool closes with a busy worker only when
        the work stopped (Ctrl-C, an error), and whatever that worker would still write, nothing reads; a run
        resumes as if it had been killed. Waiting for them made every interrupted command take 2 s to exit."""
        for worker in list(self.workers):
            if worker.task is not None:
                self.retire(worker)
            elif worker.process.is_alive():
                with contextlib.suppress(OSError, BrokenPipeError):
                    worker.conn.send(None)
        deadline = time.monotonic() + 2
        for worker in list(self.workers):
            worker.process.join(timeout=max(0.0, deadline - time.monotonic()))
            self.retire(worker)


def supervise(
    jobs: Sequence[Supervised],
    concurrency: int,
    case_timeout_s: float | None,
    finished: Callable[[int, Any], None],
) -> None:
    """Run every job in ``concurrency`` worker processes; call ``finished(index, result)`` as each ends.

    Raises ``RunFailed`` when a job cannot be run at all, and the ``OSError`` of a worker that could not write
    its files; on any exit (Ctrl-C included) every worker is stopped.
    """
    pending: deque[tuple[int, Supervised]] = deque(enumerate(jobs))
    # spawn, not fork: Polyaxon's tracking keeps threads and process-wide state that must not be forked.
    pool = _Pool(multiprocessing.get_context("spawn"), max(1, min(concurrency, len(jobs))))
    retries: dict[int, int] = {}
    try:
        for _ in range(pool.size):
            pool.start()
        while pending or any(w.task for w in pool.workers):
            for worker in pool.workers:
                if worker.task is None and pending:
                    worker.task = pending.popleft()
                    worker.where[0] = -1.0
                    worker.conn.send(worker.task)
            busy = [w for w in pool.workers if w.task is not None]
            ready = wait([w.conn for w in busy], timeout=_TICK_S)
            for worker in busy:
                assert worker.task is not None
                index, job = worker.task
                ended = None
                if worker.conn in ready:
                    try:
                        message = worker.conn.recv()
                    except (EOFError, OSError):
                        message = None
                    if message is not None:
                        kind, payload = message
                        if kind == "oserror":  # a worker could not write its files (a full disk, say)
                            errno, strerror, filename = payload
                            raise OSError(errno, strerror) if filename is None else OSError(errno, strerror, filename)
                        if kind == "ended":  # a case ended its worker, which said what did it
                            ended = payload
                        else:
                            worker.task = None
                            finished(index, payload)
                            continue
                if ended is None and worker.process.is_alive() and not _overdue(worker, case_timeout_s):
                    continue
                reason = ended or _why(worker, case_timeout_s)
                position = int(worker.where[0])
                pool.retire(worker)
                pool.start()
                if position < 0:
                    retries[index] = retries.get(index, 0) + 1
                    if retries[index] > _RETRIES:
                        raise RunFailed(f"a worker process died outside any case, {retries[index]} times ({reason})")
                    pending.appendleft((index, job))
                else:  # the job runs again, that case accounted for as failed
                    pending.appendleft((index, job.without(position, reason)))
    finally:
        pool.close()


def _overdue(worker: _Worker, budget_s: float | None) -> bool:
    return budget_s is not None and worker.where[0] >= 0 and time.monotonic() - worker.where[1] > budget_s


def _why(worker: _Worker, budget_s: float | None) -> str:
    if worker.process.is_alive():
        return (
            f"the case ran longer than its wall-clock budget of {budget_s:g} s (--case-timeout); its worker "
            "process was stopped"
        )
    code = worker.process.exitcode
    if code is not None and code < 0:
        with contextlib.suppress(ValueError):
            return f"the worker process was killed by {signal.Signals(-code).name} while running the case"
    return f"the worker process exited (status {code}) while running the case"


def _serve(conn: Connection, where: Any) -> None:
    """A worker: run the jobs the parent sends, one at a time, until it sends ``None``."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle: it stops every worker
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})  # blocked as it started; now ignored, and so let in
    _die_with_parent()
    # Nothing a worker runs writes to standard output but a policy that prints: its lines go to standard error,
    # so the harness's own output (the outcome table, the summary, a replay's timeline) stays as documented.
    with contextlib.suppress(OSError):
        sys.stdout.flush()
        os.dup2(2, 1)
    # A reader of standard error that went away does not make a policy's print a policy error: its lines then go
    # nowhere, as the parent's own do.
    sys.stdout, sys.stderr = OutlivesReader(sys.stdout), OutlivesReader(sys.stderr)
    # A case makes thousands of short-lived objects, and its few cycles (a simulation's processes and their
    # environment) can wait: the cycle collector looks at new objects every 50,000 allocations, not 700, and
    # never again at what was imported before the first job. 2% of a sweep's instructions (callgrind,
    # lost_response), peak memory the same at 10^4 and 10^5 seeds (50 MB). The same workers draw timelines
    # and replay cases; their garbage is collected as before, only less often.
    gc.freeze()
    gc.set_threshold(50_000, 50, 100)

    def on_case(position: int) -> None:
        where[1] = time.monotonic()
        where[0] = float(position)

    while True:
        task = conn.recv()
        if task is None:
            return
        _, job = task
        try:
            result = job.execute(on_case)
        except OSError as exc:  # raised again in the parent, which knows whose files they are
            conn.send(("oserror", (exc.errno, exc.strerror or str(exc), exc.filename)))
            return
        except Exception:
            raise  # the harness's own failure: its traceback is the report, and the parent sees the worker die
        except BaseException as exc:  # what no case catches: a policy's sys.exit, KeyboardInterrupt, BaseException
            code = _ended_by(exc)
            with contextlib.suppress(OSError, ValueError):
                conn.send(("ended", f"the worker process exited (status {code}) while running the case: {_named(exc)}"))
            sys.stderr.flush()
            os._exit(code)  # no traceback: the reason goes to the parent, which writes it into the case
        where[0] = -1.0
        conn.send(("done", result))


def _ended_by(exc: BaseException) -> int:
    """The status a process ends with when ``exc`` ends it: ``sys.exit``'s own, as the system keeps it (its low
    byte: ``sys.exit(256)`` ends with 0, ``sys.exit(-1)`` with 255, ``sys.exit(True)`` with 1), else 1."""
    if isinstance(exc, SystemExit):
        if exc.code is None:
            return 0
        return int(exc.code) & 0xFF if isinstance(exc.code, int) else 1
    return 1


def _named(exc: BaseException) -> str:
    """``SystemExit: 3``, ``KeyboardInterrupt``: what ended the worker, on one line, cut."""
    said = " ".join(str(exc).split())
    if len(said) > 200:
        said = f"{said[:200]}..."
    return f"{type(exc).__name__}: {said}" if said else type(exc).__name__


def _die_with_parent() -> None:
    """Ask the kernel to kill this process when its parent dies (Linux), so a killed run leaves no worker."""
    with contextlib.suppress(Exception):
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, signal.SIGKILL)
    if os.getppid() == 1:  # the parent is already gone
        os._exit(1)
