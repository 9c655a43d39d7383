"""What the device connector and the bridge answer, field by field, where mutation testing found no test asking
(tests/MUTANTS.md lists the mutants). Each expectation comes from the contract the actor's docstring states:
every connector reply about a job names that job; a crash kills the executions of the process that crashed,
however many crashes came before; a replayed call names the receipt it replays; only a conclusive verification
lifts the convenience API's block."""

from __future__ import annotations

from test_seeds_actors import M7, bridge, connector, dispatch, read, timed

from harness.model.events import (
    CallReplayed,
    ConnectionBroken,
    JobCompleted,
    JobReplayed,
    JobStarted,
)
from harness.scenario import BridgeSpec
from harness.scenario.faults import BridgeConnectionError, ConnectorCrash, LookupUnavailable


def _crash(phase: str, nth: int = 1) -> ConnectorCrash:
    return ConnectorCrash(boundary="connector_crash", phase=phase, nth=nth, count=1)  # type: ignore[arg-type]


# -- the device connector ------------------------------------------------------------------------------------


def test_every_reply_about_a_job_names_it() -> None:
    """The completed reply, a replay of it, and a follow of it all carry the job ID the ledger gave the key; the
    replay is recorded under the execution that asked for it."""
    replies, events = timed(connector(), [(0.0, dispatch(1)), (5.0, dispatch(2)), (6.0, read("follow_job", 1))])
    (_, first), (_, again), (_, follow) = replies
    assert first is not None and (first.status, first.job_id) == ("applied", "job-1") and first.receipt
    assert again is not None and (again.status, again.job_id, again.receipt) == ("applied", "job-1", first.receipt)
    assert follow is not None and (follow.effect, follow.job_id, follow.receipt) == ("applied", "job-1", first.receipt)
    replayed = [e for e in events if isinstance(e, JobReplayed)]
    assert [(e.execution_id, e.job_id, e.receipt_id) for e in replayed] == [
        ("a73-x2", "job-1", first.receipt.receipt_id),
        (None, "job-1", first.receipt.receipt_id),  # a follow is no execution
    ]


def test_a_request_or_follow_while_the_job_runs_says_running_and_names_the_job() -> None:
    """A 20 s command under a 4 s wait: a same-key request at 5 s and a follow at 6 s both get running with the
    job's ID; a second key starts a job of its own."""
    replies, events = timed(
        connector(),
        [(0.0, dispatch(1)), (5.0, dispatch(2)), (6.0, read("follow_job", 1)), (7.0, dispatch(3, key="other"))],
        apply_s=20.0,
    )
    (_, first), (_, again), (_, follow), (_, other) = replies
    assert first is not None and (first.status, first.job_id) == ("running", "job-1")
    assert again is not None and (again.status, again.job_id) == ("running", "job-1")
    assert follow is not None and (follow.effect, follow.job_id) == ("running", "job-1")
    assert other is not None and (other.status, other.job_id) == ("running", "job-2")
    assert [e.job_id for e in events if isinstance(e, JobStarted)] == ["job-1", "job-2"]


def test_a_follow_returns_when_the_job_finishes_not_when_the_wait_ends() -> None:
    """The job finishes 3 s into a 4 s wait: the follow answers then."""
    replies, _ = timed(connector(), [(0.0, dispatch(1)), (5.0, read("follow_job", 1))], apply_s=8.0)
    (_, first), (at, follow) = replies
    assert first is not None and first.status == "running"
    assert follow is not None and follow.effect == "applied"
    assert 8.0 <= at < 9.0  # done at 8 s plus the latency of the apply, well before the wait's end at 9 s


def test_a_started_record_without_completed_is_unknown_outcome_naming_its_job() -> None:
    """A crash after started: a same-key request and a follow after the restart both get unknown_outcome with
    the job's ID (the connector cannot tell whether the effect ran)."""
    replies, _ = timed(
        connector(),
        [(0.0, dispatch(1)), (20.0, dispatch(2)), (21.0, read("follow_job", 1))],
        (_crash("after_started"),),
    )
    (_, first), (_, again), (_, follow) = replies
    assert first is None
    assert again is not None and (again.status, again.job_id) == ("unknown_outcome", "job-1")
    assert follow is not None and (follow.effect, follow.job_id) == ("unknown_outcome", "job-1")


def test_a_second_crash_kills_the_executions_of_the_process_that_crashed() -> None:
    """A crash, a restart, a job started in the new process, then another crash while it runs: that job dies
    with its process too (no completed record, no report), however many crashes came before."""
    replies, events = timed(
        connector(),
        [(0.0, dispatch(1, key="k1")), (20.0, dispatch(2, key="k2")), (21.0, dispatch(3, key="k3"))],
        (_crash("before_started", nth=1), _crash("before_started", nth=3)),
        apply_s=8.0,
    )
    assert [r for _, r in replies] == [None, None, None]
    assert [e.job_id for e in events if isinstance(e, JobStarted)] == ["job-1"]
    assert not [e for e in events if isinstance(e, JobCompleted)]


# -- the bridge ------------------------------------------------------------------------------------------------


def test_the_same_uuid_with_other_content_is_a_conflict() -> None:
    other = M7.model_copy(update={"model": "m8"})
    replies, _ = timed(bridge(), [(0.0, dispatch(1)), (5.0, dispatch(2, artifact=other))])
    assert [r.status if r else None for _, r in replies] == ["applied", "conflict"]


def test_a_replayed_call_names_the_receipt_it_replays_and_a_call_still_out_is_pending() -> None:
    """The same UUID while the first call is out: pending, replaying no receipt; once it answered: its receipt."""
    replies, events = timed(bridge(), [(0.0, dispatch(1)), (1.0, dispatch(2)), (10.0, dispatch(3))], apply_s=5.0)
    (_, first), (_, early), (_, late) = replies
    assert first is not None and first.status == "applied" and first.receipt is not None
    assert early is not None and early.status == "pending" and early.receipt is None
    assert late is not None and late.receipt == first.receipt
    replayed = [(e.execution_id, e.receipt_id) for e in events if isinstance(e, CallReplayed)]
    assert replayed == [("a73-x2", None), ("a73-x3", first.receipt.receipt_id)]


def test_a_connection_error_is_recorded_as_marked_do_not_replay() -> None:
    fault = (BridgeConnectionError(boundary="bridge_connection_error", forwarded=True),)
    _, events = timed(bridge(), [(0.0, dispatch(1))], fault)
    assert [(e.forwarded, e.do_not_replay) for e in events if isinstance(e, ConnectionBroken)] == [(True, True)]


def test_only_a_conclusive_verification_lifts_the_block() -> None:
    """After an uncertain outcome the convenience API blocks mutations; a verification answered unknown (the
    read was unavailable) leaves the block; a confirmed one lifts it."""
    faults = (
        BridgeConnectionError(boundary="bridge_connection_error", forwarded=True),
        LookupUnavailable(boundary="lookup_unavailable", nth=1, count=1),
    )
    requests = [
        (0.0, dispatch(1)),
        (5.0, read("verify", 1)),
        (10.0, dispatch(2)),
        (15.0, read("verify", 2)),
        (20.0, dispatch(3)),
    ]
    replies, _ = timed(bridge(BridgeSpec(block_after_uncertain=True)), requests, faults)
    statuses = [(r.status, r.verified) if r else None for _, r in replies]
    assert statuses == [
        ("connection_error", None),
        (None, "unknown"),
        ("blocked", None),
        (None, "confirmed"),
        ("applied", None),
    ]
