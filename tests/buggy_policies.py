"""One-change buggy variants of the shipped policies that should be safe (reconcile_and_reauthorize and the two
seed policies): the bugs real implementers write, kept for tests only.

Each variant changes one decision of the correct policy. ``CORPUS`` names, for each, the shipped scenario
that must catch it and the safety property through which the checker must catch it. ``HIDDEN`` holds
variants that no shipped schedule shows: for each, the shipped scenario from which ``harness explore`` finds
a schedule that does, at which depth, and through which property. ``tools/catch_rate.py`` prints the catch
rate of both with and without exploration.

Every variant can be loaded by name, as ``buggy_policies:<name>`` (with ``tests/`` on the import path).
"""

from __future__ import annotations

from dataclasses import dataclass

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
from policies.follow_and_inspect import FollowAndInspect
from policies.reconcile_and_reauthorize import UNCERTAIN_REPLIES, ReconcileAndReauthorize
from policies.verify_before_mutation import VerifyBeforeMutation


class _Variant(ReconcileAndReauthorize):
    """A variant reports the correct policy's name with its own revision, as a user's fork would."""

    def __init__(self, variant: str) -> None:
        self.name = f"reconcile_{variant}"
        self.revision = f"3-{variant}"


class NeverEscalates(_Variant):
    """Waits on an unknown outcome until the deadline passes instead of escalating it."""

    def _wait_or_escalate(self, situation: Situation, why: str) -> Command:
        return Wait(duration_s=self.wait_s)


class TrustsAnyReceipt(_Variant):
    """Records whatever receipt a lookup returns, without comparing it with the request."""

    def matches(self, receipt: Receipt, situation: Situation) -> bool:
        return True


class ComparesKeyOnly(_Variant):
    """Compares a receipt's idempotency key with the action's, but not its arguments."""

    def matches(self, receipt: Receipt, situation: Situation) -> bool:
        return receipt.idempotency_key in {
            situation.action.idempotency_key,
            *(a.idempotency_key for a in situation.attempts),
        }


class WindowAtRetryOnly(_Variant):
    """Checks the deduplication window only for the moment of the retry (revision 2's bug)."""

    def retry_is_safe(self, situation: Situation, looked_at_s: float) -> bool:
        first = situation.first_sent_at_s
        return first is None or situation.now_s - first < situation.contract.dedupe_window_s


class RecordsAbsenceAtOnce(_Variant):
    """Records the action absent as soon as a lookup says so, while a late original could still arrive."""

    def _absent_without_retry(self, situation: Situation, looked_at_s: float) -> Command:
        return RecordAbsent(reason="absent at the destination")


class IgnoresLookupLag(_Variant):
    """Takes an eventually consistent lookup's "absent" as final once requests expire, ignoring the lag."""

    def quiet_after_s(self, situation: Situation) -> float | None:
        quiet = super().quiet_after_s(situation)
        return None if quiet is None else quiet - situation.contract.lookup_lag_s


class RetriesWithoutClaim(_Variant):
    """Retries without the controller's atomic recheck-and-claim, trusting its own reading of the task."""

    def decide(self, situation: Situation) -> Command:
        command = super().decide(situation)
        return RetrySameAction(claim=False) if isinstance(command, RetrySameAction) else command


class RepeatsRefusedClaims(_Variant):
    """Does not read the outcome of its last command: asks again, at once, for a claim that was refused."""

    def decide(self, situation: Situation) -> Command:
        return super().decide(situation.model_copy(update={"last": None, "refusals": ()}))


class WritesUnguarded(_Variant):
    """Writes receipts to the ledger without the controller's conditional update."""

    #: The writes made unguarded.
    written: type[Command] = RecordEffect

    def decide(self, situation: Situation) -> Command:
        command = super().decide(situation)
        return command.model_copy(update={"guarded": False}) if isinstance(command, self.written) else command


class RetriesUnderNewKey(_Variant):
    """Retries an absent action under a fresh key ("press the button again") instead of the original one."""

    def decide(self, situation: Situation) -> Command:
        command = super().decide(situation)
        return RetryNewKey(claim=True) if isinstance(command, RetrySameAction) else command


class GivesUpWhenHeld(_Variant):
    """Once dispatch is held, stops instead of waiting for the absence to become final or escalating."""

    def _absent_without_retry(self, situation: Situation, looked_at_s: float) -> Command:
        command = super()._absent_without_retry(situation, looked_at_s)
        return Stop(reason="held; nothing more to do") if isinstance(command, Wait | Escalate | LookUp) else command


class AssumesDurableDedupe(_Variant):
    """Trusts the retention window without reading whether the service deduplicates at all."""

    def retry_is_safe(self, situation: Situation, looked_at_s: float) -> bool:
        durable = situation.contract.model_copy(update={"dedupe": "durable"})
        return super().retry_is_safe(situation.model_copy(update={"contract": durable}), looked_at_s)


class _ComparesSome(_Variant):
    """Compares a receipt's key and only the arguments in ``compared`` with the action's."""

    compared: tuple[str, ...] = ()

    def matches(self, receipt: Receipt, situation: Situation) -> bool:
        keys = {situation.action.idempotency_key, *(a.idempotency_key for a in situation.attempts)}
        got, sent = receipt.artifact, situation.action.artifact
        return receipt.idempotency_key in keys and all(getattr(got, f) == getattr(sent, f) for f in self.compared)


class ComparesModelNotDigest(_ComparesSome):
    """Compares a receipt's operation, target and model name with the action's, but not the model's digest: a
    rebuilt model under the same name passes for the one that was sent."""

    compared = ("operation", "target", "model")


class ComparesArgumentsOnly(_Variant):
    """Compares a receipt's arguments with the action's, but not its key: another client's operation with the
    same arguments passes for this action's effect."""

    def matches(self, receipt: Receipt, situation: Situation) -> bool:
        return receipt.artifact == situation.action.artifact


class RecordsRejectionAsEffect(_Variant):
    """Records every settled receipt as an effect, a rejected one included ("the service answered: done")."""

    def decide(self, situation: Situation) -> Command:
        command = super().decide(situation)
        return RecordEffect(receipt_id=command.receipt_id) if isinstance(command, RecordRejection) else command


class TrustsProcessDedupe(_Variant):
    """Excludes only a service that deduplicates nothing: one that remembers keys for the life of its process
    is trusted as if it kept them durably."""

    def retry_is_safe(self, situation: Situation, looked_at_s: float) -> bool:
        quiet = self.quiet_after_s(situation)
        if quiet is not None and looked_at_s >= quiet:
            return True
        last_sent = situation.last_sent_bound_s
        contract = situation.contract
        if last_sent is None or contract.dedupe == "none" or contract.request_validity_s is None:
            return last_sent is None
        return last_sent + contract.request_validity_s <= situation.now_s + contract.dedupe_window_s


class NoValidityAsZero(_Variant):
    """Reads a service that accepts requests of any age (no request validity) as one that accepts none late:
    ``validity or 0.0``, so an absence is final as soon as it is read."""

    def quiet_after_s(self, situation: Situation) -> float | None:
        last_sent = situation.last_sent_bound_s
        if last_sent is None:
            return situation.started_at_s
        validity = situation.contract.request_validity_s or 0.0
        return last_sent + validity + situation.contract.lookup_lag_s


class DatesReadByAnswer(_Variant):
    """Dates a read by when its answer arrived, not when it was sent: the ledger it describes is older."""

    def decide(self, situation: Situation) -> Command:
        answered = tuple(lookup.model_copy(update={"sent_at_s": None}) for lookup in situation.lookups)
        return super().decide(situation.model_copy(update={"lookups": answered}))


class AbsentFinalByClock(_Variant):
    """Takes an absence as final once the clock passes the quiet period, however old the read that found it."""

    def _absent_without_retry(self, situation: Situation, looked_at_s: float) -> Command:
        return super()._absent_without_retry(situation, situation.now_s)


class WakesShortOfFinal(_Variant):
    """Waits until a millisecond before an absence becomes final instead of one after, as if the margin were
    slack to give back: it wakes just short of the moment, and what is left to wait, less the margin, is nothing
    (a float's leftover of about 1e-15 s, which does not move the clock, or at most 0, which no wait may be)."""

    def _wait_until_final(self, situation: Situation, quiet_s: float) -> Command:
        return Wait(duration_s=max(quiet_s - situation.now_s, 0.0) - 0.001)


class WaitsForTheMoment(_Variant):
    """Passes the moment an absence becomes final where the time left until it belongs, and sleeps past it."""

    def _wait_until_final(self, situation: Situation, quiet_s: float) -> Command:
        return Wait(duration_s=quiet_s + 0.001)


# -- variants of the seed-000 policy (follow_and_inspect) -----------------------------------------------------


class _FollowVariant(FollowAndInspect):
    def __init__(self, variant: str) -> None:
        self.name = f"follow_{variant}"
        self.revision = f"1-{variant}"


