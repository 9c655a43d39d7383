"""The auditor: ground truth, kept beside the actors from what really happens, never from the history.

The actors tell the auditor what they do at the moment they do it (a dispatch leaves, a reply reaches the
caller, the destination accepts or applies an operation, the ledger is written, the task completes, an action
is escalated); for a judgement that depends on the world's state at that moment (was this dispatch
authorized?) the auditor asks the controller's live state itself. Only tests read the result, to prove that
every value the checker derives from the history alone is the truth (TigerBeetle's auditor plays the same
part beside its state machine).
"""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from harness.model import UNCERTAIN_REPLIES, Artifact, RequestKind, conclusive
from harness.model.base import fast_frozen_init

if TYPE_CHECKING:
    from collections.abc import Mapping

    from harness.sim.controller import Controller, _Task

__all__ = ["Auditor", "GroundTruth"]


@dataclass(frozen=True, slots=True)
class GroundTruth:
    """What really happened in one case. Each field is named after the metric it audits."""

    dispatches: int
    reads: int
    duplicate_effects: int
    unauthorized_dispatches: int
    effects_after_cancel: int
    duplicate_records: int
    wrong_revision_completions: int
    false_records: int
    mismatched_records: int
    changed_arguments: int
    abandoned_actions: int
    unresolved_actions: int
    escalations: int
    new_keys_while_unknown: int
    retries_after_uncertain: int
    task_completed: bool
    time_to_account_s: float | None


@dataclass(frozen=True, slots=True)
class _Dispatch:
    action_id: str
    n: int
    authorized: bool
    after_cancel: bool


@dataclass(frozen=True, slots=True)
class _Effect:
    action_id: str
    dispatch_n: int
    receipt_id: str
    at_s: float
    artifact: Artifact


@dataclass(frozen=True, slots=True)
class _Write:
    action_id: str
    status: Literal["applied", "rejected", "absent"]
    receipt_id: str | None
    at_s: float
    #: The receipt's arguments against what the action's last request asked for, or its key against every key
    #: the action's requests carried (applied writes only).
    mismatched: bool


@dataclass(frozen=True, slots=True)
class _Completion:
    revision: int
    receipt_id: str
    artifact: Artifact
    before_cancel: bool


# What the actors report is kept as a record each time (a dispatch, an effect, a ledger write, a completion):
# each gets a constructor that sets its slots directly.
for _record in (_Dispatch, _Effect, _Write, _Completion):
    fast_frozen_init(_record)


@dataclass(slots=True)
class _Caller:
    """What the caller of one action knows and has done, for judging its next dispatch."""

    keys: set[str] = field(default_factory=set)
    last_artifact: Artifact | None = None
    #: A receipt of the action's effect (an ``applied`` reply, a conclusive read other than an absence or a
    #: rejection) has reached the caller.
    settled: bool = False
    #: A rejection or a conclusive absence has reached the caller since the action's last dispatch: it settles the
    #: operations sent before it, not the next one.
    settled_since_dispatch: bool = False
    #: The caller was told the outcome is uncertain (do not replay, unknown outcome), and no read settled it since.
    uncertain: bool = False
    #: When (in the auditor's order of events) it was first told so since the last read that settled it: a dispatch
    #: decided before then (``Auditor.decided_dispatch``) is on its way already.
    told_at: int = 0
    #: When it was last told so: a read settles it only if the target answered the read since.
    told_last_at: int = 0


