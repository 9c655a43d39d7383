"""The expected outcome of every shipped policy in every shipped scenario, as the checker derives it from evidence.

Each cell states the outcome and exactly which safety properties are violated, for every seed below. Nothing
here reads what the worker claimed or the auditor's ground truth: each assertion is about what the checker
concluded from the history. The seeds vary latencies; the consequences must hold for each.
"""

from __future__ import annotations

import pytest
from conftest import shipped

from harness.check import Judgement, check
from harness.model.events import (
    AbsenceRecorded,
    ApprovalRevoked,
    ClaimDecided,
    DispatchSent,
    EffectRecorded,
    Escalated,
    RecordRepeated,
    ReplyReceived,
    RequestRefused,
    TaskCompleted,
)
from harness.policy import (
    Command,
    RecordEffect,
    ResendCurrentArguments,
    Situation,
    Stop,
    builtin_policy_names,
    load_policy,
)
from harness.scenario import list_scenarios, scenario_cases
from harness.sim import SimResult, simulate

SEEDS = (1, 2, 3, 17)
POLICIES = {
    "stop": "stop_on_timeout",
    "same_key": "retry_same_key",
    "reconcile": "reconcile_and_reauthorize",
    "new_key": "retry_new_key",
    "follow": "follow_and_inspect",
    "verify": "verify_before_mutation",
}