class StartsAnotherJob(_FollowVariant):
    """Takes a "running" reply for a failure and starts another job under a new key instead of following it."""

    def decide(self, situation: Situation) -> Command:
        command = super().decide(situation)
        running = any(a.response_status == "running" for a in situation.attempts)
        return RetryNewKey(claim=True) if running and isinstance(command, FollowJob) else command


class RetriesUnknownOutcome(_FollowVariant):
    """On unknown_outcome, sends the same request again instead of stopping to inspect the target."""

    def decide(self, situation: Situation) -> Command:
        command = super().decide(situation)
        unknown = any(lk.effect == "unknown_outcome" for lk in situation.lookups)
        return RetrySameAction(claim=True) if unknown and isinstance(command, LookUp) else command


class TrustsConnectorAbsence(_FollowVariant):
    """Takes the connector's "no record of this key" as proof that nothing happened, without inspecting the target."""

    def decide(self, situation: Situation) -> Command:
        command = super().decide(situation)
        absent = any(lk.source == "follow_job" and lk.effect == "absent" for lk in situation.lookups)
        return RetrySameAction(claim=True) if absent and isinstance(command, LookUp) else command


# -- variants of the seed-002 policy (verify_before_mutation) ------------------------------------------------


class _VerifyVariant(VerifyBeforeMutation):
    def __init__(self, variant: str) -> None:
        self.name = f"verify_{variant}"
        self.revision = f"1-{variant}"


class ReplaysDespiteMarker(_VerifyVariant):
    """Replays the same call after a connection error marked do-not-replay, before verifying anything."""

    def decide(self, situation: Situation) -> Command:
        command = super().decide(situation)
        marked = any(a.do_not_replay for a in situation.attempts)
        return RetrySameAction(claim=True) if marked and isinstance(command, VerifyOutcome) else command


class UnknownVerificationAsAbsent(_VerifyVariant):
    """Reads a verification that timed out as "not there" and sends the call again."""

    def decide(self, situation: Situation) -> Command:
        unknown = [lk for lk in situation.lookups if lk.source == "verify" and lk.effect == "unknown"]
        if (
            unknown
            and situation.time_left_s > self.escalate_margin_s
            and len(situation.attempts) <= self.retry_count_max
        ):
            return RetrySameAction(claim=True)
        return super().decide(situation)


class AcceptsWeakerSuccess(_VerifyVariant):
    """Accepts any applied result under the run ID as success, not only one for the original arguments."""

    def matches(self, receipt: Receipt, situation: Situation) -> bool:
        return True


# -- variants no shipped schedule shows (exploration finds them) ----------------------------------------------


class PendingAsAbsent(_Variant):
    """Reads a lookup's "pending" (accepted, not yet applied) as "absent", as if the request had never arrived."""

    def decide(self, situation: Situation) -> Command:
        lookups = tuple(
            lk.model_copy(update={"effect": "absent"}) if lk.effect == "pending" else lk for lk in situation.lookups
        )
        return super().decide(situation.model_copy(update={"lookups": lookups}))


class EscalatesAtTheDeadline(_Variant):
    """Keeps waiting until the deadline itself before escalating, leaving no margin for the escalation."""

    escalate_margin_s = 0.0


class AssumesRequestsExpire(_Variant):
    """Takes every service to refuse requests older than 60 s, without reading whether this one does."""

    def quiet_after_s(self, situation: Situation) -> float | None:
        contract = situation.contract
        if contract.request_validity_s is None:
            contract = contract.model_copy(update={"request_validity_s": 60.0})
        return super().quiet_after_s(situation.model_copy(update={"contract": contract}))


class FollowsStaleJob(_FollowVariant):
    """Follows the last report on any job of the action, even one read before the latest attempt was sent."""

    def _latest_job(self, situation: Situation) -> LookupView | None:
        follows = [lk for lk in situation.lookups if lk.source == "follow_job"]
        return follows[-1] if follows else None


class DatesDeathFromSend(_FollowVariant):
    """Dates a dead job's death from when its request was sent, not from when the connector reported it dead: a
    lagging look at the target, showing it as it stood while the job still ran, counts as an absence."""

    def _died_by(self, situation: Situation) -> float:
        last = situation.attempts[-1]
        return last.sent_at_s if last.sent_at_s is not None else last.recorded_at_s


class RefutedAsAbsent(_VerifyVariant):
    """Reads a refuted verification (another result stands under the run) as "the call never ran"."""

    def decide(self, situation: Situation) -> Command:
        lookups = tuple(
            lookup.model_copy(update={"effect": "absent", "receipt": None, "verified": "absent"})
            if lookup.source == "verify" and lookup.verified == "refuted"
            else lookup
            for lookup in situation.lookups
        )
        return super().decide(situation.model_copy(update={"lookups": lookups}))


class NewPipeUuid(_VerifyVariant):
    """Through the bridge, sends an absent call again as an ordinary new call: a new pipe request UUID (the
    bridge's default) instead of the original one."""

    def retry_command(self, situation: Situation) -> Command:
        if situation.contract.via == "bridge":
            return RetryNewKey(claim=True)
        return super().retry_command(situation)


class ReplaysWithoutClaim(_VerifyVariant):
    """Through the bridge, replays the same call without the controller's recheck-and-claim ("re-sending the
    same request is not a new dispatch")."""

    def retry_command(self, situation: Situation) -> Command:
        if situation.contract.via == "bridge":
            return RetrySameAction(claim=False)
        return super().retry_command(situation)


class BridgeReceiptsAsDedupe(_VerifyVariant):
    """Takes the bridge's receipts per request UUID for durable deduplication, though they last only as long as
    the bridge's process."""

    def retry_is_safe(self, situation: Situation, looked_at_s: float) -> bool:
        if situation.contract.via == "bridge":
            durable = situation.contract.model_copy(update={"dedupe": "durable"})
            situation = situation.model_copy(update={"contract": durable})
        return super().retry_is_safe(situation, looked_at_s)


# -- variants a later hunt wrote (five of them caught since by scenarios written for them) -------------------


class QuietFromFirstSend(_Variant):
    """Dates the quiet period from the first send instead of the last: a retry still in flight is forgotten."""

    def quiet_after_s(self, situation: Situation) -> float | None:
        first = situation.first_sent_at_s
        if first is None:
            return situation.started_at_s
        validity = situation.contract.request_validity_s
        if validity is None:
            return None
        return first + validity + situation.contract.lookup_lag_s


class WindowFromFirstSend(_Variant):
    """Checks that the retry's window outlasts the late arrival of the first request only, not of a later one."""

    def retry_is_safe(self, situation: Situation, looked_at_s: float) -> bool:
        quiet = self.quiet_after_s(situation)
        if quiet is not None and looked_at_s >= quiet:
            return True
        first = situation.first_sent_at_s
        contract = situation.contract
        if first is None or contract.dedupe != "durable" or contract.request_validity_s is None:
            return first is None
        return first + contract.request_validity_s <= situation.now_s + contract.dedupe_window_s


class TrustsReadBeforeRetry(_Variant):
    """Keeps using a recent read even when an attempt was sent after it (only the clock makes a read stale)."""

    def _latest_fresh_read(self, situation: Situation, latest_attempt: float | None) -> LookupView | None:
        return super()._latest_fresh_read(situation, None)


class RetriesBeforeReadsCatchUp(_Variant):
    """Retries on an absence read before the target's reads caught up with the last attempt (lagging lookups)."""

    def caught_up_s(self, situation: Situation, looked_at_s: float) -> float | None:
        return None


class UnknownSentAsUnsent(_Variant):
    """Counts only the attempts it saw sent: one of a crashed (or another) incarnation is taken as never sent."""

    def decide(self, situation: Situation) -> Command:
        attempts = tuple(a.model_copy(update={"sent": False}) if a.sent is None else a for a in situation.attempts)
        return super().decide(situation.model_copy(update={"attempts": attempts}))


class UnknownLookupAsAbsent(_Variant):
    """Reads an unanswered lookup ("unknown") as "absent"."""

    def decide(self, situation: Situation) -> Command:
        lookups = tuple(
            lk.model_copy(update={"effect": "absent"}) if lk.source == "lookup" and lk.effect == "unknown" else lk
            for lk in situation.lookups
        )
        return super().decide(situation.model_copy(update={"lookups": lookups}))


class ComparesKeyModelDigest(_Variant):
    """Compares a receipt's key, model and digest, but not its operation and target."""

    def matches(self, receipt: Receipt, situation: Situation) -> bool:
        keys = {situation.action.idempotency_key, *(a.idempotency_key for a in situation.attempts)}
        got, sent = receipt.artifact, situation.action.artifact
        return receipt.idempotency_key in keys and (got.model, got.digest) == (sent.model, sent.digest)


class ComparesWithCurrentTask(_Variant):
    """Compares a receipt with what the task asks for now instead of with what the action sent."""

    def matches(self, receipt: Receipt, situation: Situation) -> bool:
        keys = {situation.action.idempotency_key, *(a.idempotency_key for a in situation.attempts)}
        return receipt.idempotency_key in keys and receipt.artifact == situation.task.artifact


