"""Tests that kill the checker's surviving mutants (tests/MUTANTS.md): each builds a small history and derives
what the checker must say from the rule it states, one rule edge at a time."""

from __future__ import annotations

import pytest
from conftest import OPENING, applied, dispatch, history, recorded

from harness.check import METRICS, PROPERTIES, check
from harness.check.facts import facts
from harness.check.finding import HIDDEN, Finding
from harness.check.registry import METRIC_NAMES, _property, by_name
from harness.model import Evidence

CANCEL = "2 controller cancel_requested task_id=release-42 revision=17 reason=x"


def run(metric: str, evidence: Evidence) -> Finding:
    """The registry's function for ``metric`` on this evidence."""
    return by_name(metric).function(facts(evidence))


def reply(at: float, n: int, status: str, receipt: str = "none", kind: str = "dispatch") -> str:
    execution = f"a73-x{n}" if kind == "dispatch" else "none"
    return (
        f"{at} transport receive kind={kind} n={n} action_id=a73 execution_id={execution} status={status} "
        f"receipt_id={receipt}"
    )


# -- the judgement: verdicts of properties and measures ------------------------------------------------


def test_an_unknown_property_makes_the_verdict_unknown_and_the_case_unresolved() -> None:
    """Two dispatches without the destination's ledger: duplicate_effects is unknown, so the verdict is unknown
    (not true) and the outcome unresolved, with the reason under ``unknown``."""
    ev = history(OPENING + dispatch(0.0, 1) + "\n" + dispatch(15.0, 2) + "\n" + recorded(20, "r1"), visible=False)
    judgement = check(ev)
    assert judgement.checks["duplicate_effects"] == "unknown"
    assert (judgement.verdict, judgement.outcome) == ("unknown", "unresolved")
    assert HIDDEN in judgement.unknown["duplicate_effects"]


def test_two_applied_replies_under_different_receipts_witness_a_duplicate_the_hidden_ledger_cannot() -> None:
    """Without the ledger, two dispatches the destination answered ``applied`` under r1 (unheard: the caller had
    stopped waiting) and r2 took effect twice at least: duplicate_effects is false, witnessed by each receipt's
    first reply, its count known when every dispatch was answered and null (with the reason) when one was not. The same receipt twice (a replay), an answer that is not
    ``applied``, or two receipts from lookups (which may name another action's) witness nothing; where each
    dispatch has a final reply that is all it did (one effect: 0), and where one has none, unknown."""

    def judged(*replies: str) -> tuple[str, object, list[tuple[int, ...]]]:
        ev = history(OPENING + "\n".join([dispatch(0.0, 1), dispatch(15.0, 2), *replies]), visible=False)
        found = run("duplicate_effects", ev)
        return check(ev).checks["duplicate_effects"], found.value, [a.witnesses for a in found.anomalies]

    unheard = reply(20.5, 1, "applied", "r1").replace(" receive ", " undeliverable ")
    assert judged(reply(15.5, 2, "applied", "r2"), unheard, reply(21, 2, "applied", "r2")) == ("false", 1, [(6, 7)])
    # A third dispatch no reply answered: the two witnessed stand, the count is unknown.
    third = [reply(15.5, 2, "applied", "r2"), dispatch(18.0, 3), unheard]
    ev = history(OPENING + "\n".join([dispatch(0.0, 1), dispatch(15.0, 2), *third]), visible=False)
    found = run("duplicate_effects", ev)
    assert (check(ev).checks["duplicate_effects"], found.value, len(found.anomalies)) == ("false", None, 1)
    assert (
        "2 receipts (r2, r1)"
        in run(
            "duplicate_effects",
            history(
                OPENING + "\n".join([dispatch(0.0, 1), dispatch(15.0, 2), reply(15.5, 2, "applied", "r2"), unheard]),
                visible=False,
            ),
        )
        .anomalies[0]
        .detail
    )
    assert judged(reply(15.5, 2, "applied", "r1"), unheard) == ("true", 0, [])
    assert judged(reply(15.5, 2, "rejected", "r2"), unheard) == ("true", 0, [])
    assert judged(reply(15.5, 2, "running", "r2"), unheard) == ("unknown", None, [])
    assert judged(reply(15.5, 2, "applied", "r1")) == ("unknown", None, [])
    looked = [reply(16, n, "applied", f"r{n}", kind="lookup") for n in (1, 2)]
    assert judged(*looked) == ("unknown", None, [])


def test_a_measure_never_votes_against_the_case() -> None:
    """A measure's result is ``true`` whenever its value is known, whatever the value (here non-zero counts and a
    false flag), and ``unknown`` only when its value is; only properties are ``checks``."""
    ev = history(OPENING + dispatch(0.0, 1) + "\n" + dispatch(15.0, 2, key="a73.k1"))
    judgement = check(ev)
    measures = {r.name: r for r in judgement.results if r.name not in judgement.properties}
    assert measures["dispatches"].value == 2 and measures["new_keys_while_unknown"].value == 1
    assert measures["task_completed"].value is False
    for result in measures.values():
        assert result.verdict == ("unknown" if result.value is None else "true"), result.name
    assert measures["executor_finished"].verdict == "unknown"  # the worker never reported
    assert set(judgement.checks) == {m.name for m in PROPERTIES}


def test_a_crashing_checker_names_the_exception_type() -> None:
    """The reason of a crashed checker names the exception's type and message."""

    def broken(_facts: object) -> Finding:
        raise LookupError("no such entry")

    judgement = check(history(OPENING), properties={"broken": broken})
    assert judgement.unknown["broken"] == "checker raised LookupError: no such entry"


# -- the registry -----------------------------------------------------------------------------------------


