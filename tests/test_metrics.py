"""Each metric's function on small hand-written histories, one metric at a time."""

from __future__ import annotations

from conftest import OPENING, applied, dispatch, history, recorded

from harness.check import check
from harness.check.facts import facts
from harness.check.finding import Finding
from harness.check.registry import by_name
from harness.model import Evidence


def run(metric: str, evidence: Evidence) -> Finding:
    """The registry's function for ``metric`` on this evidence."""
    return by_name(metric).function(facts(evidence))


def test_claimed_dispatch_in_current_revision_is_authorized() -> None:
    """A dispatch after a successful claim, with nothing changed since, is authorized."""
    ev = history(OPENING + dispatch(0.0, 1))
    assert run("unauthorized_dispatches", ev).value == 0


def test_retry_after_revision_change_without_fresh_claim_is_unauthorized() -> None:
    """A retry sent after the task moved to a new revision is unauthorized, witnessed by the dispatch and revision."""
    ev = history(
        OPENING
        + "\n".join(
            [
                dispatch(0.0, 1),
                "6 controller task_revision task_id=release-42 revision=18 operation=activate target=staging/fraud model=m8 digest=d8",
                dispatch(15.0, 2),
            ]
        )
    )
    found = run("unauthorized_dispatches", ev)
    assert found.value == 1
    assert found.anomalies[0].witnesses[0] == 6 and 5 in found.anomalies[0].witnesses


def test_retry_after_cancel_is_unauthorized_even_with_same_revision() -> None:
    """A dispatch sent after a cancellation is unauthorized."""
    ev = history(
        OPENING
        + "\n".join(
            [
                dispatch(0.0, 1),
                "2 controller cancel_requested task_id=release-42 revision=17 reason=x",
                dispatch(15.0, 2),
            ]
        )
    )
    found = run("unauthorized_dispatches", ev)
    assert found.value == 1 and "cancellation" in found.anomalies[0].detail


def test_dispatch_without_claim_is_unauthorized() -> None:
    """No successful claim, no authorized dispatch."""
    text = OPENING.replace("ok=true", "ok=false") + dispatch(0.0, 1)
    assert run("unauthorized_dispatches", history(text)).value == 1


def test_dispatch_after_approval_expiry_is_unauthorized() -> None:
    """An approval that expired before the send does not authorize it."""
    text = OPENING.replace("expires_at_s=none", "expires_at_s=10") + dispatch(12.0, 1)
    assert run("unauthorized_dispatches", history(text)).value == 1


def test_fresh_claim_after_change_authorizes_again() -> None:
    """After a task change, a new successful claim against the current revision authorizes a dispatch."""
    ev = history(
        OPENING
        + "\n".join(
            [
                "1 controller approval_expired approval_id=other",
                "2 controller claim action_id=a73 revision=17 ok=true reason=none",
                dispatch(3.0, 1),
            ]
        )
    )
    assert run("unauthorized_dispatches", ev).value == 0


def test_two_effects_for_one_action_are_one_duplicate() -> None:
    """Two applied receipts traced to a73 through their execution IDs are one duplicate effect."""
    ev = history(
        OPENING
        + "\n".join(
            [
                dispatch(0.0, 1),
                applied(0.5, 1, "r1"),
                dispatch(15.0, 2, key="a73.k1"),
                applied(15.5, 2, "r2", key="a73.k1"),
            ]
        )
    )
    found = run("duplicate_effects", ev)
    assert found.value == 1
    assert found.anomalies[0].witnesses == (5, 7)


def test_duplicates_unknown_without_ledger_when_dispatched_twice() -> None:
    """Without the destination's ledger, two dispatches make the duplicate count unknown, not zero."""
    ev = history(OPENING + dispatch(0.0, 1) + "\n" + dispatch(15.0, 2), visible=False)
    found = run("duplicate_effects", ev)
    assert found.value is None and "unavailable" in (found.reason or "")