class WaitsForQuietPastMargin(_Variant):
    """Waits for the absence to become final whenever that is before the deadline, forgetting the margin a last
    read, a record or an escalation needs."""

    def _absent_without_retry(self, situation: Situation, looked_at_s: float) -> Command:
        command = super()._absent_without_retry(situation, looked_at_s)
        quiet = self.quiet_after_s(situation)
        if isinstance(command, Escalate) and quiet is not None and quiet < situation.deadline_s:
            return Wait(duration_s=max(quiet - situation.now_s, 0.0) + 0.001)
        return command


class RefusedReplyAsAbsent(_Variant):
    """Takes the destination's refusal of the latest attempt (too old, or fenced) as proof that the action never
    applied, and records it absent."""

    def decide(self, situation: Situation) -> Command:
        last = situation.attempts[-1] if situation.attempts else None
        if situation.recorded is None and last is not None and last.response_status == "refused":
            return RecordAbsent(reason="the destination refused the request")
        return super().decide(situation)


class FencedAbsenceFinal(_Variant):
    """At a fencing destination, takes any absent read as final once the approval is revoked ("nothing carrying
    it can apply any more"), however far the lookup lags."""

    def quiet_after_s(self, situation: Situation) -> float | None:
        if situation.contract.fencing and not situation.approval.valid:
            return 0.0
        return super().quiet_after_s(situation)


class FollowsForever(_FollowVariant):
    """Follows a running job for as long as it runs, without keeping time to escalate."""

    def decide(self, situation: Situation) -> Command:
        job = self._latest_job(situation)
        if (
            situation.contract.via == "connector"
            and not situation.recorded
            and not situation.escalated
            and not situation.observed_receipts()
            and job is not None
            and job.effect == "running"
        ):
            return FollowJob()
        return super().decide(situation)


class DeathIgnoresLag(_FollowVariant):
    """After a dead job, takes the target's absence as current however far its lookup lags."""

    def retry_is_safe(self, situation: Situation, looked_at_s: float) -> bool:
        if self._dead(situation):
            return looked_at_s >= self._died_by(situation)
        return super().retry_is_safe(situation, looked_at_s)


class AssumesDeathFollowed(_FollowVariant):
    """Takes a dead job's death to be reported by following the job, and dates it from the latest follow: when
    the reply to a retry reports it instead (the follow went unanswered), there is no such follow to read."""

    def _died_by(self, situation: Situation) -> float:
        job = self._latest_job(situation)
        assert job is not None, "a dead job is reported by a follow"
        return job.at_s


class NewOperationWithoutClaim(_FollowVariant):
    """After a dead job, sends the new operation without the controller's recheck-and-claim, trusting its own look
    at the task as it decided (``follow_and_inspect``'s ``retry_command``, its claim dropped: a mutant that passed
    every shipped case while deciding and sending were one instant)."""

    def retry_command(self, situation: Situation) -> Command:
        return RetryNewKey(claim=False) if self._dead(situation) else RetrySameAction(claim=True)


class TrustsVerificationBeforeRetry(_VerifyVariant):
    """Keeps using a recent verification even when a call was sent after it."""

    def _latest_fresh_read(self, situation: Situation, latest_attempt: float | None) -> LookupView | None:
        return super()._latest_fresh_read(situation, None)


# -- variants a judge-the-judge hunt found passing every shipped case (each caught since by a scenario for it) ---


class RecordsAbsenceALagEarly(_Variant):
    """Takes an absence as final once the read plus the lookup's lag reaches the quiet moment: the lag added
    where it is already counted (a sign slip), so an absence read in the last lag before it is final is recorded."""

    def _absent_without_retry(self, situation: Situation, looked_at_s: float) -> Command:
        return super()._absent_without_retry(situation, looked_at_s + situation.contract.lookup_lag_s)


class QuietFromLastSeenSend(_Variant):
    """Dates the quiet period from the last attempt's own send time, which a crashed incarnation's attempt does
    not have: its request, still on the way, is taken as never sent."""

    def quiet_after_s(self, situation: Situation) -> float | None:
        last_sent = situation.attempts[-1].sent_at_s if situation.attempts else None
        if last_sent is None:
            return situation.started_at_s
        validity = situation.contract.request_validity_s
        if validity is None:
            return None
        return last_sent + validity + situation.contract.lookup_lag_s


class CaughtUpByClock(_Variant):
    """Judges whether the reads have caught up with the last attempt by the clock, not by when the read was made."""

    def caught_up_s(self, situation: Situation, looked_at_s: float) -> float | None:
        return super().caught_up_s(situation, situation.now_s)


class WaitsForQuietWithoutMargin(_Variant):
    """Waits for the moment an absence becomes final (or the reads catch up) whenever that is more than a second
    before the deadline, forgetting the margin a retry (or a record, or an escalation) needs after it."""

    def _time_to_wait_for(self, situation: Situation, moment_s: float) -> bool:
        return moment_s + 1.0 < situation.deadline_s


class MarginForgetsTheWait(_Variant):
    """Escalates once the margin is all that is left, forgetting that the wait and the read before it take time
    too: with slow reads, the escalation comes after the deadline."""

    def _wait_or_escalate(self, situation: Situation, why: str) -> Command:
        if situation.time_left_s > self.escalate_margin_s:
            return Wait(duration_s=self.wait_s)
        return Escalate(reason=f"{why} with {situation.time_left_s:.0f} s left before the deadline")


class CaughtUpFromSend(_Variant):
    """Takes the target's reads to have caught up with an attempt ``lookup_lag_s`` after it was sent, as if every
    request arrived at once (revision 5's rule): a late one, applied within the lag before a read, goes unseen."""

    def reached_by_s(self, situation: Situation) -> float | None:
        return situation.last_sent_bound_s


class ConnectorCaughtUpFromSend(_Variant):
    """Keeps revision 5's rule for a device connector only (its job reports were taken to say when it ran): a
    request late on its way to a connector that then forgot its job goes unseen by a lagging read."""

    def reached_by_s(self, situation: Situation) -> float | None:
        if situation.contract.via == "connector":
            return situation.last_sent_bound_s
        return super().reached_by_s(situation)


class SkipsUnknownSent(_Variant):
    """Leaves out of when the attempts may have reached the target those whose sending it cannot know (a crashed
    incarnation's): ``not attempt.sent`` where ``attempt.sent is False`` was meant."""

    def reached_by_s(self, situation: Situation) -> float | None:
        attempts = tuple(a for a in situation.attempts if a.sent)
        return super().reached_by_s(situation.model_copy(update={"attempts": attempts}))


class CaughtUpAtReach(_Variant):
    """Takes the reads to have caught up with an attempt once it may have reached the target, forgetting their
    lag: it reads again and again, each read still behind the late request, until its commands run out."""

    def caught_up_s(self, situation: Situation, looked_at_s: float) -> float | None:
        caught_up = super().caught_up_s(situation, looked_at_s)
        return None if caught_up is None else caught_up - situation.contract.lookup_lag_s


class ReachedByFirstAttempt(_Variant):
    """Dates the reads' catching up from the first attempt alone (the loop over attempts stopped after one sent):
    once they have caught up with it, a later attempt's do-not-replay error is taken as settled by a read that
    predates that attempt's arrival."""

    def reached_by_s(self, situation: Situation) -> float | None:
        sent = tuple(a for a in situation.attempts if a.sent is not False)
        return super().reached_by_s(situation.model_copy(update={"attempts": sent[:1]}))


class WaitsForReadsPastMargin(_Variant):
    """Waits for the target's reads to catch up with the last attempt however close to the deadline that comes
    (the check for time to wait left out), instead of escalating while there is time: the deadline passes with
    the action neither accounted for nor escalated."""

    def _read_when_caught_up(self, situation: Situation, caught_up_s: float) -> Command:
        if situation.now_s >= caught_up_s:
            return self.read_command
        return self._wait_until_final(situation, caught_up_s)


# -- variants no world the simulator can build shows harm for (each told apart by a unit test of its decision) ----


class ConnectorReplyBounds(_Variant):
    """Takes a device connector's reply to bound when its attempt reached the target, as a direct reply does
    (``answered and`` left out): a job the connector hands the target after replying goes unseen by a read."""

    def reached_by_s(self, situation: Situation) -> float | None:
        direct = situation.contract.model_copy(update={"via": "direct"})
        return super().reached_by_s(situation.model_copy(update={"contract": direct}))


class NoValidityReachedBySend(_FollowVariant):
    """Where the target accepts a request however old, takes an unanswered attempt to have reached it by the
    time it was sent (``sent`` for ``math.inf``): after a dead job, a new key follows a read that a request still
    on its way to the target cannot be ruled out of."""

    def reached_by_s(self, situation: Situation) -> float | None:
        if situation.contract.request_validity_s is not None:
            return super().reached_by_s(situation)
        at_once = situation.contract.model_copy(update={"request_validity_s": 0.0})
        return super().reached_by_s(situation.model_copy(update={"contract": at_once}))