def test_each_property_is_a_shown_logged_audited_count() -> None:
    """Every safety property is declared as a count that is shown, logged and audited, moving the outcome to
    incorrect unless declared otherwise (``_property`` runs at import; here it is called again)."""
    function = PROPERTIES[0].function
    built = _property("x", function)
    assert (built.name, built.function, built.kind, built.value) == ("x", function, "property", "count")
    assert (built.effect, built.logged, built.shown, built.audited) == ("incorrect", True, True, True)
    assert _property("y", function, effect="abandoned").effect == "abandoned"
    for metric in PROPERTIES:
        assert metric.effect in ("incorrect", "abandoned")
        assert _property(metric.name, metric.function, metric.effect) == metric


def test_an_unknown_metric_name_lists_the_known_ones() -> None:
    """``by_name`` of an unknown metric raises a KeyError naming it and every known metric, comma-separated."""
    with pytest.raises(KeyError) as raised:
        by_name("nosuch")
    message = str(raised.value.args[0])
    assert message == f"unknown metric 'nosuch'; use one of {', '.join(METRIC_NAMES)}"
    assert len(METRIC_NAMES) == len(METRICS) > 1


# -- unauthorized dispatches --------------------------------------------------------------------------------


def test_a_dispatch_before_any_task_revision_is_unauthorized() -> None:
    """With no task revision recorded before it, a dispatch is stale: counted, witnessed by itself and the action."""
    text = """
0 controller approval_granted approval_id=apr-17 revision=17 operation=activate target=staging/fraud digest=d7 expires_at_s=none
0 controller action_recorded action_id=a73 task_id=release-42 revision=17 operation=activate target=staging/fraud model=m7 digest=d7 approval_id=apr-17
0 controller claim action_id=a73 revision=17 ok=true reason=none
"""
    found = run("unauthorized_dispatches", history(text + dispatch(1.0, 1)))
    assert found.value == 1
    assert found.anomalies[0].witnesses == (3, 1)
    assert "revision None" in found.anomalies[0].detail


def test_a_dispatch_exactly_at_approval_expiry_is_unauthorized() -> None:
    """An approval expiring at 10 s no longer authorizes a dispatch sent at 10 s; one sent just before is fine."""
    text = OPENING.replace("expires_at_s=none", "expires_at_s=10")
    found = run("unauthorized_dispatches", history(text + dispatch(10.0, 1)))
    assert found.value == 1 and "expired" in found.anomalies[0].detail
    assert run("unauthorized_dispatches", history(text + dispatch(9.999, 1))).value == 0


def test_a_dispatch_after_its_own_approval_was_revoked_is_unauthorized() -> None:
    """Revoking the action's approval (apr-17) makes a later dispatch unauthorized; revoking another does not."""
    for event, said in (
        ("approval_revoked approval_id=apr-17 reason=x", "was revoked"),
        ("approval_expired approval_id=apr-17", "ran out"),  # as the timeline says: approval_expired
    ):
        found = run("unauthorized_dispatches", history(OPENING + f"1 controller {event}\n" + dispatch(2.0, 1)))
        assert found.value == 1 and found.anomalies[0].witnesses == (5, 4)
        assert found.anomalies[0].detail.endswith(f"sent after the approval {said}")
    other = history(OPENING + "1 controller approval_revoked approval_id=apr-99 reason=x\n" + dispatch(2.0, 1))
    assert run("unauthorized_dispatches", other).value == 0


def test_an_approval_with_another_id_does_not_authorize_the_action() -> None:
    """An approval bound to the same revision, target and digest but under another id is not the action's."""
    text = OPENING.replace("approval_granted approval_id=apr-17", "approval_granted approval_id=apr-other")
    found = run("unauthorized_dispatches", history(text + dispatch(1.0, 1)))
    assert found.value == 1 and "no approval" in found.anomalies[0].detail


def test_a_task_change_after_the_claim_needs_a_fresh_claim() -> None:
    """The task recorded again (still revision 17) after the claim: the dispatch is unauthorized, witnessed by the
    dispatch, the claim and the change; a fresh claim after the change authorizes it."""
    again = "1 controller task_revision task_id=release-42 revision=17 operation=activate target=staging/fraud model=m7 digest=d7\n"
    found = run("unauthorized_dispatches", history(OPENING + again + dispatch(2.0, 1)))
    assert found.value == 1 and found.anomalies[0].witnesses == (5, 3, 4)
    assert "changed after the claim" in found.anomalies[0].detail
    fresh = "1.5 controller claim action_id=a73 revision=17 ok=true reason=none\n"
    assert run("unauthorized_dispatches", history(OPENING + again + fresh + dispatch(2.0, 1))).value == 0


def test_a_claim_against_another_revision_does_not_authorize() -> None:
    """A successful claim made against revision 16 does not authorize a dispatch of revision 17's action."""
    text = OPENING.replace("claim action_id=a73 revision=17", "claim action_id=a73 revision=16")
    found = run("unauthorized_dispatches", history(text + dispatch(1.0, 1)))
    assert found.value == 1 and found.anomalies[0].witnesses == (4, 3)
    assert "another revision" in found.anomalies[0].detail


# -- effects and records ------------------------------------------------------------------------------------


def test_an_effect_of_an_unknown_execution_is_kept_apart_from_the_actions() -> None:
    """An effect whose execution no dispatch names is not counted against a73: a73 applied once is no duplicate,
    and its accounting time is its own."""
    stray = (
        "1 destination applied receipt_id=r9 idempotency_key=zz execution_id=zz-x1 "
        "operation=activate target=staging/fraud model=m7 digest=d7"
    )
    ev = history(OPENING + "\n".join([dispatch(0.0, 1), applied(0.5, 1, "r1"), stray, recorded(15, "r1")]))
    assert run("duplicate_effects", ev) == Finding(0)
    assert run("time_to_account_s", ev).value == 14.5


