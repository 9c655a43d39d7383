"""Reconcile the effect first, then decide what is still authorized.

Look the action up at the destination and verify the receipt's operation, arguments and target against the
action that was actually sent. Record what is found. Retry only an ``absent`` action whose task revision,
approval and deduplication contract are all still valid, and only after the controller atomically rechecks
and claims it; the contract is valid for a retry only if its retention window covers every late arrival of
an earlier request that its request-validity rule still allows. An absence is recorded only once no earlier
request can still arrive; until then, and while a result is pending or unknown, the policy waits while time
allows, then escalates to the owner before the deadline: a failed lookup is not evidence that nothing
happened. A refused claim is not retried at once: it is waited out, or escalated.

Revision 3 checks the window against late originals (not only at the moment of the retry), never records an
absence a late original could still contradict, holds further dispatch when it is no longer authorized, and
reads refusals instead of repeating a refused command. Revision 4 (from what ``harness explore`` found): the
window must outlast the late arrival of every earlier attempt, not only the first; a read sent before (or in the
same instant as) the last send is stale; and an attempt another worker recorded counts as sent then. Revision 5
(from a review of the checker): a retry follows only an absence read once the target's reads had caught up with
the last attempt (sent ``lookup_lag_s`` after it or later); an earlier read may simply not show that attempt's
effect yet, and after an uncertain reply a mutation must wait until a read has truly settled it. Revision 6 (from
what ``harness explore`` found near the scenarios of a third review): the reads catch up with an attempt only
after it may last have reached the target (when its reply came back, or, with none, when the target stopped
accepting it), not after it was sent: a request late on the way, applied within the lag before a read, went
unseen, and a same-key retry outlived its window, or followed a do-not-replay error unsettled. Revision 7 (from a
scenario author's review): the command its action's budget has room for last is an escalation, unless it records
the action: a worker that waited and read until the budget ran out left the action abandoned. Revision 8 (from an
adversarial review): so is a retry, or a read no wait came right before, within the escalation margin before the
deadline: a worker that started recovering seconds before the deadline sent a retry, and waited for its lost reply
until past it; one that waited out a retry's reply, or a slow read, read again too late. Revision 9 (from an
adversarial review): a key's window is counted from its first arrival, so an earlier request that lands just
after the read starts a window the retry may arrive after: with a 10 s window, a retry 20 s on the wire applied m7
a second time after the original landed just after the read. The retry must arrive inside that request's window
too, leaving by the moment that allows (``send_by_s``), and its claim is leased to that moment: the worker may
send it later than it was decided (the review's second round: a bound taken from the decision's time alone failed
when the worker sent the retry 13 s after deciding it), and a claim made after it is refused. Revision 10 (from
the same review's third round): the margin rule held a retry when it was decided, not when it left: a retry decided
16 s before the deadline and sent 12 s later, whose reply was lost, was waited out past the deadline. Every same-key
retry's claim is leased to the deadline less the margin too (``leave_by_s``), and a refused claim is escalated.
Revision 11 (from a fourth adversarial review): a bridge's connection error bounds nothing of when the call reaches
the tool server (the error can come back while the call is still on its way); a retry after one, leased as a
retry after any request that may still land, is refused when the worker sends it too late for the window.
Revision 12 (from what ``harness explore`` found once a read's answer could be slow on its way back): a read sent
before a do-not-replay error reached the worker, and answered after it, was taken to settle it, and a retry
followed; only a read sent since the worker was told settles an uncertain reply. Revision 13 (from what ``harness
explore`` found with a patient reader): the escalation margin covered a round trip only as long as the worker's
timeouts were short. A read sent 49 s before the deadline, by a worker that waits up to 90 s for its answer, came
back after the deadline, and the action went unaccounted for. The margin a read or a retry leaves, and a wait
leaves for the read after it, is now the worker's whole wait for the answer and a second, where that is longer
than the margin (``Situation.patience``, ``margin_s``), and a retry's claim is leased to that too. So is a new key's
operation's (a sixth adversarial review: decided 16 s before the deadline, sent 12 s later, its reply lost, it was
waited out past the deadline; only a same-key retry's claim carried a lease).
"""

