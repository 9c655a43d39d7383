"""A claim leased to a moment (``RetrySameAction.send_by_s``): the decision to retry rests on the retry leaving by
then, and the worker may send it later than it was decided (``worker.retry_send_s``, which the policy does not
see). Made after that moment, the claim is refused and nothing is sent (an adversarial review's second round: a
retry decided inside an original's window, sent 13 s later, applied m7 a second time)."""

from __future__ import annotations

import pytest
from conftest import SCENARIO_DIR

from harness.check import check
from harness.model.commands import RetrySameAction
from harness.model.events import ClaimDecided, CommandGiven, DispatchSent, event_data, parse_event
from harness.policy import load_policy
from harness.scenario import load_scenario
from harness.sim import simulate


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_claim_made_after_its_lease_is_refused_and_nothing_is_sent(seed: int) -> None:
    scenario = load_scenario(SCENARIO_DIR / "retry_sent_late_past_unseen_window.yaml")
    history = simulate(scenario, load_policy("reconcile_and_reauthorize"), seed).evidence.history
    (retry,) = [e for e in history if isinstance(e, CommandGiven) and isinstance(e.command, RetrySameAction)]
    assert isinstance(retry.command, RetrySameAction) and retry.command.send_by_s == 2.0 + 10.0 - 5.0
    claims = [e for e in history if isinstance(e, ClaimDecided)]
    assert [c.ok for c in claims] == [True, False]
    assert claims[1].reason == "made after 7.000 s, the latest moment the decision allowed it"
    assert sum(isinstance(e, DispatchSent) for e in history) == 1  # the original alone
    judged = check(simulate(scenario, load_policy("reconcile_and_reauthorize"), seed).evidence)
    assert (judged.outcome, judged.checks["duplicate_effects"]) == ("correct", "true")


def test_a_claim_made_by_its_lease_is_granted() -> None:
    """The same retry sent at once (no send delay) leaves by its lease: claimed, and sent."""
    scenario = load_scenario(SCENARIO_DIR / "retry_sent_late_past_unseen_window.yaml")
    worker = scenario.worker.model_copy(update={"retry_send_s": 0.0})
    history = simulate(scenario.model_copy(update={"worker": worker}), load_policy("reconcile_and_reauthorize"), 1)
    claims = [e for e in history.evidence.history if isinstance(e, ClaimDecided)]
    assert [c.ok for c in claims] == [True, True]
    assert sum(isinstance(e, DispatchSent) for e in history.evidence.history) == 2


def test_a_lease_is_in_the_commands_entry_only_when_it_is_given() -> None:
    """Left out unset, so that a retry without a lease reads in the evidence as it did before leases; read back
    either way."""
    leased = CommandGiven(action_id="a73", command=RetrySameAction(send_by_s=7.0), incarnation=1)
    plain = CommandGiven(action_id="a73", command=RetrySameAction(), incarnation=1)
    assert event_data(leased)["send_by_s"] == 7.0 and "send_by_s" not in event_data(plain)
    for event in (leased, plain):
        back = parse_event("worker", "command", event_data(event))
        assert isinstance(back, CommandGiven) and back.command == event.command


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ({"send_by_s": float("nan")}, "Input should be a finite number"),
        ({"send_by_s": float("inf")}, "Input should be a finite number"),
        ({"claim": False, "send_by_s": 3.0}, "send_by_s leases a claim: give claim=True with it, or leave it out"),
    ],
)
def test_a_lease_is_a_moment_and_leases_a_claim(given: dict[str, object], said: str) -> None:
    """A third review round: a NaN lease was taken, never refused anything, and was written as null; a lease on a
    retry sent without a claim was ignored, the retry judged as if it had none."""
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match=said):
        RetrySameAction(**given)  # type: ignore[arg-type]
