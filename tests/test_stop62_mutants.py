"""Tests for the mutants the fifty-fifth mutation pass (tests/MUTANTS.md) found alive in what changed since 400ed37:
``retries_after_uncertain``'s ``since`` / ``reopened`` state and the harness's own code digest among the
fingerprints. Each fails with its mutant and passes without."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from test_soundness import assert_sound
from test_soundness_explored import DOUBTED_ABSENCE_THEN_A_NEW_DOUBT, Script

import harness.run.folder as folder
from harness.check import check
from harness.model.events import CommandGiven, DispatchSent, ReplyReceived
from harness.policy import Command, FollowJob, LookUp, RetrySameAction, VerifyOutcome, Wait
from harness.run.folder import code_digest, harness_code_digest
from harness.scenario import Scenario
from harness.sim import simulate

# -- retries_after_uncertain: a decision on either side of the first doubt ---------------------------------------


def _slow_retries(visible: bool) -> Scenario:
    """DOUBTED_ABSENCE_THEN_A_NEW_DOUBT with a retry taking 3 s to leave after its decision: room for a doubt, a
    doubted absence and a new doubt between a decision and its send."""
    scenario = Scenario.model_validate(DOUBTED_ABSENCE_THEN_A_NEW_DOUBT)
    return scenario.model_copy(
        update={
            "worker": scenario.worker.model_copy(update={"retry_send_s": 3.0}),
            "destination": scenario.destination.model_copy(update={"ledger_visible": visible}),
        }
    )


def _shape(scenario: Scenario, commands: tuple[Command, ...]) -> tuple[int, int, int, int, int, int]:
    """The indexes of the retry's decision, the first unknown_outcome, the absence, the second unknown_outcome and
    the retry's send, and the truth."""
    result = simulate(scenario, Script(commands), 1)
    history = result.evidence.history
    decision = next(e for e in history if isinstance(e, CommandGiven) and e.command.kind == "retry_same_action")
    doubts = [e.index for e in history if isinstance(e, ReplyReceived) and e.status == "unknown_outcome"]
    absence = next(e for e in history if isinstance(e, ReplyReceived) and e.kind == "lookup")
    assert absence.status == "absent"
    retry = next(e for e in history if isinstance(e, DispatchSent) and e.n == 2)
    return decision.index, doubts[0], absence.index, doubts[1], retry.index, result.truth.retries_after_uncertain


#: Worker 2 follows (unknown_outcome) and decides a retry at once; worker 3 waits, looks up (absent, wrongly: the
#: lookup lags) and follows (unknown_outcome again); the retry leaves after all of it.
DECIDED_BEFORE_THE_ABSENCE = (
    FollowJob(), Wait(duration_s=0.5), RetrySameAction(claim=False), LookUp(), FollowJob()
)  # fmt: skip
#: Worker 2 decides a retry before anyone is told anything; worker 3 follows (unknown_outcome), looks up (absent)
#: and follows again; the retry leaves after all of it.
DECIDED_BEFORE_ANY_DOUBT = (RetrySameAction(claim=False), FollowJob(), LookUp(), FollowJob())


@pytest.mark.parametrize("doubts", [2, 3])
@pytest.mark.parametrize("visible", [False, True])
def test_a_retry_decided_after_the_first_doubt_and_before_the_doubted_absence_is_not_taken_for_one_on_its_way(
    visible: bool, doubts: int
) -> None:
    """Decided after the caller was first told the outcome is uncertain and before the (wrong) absence, sent after
    one more doubt or two: a retry after an uncertain outcome, the truth 1. With the ledger withheld whether the
    absence was right is unknown to the checker (null, not 0); with it visible, 1. (Against ``decided.index >
    since.index`` read as ``> reopened.index``, the doubted read taken for where the doubt began; and against
    ``reopened = doubted or reopened`` made ``reopened = doubted``, the doubted read forgotten at the third doubt:
    0, unsound.)"""
    scenario = _slow_retries(visible)
    commands = DECIDED_BEFORE_THE_ABSENCE + (FollowJob(),) * (doubts - 2)
    decided, first, absence, second, sent, truth = _shape(scenario, commands)
    assert first < decided < absence < second < sent and truth == 1
    result = simulate(scenario, Script(commands), 1)
    history = result.evidence.history
    assert (
        sum(isinstance(e, ReplyReceived) and e.status == "unknown_outcome" and e.index < sent for e in history)
        == doubts
    )
    judgement = check(result.evidence)
    if visible:
        assert judgement.metrics["retries_after_uncertain"] == 1
    else:
        assert judgement.metrics["retries_after_uncertain"] is None
        assert judgement.unknown["retries_after_uncertain"].endswith(
            "so whether the read that answered absent before a73-x2 was decided was right (if not, its outcome was "
            "uncertain since a73 was answered unknown_outcome) is unknown"
        )
    assert_sound(Script(commands), scenario, 1)