@dataclass(slots=True)
class Auditor:
    """Collects what happened; ``truth()`` turns it into ``GroundTruth`` at the end of the case."""

    deadline_s: float
    controller: Controller | None = None
    #: The task as the case left it, kept by ``stop_watching`` (what ``truth`` judges once the case is over).
    final_task: _Task | None = None
    actions: list[str] = field(default_factory=list)
    dispatches: list[_Dispatch] = field(default_factory=list)
    reads: int = 0
    effects: list[_Effect] = field(default_factory=list)
    #: The actions some effect was applied for (so far).
    affected: set[str] = field(default_factory=set)
    accepted: dict[str, float] = field(default_factory=dict)
    writes: list[_Write] = field(default_factory=list)
    wrong_completions: int = 0
    completion: _Completion | None = None
    #: Per action, its first escalation since its last dispatch: the hand-over that stands (a dispatch after an
    #: escalation voids it, the owner's account then stale).
    handed_over_at: dict[str, float] = field(default_factory=dict)
    escalations: int = 0
    callers: dict[str, _Caller] = field(default_factory=dict)
    #: Per (action, read number): when the target answered that read (in the order of ``steps``), and whether the
    #: action's effect was there then.
    answers: dict[tuple[str, int], tuple[int, bool]] = field(default_factory=dict)
    first_use: dict[str, Artifact] = field(default_factory=dict)
    changed_arguments: int = 0
    new_keys_while_unknown: int = 0
    retries_after_uncertain: int = 0
    #: Counts what the callers were told and decided, in the order it happened.
    steps: int = 0

    def watch(self, controller: Controller) -> None:
        """The controller whose live state judges dispatches and the final task."""
        self.controller = controller

    def stop_watching(self) -> None:
        """The case is over: keep the task as it ended and let go of the controller. The controller reports to
        this auditor, so the two would hold each other, and with them the case's history and actors, until the
        garbage collector's next pass: freed at once instead, a case costs 4% fewer instructions."""
        self.final_task = self._live().task
        self.controller = None

    def _live(self) -> Controller:
        assert self.controller is not None, "the auditor watches no controller"
        return self.controller

    # -- what the actors report as it happens --------------------------------------------------------------

    def action_recorded(self, action_id: str) -> None:
        self.actions.append(action_id)
        self.callers[action_id] = _Caller()

    def dispatched(self, action_id: str, n: int, key: str, artifact: Artifact, decided_at: int | None = None) -> None:
        """A dispatch is leaving the caller: judge it by the controller's state and the caller's knowledge now.
        ``decided_at``: when the command that sends it was decided (what ``decided_dispatch`` returned for it;
        ``None`` for a dispatch no command decided, the dispatcher's first). Its own decision: another worker
        recovering beside it may have decided a dispatch since, which does not make this one a later decision."""
        controller = self._live()
        authorized = controller.authorized_now(action_id)
        self.dispatches.append(_Dispatch(action_id, n, authorized, controller.task.cancel_requested))
        self.handed_over_at.pop(action_id, None)
        caller = self.callers[action_id]
        if caller.keys and key not in caller.keys and not (caller.settled or caller.settled_since_dispatch):
            self.new_keys_while_unknown += 1
        self.retries_after_uncertain += caller.uncertain and (decided_at is None or decided_at > caller.told_at)
        caller.keys.add(key)
        caller.last_artifact = artifact
        caller.settled_since_dispatch = False
        first = self.first_use.setdefault(key, artifact)
        self.changed_arguments += first != artifact

    def decided_dispatch(self, action_id: str) -> int:
        """A worker decided to send the action again (it leaves ``worker.retry_send_s`` later): when, for the
        dispatch that carries it out to give to ``dispatched``."""
        self.steps += 1
        return self.steps

    def read_answered(self, action_id: str, n: int) -> None:
        """The target answered the action's ``n``-th read: when, and whether the action's effect was there then."""
        self.steps += 1
        self.answers[(action_id, n)] = (self.steps, action_id in self.affected)

    def reply_reached_caller(self, action_id: str, kind: RequestKind, status: str | None, n: int) -> None:
        """A reply was delivered to a caller that was still listening (the ``n``-th request of its kind)."""
        caller = self.callers[action_id]
        self.steps += 1
        if not caller.uncertain:
            caller.told_at = self.steps
        if (kind == "dispatch" and status in UNCERTAIN_REPLIES) or status == "unknown_outcome":
            caller.told_last_at = self.steps
        if kind == "dispatch":
            caller.settled |= status == "applied"
            caller.settled_since_dispatch |= status == "rejected"
            caller.uncertain |= status in UNCERTAIN_REPLIES
        elif status == "unknown_outcome":
            caller.uncertain = True
        elif conclusive(kind, status):
            # A read the target answered before the caller was last told the outcome is uncertain (its answer slow
            # on the way back) checked nothing since; an answer that nothing is there, while the action's effect was
            # there already when the target gave it, settles nothing (one that landed while the answer was on its
            # way back takes nothing from it). A read the target did not answer (a connector's job follow) is
            # judged as its answer arrives.
            answered_at, there = self.answers.get((action_id, n), (self.steps, action_id in self.affected))
            checked_since = not (caller.uncertain and answered_at < caller.told_last_at)
            if checked_since and not (status in ("absent", "refuted") and there):
                caller.uncertain = False
            caller.settled |= status not in ("absent", "rejected")
            caller.settled_since_dispatch |= status in ("absent", "rejected")

    def read(self) -> None:
        self.reads += 1

    def accepted_operation(self, action_id: str, at_s: float) -> None:
        """The destination accepted a new operation for the action (it may apply later, or never)."""
        self.accepted.setdefault(action_id, at_s)

    def applied(self, action_id: str, dispatch_n: int, receipt_id: str, at_s: float, artifact: Artifact) -> None:
        """The destination really applied ``artifact`` for the action's ``dispatch_n``-th dispatch."""
        self.effects.append(_Effect(action_id, dispatch_n, receipt_id, at_s, artifact))
        self.affected.add(action_id)

    def ledger_written(
        self,
        action_id: str,
        status: Literal["applied", "rejected", "absent"],
        receipt_id: str | None,
        at_s: float,
        receipt_artifact: Artifact | None = None,
        receipt_key: str | None = None,
    ) -> None:
        caller = self.callers[action_id]
        expected = caller.last_artifact or self._live().actions[action_id].view.artifact
        # Another client's operation is not this action's effect, whatever its arguments.
        foreign = bool(caller.keys) and receipt_key is not None and receipt_key not in caller.keys
        # A refusal is a receipt like an effect: another operation's, or another request's, is not this one's.
        mismatched = receipt_artifact is not None and (foreign or receipt_artifact != expected)
        self.writes.append(_Write(action_id, status, receipt_id, at_s, mismatched))

    def task_completed(self, action_revision: int, receipt_id: str, receipt_artifact: Artifact) -> None:
        """The task is being marked complete: judge it by the task's state at this instant."""
        task = self._live().task
        wrong = action_revision != task.revision or task.cancel_requested or receipt_artifact != task.artifact
        self.wrong_completions += wrong
        self.completion = _Completion(task.revision, receipt_id, receipt_artifact, not task.cancel_requested)

    def escalated(self, action_id: str, at_s: float) -> None:
        self.escalations += 1
        self.handed_over_at.setdefault(action_id, at_s)

    # -- the truth ---------------------------------------------------------------------------------------------

    def _stands(self, receipt_id: str, artifact: Artifact) -> bool:
        """Whether no effect applied after the one of ``receipt_id`` put other arguments on its target."""
        later = itertools.dropwhile(lambda e: e.receipt_id != receipt_id, self.effects)
        next(later, None)
        return all(e.artifact == artifact for e in later if e.artifact.target == artifact.target)

    def truth(self) -> GroundTruth:
        effects_per_action = Counter(e.action_id for e in self.effects)
        after_cancel = {(d.action_id, d.n) for d in self.dispatches if d.after_cancel}
        applied = {(e.action_id, e.receipt_id) for e in self.effects}
        applied_actions = {e.action_id for e in self.effects}
        record_counts = Counter((w.action_id, w.receipt_id) for w in self.writes if w.status != "absent")
        first_write: dict[str, float] = {}
        for w in self.writes:
            first_write.setdefault(w.action_id, w.at_s)
        unaccounted = [a for a in self.actions if a not in first_write or first_write[a] > self.deadline_s]
        task = self.final_task or self._live().task
        done = self.completion
        task_completed = (
            done is not None
            and done.revision == task.revision
            and done.before_cancel
            and done.artifact == task.artifact
            and any(e.receipt_id == done.receipt_id and e.artifact == task.artifact for e in self.effects)
            and self._stands(done.receipt_id, task.artifact)
        )
        return GroundTruth(
            dispatches=len(self.dispatches),
            reads=self.reads,
            duplicate_effects=sum(n - 1 for n in effects_per_action.values()),
            unauthorized_dispatches=sum(1 for d in self.dispatches if not d.authorized),
            effects_after_cancel=sum(1 for e in self.effects if (e.action_id, e.dispatch_n) in after_cancel),
            duplicate_records=sum(n - 1 for n in record_counts.values()),
            wrong_revision_completions=self.wrong_completions,
            false_records=sum(1 for w in self.writes if self._false(w, applied, applied_actions, self.accepted)),
            mismatched_records=sum(1 for w in self.writes if w.mismatched),
            changed_arguments=self.changed_arguments,
            abandoned_actions=sum(
                1 for a in unaccounted if a not in self.handed_over_at or self.handed_over_at[a] > self.deadline_s
            ),
            unresolved_actions=len(unaccounted),
            escalations=self.escalations,
            new_keys_while_unknown=self.new_keys_while_unknown,
            retries_after_uncertain=self.retries_after_uncertain,
            task_completed=task_completed,
            time_to_account_s=self._time_to_account_s(),
        )

    @staticmethod
    def _false(
        w: _Write, applied: set[tuple[str, str]], applied_actions: set[str], accepted: Mapping[str, float]
    ) -> bool:
        """Whether a ledger write is false: an effect under a receipt the action never applied; a rejection or an
        absence of an action applied; an absence of an action the destination accepted an operation of, before
        the write or after it (a late request the write said could no longer arrive)."""
        if w.status == "applied":
            return (w.action_id, w.receipt_id) not in applied
        if w.action_id in applied_actions:
            return True
        return w.status == "absent" and w.action_id in accepted

    def _time_to_account_s(self) -> float | None:
        """The slowest action's time from its first effect to the first record of one of its receipts; None if an
        action's effect has no such record, or no action took effect (an action without one adds no time)."""
        times = []
        for action_id in self.actions:
            effects = [e for e in self.effects if e.action_id == action_id]
            if not effects:
                continue
            receipts = {e.receipt_id for e in effects}
            record = next(
                (
                    w
                    for w in self.writes
                    if w.action_id == action_id and w.status == "applied" and w.receipt_id in receipts
                ),
                None,
            )
            if record is None:
                return None
            times.append(round(record.at_s - effects[0].at_s, 6))
        return max(times, default=None)