def test_duplicates_zero_without_ledger_when_dispatched_once() -> None:
    """One dispatch proves at most one effect, even without the destination's ledger."""
    ev = history(OPENING + dispatch(0.0, 1), visible=False)
    assert run("duplicate_effects", ev).value == 0


def test_same_receipt_recorded_twice_is_a_duplicate_record() -> None:
    """The same receipt written twice to the action ledger is one duplicate record."""
    ev = history(OPENING + "\n".join([dispatch(0.0, 1), applied(0.5, 1, "r1"), recorded(15, "r1"), recorded(16, "r1")]))
    found = run("duplicate_records", ev)
    assert found.value == 1 and found.anomalies[0].witnesses == (6, 7)


def test_completion_of_newer_revision_by_old_receipt_is_wrong() -> None:
    """Revision 18 completed by a73's receipt (revision 17) is a wrong-revision completion."""
    ev = history(
        OPENING
        + "\n".join(
            [
                dispatch(0.0, 1),
                applied(0.5, 1, "r1"),
                "6 controller task_revision task_id=release-42 revision=18 operation=activate target=staging/fraud model=m8 digest=d8",
                recorded(15, "r1"),
                "15 controller task_completed task_id=release-42 revision=18 action_id=a73 receipt_id=r1 operation=activate target=staging/fraud model=m7 digest=d7",
            ]
        )
    )
    assert run("wrong_revision_completions", ev).value == 1
    assert run("task_completed", ev).value is False


def test_matching_completion_completes_the_task() -> None:
    """The current revision completed by its own confirmed receipt counts as completed."""
    ev = history(
        OPENING
        + "\n".join(
            [
                dispatch(0.0, 1),
                applied(0.5, 1, "r1"),
                recorded(15, "r1"),
                "15 controller task_completed task_id=release-42 revision=17 action_id=a73 receipt_id=r1 operation=activate target=staging/fraud model=m7 digest=d7",
            ]
        )
    )
    assert run("task_completed", ev).value is True
    assert run("wrong_revision_completions", ev).value == 0
    assert run("time_to_account_s", ev).value == 14.5


def test_effect_of_dispatch_after_cancel_counts() -> None:
    """An effect caused by a dispatch sent after cancellation is an effect after cancel; the earlier one is not."""
    ev = history(
        OPENING
        + "\n".join(
            [
                dispatch(0.0, 1),
                applied(0.5, 1, "r1"),
                "2 controller cancel_requested task_id=release-42 revision=17 reason=x",
                dispatch(15.0, 2, key="a73.k1"),
                applied(15.5, 2, "r2", key="a73.k1"),
            ]
        )
    )
    found = run("effects_after_cancel", ev)
    assert found.value == 1 and found.anomalies[0].witnesses == (6, 7, 8)


def test_unrecorded_action_is_unresolved_and_time_to_account_unknown() -> None:
    """An applied effect never recorded leaves the action unresolved and its accounting time null with a reason."""
    ev = history(OPENING + dispatch(0.0, 1) + "\n" + applied(0.5, 1, "r1"))
    assert run("unresolved_actions", ev).value == 1
    found = run("time_to_account_s", ev)
    assert found.value is None and "never recorded" in (found.reason or "")


def test_record_after_deadline_is_still_unresolved() -> None:
    """Accounting for an action after the deadline does not resolve it in time."""
    ev = history(OPENING + dispatch(0.0, 1) + "\n" + applied(0.5, 1, "r1") + "\n" + recorded(130, "r1"), deadline_s=120)
    assert run("unresolved_actions", ev).value == 1


def test_recorded_receipt_the_destination_never_applied_is_false() -> None:
    """An effect recorded with a receipt absent from the destination's ledger is a false record."""
    ev = history(OPENING + dispatch(0.0, 1) + "\n" + recorded(15, "r9"))
    assert run("false_records", ev).value == 1


def test_absent_recorded_after_apply_is_false() -> None:
    """Holding an action as absent after the destination applied it is a false record."""
    ev = history(
        OPENING
        + dispatch(0.0, 1)
        + "\n"
        + applied(0.5, 1, "r1")
        + "\n"
        + "15 controller absence_recorded action_id=a73 reason=x version=1"
    )
    assert run("false_records", ev).value == 1