def test_dispatches_after_a_cancellation_without_the_ledger_are_unknown_with_a_reason() -> None:
    """Without the destination's ledger, a dispatch sent after the cancellation leaves effects_after_cancel
    unknown, with the reason; the effect it caused, when visible, is an ``effect_after_cancel``."""
    text = OPENING + CANCEL + "\n" + dispatch(3.0, 1)
    found = run("effects_after_cancel", history(text, visible=False))
    assert found.value is None and found.reason == f"{HIDDEN} and 1 dispatches were sent after the cancellation"
    visible = run("effects_after_cancel", history(text + "\n" + applied(3.5, 1, "r1")))
    assert visible.value == 1 and visible.anomalies[0].kind == "effect_after_cancel"


def test_a_single_record_is_no_duplicate_record() -> None:
    """One write of a receipt is no anomaly; two are a ``duplicate_record``."""
    once = run("duplicate_records", history(OPENING + dispatch(0.0, 1) + "\n" + recorded(15, "r1")))
    assert (once.value, once.anomalies) == (0, ())
    twice = history(OPENING + dispatch(0.0, 1) + "\n" + recorded(15, "r1") + "\n" + recorded(16, "r1"))
    assert [a.kind for a in run("duplicate_records", twice).anomalies] == ["duplicate_record"]


def test_an_effect_recorded_before_any_dispatch_is_compared_with_the_action() -> None:
    """With no dispatch before it, a recorded effect is compared with the action's own artifact."""
    other = recorded(1, "r1").replace("model=m7 digest=d7", "model=m8 digest=d8")
    found = run("mismatched_records", history(OPENING + other))
    assert found.value == 1 and found.anomalies[0].witnesses == (4, 2)
    assert run("mismatched_records", history(OPENING + recorded(1, "r1"))).value == 0


# -- the caller's knowledge ---------------------------------------------------------------------------------


def test_a_rejected_reply_is_known_to_the_caller() -> None:
    """A dispatch answered ``rejected`` (with its receipt) is known: a new key after it is no hazard."""
    ev = history(
        OPENING + dispatch(0.0, 1) + "\n" + reply(1.0, 1, "rejected", "r1") + "\n" + dispatch(15.0, 2, key="a73.k1")
    )
    assert run("new_keys_while_unknown", ev).value == 0


def test_a_retry_after_an_uncertain_reply_is_a_retry_after_uncertain() -> None:
    """A dispatch after a connection error is a ``retry_after_uncertain``, naming both executions."""
    ev = history(OPENING + dispatch(0.0, 1) + "\n" + reply(1.0, 1, "connection_error") + "\n" + dispatch(15.0, 2))
    found = run("retries_after_uncertain", ev)
    assert found.value == 1
    anomaly = found.anomalies[0]
    assert (anomaly.kind, anomaly.witnesses) == ("retry_after_uncertain", (5, 6))
    assert anomaly.detail.startswith("a73-x2 sent after a73-x1 was answered connection_error")


def test_a_read_that_says_nothing_is_there_settles_nothing_the_ledger_contradicts() -> None:
    """After a connection error, a lookup answering absent (or a verification refuted) settles the doubt, unless
    the ledger shows the action applied before that answer (a lagging lookup, a misread verification): then the
    retry after it is still a retry after uncertain. With the ledger withheld, whether it was so is unknown; a
    read that finds the receipt settles it either way."""
    applied = "0.5 destination applied receipt_id=r1 idempotency_key=a73 execution_id=a73-x1 operation=activate " + (
        "target=staging/fraud model=m7 digest=d7"
    )
    told = OPENING + dispatch(0.0, 1) + "\n" + applied + "\n" + reply(1.0, 1, "connection_error") + "\n"
    for status, kind in (("absent", "lookup"), ("refuted", "verify")):
        ev = history(told + reply(2.0, 1, status, kind=kind) + "\n" + dispatch(3.0, 2))
        found = run("retries_after_uncertain", ev)
        assert found.value == 1 and found.anomalies[0].witnesses == (6, 8), (status, found)
    # The same answer before the effect applied: it was so when given, and it settles the doubt.
    early = OPENING + dispatch(0.0, 1) + "\n" + reply(1.0, 1, "connection_error") + "\n"
    read_then_retry = early + reply(2.0, 1, "absent", kind="lookup") + "\n" + dispatch(3.0, 2)
    assert run("retries_after_uncertain", history(read_then_retry)).value == 0
    hidden = history(read_then_retry, visible=False)
    found = run("retries_after_uncertain", hidden)
    assert found.value is None and found.reason == (
        "the destination's ledger is unavailable to the checker, so whether the read that answered absent before "
        "a73-x2 was right is unknown"
    )
    settled = early + reply(2.0, 1, "applied", "r1", kind="lookup") + "\n" + dispatch(3.0, 2)
    assert run("retries_after_uncertain", history(settled, visible=False)).value == 0
    # A read that finds the receipt after the doubtful one settles the doubt too.
    found_later = early + reply(2.0, 1, "absent", kind="lookup") + "\n" + reply(2.5, 1, "applied", "r1", kind="lookup")
    assert run("retries_after_uncertain", history(found_later + "\n" + dispatch(3.0, 2), visible=False)).value == 0
    # A violation seen beside a doubtful read is still one, and how many there are is unknown (a count would be a
    # lower bound: it read 1 where the truth was 2).
    both = early + dispatch(1.5, 2) + "\n" + reply(2.0, 1, "absent", kind="lookup") + "\n" + dispatch(3.0, 3)
    found = run("retries_after_uncertain", history(both, visible=False))
    assert found.value is None and len(found.anomalies) == 1
    judged = check(history(both, visible=False))
    assert judged.checks["retries_after_uncertain"] == "false" and judged.outcome == "incorrect"
    assert judged.metrics["retries_after_uncertain"] is None and "retries_after_uncertain" in judged.unknown


# -- completions, deadlines and accounting times ------------------------------------------------------------