#: scenario -> policy -> (outcome, the safety properties whose verdict is false)
Cell = tuple[str, set[str]]
#: Per case, per policy: the outcome and the violated properties (per seed where the seed decides).
EXPECTED: dict[str, dict[str, Cell | dict[int, Cell]]] = {
    "absent_then_late_original": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("correct", set()),
        reconcile=("correct", set()),
        new_key=("incorrect", {"duplicate_effects"}),
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    "aliased_receipt": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("correct", set()),
        reconcile=("escalated", set()),
        new_key=("incorrect", {"duplicate_effects"}),
        follow=("escalated", set()),
        verify=("escalated", set()),
    ),
    "approval_expired_before_dispatch": dict(
        stop=("correct", set()),
        same_key=("correct", set()),
        reconcile=("correct", set()),
        new_key=("correct", set()),
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    "approval_expired_late_original": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("incorrect", {"unauthorized_dispatches"}),
        reconcile=("correct", set()),
        new_key=("incorrect", {"duplicate_effects", "unauthorized_dispatches"}),
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    "bridge_blocked_after_uncertain": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("incorrect", {"abandoned_actions", "retries_after_uncertain"}),
        reconcile=("correct", set()),
        new_key=("incorrect", {"abandoned_actions", "retries_after_uncertain"}),
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    "bridge_error_after_forward": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("incorrect", {"retries_after_uncertain"}),
        reconcile=("correct", set()),
        new_key=("incorrect", {"duplicate_effects", "retries_after_uncertain"}),
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    "bridge_error_before_call_lands": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("incorrect", {"duplicate_effects", "retries_after_uncertain"}),
        reconcile=("correct", set()),
        new_key=("incorrect", {"duplicate_effects", "retries_after_uncertain"}),
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    "bridge_error_after_read_sent": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("correct", set()),
        reconcile=("correct", set()),
        new_key=("incorrect", {"duplicate_effects"}),
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    "bridge_error_slow_read_answer": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("incorrect", {"retries_after_uncertain"}),
        reconcile=("correct", set()),
        new_key=("incorrect", {"duplicate_effects", "retries_after_uncertain"}),
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    "bridge_error_before_forward": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("incorrect", {"retries_after_uncertain"}),
        reconcile=("correct", set()),
        new_key=("incorrect", {"retries_after_uncertain"}),
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    "bridge_error_lagging_verify": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("incorrect", {"retries_after_uncertain"}),
        reconcile=("correct", set()),
        new_key=("incorrect", {"duplicate_effects", "retries_after_uncertain"}),
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    "bridge_late_forward_lagging_verify": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("correct", set()),
        reconcile=("correct", set()),
        new_key=("incorrect", {"duplicate_effects"}),
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    "bridge_late_original_new_uuid": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("correct", set()),
        reconcile=("correct", set()),
        new_key=("incorrect", {"duplicate_effects"}),
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    "bridge_newer_write_held": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("incorrect", {"unauthorized_dispatches"}),
        reconcile=("correct", set()),
        new_key=("incorrect", {"duplicate_effects", "unauthorized_dispatches"}),
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    "bridge_refuted_after_restart": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("incorrect", {"duplicate_effects", "retries_after_uncertain"}),
        reconcile=("escalated", set()),
        new_key=("incorrect", {"duplicate_effects", "retries_after_uncertain"}),
        follow=("escalated", set()),
        verify=("escalated", set()),
    ),
    "bridge_restart_forgets_receipts": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("incorrect", {"duplicate_effects", "retries_after_uncertain"}),
        reconcile=("correct", set()),
        new_key=("incorrect", {"duplicate_effects", "retries_after_uncertain"}),
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    "bridge_restart_late_original": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("incorrect", {"duplicate_effects"}),
        reconcile=("correct", set()),
        new_key=("incorrect", {"duplicate_effects"}),
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    "bridge_second_connection_error": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("incorrect", {"retries_after_uncertain"}),
        reconcile=("correct", set()),
        new_key=("incorrect", {"duplicate_effects", "retries_after_uncertain"}),
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    "bridge_second_error_lagging_verify": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("incorrect", {"retries_after_uncertain"}),
        # Correct until reconcile revision 11: the second call's connection error bounds nothing of when it
        # lands, so the reads catch up with it 60 s (its request validity) and 20 s (their lag) after it was sent,
        # too close to the deadline to wait for.
        reconcile=("escalated", set()),
        new_key=("incorrect", {"duplicate_effects", "retries_after_uncertain"}),
        follow=("escalated", set()),
        verify=("escalated", set()),
    ),
    "bridge_user_stop": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("incorrect", {"retries_after_uncertain", "unauthorized_dispatches"}),
        reconcile=("correct", set()),
        new_key=(
            "incorrect",
            {"duplicate_effects", "effects_after_cancel", "retries_after_uncertain", "unauthorized_dispatches"},
        ),
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    "bridge_verify_times_out": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("incorrect", {"retries_after_uncertain"}),
        reconcile=("correct", set()),
        new_key=("incorrect", {"duplicate_effects", "retries_after_uncertain"}),
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    "cancel_before_dispatch": dict(
        stop=("correct", set()),
        same_key=("correct", set()),
        reconcile=("correct", set()),
        new_key=("correct", set()),
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    "cancel_inflight": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("incorrect", {"unauthorized_dispatches"}),
        reconcile=("correct", set()),
        new_key=("incorrect", {"duplicate_effects", "effects_after_cancel", "unauthorized_dispatches"}),
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    "changed_task": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("incorrect", {"unauthorized_dispatches"}),
        reconcile=("correct", set()),
        new_key=("incorrect", {"duplicate_effects", "effects_after_cancel", "unauthorized_dispatches"}),
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    "conflict_rejected": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("incorrect", {"unauthorized_dispatches"}),
        reconcile=("correct", set()),
        new_key=("incorrect", {"duplicate_effects", "unauthorized_dispatches"}),
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    "conflict_replayed": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("incorrect", {"unauthorized_dispatches"}),
        reconcile=("correct", set()),
        new_key=("incorrect", {"duplicate_effects", "unauthorized_dispatches"}),
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    "connector_crash_points@before_started": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("correct", set()),
        reconcile=("correct", set()),
        new_key=("correct", set()),
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    "connector_crash_points@after_started": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("incorrect", {"abandoned_actions", "retries_after_uncertain"}),
        reconcile=("escalated", set()),
        new_key=("correct", set()),
        follow=("correct", set()),
        verify=("escalated", set()),
    ),
    "connector_crash_points@after_effect": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("incorrect", {"abandoned_actions", "retries_after_uncertain"}),
        reconcile=("correct", set()),
        new_key=("incorrect", {"duplicate_effects"}),
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    "connector_crash_points@after_completed": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("correct", set()),
        reconcile=("correct", set()),
        new_key=("incorrect", {"duplicate_effects"}),
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    "connector_crash_while_running": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("abandoned", {"abandoned_actions"}),
        reconcile=("correct", set()),
        new_key=("incorrect", {"abandoned_actions", "duplicate_effects"}),
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    "connector_dead_job_lag_before_effect": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("incorrect", {"abandoned_actions", "retries_after_uncertain"}),
        reconcile=("correct", set()),
        new_key=("incorrect", {"duplicate_effects"}),
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    "connector_dead_job_lagging_lookup": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("incorrect", {"abandoned_actions", "retries_after_uncertain"}),
        reconcile=("correct", set()),
        new_key=("incorrect", {"duplicate_effects"}),
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    # A retry takes a second to leave after it is decided, and the task is cancelled in between: a claim made as
    # it leaves is refused; the blind policies claim nothing, and send it after the cancellation.
    "cancel_while_retry_leaves": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("incorrect", {"effects_after_cancel", "unauthorized_dispatches"}),
        reconcile=("correct", set()),
        new_key=("incorrect", {"effects_after_cancel", "unauthorized_dispatches"}),
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    "cancel_while_second_retry_leaves": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("correct", set()),
        reconcile=("correct", set()),
        new_key=("correct", set()),
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    # The same after a dead job: only follow sends a new operation, and its claim is refused as it leaves.
    "connector_cancel_while_new_operation_leaves": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("incorrect", {"abandoned_actions", "retries_after_uncertain", "unauthorized_dispatches"}),
        reconcile=("correct", set()),
        new_key=("correct", set()),
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    "connector_down_when_followed": dict(
        stop=("abandoned", {"abandoned_actions"}),
        # The retry sent at 20 s reaches the connector just after its restart (told unknown_outcome, it retries
        # again) or just before it (lost), as the seed's latencies fall.
        same_key={
            1: ("incorrect", {"abandoned_actions", "retries_after_uncertain"}),
            2: ("incorrect", {"abandoned_actions", "retries_after_uncertain"}),
            3: ("abandoned", {"abandoned_actions"}),
            17: ("abandoned", {"abandoned_actions"}),
        },
        reconcile=("escalated", set()),
        new_key=("correct", set()),
        follow=("correct", set()),
        verify=("escalated", set()),
    ),
    "connector_follow_answered_after_new_operation": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("incorrect", {"abandoned_actions", "retries_after_uncertain"}),
        reconcile=("escalated", set()),
        new_key=("incorrect", {"duplicate_effects"}),
        follow=("correct", set()),
        verify=("escalated", set()),
    ),
    "connector_follow_with_seconds_left": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("abandoned", {"abandoned_actions"}),
        reconcile=("escalated", set()),
        new_key=("incorrect", {"abandoned_actions", "duplicate_effects"}),
        follow=("escalated", set()),
        verify=("escalated", set()),
    ),
    "connector_forgotten_late_job_short_window": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key={
            1: ("correct", set()),
            2: ("correct", set()),
            3: ("incorrect", {"duplicate_effects"}),
            17: ("correct", set()),
        },
        reconcile=("correct", set()),
        new_key=("incorrect", {"duplicate_effects"}),
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    "connector_new_operation_pending": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("incorrect", {"abandoned_actions", "retries_after_uncertain"}),
        reconcile=("escalated", set()),
        new_key=("incorrect", {"effects_after_cancel", "unauthorized_dispatches"}),
        follow=("escalated", set()),
        verify=("escalated", set()),
    ),
    "connector_new_operation_with_seconds_left": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("incorrect", {"abandoned_actions", "retries_after_uncertain"}),
        reconcile=("escalated", set()),
        new_key=("incorrect", {"duplicate_effects"}),
        follow=("escalated", set()),
        verify=("escalated", set()),
    ),
    "connector_no_record_yet": dict(
        stop=("abandoned", {"abandoned_actions"}),
        # Whether the late original or the retry reaches the connector first depends on the seed's latencies.
        same_key={
            1: ("incorrect", {"abandoned_actions", "duplicate_effects"}),
            2: ("incorrect", {"abandoned_actions", "duplicate_effects"}),
            3: ("correct", set()),
            17: ("correct", set()),
        },
        reconcile=("correct", set()),
        new_key={
            1: ("incorrect", {"abandoned_actions", "duplicate_effects"}),
            2: ("incorrect", {"abandoned_actions", "duplicate_effects"}),
            3: ("incorrect", {"duplicate_effects"}),
            17: ("incorrect", {"duplicate_effects"}),
        },
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    "connector_started_lagging_lookup": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("incorrect", {"abandoned_actions", "retries_after_uncertain"}),
        reconcile=("escalated", set()),
        new_key=("correct", set()),
        follow=("correct", set()),
        verify=("escalated", set()),
    ),
    "connector_started_not_durable": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("incorrect", {"duplicate_effects"}),
        reconcile=("correct", set()),
        new_key=("incorrect", {"duplicate_effects"}),
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    "connector_unknown_outcome_uninspectable": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("incorrect", {"abandoned_actions", "retries_after_uncertain"}),
        reconcile=("escalated", set()),
        new_key=("incorrect", {"duplicate_effects"}),
        follow=("escalated", set()),
        verify=("escalated", set()),
    ),
    "connector_unstarted_lagging_lookup": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("correct", set()),
        reconcile=("correct", set()),
        new_key=("correct", set()),
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    "connector_wait_expires": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("abandoned", {"abandoned_actions"}),
        reconcile=("correct", set()),
        new_key=("incorrect", {"abandoned_actions", "duplicate_effects"}),
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    "crash_awaiting_delayed_original": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("incorrect", {"duplicate_effects"}),
        reconcile=("correct", set()),
        new_key=("incorrect", {"duplicate_effects"}),
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    "crash_awaiting_reply": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("correct", set()),
        reconcile=("correct", set()),
        new_key=("incorrect", {"duplicate_effects"}),
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    "crash_original_short_window_lagging": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("incorrect", {"duplicate_effects"}),
        reconcile=("correct", set()),
        new_key=("incorrect", {"duplicate_effects"}),
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    "dedupe_forgotten_on_restart": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("incorrect", {"duplicate_effects"}),
        reconcile=("correct", set()),
        new_key=("incorrect", {"duplicate_effects"}),
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    "duplicate_receipt": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("correct", set()),
        reconcile=("correct", set()),
        new_key=("incorrect", {"duplicate_effects"}),
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    "durable_window_lagging_read": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key={
            1: ("incorrect", {"duplicate_effects"}),
            2: ("incorrect", {"duplicate_effects"}),
            3: ("correct", set()),
            17: ("correct", set()),
        },
        reconcile=("correct", set()),
        new_key=("incorrect", {"duplicate_effects"}),
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    "fenced_expired_approval_lagging_lookup": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("incorrect", {"abandoned_actions", "unauthorized_dispatches"}),
        reconcile=("correct", set()),
        new_key=("incorrect", {"abandoned_actions", "unauthorized_dispatches"}),
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    "fenced_expiry_read_answered_after": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("correct", set()),
        reconcile=("correct", set()),
        new_key=("incorrect", {"duplicate_effects"}),
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    "fenced_late_original": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("incorrect", {"abandoned_actions", "unauthorized_dispatches"}),
        reconcile=("correct", set()),
        new_key=("incorrect", {"abandoned_actions", "unauthorized_dispatches"}),
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    "fenced_stale_lookup_after_cancel": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("incorrect", {"abandoned_actions", "unauthorized_dispatches"}),
        reconcile=("escalated", set()),
        new_key=("incorrect", {"abandoned_actions", "unauthorized_dispatches"}),
        follow=("escalated", set()),
        verify=("escalated", set()),
    ),
    "foreign_receipt": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("correct", set()),
        reconcile=("escalated", set()),
        new_key=("incorrect", {"duplicate_effects"}),
        follow=("escalated", set()),
        verify=("escalated", set()),
    ),
    "foreign_receipt_before_arrival": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("correct", set()),
        reconcile=("escalated", set()),
        new_key=("incorrect", {"duplicate_effects"}),
        follow=("escalated", set()),
        verify=("escalated", set()),
    ),
    "foreign_receipt_for_new_revision": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("incorrect", {"unauthorized_dispatches"}),
        reconcile=("escalated", set()),
        new_key=("incorrect", {"duplicate_effects", "unauthorized_dispatches"}),
        follow=("escalated", set()),
        verify=("escalated", set()),
    ),
    "in_progress_after_absence": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("abandoned", {"abandoned_actions"}),
        reconcile=("correct", set()),
        new_key=("incorrect", {"duplicate_effects"}),
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    "in_progress_duplicate": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("abandoned", {"abandoned_actions"}),
        reconcile=("correct", set()),
        new_key=("incorrect", {"duplicate_effects"}),
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    "lagging_absence_in_last_lag": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("incorrect", {"duplicate_effects"}),
        reconcile=("correct", set()),
        new_key=("incorrect", {"duplicate_effects"}),
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    "late_original_after_cancel": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("incorrect", {"effects_after_cancel", "unauthorized_dispatches"}),
        reconcile=("correct", set()),
        new_key=("incorrect", {"duplicate_effects", "effects_after_cancel", "unauthorized_dispatches"}),
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    "late_original_in_window": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("correct", set()),
        reconcile=("correct", set()),
        new_key=("incorrect", {"duplicate_effects"}),
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    "late_original_no_dedupe": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("incorrect", {"duplicate_effects"}),
        reconcile=("correct", set()),
        new_key=("incorrect", {"duplicate_effects"}),
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    "late_original_no_validity": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("incorrect", {"duplicate_effects"}),
        reconcile=("escalated", set()),
        new_key=("incorrect", {"duplicate_effects"}),
        follow=("escalated", set()),
        verify=("escalated", set()),
    ),
    "late_original_past_window": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("incorrect", {"duplicate_effects"}),
        reconcile=("correct", set()),
        new_key=("incorrect", {"duplicate_effects"}),
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    "late_original_rejected_after_absence": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("correct", set()),
        reconcile=("correct", set()),
        new_key=("correct", set()),
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    "lease_dated_by_the_read": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("correct", set()),
        reconcile=("correct", set()),
        new_key=("incorrect", {"duplicate_effects"}),
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    "lost_reply_long_lag": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("correct", set()),
        reconcile=("correct", set()),
        new_key=("incorrect", {"duplicate_effects"}),
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    "lost_response": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("correct", set()),
        reconcile=("correct", set()),
        new_key=("incorrect", {"duplicate_effects"}),
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    "newer_write_held": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("incorrect", {"unauthorized_dispatches"}),
        reconcile=("correct", set()),
        new_key=("incorrect", {"duplicate_effects", "unauthorized_dispatches"}),
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    "newer_write_released_by_false_absence": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("incorrect", {"unauthorized_dispatches"}),
        reconcile=("correct", set()),
        new_key=("incorrect", {"duplicate_effects", "unauthorized_dispatches"}),
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    "no_dedupe_flaky_lookup": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("incorrect", {"duplicate_effects"}),
        reconcile=("correct", set()),
        new_key=("incorrect", {"duplicate_effects"}),
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    "original_expires_while_read_returns": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("incorrect", {"duplicate_effects"}),
        reconcile=("correct", set()),
        new_key=("incorrect", {"duplicate_effects"}),
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    "pending_applies_late": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("abandoned", {"abandoned_actions"}),
        reconcile=("correct", set()),
        new_key=("incorrect", {"duplicate_effects"}),
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    "process_dedupe_late_original": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("incorrect", {"duplicate_effects"}),
        reconcile=("correct", set()),
        new_key=("incorrect", {"duplicate_effects"}),
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    "quiet_at_deadline": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("correct", set()),
        reconcile=("escalated", set()),
        new_key=("correct", set()),
        follow=("escalated", set()),
        verify=("escalated", set()),
    ),
    "quiet_just_before_deadline": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("correct", set()),
        reconcile=("escalated", set()),
        new_key=("correct", set()),
        follow=("escalated", set()),
        verify=("escalated", set()),
    ),
    "quiet_just_before_deadline_slow_reads": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("correct", set()),
        reconcile=("escalated", set()),
        new_key=("correct", set()),
        follow=("escalated", set()),
        verify=("escalated", set()),
    ),
    "racing_recoverers_new_operation_delayed": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("incorrect", {"abandoned_actions", "retries_after_uncertain"}),
        reconcile=("escalated", set()),
        new_key=("incorrect", {"duplicate_effects"}),
        follow=("correct", set()),
        verify=("escalated", set()),
    ),
    "racing_recoverers_no_dedupe": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("incorrect", {"duplicate_effects"}),
        reconcile=("correct", set()),
        new_key=("incorrect", {"duplicate_effects"}),
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    "racing_recoverers_retry_delayed": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("incorrect", {"duplicate_effects"}),
        reconcile=("escalated", set()),
        new_key=("incorrect", {"duplicate_effects"}),
        follow=("escalated", set()),
        verify=("escalated", set()),
    ),
    "racing_recoverers_retry_leaves": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("incorrect", {"duplicate_effects"}),
        reconcile=("correct", set()),
        new_key=("incorrect", {"duplicate_effects"}),
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    "read_with_seconds_left": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("correct", set()),
        reconcile=("escalated", set()),
        new_key=("incorrect", {"duplicate_effects"}),
        follow=("escalated", set()),
        verify=("escalated", set()),
    ),
    "read_after_retry_reply_waited_out": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("correct", set()),
        reconcile=("escalated", set()),
        new_key=("incorrect", {"duplicate_effects"}),
        follow=("escalated", set()),
        verify=("escalated", set()),
    ),
    "read_straddles_quiet": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("incorrect", {"duplicate_effects"}),
        reconcile=("correct", set()),
        new_key=("incorrect", {"duplicate_effects"}),
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    "rebuilt_receipt": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("correct", set()),
        reconcile=("escalated", set()),
        new_key=("incorrect", {"duplicate_effects"}),
        follow=("escalated", set()),
        verify=("escalated", set()),
    ),
    "receipt_under_another_key": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("correct", set()),
        reconcile=("escalated", set()),
        new_key=("incorrect", {"duplicate_effects"}),
        follow=("escalated", set()),
        verify=("escalated", set()),
    ),
    "refused_retry_after_late_original": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key={
            1: ("abandoned", {"abandoned_actions"}),
            2: ("abandoned", {"abandoned_actions"}),
            3: ("correct", set()),
            17: ("correct", set()),
        },
        reconcile=("escalated", set()),
        new_key=("incorrect", {"duplicate_effects"}),
        follow=("escalated", set()),
        verify=("escalated", set()),
    ),
    "rejected_reply_lost": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("correct", set()),
        reconcile=("correct", set()),
        new_key=("correct", set()),
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    "rejected_reply_lost_after_change": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("incorrect", {"unauthorized_dispatches"}),
        reconcile=("correct", set()),
        new_key=("incorrect", {"unauthorized_dispatches"}),
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    "rejected_reply_lost_racing_writers": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("correct", set()),
        reconcile=("correct", set()),
        new_key=("correct", set()),
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    "request_lost": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("correct", set()),
        reconcile=("correct", set()),
        new_key=("correct", set()),
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    "retries_spent_last_one_late": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("correct", set()),
        reconcile=("correct", set()),
        new_key=("incorrect", {"duplicate_effects"}),
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    "retry_delayed_past_window": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("incorrect", {"duplicate_effects"}),
        reconcile=("escalated", set()),
        new_key=("incorrect", {"duplicate_effects"}),
        follow=("escalated", set()),
        verify=("escalated", set()),
    ),
    "retry_leaves_after_margin": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("abandoned", {"abandoned_actions"}),
        reconcile=("escalated", set()),
        new_key=("abandoned", {"abandoned_actions"}),
        follow=("escalated", set()),
        verify=("escalated", set()),
    ),
    "retry_late_past_original_window": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("incorrect", {"duplicate_effects"}),
        reconcile=("correct", set()),
        new_key=("incorrect", {"duplicate_effects"}),
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    "retry_sent_late_past_unseen_window": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("incorrect", {"duplicate_effects"}),
        reconcile=("correct", set()),
        new_key=("incorrect", {"duplicate_effects"}),
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    "retry_with_seconds_left": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("correct", set()),
        reconcile=("escalated", set()),
        new_key=("incorrect", {"duplicate_effects"}),
        follow=("escalated", set()),
        verify=("escalated", set()),
    ),
    "quiet_before_a_patient_read": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("correct", set()),
        reconcile=("escalated", set()),
        new_key=("correct", set()),
        follow=("escalated", set()),
        verify=("escalated", set()),
    ),
    "first_read_inside_its_wait": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("correct", set()),
        reconcile=("escalated", set()),
        new_key=("correct", set()),
        follow=("escalated", set()),
        verify=("escalated", set()),
    ),
    "slow_read_answer_past_lease": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("correct", set()),
        reconcile=("correct", set()),
        new_key=("incorrect", {"duplicate_effects"}),
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    "slow_unknown_reads": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("abandoned", {"abandoned_actions"}),
        reconcile=("escalated", set()),
        new_key=("abandoned", {"abandoned_actions"}),
        follow=("escalated", set()),
        verify=("escalated", set()),
    ),
    "stale_lookup_after_cancel": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("incorrect", {"unauthorized_dispatches"}),
        reconcile=("escalated", set()),
        new_key=("incorrect", {"duplicate_effects", "effects_after_cancel", "unauthorized_dispatches"}),
        follow=("escalated", set()),
        verify=("escalated", set()),
    ),
    "two_recoverers": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("correct", set()),
        reconcile=("correct", set()),
        new_key=("incorrect", {"duplicate_effects"}),
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    "uncertain_lookup": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("abandoned", {"abandoned_actions"}),
        reconcile=("escalated", set()),
        new_key=("abandoned", {"abandoned_actions"}),
        follow=("escalated", set()),
        verify=("escalated", set()),
    ),
    # The ledger hidden: each retry's duplicate is witnessed by two "applied" replies alone.
    "hidden_ledger_late_reply": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("incorrect", {"duplicate_effects"}),
        reconcile=("escalated", set()),
        new_key=("incorrect", {"duplicate_effects"}),
        follow=("escalated", set()),
        verify=("escalated", set()),
    ),
    # Six commands: the safe policies escalate with the last; the retries spend them and leave a73 abandoned.
    "step_budget_while_unsure": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("abandoned", {"abandoned_actions"}),
        reconcile=("escalated", set()),
        new_key=("incorrect", {"abandoned_actions", "duplicate_effects"}),
        follow=("escalated", set()),
        verify=("escalated", set()),
    ),
    # A retry decided on a final read and told "do not replay" on its way out: no retry after an uncertain outcome.
    "bridge_late_error_while_retry_leaves": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("correct", set()),
        reconcile=("escalated", set()),
        new_key=("correct", set()),
        follow=("escalated", set()),
        verify=("escalated", set()),
    ),
    # The connector forgot the job; the target shows the effect, and the key has left the destination's window.
    "connector_forgotten_job_window_passed": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("incorrect", {"duplicate_effects"}),
        reconcile=("correct", set()),
        new_key=("incorrect", {"duplicate_effects"}),
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    # A late call through the bridge, its reply lost, a cancellation, verifications 20 s behind: hold, then absent.
    "bridge_cancel_late_original_lagging": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("incorrect", {"unauthorized_dispatches", "effects_after_cancel"}),
        reconcile=("correct", set()),
        new_key=("incorrect", {"unauthorized_dispatches", "duplicate_effects", "effects_after_cancel"}),
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    # A dead job, then a new operation 30 s on its way while the target shows nothing under its key.
    "connector_new_operation_delayed": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("incorrect", {"retries_after_uncertain", "abandoned_actions"}),
        reconcile=("escalated", set()),
        new_key=("incorrect", {"duplicate_effects"}),
        follow=("correct", set()),
        verify=("escalated", set()),
    ),
    # Two recoverers share a budget of four: one's retry would leave after the other's escalation; its claim is refused.
    "racing_recoverers_budget_spent": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("incorrect", {"unauthorized_dispatches"}),
        reconcile=("escalated", set()),
        new_key=("incorrect", {"duplicate_effects"}),
        follow=("escalated", set()),
        verify=("escalated", set()),
    ),
    # Two recoverers, one escalating on a foreign receipt while the other's retry would leave.
    "racing_recoverers_foreign_receipt": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("incorrect", {"unauthorized_dispatches"}),
        reconcile=("escalated", set()),
        new_key=("incorrect", {"duplicate_effects"}),
        follow=("escalated", set()),
        verify=("escalated", set()),
    ),
    # Two commands, dispatch no longer authorized: the safe policies escalate with the second instead of holding.
    "step_budget_after_cancel": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("incorrect", {"effects_after_cancel", "unauthorized_dispatches"}),
        reconcile=("escalated", set()),
        new_key=("incorrect", {"effects_after_cancel", "unauthorized_dispatches"}),
        follow=("escalated", set()),
        verify=("escalated", set()),
    ),
    # A worker that waits longer for an answer than the escalation margin, or a retry that leaves late: the safe
    # policies escalate instead of a round trip that could outlast the deadline (reconcile revision 13).
    "bridge_slow_read_near_deadline": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("incorrect", {"retries_after_uncertain"}),
        reconcile=("escalated", set()),
        new_key=("incorrect", {"duplicate_effects", "retries_after_uncertain"}),
        follow=("escalated", set()),
        verify=("escalated", set()),
    ),
    "retry_reply_outlasts_margin": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("abandoned", {"abandoned_actions"}),
        reconcile=("escalated", set()),
        new_key=("abandoned", {"abandoned_actions"}),
        follow=("escalated", set()),
        verify=("escalated", set()),
    ),
    "retry_leaves_inside_reply_wait": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("abandoned", {"abandoned_actions"}),
        reconcile=("escalated", set()),
        new_key=("abandoned", {"abandoned_actions"}),
        follow=("escalated", set()),
        verify=("escalated", set()),
    ),
    "connector_follow_outlasts_margin": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("abandoned", {"abandoned_actions"}),
        reconcile=("escalated", set()),
        new_key=("incorrect", {"abandoned_actions", "duplicate_effects"}),
        follow=("escalated", set()),
        verify=("escalated", set()),
    ),
    "retry_send_outlasts_deadline": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("abandoned", {"abandoned_actions"}),
        reconcile=("escalated", set()),
        new_key=("abandoned", {"abandoned_actions"}),
        follow=("escalated", set()),
        verify=("escalated", set()),
    ),
    # A new key's operation after a dead job, sent late: its claim is leased as a same-key retry's is.
    "connector_new_operation_leaves_late": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("incorrect", {"abandoned_actions", "retries_after_uncertain"}),
        reconcile=("escalated", set()),
        new_key=("incorrect", {"duplicate_effects"}),
        follow=("escalated", set()),
        verify=("escalated", set()),
    ),
    # A read answered before the retry's own do-not-replay error, its answer arriving after: it settles nothing.
    "bridge_second_error_after_read_sent": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("incorrect", {"retries_after_uncertain"}),
        reconcile=("correct", set()),
        new_key=("incorrect", {"duplicate_effects", "retries_after_uncertain"}),
        follow=("correct", set()),
        verify=("correct", set()),
    ),
    # A misrouted lookup's refusal of another deployment: the safe policies compare it as any receipt, and escalate.
    "foreign_refusal_after_lost_reply": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("correct", set()),
        reconcile=("escalated", set()),
        new_key=("incorrect", {"duplicate_effects"}),
        follow=("escalated", set()),
        verify=("escalated", set()),
    ),
    "foreign_refusal_after_lost_request": dict(
        stop=("abandoned", {"abandoned_actions"}),
        same_key=("correct", set()),
        reconcile=("escalated", set()),
        new_key=("correct", set()),
        follow=("escalated", set()),
        verify=("escalated", set()),
    ),
}