def test_executor_finished_reads_only_the_report() -> None:
    """executor_finished is the worker's report, and null when it never reported."""
    assert run("executor_finished", history(OPENING)).value is None
    ev = history(OPENING + "9 worker report action_id=a73 finished=true claimed=completed incarnation=1")
    assert run("executor_finished", ev).value is True


def test_effect_landing_after_an_absent_record_is_a_false_record() -> None:
    """A late request applied after the action was held as absent makes that record false, whatever the order."""
    ev = history(
        OPENING
        + dispatch(0.0, 1)
        + "\n15 controller absence_recorded action_id=a73 reason=x version=1\n"
        + applied(30.5, 1, "r1")
    )
    found = run("false_records", ev)
    assert found.value == 1 and found.anomalies[0].witnesses == (5, 6)


def test_dispatch_after_the_action_was_recorded_is_unauthorized() -> None:
    """Once the ledger accounts for the action, a further dispatch is unauthorized (the claim is spent)."""
    ev = history(
        OPENING
        + dispatch(0.0, 1)
        + "\n15 controller absence_recorded action_id=a73 reason=x version=1\n"
        + dispatch(16.0, 2)
    )
    found = run("unauthorized_dispatches", ev)
    assert found.value == 1 and "recorded" in found.anomalies[0].detail


def test_an_approval_granted_later_does_not_authorize_earlier() -> None:
    """Approvals are judged as they stood when the dispatch was sent, not by a later grant of the same id."""
    opening = OPENING.replace(
        "0 controller approval_granted approval_id=apr-17 revision=17 operation=activate target=staging/fraud digest=d7 expires_at_s=none\n",
        "",
    )
    late = "5 controller approval_granted approval_id=apr-17 revision=17 operation=activate target=staging/fraud digest=d7 expires_at_s=none"
    ev = history(opening + dispatch(1.0, 1) + "\n" + late)
    assert run("unauthorized_dispatches", ev).value == 1


def escalated(at: float) -> str:
    return f"{at} controller escalated action_id=a73 owner=release-oncall reason=x"


def test_an_action_neither_accounted_nor_escalated_is_abandoned() -> None:
    """Unaccounted for at the deadline and never escalated: abandoned; escalated in time: not."""
    ev = history(OPENING + dispatch(0.0, 1))
    found = run("abandoned_actions", ev)
    assert found.value == 1 and found.anomalies[0].witnesses == (2,)
    assert run("abandoned_actions", history(OPENING + dispatch(0.0, 1) + "\n" + escalated(100))).value == 0
    assert run("unresolved_actions", history(OPENING + dispatch(0.0, 1) + "\n" + escalated(100))).value == 1


def test_an_escalation_after_the_deadline_is_still_abandonment() -> None:
    """Handing the action over after the deadline is too late: it was abandoned at the deadline."""
    ev = history(OPENING + dispatch(0.0, 1) + "\n" + escalated(120.5), deadline_s=120)
    assert run("abandoned_actions", ev).value == 1
    assert (
        run("abandoned_actions", history(OPENING + dispatch(0.0, 1) + "\n" + escalated(120), deadline_s=120)).value == 0
    )


def test_absence_recorded_while_the_destination_had_it_pending_is_false() -> None:
    """Accepted (pending) at the destination before the absence was recorded: a false record, even unapplied."""
    accepted = "0.1 destination accepted idempotency_key=a73 execution_id=a73-x1"
    ev = history(
        OPENING
        + dispatch(0.0, 1)
        + "\n"
        + accepted
        + "\n15 controller absence_recorded action_id=a73 reason=x version=1"
    )
    found = run("false_records", ev)
    assert found.value == 1 and found.anomalies[0].witnesses == (6, 5) and "pending" in found.anomalies[0].detail
    fine = history(OPENING + dispatch(0.0, 1) + "\n15 controller absence_recorded action_id=a73 reason=x version=1")
    assert run("false_records", fine).value == 0