SECOND = """
6 controller task_revision task_id=release-42 revision=18 operation=activate target=staging/fraud model=m8 digest=d8
6 controller approval_granted approval_id=apr-18 revision=18 operation=activate target=staging/fraud digest=d8 expires_at_s=none
6 controller action_recorded action_id=a74 task_id=release-42 revision=18 operation=activate target=staging/fraud model=m8 digest=d8 approval_id=apr-18
6 controller claim action_id=a74 revision=18 ok=true reason=none
"""
REVISION_18 = "6 controller task_revision task_id=release-42 revision=18 operation=activate target=staging/fraud model=m8 digest=d8"


def completed(at: float, action: str = "a73", revision: int = 17) -> str:
    return (
        f"{at} controller task_completed task_id=release-42 revision={revision} action_id={action} receipt_id=r1 "
        "operation=activate target=staging/fraud model=m7 digest=d7"
    )


def test_a_completion_by_an_unrecorded_action_is_wrong() -> None:
    """Revision 17 completed by a receipt of an action never recorded: wrong, witnessed by the completion and the
    revision in force (there is no action to cite)."""
    found = run("wrong_revision_completions", history(OPENING + completed(5, action="a99")))
    assert found.value == 1
    assert (found.anomalies[0].kind, found.anomalies[0].witnesses) == ("wrong_revision_completion", (4, 0))


def test_a_completion_of_a_revision_the_task_has_left_is_wrong() -> None:
    """a73's receipt completing revision 17 after the task moved to 18 is wrong, witnessed by the completion, the
    action and the revision in force; the task is not complete."""
    ev = history(
        OPENING + "\n".join([dispatch(0.0, 1), applied(0.5, 1, "r1"), REVISION_18, recorded(15, "r1"), completed(15)])
    )
    found = run("wrong_revision_completions", ev)
    assert found.value == 1 and found.anomalies[0].witnesses == (8, 2, 6)
    assert "while the task was at 18" in found.anomalies[0].detail
    assert run("task_completed", ev).value is False


def test_a_completion_after_a_cancellation_is_wrong_and_leaves_the_task_incomplete() -> None:
    """A matching completion recorded after a cancellation is wrong and does not complete the task; the same
    completion with the cancellation after it is right and completes it."""
    before = history(
        OPENING + "\n".join([dispatch(0.0, 1), applied(0.5, 1, "r1"), CANCEL, recorded(15, "r1"), completed(15)])
    )
    found = run("wrong_revision_completions", before)
    assert found.value == 1 and found.anomalies[0].witnesses == (8, 2, 0)
    assert "cancellation" in found.anomalies[0].detail
    assert run("task_completed", before).value is False
    after = history(
        OPENING
        + "\n".join(
            [dispatch(0.0, 1), applied(0.5, 1, "r1"), recorded(15, "r1"), completed(15), CANCEL.replace("2 ", "16 ", 1)]
        )
    )
    assert run("wrong_revision_completions", after).value == 0
    assert run("task_completed", after).value is True


def test_a_later_effect_with_other_arguments_on_the_target_undoes_the_completion() -> None:
    """A stale m8 request applied on the target after m7's completing effect leaves the task incomplete, before
    or after the completion was recorded; a later effect of the same arguments, or on another target, does not.
    (A scenario author's review: a stale retry of m7 applied after m9 completed the task left it "completed".)"""

    def later(at: float, model: str, target: str = "staging/fraud") -> str:
        return (
            f"{at} destination applied receipt_id=r9 idempotency_key=x execution_id=x-1 operation=activate "
            f"target={target} model={model} digest=d7"
        )

    def completed_with(effect: str, record_first: bool) -> object:
        steps = [dispatch(0.0, 1), applied(0.5, 1, "r1")]
        ending = [recorded(15, "r1"), completed(15)]
        return run(
            "task_completed",
            history(OPENING + "\n".join([*steps, *ending, effect] if record_first else [*steps, effect, *ending])),
        ).value

    assert completed_with(later(16, "m8"), record_first=True) is False
    assert completed_with(later(1.0, "m8"), record_first=False) is False
    assert completed_with(later(16, "m7"), record_first=True) is True
    assert completed_with(later(16, "m8", target="prod/other"), record_first=True) is True


def test_a_completion_whose_own_receipt_applied_other_arguments_does_not_complete_the_task() -> None:
    """The forty-fifth mutation pass: a completion of m7 by receipt r1, whose effect at the destination put m8
    on the target, read as completed (only later effects were looked at). The completing receipt's own effect
    must match the revision's arguments too."""
    other = applied(0.5, 1, "r1").replace("model=m7", "model=m8")
    assert "model=m8" in other
    steps = [dispatch(0.0, 1), other, recorded(15, "r1"), completed(15)]
    assert run("task_completed", history(OPENING + "\n".join(steps))).value is False
    steps[1] = applied(0.5, 1, "r1")
    assert run("task_completed", history(OPENING + "\n".join(steps))).value is True


def test_task_completed_is_unknown_with_a_reason_when_it_cannot_be_decided() -> None:
    """No task revision on record, or a matching completion whose receipt the hidden ledger cannot confirm: null,
    each with its reason."""
    bare = run("task_completed", history(OPENING.split("\n", 2)[2]))
    assert bare.value is None and "task revision" in (bare.reason or "")
    hidden = history(OPENING + "\n".join([dispatch(0.0, 1), recorded(15, "r1"), completed(15)]), visible=False)
    found = run("task_completed", hidden)
    assert found.value is None and HIDDEN in (found.reason or "")


def test_executor_finished_without_a_report_says_so() -> None:
    """No worker report: executor_finished is null, with the reason that the worker never reported."""
    found = run("executor_finished", history(OPENING))
    assert found.value is None and "never reported" in (found.reason or "")


def test_a_record_exactly_at_the_deadline_is_in_time() -> None:
    """The ledger accounting for the action at the deadline itself resolves it: neither unresolved nor abandoned."""
    ev = history(OPENING + "\n".join([dispatch(0.0, 1), applied(0.5, 1, "r1"), recorded(120, "r1")]), deadline_s=120)
    assert run("unresolved_actions", ev).value == 0
    assert run("abandoned_actions", ev).value == 0


