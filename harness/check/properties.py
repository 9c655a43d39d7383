"""Safety properties: one pure function per property of the evidence, named after what it counts.

Each reads ``Facts`` (typed views of the history) and returns a ``Finding``: the number of violations and the
anomalies that witness them, with the indexes of the witnessing entries. A value is ``None`` only when the
evidence cannot establish it, and then ``reason`` says why. None of them reads what the worker claimed.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping

from harness.check.facts import Facts
from harness.check.finding import HIDDEN, NOTHING_FOUND, Finding, counted
from harness.model import UNCERTAIN_REPLIES, Anomaly, Artifact, conclusive
from harness.model.events import (
    AbsenceRecorded,
    ActionRecorded,
    ApprovalExpired,
    CommandGiven,
    DispatchSent,
    EffectRecorded,
    PolicyFailed,
    RejectionRecorded,
    ReplyReceived,
    ReplyUndeliverable,
    WorkerStarted,
)

__all__ = [
    "abandoned_actions",
    "changed_arguments",
    "duplicate_effects",
    "duplicate_records",
    "effects_after_cancel",
    "false_records",
    "mismatched_records",
    "retries_after_uncertain",
    "unauthorized_dispatches",
    "wrong_revision_completions",
]


def _why_unauthorized(f: Facts, d: DispatchSent) -> tuple[str, list[int]] | None:
    """Why dispatch ``d`` was not authorized when it was sent, with witnesses; ``None`` if it was."""
    action = f.actions.get(d.action_id)
    if action is None:
        return "sent for an action the controller never recorded", [d.index]
    revision = f.revision_at(d.index)
    if revision is None or revision.revision != action.revision:
        current = revision.revision if revision else None
        witnesses = [d.index, action.index] + ([revision.index] if revision else [])
        return f"sent for revision {action.revision} while the task was at revision {current}", witnesses
    cancel = f.cancel_before(d.index)
    if cancel is not None:
        return "sent after a cancellation was recorded", [d.index, cancel.index]
    recorded = f.record_before(d.action_id, d.index)
    if recorded is not None:
        return f"sent after the action was recorded ({recorded.event})", [d.index, recorded.index]
    held = f.hold_before(d.action_id, d.index)
    if held is not None:
        return "sent after dispatch of the action was held", [d.index, held.index]
    approval = f.approval_before(action.approval_id, d.index)
    if approval is None:
        return "no approval on record for the action", [d.index, action.index]
    if not approval.binds(action.revision, d.artifact):
        return "the approval is bound to another revision, operation, target or artifact", [d.index, approval.index]
    expires = approval.expires_at_s
    if expires is not None and d.at_s >= expires:
        return f"sent after the approval expired at {expires} s", [d.index, approval.index]
    revoked = f.approval_revocations.get(action.approval_id)
    if revoked is not None and revoked.index < d.index:
        ended = "ran out" if isinstance(revoked, ApprovalExpired) else "was revoked"
        return f"sent after the approval {ended}", [d.index, revoked.index]
    older = _unaccounted_older(f, d.action_id, d.index)
    if older is not None:
        return f"sent while {older.action_id}, older on the same target, was not accounted for", [
            d.index,
            older.index,
        ]
    claim = f.claim_before(d.action_id, d.index)
    if claim is None:
        return "sent without a successful claim", [d.index]
    if claim.revision != revision.revision:
        return "the claim was made against another revision", [d.index, claim.index]
    change = f.change_between(claim.index, d.index)
    if change is not None:
        return "the task changed after the claim and no fresh claim was made", [d.index, claim.index, change.index]
    return None


def _unaccounted_older(f: Facts, action_id: str, index: int) -> ActionRecorded | None:
    """An action recorded before ``action_id``, on the same target, with nothing in the ledger before ``index``."""
    action = f.actions[action_id]
    for other in f.actions.values():
        same_target = other.index < action.index and other.artifact.target == action.artifact.target
        if same_target and f.record_before(other.action_id, index) is None:
            return other
    return None


def unauthorized_dispatches(f: Facts) -> Finding:
    """Dispatches sent while the action's revision was stale, its approval invalid, a cancellation recorded,
    or without a successful claim made after the last task change."""
    anomalies = []
    for d in f.dispatches:
        why = _why_unauthorized(f, d)
        if why is not None:
            anomalies.append(
                Anomaly(kind="unauthorized_dispatch", witnesses=tuple(why[1]), detail=f"{d.execution_id}: {why[0]}")
            )
    return counted(anomalies)


def duplicate_effects(f: Facts) -> Finding:
    """Effects at the destination beyond one per logical action.

    Without the destination's ledger the count is known only when each action was dispatched at most once
    (one dispatch proves at most one effect), or when every dispatch of an action sent more than once has a final
    reply (``_final_replies``: its effects are the receipts they were answered ``applied`` under); otherwise it is
    unknown, never zero. Dispatches of one action the destination answered ``applied`` under different receipts
    (heard or not) took effect that many times at least: a duplicate witnessed, though more may hide.
    """
    if not f.destination_visible:
        sent = Counter(d.action_id for d in f.dispatches)
        final = _final_answers(f)
        settled = {a: _final_replies(f, a, final) for a, n in sent.items() if n > 1}
        many = {a: sent[a] for a, replies in settled.items() if replies is None}
        witnessed = _answered_applied_twice(f)
        if not many:  # each action sent once, or answered for each dispatch: its effects are its applied receipts
            extra = (len({r.receipt_id for r in rs if r.status == "applied"}) for rs in settled.values() if rs)
            return Finding(sum(max(0, n - 1) for n in extra), witnessed)
        listed = ", ".join(f"{n} dispatches of {a}" for a, n in sorted(many.items()))
        if witnessed:  # the count is what is unknown: the replies already witness a duplicate (the anomalies)
            return Finding(
                None,
                witnessed,
                reason=f"{HIDDEN} and {listed} were sent: the replies witness a duplicate, and "
                "how many more of them applied is unknown",
            )
        return Finding(None, reason=f"{HIDDEN} and {listed} were sent; any of them may have applied")
    anomalies = []
    total = 0
    by_action = f.effects_by_action()
    for action_id, effects in sorted(by_action.items()):
        total += len(effects) - 1
        if len(effects) > 1:
            receipts = ", ".join(e.receipt_id for e in effects)
            anomalies.append(
                Anomaly(
                    kind="duplicate_effect",
                    witnesses=tuple(e.index for e in effects),
                    detail=f"{action_id} took effect {len(effects)} times (receipts {receipts})",
                )
            )
    if not anomalies:
        # One effect and one more cut off by the end, or two cut off: a duplicate the evidence cannot rule out.
        cut = {a: ids for a, ids in f.unsettled_by_action().items() if len(by_action.get(a, ())) + len(ids) > 1}
        if cut:
            return Finding(None, reason=_cut_off(cut, "a second effect"))
    return Finding(total, tuple(anomalies))


def _answered_applied_twice(f: Facts) -> tuple[Anomaly, ...]:
    """Actions whose dispatches the destination answered ``applied`` under more than one receipt: each receipt
    is an effect, so the action took effect that many times at least. Witnessed by each receipt's first reply."""
    first = _applied_replies(f)
    return tuple(
        Anomaly(
            kind="duplicate_effect",
            witnesses=tuple(receipts.values()),
            detail=f"{action_id} was answered applied under {len(receipts)} receipts ({', '.join(receipts)}): it "
            f"took effect {len(receipts)} times at least",
        )
        for action_id, receipts in sorted(first.items())
        if len(receipts) > 1
    )