def test_a_receipt_for_other_arguments_recorded_as_the_effect_is_mismatched() -> None:
    """A receipt for m7 recorded after the last request asked for m8 names both artifacts."""
    other = recorded(15, "r1")  # the receipt is m7
    ev = history(OPENING + dispatch(0.0, 1, model="m8", digest="d8") + "\n" + applied(0.5, 1, "r1") + "\n" + other)
    found = run("mismatched_records", ev)
    assert found.value == 1 and found.anomalies[0].witnesses == (6, 4)
    assert "m7 (d7)" in found.anomalies[0].detail and "m8 (d8)" in found.anomalies[0].detail
    same = history(OPENING + dispatch(0.0, 1) + "\n" + applied(0.5, 1, "r1") + "\n" + recorded(15, "r1"))
    assert run("mismatched_records", same).value == 0


def test_reusing_a_key_with_other_arguments_is_changed_arguments() -> None:
    """The same key sent for m8 after it was used for m7 is flagged; a new key or the same arguments are not."""
    ev = history(OPENING + dispatch(0.0, 1) + "\n" + dispatch(15.0, 2, model="m8", digest="d8"))
    found = run("changed_arguments", ev)
    assert found.value == 1 and found.anomalies[0].witnesses == (4, 5)
    assert run("changed_arguments", history(OPENING + dispatch(0.0, 1) + "\n" + dispatch(15.0, 2))).value == 0
    new_key = history(OPENING + dispatch(0.0, 1) + "\n" + dispatch(15.0, 2, key="a73.k1", model="m8", digest="d8"))
    assert run("changed_arguments", new_key).value == 0


def lookup_reply(at: float, n: int, status: str) -> str:
    return f"{at} transport receive kind=lookup n={n} action_id=a73 execution_id=none status={status} receipt_id=none"


def test_a_new_key_while_the_outcome_is_unknown_is_counted() -> None:
    """A new key after a timeout with nothing learned is counted; after an absent lookup, or a receipt, it is not."""
    unknown = history(OPENING + dispatch(0.0, 1) + "\n" + dispatch(15.0, 2, key="a73.k1"))
    found = run("new_keys_while_unknown", unknown)
    assert found.value == 1 and found.anomalies[0].witnesses == (5,)
    absent = history(
        OPENING + dispatch(0.0, 1) + "\n" + lookup_reply(14.0, 1, "absent") + "\n" + dispatch(15.0, 2, key="a73.k1")
    )
    assert run("new_keys_while_unknown", absent).value == 0
    stale = history(
        OPENING + lookup_reply(0.0, 1, "absent") + "\n" + dispatch(0.1, 1) + "\n" + dispatch(15.0, 2, key="a73.k1")
    )
    assert run("new_keys_while_unknown", stale).value == 1  # the absent answer predates the first dispatch
    assert run("new_keys_while_unknown", history(OPENING + dispatch(0.0, 1) + "\n" + dispatch(15.0, 2))).value == 0


def dispatch_reply(at: float, n: int, status: str) -> str:
    return f"{at} transport receive kind=dispatch n={n} action_id=a73 execution_id=a73-x{n} status={status} receipt_id=r{n}"