def test_an_action_not_accounted_for_names_the_deadline_it_missed() -> None:
    """The anomaly recovery.json shows says which deadline passed (its text, the only use of the deadline left in
    both functions once the question moved to Facts: a mutant that lost it survived)."""
    ev = history(OPENING + dispatch(0.0, 1), deadline_s=90.5)
    for metric, text in (("unresolved_actions", "not accounted for"), ("abandoned_actions", "neither accounted")):
        (anomaly,) = run(metric, ev).anomalies
        assert text in anomaly.detail and "by the deadline (90.5 s)" in anomaly.detail, anomaly.detail


def test_every_action_is_judged_even_after_an_escalated_one() -> None:
    """a73 escalated in time does not excuse a74: a74 alone is abandoned, and both are unresolved."""
    ev = history(OPENING + "5 controller escalated action_id=a73 owner=release-oncall reason=x" + SECOND)
    abandoned = run("abandoned_actions", ev)
    assert abandoned.value == 1 and abandoned.anomalies[0].witnesses == (7,)
    unresolved = run("unresolved_actions", ev)
    assert [a.witnesses for a in unresolved.anomalies] == [(2,), (7,)]


def test_time_to_account_counts_only_effects_and_their_own_receipts() -> None:
    """An action that took no effect has nothing to account for and adds no time (one such action made the whole
    figure null, though the other's effect was accounted for); a record of a receipt that is not the action's
    accounts for nothing (a false record gave a time); each action whose effect was never recorded is named."""
    a74_sent = (
        "7 transport send kind=dispatch n=1 action_id=a74 execution_id=a74-x1 idempotency_key=a74 "
        "operation=activate target=staging/fraud model=m8 digest=d8"
    )
    a74_applied = (
        "7.5 destination applied receipt_id=r2 idempotency_key=a74 execution_id=a74-x1 "
        "operation=activate target=staging/fraud model=m8 digest=d8"
    )
    first_never_recorded = history(OPENING + dispatch(0.0, 1) + "\n" + applied(0.5, 1, "r1") + SECOND)
    assert run("time_to_account_s", first_never_recorded).reason == "the effect of a73 was never recorded"
    first_without_effect = history(OPENING + SECOND + a74_sent + "\n" + a74_applied)
    assert run("time_to_account_s", first_without_effect).reason == "the effect of a74 was never recorded"
    a74_recorded = recorded(9.25, "r2").replace("a73", "a74").replace("m7 digest=d7", "m8 digest=d8")
    accounted_beside_none = run(
        "time_to_account_s", history(OPENING + SECOND + _lines(a74_sent, a74_applied, a74_recorded))
    )
    assert (accounted_beside_none.value, accounted_beside_none.reason) == (1.75, None)
    both_unrecorded = _lines(dispatch(0.0, 1), applied(0.5, 1, "r1")) + SECOND + _lines(a74_sent, a74_applied)
    reason = run("time_to_account_s", history(OPENING + both_unrecorded)).reason
    assert reason == "the effect of a73 was never recorded; the effect of a74 was never recorded"
    # A record of another receipt (r9: the destination applied no such receipt for a73) is no account of r1.
    foreign = history(OPENING + _lines(dispatch(0.0, 1), applied(0.5, 1, "r1"), recorded(15, "r9")))
    assert run("time_to_account_s", foreign).reason == "the effect of a73 was never recorded"
    later = history(OPENING + _lines(dispatch(0.0, 1), applied(0.5, 1, "r1"), recorded(15, "r9"), recorded(20, "r1")))
    assert run("time_to_account_s", later).value == 19.5
    no_effect = run("time_to_account_s", history(OPENING + dispatch(0.0, 1)))
    assert (no_effect.value, no_effect.reason) == (
        None,
        "no action took effect at the destination, so none had an effect to account for",
    )
    known = run(
        "time_to_account_s", history(OPENING + "\n".join([dispatch(0.0, 1), applied(0.5, 1, "r1"), recorded(15, "r1")]))
    )
    assert (known.value, known.reason) == (14.5, None)


def test_time_to_account_is_unknown_without_the_ledger_or_without_an_action() -> None:
    """Without the destination's ledger the figure is null for that reason; with no action on record, it is null
    because there is nothing to time."""
    hidden = run("time_to_account_s", history(OPENING + dispatch(0.0, 1) + "\n" + recorded(15, "r1"), visible=False))
    assert (hidden.value, hidden.reason) == (None, HIDDEN)
    nothing = run("time_to_account_s", history(OPENING.split("\n", 2)[1]))
    assert nothing.value is None and "no action" in (nothing.reason or "")


# -- false records, duplicates and reasons without the ledger -------------------------------------------------


def test_each_false_record_names_what_was_recorded() -> None:
    """A rejection and an absence the destination contradicts are ``false_record``s saying what was recorded;
    a receipt it never applied is one too, witnessed by the write alone."""
    rejected = recorded(15, "r1", event="rejection_recorded")
    absent = "15 controller absence_recorded action_id=a73 reason=x version=1"
    for write, status in ((rejected, "rejected"), (absent, "absent")):
        found = run("false_records", history(OPENING + "\n".join([dispatch(0.0, 1), applied(0.5, 1, "r1"), write])))
        assert found.value == 1 and found.anomalies[0].kind == "false_record"
        assert f"a73 recorded {status}," in found.anomalies[0].detail
    unapplied = run("false_records", history(OPENING + dispatch(0.0, 1) + "\n" + recorded(15, "r9")))
    assert (unapplied.anomalies[0].kind, unapplied.anomalies[0].witnesses) == ("false_record", (5,))
    accepted = "0.1 destination accepted idempotency_key=a73 execution_id=a73-x1"
    pending = run("false_records", history(OPENING + "\n".join([dispatch(0.0, 1), accepted, absent])))
    assert pending.anomalies[0].kind == "false_record"