#: Every case a shipped scenario stands for (a crash-point scenario stands for one per phase boundary).
CASES = {spec: scenario for name in list_scenarios() for spec, scenario in scenario_cases(name)}


def run(policy: str, scenario: str, seed: int) -> tuple[SimResult, Judgement]:
    result = simulate(CASES[scenario], load_policy(policy), seed)
    return result, check(result.evidence)


def test_the_table_covers_every_shipped_policy_and_scenario() -> None:
    """No shipped cell is left without an expected outcome: every policy, every case of every scenario."""
    assert set(EXPECTED) == set(CASES)
    assert set(POLICIES.values()) == set(builtin_policy_names())
    assert all(set(row) == set(POLICIES) for row in EXPECTED.values())


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("scenario", sorted(EXPECTED))
def test_every_cell_has_its_expected_outcome_and_violations(scenario: str, seed: int) -> None:
    """Each policy's outcome, and the set of properties it violates, are as the table states."""
    for short, policy in POLICIES.items():
        cell = EXPECTED[scenario][short]
        outcome, violated = cell[seed] if isinstance(cell, dict) else cell
        _, judgement = run(policy, scenario, seed)
        found = {name for name, verdict in judgement.checks.items() if verdict == "false"}
        assert (judgement.outcome, found) == (outcome, violated), f"{policy} x {scenario} seed {seed}"


