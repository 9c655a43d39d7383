"""The checker is sound over the worlds exploration builds, not only over the shipped scenarios.

``tests/test_soundness.py`` runs any commands over the shipped cases as they are. A soundness bug was once found
only with two recovering workers and the destination's ledger withheld (a known 0 where the truth was 1): no
shipped case has both, and random commands over one worker never reach two workers' reads overlapping. Here the
worlds are the templates with exploration's own schedule elements (``harness.explore.schedule``) applied, with two
recovering workers and the ledger withheld:

- every depth-1 schedule of every shipped template where the caller can be told the outcome is uncertain (a
  connector or a bridge stands in the path; one case each, the policy and seed taking turns), and
- every depth-1 and depth-2 schedule of the read-shaping elements (the contract's fields, foreign receipts on
  lookups) of the templates where a read is on its way as the caller is told the outcome is uncertain, each with
  every short script of reads, waits and retries (random commands reach that shape too rarely).

Each known metric must equal the auditor's truth, and a null one must say why (``assert_sound``). Deterministic,
and bounded to a few seconds each. The first found a second bug of the same family (the checker counted 0 where the
truth is 1: a retry decided on a doubted absence and sent after a new doubt; the last test here), and the second
fails with the first bug put back (the checker clearing ``told_last`` once a doubt is settled).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pytest
from test_soundness import CASES, RandomPolicy, assert_sound, withheld

from harness.check import check
from harness.explore.schedule import Element, Schedule, apply, elements_of, pairs, singles
from harness.explore.search import observe
from harness.model.events import CommandGiven, DispatchSent, ReplyReceived
from harness.policy import (
    Command,
    FollowJob,
    LookUp,
    RetrySameAction,
    Situation,
    Stop,
    Wait,
    builtin_policy_names,
    load_policy,
)
from harness.scenario import Scenario
from harness.sim import simulate

POLICIES = [load_policy(name) for name in builtin_policy_names()]


def _two_workers_withheld(scenario: Scenario) -> Scenario:
    """The scenario with two recovering workers side by side and the destination's ledger withheld."""
    hidden = withheld(scenario)
    return hidden.model_copy(update={"worker": hidden.worker.model_copy(update={"recoverers": 2})})


def _added(template: Scenario) -> list[Element]:
    """Exploration's depth-1 elements for ``template`` (as its baseline runs reach them), less the change of the
    number of recovering workers (two of them here, always)."""
    seen, _ = observe(template, POLICIES, (1,))
    return [e for e in singles(template, seen) if not (e.kind == "worker" and dict(e.data).get("recoverers"))]


#: The shipped cases whose caller can be told the outcome is uncertain (a connector's unknown_outcome, a bridge's
#: do-not-replay connection error): where the checker's reading of doubts, reads and retries across two workers is
#: at stake (a search of every template found nothing elsewhere).
UNCERTAIN = sorted(spec for spec, s in CASES.items() if s.connector is not None or s.bridge is not None)


@pytest.mark.parametrize("spec", UNCERTAIN)
def test_depth_one_schedules_with_two_workers_and_the_ledger_withheld(spec: str) -> None:
    """Every depth-1 schedule of the template: one case each, the shipped policies and random commands in turn."""
    template = CASES[spec]
    own = elements_of(template)
    for i, e in enumerate(_added(template)):
        scenario = _two_workers_withheld(apply(template, Schedule.of([*own, e])))
        policy = POLICIES[i % len(POLICIES)] if i % 2 else RandomPolicy(i)
        assert_sound(policy, scenario, 1 + i % 3)


class Script:
    """Gives its commands in order, to whichever of the workers asks, then stops."""

    name, revision = "script", "test"

    def __init__(self, commands: tuple[Command, ...]) -> None:
        self._commands = list(commands)

    def decide(self, situation: Situation) -> Command:
        return self._commands.pop(0) if self._commands else Stop()


#: The commands a script is made of: a read, a wait past a slow read's answer, a claimed retry.
ALPHABET: tuple[Command, ...] = (LookUp(), Wait(duration_s=6.0), RetrySameAction(claim=True))
SCRIPT_LENGTH = 5
#: Templates where a read is sent before the caller is told the outcome is uncertain and answered after.
READ_ACROSS_A_DOUBT = ("bridge_error_after_read_sent",)


def _read_shaping(e: Element) -> bool:
    """A lagging lookup, or a lookup answered with another operation's receipt: what a read answers."""
    data = dict(e.data)
    return "lookup_lag_s" in data if e.kind == "contract" else data.get("boundary") == "lookup_foreign_receipt"