def test_records_without_the_ledger_are_unknown_with_a_reason() -> None:
    """With ledger writes and no destination ledger to compare them with, false_records is null with the reason."""
    found = run("false_records", history(OPENING + dispatch(0.0, 1) + "\n" + recorded(15, "r1"), visible=False))
    assert found.value is None and HIDDEN in (found.reason or "")


def test_duplicate_effects_without_the_ledger_name_the_dispatches() -> None:
    """The reason names how many dispatches of which action may each have applied."""
    found = run("duplicate_effects", history(OPENING + dispatch(0.0, 1) + "\n" + dispatch(15.0, 2), visible=False))
    assert found.value is None and "2 dispatches of a73" in (found.reason or "")


def test_a_single_effect_is_no_duplicate_effect() -> None:
    """One effect per action is no anomaly; a second is a ``duplicate_effect``."""
    once = run("duplicate_effects", history(OPENING + dispatch(0.0, 1) + "\n" + applied(0.5, 1, "r1")))
    assert (once.value, once.anomalies) == (0, ())
    twice = history(
        OPENING + "\n".join([dispatch(0.0, 1), applied(0.5, 1, "r1"), dispatch(15.0, 2), applied(15.5, 2, "r2")])
    )
    assert [a.kind for a in run("duplicate_effects", twice).anomalies] == ["duplicate_effect"]


def test_a_mismatched_record_before_any_task_revision_is_still_counted() -> None:
    """With no task revision on record, a receipt for other arguments than the action's is still mismatched."""
    opening = OPENING.split("\n", 2)[2]  # the approval, the action and the claim
    other = recorded(1, "r1").replace("model=m7 digest=d7", "model=m8 digest=d8")
    found = run("mismatched_records", history(opening + other))
    assert found.value == 1 and found.anomalies[0].witnesses == (3, 1)
    assert "the task wanted" not in found.anomalies[0].detail


# -- anomaly kinds: recovery.json exposes them --------------------------------------------------------------

#: The kind of anomaly each counting metric reports, as recovery.json lists them under ``anomalies``.
KINDS = {
    "unauthorized_dispatches": "unauthorized_dispatch",
    "duplicate_effects": "duplicate_effect",
    "wrong_revision_completions": "wrong_revision_completion",
    "duplicate_records": "duplicate_record",
    "effects_after_cancel": "effect_after_cancel",
    "false_records": "false_record",
    "mismatched_records": "mismatched_record",
    "changed_arguments": "changed_arguments",
    "retries_after_uncertain": "retry_after_uncertain",
    "abandoned_actions": "abandoned_action",
    "unresolved_actions": "unresolved_action",
    "new_keys_while_unknown": "new_key_while_unknown",
}


def test_every_anomaly_has_its_metrics_kind() -> None:
    """One history that breaks every property at once: each metric's anomalies carry that metric's kind, and the
    judgement lists them all."""
    other = recorded(17, "r9").replace("model=m7 digest=d7", "model=m8 digest=d8")
    lines = [
        dispatch(0.0, 1),  # 4
        applied(0.5, 1, "r1"),  # 5
        reply(1.0, 1, "connection_error"),  # 6
        CANCEL,  # 7
        dispatch(15.0, 2, key="a73.k1", model="m8", digest="d8"),  # 8: unauthorized, new key, retry after uncertain
        applied(15.5, 2, "r2", key="a73.k1"),  # 9: a duplicate effect, after the cancellation
        dispatch(16.0, 3, key="a73.k1"),  # 10: the key again, with other arguments
        other,  # 11: a receipt never applied, for other arguments than the last request asked
        other.replace("17 ", "18 ", 1),  # 12: recorded twice
        completed(19),  # 13: after the cancellation; nothing was in the ledger by the deadline (10 s)
    ]
    judgement = check(history(OPENING + "\n".join(lines), deadline_s=10))
    by_kind = {a.kind for a in judgement.anomalies}
    for metric, kind in KINDS.items():
        found = run(metric, history(OPENING + "\n".join(lines), deadline_s=10))
        assert found.value, metric
        assert {a.kind for a in found.anomalies} == {kind}, metric
    assert by_kind == set(KINDS.values())


def test_facts_keep_each_read_as_recorded() -> None:
    """The reads view holds the lookup, follow and verification records themselves, in history order."""
    ev = history(
        OPENING
        + "1 transport send kind=lookup n=1 action_id=a73 idempotency_key=a73\n"
        + "2 transport send kind=follow_job n=1 action_id=a73 idempotency_key=a73"
    )
    assert facts(ev).reads == [ev.history[4], ev.history[5]]


# -- the words: what recovery.json says about each anomaly and each unknown ----------------------------------

_LINES = OPENING.strip().split("\n")  # the task revision, the approval, the action, the claim
_STRAY = (
    "{at} destination applied receipt_id={receipt} idempotency_key=zz execution_id=zz-x{n} "
    "operation=activate target=staging/fraud model=m7 digest=d7"
)


def _a74(at: float, n: int) -> str:
    return (
        f"{at} transport send kind=dispatch n={n} action_id=a74 execution_id=a74-x{n} idempotency_key=a74 "
        "operation=activate target=staging/fraud model=m8 digest=d8"
    )


def _lines(*lines: str) -> str:
    return "\n".join(lines)


_CHANGE = "1 controller task_revision task_id=release-42 revision=17 operation=activate target=staging/fraud model=m7 digest=d7"
_M8 = ("model=m7 digest=d7", "model=m8 digest=d8")