class IgnoresCommandBudget(_Variant):
    """Waits and reads until the runtime's command budget stops it (revision 6's bug): its last command is
    another wait or read instead of an escalation, so the action is left unaccounted for."""

    def last_chance(self, situation: Situation, command: Command) -> str | None:
        return super().last_chance(situation.model_copy(update={"commands_left": None}), command)


class HoldAccountsForAction(_Variant):
    """Takes a hold for an account of the action (``Hold`` among the commands the budget's last may be): with one
    command left and dispatch no longer authorized, it holds, and the budget ends with no one told."""

    def last_chance(self, situation: Situation, command: Command) -> str | None:
        return None if isinstance(command, Hold) else super().last_chance(situation, command)


class RetriesWithSecondsLeft(_Variant):
    """Keeps the deadline's margin for reads and waits only: it sends a retry however little time is left, and
    with its reply lost waits for one until past the deadline, the action neither recorded nor escalated."""

    def unguarded(self, situation: Situation, command: Command) -> bool:
        return not isinstance(command, RetrySameAction) and super().unguarded(situation, command)


class ClaimsFirstRetryOnly(_Variant):
    """Claims its first retry only, and sends a later one on that claim (a lost request does not spend it): a
    cancellation made while the second retry leaves is never rechecked, and the cancelled work is applied."""

    def decide(self, situation: Situation) -> Command:
        command = super().decide(situation)
        later = isinstance(command, RetrySameAction) and len(situation.attempts) > 1
        return RetrySameAction(claim=False) if later else command


class SupersededAbsentAtOnce(_Variant):
    """Takes the absence of an action whose revision the task has moved past, dispatch held or no longer
    approved, as final at once ("the old revision is moot"): a late original may still land, and the newer
    action the hold kept back is released to be overwritten by it."""

    def _absent_without_retry(self, situation: Situation, looked_at_s: float) -> Command:
        moved_on = situation.task.revision != situation.action.revision
        if moved_on and (situation.held or not situation.approval.valid):
            return RecordAbsent(reason="absent, and the task has moved past its revision")
        return super()._absent_without_retry(situation, looked_at_s)


class ExpiredAbsentAtOnce(_Variant):
    """Takes the absence of an action whose approval has run out, dispatch held, as final at once ("nothing can
    be sent any more"), forgetting the request already on its way, sent while the approval held."""

    def _absent_without_retry(self, situation: Situation, looked_at_s: float) -> Command:
        if situation.held and not situation.approval.valid:
            return RecordAbsent(reason="absent, and its approval has run out")
        return super()._absent_without_retry(situation, looked_at_s)


class RejectionsUnguarded(WritesUnguarded):
    """Writes rejections without the controller's conditional update (effects still guarded): two workers that
    both read the refusal both record it."""

    written = RecordRejection


class FirstReadOnlyGuarded(_Variant):
    """Takes only a worker's first read for a round trip no wait came before (revision 8 as first written): the
    read after a retry that waited out its lost reply is sent seconds before the deadline, and comes back after
    it."""

    def unguarded(self, situation: Situation, command: Command) -> bool:
        first_read = not situation.lookups and isinstance(command, LookUp)
        return first_read or isinstance(command, RetrySameAction)


class ReadsWithSecondsLeft(_Variant):
    """Keeps the deadline's margin for retries only: a first read sent seconds before the deadline does not come
    back before it, and the action is neither recorded nor escalated."""

    def unguarded(self, situation: Situation, command: Command) -> bool:
        return not isinstance(command, LookUp) and super().unguarded(situation, command)


class WindowFromRetryOnly(_Variant):
    """Counts the key's window from the retry (revision 8's rule): checks that every earlier request arrives
    inside the retry's window, not that the retry, itself late, arrives inside the window of an earlier request
    that landed first, just after the read."""

    def inside_unseen_window(self, situation: Situation, looked_at_s: float) -> bool:
        return True


class WindowFromDecision(_Variant):
    """Bounds the retry's arrival by request validity after the decision, without leasing its claim to the moment
    that bound needs it to leave by (revision 9 as first written): the worker sends it later, by a delay the policy
    does not see, and it arrives after the window of an original that landed just after the read."""

    def leased(self, situation: Situation, command: Command, send_by_s: float | None) -> Command:
        return command


class LeaseFromDecision(_Variant):
    """Dates the lease (and the window rule's bound) from the decision, not from when the read was sent: the
    original may land while the read's answer is on its way back, so the lease is late by that trip."""

    def send_by_s(self, situation: Situation, looked_at_s: float) -> float | None:
        return super().send_by_s(situation, situation.now_s)


class MarginAtDecisionOnly(_Variant):
    """Keeps the escalation margin when a retry is decided, not when it leaves (revision 9): its claim carries no
    lease to the deadline less the margin, so a retry the worker sends late, its reply lost, is waited out past
    the deadline."""

    def leave_by_s(self, situation: Situation) -> float | None:
        return None


class ComparesDigestNotModel(_ComparesSome):
    """Compares a receipt's key, operation, target and digest, but not the model's name ("the digest is the
    model"): the same build deployed under another model's name passes for the action's effect."""

    compared = ("operation", "target", "digest")


class ConnectorAnswerAsTargetRead(_FollowVariant):
    """Takes any fresh read for a read of the target, the connector's job follow included: its "no record of
    this key" after a crash reads as the target showing nothing."""

    def _latest_fresh_read(self, situation: Situation, latest_attempt: float | None) -> LookupView | None:
        for lk in reversed(situation.lookups):
            if situation.now_s - lk.at_s >= self.wait_s / 2:
                return None
            sent = lk.sent_at_s if lk.sent_at_s is not None else lk.at_s
            if latest_attempt is None or sent > latest_attempt:
                return lk
        return None


class LatestJobSinceFirstSend(_FollowVariant):
    """Takes any follow since the first attempt for the latest job's: after a new operation, the dead job's old
    ``unknown_outcome`` still reads as the latest attempt's death, and a look that finds nothing under the new
    key (the operation still on its way) starts a third."""

    def _latest_job(self, situation: Situation) -> LookupView | None:
        since = situation.first_sent_at_s or 0.0
        follows = [lk for lk in situation.lookups if lk.source == "follow_job" and lk.at_s >= since]
        return follows[-1] if follows else None


class VerificationReadsLive(_VerifyVariant):
    """Takes a verification through the bridge for a live read of the tool server: the moment an absence is
    final leaves out the reads' lag, and it records an absence the late call contradicts."""

    def quiet_after_s(self, situation: Situation) -> float | None:
        quiet = super().quiet_after_s(situation)
        if quiet is not None and situation.contract.via == "bridge" and situation.last_sent_bound_s is not None:
            return quiet - situation.contract.lookup_lag_s
        return quiet


class FreshFromOwnAttempt(_Variant):
    """Dates a read's freshness from the latest attempt's own send time, which only the worker that sent it knows:
    after another worker's attempt any read counts, and it retries on a read older than that attempt."""

    def _latest_fresh_read(self, situation: Situation, latest_attempt: float | None) -> LookupView | None:
        own = situation.attempts[-1].sent_at_s if situation.attempts else None
        return super()._latest_fresh_read(situation, own)


class FollowNotARead(_FollowVariant):
    """Leaves the job follow out of the round trips the deadline's margin guards (its reads were lookups and
    verifications): a follow sent seconds before the deadline waits at the connector, and answers after it."""

    def unguarded(self, situation: Situation, command: Command) -> bool:
        return not isinstance(command, FollowJob) and super().unguarded(situation, command)


class ReachedByTheClock(_Variant):
    """Asks whether every earlier request had reached the target by now, not by when the read was sent: an
    original whose last moment to land passes while the read's answer is on its way back leaves the retry
    without its window's lease, and the read never saw that original."""

    def send_by_s(self, situation: Situation, looked_at_s: float) -> float | None:
        reached_by = self.reached_by_s(situation)
        if reached_by is not None and looked_at_s < reached_by <= situation.now_s:
            return None
        return super().send_by_s(situation, looked_at_s)


class NewKeyUnguarded(_FollowVariant):
    """Leaves the new key's operation after a dead job out of the round trips the deadline's margin guards (only
    a same-key retry was thought of): one decided seconds before the deadline, its reply lost, is waited out
    past it."""

    def unguarded(self, situation: Situation, command: Command) -> bool:
        return not isinstance(command, RetryNewKey) and super().unguarded(situation, command)


class BridgeErrorBounds(_VerifyVariant):
    """Takes the bridge's connection error to bound when the call reached the tool server, as any other reply
    through the bridge does (revision 7's rule): an error that outruns its call leaves the retry without its
    window's lease, and the call, landing after the verification, is applied again by a retry sent late."""

    def reached_by_s(self, situation: Situation) -> float | None:
        attempts = tuple(
            a.model_copy(update={"response_status": None}) if a.response_status == "connection_error" else a
            for a in situation.attempts
        )
        return super().reached_by_s(situation.model_copy(update={"attempts": attempts}))


# -- variants a later judge-the-judge hunt found passing every shipped case and exploration at depth 1 ----------