def test_reconcile_is_correct_or_escalated_everywhere() -> None:
    """The reference policy is never incorrect, abandoned or undecided in a shipped scenario."""
    assert {EXPECTED[s]["reconcile"][0] for s in EXPECTED} <= {"correct", "escalated"}
    assert all(not EXPECTED[s]["reconcile"][1] for s in EXPECTED)


@pytest.mark.parametrize(
    ("short", "seed_file"), [("follow", "000_f559b52831aece0e.txt"), ("verify", "002_da4aea13207d68c7.txt")]
)
def test_seed_policies_are_correct_or_escalated_in_their_seeds_scenarios(short: str, seed_file: str) -> None:
    """follow_and_inspect in every scenario citing seed 000, verify_before_mutation in every one citing seed 002
    (at least five each), and neither violates anything anywhere."""
    own = [spec for spec, scenario in CASES.items() if seed_file in scenario.description]
    assert len({spec.partition("@")[0] for spec in own}) >= 5
    assert {EXPECTED[s][short][0] for s in own} <= {"correct", "escalated"}
    assert all(not EXPECTED[s][short][1] for s in EXPECTED)


@pytest.mark.parametrize("seed", SEEDS)
class TestConsequences:
    """What the outcomes rest on, in the evidence."""

    def test_uncertain_lookup_tells_giving_up_from_escalating(self, seed: int) -> None:
        """Giving up is abandonment (verdict false); escalating before the deadline is not."""
        _, stop = run("stop_on_timeout", "uncertain_lookup", seed)
        result, reconcile = run("reconcile_and_reauthorize", "uncertain_lookup", seed)
        assert (stop.outcome, stop.verdict) == ("abandoned", "false")
        assert (reconcile.outcome, reconcile.verdict) == ("escalated", "true")
        escalated = [e for e in result.evidence.history if isinstance(e, Escalated)]
        assert escalated and escalated[0].at_s < result.evidence.recovery_deadline_s

    @pytest.mark.parametrize("policy", ["retry_same_key", "retry_new_key"])
    def test_blind_retries_leave_duplicates_unknown_without_the_ledger(self, policy: str, seed: int) -> None:
        """Several dispatches with no ledger to read: the duplicate count is null with a reason, never 0."""
        _, j = run(policy, "uncertain_lookup", seed)
        assert j.metrics["duplicate_effects"] is None and "unavailable" in j.unknown["duplicate_effects"]

    def test_changed_task_records_history_and_leaves_18_awaiting(self, seed: int) -> None:
        """m7 is recorded as a historical effect; revision 18 is not completed; the old approval is revoked."""
        result, j = run("reconcile_and_reauthorize", "changed_task", seed)
        assert j.metrics["task_completed"] is False and j.outcome == "correct"
        history = result.evidence.history
        assert any(isinstance(e, EffectRecorded) for e in history)
        assert not any(isinstance(e, TaskCompleted) for e in history)
        assert any(isinstance(e, ApprovalRevoked) for e in history)

    def test_duplicate_receipt_is_seen_twice_and_recorded_once(self, seed: int) -> None:
        """The late reply and the lookup both bring r1 before it is recorded; the ledger holds it once."""
        result, j = run("reconcile_and_reauthorize", "duplicate_receipt", seed)
        receives = [e for e in result.evidence.history if isinstance(e, ReplyReceived) and e.receipt_id == "r1"]
        record = next(e for e in result.evidence.history if isinstance(e, EffectRecorded))
        assert len([e for e in receives if e.index < record.index]) == 2 and j.metrics["duplicate_records"] == 0

    def test_two_recoverers_race_and_the_guard_records_once(self, seed: int) -> None:
        """Both recovering workers decide to record r1; the second write meets the conditional update."""
        result, j = run("reconcile_and_reauthorize", "two_recoverers", seed)
        assert any(isinstance(e, RecordRepeated) for e in result.evidence.history)
        assert j.metrics["duplicate_records"] == 0 and j.outcome == "correct"

    def test_newer_write_is_held_until_the_older_action_is_accounted_for(self, seed: int) -> None:
        """a74's claims are refused while a73 is unaccounted for; m8 is sent only after a73 is recorded."""
        result, j = run("reconcile_and_reauthorize", "newer_write_held", seed)
        history = result.evidence.history
        refused = [e for e in history if isinstance(e, ClaimDecided) and e.action_id == "a74" and not e.ok]
        a73_recorded = next(e for e in history if isinstance(e, EffectRecorded) and e.action_id == "a73")
        a74_sent = next(e for e in history if isinstance(e, DispatchSent) and e.action_id == "a74")
        assert refused and all(e.index < a73_recorded.index for e in refused)
        assert a74_sent.index > a73_recorded.index and j.metrics["task_completed"] is True

    def test_a_fenced_late_original_is_refused_and_the_absence_recorded(self, seed: int) -> None:
        """The cancellation revokes the approval; the destination refuses the late original; absence is final."""
        result, j = run("reconcile_and_reauthorize", "fenced_late_original", seed)
        history = result.evidence.history
        assert [e.reason for e in history if isinstance(e, RequestRefused)] == ["fenced"]
        assert any(isinstance(e, AbsenceRecorded) for e in history) and j.outcome == "correct"

    def test_the_late_original_past_the_window_is_waited_for_not_retried(self, seed: int) -> None:
        """Revision 3 sends nothing more while the original may still land, and records its effect."""
        _, j = run("reconcile_and_reauthorize", "late_original_past_window", seed)
        assert j.metrics["dispatches"] == 1 and j.metrics["task_completed"] is True

    @pytest.mark.parametrize("scenario", ["cancel_before_dispatch", "approval_expired_before_dispatch"])
    def test_a_refused_first_claim_sends_nothing(self, scenario: str, seed: int) -> None:
        """The dispatcher's claim is refused; nothing is sent and the action is recorded as never applied."""
        result, j = run("retry_same_key", scenario, seed)
        claims = [e for e in result.evidence.history if isinstance(e, ClaimDecided)]
        assert [c.ok for c in claims] == [False] and j.metrics["dispatches"] == 0
        assert any(isinstance(e, AbsenceRecorded) for e in result.evidence.history)


