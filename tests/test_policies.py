"""Policies are plain functions of a Situation: tested without a simulator."""

from __future__ import annotations

import math

import pytest

from harness.policy import (
    Action,
    ApprovalView,
    Artifact,
    AttemptView,
    CommandResult,
    ContractView,
    Escalate,
    Hold,
    LookUp,
    LookupView,
    PolicyError,
    Receipt,
    RecordAbsent,
    RecordEffect,
    RetrySameAction,
    Situation,
    Stop,
    TaskView,
    Wait,
    load_policy,
)
from policies.reconcile_and_reauthorize import recovery_decision

M7 = Artifact(operation="activate", target="staging/fraud", model="m7", digest="d7")
ACTION = Action(
    action_id="a73", task_id="release-42", revision=17, artifact=M7, approval_id="apr-17", idempotency_key="a73"
)
RECEIPT = Receipt(receipt_id="r1", status="applied", idempotency_key="a73", artifact=M7)


CONTRACT = ContractView(
    dedupe="durable",
    dedupe_window_s=300.0,
    on_conflict="reject",
    on_in_flight="pending",
    request_validity_s=60.0,
    fencing=False,
    lookup_lag_s=0.0,
)


def situation(
    now: float = 15.0,
    lookups: tuple[LookupView, ...] = (),
    revision: int = 17,
    cancel: bool = False,
    approval: bool = True,
    recorded: str | None = None,
    contract: ContractView = CONTRACT,
    last: CommandResult | None = None,
    held: bool = False,
    deadline: float = 120.0,
) -> Situation:
    return Situation(
        now_s=now,
        deadline_s=deadline,
        started_at_s=0.0,
        action=ACTION,
        attempts=(
            AttemptView(
                execution_id="a73-x1",
                idempotency_key="a73",
                recorded_at_s=0.0,
                sent=True,
                sent_at_s=0.0,
                observation="timeout",
            ),
        ),
        lookups=lookups,
        task=TaskView(
            task_id="release-42",
            revision=revision,
            artifact=M7,
            cancel_requested=cancel,
            completed_revision=None,
        ),
        approval=ApprovalView(approval_id="apr-17", valid=approval, expires_at_s=None),
        contract=contract,
        recorded=recorded,  # type: ignore[arg-type]
        escalated=False,
        held=held,
        last=last,
        refusals=(last,) if last is not None and last.refused else (),
    )


RECONCILE = load_policy("reconcile_and_reauthorize")


@pytest.mark.parametrize(
    ("effect", "same", "auth", "dedupe", "decision"),
    [
        ("applied", False, False, False, "record_observed_effect"),
        ("rejected", True, True, True, "record_rejection"),
        ("pending", True, True, True, "wait_or_escalate"),
        ("unknown", True, True, True, "wait_or_escalate"),
        ("absent", True, True, True, "retry_same_action"),
        ("absent", False, True, True, "hold_dispatch"),
        ("absent", True, False, True, "hold_dispatch"),
        ("absent", True, True, False, "hold_dispatch"),
    ],
)
def test_decision_table(effect: str, same: bool, auth: bool, dedupe: bool, decision: str) -> None:
    """The decision table of seed 003, row by row."""
    assert recovery_decision(effect, same, auth, dedupe) == decision  # type: ignore[arg-type]


def test_reconcile_looks_up_first() -> None:
    """With nothing known, reconciling asks the destination before anything else."""
    assert isinstance(RECONCILE.decide(situation()), LookUp)


def test_reconcile_records_a_matching_receipt_even_for_an_old_revision() -> None:
    """An applied receipt is recorded as an observed effect whatever the task's current revision."""
    s = situation(revision=18, lookups=(LookupView(at_s=15.2, effect="applied", receipt=RECEIPT),), now=15.3)
    assert RECONCILE.decide(s) == RecordEffect(receipt_id="r1")


def test_reconcile_escalates_a_mismatched_receipt() -> None:
    """A receipt for other arguments than the action sent is not recorded: it is escalated."""
    other = RECEIPT.model_copy(update={"artifact": M7.model_copy(update={"model": "m8"})})
    s = situation(lookups=(LookupView(at_s=15.2, effect="applied", receipt=other),), now=15.3)
    assert isinstance(RECONCILE.decide(s), Escalate)