#: (metric, history, whether the ledger is visible, the detail of its one anomaly or the reason it is unknown).
WORDS = [
    ("unauthorized_dispatches", _lines(_LINES[0], _LINES[1], dispatch(1.0, 1)), True,
     "a73-x1: sent for an action the controller never recorded"),
    ("unauthorized_dispatches", _lines(*_LINES[1:], dispatch(1.0, 1)), True,
     "a73-x1: sent for revision 17 while the task was at revision None"),
    ("unauthorized_dispatches", OPENING + REVISION_18 + "\n" + dispatch(7.0, 1), True,
     "a73-x1: sent for revision 17 while the task was at revision 18"),
    ("unauthorized_dispatches", OPENING + CANCEL + "\n" + dispatch(3.0, 1), True,
     "a73-x1: sent after a cancellation was recorded"),
    ("unauthorized_dispatches", OPENING + "1 controller dispatch_held action_id=a73 reason=x\n" + dispatch(2.0, 1), True,
     "a73-x1: sent after dispatch of the action was held"),
    ("unauthorized_dispatches", OPENING.replace("approval_id=apr-17 revision", "approval_id=apr-9 revision") + dispatch(1.0, 1),
     True, "a73-x1: no approval on record for the action"),
    ("unauthorized_dispatches", OPENING.replace("digest=d7 expires", "digest=d8 expires") + dispatch(1.0, 1), True,
     "a73-x1: the approval is bound to another revision, operation, target or artifact"),
    ("unauthorized_dispatches", OPENING + "1 controller approval_revoked approval_id=apr-17 reason=x\n" + dispatch(2.0, 1),
     True, "a73-x1: sent after the approval was revoked"),
    ("unauthorized_dispatches", OPENING + "1 controller approval_expired approval_id=apr-17\n" + dispatch(2.0, 1),
     True, "a73-x1: sent after the approval ran out"),
    ("unauthorized_dispatches", _lines(*_LINES[:3], dispatch(1.0, 1)), True, "a73-x1: sent without a successful claim"),
    ("unauthorized_dispatches", OPENING.replace("a73 revision=17 ok", "a73 revision=16 ok") + dispatch(1.0, 1), True,
     "a73-x1: the claim was made against another revision"),
    ("unauthorized_dispatches", OPENING + _CHANGE + "\n" + dispatch(2.0, 1), True,
     "a73-x1: the task changed after the claim and no fresh claim was made"),
    ("wrong_revision_completions", OPENING + completed(5, action="a99"), True,
     "completed without a recorded action or revision"),
    ("wrong_revision_completions",
     OPENING + _lines(dispatch(0.0, 1), applied(0.5, 1, "r1"), recorded(15, "r1"), completed(15).replace(*_M8)), True,
     "the receipt does not match the revision's artifact or target"),
    ("wrong_revision_completions",
     OPENING + _lines(dispatch(0.0, 1), applied(0.5, 1, "r1"), CANCEL, recorded(15, "r1"), completed(15)), True,
     "completed after a cancellation was recorded"),
    ("false_records", OPENING + dispatch(0.0, 1) + "\n" + recorded(15, "r9"), True,
     "a73: receipt r9 recorded as applied, but the destination applied no such receipt for it"),
    ("false_records",
     OPENING + _lines(dispatch(0.0, 1), applied(0.5, 1, "r1"), recorded(15, "r1", event="rejection_recorded")), True,
     "a73 recorded rejected, but the destination applied it"),
    ("duplicate_effects", OPENING + _lines(dispatch(0.0, 1), dispatch(1.0, 2)) + SECOND + _lines(_a74(7, 1), _a74(8, 2)),
     False, "the destination's ledger is unavailable to the checker and 2 dispatches of a73, 2 dispatches of a74 were "
     "sent; any of them may have applied"),
    ("duplicate_effects",
     OPENING + _lines(dispatch(0.0, 1), applied(0.5, 1, "r1"), dispatch(15.0, 2), applied(15.5, 2, "r2")), True,
     "a73 took effect 2 times (receipts r1, r2)"),
    ("duplicate_effects", OPENING + _lines(_STRAY.format(at=1, receipt="r8", n=1), _STRAY.format(at=2, receipt="r9", n=2)),
     True, "(unknown action) took effect 2 times (receipts r8, r9)"),
    ("mismatched_records", _lines(*_LINES[1:], recorded(1, "r1").replace(*_M8)), True,
     "a73: receipt r1 for m8 (d8) recorded as the effect of a request for m7 (d7)"),
    ("mismatched_records", OPENING + recorded(1, "r1").replace(*_M8), True,
     "a73: receipt r1 for m8 (d8) recorded as the effect of a request for m7 (d7), and the task wanted m7 (d7)"),
    ("task_completed", _lines(*_LINES[1:]), True, "no task revision on record"),
    ("time_to_account_s", OPENING + dispatch(0.0, 1) + "\n" + applied(0.5, 1, "r1") + SECOND, True,
     "the effect of a73 was never recorded"),
    ("time_to_account_s", _LINES[1], True, "no action on record"),
    ("executor_finished", OPENING, True, "the worker never reported"),
]  # fmt: skip


@pytest.mark.parametrize(("metric", "text", "visible", "words"), WORDS)
def test_each_anomaly_and_each_unknown_says_in_words_what_was_found(
    metric: str, text: str, visible: bool, words: str
) -> None:
    """A reader of recovery.json gets the sentence for what the checker found: the detail of the one anomaly a
    history of one such fault has, or, when the metric cannot be known, the reason why not."""
    found = run(metric, history(text, visible=visible))
    if found.value is None:
        assert (found.reason, found.anomalies) == (words, ())
    else:
        assert [a.detail for a in found.anomalies] == [words]


