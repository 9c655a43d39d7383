"""The expected consequences of every shipped scenario, as the checker derives them from evidence.

Nothing here reads what the worker claimed or the simulator's ground truth: each assertion is about metrics
the checker computed from the history. The seeds vary latencies; the consequences must hold for each.
"""

from __future__ import annotations

import pytest
from conftest import shipped

from harness.check import Judgement, check
from harness.model.events import ReplyReceived
from harness.policy import load_policy
from harness.sim import simulate

SEEDS = (1, 2, 3, 17)


def judge(policy: str, scenario: str, seed: int) -> Judgement:
    return check(simulate(shipped(scenario), load_policy(policy), seed).evidence)


@pytest.mark.parametrize("seed", SEEDS)
class TestLostResponse:
    def test_stop_leaves_it_unresolved(self, seed: int) -> None:
        """Giving up leaves the applied effect unaccounted for, without duplicating it."""
        j = judge("stop_on_timeout", "lost_response", seed)
        assert (j.metrics["unresolved_actions"], j.metrics["duplicate_effects"], j.outcome) == (1, 0, "unresolved")

    def test_same_key_retry_is_deduplicated(self, seed: int) -> None:
        """A same-key retry inside the window completes the task with no duplicate effect."""
        j = judge("retry_same_key", "lost_response", seed)
        assert j.metrics["task_completed"] is True and j.metrics["duplicate_effects"] == 0

    def test_reconcile_completes_from_the_lookup(self, seed: int) -> None:
        """Reconciling completes the task from the looked-up receipt after a single dispatch."""
        j = judge("reconcile_and_reauthorize", "lost_response", seed)
        assert j.metrics["task_completed"] is True and j.metrics["dispatches"] == 1 and j.outcome == "correct"

    def test_new_key_duplicates(self, seed: int) -> None:
        """A retry under a new key applies the effect twice."""
        j = judge("retry_new_key", "lost_response", seed)
        assert j.metrics["duplicate_effects"] >= 1 and j.outcome == "incorrect"  # type: ignore[operator]


@pytest.mark.parametrize("seed", SEEDS)
class TestChangedTask:
    def test_stop_leaves_revision_18_incomplete(self, seed: int) -> None:
        """Giving up completes nothing and leaves a73 unresolved."""
        j = judge("stop_on_timeout", "changed_task", seed)
        assert j.metrics["task_completed"] is False and j.outcome == "unresolved"

    def test_same_key_retry_acts_without_authority(self, seed: int) -> None:
        """A blind retry after the revision changed is unauthorized or completes the wrong revision."""
        j = judge("retry_same_key", "changed_task", seed)
        assert j.metrics["unauthorized_dispatches"] or j.metrics["wrong_revision_completions"]
        assert j.outcome == "incorrect"

    def test_reconcile_records_history_and_leaves_18_awaiting(self, seed: int) -> None:
        """m7 is recorded as a historical effect; revision 18 is not completed; nothing unauthorized happens."""
        result = simulate(shipped("changed_task"), load_policy("reconcile_and_reauthorize"), seed)
        j = check(result.evidence)
        m = j.metrics
        assert (m["unauthorized_dispatches"], m["wrong_revision_completions"], m["unresolved_actions"]) == (0, 0, 0)
        assert m["task_completed"] is False and j.outcome == "correct"
        events = [(e.actor, e.event) for e in result.evidence.history]
        assert ("controller", "effect_recorded") in events and ("controller", "task_completed") not in events
        assert ("controller", "cancel_requested") in events

    def test_new_key_is_incorrect(self, seed: int) -> None:
        """Retrying under a new key after the change is incorrect."""
        assert judge("retry_new_key", "changed_task", seed).outcome == "incorrect"


