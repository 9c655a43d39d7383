"""Tests for the two mutants the fifty-third mutation pass (tests/MUTANTS.md) left alive in the reading of a read by
when the target answered it: the auditor not dating a doubt anew at a connector's ``unknown_outcome`` answer to a
job follow, and the checker not clearing ``told_last`` once a doubt is settled.

Both differ only where two reads of one action overlap: a read the target answered before the caller was last told
the outcome is uncertain comes back after. A worker waits for each read before its next command, so one worker
never overlaps two; two recovering side by side (``recoverers: 2``) do. The policy here is scripted: the two workers
share it, and each of its decisions is the next command of the list, whichever worker asks (the test checks the
order the history shows)."""

from __future__ import annotations

from pathlib import Path

from test_soundness import assert_sound

from harness.check import check
from harness.model.events import CommandGiven, DispatchSent, LookupAnswered, ReplyReceived
from harness.policy import Command, FollowJob, LookUp, RetrySameAction, Situation, Stop, Wait
from harness.scenario import Scenario, load_scenario
from harness.sim import simulate

HEAD = """\
revision: "1"
description: Two workers recover side by side; one's read is answered before the other is told the outcome is uncertain.
task: {task_id: release-42, revision: 17, target: staging/fraud, model: m7, digest: "sha256:d7d7d7"}
approval: {approval_id: apr-17, token: "tok-17-secret-do-not-log"}
action_id: a73
connector: {}
worker: {recoverers: 2}
"""


class Scripted:
    """Gives its commands in order, to whichever worker asks, then stops."""

    name, revision = "scripted", "test"

    def __init__(self, *commands: Command) -> None:
        self._commands = list(commands)

    def decide(self, situation: Situation) -> Command:
        return self._commands.pop(0) if self._commands else Stop()


def _scenario(tmp_path: Path, name: str, body: str) -> Scenario:
    path = tmp_path / f"{name}.yaml"
    path.write_text(f"name: {name}\n{HEAD}{body}", encoding="utf-8")
    return load_scenario(path)


def _commands(history: tuple[object, ...]) -> list[tuple[int, str]]:
    return [(e.incarnation, e.command.kind) for e in history if isinstance(e, CommandGiven)]


#: The connector dies after ``started`` (nothing applied; its job dead, so a follow answers unknown_outcome). At
#: 15 s the first worker looks the target up (read 1, answered absent at 15.25 s, 1.5 s slow on the way back), the
#: second follows the job (read 2, its unknown_outcome 0.5 s slow, back at 15.63 s); the lookup's answer comes at
#: 16.8 s, after the follow's, and the first worker retries.
FOLLOW_UNKNOWN_OVER_A_LOOKUP = """\
faults:
  - {boundary: connector_crash, phase: after_started, nth: 1}
  - {boundary: read_answer_delayed, nth: 1, delay_s: 1.5}
  - {boundary: read_answer_delayed, nth: 2, delay_s: 0.5}
"""


def test_a_job_follows_unknown_outcome_dates_the_doubt_anew(tmp_path: Path) -> None:
    """The lookup the target answered before the follow's unknown_outcome reached the caller checked nothing since:
    the retry after it is a retry after an uncertain outcome, to the auditor (the mutant, not dating the doubt at a
    follow's answer, let the older lookup settle it: 0) as to the checker."""
    scenario = _scenario(tmp_path, "follow_unknown_over_a_lookup", FOLLOW_UNKNOWN_OVER_A_LOOKUP)
    policy = Scripted(LookUp(), FollowJob(), Wait(duration_s=5.0), RetrySameAction(claim=True))
    result = simulate(scenario, policy, 1)
    history = result.evidence.history
    assert _commands(history)[:4] == [(2, "look_up"), (3, "follow_job"), (3, "wait"), (2, "retry_same_action")]
    [answered] = [e for e in history if isinstance(e, LookupAnswered)]
    reads = {r.kind: r for r in history if isinstance(r, ReplyReceived) and r.kind != "dispatch"}
    retry = [e for e in history if isinstance(e, DispatchSent)][1]
    follow, lookup = reads["follow_job"], reads["lookup"]
    assert (follow.status, lookup.status) == ("unknown_outcome", "absent")
    assert answered.n == lookup.n and answered.index < follow.index < lookup.index < retry.index  # the shape
    assert result.truth.retries_after_uncertain == 1
    assert check(result.evidence).metrics["retries_after_uncertain"] == 1
    assert_sound(Scripted(LookUp(), FollowJob(), Wait(duration_s=5.0), RetrySameAction(claim=True)), scenario, 1)
