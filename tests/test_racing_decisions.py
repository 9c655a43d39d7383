"""A dispatch is excused as decided before the caller was told "do not replay" only by its own decision.

Two workers recovering one action side by side each decide their dispatches, and a decided dispatch leaves
``worker.retry_send_s`` later: the last dispatching decision before a send may be the other worker's. Judged by
that one, a retry decided before the telling was counted a retry after an uncertain outcome, and the three safe
policies judged incorrect (``retries_after_uncertain`` took the latest decision of any worker before the send;
the auditor kept one decision per action, and agreed).
"""

from __future__ import annotations

import dataclasses

import pytest
from conftest import OPENING, history, shipped

from harness.check import check
from harness.check.facts import facts
from harness.check.registry import by_name
from harness.model import Evidence
from harness.model.events import ClaimDecided, CommandGiven, DispatchSent, ReplyReceived
from harness.policy import load_policy
from harness.scenario import Scenario
from harness.sim import simulate

SEND = "transport send kind=dispatch action_id=a73 idempotency_key=a73 operation=activate target=staging/fraud model=m7 digest=d7"


def retry(at: float, incarnation: int) -> str:
    return (
        f"{at} worker command action_id=a73 kind=retry_same_action claim=true send_by_s=none incarnation={incarnation}"
    )


def claim(at: float, ok: bool) -> str:
    reason = "none" if ok else "'attempt a73-x2 was recorded since the dispatch was decided'"
    return f"{at} controller claim action_id=a73 revision=17 ok={str(ok).lower()} reason={reason}"


def sent(at: float, n: int, attempt: bool = True) -> str:
    recorded = f"{at} controller attempt_recorded action_id=a73 execution_id=a73-x{n} idempotency_key=a73\n"
    return (recorded if attempt else "") + f"{at} {SEND} n={n} execution_id=a73-x{n}"


def receive(at: float, n: int | None, status: str, kind: str = "dispatch") -> str:
    execution = f"a73-x{n}" if n is not None else "none"
    return (
        f"{at} transport receive kind={kind} n={n or 1} action_id=a73 execution_id={execution} status={status} "
        "receipt_id=none"
    )


def judged(*lines: str) -> tuple[int | None, list[tuple[int, ...]]]:
    found = by_name("retries_after_uncertain").function(facts(history(OPENING + "\n".join(lines))))
    return found.value, [a.witnesses for a in found.anomalies]


ORIGINAL = sent(0.0, 1, attempt=False)  # entry 4: the dispatcher's own send (its claim is the opening's)


def test_a_retry_decided_before_the_telling_is_excused_though_another_worker_decided_one_since() -> None:
    """Worker 2 decides a retry; the original's do-not-replay error reaches the caller; worker 3 decides one in
    the same instant as its read's answer. Worker 2's claim is granted and its retry leaves: decided before the
    telling, it is no retry after an uncertain outcome. Worker 3's claim is then refused: it sends nothing."""
    value, witnesses = judged(
        ORIGINAL,
        retry(60.3, 2),  # 5
        receive(75.3, None, "absent", kind="verify"),  # 6: worker 3's read
        receive(75.3, 1, "connection_error"),  # 7: told
        retry(75.3, 3),  # 8
        claim(80.3, ok=True),  # 9: worker 2's
        sent(80.3, 2),  # 10, 11
        claim(95.3, ok=False),  # 12: worker 3's
    )
    assert (value, witnesses) == (0, [])


def test_the_retry_of_the_worker_that_decided_after_the_telling_is_one() -> None:
    """The same two decisions, but the first worker's claim is refused and the second worker's granted: the
    dispatch that leaves is the one decided after the telling, with no read between."""
    value, witnesses = judged(
        ORIGINAL,
        retry(60.3, 2),
        receive(75.3, None, "absent", kind="verify"),
        receive(75.3, 1, "connection_error"),  # 7
        retry(75.3, 3),
        claim(80.3, ok=False),
        claim(95.3, ok=True),
        sent(95.3, 2),  # 11, 12
    )
    assert (value, witnesses) == (1, [(7, 12)])


def test_without_claims_or_attempts_the_oldest_open_decision_sends_first() -> None:
    """A history with no claim or attempt records (unclaimed retries, hand-written): decided dispatches leave in
    the order they were decided, so the first send after two workers' decisions is the first worker's."""
    ev = [ORIGINAL, retry(60.3, 2), receive(75.3, 1, "connection_error"), retry(75.3, 3)]
    assert judged(*ev, sent(80.3, 2, attempt=False)) == (0, [])
    assert judged(*ev, sent(80.3, 2, attempt=False), sent(95.3, 3, attempt=False)) == (1, [(6, 9)])