def test_a_rejection_settles_the_dispatches_before_it_not_a_new_key_after_it() -> None:
    """A new key after a rejection is a new operation: when its reply is lost, a third key is counted (the rejection
    answered the first); the second is not. The same with a lookup that reads the rejection."""
    lines = [dispatch(0.0, 1), dispatch_reply(0.6, 1, "rejected"), dispatch(15.0, 2, key="a73.k1")]
    found = run("new_keys_while_unknown", history(OPENING + "\n".join([*lines, dispatch(30.0, 3, key="a73.k2")])))
    assert found.value == 1 and found.anomalies[0].witnesses == (7,)
    assert run("new_keys_while_unknown", history(OPENING + "\n".join(lines))).value == 0
    read = [dispatch(0.0, 1), lookup_reply(14.0, 1, "rejected"), dispatch(15.0, 2, key="a73.k1")]
    assert (
        run("new_keys_while_unknown", history(OPENING + "\n".join([*read, dispatch(30.0, 3, key="a73.k2")]))).value == 1
    )
    assert run("new_keys_while_unknown", history(OPENING + "\n".join(read))).value == 0
    applied_first = [dispatch(0.0, 1), dispatch_reply(0.6, 1, "applied"), dispatch(15.0, 2, key="a73.k1")]
    assert (
        run(
            "new_keys_while_unknown", history(OPENING + "\n".join([*applied_first, dispatch(30.0, 3, key="a73.k2")]))
        ).value
        == 0
    )


def test_a_dispatch_after_dispatch_was_held_is_unauthorized() -> None:
    """Once the controller holds the action's dispatch, sending it is unauthorized."""
    ev = history(OPENING + "1 controller dispatch_held action_id=a73 reason=x\n" + dispatch(2.0, 1))
    found = run("unauthorized_dispatches", ev)
    assert found.value == 1 and "held" in found.anomalies[0].detail


SECOND = """
6 controller task_revision task_id=release-42 revision=18 operation=activate target=staging/fraud model=m8 digest=d8
6 controller approval_granted approval_id=apr-17@r18 revision=18 operation=activate target=staging/fraud digest=d8 expires_at_s=none
6 controller action_recorded action_id=a74 task_id=release-42 revision=18 operation=activate target=staging/fraud model=m8 digest=d8 approval_id=apr-17@r18
6 controller claim action_id=a74 revision=18 ok=true reason=none
"""


def a74(at: float) -> str:
    return (
        f"{at} transport send kind=dispatch n=1 action_id=a74 execution_id=a74-x1 idempotency_key=a74 "
        "operation=activate target=staging/fraud model=m8 digest=d8"
    )


def test_a_newer_write_to_a_target_held_by_an_unaccounted_action_is_unauthorized() -> None:
    """a74 sent to staging/fraud while a73 there is unaccounted for is unauthorized; after a73's record it is not."""
    held = history(OPENING + dispatch(0.0, 1) + SECOND + a74(7.0))
    found = run("unauthorized_dispatches", held)
    assert found.value == 1 and "a73, older on the same target" in found.anomalies[0].detail
    released = history(
        OPENING + dispatch(0.0, 1) + "\n" + applied(0.5, 1, "r1") + "\n" + recorded(5, "r1") + SECOND + a74(7.0)
    )
    assert run("unauthorized_dispatches", released).value == 0


def test_refusals_count_refused_claims_contradicted_writes_and_unobserved_records() -> None:
    """Each kind of refusal counts once: a claim the controller refused, a guarded write the ledger contradicted,
    a record of a receipt the worker never observed; granted claims and carried-out commands count nothing."""
    ordinary = history(OPENING + dispatch(0.0, 1) + "\n" + recorded(1.0, "r1"))
    assert run("refusals", ordinary).value == 0
    refused = history(
        OPENING
        + dispatch(0.0, 1)
        + "\n"
        + recorded(1.0, "r1")
        + """
2 controller claim action_id=a73 revision=17 ok=false reason="already accounted for"
3 worker command_refused action_id=a73 reason="no observed applied receipt r9"
4 controller record_conflict action_id=a73 receipt_id=none recorded_receipt_id=r1
5 controller record_conflict action_id=a73 receipt_id=none recorded_receipt_id=r1
"""
    )
    found = run("refusals", refused)
    assert found.value == 4 and found.reason is None and found.anomalies == ()
    # The destination's ledger withheld: every refusal is the caller's own record, so the count stands.
    hidden = history(OPENING + "2 controller claim action_id=a73 revision=17 ok=false reason=held", visible=False)
    assert run("refusals", hidden).value == 1