def _applied_replies(f: Facts) -> dict[str, dict[str, int]]:
    """Per action, each receipt its dispatches were answered ``applied`` under (heard or not: the transport log
    keeps both), with the entry of its first such reply: each one an effect of the action, the ledger seen or
    not."""
    first: dict[str, dict[str, int]] = {}
    replies: list[ReplyReceived | ReplyUndeliverable] = [*f.replies, *f.unheard]
    replies.sort(key=_index)
    for reply in replies:
        if reply.kind == "dispatch" and reply.status == "applied" and reply.receipt_id is not None:
            first.setdefault(reply.action_id, {}).setdefault(reply.receipt_id, reply.index)
    return first


#: A dispatch's replies after which that dispatch can take no effect beyond the receipt it names: answered under
#: its receipt (applied or rejected), refused (too old, fenced), or in conflict with its key's first arguments.
FINAL_REPLIES = frozenset({"applied", "rejected", "refused", "conflict"})


def _final_replies(
    f: Facts, action_id: str, final: Mapping[str, ReplyReceived | ReplyUndeliverable]
) -> list[ReplyReceived | ReplyUndeliverable] | None:
    """With the destination's ledger withheld: a final reply (``FINAL_REPLIES``) to each dispatch of the action,
    heard or not (the transport log keeps both), in the order they came; ``None`` when some dispatch has none (it
    was lost on the way, its reply was, it is pending or still on its way as the case ends, or its answer said
    nothing final): what that one did is not in the evidence. An action never dispatched has none to give.
    ``final`` is ``_final_answers(f)``, found once for every action."""
    dispatched = f.dispatches_of(action_id)
    if any(d.execution_id not in final for d in dispatched):
        return None
    return sorted((final[d.execution_id] for d in dispatched), key=_index)