@pytest.mark.parametrize("seed", SEEDS)
class TestCancelInflight:
    def test_stop_is_unresolved(self, seed: int) -> None:
        """Giving up leaves the in-flight effect unaccounted for."""
        assert judge("stop_on_timeout", "cancel_inflight", seed).outcome == "unresolved"

    def test_same_key_retry_dispatches_after_cancel(self, seed: int) -> None:
        """A blind retry after the cancellation is an unauthorized dispatch."""
        j = judge("retry_same_key", "cancel_inflight", seed)
        assert j.metrics["unauthorized_dispatches"] >= 1 and j.outcome == "incorrect"  # type: ignore[operator]

    def test_reconcile_accounts_without_dispatching(self, seed: int) -> None:
        """Reconciling sends nothing after the cancellation and accounts for the effect."""
        j = judge("reconcile_and_reauthorize", "cancel_inflight", seed)
        m = j.metrics
        assert (m["unauthorized_dispatches"], m["effects_after_cancel"], m["unresolved_actions"]) == (0, 0, 0)
        assert j.outcome == "correct"

    def test_new_key_applies_after_cancel(self, seed: int) -> None:
        """A new-key retry after the cancellation causes a new effect."""
        j = judge("retry_new_key", "cancel_inflight", seed)
        assert j.metrics["effects_after_cancel"] >= 1 and j.outcome == "incorrect"  # type: ignore[operator]


@pytest.mark.parametrize("seed", SEEDS)
class TestDuplicateReceipt:
    @pytest.mark.parametrize("policy", ["stop_on_timeout", "retry_same_key", "reconcile_and_reauthorize"])
    def test_receipt_recorded_at_most_once(self, policy: str, seed: int) -> None:
        """The receipt seen by the late reply and by recovery is never recorded twice."""
        j = judge(policy, "duplicate_receipt", seed)
        assert j.metrics["duplicate_records"] == 0
        if policy != "stop_on_timeout":
            assert j.metrics["duplicate_effects"] == 0

    def test_reconcile_is_correct(self, seed: int) -> None:
        """Reconciling records the receipt once and is correct."""
        assert judge("reconcile_and_reauthorize", "duplicate_receipt", seed).outcome == "correct"

    def test_reconcile_saw_the_receipt_twice(self, seed: int) -> None:
        """The late reply did reach the recovering worker before it recorded: the duplicate observation is real."""
        ev = simulate(shipped("duplicate_receipt"), load_policy("reconcile_and_reauthorize"), seed).evidence
        receives = [e for e in ev.history if isinstance(e, ReplyReceived) and e.receipt_id == "r1"]
        record = next(e for e in ev.history if e.event == "effect_recorded")
        assert len([e for e in receives if e.index < record.index]) == 2

    def test_new_key_duplicates(self, seed: int) -> None:
        """A new-key retry applies the effect twice."""
        assert judge("retry_new_key", "duplicate_receipt", seed).metrics["duplicate_effects"] >= 1  # type: ignore[operator]


@pytest.mark.parametrize("seed", SEEDS)
class TestUncertainLookup:
    def test_stop_dispatched_once(self, seed: int) -> None:
        """One dispatch proves at most one effect even without the ledger; the action stays unresolved."""
        j = judge("stop_on_timeout", "uncertain_lookup", seed)
        assert j.metrics["duplicate_effects"] == 0 and j.outcome == "unresolved"

    @pytest.mark.parametrize("policy", ["retry_same_key", "retry_new_key"])
    def test_blind_retries_make_duplicates_unknown(self, policy: str, seed: int) -> None:
        """Several dispatches with no ledger to read: the duplicate count is null with a reason, never 0."""
        j = judge(policy, "uncertain_lookup", seed)
        assert j.metrics["duplicate_effects"] is None and "unavailable" in j.unknown["duplicate_effects"]
        assert j.verdict == "unknown"

    def test_reconcile_escalates_before_the_deadline(self, seed: int) -> None:
        """Reconciling dispatches once, stays unresolved, and escalates to the owner before the deadline."""
        result = simulate(shipped("uncertain_lookup"), load_policy("reconcile_and_reauthorize"), seed)
        j = check(result.evidence)
        m = j.metrics
        assert (m["dispatches"], m["duplicate_effects"], j.outcome) == (1, 0, "unresolved")
        escalated = [e for e in result.evidence.history if e.event == "escalated"]
        assert escalated and escalated[0].at_s < result.evidence.recovery_deadline_s