def test_a_policy_that_asks_again_for_what_was_refused_is_correct_and_counted() -> None:
    """A variant that keeps recording an absence after the ledger holds one ends correct (the action is accounted
    for) and is told apart by its refusals and by the command budget it used up; the correct policy has none."""
    from buggy_policies import _Variant

    from harness.policy import Command, Situation, load_policy
    from harness.scenario import scenario_cases
    from harness.sim import simulate

    class StopsOnlyWhenApplied(_Variant):
        def decide(self, situation: Situation) -> Command:
            if situation.recorded in ("absent", "rejected"):
                situation = situation.model_copy(update={"recorded": None})
            return super().decide(situation)

    ((_, scenario),) = scenario_cases("fenced_late_original")
    for policy, refusals, finished in (
        (StopsOnlyWhenApplied("stops_only_when_applied"), 59, False),
        (load_policy("reconcile_and_reauthorize"), 0, True),
    ):
        judgement = check(simulate(scenario, policy, 1).evidence)
        assert judgement.outcome == "correct"
        assert judgement.metrics["refusals"] == refusals and judgement.metrics["executor_finished"] is finished


def still_in_flight(at: float, n: int) -> str:
    return f"{at} transport still_in_flight n={n} action_id=a73 execution_id=a73-x{n}"


def still_pending(at: float, n: int, key: str = "a73") -> str:
    return f"{at} destination still_pending idempotency_key={key} execution_id=a73-x{n}"


def test_an_effect_the_end_cut_off_leaves_duplicate_effects_unknown_not_zero() -> None:
    """A dispatch still on its way when the case ended (a request delayed past settle_max_s) or an operation not
    yet applied may still apply: with one effect already, a duplicate is not ruled out, and the count was 0 with
    verdict true. One dispatch alone, cut off or not, cannot make two effects; a duplicate seen stays seen."""
    one_then_cut = [dispatch(0.0, 1), dispatch(15.0, 2), applied(15.5, 2, "r2"), still_in_flight(120.0, 1)]
    found = run("duplicate_effects", history(OPENING + "\n".join(one_then_cut)))
    assert found.value is None and found.reason is not None
    assert "a73-x1 (a73) still on the way or pending" in found.reason and "settle_max_s" in found.reason
    pending = [dispatch(0.0, 1), dispatch(15.0, 2), applied(15.5, 2, "r2"), still_pending(120.0, 1)]
    assert run("duplicate_effects", history(OPENING + "\n".join(pending))).value is None
    both_cut = [dispatch(0.0, 1), dispatch(15.0, 2), still_in_flight(120.0, 1), still_pending(120.0, 2)]
    assert run("duplicate_effects", history(OPENING + "\n".join(both_cut))).value is None
    alone = [dispatch(0.0, 1), still_in_flight(120.0, 1)]
    assert run("duplicate_effects", history(OPENING + "\n".join(alone))) == Finding(0)
    seen = [dispatch(0.0, 1), applied(0.5, 1, "r1"), dispatch(15.0, 2), applied(15.5, 2, "r2"), dispatch(30.0, 3)]
    found = run("duplicate_effects", history(OPENING + "\n".join([*seen, still_in_flight(120.0, 3)])))
    assert found.value == 1 and len(found.anomalies) == 1
    # Without the ledger, one dispatch still proves at most one effect, and two stay unknown as before.
    assert run("duplicate_effects", history(OPENING + "\n".join(alone), visible=False)).value == 0