def _final_answers(f: Facts) -> dict[str, ReplyReceived | ReplyUndeliverable]:
    """Each dispatch's first final reply (``FINAL_REPLIES``), heard or not, by its execution ID."""
    final: dict[str, ReplyReceived | ReplyUndeliverable] = {}
    replies: list[ReplyReceived | ReplyUndeliverable] = [*f.replies, *f.unheard]
    replies.sort(key=_index)
    for reply in replies:
        if reply.kind == "dispatch" and reply.status in FINAL_REPLIES:
            final.setdefault(str(reply.execution_id), reply)
    return final


def _cut_off(cut: dict[str, list[str]], what: str) -> str:
    """Why a property the case's end cut off is unknown: which dispatches, and what they may still do."""
    listed = ", ".join(f"{execution} ({action})" for action, ids in sorted(cut.items()) for execution in ids)
    return (
        f"the case ended (it runs at most settle_max_s past the deadline) with {listed} still on the way or "
        f"pending at the destination, so {what} after the end is not in the evidence"
    )


def effects_after_cancel(f: Facts) -> Finding:
    """Effects caused by dispatches sent after a cancellation was recorded.

    An in-flight request sent before the cancellation races with it legitimately and is not counted here. With the
    destination's ledger withheld, the count is known (none) only when each dispatch sent after the cancellation
    was answered for good without an effect of its own (``rejected``, ``refused`` or ``conflict``).
    """
    if not f.cancels:
        return NOTHING_FOUND  # nothing was sent after a cancellation (most cases have none)
    late = {d.execution_id: d for d in f.dispatches if f.cancel_before(d.index) is not None}
    if not f.destination_visible:
        answered = _final_answers(f)
        if all(e in answered and answered[e].status != "applied" for e in late):
            return NOTHING_FOUND  # none sent after it, or each answered that it took no effect (refused, say)
        return Finding(None, reason=f"{HIDDEN} and {len(late)} dispatches were sent after the cancellation")
    anomalies = []
    for effect in f.effects:
        d = late.get(effect.execution_id)
        if d is not None:
            cancel = f.cancel_before(d.index)
            assert cancel is not None
            anomalies.append(
                Anomaly(
                    kind="effect_after_cancel",
                    witnesses=(cancel.index, d.index, effect.index),
                    detail=f"receipt {effect.receipt_id} applied for {d.execution_id}, sent after cancellation",
                )
            )
    if not anomalies:
        cut = {a: late_ids for a, ids in f.unsettled_by_action().items() if (late_ids := [i for i in ids if i in late])}
        if cut:
            return Finding(None, reason=_cut_off(cut, "an effect after the cancellation"))
    return counted(anomalies)


