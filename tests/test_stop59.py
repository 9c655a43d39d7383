"""What stop 59 added to the world: a read's answer slow on its way back (``read_answer_delayed``).

Until then no fault delayed a read's answer, so a read answered by the simulated target after the reads had
caught up with every request had seen every landing, and a policy that judged "caught up" by the clock at which
the answer arrived (``caught_up_by_clock``) could not be told from one that judged it by when the read was made.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import SCENARIO_DIR
from test_policies import situation

from harness.errors import InputError
from harness.explore.schedule import DELAYS_S, _variants_of
from harness.model.events import (
    DispatchSent,
    FaultInjected,
    LookupAnswered,
    LookupSent,
    ReplyReceived,
    ReplyUndeliverable,
)
from harness.policy import LookUp, LookupView, load_policy
from harness.scenario import BOUNDARIES, load_scenario
from harness.sim import simulate

SLOW = SCENARIO_DIR / "bridge_error_slow_read_answer.yaml"
RECONCILE = load_policy("reconcile_and_reauthorize")


def _history(path: Path, seed: int = 1) -> tuple[object, ...]:
    return tuple(simulate(load_scenario(path), RECONCILE, seed).evidence.history)


def _variant(tmp_path: Path, old: str, new: str) -> Path:
    text = SLOW.read_text(encoding="utf-8")
    assert old in text
    path = tmp_path / SLOW.name
    path.write_text(text.replace(old, new), encoding="utf-8")
    return path


def test_a_read_answer_is_held_on_its_way_back_not_on_its_way_out() -> None:
    """The first lookup is sent at about 10.6 s and answered at once (the target sees its ledger as of then); the
    answer reaches the worker 70 s later, and the fault is logged as the answer leaves."""
    history = _history(SLOW)
    sent = next(e for e in history if isinstance(e, LookupSent))
    answered = next(e for e in history if isinstance(e, LookupAnswered))
    received = next(e for e in history if isinstance(e, ReplyReceived) and e.kind == "lookup")
    assert (sent.n, received.n) == (1, 1)
    assert 0.0 < answered.at_s - sent.at_s < 1.0  # one crossing out and the read itself, none held
    assert received.at_s - answered.at_s == pytest.approx(70.0, abs=0.08)  # 70 s and one crossing back
    [fault] = [e for e in history if isinstance(e, FaultInjected)][1:]
    assert (fault.boundary, fault.action_id, fault.occurrence, fault.at_s) == (
        "read_answer_delayed", "a73", 1, answered.at_s
    )  # fmt: skip


def test_it_counts_reads_and_leaves_dispatch_replies_alone(tmp_path: Path) -> None:
    """``nth: 2`` holds the second read's answer; the dispatch's own reply (the bridge's error) crosses as
    usual, and so does the first read's."""
    path = _variant(tmp_path, "{boundary: read_answer_delayed, nth: 1", "{boundary: read_answer_delayed, nth: 2")
    history = _history(path)
    dispatch = next(e for e in history if isinstance(e, DispatchSent))
    replies = [e for e in history if isinstance(e, ReplyReceived)]
    assert replies[0].kind == "dispatch" and replies[0].at_s - dispatch.at_s < 1.0
    sent = {e.n: e.at_s for e in history if isinstance(e, LookupSent)}
    lookups = {e.n: e.at_s - sent[e.n] for e in replies if e.kind == "lookup"}
    assert lookups[1] < 1.0 and lookups[2] > 70.0
    assert [e.occurrence for e in history if isinstance(e, FaultInjected) and e.boundary == "read_answer_delayed"] == [
        2
    ]


def test_an_answer_slower_than_the_worker_waits_reaches_no_one(tmp_path: Path) -> None:
    """At the default 2 s patience the worker has stopped waiting for the read by the time its answer arrives: the
    answer is undeliverable, as a dispatch reply after its timeout is."""
    path = _variant(tmp_path, "worker: {lookup_timeout_s: 90.0}\n", "")
    history = _history(path)
    late = [e for e in history if isinstance(e, ReplyUndeliverable) and e.kind == "lookup"]
    assert [e.n for e in late] == [1]
    assert not any(isinstance(e, ReplyReceived) and e.kind == "lookup" and e.n == 1 for e in history)


def test_the_boundary_is_a_read_boundary_on_the_wire_and_explored_at_both_delays() -> None:
    cls = BOUNDARIES["read_answer_delayed"]
    assert (cls.side, cls.counted, cls.needs) == ("wire", "lookup", None)
    assert _variants_of("read_answer_delayed") == [{"delay_s": d} for d in DELAYS_S]


@pytest.mark.parametrize("status", ["connection_error", "unknown_outcome"])
def test_a_read_sent_before_an_uncertain_reply_settles_nothing(status: str) -> None:
    """Revision 12: an absence read sent at 15 s, answered at 24 s, after the worker was told at 20 s that the
    outcome is uncertain, is stale: the policy reads again rather than retry. Sent in the instant the worker was
    told (or after), it is fresh; the first read is the decision's either way."""
    told = 20.0
    base = situation(now=24.0)
    answered = base.attempts[0].model_copy(
        update={"observation": "response", "response_status": status, "replied_at_s": told}
    )
    for sent, fresh in ((15.0, False), (told, True), (21.0, True)):
        read = LookupView(source="lookup", effect="absent", at_s=24.0, sent_at_s=sent)
        s = base.model_copy(update={"attempts": (answered,), "lookups": (read,)})
        assert (RECONCILE._latest_fresh_read(s, 0.0) is read) is fresh, sent  # type: ignore[attr-defined]
        if not fresh:
            assert RECONCILE.decide(s) == LookUp()


def test_the_latest_uncertain_reply_is_the_one_a_read_must_follow() -> None:
    """Two do-not-replay errors, at 10 s and 20 s: a read sent at 15 s followed the first and not the second."""
    base = situation(now=24.0)
    first = base.attempts[0].model_copy(
        update={"observation": "response", "response_status": "connection_error", "replied_at_s": 10.0}
    )
    second = first.model_copy(update={"execution_id": "a73-x2", "sent_at_s": 9.0, "replied_at_s": 20.0})
    read = LookupView(source="lookup", effect="absent", at_s=24.0, sent_at_s=15.0)
    s = base.model_copy(update={"attempts": (first, second), "lookups": (read,)})
    assert RECONCILE._latest_fresh_read(s, 9.0) is None  # type: ignore[attr-defined]
    later = read.model_copy(update={"sent_at_s": 20.5})
    assert RECONCILE._latest_fresh_read(s.model_copy(update={"lookups": (later,)}), 9.0) is later  # type: ignore[attr-defined]


@pytest.mark.parametrize("delay", ["0", "-1", "'soon'"])
def test_a_read_answer_delay_must_be_a_positive_number_of_seconds(tmp_path: Path, delay: str) -> None:
    path = _variant(tmp_path, "nth: 1, delay_s: 70.0}", f"nth: 1, delay_s: {delay}}}")
    with pytest.raises(InputError) as refused:
        load_scenario(path)
    assert "field 'faults.1.delay_s'" in str(refused.value)