class InProgressAsNoEffect(_Variant):
    """Takes the destination's 409-style "in progress" answer to its latest attempt for a failed attempt that left
    nothing behind, and records the action absent: the answer says the key's first operation is accepted and on its
    way to applying, the opposite of proof that there is no effect."""

    def decide(self, situation: Situation) -> Command:
        last = situation.attempts[-1] if situation.attempts else None
        if situation.recorded is None and last is not None and last.response_status == "in_progress":
            return RecordAbsent(reason="the destination answered in progress: this attempt did nothing")
        return super().decide(situation)


class SpentRetriesAsAbsence(_Variant):
    """Takes its retries, once all spent on fresh absent reads, for proof that the action did not happen, and
    records it absent ("tried three times, nothing there") instead of waiting for the absence to become final:
    the last retry, still on its way, lands after the record."""

    def _wait_or_escalate(self, situation: Situation, why: str) -> Command:
        if why.endswith("absent after the allowed retries"):
            return RecordAbsent(reason=f"{why}: it did not happen")
        return super()._wait_or_escalate(situation, why)


class SettlesOnEarlierRead(_Variant):
    """Takes a read sent before a do-not-replay error reached the worker, and answered after it, to settle the
    error (revision 11's rule): the read checked nothing since the worker was told, and a retry follows it."""

    def told_uncertain_at_s(self, situation: Situation) -> float | None:
        return None


class ReadMarginFixed(_Variant):
    """Leaves a read only the fixed escalation margin before the deadline, however long the worker waits for its
    answer (revision 12's rule): with reads that may take 90 s, a read sent 49 s before the deadline comes back
    after it."""

    def margin_s(self, situation: Situation, command: Command) -> float:
        if isinstance(command, LookUp | VerifyOutcome | FollowJob):
            return self.escalate_margin_s
        return super().margin_s(situation, command)


class RetryMarginFixed(_Variant):
    """Leaves a retry only the fixed escalation margin before the deadline, however long the worker then waits for
    its reply: with 25 s to wait and 20 s left, a lost reply is waited out past the deadline."""

    def margin_s(self, situation: Situation, command: Command) -> float:
        if isinstance(command, RetrySameAction | RetryNewKey):
            return self.escalate_margin_s
        return super().margin_s(situation, command)


class LeaseForgetsReplyWait(_Variant):
    """Leases a retry's claim to the deadline less the margin only (revision 12's lease), not less the worker's
    whole wait for the reply: a retry decided in time but sent late leaves when its reply can no longer come back
    before the deadline."""

    def leave_by_s(self, situation: Situation) -> float | None:
        return situation.deadline_s - self.escalate_margin_s


class FollowPatienceWithoutWait(_FollowVariant):
    """Counts a job follow's round trip as any read's, forgetting that the follow also waits at the connector for
    a job still running: with a 30 s connector wait, a follow sent 25 s before the deadline comes back after it."""

    def margin_s(self, situation: Situation, command: Command) -> float:
        if isinstance(command, FollowJob):
            return super().margin_s(situation, LookUp())
        return super().margin_s(situation, command)


# -- a sixth adversarial review (slow read answers, told_uncertain_at_s, racing workers, leases, budgets) ----------


class InsideWindowAtRead(_Variant):
    """Asks whether the read, not the retry, is inside the window of an earlier request that landed just after it
    ("decided in time"): with the read's answer slow on its way back, the moment the retry had to leave by has
    passed when it is decided, the lease drops a moment already past, and the retry leaves too late for that window."""

    def inside_unseen_window(self, situation: Situation, looked_at_s: float) -> bool:
        send_by = self.send_by_s(situation, looked_at_s)
        return send_by is None or looked_at_s <= send_by


class NewKeyUnleased(_FollowVariant):
    """Leases only a same-key retry's claim (follow revision 10's rule): a new key's operation after a dead job,
    decided just outside the margin and sent 12 s later, is waited for past the deadline."""

    def leased(self, situation: Situation, command: Command, send_by_s: float | None) -> Command:
        if isinstance(command, RetryNewKey):
            return command
        return super().leased(situation, command, send_by_s)


class ToldFromFirstUncertain(_Variant):
    """Dates the doubt from the first uncertain reply, not the latest: a read sent after the first do-not-replay
    error, but before the retry's own, is taken to settle both, and a second retry follows it."""

    def told_uncertain_at_s(self, situation: Situation) -> float | None:
        return min(
            (
                a.replied_at_s
                for a in situation.attempts
                if a.response_status in UNCERTAIN_REPLIES and a.replied_at_s is not None
            ),
            default=None,
        )


class WaitForgetsReadPatience(_Variant):
    """Waits for the moment an absence becomes final (or the reads catch up) while that leaves the fixed escalation
    margin and a second, not the worker's whole wait for the read after it (revision 12's rule at the one call site
    revision 13 did not change in any shipped case): with reads that may take 30 s, the read after the wait comes
    back after the deadline."""

    def _time_to_wait_for(self, situation: Situation, moment_s: float) -> bool:
        return moment_s + 1.0 < situation.deadline_s - self.escalate_margin_s


class RoundTripLessActSecond(_Variant):
    """Leaves a round trip its whole wait less the second to act (an off-by-one on ``act_s``): a read sent with
    less time left than the worker's wait for its answer may still be out when the deadline passes."""

    def margin_s(self, situation: Situation, command: Command) -> float:
        round_trip = situation.round_trip_s(command)
        return self.escalate_margin_s if round_trip is None else max(self.escalate_margin_s, round_trip - self.act_s)


class ComparesAppliedOnly(_Variant):
    """Compares an applied receipt with its request, and takes a refusal at its word: a misrouted lookup's refusal
    of another deployment is recorded as the action's, which had applied."""

    def matches(self, receipt: Receipt, situation: Situation) -> bool:
        return receipt.status != "applied" or super().matches(receipt, situation)


class VerifyComparesAppliedOnly(_VerifyVariant):
    """verify_before_mutation's reading of a receipt with the same one change: a refusal taken at its word. Where
    the action never reached the destination, a misrouted lookup's refusal of another deployment is recorded as
    the action's; nothing applied, so the ledger contradicts nothing, and only the receipt's key and arguments
    show it is not the action's (mismatched_records, which until then looked at recorded effects only)."""

    def matches(self, receipt: Receipt, situation: Situation) -> bool:
        return receipt.status != "applied" or super().matches(receipt, situation)


class FencedFinalOnceCaughtUp(_Variant):
    """At a fencing destination whose approval is revoked or expired, takes the lookup's lag past the last send as
    the moment an absence is final ("the fence refuses anything still on its way"): a request sent before the
    revocation may still land before it, after a read that found nothing."""

    def quiet_after_s(self, situation: Situation) -> float | None:
        if situation.contract.fencing and not situation.approval.valid:
            last_sent = situation.last_sent_bound_s
            return (situation.started_at_s if last_sent is None else last_sent) + situation.contract.lookup_lag_s
        return super().quiet_after_s(situation)


class FencedExpiryIgnoresLag(_Variant):
    """At a fencing destination, takes an absence read once the approval has expired as final (a request that
    arrives after the expiry is refused), forgetting that a lagging lookup shows the ledger as it stood before
    the expiry: one that landed just before it is not seen yet."""

    def quiet_after_s(self, situation: Situation) -> float | None:
        quiet = super().quiet_after_s(situation)
        expires = situation.approval.expires_at_s
        if situation.contract.fencing and expires is not None:
            return expires if quiet is None else min(quiet, expires)
        return quiet


class FencedExpiryFinalByClock(_Variant):
    """At a fencing destination, takes an absence as final once the clock is past the approval's expiry and the
    lookup's lag (when a read would see everything the fence let through), however old the read: one made
    before the expiry, and answered after it, did not see a request that landed in between."""

    def _absent_without_retry(self, situation: Situation, looked_at_s: float) -> Command:
        command = super()._absent_without_retry(situation, looked_at_s)
        expires = situation.approval.expires_at_s
        if isinstance(command, Hold) or not situation.contract.fencing or expires is None:
            return command
        if situation.now_s >= expires + situation.contract.lookup_lag_s:
            return RecordAbsent(reason="absent, and the fence refuses anything arriving after the expiry")
        return command


class SupersededRefusalAsAbsent(_Variant):
    """Records the refusal of an action whose task has moved on (or been cancelled) as an absence ("nothing of
    that revision stands"): the destination took the request and refused it, and the ledger says it never did."""

    def next_command(self, situation: Situation) -> Command:
        command = super().next_command(situation)
        moved_on = situation.task.revision != situation.action.revision or situation.task.cancel_requested
        if isinstance(command, RecordRejection) and moved_on:
            return RecordAbsent(reason="refused, and the task has moved past it")
        return command


# -- an adversarial review of racing recoverers: several workers recovering one action at once ------------------


def _without_concurrent(situation: Situation) -> Situation:
    """``situation`` without the attempts another worker recorded since this incarnation started (a crashed
    predecessor's stay): what a worker sees that takes another's attempt for that worker's business alone."""
    attempts = tuple(
        a for a in situation.attempts if a.observation != "unknown" or a.recorded_at_s < situation.started_at_s
    )
    return situation.model_copy(update={"attempts": attempts})