from __future__ import annotations

import math
from typing import Literal

from harness.policy import (
    Command,
    Escalate,
    FollowJob,
    Hold,
    LookUp,
    LookupView,
    Receipt,
    RecordAbsent,
    RecordEffect,
    RecordRejection,
    RetryNewKey,
    RetrySameAction,
    Situation,
    Stop,
    VerifyOutcome,
    Wait,
)

Decision = Literal[
    "record_observed_effect", "record_rejection", "wait_or_escalate", "retry_same_action", "hold_dispatch"
]
Effect = Literal["applied", "rejected", "pending", "absent", "unknown"]
#: The commands after which the action is accounted for, or (``Stop``) already was.
ACCOUNTED_FOR_BY = (RecordEffect, RecordRejection, RecordAbsent, Escalate, Stop)
#: The commands that read the outcome, one for each way a policy here reads it.
READS = (LookUp, VerifyOutcome, FollowJob)


def recovery_decision(
    effect: Effect, same_task_revision: bool, authorization_valid: bool, deduplication_valid: bool
) -> Decision:
    """The decision table: what to do once the destination's record has been verified."""
    if effect == "applied":
        return "record_observed_effect"
    if effect == "rejected":
        return "record_rejection"
    if effect in ("pending", "unknown"):
        return "wait_or_escalate"
    if same_task_revision and authorization_valid and deduplication_valid:
        return "retry_same_action"
    return "hold_dispatch"


#: Any same-key retry: how long one may take to come back is the same for every retry (``margin_s``).
A_RETRY = RetrySameAction()

#: Replies that leave the outcome uncertain: automatic retries stop until a read sent since has settled it.
UNCERTAIN_REPLIES = ("connection_error", "unknown_outcome")