def test_reconcile_retries_absent_only_with_a_claim() -> None:
    """Absent with everything still valid: retry the same action, claiming it first (its claim leased to the
    moment it must leave by for its key's window to cover an original landing just after the read, or to the
    deadline less the margin, whichever comes first); with no earlier request still on its way (the original,
    sent at 0 s, is refused from 60 s), leased to the deadline less the margin only."""
    s = situation(lookups=(LookupView(at_s=15.2, effect="absent"),), now=15.3, deadline=400.0)
    assert RECONCILE.decide(s) == RetrySameAction(claim=True, send_by_s=15.2 + 300.0 - 60.0)
    s = situation(lookups=(LookupView(at_s=15.2, effect="absent"),), now=15.3)
    assert RECONCILE.decide(s) == RetrySameAction(claim=True, send_by_s=120.0 - 15.0)
    s = situation(lookups=(LookupView(at_s=60.2, effect="absent"),), now=60.3, deadline=400.0)
    assert RECONCILE.decide(s) == RetrySameAction(claim=True, send_by_s=400.0 - 15.0)


def test_reconcile_holds_absent_after_cancel() -> None:
    """Absent after a cancellation: hold further dispatch, never retry."""
    s = situation(cancel=True, lookups=(LookupView(at_s=15.2, effect="absent"),), now=15.3)
    assert isinstance(RECONCILE.decide(s), Hold)


def test_reconcile_waits_for_late_originals_before_recording_absence() -> None:
    """Held and absent, but a request sent at 0 s may still arrive until 60 s: wait, then record the absence."""
    early = situation(cancel=True, held=True, lookups=(LookupView(at_s=15.2, effect="absent"),), now=15.3)
    waited = RECONCILE.decide(early)
    assert isinstance(waited, Wait) and 15.3 + waited.duration_s >= 60.0
    final = situation(cancel=True, held=True, lookups=(LookupView(at_s=60.3, effect="absent"),), now=60.4)
    assert isinstance(RECONCILE.decide(final), RecordAbsent)


def test_reconcile_never_records_absence_a_lagging_lookup_could_hide() -> None:
    """With lookups 70 s behind, no absence is final before the deadline: escalate instead."""
    lagging = CONTRACT.model_copy(update={"lookup_lag_s": 70.0})
    s = situation(cancel=True, held=True, lookups=(LookupView(at_s=15.2, effect="absent"),), now=15.3, contract=lagging)
    assert isinstance(RECONCILE.decide(s), Escalate)


def test_reconcile_does_not_retry_when_the_window_is_shorter_than_request_validity() -> None:
    """A 20 s window cannot cover a late original valid for 60 s: no retry at 15 s, but a wait."""
    short = CONTRACT.model_copy(update={"dedupe_window_s": 20.0})
    s = situation(lookups=(LookupView(at_s=15.2, effect="absent"),), now=15.3, contract=short)
    assert isinstance(RECONCILE.decide(s), Wait)


@pytest.mark.parametrize(("window", "retries"), [(60.5, True), (60.25, False)])
def test_reconcile_retries_only_inside_the_window_of_an_original_landing_just_after_the_read(
    window: float, retries: bool
) -> None:
    """Revision 9: the original, sent at 0 s and unanswered, may land just after the read (sent at 15 s), and the
    key's window counts from that arrival: a retry arriving 60 s after it leaves must leave by 15 s + window - 60 s,
    and its claim is leased to that moment (the worker may send it later). At 15.5 s, a window of 60.5 s leaves
    it till 15.5 s; shorter, it waits for the absence to be final (60 s)."""
    contract = CONTRACT.model_copy(update={"dedupe_window_s": window})
    s = situation(lookups=(LookupView(at_s=15.2, sent_at_s=15.0, effect="absent"),), now=15.5, contract=contract)
    command = RECONCILE.decide(s)
    if retries:
        assert command == RetrySameAction(claim=True, send_by_s=15.5), command
    else:
        assert isinstance(command, Wait) and 15.5 + command.duration_s >= 60.0, command


