"""Measured values: figures derived from the same evidence as the safety properties, reported beside them.

A value is ``None`` only when the evidence cannot establish it, and then ``reason`` says why. Only
``executor_finished`` reads what the worker claimed: it exists to keep that claim apart from the truth.
"""

from __future__ import annotations

from harness.check.facts import Facts
from harness.check.finding import HIDDEN, Finding, counted
from harness.model import Anomaly, conclusive
from harness.model.events import EffectRecorded

__all__ = [
    "dispatches",
    "escalations",
    "executor_finished",
    "new_keys_while_unknown",
    "reads",
    "refusals",
    "task_completed",
    "time_to_account_s",
    "unresolved_actions",
]


def unresolved_actions(f: Facts) -> Finding:
    """Actions not accounted for as applied, rejected or absent in the action ledger by the deadline."""
    deadline = f.evidence.recovery_deadline_s
    anomalies = []
    for action_id, action in sorted(f.actions.items()):
        if not f.accounted_for(action_id):
            anomalies.append(
                Anomaly(
                    kind="unresolved_action",
                    witnesses=(action.index,),
                    detail=f"{action_id} not accounted for by the deadline ({deadline} s)",
                )
            )
    return counted(anomalies)


def new_keys_while_unknown(f: Facts) -> Finding:
    """Dispatches under a key no earlier dispatch of the action used, while the caller knew neither a receipt nor
    a conclusive absence for it: a new key is a new operation, so the old one's outcome was left open."""
    anomalies = []
    for action_id in sorted(f.actions):
        keys: set[str] = set()
        last = -1
        for d in f.dispatches_of(action_id):
            if keys and d.idempotency_key not in keys and not _known_to_caller(f, action_id, last, d.index):
                anomalies.append(
                    Anomaly(
                        kind="new_key_while_unknown",
                        witnesses=(d.index,),
                        detail=f"{d.execution_id} sent under a new key {d.idempotency_key} while the outcome of "
                        f"{action_id} was unknown",
                    )
                )
            keys.add(d.idempotency_key)
            last = d.index
    return counted(anomalies)


def _known_to_caller(f: Facts, action_id: str, last_dispatch: int, index: int) -> bool:
    """Whether, before entry ``index``, the caller knew the action's outcome: a receipt of its effect (an
    ``applied`` reply, or a conclusive read other than an absence or a rejection) at any time, or, since its last
    dispatch at ``last_dispatch``, a rejection or a conclusive absence. A rejection or an absence settles the
    operations sent before it, not one sent after: that one is a new operation, whose outcome starts unknown."""
    for reply in f.replies:
        if reply.index >= index or reply.action_id != action_id:
            continue
        since = reply.index > last_dispatch
        if reply.kind == "dispatch":
            if reply.status == "applied" or (reply.status == "rejected" and since):
                return True
        elif conclusive(reply.kind, reply.status) and (reply.status not in _SETTLES_EARLIER or since):
            return True
    return False


#: Answers that settle only the operations sent before them: a dispatch after them starts a new, unknown one.
_SETTLES_EARLIER = frozenset({"absent", "rejected"})


def escalations(f: Facts) -> Finding:
    """Escalations of unresolved actions to their owner."""
    return Finding(len(f.escalations))


def dispatches(f: Facts) -> Finding:
    """Side-effecting requests the caller sent (first dispatches and retries)."""
    return Finding(len(f.dispatches))


def refusals(f: Facts) -> Finding:
    """Commands refused instead of carried out: claims the controller refused (the action no longer authorized,
    or its target held by an older action), guarded ledger writes that contradicted the ledger, and records of
    receipts the worker never observed. A policy that asks again for what was refused shows here, whatever
    its outcome."""
    return Finding(sum(not claim.ok for claim in f.claims) + len(f.refused))


def reads(f: Facts) -> Finding:
    """Reads the caller sent (lookups of the target, job follows, verifications): never mutations."""
    return Finding(len(f.reads))


def task_completed(f: Facts) -> Finding:
    """Whether the task's current revision stands completed with an effect that matches it: its last
    completion is of that revision, for its artifact, before any cancellation, by a receipt the destination
    applied, and no later effect put other arguments on the target (a stale retry applied after it undoes it).
    Distinct from ``executor_finished``: a worker can finish normally while the task is not complete.
    """
    if not f.revisions:
        return Finding(None, reason="no task revision on record")
    final = f.revisions[-1]
    last = f.completions[-1] if f.completions else None
    if last is None or (last.revision, last.artifact) != (final.revision, final.artifact):
        return Finding(False)
    if f.cancel_before(last.index) is not None:
        return Finding(False)
    if not f.destination_visible:
        return Finding(None, reason=f"{HIDDEN}, so the completing receipt cannot be confirmed")
    completing = next((e for e in f.effects if e.index < last.index and e.receipt_id == last.receipt_id), None)
    if completing is None or completing.artifact != final.artifact:  # the receipt's effect put other arguments
        return Finding(False)
    undone = (e for e in f.effects if e.index > completing.index and e.artifact.target == final.artifact.target)
    return Finding(all(e.artifact == final.artifact for e in undone))


def time_to_account_s(f: Facts) -> Finding:
    """Seconds from the destination applying an action to the controller recording that effect by one of the
    action's own receipts (the slowest action when there are several). An action that took no effect has none to
    account for and adds no time; a record of another receipt accounts for nothing (``false_records`` counts it).
    """
    if not f.destination_visible:
        return Finding(None, reason=HIDDEN)
    by_action = f.effects_by_action()
    times: list[float] = []
    reasons: list[str] = []
    for action_id in sorted(f.actions):
        effects = by_action.get(action_id)
        if not effects:
            continue
        receipts = {e.receipt_id for e in effects}
        record = next(
            (
                r
                for r in f.records
                if r.action_id == action_id and isinstance(r, EffectRecorded) and r.receipt_id in receipts
            ),
            None,
        )
        if record is None:
            reasons.append(f"the effect of {action_id} was never recorded")
            continue
        times.append(round(record.at_s - effects[0].at_s, 6))
    if reasons:
        return Finding(None, reason="; ".join(reasons))
    if not times:
        why = "no action took effect at the destination, so none had an effect to account for"
        return Finding(None, reason=why if f.actions else "no action on record")
    return Finding(max(times))


def executor_finished(f: Facts) -> Finding:
    """What the worker reported: whether it finished normally. Kept apart from every other measure."""
    if not f.reports:
        return Finding(None, reason="the worker never reported")
    return Finding(f.reports[-1].finished)