class QuietFromOwnAttempts(_Variant):
    """Dates the quiet period from its own attempts (and a crashed predecessor's) only: a retry another worker
    recovering beside it has sent since is taken as that worker's to wait out, and it retries on an absence that
    retry, late on the wire, can still contradict."""

    def quiet_after_s(self, situation: Situation) -> float | None:
        return super().quiet_after_s(_without_concurrent(situation))


class FollowQuietFromOwnAttempts(_FollowVariant):
    """``quiet_from_own_attempts`` in ``follow_and_inspect``."""

    def quiet_after_s(self, situation: Situation) -> float | None:
        return super().quiet_after_s(_without_concurrent(situation))


class VerifyQuietFromOwnAttempts(_VerifyVariant):
    """``quiet_from_own_attempts`` in ``verify_before_mutation``."""

    def quiet_after_s(self, situation: Situation) -> float | None:
        return super().quiet_after_s(_without_concurrent(situation))


#: Why the controller refuses a claim when another worker's attempt was recorded since the decision.
RECORDED_SINCE = "was recorded since the dispatch was decided"


def _lost_the_race(situation: Situation) -> bool:
    """Whether its last command was a claim refused because another worker's attempt was recorded since."""
    last = situation.last
    return last is not None and last.refused and RECORDED_SINCE in (last.reason or "")


class ClaimsAgainAfterRace(_Variant):
    """Takes a claim refused because another worker's attempt was recorded since its decision for a write conflict
    to try again ("the ledger moved under me"): asks at once for the same retry instead of deciding again on what
    the ledger now says, and sends it beside the other worker's, which is still on its way."""

    def decide(self, situation: Situation) -> Command:
        if _lost_the_race(situation):
            return self.leased(situation, self.retry_command(situation), None)
        return super().decide(situation)


class FollowClaimsAgainAfterRace(_FollowVariant):
    """``claims_again_after_race`` in ``follow_and_inspect``."""

    def decide(self, situation: Situation) -> Command:
        if _lost_the_race(situation):
            return self.leased(situation, self.retry_command(situation), None)
        return super().decide(situation)


class VerifyClaimsAgainAfterRace(_VerifyVariant):
    """``claims_again_after_race`` in ``verify_before_mutation``."""

    def decide(self, situation: Situation) -> Command:
        if _lost_the_race(situation):
            return self.leased(situation, self.retry_command(situation), None)
        return super().decide(situation)


class LatestJobSinceOwnSend(_FollowVariant):
    """Follows the last report on a job since its own last attempt (or a crashed predecessor's), not since another
    worker's later one: the dead job's report, read before the other worker's new operation left, is taken for
    the latest, and it starts another new operation while that one is on its way."""

    def _latest_job(self, situation: Situation) -> LookupView | None:
        since = _without_concurrent(situation).last_sent_bound_s or 0.0
        follows = [lk for lk in situation.lookups if lk.source == "follow_job" and lk.at_s >= since]
        return follows[-1] if follows else None


class LatestJobAnsweredSinceSend(_FollowVariant):
    """follow_and_inspect's revision 11: takes the last follow *answered* since the last attempt was sent for the
    latest job's report, though it was sent before that attempt. Another worker's new operation leaves while this
    worker's follow of the dead job is on its way back; the answer, about the dead job, is taken for the new one's,
    and a third operation starts while the second is on the wire. Found by an exploration that also tried a read's answer
    slow but in time."""

    def _latest_job(self, situation: Situation) -> LookupView | None:
        since = situation.last_sent_bound_s or 0.0
        follows = [lk for lk in situation.lookups if lk.source == "follow_job" and lk.at_s >= since]
        return follows[-1] if follows else None


@dataclass(frozen=True)
class Catch:
    """Where a variant must be caught: the scenario, and the property whose verdict must be false."""

    policy: ReconcileAndReauthorize
    scenario: str
    property: str


