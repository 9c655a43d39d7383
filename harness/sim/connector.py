"""The device connector (seed 000): runs a side effect on the device through a local two-phase ledger.

Before the effect it durably records ``started`` (fsync and an atomic rename); after the executor returns it
records ``completed`` with the receipt, before reporting. A matching completed record answers a repeated
request with the recorded result, without executing again; the same key with a changed request identity (its
arguments or its execution budget) is a conflict; a started record without a completed one is
``unknown_outcome``. A dispatch waits ``wait_s`` for its job; past that the reply says "running" with the job
ID, and the caller may follow the job. The connector can crash at every phase boundary; it runs again after
``restart_s`` with its durable ledger, and never resumes a job it was running.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

import simpy

from harness.model import Artifact, Receipt
from harness.model.events import (
    ConnectorCrashed,
    ConnectorRestarted,
    JobAbsent,
    JobCompleted,
    JobConflict,
    JobReplayed,
    JobStarted,
    JobStillRunning,
    JobUnknownOutcome,
)
from harness.policy import ResponseStatus
from harness.scenario import ConnectorSpec
from harness.scenario.faults import ConnectorCrash, StartedNotDurable
from harness.sim.faults import Injector
from harness.sim.history import History
from harness.sim.kernel import first_of
from harness.sim.messages import Reply, Request
from harness.sim.transport import Handler

__all__ = ["Connector"]


@dataclass(slots=True)
class _Record:
    """One key's entry in the local ledger."""

    identity: tuple[Artifact | None, float]
    job_id: str
    durable: bool
    done: simpy.Event
    receipt: Receipt | None = None
    #: The executor's answer when it returned no receipt (the target refused the request, or said it is pending,
    #: in progress or a conflict): the job is completed all the same, with that result.
    answer: ResponseStatus | None = None
    running: bool = True


@dataclass(slots=True)
class _Job:
    """Where an execution stands, so that a crash can tell it is dead."""

    epoch: int
    reply: Reply | None = field(default=None)