@pytest.mark.parametrize(("replied_at", "retries"), [(15.0, True), (15.25, False)])
def test_reconcile_retries_under_a_short_window_once_every_attempt_had_reached_the_target(
    replied_at: float, retries: bool
) -> None:
    """An attempt whose reply came back by the time the read (sent at 15 s) saw the target had reached it: no
    earlier request can land unseen after the read, so a 60.25 s window is enough for the retry. One answered
    later may have landed after the read, and the retry could arrive 60 s after it: wait for the absence to be
    final."""
    contract = CONTRACT.model_copy(update={"dedupe_window_s": 60.25})
    answered = (
        situation()
        .attempts[0]
        .model_copy(update={"observation": "response", "response_status": "error", "replied_at_s": replied_at})
    )
    s = situation(lookups=(LookupView(at_s=15.2, sent_at_s=15.0, effect="absent"),), now=15.5, contract=contract)
    command = RECONCILE.decide(s.model_copy(update={"attempts": (answered,)}))
    assert command == RetrySameAction(claim=True, send_by_s=105.0) if retries else isinstance(command, Wait), command


def test_reconcile_waits_out_a_refused_claim_instead_of_repeating_it() -> None:
    """After its claim was refused, the policy does not ask for the same claim again at once."""
    refused = CommandResult(kind="retry_same_action", refused=True, reason="claim refused: target held")
    s = situation(lookups=(LookupView(at_s=15.2, effect="absent"),), now=15.3, last=refused)
    assert isinstance(RECONCILE.decide(s), Wait)


def test_reconcile_waits_then_escalates_unknown() -> None:
    """Unknown early: wait and look again; unknown near the deadline: escalate."""
    early = situation(lookups=(LookupView(at_s=15.2, effect="unknown"),), now=15.3)
    assert isinstance(RECONCILE.decide(early), Wait)
    late = situation(lookups=(LookupView(at_s=110.0, effect="unknown"),), now=110.1)
    assert isinstance(RECONCILE.decide(late), Escalate)


def test_every_policy_stops_once_recorded() -> None:
    """Once the controller has the action accounted for, every shipped policy stops."""
    for name in ("stop_on_timeout", "retry_same_key", "retry_new_key", "reconcile_and_reauthorize"):
        assert isinstance(load_policy(name).decide(situation(recorded="applied")), Stop), name


def test_loading_a_non_policy_is_refused() -> None:
    """An attribute without name, revision and decide() is refused with the fix."""
    with pytest.raises(PolicyError, match="needs str 'name'"):
        load_policy("harness.model:Frozen")


def test_reconcile_looks_again_after_each_wait() -> None:
    """After a full wait the last lookup is stale, even when float arithmetic leaves it a hair under wait_s."""
    stale = situation(lookups=(LookupView(at_s=15.328452, effect="unknown"),), now=25.328452)
    assert 25.328452 - 15.328452 < 10.0  # the float trap this guards against
    assert isinstance(RECONCILE.decide(stale), LookUp)


FOLLOW = load_policy("follow_and_inspect")
THROUGH_CONNECTOR = CONTRACT.model_copy(update={"via": "connector", "lookup_lag_s": 20.0})


def connector_answered_running() -> Situation:
    """Sent at 0 s through a device connector, which answered "running" at 4 s; requests are valid 60 s and the
    target's reads lag 20 s. A read sent at 30 s (the target as of 10 s) found the action absent."""
    running = {"observation": "response", "response_status": "running", "replied_at_s": 4.0, "job_id": "job-1"}
    answered = situation().attempts[0].model_copy(update=running)
    read = LookupView(at_s=30.2, sent_at_s=30.0, effect="absent")
    return situation(now=30.3, lookups=(read,), contract=THROUGH_CONNECTOR).model_copy(update={"attempts": (answered,)})


def dead_job_without_validity() -> Situation:
    """Sent at 0 s through a device connector that reported the job dead at 15.1 s; the target accepts a request
    however old and its reads lag 5 s. A read sent at 25.4 s (the target as of 20.4 s, after the death) found the
    action absent."""
    contract = THROUGH_CONNECTOR.model_copy(update={"request_validity_s": None, "lookup_lag_s": 5.0})
    dead = LookupView(at_s=15.1, sent_at_s=15.0, effect="unknown_outcome", source="follow_job", job_id="job-1")
    read = LookupView(at_s=25.7, sent_at_s=25.4, effect="absent")
    return situation(now=25.8, lookups=(dead, read), contract=contract)