@pytest.mark.parametrize("visible", [False, True])
def test_a_retry_decided_before_any_doubt_and_sent_after_a_reopened_one_is_known_to_be_none(visible: bool) -> None:
    """Decided before the caller was ever told the outcome is uncertain: whatever the absence read after it, no
    retry after an uncertain outcome (the truth 0), known whether the ledger is withheld or not. (Against the
    ``decided.index > since.index`` clause dropped, or the guard's ``and`` after ``reopened`` made ``or``: null.)"""
    scenario = _slow_retries(visible)
    decided, first, absence, second, sent, truth = _shape(scenario, DECIDED_BEFORE_ANY_DOUBT)
    assert decided < first < absence < second < sent and truth == 0
    judgement = check(simulate(scenario, Script(DECIDED_BEFORE_ANY_DOUBT), 1).evidence)
    assert judgement.metrics["retries_after_uncertain"] == 0
    assert "retries_after_uncertain" not in judgement.unknown


def test_the_reason_names_the_reply_the_kept_doubt_began_with() -> None:
    """The first doubt is a retry's own reply (``a73-x2`` answered unknown_outcome); a second retry decided at once
    leaves after a (wrong) absence and a follow's unknown_outcome. The reason names the reply the doubt began with,
    by its execution, not the action or the latest doubt. (Against ``since.execution_id or action_id`` made
    ``action_id``, and ``since`` made ``told`` there.)"""
    scenario = _slow_retries(False)
    commands = (RetrySameAction(claim=False), Wait(duration_s=3.5), RetrySameAction(claim=False), LookUp(), FollowJob())
    result = simulate(scenario, Script(commands), 1)
    history = result.evidence.history
    replies = [(e.kind, e.status, e.execution_id) for e in history if isinstance(e, ReplyReceived)]
    assert replies[:3] == [
        ("dispatch", "unknown_outcome", "a73-x2"),
        ("lookup", "absent", None),
        ("follow_job", "unknown_outcome", None),
    ]
    assert result.truth.retries_after_uncertain == 1
    judgement = check(result.evidence)
    assert judgement.metrics["retries_after_uncertain"] is None
    assert judgement.unknown["retries_after_uncertain"].endswith(
        "so whether the read that answered absent before a73-x3 was decided was right (if not, its outcome was "
        "uncertain since a73-x2 was answered unknown_outcome) is unknown"
    )


def test_the_reason_names_the_latest_doubted_read() -> None:
    """Two doubted reads, each followed by a new doubt, before a retry decided after the first doubt leaves: a
    lookup's absence, then a verification refuted by another operation's receipt. The reason names the latest
    (refuted), the one whose being right would settle the doubt last. (Against ``doubted or reopened`` made
    ``reopened or doubted``: the first kept, "absent".)"""
    scenario = _slow_retries(False)
    faults = [*DOUBTED_ABSENCE_THEN_A_NEW_DOUBT["faults"], {"boundary": "lookup_foreign_receipt", "nth": 2}]
    scenario = Scenario.model_validate({**scenario.model_dump(), "faults": faults})
    commands = (*DECIDED_BEFORE_THE_ABSENCE, VerifyOutcome(), FollowJob())
    result = simulate(scenario, Script(commands), 1)
    reads = [(e.kind, e.status) for e in result.evidence.history if isinstance(e, ReplyReceived)]
    assert reads[:5] == [
        ("follow_job", "unknown_outcome"),
        ("lookup", "absent"),
        ("follow_job", "unknown_outcome"),
        ("verify", "refuted"),
        ("follow_job", "unknown_outcome"),
    ]
    assert result.truth.retries_after_uncertain == 1
    judgement = check(result.evidence)
    assert judgement.metrics["retries_after_uncertain"] is None
    assert (
        "whether the read that answered refuted before a73-x2 was decided was right"
        in (judgement.unknown["retries_after_uncertain"])
    )