def test_an_effect_the_end_cut_off_leaves_effects_after_cancel_and_false_records_unknown() -> None:
    """A dispatch sent after a cancellation and still on its way may apply after it; an action recorded absent
    whose dispatch is still on its way may apply after that record. Cut off, each is unknown, not 0; a dispatch
    sent before the cancellation races with it legitimately, cut off or not."""
    cancel = "2 controller cancel_requested task_id=release-42 revision=17 reason=x"
    after = [dispatch(0.0, 1), applied(0.5, 1, "r1"), cancel, dispatch(15.0, 2), still_in_flight(120.0, 2)]
    found = run("effects_after_cancel", history(OPENING + "\n".join(after)))
    assert found.value is None and found.reason is not None and "a73-x2 (a73)" in found.reason
    before = [dispatch(0.0, 1), cancel, still_in_flight(120.0, 1)]
    assert run("effects_after_cancel", history(OPENING + "\n".join(before))) == Finding(0)
    absent = "15 controller absence_recorded action_id=a73 reason=x version=1"
    found = run("false_records", history(OPENING + "\n".join([dispatch(0.0, 1), absent, still_pending(120.0, 1)])))
    assert found.value is None and found.reason is not None and "contradicting the recorded outcome" in found.reason
    rejected = recorded(15.0, "r0", "rejection_recorded")
    found = run("false_records", history(OPENING + "\n".join([dispatch(0.0, 1), rejected, still_in_flight(120.0, 1)])))
    assert found.value is None, found
    effect = recorded(15.0, "r1")
    kept = [dispatch(0.0, 1), applied(0.5, 1, "r1"), effect, dispatch(16.0, 2), still_in_flight(120.0, 2)]
    assert run("false_records", history(OPENING + "\n".join(kept))) == Finding(0)


def test_an_abandoned_action_no_policy_was_asked_about_says_so() -> None:
    """When no policy decided anything about the action before the deadline, the anomaly says so, and when the
    first recovering worker of that action started: no policy could have saved it."""
    late_start = "\n15 worker start action_id=a73 incarnation=2 role=recovery"
    other = "\n1 worker start action_id=a74 incarnation=2 role=recovery\n2 worker policy_error action_id=a74 error=x"
    detail = run("abandoned_actions", history(OPENING + dispatch(0.0, 1) + other + late_start, deadline_s=12))
    assert detail.anomalies[0].detail.endswith(
        "; no policy was asked about it before then (the first recovering worker started at 15.0 s)"
    )
    never = run("abandoned_actions", history(OPENING + dispatch(0.0, 1), deadline_s=12)).anomalies[0].detail
    assert never.endswith("; no policy was asked about it before then (no recovering worker started)")
    # A decision before the deadline (here a failed one, at the deadline itself): the policy was asked.
    for at in (11, 12):
        asked = history(OPENING + dispatch(0.0, 1) + f"\n{at} worker policy_error action_id=a73 error=x", deadline_s=12)
        assert run("abandoned_actions", asked).anomalies[0].detail.endswith("by the deadline (12 s)")
    after = history(OPENING + dispatch(0.0, 1) + "\n12.5 worker policy_error action_id=a73 error=x", deadline_s=12)
    assert "no policy was asked" in run("abandoned_actions", after).anomalies[0].detail


def accepted(at: float, n: int, key: str = "a73") -> str:
    return f"{at} destination accepted idempotency_key={key} execution_id=a73-x{n}"


def test_an_operation_accepted_and_never_applied_is_pending_at_the_end_even_unrecorded() -> None:
    """An operation the destination accepted and neither applied nor rejected by the end (it stalled after
    acceptance: no still_pending record follows) may still apply, as one the end cut off may: a second operation
    of the action applied beside it leaves duplicate_effects unknown. Both were 0, and the case correct. An
    absence recorded before it was accepted is a false record (it was unknown here until a fourth adversarial
    review: the record said no request could still arrive, and one did)."""
    stalled = [dispatch(0.0, 1), accepted(0.05, 1), dispatch(15.0, 2, key="a73.k1"), accepted(15.05, 2, "a73.k1")]
    found = run("duplicate_effects", history(OPENING + "\n".join([*stalled, applied(15.5, 2, "r1", "a73.k1")])))
    assert found.value is None and found.reason is not None and "a73-x1 (a73)" in found.reason
    # Applied or rejected, an accepted operation is settled; alone, a stalled one cannot make two effects.
    settled = [dispatch(0.0, 1), accepted(0.05, 1), applied(0.5, 1, "r1"), recorded(15.0, "r1")]
    assert run("duplicate_effects", history(OPENING + "\n".join(settled))) == Finding(0)
    assert run("false_records", history(OPENING + "\n".join(settled))) == Finding(0)
    alone = [dispatch(0.0, 1), accepted(0.05, 1)]
    assert run("duplicate_effects", history(OPENING + "\n".join(alone))) == Finding(0)
    absent = "15 controller absence_recorded action_id=a73 reason=x version=1"
    late = [dispatch(0.0, 1), absent, accepted(20.0, 1)]
    found = run("false_records", history(OPENING + "\n".join(late)))
    assert found.value == 1 and [a.witnesses for a in found.anomalies] == [(5, 6)], found
    assert found.anomalies[0].detail.endswith("accepted it after the write (a73-x1, a late request)")