def test_a_device_connectors_reply_bounds_nothing() -> None:
    """A connector's reply says nothing of when its job reached the target: the attempt may reach it until the
    request is too old (60 s), so a read catches up with it only at 80 s. Until then the policy waits, and does
    not retry on the absence read as of 10 s."""
    s = connector_answered_running()
    assert RECONCILE.reached_by_s(s) == 60.0
    assert RECONCILE.caught_up_s(s, 30.0) == 80.0
    waited = RECONCILE.decide(s)
    assert isinstance(waited, Wait) and 30.3 + waited.duration_s >= 80.0
    direct = s.model_copy(update={"contract": s.contract.model_copy(update={"via": "direct"})})
    assert RECONCILE.reached_by_s(direct) == 4.0  # a direct reply does bound it


def test_without_request_validity_reads_never_catch_up_with_an_attempt() -> None:
    """Where the target accepts a request however old, an unanswered attempt may reach it at any time: no read
    ever catches up with it (``inf``), so after a dead job no new operation follows a lagging read; the policy
    escalates instead."""
    s = dead_job_without_validity()
    assert FOLLOW.reached_by_s(s) == math.inf
    assert FOLLOW.caught_up_s(s, 25.4) == math.inf
    assert isinstance(FOLLOW.decide(s), Escalate)


# --- Revision 8: a round trip no wait came before, within the margin before the deadline ---------------------------

#: Seconds before the 120 s deadline: just inside the 15 s margin, and just outside it.
INSIDE, OUTSIDE = 120.0 - RECONCILE.escalate_margin_s, 120.0 - RECONCILE.escalate_margin_s - 0.001


@pytest.mark.parametrize("name", ["reconcile_and_reauthorize", "verify_before_mutation", "follow_and_inspect"])
def test_a_first_read_within_the_margin_escalates_and_one_before_it_is_sent(name: str) -> None:
    """A worker may start recovering at any moment: with nothing read yet and no more than the margin left, the
    read it would send escalates instead (its answer may not come back before the deadline); a moment earlier,
    the read is sent. Every safe policy, whatever it reads with."""
    policy = load_policy(name)
    read = policy.decide(situation(now=OUTSIDE))
    assert type(read).__name__ in ("LookUp", "VerifyOutcome", "FollowJob"), read
    late = policy.decide(situation(now=INSIDE))
    assert late == Escalate(reason="only 15 s left before the deadline, too little for an answer to come back")


def test_a_retry_within_the_margin_escalates_and_one_before_it_is_sent() -> None:
    """A retry is decided on a read, which may have taken long to answer: within the margin it escalates. One
    decided before it is leased to the margin's start: the worker may send it later, and a claim made inside the
    margin is refused (revision 10)."""
    absent = (LookupView(at_s=OUTSIDE - 0.2, sent_at_s=OUTSIDE - 1.0, effect="absent"),)
    assert RECONCILE.decide(situation(now=OUTSIDE, lookups=absent)) == RetrySameAction(claim=True, send_by_s=INSIDE)
    late = RECONCILE.decide(situation(now=INSIDE, lookups=absent))
    assert isinstance(late, Escalate) and late.reason.startswith("only 15 s left before the deadline")


def test_within_the_margin_only_a_read_right_after_a_wait_is_sent() -> None:
    """A read right after a wait is sent within the margin: the wait was taken only while it left the margin to
    escalate in, so the margin is not asked of the read again; nor of a wait. A read right after another round
    trip (a retry that waited out its reply, a read that took long) escalates, as the first read does."""
    stale = (LookupView(at_s=INSIDE - 10.0, effect="unknown"),)
    waited = RECONCILE.decide(situation(now=INSIDE, lookups=stale, last=CommandResult(kind="wait")))
    assert isinstance(waited, LookUp)
    for kind in ("retry_same_action", "retry_new_key", "look_up", "verify_outcome", "follow_job"):
        after = RECONCILE.decide(situation(now=INSIDE, lookups=stale, last=CommandResult(kind=kind)))
        assert isinstance(after, Escalate), kind
        outside = RECONCILE.decide(situation(now=OUTSIDE, lookups=stale, last=CommandResult(kind=kind)))
        assert isinstance(outside, LookUp), kind
    assert RECONCILE.last_chance(situation(now=INSIDE), Wait(duration_s=1.0)) is None
    assert RECONCILE.last_chance(situation(now=INSIDE), Hold(reason="no longer authorized")) is None
