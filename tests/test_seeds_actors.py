"""The device connector (seed 000) and the bridge (seed 002) as actors: what each does at its boundaries."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import simpy
from conftest import run_into, shipped

from harness.check import check
from harness.model import Artifact
from harness.model.events import (
    CallBlocked,
    CallForwarded,
    CallReplayed,
    ConnectionBroken,
    ConnectorCrashed,
    Event,
    JobCompleted,
    JobReplayed,
    JobStarted,
    JobStillRunning,
)
from harness.policy import builtin_policy_names, load_policy
from harness.scenario import BridgeSpec, ConnectorSpec, DestinationSpec, FaultBase, scenario_cases
from harness.scenario.faults import (
    CONNECTOR_PHASES,
    BridgeConnectionError,
    BridgeRestart,
    ConnectorCrash,
    StartedNotDurable,
)
from harness.sim import simulate
from harness.sim.auditor import Auditor
from harness.sim.bridge import Bridge
from harness.sim.connector import Connector
from harness.sim.destination import Destination
from harness.sim.faults import Injector
from harness.sim.history import History
from harness.sim.messages import Reply, Request

M7 = Artifact(operation="activate", target="staging/fraud", model="m7", digest="d7")


def dispatch(n: int, key: str = "a73", artifact: Artifact = M7, budget_s: float = 30.0) -> Request:
    return Request(
        kind="dispatch",
        action_id="a73",
        n=n,
        idempotency_key=key,
        execution_id=f"a73-x{n}",
        artifact=artifact,
        budget_s=budget_s,
        approval_id="apr-17",
    )


def read(kind: Any, n: int, key: str = "a73") -> Request:
    return Request(kind=kind, action_id="a73", n=n, idempotency_key=key, artifact=M7 if kind == "verify" else None)


def drive(
    make: Any,
    requests: list[tuple[float, Request]],
    faults: tuple[FaultBase, ...] = (),
    apply_s: float = 0.5,
    validity_s: float | None = None,
) -> tuple[list[Reply | None], list[Event]]:
    """Send requests at given times to a connector or bridge in front of a non-deduplicating destination (one that
    refuses a request older than ``validity_s`` on arrival, if given)."""
    replies, events = timed(make, requests, faults, apply_s, validity_s)
    return [reply for _, reply in replies], events


def timed(
    make: Any,
    requests: list[tuple[float, Request]],
    faults: tuple[FaultBase, ...] = (),
    apply_s: float = 0.5,
    validity_s: float | None = None,
) -> tuple[list[tuple[float, Reply | None]], list[Event]]:
    """As ``drive``, with when each reply came back."""
    env = simpy.Environment()
    history = History(env)
    injector = Injector(faults, "a73", history)
    spec = DestinationSpec(dedupe="none", apply_s=apply_s, request_validity_s=validity_s)
    destination = Destination(env, spec, history, injector, Auditor(120.0), lambda _: True)
    front = make(env, history, injector, destination)
    replies: list[tuple[float, Reply | None]] = [(-1.0, None)] * len(requests)

    def send(i: int, at: float, request: Request):  # type: ignore[no-untyped-def]
        yield env.timeout(at)
        reply = yield from front.handle(request)
        replies[i] = (env.now, reply)

    for i, (at, request) in enumerate(requests):
        env.process(send(i, at, request))
    env.run(until=200)
    return replies, history.entries


def connector(spec: ConnectorSpec | None = None) -> Any:
    spec = spec or ConnectorSpec()
    return lambda env, history, injector, destination: Connector(env, spec, history, injector, destination)


def bridge(spec: BridgeSpec | None = None) -> Any:
    spec = spec or BridgeSpec()
    return lambda env, history, injector, destination: Bridge(env, spec, history, injector, destination)


def applied(events: list[Event]) -> int:
    return sum(1 for e in events if e.event == "applied" and e.actor == "destination")


# -- the device connector ------------------------------------------------------------------------------------


def test_the_connector_records_both_phases_and_replays_a_completed_request() -> None:
    """started before the effect, completed after it; the same request again replays the receipt, no new effect."""
    replies, events = drive(connector(), [(0.0, dispatch(1)), (5.0, dispatch(2))])
    assert [r.status for r in replies if r] == ["applied", "applied"]
    assert replies[0] and replies[1] and replies[0].receipt == replies[1].receipt
    kinds = [type(e) for e in events if isinstance(e, JobStarted | JobCompleted)]
    assert kinds == [JobStarted, JobCompleted] and applied(events) == 1


@pytest.mark.parametrize(
    ("changed", "why"),
    [({"artifact": M7.model_copy(update={"model": "m8"})}, "arguments"), ({"budget_s": 60.0}, "budget")],
)
def test_a_changed_request_under_the_same_key_is_a_conflict(changed: dict[str, Any], why: str) -> None:
    """Changing the arguments or the execution budget while keeping the key is a conflict, never a replay."""
    replies, events = drive(connector(), [(0.0, dispatch(1)), (5.0, dispatch(2, **changed))])
    assert replies[1] is not None and replies[1].status == "conflict", why
    assert applied(events) == 1


@pytest.mark.parametrize("phase", CONNECTOR_PHASES)
def test_a_crash_at_each_phase_leaves_what_that_phase_implies(phase: str) -> None:
    """No reply reaches the caller; the effect exists exactly from after_effect on; a same-key request after the
    restart gets unknown_outcome where started survived without completed, and the receipt once completed."""
    crash = (ConnectorCrash(boundary="connector_crash", phase=phase),)  # type: ignore[arg-type]
    replies, events = drive(connector(), [(0.0, dispatch(1)), (20.0, dispatch(2))], crash)
    assert replies[0] is None and any(isinstance(e, ConnectorCrashed) for e in events)
    effect_before = phase in ("after_effect", "after_completed")
    expected = {
        "before_started": "applied",  # nothing recorded: the retry runs the command (once)
        "after_started": "unknown_outcome",
        "after_effect": "unknown_outcome",
        "after_completed": "applied",  # the completed record is replayed
    }[phase]
    assert replies[1] is not None and replies[1].status == expected
    assert applied(events) == (1 if effect_before or phase == "before_started" else 0)


def test_a_started_record_that_was_not_durable_is_lost_in_a_crash() -> None:
    """Without fsync, the crash after the effect loses started: the connector runs the same key again."""
    faults = (
        StartedNotDurable(boundary="started_not_durable"),
        ConnectorCrash(boundary="connector_crash", phase="after_effect"),
    )
    replies, events = drive(connector(), [(0.0, dispatch(1)), (20.0, dispatch(2))], faults)
    assert [e.lost_records for e in events if isinstance(e, ConnectorCrashed)] == [1]
    assert replies[1] is not None and replies[1].status == "applied" and applied(events) == 2


def test_a_wait_that_ends_says_running_and_the_job_can_be_followed() -> None:
    """An 8 s command under a 4 s wait: the dispatch answers running with the job ID; a follow gets the receipt."""
    replies, events = drive(connector(), [(0.0, dispatch(1)), (5.0, read("follow_job", 1))], apply_s=8.0)
    first, follow = replies
    assert first is not None and (first.status, first.job_id) == ("running", "job-1")
    assert follow is not None and follow.effect == "applied" and follow.receipt is not None
    assert applied(events) == 1


def test_a_job_the_target_answered_without_a_receipt_completes_with_that_answer() -> None:
    """The executor returned a refusal (the request arrived past the target's validity): the job stayed running
    for ever, so every follow answered "running" and a same-key dispatch was answered "running" from the wedged
    record. The connector completes the job with the answer (seed 000: after the executor returns, it persists
    the result before reporting), reports it at once, replays it to the same request, and a follow, which a
    refusal of one request tells nothing final about the key, is not conclusive. Replies and replayed records
    name the job (the policy sees its ID), the key and the request answered (a follow answers none)."""
    fresh = replace(dispatch(2), sent_at_s=22.0)
    requests = [(20.0, dispatch(1)), (21.0, read("follow_job", 1)), (22.0, fresh)]
    replies, events = timed(connector(), requests, validity_s=10.0)
    (t1, first), (t2, follow), (t3, again) = replies
    assert first is not None and (t1, first.status, first.job_id) == (20.0, "refused", "job-1")
    assert follow is not None and (t2, follow.effect, follow.job_id) == (21.0, "unknown", "job-1")
    assert again is not None and (t3, again.status, again.job_id) == (22.0, "refused", "job-1")
    assert [(e.receipt_id, e.status) for e in events if isinstance(e, JobCompleted)] == [(None, "refused")]
    replayed = [
        (e.idempotency_key, e.execution_id, e.job_id, e.receipt_id) for e in events if isinstance(e, JobReplayed)
    ]
    assert replayed == [("a73", None, "job-1", None), ("a73", "a73-x2", "job-1", None)]
    assert sum(1 for e in events if e.event == "received" and e.actor == "destination") == 1
    assert not any(isinstance(e, JobStillRunning) for e in events)


def test_a_job_completed_with_an_answer_survives_a_crash_its_started_record_would_not() -> None:
    """A completed record is persisted, whatever its result: a crash right after a refusal was completed loses
    nothing, though its started record was not durable, and the same request after the restart gets the
    refusal replayed, not run again."""
    faults = (
        StartedNotDurable(boundary="started_not_durable"),
        ConnectorCrash(boundary="connector_crash", phase="after_completed"),  # type: ignore[arg-type]
    )
    requests = [(20.0, dispatch(1)), (40.0, replace(dispatch(2), sent_at_s=40.0))]
    replies, events = drive(connector(), requests, faults, validity_s=10.0)
    assert replies[0] is None and replies[1] is not None and replies[1].status == "refused"
    assert [e.lost_records for e in events if isinstance(e, ConnectorCrashed)] == [0]
    assert sum(1 for e in events if e.event == "received" and e.actor == "destination") == 1


def test_the_completed_record_names_the_receipt_it_persisted() -> None:
    """The completed record says which receipt the connector persisted for the key (the one its reply and every
    replay carry); ``None`` there is kept for a job the target answered without one."""
    replies, events = drive(connector(), [(0.0, dispatch(1)), (5.0, dispatch(2))])
    first = replies[0]
    assert first is not None and first.receipt is not None
    completed = [(e.receipt_id, e.status) for e in events if isinstance(e, JobCompleted)]
    assert completed == [(first.receipt.receipt_id, "applied")]
    assert [e.receipt_id for e in events if isinstance(e, JobReplayed)] == [first.receipt.receipt_id]


def test_a_follow_of_a_completed_job_is_answered_from_the_ledger_at_once() -> None:
    """A completed job is no longer running: a follow of it answers from the completed record without waiting
    for the job, so a crash that another request causes at the same instant, after the follow was answered,
    does not swallow the answer (a follow that waited on a completed job was cut off by it)."""
    crash = (ConnectorCrash(boundary="connector_crash", phase="before_started", nth=2),)
    requests = [(0.0, dispatch(1)), (10.0, read("follow_job", 1)), (10.0, dispatch(2, key="a73.k1"))]
    replies, events = timed(connector(), requests, crash)
    (_, first), (at, follow), (_, other) = replies
    assert first is not None and first.receipt is not None and other is None
    assert follow is not None and (at, follow.effect, follow.receipt) == (10.0, "applied", first.receipt)
    assert [e.phase for e in events if isinstance(e, ConnectorCrashed)] == ["before_started"]


def test_a_follow_of_a_key_the_connector_never_saw_is_absent() -> None:
    """Following a job the ledger holds no record of answers absent (not evidence about the target)."""
    replies, _ = drive(connector(), [(0.0, read("follow_job", 1))])
    assert replies[0] is not None and replies[0].effect == "absent"


# -- the bridge --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("forwarded", [True, False])
def test_a_connection_error_is_marked_do_not_replay_whether_or_not_the_call_ran(forwarded: bool) -> None:
    """The caller gets the same marked error either way; only the tool server knows whether it ran."""
    fault = (BridgeConnectionError(boundary="bridge_connection_error", forwarded=forwarded),)
    replies, events = drive(bridge(), [(0.0, dispatch(1))], fault)
    assert replies[0] is not None and (replies[0].status, replies[0].do_not_replay) == ("connection_error", True)
    assert [e.forwarded for e in events if isinstance(e, ConnectionBroken)] == [forwarded]
    assert applied(events) == (1 if forwarded else 0)


def test_receipts_per_request_uuid_last_only_the_life_of_the_bridge_process() -> None:
    """The same UUID and content is answered from the bridge's receipt; after a restart it is a new call; a new UUID
    always is."""
    replies, events = drive(bridge(), [(0.0, dispatch(1)), (5.0, dispatch(2)), (6.0, dispatch(3, key="uuid-2"))])
    assert applied(events) == 2 and sum(isinstance(e, CallReplayed) for e in events) == 1
    assert replies[0] is not None and replies[1] is not None and replies[1].receipt == replies[0].receipt
    restart = (BridgeRestart(boundary="bridge_restart", nth=1),)
    replies, events = drive(bridge(), [(0.0, dispatch(1)), (5.0, dispatch(2))], restart)
    assert applied(events) == 2
    rpc_ids = [e.rpc_id for e in events if isinstance(e, CallForwarded)]
    assert rpc_ids == [1, 2]  # each call has its own JSON-RPC number: it never deduplicates


def test_the_convenience_api_blocks_mutations_until_a_verification_settles_them() -> None:
    """After an uncertain outcome, mutations are refused and reads pass; a verification lifts the block."""
    fault = (BridgeConnectionError(boundary="bridge_connection_error", forwarded=True),)
    requests = [(0.0, dispatch(1)), (5.0, dispatch(2)), (6.0, read("verify", 1)), (7.0, dispatch(3))]
    replies, events = drive(bridge(BridgeSpec(block_after_uncertain=True)), requests, fault)
    assert replies[1] is not None and replies[1].status == "blocked"
    assert replies[2] is not None and replies[2].verified == "confirmed"
    assert replies[3] is not None and replies[3].status == "applied"  # the same call, replayed from its receipt
    assert sum(isinstance(e, CallBlocked) for e in events) == 1 and applied(events) == 1


def test_a_verification_compares_the_original_expectation() -> None:
    """confirmed only for exactly the expected arguments: a receipt for others refutes it; nothing there is absent."""
    other = Request(
        kind="verify", action_id="a73", n=1, idempotency_key="a73", artifact=M7.model_copy(update={"model": "m8"})
    )
    replies, _ = drive(
        bridge(), [(0.0, dispatch(1)), (5.0, read("verify", 1)), (6.0, other), (7.0, read("verify", 2, "nope"))]
    )
    assert [r.verified for r in replies[1:] if r] == ["confirmed", "refuted", "absent"]


# -- in the grid ---------------------------------------------------------------------------------------------


def test_the_crash_point_scenario_is_one_case_per_phase_boundary() -> None:
    """`phase: every` stands for four cases, named by their boundary, each with exactly that crash."""
    cases = scenario_cases("connector_crash_points")
    assert [spec for spec, _ in cases] == [f"connector_crash_points@{p}" for p in CONNECTOR_PHASES]
    for (_, scenario), phase in zip(cases, CONNECTOR_PHASES, strict=True):
        assert scenario.name == f"connector_crash_points-{phase}"
        assert [f.phase for f in scenario.faults if isinstance(f, ConnectorCrash)] == [phase]


def test_the_outcome_table_shows_which_boundaries_each_policy_survives(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run of the crash-point scenario writes one case per boundary for every policy, and its table has one
    column per boundary, each reproducible on its own."""
    assert (
        run_into(
            tmp_path / "run", "--tracking", "none", "--no-report", "--scenario", "connector_crash_points", "--seed", "1"
        )
        == 0
    )
    table = capsys.readouterr().out.splitlines()
    for phase in CONNECTOR_PHASES:
        assert f"connector_crash_points-{phase}" in table[0]
    rows = {
        line.split()[0]: line.split()[1:]
        for line in table[2:]
        if line.split() and line.split()[0] in builtin_policy_names()
    }
    assert rows["follow_and_inspect"] == ["correct"] * 4
    assert rows["retry_same_key"] == ["correct", "incorrect", "incorrect", "correct"]
    cases = list((tmp_path / "run" / "cases").rglob("recovery.json"))
    assert len(cases) == 4 * len(builtin_policy_names())
    assert (
        "--scenario connector_crash_points@after_effect --seed 1"
        in (tmp_path / "run/cases/retry_new_key/connector_crash_points-after_effect/seed-1/recovery.json").read_text()
    )


@pytest.mark.parametrize("seed", [1, 2])
def test_following_the_job_finds_the_effect_a_new_key_duplicates(seed: int) -> None:
    """In connector_wait_expires, following the named job records one effect; starting others makes more."""
    follow = check(simulate(shipped("connector_wait_expires"), load_policy("follow_and_inspect"), seed).evidence)
    again = check(simulate(shipped("connector_wait_expires"), load_policy("retry_new_key"), seed).evidence)
    assert (follow.outcome, follow.metrics["duplicate_effects"]) == ("correct", 0)
    assert again.metrics["duplicate_effects"] >= 1


def test_replaying_after_a_marked_connection_error_is_a_violation_even_when_harmless() -> None:
    """The call never reached the tool server, so a blind replay causes one effect; it still breaks the marker."""
    j = check(simulate(shipped("bridge_error_before_forward"), load_policy("retry_same_key"), 1).evidence)
    assert j.metrics["duplicate_effects"] == 0 and j.checks["retries_after_uncertain"] == "false"
    assert j.metrics["reads"] == 0 and j.metrics["dispatches"] == 2


def test_verifying_first_keeps_mutations_at_one_and_reads_possible() -> None:
    """After the marked error, the seed-002 policy only reads until the outcome is verified: one mutation."""
    j = check(simulate(shipped("bridge_verify_times_out"), load_policy("verify_before_mutation"), 1).evidence)
    assert j.outcome == "correct" and j.metrics["dispatches"] == 1 and j.metrics["reads"] == 4