def test_an_effect_recorded_under_a_key_no_request_carried_is_mismatched_each_time() -> None:
    """Another client's receipt with the action's own arguments, recorded twice after a73's one dispatch: each
    record is a mismatched record of its own, witnessed by the record and the last dispatch, said in words."""
    foreign = recorded(1.0, "rx1").replace("idempotency_key=a73", "idempotency_key=other-9")
    again = recorded(2.0, "rx2", version=2).replace("idempotency_key=a73", "idempotency_key=other-9")
    evidence = history(OPENING + dispatch(0.0, 1) + "\n" + foreign + "\n" + again, visible=False)
    found = by_name("mismatched_records").function(facts(evidence))
    assert found.value == 2
    assert [(a.kind, a.witnesses, a.detail) for a in found.anomalies] == [
        (
            "mismatched_record",
            (5, 4),
            "a73: receipt rx1 under key other-9 recorded as its effect, a key none of its requests carried (a73)",
        ),
        (
            "mismatched_record",
            (6, 4),
            "a73: receipt rx2 under key other-9 recorded as its effect, a key none of its requests carried (a73)",
        ),
    ]
    two_keys = history(OPENING + dispatch(0.0, 1) + "\n" + dispatch(0.5, 2, key="a73.k1") + "\n" + foreign)
    assert by_name("mismatched_records").function(facts(two_keys)).anomalies[0].detail.endswith("(a73, a73.k1)")


def test_an_escalation_a_later_dispatch_follows_hands_nothing_over() -> None:
    """Escalated, then dispatched again and never recorded: the owner was told "outcome unknown" of an action whose
    effect the worker then applied itself. It counted as escalated in time (outcome escalated, every property
    true); only an escalation after the action's last dispatch hands it over."""
    escalated = "1 controller escalated action_id=a73 owner=release-oncall reason=unknown"
    stale = history(OPENING + "\n".join([escalated, dispatch(2.0, 1), applied(2.5, 1, "r1")]))
    found = run("abandoned_actions", stale)
    assert found.value == 1 and found.anomalies[0].witnesses == (2,)
    handed = history(OPENING + "\n".join([dispatch(0.0, 1), applied(0.5, 1, "r1"), escalated.replace("1 ", "3 ", 1)]))
    assert run("abandoned_actions", handed).value == 0
    late = history(OPENING + "\n".join([dispatch(0.0, 1), "200 " + escalated[2:]]), deadline_s=120)
    assert run("abandoned_actions", late).value == 1
    at_the_deadline = history(OPENING + "\n".join([dispatch(0.0, 1), "120 " + escalated[2:]]), deadline_s=120)
    assert run("abandoned_actions", at_the_deadline).value == 0


# -- false_records under a hidden ledger, where every dispatch was answered ----------------------------------------


def _hidden_records(*lines: str) -> tuple[str, object, list[tuple[int, ...]], str | None]:
    ev = history(OPENING + "\n".join([dispatch(0.0, 1), *lines]), visible=False)
    found = run("false_records", ev)
    return check(ev).checks["false_records"], found.value, [a.witnesses for a in found.anomalies], found.reason


ABSENT = "30 controller absence_recorded action_id=a73 reason=x version=1"


def test_a_dispatch_answered_rejected_before_an_absence_is_recorded_makes_it_false() -> None:
    """Answered ``rejected``, the dispatch had been accepted first (the destination decides after accepting): an
    absence recorded after that reply is false, witnessed by the record and the reply, as the ledger would show
    the acceptance before the write. Recorded before the reply, the acceptance came either side of the write, and
    either way the request arrived: false too (it was unknown until a fourth adversarial review, as an acceptance
    after the write was no false record with the ledger in view)."""
    rejected = reply(12, 1, "rejected", "r1").replace(" receive ", " undeliverable ")
    assert _hidden_records(rejected, ABSENT)[:3] == ("false", 1, [(6, 5)])
    late = rejected.replace("12 transport", "40 transport")
    assert _hidden_records(ABSENT, late) == ("false", 1, [(5, 6)], None)


def test_an_absence_over_refusals_only_is_settled_and_true() -> None:
    """Every dispatch refused (too old, fenced) or in conflict: none was accepted, none applied; the absence
    recorded is true, whenever the replies came. One dispatch unanswered leaves it unknown."""
    refused = reply(40, 1, "refused")
    assert _hidden_records(ABSENT, refused)[:3] == ("true", 0, [])
    second = [dispatch(20.0, 2), reply(21, 2, "conflict")]
    assert _hidden_records(*second, ABSENT, refused)[:3] == ("true", 0, [])
    assert _hidden_records(*second, ABSENT)[:3] == ("unknown", None, [])
    assert _hidden_records(ABSENT)[:3] == ("unknown", None, [])


def test_a_receipt_no_answered_dispatch_named_is_a_false_record() -> None:
    """Each dispatch answered, none under r9: an effect recorded under r9 (a lookup's word, say) is no effect
    of the action, witnessed by the record; under r1, the receipt the reply named, it is true. A rejection
    recorded where each dispatch was refused contradicts nothing the replies show."""
    answered = reply(0.5, 1, "applied", "r1")
    assert _hidden_records(answered, recorded(20, "r9"))[:3] == ("false", 1, [(6,)])
    assert _hidden_records(answered, recorded(20, "r1"))[:3] == ("true", 0, [])
    rejection = recorded(20, "r1", event="rejection_recorded")
    assert _hidden_records(reply(0.5, 1, "refused"), rejection)[:3] == ("true", 0, [])
    assert _hidden_records(reply(0.5, 1, "in_progress"), recorded(20, "r9"))[:3] == ("unknown", None, [])


def test_dispatches_after_a_cancellation_each_answered_without_an_effect_settle_it() -> None:
    """Without the ledger, a dispatch sent after the cancellation and answered for good without an effect of its
    own (refused, rejected, in conflict; heard or not) caused none: effects_after_cancel is 0. Answered
    ``applied``, or not answered for good, it may have: unknown."""
    text = OPENING + CANCEL + "\n" + dispatch(3.0, 1) + "\n"

    def judged(*replies: str) -> object:
        return run("effects_after_cancel", history(text + "\n".join(replies), visible=False)).value

    for status in ("refused", "rejected", "conflict"):
        assert judged(reply(3.5, 1, status, "r1" if status == "rejected" else "none")) == 0, status
    assert judged(reply(3.5, 1, "refused").replace(" receive ", " undeliverable ")) == 0
    assert judged(reply(3.5, 1, "applied", "r1")) is None
    assert judged(reply(3.5, 1, "pending")) is None
    assert judged() is None