def test_a_new_key_beside_a_stalled_original_is_not_judged_correct() -> None:
    """End to end: the destination accepts a73 and never applies it; a policy that reads "pending" and starts a
    new operation under a new key, records its receipt and stops left the first operation pending: unresolved,
    not correct. The auditor's truth (one effect so far) is not contradicted: the count is unknown."""
    from conftest import shipped
    from test_sim import with_changes

    from harness.policy import Command, LookUp, RecordEffect, RetryNewKey, Situation, Stop
    from harness.sim import simulate

    class NewKeyWhilePending:
        name, revision = "new_key_while_pending", "test"

        def decide(self, s: Situation) -> Command:
            receipts = [r for r in s.observed_receipts() if r.status == "applied"]
            if s.recorded is not None:
                return Stop()
            if receipts:
                return RecordEffect(receipt_id=receipts[-1].receipt_id)
            if not s.lookups:
                return LookUp()
            return RetryNewKey() if s.lookups[-1].effect == "pending" and len(s.attempts) == 1 else Stop()

    scenario = with_changes(shipped("lost_response"), faults=[{"boundary": "accepted_not_applied", "nth": 1}])
    result = simulate(scenario, NewKeyWhilePending(), 1)
    judgement = check(result.evidence)
    assert result.truth.duplicate_effects == 0 and judgement.metrics["new_keys_while_unknown"] == 1
    assert judgement.outcome == "unresolved" and judgement.metrics["duplicate_effects"] is None


def test_operations_of_no_dispatch_on_record_are_cut_off_under_the_unknown_action() -> None:
    """An operation whose execution no dispatch on record names (a stray one, of another caller) belongs to the
    "(unknown action)", as its effects do: one applied and one still pending, or accepted and never settled, may
    make two effects, and the reason names it so. (Mutation found the unknown action's label untested.)"""
    stray_applied = "1 destination applied receipt_id=r8 idempotency_key=zz execution_id=zz-x1 operation=activate"
    stray_applied += " target=staging/fraud model=m7 digest=d7"
    pending = "120 destination still_pending idempotency_key=zz execution_id=zz-x2"
    stalled = "2 destination accepted idempotency_key=zz execution_id=zz-x2"
    for unsettled in (pending, stalled):
        found = run("duplicate_effects", history(OPENING + "\n".join([stray_applied, unsettled])))
        assert found.value is None and found.reason is not None
        assert "with zz-x2 ((unknown action)) still on the way or pending" in found.reason, found.reason


def test_a_shipped_stall_leaves_a_new_keys_duplicate_count_unknown() -> None:
    """On a shipped scenario: connector_new_operation_pending stalls a73's second operation after acceptance
    (no still_pending record follows it); retry_new_key's case had a duplicate count of 0, as if that operation
    could never apply. It is unknown now, the reason naming it (the case is incorrect for other reasons)."""
    from conftest import shipped

    from harness.policy import load_policy
    from harness.sim import simulate

    judgement = check(simulate(shipped("connector_new_operation_pending"), load_policy("retry_new_key"), 1).evidence)
    assert judgement.metrics["duplicate_effects"] is None
    assert "with a73-x2 (a73) still on the way or pending" in judgement.unknown["duplicate_effects"]