class ResendsCurrentArguments:
    """The bug users write after a task change: send the task's current arguments under the action's key, and
    record whatever receipt comes back."""

    name, revision = "resends_current_arguments", "test"

    def decide(self, situation: Situation) -> Command:
        if situation.recorded is not None:
            return Stop()
        receipts = [a.receipt for a in situation.attempts if a.receipt is not None]
        if receipts:
            return RecordEffect(receipt_id=receipts[-1].receipt_id)
        if any(a.response_status == "conflict" for a in situation.attempts):
            return Stop(reason="conflict")
        return ResendCurrentArguments(claim=False)


@pytest.mark.parametrize("seed", SEEDS)
def test_resending_current_arguments_is_caught_under_either_contract(seed: int) -> None:
    """Under a replaying destination the m7 receipt is recorded for an m8 request: incorrect, and the anomaly
    names what took effect (m7) and what the task wanted (m8); a rejecting destination answers a conflict."""
    replayed = check(simulate(shipped("conflict_replayed"), ResendsCurrentArguments(), seed).evidence)
    assert replayed.outcome == "incorrect" and replayed.checks["mismatched_records"] == "false"
    detail = next(a.detail for a in replayed.anomalies if a.kind == "mismatched_record")
    assert "m7 (sha256:d7d7d7)" in detail and "m8 (sha256:d8d8d8)" in detail and "the task wanted m8" in detail
    assert replayed.checks["changed_arguments"] == "false"
    rejected = simulate(shipped("conflict_rejected"), ResendsCurrentArguments(), seed)
    statuses = [e.status for e in rejected.evidence.history if isinstance(e, ReplyReceived) and e.kind == "dispatch"]
    assert statuses == ["conflict"]


def test_resending_current_arguments_with_a_claim_is_refused_after_the_change() -> None:
    """With a claim, the controller refuses the resend: the action belongs to revision 17, the task is at 18."""

    class Claims(ResendsCurrentArguments):
        def decide(self, situation: Situation) -> Command:
            command = super().decide(situation)
            return ResendCurrentArguments(claim=True) if isinstance(command, ResendCurrentArguments) else command

    result = simulate(shipped("conflict_replayed"), Claims(), 1)
    claims = [e for e in result.evidence.history if isinstance(e, ClaimDecided) and not e.ok]
    assert claims and "revision 18" in (claims[0].reason or "")
    assert check(result.evidence).metrics["dispatches"] == 1