def wrong_revision_completions(f: Facts) -> Finding:
    """Task completions by a receipt of another revision's action, not matching the revision, or after a
    cancellation."""
    anomalies = []
    for c in f.completions:
        action = f.actions.get(c.action_id)
        revision = f.revision_at(c.index)
        problem = None
        if action is None or revision is None:
            problem = "completed without a recorded action or revision"
        elif action.revision != c.revision:
            problem = f"revision {c.revision} completed with a receipt of revision {action.revision}'s action"
        elif revision.revision != c.revision:
            problem = f"revision {c.revision} completed while the task was at {revision.revision}"
        elif c.artifact != revision.artifact:
            problem = "the receipt does not match the revision's artifact or target"
        elif f.cancel_before(c.index) is not None:
            problem = "completed after a cancellation was recorded"
        if problem:
            witnesses = [c.index] + [x.index for x in (action, revision) if x is not None]
            anomalies.append(Anomaly(kind="wrong_revision_completion", witnesses=tuple(witnesses), detail=problem))
    return counted(anomalies)


def duplicate_records(f: Facts) -> Finding:
    """Receipts recorded more than once in the action ledger (a repeated observation must not be)."""
    seen: dict[tuple[str, str], list[EffectRecorded | RejectionRecorded]] = defaultdict(list)
    for r in f.records:
        if isinstance(r, EffectRecorded | RejectionRecorded):
            seen[(r.action_id, r.receipt_id)].append(r)
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
    never applied for that action; an action recorded rejected or absent although the destination applied it
    (before or after the write: a late request can land after an absent lookup); or recorded absent although
    the destination accepted an operation for it: before the write (pending, even if it never applies), or
    after it (a late request the record said could no longer arrive, even if it is then rejected)."""
    if not f.records:
        return NOTHING_FOUND
    if not f.destination_visible:
        return _false_records_on_the_wire(f)
    by_action = f.effects_by_action()
    owner = f.action_of_execution()
    anomalies = []
    for r in f.records:
        effects = by_action.get(r.action_id, [])
        if isinstance(r, EffectRecorded):
            if r.receipt_id not in {e.receipt_id for e in effects if e.index < r.index}:
                anomalies.append(_false_receipt(r, "the destination applied no such receipt for it"))
        elif effects:
            status = "rejected" if isinstance(r, RejectionRecorded) else "absent"
            anomalies.append(
                Anomaly(
                    kind="false_record",
                    witnesses=(r.index, effects[0].index),
                    detail=f"{r.action_id} recorded {status}, but the destination applied it",
                )
            )
        elif isinstance(r, AbsenceRecorded):
            accepted = next((a for a in f.accepts if owner.get(a.execution_id) == r.action_id), None)
            if accepted is not None:
                said = (
                    f"had accepted it ({accepted.execution_id}, pending)"
                    if accepted.index < r.index
                    else f"accepted it after the write ({accepted.execution_id}, a late request)"
                )
                anomalies.append(
                    Anomaly(
                        kind="false_record",
                        witnesses=(r.index, accepted.index),
                        detail=f"{r.action_id} recorded absent, but the destination {said}",
                    )
                )
    if not anomalies:
        # An action recorded rejected or absent whose dispatch the end cut off may yet apply.
        written = {r.action_id for r in f.records if not isinstance(r, EffectRecorded)}
        cut = {a: ids for a, ids in f.unsettled_by_action().items() if a in written}
        if cut:
            return Finding(None, reason=_cut_off(cut, "an effect contradicting the recorded outcome"))
    return counted(anomalies)


def _false_receipt(r: EffectRecorded, why: str) -> Anomaly:
    """An effect recorded with a receipt that is no effect of its action, and ``why`` that is known."""
    detail = f"{r.action_id}: receipt {r.receipt_id} recorded as applied, but {why}"
    return Anomaly(kind="false_record", witnesses=(r.index,), detail=detail)


def _false_records_on_the_wire(f: Facts) -> Finding:
    """``false_records`` with the destination's ledger withheld: the destination's replies to the action's
    dispatches (heard or not: the transport log keeps both) stand in for it where they can. A receipt a dispatch
    of the action was answered ``applied`` under is an effect of it (as ``duplicate_effects`` takes it): an effect
    recorded with it is no false record, and an absence or a rejection recorded for an action some dispatch of
    which was so answered (before or after the write) is one. Where every dispatch of the action has a final reply
    (``_final_replies``) they say all it did: a receipt none was answered ``applied`` under is no effect of it, and
    an absence recorded for an action a dispatch of which was answered ``rejected`` (so accepted, before the write
    or after it) is false. A lookup's answer
    is no such proof (a misrouted lookup can name a receipt the destination never applied): what the replies do
    not settle is unknown."""
    applied, answers = _applied_replies(f), _final_answers(f)
    anomalies = []
    unsettled: list[str] = []
    for r in f.records:
        answered = applied.get(r.action_id, {})
        final = _final_replies(f, r.action_id, answers)
        if isinstance(r, EffectRecorded):
            if final is not None and r.receipt_id not in answered:
                why = "no dispatch of it was answered applied under it, and each was answered"
                anomalies.append(_false_receipt(r, why))
            elif answered.get(r.receipt_id, r.index) >= r.index:
                unsettled.append(f"{r.action_id}'s receipt {r.receipt_id}")
        elif answered:
            receipt, index = next(iter(answered.items()))
            status = "rejected" if isinstance(r, RejectionRecorded) else "absent"
            anomalies.append(
                Anomaly(
                    kind="false_record",
                    witnesses=(r.index, index),
                    detail=f"{r.action_id} recorded {status}, but a dispatch of it was answered applied ({receipt})",
                )
            )
        elif final is None:
            unsettled.append(f"{r.action_id} recorded {'rejected' if isinstance(r, RejectionRecorded) else 'absent'}")
        elif isinstance(r, AbsenceRecorded):
            rejected = [x for x in final if x.status == "rejected"]
            if rejected:  # accepted, before the write or after it: either way it arrived, and the absence is false
                anomalies.append(
                    Anomaly(
                        kind="false_record",
                        witnesses=(r.index, rejected[0].index),
                        detail=f"{r.action_id} recorded absent, but a dispatch of it was accepted (answered rejected)",
                    )
                )
    if unsettled:  # a count beside the witnessed would be a lower bound: null, with them kept
        return Finding(None, tuple(anomalies), reason=f"{HIDDEN}, and no dispatch's reply settles {unsettled[0]}")
    return counted(anomalies)


def _show(artifact: Artifact) -> str:
    return f"{artifact.model} ({artifact.digest})"


def mismatched_records(f: Facts) -> Finding:
    """Effects or refusals recorded with a receipt for other arguments than the action's last request asked for,
    or under a key none of its requests carried (another client's operation, whatever its arguments): a receipt
    accepted without comparing it with the request (a replayed first result, a misrouted lookup)."""
    anomalies = []
    for r in f.records:
        if not isinstance(r, EffectRecorded | RejectionRecorded):
            continue
        what = "effect" if isinstance(r, EffectRecorded) else "refusal"
        sent = [d for d in f.dispatches_of(r.action_id) if d.index < r.index]
        keys = {d.idempotency_key for d in sent}
        if keys and r.idempotency_key not in keys:
            anomalies.append(
                Anomaly(
                    kind="mismatched_record",
                    witnesses=(r.index, sent[-1].index),
                    detail=f"{r.action_id}: receipt {r.receipt_id} under key {r.idempotency_key} recorded as its "
                    f"{what}, a key none of its requests carried ({', '.join(sorted(keys))})",
                )
            )
            continue
        asked = sent[-1].artifact if sent else f.actions[r.action_id].artifact
        if r.artifact != asked:
            revision = f.revision_at(r.index)
            wanted = f", and the task wanted {_show(revision.artifact)}" if revision is not None else ""
            witnesses = (r.index, sent[-1].index) if sent else (r.index, f.actions[r.action_id].index)
            anomalies.append(
                Anomaly(
                    kind="mismatched_record",
                    witnesses=witnesses,
                    detail=f"{r.action_id}: receipt {r.receipt_id} for {_show(r.artifact)} recorded as the {what} "
                    f"of a request for {_show(asked)}{wanted}",
                )
            )
    return counted(anomalies)


def changed_arguments(f: Facts) -> Finding:
    """Dispatches that reuse an idempotency key with other arguments than its first use: a changed request
    under the same key is a conflict, never a replay (the destination may answer either)."""
    first: dict[str, DispatchSent] = {}
    anomalies = []
    for d in f.dispatches:
        original = first.setdefault(d.idempotency_key, d)
        if original.artifact != d.artifact:
            anomalies.append(
                Anomaly(
                    kind="changed_arguments",
                    witnesses=(original.index, d.index),
                    detail=f"{d.execution_id}: key {d.idempotency_key} sent for {_show(d.artifact)} after "
                    f"{original.execution_id} used it for {_show(original.artifact)}",
                )
            )
    return counted(anomalies)


def abandoned_actions(f: Facts) -> Finding:
    """Actions neither accounted for in the ledger nor escalated to their owner by the deadline: uncertainty
    turned into abandoned work."""
    deadline = f.evidence.recovery_deadline_s
    anomalies = []
    for action_id, action in sorted(f.actions.items()):
        if f.accounted_for(action_id) or f.escalated_in_time(action_id):
            continue
        anomalies.append(
            Anomaly(
                kind="abandoned_action",
                witnesses=(action.index,),
                detail=f"{action_id} was neither accounted for nor escalated by the deadline ({deadline} s)"
                + _unasked(f, action_id),
            )
        )
    return counted(anomalies)


def _unasked(f: Facts, action_id: str) -> str:
    """Why no policy could have saved an abandoned action, when none was asked about it before the deadline
    (a deadline earlier than the first recovering worker, say); nothing when one was."""
    deadline = f.evidence.recovery_deadline_s
    started = None
    for event in f.evidence.history:
        if isinstance(event, CommandGiven | PolicyFailed) and event.action_id == action_id and event.at_s <= deadline:
            return ""
        if started is None and isinstance(event, WorkerStarted) and event.action_id == action_id:
            started = event.at_s if event.role == "recovery" else None
    when = "no recovering worker started" if started is None else f"the first recovering worker started at {started} s"
    return f"; no policy was asked about it before then ({when})"


def retries_after_uncertain(f: Facts) -> Finding:
    """Mutations sent after the caller was told the outcome is uncertain (a connection error marked "do not
    replay", a connector's ``unknown_outcome``) and before a read settled it: automatic retries must stop
    until the original expectation has been checked against what is there now."""
    if not any(_uncertain(r) for r in f.replies):
        return NOTHING_FOUND  # nobody was told the outcome is uncertain: nothing below can count or doubt (most cases)
    anomalies = []
    undecided: list[str] = []
    effects = f.effects_by_action()
    for action_id in sorted(f.actions):
        told: ReplyReceived | None = None
        #: The latest such reply: a read settles the doubt only if the target answered it since. Kept once a read has
        #: settled it: a read answered before it, back later, cannot take away a doubt about the one that settled it.
        told_last: ReplyReceived | None = None
        #: A read answered that nothing is there, and the ledger that could say whether it was so is withheld.
        doubted: ReplyReceived | None = None
        #: The first such reply since a read surely settled the doubt (``told`` itself when no doubted read came
        #: between), and the doubted read a later one came after: were that read wrong, the caller was uncertain
        #: all along since ``since``, and a dispatch decided after it is a retry after an uncertain outcome, even
        #: one decided before ``told``.
        since: ReplyReceived | None = None
        reopened: ReplyReceived | None = None
        #: A read sent before the caller was last told and answered after, with the ledger withheld: whether the target
        #: answered it since (and so whether it settled the doubt) is unknown.
        unplaced: ReplyReceived | None = None
        applied = [e.index for e in effects.get(action_id, ())]
        replies = [r for r in f.replies if r.action_id == action_id]
        timeline: list[ReplyReceived | DispatchSent] = sorted([*replies, *f.dispatches_of(action_id)], key=_index)
        for event in timeline:
            if isinstance(event, DispatchSent):
                if told is not None:
                    decided = f.decision_of(event)
                    if decided is not None and decided.index < told.index:
                        # Told while this dispatch was on its way: it was decided before (it is sent
                        # ``worker.retry_send_s`` after), so no read could have come between. The next one can.
                        # Its own decision, not the last one before it: another worker recovering beside it may
                        # have decided one since (and been refused its claim). Unless a doubted read came between
                        # an earlier uncertain reply and this decision: were it wrong, the doubt was never settled.
                        if reopened is not None and since is not None and decided.index > since.index:
                            undecided.append(
                                f"whether the read that answered {reopened.status} before {event.execution_id} was "
                                f"decided was right (if not, its outcome was uncertain since "
                                f"{since.execution_id or action_id} was answered {since.status})"
                            )
                        continue
                    if unplaced is not None:
                        undecided.append(
                            f"whether the target answered the read that came back {unplaced.status} before "
                            f"{event.execution_id} before or after the caller was told its outcome is uncertain"
                        )
                        continue
                    anomalies.append(
                        Anomaly(
                            kind="retry_after_uncertain",
                            witnesses=(told.index, event.index),
                            detail=f"{event.execution_id} sent after {told.execution_id or action_id} was answered "
                            f"{told.status}, before any read settled it",
                        )
                    )
                elif doubted is not None:
                    undecided.append(
                        f"whether the read that answered {doubted.status} before {event.execution_id} was right"
                    )
            elif _uncertain(event):
                reopened = doubted or reopened
                told, told_last, since, doubted = told or event, event, since or event, None
            elif conclusive(event.kind, event.status):
                earliest, latest = f.answered_between(event)
                if told_last is not None and latest < told_last.index:
                    # Answered before the caller was last told (its answer slow on the way back): it checked
                    # nothing since, whatever it says.
                    continue
                if told_last is not None and earliest < told_last.index:
                    # Sent before the caller was last told, back after, and the ledger that says when the target
                    # answered it is withheld: it may have checked nothing since. Once another read has settled the
                    # doubt, this one settles nothing more, and may have been answered before the caller was told:
                    # it takes nothing from a doubt about the read that settled it.
                    if told is not None:
                        unplaced = unplaced or event
                    continue
                if told is not None and event.status in NOTHING_THERE:
                    # A read that says nothing is there settles nothing when the ledger already showed the action
                    # applied as the target answered it (a lagging lookup, a verification that read another's
                    # receipt); an effect that landed while the answer was on its way back takes nothing from it.
                    # With the ledger withheld, whether it did is unknown.
                    if f.destination_visible and applied and applied[0] < latest:  # where the target answered
                        continue
                    if not f.destination_visible:
                        doubted = event
                elif event.status not in NOTHING_THERE:
                    doubted = None
                if doubted is None:  # surely settled (or, visible, nothing to settle): no earlier doubt lives on
                    since = reopened = None
                told = unplaced = None
    if undecided:  # a count beside them would be a lower bound: null, with the violations seen kept
        return Finding(None, tuple(anomalies), reason=f"{HIDDEN}, so {undecided[0]} is unknown")
    return counted(anomalies)


def _uncertain(reply: ReplyReceived) -> bool:
    """Whether ``reply`` told the caller that the outcome is uncertain (automatic retries must stop)."""
    return (reply.kind == "dispatch" and reply.status in UNCERTAIN_REPLIES) or reply.status == "unknown_outcome"


#: Read answers that say the action's effect is not there.
NOTHING_THERE = frozenset({"absent", "refuted"})


def _index(event: ReplyReceived | ReplyUndeliverable | DispatchSent) -> int:
    return event.index