def _scripts() -> Iterator[tuple[Command, ...]]:
    return itertools.product(ALPHABET, repeat=SCRIPT_LENGTH)


@pytest.mark.parametrize("spec", READ_ACROSS_A_DOUBT)
def test_every_short_script_over_overlapping_reads_is_judged_soundly(spec: str) -> None:
    """Depth 1 and 2 over the read-shaping elements, two workers sharing a script of reads, waits and retries."""
    template = CASES[spec]
    own = elements_of(template)
    added = [e for e in _added(template) if _read_shaping(e)]
    known = 0
    for combo in itertools.chain([()], pairs(added, 2)):
        scenario = _two_workers_withheld(apply(template, Schedule.of([*own, *combo])))
        for commands in _scripts():
            known += assert_sound(Script(commands), scenario, 1)
    assert known > 0


#: Found by the depth-1 test above (connector_cancel_while_new_operation_leaves with a read answer delayed, random
#: commands), and cut down by hand: the connector dies after the effect (its job dead, so a follow answers
#: unknown_outcome), lookups lag 30 s, a retry takes 1 s to leave after its decision, and two workers recover.
DOUBTED_ABSENCE_THEN_A_NEW_DOUBT = {
    "name": "doubted_absence_then_a_new_doubt",
    "revision": "1",
    "description": "An absence settles a doubt, wrongly; a retry decided on it leaves after another doubt.",
    "task": {"task_id": "release-42", "revision": 17, "target": "staging/fraud", "model": "m7",
             "digest": "sha256:d7d7d7"},
    "approval": {"approval_id": "apr-17", "token": "tok-17-secret-do-not-log"},
    "action_id": "a73",
    "connector": {},
    "destination": {"ledger_visible": False, "lookup_lag_s": 30.0},
    "worker": {"recoverers": 2, "retry_send_s": 1.0},
    "faults": [{"boundary": "connector_crash", "phase": "after_effect", "nth": 1}],
}  # fmt: skip


@pytest.mark.parametrize("visible", [False, True])
def test_a_retry_decided_on_a_doubted_absence_and_sent_after_a_new_doubt_is_not_taken_for_one_on_its_way(
    visible: bool,
) -> None:
    """One worker's follow is answered unknown_outcome; its lookup, lagging, answers absent though the effect is there
    (with the ledger withheld, a doubted absence); it decides a retry, and while the retry takes its second to leave,
    the other worker's follow is answered unknown_outcome again. The retry was decided while the outcome was
    uncertain all along: the truth is 1. The checker took the second unknown_outcome for the start of the doubt, and
    the retry for one decided before it (on its way as the caller was told): 0. Whether the absence was right is
    what decides it, and with the ledger withheld that is unknown: null, with its reason; with it visible, 1."""
    scenario = Scenario.model_validate(DOUBTED_ABSENCE_THEN_A_NEW_DOUBT)
    if visible:
        scenario = scenario.model_copy(
            update={"destination": scenario.destination.model_copy(update={"ledger_visible": True})}
        )
    commands = (FollowJob(), Wait(duration_s=0.5), LookUp(), RetrySameAction(claim=False), FollowJob())
    result = simulate(scenario, Script(commands), 1)
    history = result.evidence.history
    given = [(e.incarnation, e.command.kind) for e in history if isinstance(e, CommandGiven)]
    assert given[:5] == [(2, "follow_job"), (3, "wait"), (2, "look_up"), (2, "retry_same_action"), (3, "follow_job")]
    reads = [(r.kind, r.status) for r in history if isinstance(r, ReplyReceived) and r.kind != "dispatch"]
    assert reads == [("follow_job", "unknown_outcome"), ("lookup", "absent"), ("follow_job", "unknown_outcome")]
    retry = next(e for e in history if isinstance(e, DispatchSent) and e.n == 2)
    second_doubt = [r for r in history if isinstance(r, ReplyReceived) and r.status == "unknown_outcome"][1]
    decision = [e for e in history if isinstance(e, CommandGiven)][3]
    assert decision.index < second_doubt.index < retry.index  # decided before the new doubt, sent after it
    assert result.truth.retries_after_uncertain == 1
    judgement = check(result.evidence)
    if visible:
        assert judgement.metrics["retries_after_uncertain"] == 1
    else:
        why = judgement.unknown["retries_after_uncertain"]
        assert judgement.metrics["retries_after_uncertain"] is None
        assert "whether the read that answered absent before a73-x2 was decided was right" in why
    assert_sound(Script(commands), scenario, 1)