class ReconcileAndReauthorize:
    name = "reconcile_and_reauthorize"
    revision = "13"
    #: Time between lookups while the result is pending or unknown.
    wait_s = 10.0
    #: Escalate while at least this much time is left before the deadline.
    escalate_margin_s = 15.0
    #: Where the worker waits longer for an answer than the margin: what a round trip must leave before the
    #: deadline once its answer is back, a moment to act on it (escalate, at worst).
    act_s = 1.0
    retry_count_max = 2
    #: How this policy reads the outcome: a lookup of the target's durable result.
    read_command: Command = LookUp()
    read_source = "lookup"

    def matches(self, receipt: Receipt, situation: Situation) -> bool:
        """Whether the receipt is for the action that was sent: one of its attempts' keys, its exact arguments."""
        keys = {situation.action.idempotency_key, *(a.idempotency_key for a in situation.attempts)}
        return receipt.idempotency_key in keys and receipt.artifact == situation.action.artifact

    def quiet_after_s(self, situation: Situation) -> float | None:
        """From when a lookup's ``absent`` is final: no earlier request can still arrive (each would be refused
        as too old) and the lookup no longer lags behind them. ``None``: never, under this contract."""
        last_sent = situation.last_sent_bound_s
        if last_sent is None:
            return situation.started_at_s  # nothing was ever sent
        validity = situation.contract.request_validity_s
        if validity is None:
            return None
        return last_sent + validity + situation.contract.lookup_lag_s

    def retry_is_safe(self, situation: Situation, looked_at_s: float) -> bool:
        """Whether a same-key retry sent now cannot add a second effect to an earlier request: the absence it
        follows is final, or the destination keeps the key durably and the key's window (counted from its first
        arrival) covers both orders in which the retry and an earlier request can arrive, each as late as the
        request-validity rule still allows."""
        quiet = self.quiet_after_s(situation)
        if quiet is not None and looked_at_s >= quiet:
            return True
        last_sent = situation.last_sent_bound_s
        contract = situation.contract
        validity = contract.request_validity_s
        if last_sent is None or contract.dedupe != "durable" or validity is None:
            return last_sent is None
        # The retry first: every earlier request can still arrive until it is too old, inside the retry's window.
        if last_sent + validity > situation.now_s + contract.dedupe_window_s:
            return False
        return self.inside_unseen_window(situation, looked_at_s)

    def inside_unseen_window(self, situation: Situation, looked_at_s: float) -> bool:
        """Whether a same-key retry decided now can still arrive inside the window of an earlier request that
        lands just after the read (a key's window is counted from its first arrival, that request's): it must
        leave by ``send_by_s``, and the claim made as it leaves holds it to that (``leased``)."""
        send_by = self.send_by_s(situation, looked_at_s)
        return send_by is None or situation.now_s <= send_by

    def send_by_s(self, situation: Situation, looked_at_s: float) -> float | None:
        """The latest moment a same-key retry decided on a read made at ``looked_at_s`` may leave, so that it
        arrives (request validity after it leaves, at most) inside the window of an earlier request that lands
        just after the read; ``None`` when none can. Where the target's reads lag, a retry waits for a read that
        has caught up with every attempt (``caught_up_s``); where every earlier request had reached the target by
        the read, the read saw it."""
        validity = situation.contract.request_validity_s
        if situation.contract.lookup_lag_s > 0 or validity is None:
            return None
        reached_by = self.reached_by_s(situation)
        if reached_by is None or reached_by <= looked_at_s:
            return None
        return looked_at_s + situation.contract.dedupe_window_s - validity

    def leased(self, situation: Situation, command: Command, send_by_s: float | None) -> Command:
        """``command`` with its claim's lease: a same-key retry whose safety rests on leaving by ``send_by_s``
        says so, and so does every retry, a new key's operation too, by the moment it must leave by to come back
        before the escalation margin (``leave_by_s``); the controller refuses the claim made later than the
        earlier of the two (the worker may send a retry later than it was decided, by a delay the policy does not
        see), and the refusal is escalated while the margin lasts. A new key's operation rests on no earlier
        request's window. A moment already past is no lease: the retry did not rest on it. A retry without a claim
        has nothing to lease."""
        if not isinstance(command, RetrySameAction | RetryNewKey) or not command.claim:
            return command
        if isinstance(command, RetryNewKey):
            send_by_s = None
        moments = [m for m in (send_by_s, self.leave_by_s(situation)) if m is not None and situation.now_s <= m]
        return command.model_copy(update={"send_by_s": min(moments)}) if moments else command

    def leave_by_s(self, situation: Situation) -> float | None:
        """The latest moment a retry may leave and still have its reply back with the margin to escalate in (or,
        where the worker waits longer for a reply than the margin, its whole wait and a moment to act): the rule
        of ``last_chance`` judges a retry when it is decided, and this holds its claim to it when the worker sends
        it later."""
        return situation.deadline_s - self.margin_s(situation, A_RETRY)

    def decide(self, situation: Situation) -> Command:
        """The next command; the last one the action's command budget allows accounts for it (escalates,
        unless it records what was found), and so does, within the margin before the deadline, a retry or a read no
        wait came right before (``unguarded``): sent then, it may not come back before the deadline, and leave the
        action unaccounted for."""
        command = self.next_command(situation)
        if isinstance(command, ACCOUNTED_FOR_BY):
            return command
        why = self.last_chance(situation, command)
        return command if why is None else Escalate(reason=why)

    def last_chance(self, situation: Situation, command: Command) -> str | None:
        """Why ``command``, which does not account for the action, must give way to an escalation (``None``: it
        need not): the budget has no room for another, or it is a round trip no wait came right before, and too
        little time is left for its answer to come back and be acted on."""
        if situation.commands_left == 1:
            return "the action's command budget has room for one command more"
        if situation.time_left_s <= self.margin_s(situation, command) and self.unguarded(situation, command):
            return f"only {situation.time_left_s:.0f} s left before the deadline, too little for an answer to come back"
        return None

    def margin_s(self, situation: Situation, command: Command) -> float:
        """The time ``command`` must leave before the deadline: the escalation margin, or, where the worker waits
        longer than that for its answer (``Situation.patience``), that whole wait and a moment to act on it."""
        round_trip = situation.round_trip_s(command)
        return self.escalate_margin_s if round_trip is None else max(self.escalate_margin_s, round_trip + self.act_s)

    def unguarded(self, situation: Situation, command: Command) -> bool:
        """Whether ``command`` is a round trip no wait of this policy's came right before: a retry (decided on a
        read that may have taken long to answer), or a read that is the worker's first command (it may start
        recovering at any moment) or follows another round trip (a retry that waited out its reply, a read that
        took long). A wait is taken only while it leaves the margin to escalate in, so a read right after one
        starts outside it."""
        after_wait = situation.last is not None and situation.last.kind == Wait.model_fields["kind"].default
        return isinstance(command, RetrySameAction | RetryNewKey) or (isinstance(command, READS) and not after_wait)

    def next_command(self, situation: Situation) -> Command:
        """What to do next, the command budget aside."""
        if situation.recorded is not None:
            return Stop(reason=f"accounted for as {situation.recorded}")
        if situation.escalated:
            return Stop(reason="escalated to the owner")
        receipts = situation.observed_receipts()
        if any(not self.matches(r, situation) for r in receipts):
            return Escalate(reason="a receipt does not match the action that was sent")
        settled = next((r for r in receipts if r.status == "applied"), None) or (receipts[0] if receipts else None)
        if settled is not None:
            if settled.status == "applied":
                return RecordEffect(receipt_id=settled.receipt_id)
            return RecordRejection(receipt_id=settled.receipt_id)
        latest_attempt = situation.last_sent_bound_s
        # A read answers for the moment it was made: one sent before the last attempt (even in the same instant)
        # or answered before the last wait is stale. (Half a wait, not a whole one: after waiting exactly wait_s,
        # float arithmetic can land just short.)
        lookup = self._latest_fresh_read(situation, latest_attempt)
        if lookup is None:
            return self.read_command
        # The read describes the target as it stood no earlier than when it was sent.
        looked_at = lookup.sent_at_s if lookup.sent_at_s is not None else lookup.at_s
        effect = lookup.effect
        if effect not in ("applied", "rejected", "absent"):
            return self._wait_or_escalate(situation, f"outcome still {effect}")
        decision = recovery_decision(
            effect,
            same_task_revision=situation.task.revision == situation.action.revision
            and not situation.task.cancel_requested,
            authorization_valid=situation.approval.valid and not situation.held,
            deduplication_valid=self.retry_is_safe(situation, looked_at),
        )
        if decision == "retry_same_action":
            caught_up = self.caught_up_s(situation, looked_at)
            if caught_up is not None:
                return self._read_when_caught_up(situation, caught_up)
            refused = situation.last is not None and situation.last.refused
            if refused or len(situation.attempts) > self.retry_count_max:
                why = situation.last.reason if refused and situation.last else "absent after the allowed retries"
                return self._wait_or_escalate(situation, f"cannot retry yet: {why}")
            return self.leased(situation, self.retry_command(situation), self.send_by_s(situation, looked_at))
        return self._absent_without_retry(situation, looked_at)

    def _latest_fresh_read(self, situation: Situation, latest_attempt: float | None) -> LookupView | None:
        """The latest of this policy's reads that is still fresh, newest first: reads are answered in order, so
        the first one too old ends the search (a decision costs the same after a thousand reads as after one). A
        read sent before an uncertain reply reached the worker (a do-not-replay error, an unknown outcome) is not
        fresh either, however late its answer came: it checked nothing since the worker was told."""
        told = self.told_uncertain_at_s(situation)
        for lk in reversed(situation.lookups):
            if situation.now_s - lk.at_s >= self.wait_s / 2:
                return None
            sent = lk.sent_at_s if lk.sent_at_s is not None else lk.at_s
            fresh = (latest_attempt is None or sent > latest_attempt) and (told is None or sent >= told)
            if lk.source == self.read_source and fresh:
                return lk
        return None

    def told_uncertain_at_s(self, situation: Situation) -> float | None:
        """When the latest uncertain reply (a do-not-replay error, an unknown outcome) reached the worker; ``None``
        when none has: a read sent before it settles nothing."""
        return max(
            (
                a.replied_at_s
                for a in situation.attempts
                if a.response_status in UNCERTAIN_REPLIES and a.replied_at_s is not None
            ),
            default=None,
        )

    def retry_command(self, situation: Situation) -> Command:
        """How to send an absent action again, once that is authorized and safe: the same key, after a claim."""
        return RetrySameAction(claim=True)

    def _absent_without_retry(self, situation: Situation, looked_at_s: float) -> Command:
        """Absent, and no retry is authorized or safe: hold dispatch; record the absence once it is final."""
        if not situation.held and not (
            situation.task.revision == situation.action.revision
            and not situation.task.cancel_requested
            and situation.approval.valid
        ):
            return Hold(reason="absent at the destination, and dispatch is no longer authorized")
        quiet = self.quiet_after_s(situation)
        if quiet is not None and looked_at_s >= quiet:
            return RecordAbsent(reason="absent at the destination, and no earlier request can still arrive")
        if quiet is not None and situation.now_s >= quiet:
            return self.read_command  # the last read predates the moment its answer became final: ask again
        if quiet is not None and self._time_to_wait_for(situation, quiet):
            return self._wait_until_final(situation, quiet)
        return Escalate(reason="absent so far, but a late request could still arrive before the deadline")

    def caught_up_s(self, situation: Situation, looked_at_s: float) -> float | None:
        """``None`` when a read made at ``looked_at_s`` shows the effect of every attempt, if there is one; else
        the moment from which a read would: the target's reads lag ``lookup_lag_s`` behind it, and an attempt
        may reach it as late as ``reached_by_s`` says (``inf``: never caught up, under this contract)."""
        lag = situation.contract.lookup_lag_s
        reached_by = self.reached_by_s(situation) if lag > 0 else None
        if reached_by is None or looked_at_s >= reached_by + lag:
            return None
        return reached_by + lag

    def reached_by_s(self, situation: Situation) -> float | None:
        """The latest moment an attempt may have reached the target (``None``: nothing was sent). One answered
        directly or through a bridge had reached it by the time its reply came back; any other may be late on
        the way until the target no longer accepts it: request validity after it was sent (``inf`` when the
        target accepts a request however old). A device connector's reply bounds nothing: its job may reach the
        target after it (and a connector that forgot the job reports nothing of it); nor does a bridge's connection
        error: it may come back while the call is still on its way to the tool server."""
        validity = situation.contract.request_validity_s
        answered = situation.contract.via != "connector"
        latest: float | None = None
        for attempt in situation.attempts:
            if attempt.sent is False:
                continue
            if answered and attempt.replied_at_s is not None and attempt.response_status != "connection_error":
                by = attempt.replied_at_s
            else:
                sent = attempt.sent_at_s
                sent = sent if sent is not None else max(attempt.recorded_at_s, situation.started_at_s)
                by = sent + validity if validity is not None else math.inf
            latest = by if latest is None else max(latest, by)
        return latest

    def _read_when_caught_up(self, situation: Situation, caught_up_s: float) -> Command:
        """An absence read before the target's reads caught up with the last attempt proves nothing yet: read
        again once they have (waiting till then), or escalate when that comes too close to the deadline."""
        if situation.now_s >= caught_up_s:
            return self.read_command
        if self._time_to_wait_for(situation, caught_up_s):
            return self._wait_until_final(situation, caught_up_s)
        return Escalate(reason="absent so far, but the target's reads lag behind the last attempt")

    def _time_to_wait_for(self, situation: Situation, moment_s: float) -> bool:
        """Whether waiting until ``moment_s`` still leaves a second to act and the margin to escalate in (as long
        as the read after the wait takes, where the worker waits longer than the margin for its answer)."""
        return moment_s + 1.0 < situation.deadline_s - self.margin_s(situation, self.read_command)

    def _wait_until_final(self, situation: Situation, quiet_s: float) -> Command:
        """A wait until just past the moment an absence becomes final (a millisecond past, so that float
        arithmetic cannot wake the worker just short of it)."""
        return Wait(duration_s=max(quiet_s - situation.now_s, 0.0) + 0.001)

    def _wait_or_escalate(self, situation: Situation, why: str) -> Command:
        if situation.time_left_s > self.wait_s + self.margin_s(situation, self.read_command):
            return Wait(duration_s=self.wait_s)
        return Escalate(reason=f"{why} with {situation.time_left_s:.0f} s left before the deadline")


POLICY = ReconcileAndReauthorize()
