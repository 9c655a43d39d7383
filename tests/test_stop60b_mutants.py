"""Tests for the two mutants the fifty-third mutation pass (tests/MUTANTS.md) left alive in the reading of a read by
when the target answered it: the auditor not dating a doubt anew at a connector's ``unknown_outcome`` answer to a
job follow, and the checker not clearing ``told_last`` once a doubt is settled. The second was no weaker test but a
sounder checker: the case built for it showed the checker counting 0 where the truth is 1, and the checker now keeps
``told_last`` (the tests below pin both ends of that: the doubt kept, and no question left over the next one).

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


#: The connector dies after the effect and before ``completed`` (the target applied it; the job is dead, so a follow
#: answers unknown_outcome), and the target's ledger is withheld. The first worker's lookup (read 1, a foreign
#: receipt: "applied", for other arguments) is answered at 15.25 s and comes back 1.5 s slow; the second worker's
#: follow (read 2) tells it unknown_outcome at 15.63 s; its lookup (read 3), 30 s behind the ledger, answers absent
#: at 15.94 s though the effect is there. The first lookup's answer then arrives, and the first worker retries.
OLDER_READ_AFTER_A_DOUBTED_ABSENCE = """\
destination: {ledger_visible: false, lookup_lag_s: 30.0}
faults:
  - {boundary: connector_crash, phase: after_effect, nth: 1}
  - {boundary: read_answer_delayed, nth: 1, delay_s: 1.5}
  - {boundary: read_answer_delayed, nth: 2, delay_s: 0.5}
  - {boundary: lookup_foreign_receipt, nth: 1}
"""


def test_a_read_answered_before_the_settled_doubt_clears_no_doubt_about_its_settling(tmp_path: Path) -> None:
    """The absence that settled the follow's unknown_outcome was wrong (the lookup lagged), so the retry is one after
    an uncertain outcome; the ledger is withheld, so the checker cannot tell, and says so. The foreign receipt that
    came back after it, sent before the follow's answer, may have been answered before it too: it settles nothing
    since. The checker used to clear ``told_last`` with the doubt, take that older read for one answered since, let
    it clear the doubt about the absence and count 0 (the truth is 1)."""
    scenario = _scenario(tmp_path, "older_read_after_a_doubted_absence", OLDER_READ_AFTER_A_DOUBTED_ABSENCE)
    commands = (LookUp(), FollowJob(), LookUp(), Wait(duration_s=5.0), RetrySameAction(claim=True))
    result = simulate(scenario, Scripted(*commands), 1)
    history = result.evidence.history
    assert _commands(history)[:5] == [
        (2, "look_up"),
        (3, "follow_job"),
        (3, "look_up"),
        (3, "wait"),
        (2, "retry_same_action"),
    ]
    replies = {r.n: r for r in history if isinstance(r, ReplyReceived) and r.kind != "dispatch"}
    retry = [e for e in history if isinstance(e, DispatchSent)][1]
    assert [(replies[n].kind, replies[n].status) for n in (1, 2, 3)] == [
        ("lookup", "applied"),
        ("follow_job", "unknown_outcome"),
        ("lookup", "absent"),
    ]
    assert replies[2].index < replies[3].index < replies[1].index < retry.index  # the shape the test is about
    assert result.truth.retries_after_uncertain == 1
    judgement = check(result.evidence)
    assert judgement.metrics["retries_after_uncertain"] is None
    assert (
        "whether the read that answered absent before a73-x2 was right" in judgement.unknown["retries_after_uncertain"]
    )
    assert_sound(Scripted(*commands), scenario, 1)


#: As above with the ledger withheld and no lag: the second worker's lookup answers "applied" (the effect is there)
#: and settles the follow's unknown_outcome; the first worker's, sent before it, comes back after. The second worker
#: then follows the job again (a second unknown_outcome, after that answer) and retries at once.
OLDER_READ_THEN_A_NEW_DOUBT = """\
destination: {ledger_visible: false}
faults:
  - {boundary: connector_crash, phase: after_effect, nth: 1}
  - {boundary: read_answer_delayed, nth: 1, delay_s: 1.5}
  - {boundary: read_answer_delayed, nth: 2, delay_s: 0.5}
"""


def test_a_read_back_after_a_settled_doubt_leaves_no_question_over_the_next_one(tmp_path: Path) -> None:
    """The first lookup, back after the doubt was settled, is not held as a read that may have settled it (there is
    nothing left to settle): the retry after the second unknown_outcome, with no read since, is counted, not
    left undecided."""
    scenario = _scenario(tmp_path, "older_read_then_a_new_doubt", OLDER_READ_THEN_A_NEW_DOUBT)
    commands = (
        LookUp(),
        FollowJob(),
        LookUp(),
        Wait(duration_s=1.0),
        Wait(duration_s=5.0),
        FollowJob(),
        RetrySameAction(claim=True),
    )
    result = simulate(scenario, Scripted(*commands), 1)
    history = result.evidence.history
    assert _commands(history)[:7] == [
        (2, "look_up"),
        (3, "follow_job"),
        (3, "look_up"),
        (3, "wait"),
        (2, "wait"),
        (3, "follow_job"),
        (3, "retry_same_action"),
    ]
    replies = {r.n: r for r in history if isinstance(r, ReplyReceived) and r.kind != "dispatch"}
    retry = [e for e in history if isinstance(e, DispatchSent)][1]
    assert [(replies[n].kind, replies[n].status) for n in (1, 2, 3, 4)] == [
        ("lookup", "applied"),
        ("follow_job", "unknown_outcome"),
        ("lookup", "applied"),
        ("follow_job", "unknown_outcome"),
    ]
    assert replies[2].index < replies[3].index < replies[1].index < replies[4].index < retry.index
    assert result.truth.retries_after_uncertain == 1
    assert check(result.evidence).metrics["retries_after_uncertain"] == 1
    assert_sound(Scripted(*commands), scenario, 1)