def test_a_workers_next_command_closes_its_decision() -> None:
    """One worker decides a retry before the telling, its claim is refused (no record of it here), and it decides
    another after the telling: the dispatch that leaves is the later decision's, a retry after an uncertain
    outcome; the earlier decision, closed by the worker's next command, excuses nothing."""
    value, witnesses = judged(
        ORIGINAL, retry(60.3, 2), receive(75.3, 1, "connection_error"), retry(76.0, 2), sent(77.0, 2)
    )
    assert (value, witnesses) == (1, [(6, 9)])


# --- the simulator: the three safe policies, two workers, the telling between their decisions ------------------------


def racing() -> Scenario:
    """bridge_late_error_while_retry_leaves with two recovering workers and retries that take 20 s to leave;
    the original is late by just what makes its error reach the caller in the same instant as the second worker's
    read, at seed 7 (answered first, the second worker decides on it after the error). Found by searching the delay
    for that coincidence; a change to the latencies' draws moves it, and the first test below then fails."""
    base = shipped("bridge_late_error_while_retry_leaves")
    faults = list(base.faults)
    faults[0] = faults[0].model_copy(update={"delay_s": 75.19609010143401})
    worker = base.worker.model_copy(update={"recoverers": 2, "retry_send_s": 20.0})
    return base.model_copy(update={"faults": faults, "worker": worker})


def _told_between_decisions(evidence: Evidence) -> bool:
    """Worker 2 decided a retry before the do-not-replay error, worker 3 one after it with no read answered
    between, and worker 2's retry left after both; worker 3's claim was refused."""
    entries = evidence.history
    told = next(e.index for e in entries if isinstance(e, ReplyReceived) and e.status == "connection_error")
    retries = [e for e in entries if isinstance(e, CommandGiven) and e.command.kind == "retry_same_action"]
    sends = [e for e in entries if isinstance(e, DispatchSent)]
    refused = [e for e in entries if isinstance(e, ClaimDecided) and not e.ok]
    first, second = retries[0], retries[1]
    reads_between = [
        e for e in entries[told + 1 : second.index] if isinstance(e, ReplyReceived) and e.kind != "dispatch"
    ]
    return (
        first.incarnation != second.incarnation
        and first.index < told < second.index
        and not reads_between
        and len(sends) == 2
        and sends[1].index > second.index
        and len(refused) == 1
        and refused[0].index > sends[1].index
    )


@pytest.mark.parametrize("policy", ["reconcile_and_reauthorize", "follow_and_inspect", "verify_before_mutation"])
def test_a_safe_policys_retry_decided_before_the_telling_is_no_retry_after_uncertain(policy: str) -> None:
    """The case shows the pattern, and neither the checker nor the auditor counts the first worker's retry: the
    case is judged as the single worker's is (escalated), and every known metric equals the truth."""
    result = simulate(racing(), load_policy(policy), 7)
    assert _told_between_decisions(result.evidence)
    judgement = check(result.evidence)
    assert judgement.metrics["retries_after_uncertain"] == 0 == result.truth.retries_after_uncertain
    assert judgement.outcome == "escalated"
    truth = dataclasses.asdict(result.truth)
    for name, value in judgement.metrics.items():
        if name in truth and value is not None:
            assert value == truth[name] or isinstance(value, float), name


@pytest.mark.parametrize(
    "closing",
    [
        "60.5 worker command action_id=a73 kind=look_up incarnation=2",
        "60.5 worker crashed action_id=a73 incarnation=2",
        "60.5 worker report action_id=a73 finished=false claimed=none incarnation=2",
    ],
    ids=["a read", "a crash", "a report"],
)
def test_a_decision_its_worker_moved_on_from_excuses_nothing(closing: str) -> None:
    """Worker 2 decides a retry before the telling, then reads (or crashes, or reports) without sending it: that
    decision is closed. Worker 3 decides one after the telling, and an unclaimed send leaves: the later decision's,
    a retry after an uncertain outcome. Taken for worker 2's, it was excused."""
    value, witnesses = judged(
        ORIGINAL, retry(60.3, 2), closing, receive(75.3, 1, "connection_error"), retry(75.3, 3), sent(80.3, 2, False)
    )
    assert (value, witnesses) == (1, [(7, 9)])


def test_a_refused_claim_grants_the_next_attempt_to_no_decision() -> None:
    """Worker 2's retry, decided before the telling, is refused its claim; worker 3's, decided after, leaves with an
    attempt recorded and no claim of its own: that attempt is worker 3's decision, not the refused one's."""
    value, witnesses = judged(
        ORIGINAL, retry(60.3, 2), receive(75.3, 1, "connection_error"), retry(75.3, 3), claim(80.3, ok=False),
        sent(80.3, 2),
    )  # fmt: skip
    assert (value, witnesses) == (1, [(6, 10)])
