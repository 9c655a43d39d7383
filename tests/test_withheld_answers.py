"""``retries_after_uncertain`` with the destination's ledger withheld (a seventh adversarial review's findings).

The checker places a read where the target answered it (``Facts.answered_at``), from the destination's own
``lookup_answered`` entries; with the ledger withheld those entries go with it, and it placed every read where its
answer arrived: a read sent before the caller was last told the outcome is uncertain, answered by the target before
that, and 70 s slow on the way back, was taken to settle it (the checker counted no retry after it; the auditor one).
Such a read may or may not have checked anything since: the count is unknown. And ``Facts.decision_of`` looked the
decision up by its index as a place in the history, which the withheld entries shift: it found another command, and
counted a retry that verify_before_mutation had decided before it was told as one sent after.
"""

from __future__ import annotations

import pytest
from test_soundness import CASES, assert_sound

from harness.check import check
from harness.policy import Command, LookUp, RetrySameAction, Situation, Stop, load_policy
from harness.scenario import Scenario
from harness.sim import simulate


def _world(name: str, **changes: dict[str, object]) -> Scenario:
    base = CASES[name].model_dump(mode="python")
    for part, values in changes.items():
        base[part] = {**base[part], **values} if isinstance(base[part], dict) else values
    return Scenario.model_validate(base)


class ReadsThenRetries:
    """Reads once, then sends the action again under its key without a claim, whatever the read said."""

    name, revision = "reads_then_retries", "test"

    def decide(self, situation: Situation) -> Command:
        if not situation.lookups:
            return LookUp()
        if len(situation.attempts) < 2:
            return RetrySameAction(claim=False)
        return Stop(reason="sent again")


#: The read leaves at 15 s and the target answers it at once (m7 applied); the do-not-replay error of the call is
#: 20 s slow and reaches the worker at about 20.6 s; the read's answer is 70 s slow and arrives at about 85 s.
SLOW_READ = _world(
    "bridge_error_slow_read_answer",
    destination={"ledger_visible": False},
    faults=[
        {"boundary": "bridge_connection_error", "nth": 1, "forwarded": True},
        {"boundary": "read_answer_delayed", "nth": 1, "delay_s": 70.0},
        {"boundary": "response_delayed", "nth": 1, "delay_s": 20.0},
    ],
)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_read_the_target_may_have_answered_before_the_caller_was_told_leaves_the_count_unknown(seed: int) -> None:
    result = simulate(SLOW_READ, ReadsThenRetries(), seed)
    assert result.truth.retries_after_uncertain == 1
    judgement = check(result.evidence)
    assert judgement.metrics["retries_after_uncertain"] is None
    assert "retries_after_uncertain" in judgement.unknown
    # With the ledger visible, the checker places the read where the target answered it, and counts the retry.
    visible = SLOW_READ.model_copy(
        update={"destination": SLOW_READ.destination.model_copy(update={"ledger_visible": True})}
    )
    assert check(simulate(visible, ReadsThenRetries(), seed).evidence).metrics["retries_after_uncertain"] == 1
    assert_sound(ReadsThenRetries(), SLOW_READ, seed)  # type: ignore[arg-type]


#: Two workers recover side by side; a retry takes 5 s to leave. The original call is 60.5 s late on its way to the
#: bridge and its do-not-replay error comes back while the retry decided on a read at 60.3 s is still leaving.
LATE_ERROR = _world(
    "bridge_late_error_while_retry_leaves",
    destination={"ledger_visible": False},
    worker={"recoverers": 2, "retry_send_s": 5.0},
    faults=[
        {"boundary": "request_delayed", "nth": 1, "delay_s": 60.5},
        {"boundary": "bridge_connection_error", "nth": 1, "forwarded": True},
    ],
)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_retry_is_dated_by_its_own_decision_with_the_ledger_withheld(seed: int) -> None:
    policy = load_policy("verify_before_mutation")
    result = simulate(LATE_ERROR, policy, seed)
    assert result.truth.retries_after_uncertain == 0
    assert check(result.evidence).metrics["retries_after_uncertain"] == 0
    assert_sound("verify_before_mutation", LATE_ERROR, seed)