CORPUS: tuple[Catch, ...] = (
    # uncertain_lookup caught it until reconcile revision 13: there its waits now end 2 s before the deadline, where
    # a read could not come back in time, so the correct policy's round-trip rule escalates for it.
    Catch(NeverEscalates("never_escalates"), "refused_retry_after_late_original", "abandoned_actions"),
    Catch(IgnoresCommandBudget("ignores_command_budget"), "step_budget_while_unsure", "abandoned_actions"),
    Catch(TrustsAnyReceipt("trusts_any_receipt"), "foreign_receipt", "mismatched_records"),
    Catch(ComparesKeyOnly("compares_key_only"), "foreign_receipt", "mismatched_records"),
    Catch(WindowAtRetryOnly("window_at_retry_only"), "late_original_past_window", "duplicate_effects"),
    Catch(RecordsAbsenceAtOnce("records_absence_at_once"), "absent_then_late_original", "false_records"),
    Catch(IgnoresLookupLag("ignores_lookup_lag"), "stale_lookup_after_cancel", "false_records"),
    Catch(RetriesWithoutClaim("retries_without_claim"), "newer_write_held", "unauthorized_dispatches"),
    Catch(WritesUnguarded("writes_unguarded"), "two_recoverers", "duplicate_records"),
    Catch(RetriesUnderNewKey("retries_under_new_key"), "late_original_in_window", "duplicate_effects"),
    Catch(GivesUpWhenHeld("gives_up_when_held"), "fenced_late_original", "abandoned_actions"),
    Catch(AssumesDurableDedupe("assumes_durable_dedupe"), "late_original_no_dedupe", "duplicate_effects"),
    Catch(StartsAnotherJob("starts_another_job"), "connector_wait_expires", "duplicate_effects"),
    Catch(
        RetriesUnknownOutcome("retries_unknown_outcome"),
        "connector_crash_points@after_effect",
        "retries_after_uncertain",
    ),
    Catch(TrustsConnectorAbsence("trusts_connector_absence"), "connector_started_not_durable", "duplicate_effects"),
    Catch(ReplaysDespiteMarker("replays_despite_marker"), "bridge_error_after_forward", "retries_after_uncertain"),
    Catch(UnknownVerificationAsAbsent("unknown_as_absent"), "bridge_verify_times_out", "retries_after_uncertain"),
    Catch(AcceptsWeakerSuccess("accepts_weaker_success"), "foreign_receipt", "mismatched_records"),
    Catch(ComparesModelNotDigest("compares_model_not_digest"), "rebuilt_receipt", "mismatched_records"),
    Catch(ComparesArgumentsOnly("compares_arguments_only"), "receipt_under_another_key", "mismatched_records"),
    Catch(RecordsRejectionAsEffect("records_rejection_as_effect"), "rejected_reply_lost", "abandoned_actions"),
    Catch(TrustsProcessDedupe("trusts_process_dedupe"), "process_dedupe_late_original", "duplicate_effects"),
    Catch(NoValidityAsZero("no_validity_as_zero"), "late_original_no_validity", "duplicate_effects"),
    Catch(DatesReadByAnswer("dates_read_by_answer"), "read_straddles_quiet", "duplicate_effects"),
    Catch(AbsentFinalByClock("absent_final_by_clock"), "read_straddles_quiet", "false_records"),
    # Hidden (found only by exploring late_original_no_dedupe) until read_straddles_quiet was shipped.
    Catch(PendingAsAbsent("pending_as_absent"), "read_straddles_quiet", "duplicate_effects"),
    Catch(RefutedAsAbsent("refuted_as_absent"), "bridge_refuted_after_restart", "duplicate_effects"),
    Catch(NewPipeUuid("new_pipe_uuid"), "bridge_late_original_new_uuid", "duplicate_effects"),
    Catch(ReplaysWithoutClaim("replays_without_claim"), "bridge_newer_write_held", "unauthorized_dispatches"),
    Catch(BridgeReceiptsAsDedupe("bridge_receipts_as_dedupe"), "bridge_restart_late_original", "duplicate_effects"),
    Catch(QuietFromFirstSend("quiet_from_first_send"), "retry_delayed_past_window", "duplicate_effects"),
    Catch(WindowFromFirstSend("window_from_first_send"), "retry_delayed_past_window", "duplicate_effects"),
    # Passed every shipped case until the checker stopped taking a lagging "absent" as settling an uncertain reply.
    Catch(
        RetriesBeforeReadsCatchUp("retries_before_reads_catch_up"),
        "connector_dead_job_lagging_lookup",
        "retries_after_uncertain",
    ),
    Catch(UnknownSentAsUnsent("unknown_sent_as_unsent"), "racing_recoverers_no_dedupe", "duplicate_effects"),
    Catch(UnknownLookupAsAbsent("unknown_lookup_as_absent"), "bridge_newer_write_held", "false_records"),
    Catch(ComparesKeyModelDigest("compares_key_model_digest"), "foreign_receipt_before_arrival", "mismatched_records"),
    Catch(
        ComparesWithCurrentTask("compares_with_current_task"), "foreign_receipt_for_new_revision", "mismatched_records"
    ),
    Catch(WaitsForQuietPastMargin("waits_for_quiet_past_margin"), "quiet_at_deadline", "abandoned_actions"),
    Catch(RefusedReplyAsAbsent("refused_reply_as_absent"), "refused_retry_after_late_original", "false_records"),
    Catch(FencedAbsenceFinal("fenced_absence_final"), "fenced_stale_lookup_after_cancel", "false_records"),
    Catch(WaitsForTheMoment("waits_for_the_moment"), "connector_unstarted_lagging_lookup", "abandoned_actions"),
    Catch(FollowsForever("follows_forever"), "connector_new_operation_pending", "abandoned_actions"),
    Catch(AssumesDeathFollowed("assumes_death_followed"), "connector_down_when_followed", "abandoned_actions"),
    Catch(
        NewOperationWithoutClaim("new_operation_without_claim"),
        "connector_cancel_while_new_operation_leaves",
        "unauthorized_dispatches",
    ),
    Catch(RecordsAbsenceALagEarly("records_absence_a_lag_early"), "lagging_absence_in_last_lag", "false_records"),
    Catch(QuietFromLastSeenSend("quiet_from_last_seen_send"), "crash_awaiting_delayed_original", "duplicate_effects"),
    # Caught in quiet_just_before_deadline through its retry until the correct policy's retry within the margin
    # escalated (reconcile revision 8): now through the read after its wait.
    Catch(
        WaitsForQuietWithoutMargin("waits_for_quiet_without_margin"),
        "quiet_just_before_deadline_slow_reads",
        "abandoned_actions",
    ),
    Catch(MarginForgetsTheWait("margin_forgets_the_wait"), "slow_unknown_reads", "abandoned_actions"),
    Catch(CaughtUpFromSend("caught_up_from_send"), "durable_window_lagging_read", "duplicate_effects"),
    Catch(
        ConnectorCaughtUpFromSend("connector_caught_up_from_send"),
        "connector_forgotten_late_job_short_window",
        "duplicate_effects",
    ),
    Catch(SkipsUnknownSent("skips_unknown_sent"), "crash_original_short_window_lagging", "duplicate_effects"),
    # Hidden (found only by exploring newer_write_held at depth 2) until quiet_just_before_deadline was shipped.
    # quiet_just_before_deadline caught it until reconcile revision 13, whose margin covers each round trip as long as
    # the worker waits for it; exploring every template at depth 2 then found it where a retry leaves late.
    Catch(EscalatesAtTheDeadline("escalates_at_the_deadline"), "retry_send_outlasts_deadline", "abandoned_actions"),
    # Found by mutating the safe policies and exploring the survivors at depth 1 (tests/MUTANTS.md, twenty-sixth
    # pass): each passed every other shipped case.
    Catch(
        ReachedByFirstAttempt("reached_by_first_attempt"),
        "bridge_second_error_lagging_verify",
        "retries_after_uncertain",
    ),
    Catch(
        WaitsForReadsPastMargin("waits_for_reads_past_margin"), "connector_started_lagging_lookup", "abandoned_actions"
    ),
    # From an adversarial review (stop 55): each passed every shipped case until its scenario was shipped.
    Catch(HoldAccountsForAction("hold_accounts_for_action"), "step_budget_after_cancel", "abandoned_actions"),
    Catch(
        ConnectorAnswerAsTargetRead("connector_answer_as_target_read"),
        "connector_forgotten_job_window_passed",
        "duplicate_effects",
    ),
    # From its second round: each passed every shipped case until its scenario was shipped.
    Catch(
        LatestJobSinceFirstSend("latest_job_since_first_send"), "connector_new_operation_delayed", "duplicate_effects"
    ),
    Catch(VerificationReadsLive("verification_reads_live"), "bridge_cancel_late_original_lagging", "false_records"),
    # Hidden (found only by exploring connector_crash_points at depth 1) until connector_new_operation_delayed.
    Catch(FollowsStaleJob("follows_stale_job"), "connector_new_operation_delayed", "duplicate_effects"),
    # From an adversarial review (stop 56): time as a limit of its own, beside the command budget.
    Catch(RetriesWithSecondsLeft("retries_with_seconds_left"), "retry_with_seconds_left", "abandoned_actions"),
    Catch(ReadsWithSecondsLeft("reads_with_seconds_left"), "read_with_seconds_left", "abandoned_actions"),
    # From its second round: a read right after another round trip is no better guarded than a first one.
    Catch(FirstReadOnlyGuarded("first_read_only_guarded"), "read_after_retry_reply_waited_out", "abandoned_actions"),
    # From a review of the other properties (stop 56): each passed every shipped case until its scenario shipped.
    Catch(
        ClaimsFirstRetryOnly("claims_first_retry_only"), "cancel_while_second_retry_leaves", "unauthorized_dispatches"
    ),
    Catch(
        SupersededAbsentAtOnce("superseded_absent_at_once"), "newer_write_released_by_false_absence", "false_records"
    ),
    Catch(ExpiredAbsentAtOnce("expired_absent_at_once"), "approval_expired_late_original", "false_records"),
    # Found by exploring rejected_reply_lost (two workers, a slow ledger write), then shipped as its scenario.
    Catch(RejectionsUnguarded("rejections_unguarded"), "rejected_reply_lost_racing_writers", "duplicate_records"),
    # From an adversarial review (stop 57): each passed every shipped case, and exploration at depth 2, until its
    # scenario shipped. The window's variant is the three safe policies' own rule before it was found.
    Catch(WindowFromRetryOnly("window_from_retry_only"), "retry_late_past_original_window", "duplicate_effects"),
    # Its second round: the retry's arrival bounded from the decision, not from when the worker sends it.
    Catch(WindowFromDecision("window_from_decision"), "retry_sent_late_past_unseen_window", "duplicate_effects"),
    # Its third round: the lease dated from the decision; it passed every other shipped case and exploration.
    Catch(LeaseFromDecision("lease_from_decision"), "lease_dated_by_the_read", "duplicate_effects"),
    # Its third round too: the margin held when a retry is decided, not when it leaves (the three safe policies'
    # own rule until stop 58, which leased every same-key retry to the deadline less the margin).
    Catch(MarginAtDecisionOnly("margin_at_decision_only"), "retry_leaves_after_margin", "abandoned_actions"),
    # A fourth round (stop 58): each passed every other shipped case and exploration at depth 2.
    Catch(ReachedByTheClock("reached_by_the_clock"), "original_expires_while_read_returns", "duplicate_effects"),
    Catch(NewKeyUnguarded("new_key_unguarded"), "connector_new_operation_with_seconds_left", "abandoned_actions"),
    # The same round found the world could not send a bridge's error ahead of its call; once it could, the three
    # safe policies applied m7 twice there (fixed in reconcile revision 11), and this is their rule before.
    Catch(BridgeErrorBounds("bridge_error_bounds"), "bridge_error_before_call_lands", "duplicate_effects"),
    # Masked from reconcile revision 11 (a bridge's connection error bounds nothing, so the reads catch up with
    # the call a whole request validity after it was sent) until a read's answer could be slow on its way back
    # (``read_answer_delayed``): only then does the clock at which the answer arrives differ from when the read
    # was made by more than a read's round trip.
    Catch(CaughtUpByClock("caught_up_by_clock"), "bridge_error_slow_read_answer", "retries_after_uncertain"),
    # Found by exploring the safe policies once a read's answer could be slow (reconcile revision 12).
    Catch(SettlesOnEarlierRead("settles_on_earlier_read"), "bridge_error_after_read_sent", "retries_after_uncertain"),
    Catch(ComparesDigestNotModel("compares_digest_not_model"), "aliased_receipt", "mismatched_records"),
    Catch(FollowNotARead("follow_not_a_read"), "connector_follow_with_seconds_left", "abandoned_actions"),
    # From a later judge-the-judge hunt: no shipped case had a safe policy's retry answered "in progress" (the original
    # landing, still pending, between the absent read and the retry), so it passed every shipped case and
    # exploration at depth 1 until its scenario shipped.
    Catch(InProgressAsNoEffect("in_progress_as_no_effect"), "in_progress_after_absence", "false_records"),
    # The same hunt: no shipped case had a safe policy spend its retries, so the branch after them was never run.
    Catch(SpentRetriesAsAbsence("spent_retries_as_absence"), "retries_spent_last_one_late", "false_records"),
    # Found by exploring a patient reader near the deadline (reconcile revision 13): the margin covered a round trip
    # only while the worker's timeouts were short; a policy is now told them (Situation.patience).
    Catch(ReadMarginFixed("read_margin_fixed"), "bridge_slow_read_near_deadline", "abandoned_actions"),
    Catch(RetryMarginFixed("retry_margin_fixed"), "retry_reply_outlasts_margin", "abandoned_actions"),
    Catch(LeaseForgetsReplyWait("lease_forgets_reply_wait"), "retry_leaves_inside_reply_wait", "abandoned_actions"),
    Catch(
        FollowPatienceWithoutWait("follow_patience_without_wait"),
        "connector_follow_outlasts_margin",
        "abandoned_actions",
    ),
    # A sixth adversarial review: no shipped case had a read's answer come back after the moment a retry resting on
    # an unseen request's window had to leave by, so it passed every shipped case and exploration at depth 1.
    Catch(InsideWindowAtRead("inside_window_at_read"), "slow_read_answer_past_lease", "duplicate_effects"),
    # The same review found follow_and_inspect itself abandoning the action there (fixed in revision 11): only a
    # same-key retry carried a lease, and this is its rule before.
    Catch(NewKeyUnleased("new_key_unleased"), "connector_new_operation_leaves_late", "abandoned_actions"),
    # The same review: its scenario first showed the checker judging a read by when its answer arrived, not by when
    # the target gave it (a false positive against the safe policies, found by exploring them; mended).
    # Passed every shipped case while a misrouted lookup could only answer "applied" (lookup_foreign_receipt's status).
    Catch(ComparesAppliedOnly("compares_applied_only"), "foreign_refusal_after_lost_reply", "false_records"),
    Catch(
        VerifyComparesAppliedOnly("compares_applied_only"), "foreign_refusal_after_lost_request", "mismatched_records"
    ),
    Catch(
        ToldFromFirstUncertain("told_from_first_uncertain"),
        "bridge_second_error_after_read_sent",
        "retries_after_uncertain",
    ),
    # A seventh adversarial review (one-change misuses of Situation.patience): each passed every shipped case and
    # exploration of every template at depth 1; no shipped case had a read after a wait, or a first read, with a
    # patient reader's whole wait (and not more) left before the deadline.
    Catch(WaitForgetsReadPatience("wait_forgets_read_patience"), "quiet_before_a_patient_read", "abandoned_actions"),
    Catch(RoundTripLessActSecond("round_trip_less_act_second"), "first_read_inside_its_wait", "abandoned_actions"),
    # An adversarial review of operator events: no shipped case had a fencing destination with an
    # approval that expires, so each passed every shipped case and exploration at depth 2 of the fencing and expiry
    # templates (exploration adds faults and operator events, never the contract's fencing or an expiry).
    Catch(
        FencedFinalOnceCaughtUp("fenced_final_once_caught_up"),
        "fenced_expired_approval_lagging_lookup",
        "false_records",
    ),
    Catch(
        FencedExpiryIgnoresLag("fenced_expiry_ignores_lag"), "fenced_expired_approval_lagging_lookup", "false_records"
    ),
    Catch(
        FencedExpiryFinalByClock("fenced_expiry_final_by_clock"), "fenced_expiry_read_answered_after", "false_records"
    ),
    # The same review: no shipped case had a refusal of a superseded action. Exploring rejected_reply_lost at depth 1
    # adds a task change before the lookup and finds it (as rejections_unguarded was found), then shipped as its case.
    Catch(
        SupersededRefusalAsAbsent("superseded_refusal_as_absent"), "rejected_reply_lost_after_change", "false_records"
    ),
    # An adversarial review of racing recoverers: no shipped case had a recovering worker's claim refused by
    # another worker's attempt while that attempt was still on its way to the target (each racing case's winning
    # attempt landed, or was recorded, before the loser decided again), nor two workers recovering through a
    # connector; each passed every shipped case until its scenario shipped.
    Catch(QuietFromOwnAttempts("quiet_from_own_attempts"), "racing_recoverers_retry_delayed", "duplicate_effects"),
    Catch(
        FollowQuietFromOwnAttempts("quiet_from_own_attempts"), "racing_recoverers_retry_delayed", "duplicate_effects"
    ),
    Catch(
        VerifyQuietFromOwnAttempts("quiet_from_own_attempts"), "racing_recoverers_retry_delayed", "duplicate_effects"
    ),
    Catch(ClaimsAgainAfterRace("claims_again_after_race"), "racing_recoverers_retry_delayed", "duplicate_effects"),
    Catch(
        FollowClaimsAgainAfterRace("claims_again_after_race"), "racing_recoverers_retry_delayed", "duplicate_effects"
    ),
    Catch(
        VerifyClaimsAgainAfterRace("claims_again_after_race"), "racing_recoverers_retry_delayed", "duplicate_effects"
    ),
    Catch(
        LatestJobSinceOwnSend("latest_job_since_own_send"),
        "racing_recoverers_new_operation_delayed",
        "duplicate_effects",
    ),
    # follow_and_inspect revision 11, as exploration found it once a read's answer was tried slow but in time: no
    # shipped case had a follow's answer reach its worker after another worker's new operation left.
    Catch(
        LatestJobAnsweredSinceSend("latest_job_answered_since_send"),
        "connector_follow_answered_after_new_operation",
        "duplicate_effects",
    ),
)


