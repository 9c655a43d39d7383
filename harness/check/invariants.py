"""One pure function per property of the evidence.

Each function reads ``Facts`` (typed views of the history) and returns a ``Finding``: the measured value and
the anomalies that witness a violation, with the indexes of the witnessing entries. A value is ``None`` only
when the evidence cannot establish it, and then ``reason`` says why. No function reads what the worker
claimed, except ``executor_finished``, which exists to keep that claim apart from the truth.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass

from harness.check.facts import Fact, Facts
from harness.model import Anomaly, MetricValue

__all__ = [
    "Finding",
    "dispatches",
    "duplicate_effects",
    "duplicate_records",
    "effects_after_cancel",
    "escalations",
    "executor_finished",
    "false_records",
    "lookups",
    "task_completed",
    "time_to_account_s",
    "unauthorized_dispatches",
    "unresolved_actions",
    "wrong_revision_completions",
]

HIDDEN = "the destination's ledger is unavailable to the checker"


@dataclass(frozen=True, slots=True)
class Finding:
    value: MetricValue
    anomalies: tuple[Anomaly, ...] = ()
    reason: str | None = None


def _counted(anomalies: list[Anomaly]) -> Finding:
    return Finding(len(anomalies), tuple(anomalies))


def _why_unauthorized(f: Facts, d: Fact) -> tuple[str, list[int]] | None:
    """Why dispatch ``d`` was not authorized when it was sent, with witnesses; ``None`` if it was."""
    action = f.actions.get(d["action_id"])
    if action is None:
        return "sent for an action the controller never recorded", [d.index]
    revision = f.revision_at(d.index)
    if revision is None or revision["revision"] != action["revision"]:
        current = revision["revision"] if revision else None
        witnesses = [d.index, action.index] + ([revision.index] if revision else [])
        return f"sent for revision {action['revision']} while the task was at revision {current}", witnesses
    cancel = f.cancel_before(d.index)
    if cancel is not None:
        return "sent after a cancellation was recorded", [d.index, cancel.index]
    recorded = next((r for r in f.records if r["action_id"] == d["action_id"] and r.index < d.index), None)
    if recorded is not None:
        return f"sent after the action was recorded ({recorded.event})", [d.index, recorded.index]
    approval = f.approval_before(action["approval_id"], d.index)
    if approval is None:
        return "no approval on record for the action", [d.index, action.index]
    bound = (approval["revision"], approval["operation"], approval["target"], approval["digest"])
    if bound != (action["revision"], d["operation"], d["target"], d["digest"]):
        return "the approval is bound to another revision, operation, target or artifact", [d.index, approval.index]
    expires = approval["expires_at_s"]
    if expires is not None and d.at_s >= expires:
        return f"sent after the approval expired at {expires} s", [d.index, approval.index]
    revoked = f.approval_revocations.get(action["approval_id"])
    if revoked is not None and revoked.index < d.index:
        return "sent after the approval was revoked", [d.index, revoked.index]
    claim = f.claim_before(d["action_id"], d.index)
    if claim is None:
        return "sent without a successful claim", [d.index]
    if claim["revision"] != revision["revision"]:
        return "the claim was made against another revision", [d.index, claim.index]
    changes = [c for c in f.revisions + f.cancels if claim.index < c.index < d.index]
    if changes:
        return "the task changed after the claim and no fresh claim was made", [d.index, claim.index, changes[0].index]
    return None


def unauthorized_dispatches(f: Facts) -> Finding:
    """Dispatches sent while the action's revision was stale, its approval invalid, a cancellation recorded,
    or without a successful claim made after the last task change."""
    anomalies = []
    for d in f.dispatches:
        why = _why_unauthorized(f, d)
        if why is not None:
            anomalies.append(
                Anomaly(kind="unauthorized_dispatch", witnesses=tuple(why[1]), detail=f"{d['execution_id']}: {why[0]}")
            )
    return _counted(anomalies)


def _effects_by_action(f: Facts) -> dict[str, list[Fact]]:
    owner = f.action_of_execution()
    grouped: dict[str, list[Fact]] = defaultdict(list)
    for effect in f.effects:
        grouped[owner.get(effect["execution_id"], "(unknown action)")].append(effect)
    return grouped


def duplicate_effects(f: Facts) -> Finding:
    """Effects at the destination beyond one per logical action.

    Without the destination's ledger the count is known only when each action was dispatched at most once
    (one dispatch proves at most one effect); otherwise it is unknown, never zero.
    """
    if not f.destination_visible:
        sent = Counter(d["action_id"] for d in f.dispatches)
        many = {a: n for a, n in sent.items() if n > 1}
        if not many:
            return Finding(0)
        listed = ", ".join(f"{n} dispatches of {a}" for a, n in sorted(many.items()))
        return Finding(None, reason=f"{HIDDEN} and {listed} were sent; any of them may have applied")
    anomalies = []
    for action_id, effects in sorted(_effects_by_action(f).items()):
        if len(effects) > 1:
            receipts = ", ".join(str(e["receipt_id"]) for e in effects)
            anomalies.append(
                Anomaly(
                    kind="duplicate_effect",
                    witnesses=tuple(e.index for e in effects),
                    detail=f"{action_id} took effect {len(effects)} times (receipts {receipts})",
                )
            )
    total = sum(len(e) - 1 for e in _effects_by_action(f).values())
    return Finding(total, tuple(anomalies))


def effects_after_cancel(f: Facts) -> Finding:
    """Effects caused by dispatches sent after a cancellation was recorded.

    An in-flight request sent before the cancellation races with it legitimately and is not counted here.
    """
    late = [d for d in f.dispatches if f.cancel_before(d.index) is not None]
    if not f.destination_visible:
        if not late:
            return Finding(0)
        return Finding(None, reason=f"{HIDDEN} and {len(late)} dispatches were sent after the cancellation")
    late_ids = {d["execution_id"]: d for d in late}
    anomalies = []
    for effect in f.effects:
        d = late_ids.get(effect["execution_id"])
        if d is not None:
            cancel = f.cancel_before(d.index)
            assert cancel is not None
            anomalies.append(
                Anomaly(
                    kind="effect_after_cancel",
                    witnesses=(cancel.index, d.index, effect.index),
                    detail=f"receipt {effect['receipt_id']} applied for {d['execution_id']}, sent after cancellation",
                )
            )
    return _counted(anomalies)


def wrong_revision_completions(f: Facts) -> Finding:
    """Task completions by a receipt of another revision's action, not matching the revision, or after a
    cancellation."""
    anomalies = []
    for c in f.completions:
        action = f.actions.get(c["action_id"])
        revision = f.revision_at(c.index)
        problem = None
        if action is None or revision is None:
            problem = "completed without a recorded action or revision"
        elif action["revision"] != c["revision"]:
            problem = f"revision {c['revision']} completed with a receipt of revision {action['revision']}'s action"
        elif revision["revision"] != c["revision"]:
            problem = f"revision {c['revision']} completed while the task was at {revision['revision']}"
        elif (c["model"], c["digest"], c["target"]) != (revision["model"], revision["digest"], revision["target"]):
            problem = "the receipt does not match the revision's artifact or target"
        elif f.cancel_before(c.index) is not None:
            problem = "completed after a cancellation was recorded"
        if problem:
            witnesses = [c.index] + [x.index for x in (action, revision) if x is not None]
            anomalies.append(Anomaly(kind="wrong_revision_completion", witnesses=tuple(witnesses), detail=problem))
    return _counted(anomalies)


def duplicate_records(f: Facts) -> Finding:
    """Receipts recorded more than once in the action ledger (a repeated observation must not be)."""
    seen: dict[tuple[str, str], list[Fact]] = defaultdict(list)
    for r in f.records:
        if r["receipt_id"] is not None:
            seen[(r["action_id"], r["receipt_id"])].append(r)
    anomalies = [
        Anomaly(
            kind="duplicate_record",
            witnesses=tuple(r.index for r in rs),
            detail=f"receipt {receipt} of {action} recorded {len(rs)} times",
        )
        for (action, receipt), rs in sorted(seen.items())
        if len(rs) > 1
    ]
    return Finding(sum(len(rs) - 1 for rs in seen.values()), tuple(anomalies))


def false_records(f: Facts) -> Finding:
    """Ledger writes the destination's ledger contradicts: an effect recorded with a receipt the destination
    never applied for that action, or an action recorded rejected or absent although the destination applied
    it (before or after the write: a late request can land after an absent lookup)."""
    if not f.records:
        return Finding(0)
    if not f.destination_visible:
        return Finding(None, reason=f"{HIDDEN}, so the recorded outcomes cannot be compared with it")
    by_action = _effects_by_action(f)
    anomalies = []
    for r in f.records:
        effects = by_action.get(r["action_id"], [])
        if r.event == "effect_recorded":
            if r["receipt_id"] not in {e["receipt_id"] for e in effects if e.index < r.index}:
                anomalies.append(
                    Anomaly(
                        kind="false_record",
                        witnesses=(r.index,),
                        detail=f"{r['action_id']}: receipt {r['receipt_id']} recorded as applied, but the destination "
                        "applied no such receipt for it",
                    )
                )
        elif effects:
            status = "rejected" if r.event == "rejection_recorded" else "absent"
            anomalies.append(
                Anomaly(
                    kind="false_record",
                    witnesses=(r.index, effects[0].index),
                    detail=f"{r['action_id']} recorded {status}, but the destination applied it",
                )
            )
    return _counted(anomalies)


def unresolved_actions(f: Facts) -> Finding:
    """Actions not accounted for as applied, rejected or absent in the action ledger by the deadline."""
    deadline = f.evidence.recovery_deadline_s
    anomalies = []
    for action_id, action in sorted(f.actions.items()):
        if not any(r["action_id"] == action_id and r.at_s <= deadline for r in f.records):
            anomalies.append(
                Anomaly(
                    kind="unresolved_action",
                    witnesses=(action.index,),
                    detail=f"{action_id} not accounted for by the deadline ({deadline} s)",
                )
            )
    return _counted(anomalies)


def escalations(f: Facts) -> Finding:
    """Escalations of unresolved actions to their owner."""
    return Finding(len(f.escalations))


def dispatches(f: Facts) -> Finding:
    """Side-effecting requests the caller sent (first dispatches and retries)."""
    return Finding(len(f.dispatches))


def lookups(f: Facts) -> Finding:
    """Lookups of durable results the caller sent."""
    return Finding(len(f.lookups))


def task_completed(f: Facts) -> Finding:
    """Whether the task's current revision was completed with an effect that matches it.

    Distinct from ``executor_finished``: a worker can finish normally while the task is not complete.
    """
    if not f.revisions:
        return Finding(None, reason="no task revision on record")
    final = f.revisions[-1]
    match = None
    for c in f.completions:
        if (c["revision"], c["model"], c["digest"], c["target"]) == (
            final["revision"],
            final["model"],
            final["digest"],
            final["target"],
        ) and f.cancel_before(c.index) is None:
            match = c
    if match is None:
        return Finding(False)
    if not f.destination_visible:
        return Finding(None, reason=f"{HIDDEN}, so the completing receipt cannot be confirmed")
    confirmed = any(e["receipt_id"] == match["receipt_id"] for e in f.effects if e.index < match.index)
    return Finding(confirmed)


def time_to_account_s(f: Facts) -> Finding:
    """Seconds from the destination applying an action to the controller recording that effect (the
    slowest action when there are several)."""
    if not f.destination_visible:
        return Finding(None, reason=HIDDEN)
    by_action = _effects_by_action(f)
    times: list[float] = []
    reasons: list[str] = []
    for action_id in sorted(f.actions):
        effects = by_action.get(action_id)
        if not effects:
            reasons.append(f"{action_id} has no effect at the destination to account for")
            continue
        record = next((r for r in f.records if r["action_id"] == action_id and r.event == "effect_recorded"), None)
        if record is None:
            reasons.append(f"the effect of {action_id} was never recorded")
            continue
        times.append(round(record.at_s - effects[0].at_s, 6))
    if reasons:
        return Finding(None, reason="; ".join(reasons))
    return Finding(max(times) if times else None, reason=None if times else "no action on record")


def executor_finished(f: Facts) -> Finding:
    """What the worker reported: whether it finished normally. Kept apart from every other measure."""
    if not f.reports:
        return Finding(None, reason="the worker never reported")
    return Finding(bool(f.reports[-1]["finished"]))