class Connector:
    def __init__(
        self,
        env: simpy.Environment,
        spec: ConnectorSpec,
        history: History,
        injector: Injector,
        executor: Handler,
    ) -> None:
        self._env = env
        self._spec = spec
        self._history = history
        self._injector = injector
        self._executor = executor
        self._ledger: dict[str, _Record] = {}
        self._up = True
        #: Bumped by every crash: an execution of an earlier epoch died with its process.
        self._epoch = 0
        self._jobs = 0

    def handle(self, request: Request) -> Generator[simpy.Event, Any, Reply | None]:
        """Answer a dispatch or a follow of its job; ``None`` while the device is down (no reply at all)."""
        if not self._up:
            return None
        if request.kind == "follow_job":
            return (yield from self._follow(request))
        if request.kind != "dispatch":
            return (yield from self._executor.handle(request))
        return (yield from self._dispatch(request))

    def _crash_at(self, phase: str, request: Request) -> bool:
        fault = self._injector.hit(ConnectorCrash, request.action_id, request.n, ("phase", phase))
        if fault is None:
            return False
        self._up = False
        self._epoch += 1
        lost = [key for key, r in self._ledger.items() if r.receipt is None and r.answer is None and not r.durable]
        for key in lost:
            del self._ledger[key]
        for record in self._ledger.values():
            record.running = False
        self._history.record(ConnectorCrashed(phase=phase, lost_records=len(lost)))
        self._env.process(self._restart())
        return True

    def _restart(self) -> Generator[simpy.Event, Any, None]:
        yield self._env.timeout(self._spec.restart_s)
        self._up = True
        self._history.record(ConnectorRestarted())

    def _dispatch(self, request: Request) -> Generator[simpy.Event, Any, Reply | None]:
        key, execution_id = request.idempotency_key, request.execution_id
        identity = (request.artifact, request.budget_s)
        record = self._ledger.get(key)
        if record is not None:
            if record.identity != identity:
                self._history.record(JobConflict(idempotency_key=key, execution_id=execution_id))
                return Reply(status="conflict")
            return self._known(record, key, execution_id)
        if self._crash_at("before_started", request):
            return None
        self._jobs += 1
        job_id = f"job-{self._jobs}"
        durable = self._injector.hit(StartedNotDurable, request.action_id, request.n) is None
        record = _Record(identity=identity, job_id=job_id, durable=durable, done=self._env.event())
        self._ledger[key] = record
        self._history.record(JobStarted(idempotency_key=key, execution_id=execution_id, job_id=job_id, durable=durable))
        if self._crash_at("after_started", request):
            return None
        job = _Job(self._epoch)
        self._env.process(self._execute(request, record, job))
        yield first_of(self._env, record.done, self._env.timeout(self._spec.wait_s))
        if job.epoch != self._epoch:
            return None  # the connector died: no report reaches the caller
        if job.reply is not None:
            return job.reply
        self._history.record(JobStillRunning(idempotency_key=key, job_id=job_id))
        return Reply(status="running", job_id=job_id)

    def _known(self, record: _Record, key: str, execution_id: str) -> Reply:
        """A request under a key the ledger holds, with the same identity."""
        if record.receipt is not None:
            self._history.record(
                JobReplayed(
                    idempotency_key=key,
                    execution_id=execution_id,
                    job_id=record.job_id,
                    receipt_id=record.receipt.receipt_id,
                )
            )
            return Reply(status=record.receipt.status, receipt=record.receipt, job_id=record.job_id)
        if record.answer is not None:
            self._history.record(
                JobReplayed(idempotency_key=key, execution_id=execution_id, job_id=record.job_id, receipt_id=None)
            )
            return Reply(status=record.answer, job_id=record.job_id)
        if record.running:
            self._history.record(JobStillRunning(idempotency_key=key, job_id=record.job_id))
            return Reply(status="running", job_id=record.job_id)
        self._history.record(JobUnknownOutcome(idempotency_key=key, job_id=record.job_id))
        return Reply(status="unknown_outcome", job_id=record.job_id)

    def _execute(self, request: Request, record: _Record, job: _Job) -> Generator[simpy.Event, Any, None]:
        """Run the side effect, then complete the ledger and report, unless a crash comes first. (The simulation
        settles on the destination's own count of what is under way, not on the connector's.)"""
        reply = yield from self._executor.handle(request)
        if job.epoch != self._epoch or reply is None or (reply.receipt is None and reply.status is None):
            return
        if self._crash_at("after_effect", request):
            return
        receipt = reply.receipt
        status = receipt.status if receipt is not None else reply.status
        assert status is not None
        record.receipt, record.running = receipt, False
        if receipt is None:  # the executor returned an answer and no receipt: that is the job's result
            record.answer = status
        self._history.record(
            JobCompleted(
                idempotency_key=request.idempotency_key,
                job_id=record.job_id,
                receipt_id=receipt.receipt_id if receipt is not None else None,
                status=status,
            )
        )
        if self._crash_at("after_completed", request):
            return
        job.reply = Reply(status=status, receipt=receipt, job_id=record.job_id)
        record.done.succeed()

    def _follow(self, request: Request) -> Generator[simpy.Event, Any, Reply | None]:
        """``task wait``: the job's status from the ledger, waiting up to ``wait_s`` for a running job to finish."""
        key = request.idempotency_key
        record = self._ledger.get(key)
        if record is None:
            self._history.record(JobAbsent(idempotency_key=key))
            return Reply(effect="absent")
        if record.running:
            epoch = self._epoch
            yield first_of(self._env, record.done, self._env.timeout(self._spec.wait_s))
            if epoch != self._epoch:
                return None
        if record.receipt is not None:
            self._history.record(
                JobReplayed(
                    idempotency_key=key, execution_id=None, job_id=record.job_id, receipt_id=record.receipt.receipt_id
                )
            )
            return Reply(effect=record.receipt.status, receipt=record.receipt, job_id=record.job_id)
        if record.answer is not None:
            # The job ended with the target's answer and no receipt: it tells nothing of the key's outcome (a
            # refusal of this request leaves an earlier operation under the key as it was), so the read is not
            # conclusive.
            self._history.record(
                JobReplayed(idempotency_key=key, execution_id=None, job_id=record.job_id, receipt_id=None)
            )
            return Reply(effect="unknown", job_id=record.job_id)
        if record.running:
            self._history.record(JobStillRunning(idempotency_key=key, job_id=record.job_id))
            return Reply(effect="running", job_id=record.job_id)
        self._history.record(JobUnknownOutcome(idempotency_key=key, job_id=record.job_id))
        return Reply(effect="unknown_outcome", job_id=record.job_id)