#: Variants whose bug the correct policy no longer lets matter, each with the scenario that caught it before: there,
#: it is now judged as the correct policy is (were one caught again, it would move back to CORPUS). Since
#: reconcile revision 6 every retry waits for a read as of after the last moment the target could accept the
#: attempt (request validity after its send): how a dead job's death is dated adds nothing to that. Exploring
#: every connector scenario at depth 2 with both (75,735 schedules) found nothing either.
MASKED: tuple[Catch, ...] = (
    # Masked since reconcile revision 12 (only a read sent since an uncertain reply settles it): where they were
    # caught, the read they kept using was sent before the later attempt and so before its do-not-replay error,
    # which now makes it stale by itself. A later attempt answered quickly with anything else leaves nothing unsafe
    # to do on the older read; exploring every shipped template at depth 2 (685,103 schedules) finds nothing.
    Catch(
        TrustsReadBeforeRetry("trusts_read_before_retry"), "bridge_second_connection_error", "retries_after_uncertain"
    ),
    Catch(
        TrustsVerificationBeforeRetry("trusts_verification_before_retry"),
        "bridge_second_connection_error",
        "retries_after_uncertain",
    ),
    Catch(DatesDeathFromSend("dates_death_from_send"), "connector_dead_job_lag_before_effect", "duplicate_effects"),
    Catch(DeathIgnoresLag("death_ignores_lag"), "connector_dead_job_lag_before_effect", "duplicate_effects"),
    # Masked by the world, not the policy: its retry, decided on an old read, left after the other worker's
    # escalation and voided it; a claim is now refused once the action is escalated (an adversarial review's
    # second round), and exploring four racing-worker templates at depth 2 (25,710 schedules) finds nothing.
    Catch(FreshFromOwnAttempt("fresh_from_own_attempt"), "racing_recoverers_foreign_receipt", "abandoned_actions"),
)


#: Variants that spin (ask again for a refused claim, wake short of the moment they wait for, read again behind
#: a lagging target) until their command budget's last command: caught here through ``abandoned_actions`` until
#: the correct policy's last command became an escalation (reconcile revision 7, from a scenario author's
#: review). They now end escalated where the correct policy ends correct: wasteful, never unsafe, so no property
#: is false; the measures show the spin (``refusals``, ``reads``). Were a shipped case to catch one again, it
#: would move back to CORPUS.
SPENT: tuple[Catch, ...] = (
    Catch(RepeatsRefusedClaims("repeats_refused_claims"), "newer_write_held", "abandoned_actions"),
    Catch(WakesShortOfFinal("wakes_short_of_final"), "connector_unstarted_lagging_lookup", "abandoned_actions"),
    Catch(CaughtUpAtReach("caught_up_at_reach"), "lost_reply_long_lag", "abandoned_actions"),
)


@dataclass(frozen=True)
class Hidden:
    """A variant no shipped schedule shows, and where exploration finds one that does: the template, the
    depth it takes, and the property whose verdict is false."""

    policy: ReconcileAndReauthorize
    template: str
    depth: int
    property: str


HIDDEN: tuple[Hidden, ...] = (
    Hidden(AssumesRequestsExpire("assumes_requests_expire"), "no_dedupe_flaky_lookup", 2, "duplicate_effects"),
)

#: Variants that differ from the correct policy only where a request reaches the target later than the simulator
#: can make it: its device connector hands a job to the target in the instant it starts it, so every request a
#: connector answered had reached the target by its reply, and a dead job's request had by its death. No
#: scenario can catch them through a safety property (exploring every connector scenario at depth 2, and every
#: scenario at depth 1, found none); a unit test of the decision tells each from the correct policy
#: (``tests/test_buggy_policies.py``). Were a shipped case to catch one, it would move to CORPUS.
UNSEEN: tuple[ReconcileAndReauthorize, ...] = (
    ConnectorReplyBounds("connector_reply_bounds"),
    NoValidityReachedBySend("no_validity_reached_by_send"),
)

_BY_NAME = {v.policy.name: v.policy for v in (*CORPUS, *MASKED, *SPENT, *HIDDEN)} | {v.name: v for v in UNSEEN}


def __getattr__(name: str) -> ReconcileAndReauthorize:
    """``buggy_policies:<variant name>`` loads a variant, for ``harness run`` and ``harness explore``."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise AttributeError(name) from None