#: After the first doubt, a read answered with another operation's receipt ("applied") settles it for the checker,
#: a retry is decided, and a new doubt, a (wrong) absence and a third doubt come before the retry leaves. In the
#: first, the settling read is the first read; in the second, it comes after a doubted absence (the caller no
#: longer told, the doubt kept).
SETTLED_THEN_DOUBTED_AGAIN = {
    "settled_at_once": (
        1,
        (FollowJob(), Wait(duration_s=0.5), LookUp(), RetrySameAction(claim=False), FollowJob(), LookUp(), FollowJob()),
        ("unknown_outcome", "applied", "decision", "unknown_outcome", "absent", "unknown_outcome", "sent"),
    ),
    "settled_after_a_doubted_absence": (
        2,
        (FollowJob(), Wait(duration_s=0.5), LookUp(), LookUp(), Wait(duration_s=0.5), RetrySameAction(claim=False),
         FollowJob(), LookUp(), FollowJob()),
        ("unknown_outcome", "absent", "applied", "decision", "unknown_outcome", "absent", "unknown_outcome", "sent"),
    ),
}  # fmt: skip


@pytest.mark.parametrize("shape", sorted(SETTLED_THEN_DOUBTED_AGAIN))
def test_a_retry_decided_after_a_read_settled_the_doubt_is_known_to_be_none_whatever_doubts_follow(
    shape: str,
) -> None:
    """A read settled the first doubt (for the checker, as for the auditor) before the retry was decided: the doubt
    that began after it is the one a later doubted absence keeps, and the retry was decided before it (the truth
    0, known). (Against ``since or event`` made ``told_last or event`` and against ``since`` left standing once a
    read settles the doubt, whether always or only while the caller is told: the first doubt taken for where the
    kept one began, and the retry undecided.)"""
    nth, commands, order = SETTLED_THEN_DOUBTED_AGAIN[shape]
    scenario = _slow_retries(False)
    faults = [*DOUBTED_ABSENCE_THEN_A_NEW_DOUBT["faults"], {"boundary": "lookup_foreign_receipt", "nth": nth}]
    scenario = Scenario.model_validate({**scenario.model_dump(), "faults": faults})
    result = simulate(scenario, Script(commands), 1)
    seen = []
    for e in result.evidence.history:
        if isinstance(e, ReplyReceived) and e.kind != "dispatch":
            seen.append(e.status)
        elif isinstance(e, CommandGiven) and e.command.kind == "retry_same_action":
            seen.append("decision")
        elif isinstance(e, DispatchSent) and e.n == 2:
            seen.append("sent")
    assert tuple(seen) == order
    assert result.truth.retries_after_uncertain == 0
    judgement = check(result.evidence)
    assert judgement.metrics["retries_after_uncertain"] == 0
    assert "retries_after_uncertain" not in judgement.unknown


# -- the harness's own code digest ----------------------------------------------------------------------------------


def test_the_harness_code_digest_is_read_once_per_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """The digest of the code this process runs: taken once, so a module edited on disk while a run goes on (its
    old text still the one running) changes nothing the run records."""
    first = harness_code_digest()
    monkeypatch.setattr(folder, "code_digest", lambda package: "edited since")
    assert harness_code_digest() == first


def test_the_code_digest_does_not_depend_on_the_order_the_folder_lists_its_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same modules give the same digest whatever order the filesystem lists them in (another filesystem, a
    copy of the package, lists them in another order)."""
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    for name in ("a.py", "b.py", "c.py", "sub/d.py", "sub/e.py"):
        (package / name).write_text(f"# {name}\n")
    listed = code_digest(package)
    rglob = Path.rglob
    for backwards in (False, True):

        def in_order(self: Path, pattern: str, backwards: bool = backwards) -> Iterator[Path]:
            return iter(sorted(rglob(self, pattern), reverse=backwards))

        monkeypatch.setattr(Path, "rglob", in_order)
        assert code_digest(package) == listed


def test_the_code_digest_is_the_same_for_a_copy_of_the_package_elsewhere(tmp_path: Path) -> None:
    """By each module's path inside the package: the same code installed in another folder (a new virtual
    environment, a checkout moved) is the same code."""
    for where in ("here", "there/deeper"):
        package = tmp_path / where / "pkg"
        (package / "sub").mkdir(parents=True)
        (package / "a.py").write_text("A = 1\n")
        (package / "sub" / "b.py").write_text("B = 2\n")
    assert code_digest(tmp_path / "here" / "pkg") == code_digest(tmp_path / "there" / "deeper" / "pkg")
