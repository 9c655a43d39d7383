"""One-change buggy variants of reconcile_and_reauthorize: the bugs real implementers write (kept for tests only).

Each variant changes one decision of the correct policy. ``CORPUS`` names, for each, the shipped scenario
that must catch it and the safety property through which the checker must catch it.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.policy import (
    Command,
    Escalate,
    LookUp,
    Receipt,
    RecordAbsent,
    RecordEffect,
    RetryNewKey,
    RetrySameAction,
    Situation,
    Stop,
    Wait,
)
from policies.reconcile_and_reauthorize import ReconcileAndReauthorize


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
        return receipt.idempotency_key == situation.action.idempotency_key


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

    def decide(self, situation: Situation) -> Command:
        command = super().decide(situation)
        return command.model_copy(update={"guarded": False}) if isinstance(command, RecordEffect) else command


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


@dataclass(frozen=True)
class Catch:
    """Where a variant must be caught: the scenario, and the property whose verdict must be false."""

    policy: ReconcileAndReauthorize
    scenario: str
    property: str


CORPUS: tuple[Catch, ...] = (
    Catch(NeverEscalates("never_escalates"), "uncertain_lookup", "abandoned_actions"),
    Catch(TrustsAnyReceipt("trusts_any_receipt"), "foreign_receipt", "mismatched_records"),
    Catch(ComparesKeyOnly("compares_key_only"), "foreign_receipt", "mismatched_records"),
    Catch(WindowAtRetryOnly("window_at_retry_only"), "late_original_past_window", "duplicate_effects"),
    Catch(RecordsAbsenceAtOnce("records_absence_at_once"), "absent_then_late_original", "false_records"),
    Catch(IgnoresLookupLag("ignores_lookup_lag"), "stale_lookup_after_cancel", "false_records"),
    Catch(RetriesWithoutClaim("retries_without_claim"), "newer_write_held", "unauthorized_dispatches"),
    Catch(RepeatsRefusedClaims("repeats_refused_claims"), "newer_write_held", "abandoned_actions"),
    Catch(WritesUnguarded("writes_unguarded"), "two_recoverers", "duplicate_records"),
    Catch(RetriesUnderNewKey("retries_under_new_key"), "late_original_in_window", "duplicate_effects"),
    Catch(GivesUpWhenHeld("gives_up_when_held"), "fenced_late_original", "abandoned_actions"),
    Catch(AssumesDurableDedupe("assumes_durable_dedupe"), "late_original_no_dedupe", "duplicate_effects"),
)
