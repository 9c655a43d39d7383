"""What a fourth adversarial review of the judge found (stop 58), pinned where the grid's catches do not say it.

- ``false_records`` judged an absence recorded before a late original was accepted (and then rejected) as true,
  where the same acceptance before the write was a false record: the record said no earlier request could still
  arrive, and one did. Both are false records now, the later one said so.
- Every same-key retry's claim is leased to the deadline less the escalation margin (``leave_by_s``): a claim
  made later is refused, and the refusal escalated while the margin lasts.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import pytest
from buggy_policies import RecordsAbsenceAtOnce
from conftest import SCENARIO_DIR
from test_policies import INSIDE, OUTSIDE, situation

from harness.check import check
from harness.errors import InputError
from harness.gate.junit import junit_xml
from harness.policy import CommandResult, Escalate, LookupView, RetrySameAction, load_policy
from harness.scenario import load_scenario
from harness.sim import simulate

LATE_REJECTED = load_scenario(SCENARIO_DIR / "late_original_rejected_after_absence.yaml")
RECONCILE = load_policy("reconcile_and_reauthorize")


def _false_records(policy: object, seed: int = 1) -> tuple[str, tuple[str, ...]]:
    judged = check(simulate(LATE_REJECTED, policy, seed).evidence)  # type: ignore[arg-type]
    [result] = [r for r in judged.results if r.name == "false_records"]
    return result.verdict, tuple(a.detail for a in result.anomalies)


def test_an_absence_recorded_before_a_late_original_is_accepted_is_a_false_record() -> None:
    """The late original is accepted (and rejected) 30 s in, after the variant recorded a73 absent at about 15 s:
    a false record, said as one made before the acceptance. The correct policy waits until no earlier request can
    still arrive, and records the rejection."""
    verdict, said = _false_records(RecordsAbsenceAtOnce("records_absence_at_once"))
    assert verdict == "false"
    assert said == ("a73 recorded absent, but the destination accepted it after the write (a73-x1, a late request)",)
    assert _false_records(RECONCILE) == ("true", ())
    # The simulator's own truth agrees (the soundness test holds the checker to it over random commands).
    late = simulate(LATE_REJECTED, RecordsAbsenceAtOnce("records_absence_at_once"), 1).truth
    assert late.false_records == 1 and simulate(LATE_REJECTED, RECONCILE, 1).truth.false_records == 0


def test_every_same_key_retry_is_leased_to_the_margin_and_its_refusal_escalates() -> None:
    """A retry decided just outside the margin carries the margin's start as its lease; the claim, refused when
    the worker makes it later, is escalated, not waited out or asked for again."""
    absent = (LookupView(at_s=OUTSIDE - 0.2, sent_at_s=OUTSIDE - 1.0, effect="absent"),)
    retry = RECONCILE.decide(situation(now=OUTSIDE, lookups=absent))
    assert retry == RetrySameAction(claim=True, send_by_s=INSIDE)
    assert RECONCILE.leave_by_s(situation(now=OUTSIDE)) == 120.0 - RECONCILE.escalate_margin_s  # type: ignore[attr-defined]
    refused = CommandResult(kind="retry_same_action", refused=True, reason="claim refused: made after 105.000 s")
    after = RECONCILE.decide(situation(now=INSIDE + 11.0, lookups=absent, last=refused))
    assert isinstance(after, Escalate), after


def test_a_bridge_error_can_outrun_the_call_it_is_about(tmp_path: Path) -> None:
    """``lands_after_s``: the caller gets the do-not-replay error at once, and the forwarded call reaches the tool
    server that much later (seed 002: the error says only that no reply came); only a forwarded call can."""
    from harness.model.events import ConnectionBroken, Received

    scenario = load_scenario(SCENARIO_DIR / "bridge_error_before_call_lands.yaml")
    history = simulate(scenario, RECONCILE, 1).evidence.history
    broken = next(e for e in history if isinstance(e, ConnectionBroken))
    landed = next(e for e in history if isinstance(e, Received))
    assert broken.forwarded and landed.execution_id == broken.execution_id == "a73-x1"
    assert landed.at_s - broken.at_s == pytest.approx(4.5)
    text = (SCENARIO_DIR / "bridge_error_before_call_lands.yaml").read_text(encoding="utf-8")
    bad = tmp_path / "bad.yaml"
    bad.write_text(text.replace("forwarded: true, lands_after_s", "forwarded: false, lands_after_s"), encoding="utf-8")
    with pytest.raises(InputError) as refused:
        load_scenario(bad)
    assert str(refused.value) == (
        f"{bad}: field 'faults.0': lands_after_s is when a forwarded call reaches the tool server: give forwarded: "
        "true with it, or leave it out; fix: correct the value"
    )


def test_a_bridge_error_bounds_nothing_of_when_its_call_lands() -> None:
    """Revision 11: an attempt answered with a bridge's connection error may reach the tool server until request
    validity after it was sent; any other reply through the bridge bounds it (the call had reached the server)."""
    answered = (
        situation()
        .attempts[0]
        .model_copy(update={"observation": "response", "response_status": "connection_error", "replied_at_s": 0.1})
    )
    bridged = situation().contract.model_copy(update={"via": "bridge"})
    s = situation().model_copy(update={"attempts": (answered,), "contract": bridged})
    assert RECONCILE.reached_by_s(s) == 0.0 + 60.0  # type: ignore[attr-defined]
    conflict = answered.model_copy(update={"response_status": "conflict"})
    assert RECONCILE.reached_by_s(s.model_copy(update={"attempts": (conflict,)})) == 0.1  # type: ignore[attr-defined]


def test_maxfail_stops_a_check_once_that_many_cases_failed(tmp_path: Path) -> None:
    """A check stops at the end of the piece in which its failures reach ``--maxfail`` (a policy that hangs costs
    the case timeout a case: about five hours over the shipped cases at the defaults, a CI user's review): the
    cases that ran are judged as always, and a note says what was left out. Without it, every case runs."""
    from harness.gate.runner import CheckOptions, check_policy

    asked = CheckOptions(scenarios=("lost_response", "request_lost"), seeds=(1, 2), maxfail=1)
    stopped = check_policy("retry_new_key", replace(asked, out=tmp_path / "stopped"))
    assert [(c.name, c.outcome) for c in stopped.cases] == [
        ("lost_response seed 1", "incorrect"),
        ("lost_response seed 2", "incorrect"),
    ]
    assert stopped.notes == ("note: stopped after 2 failing cases (--maxfail 1): 2 of 4 cases not run",)
    assert not stopped.ok and stopped.out == tmp_path / "stopped"
    # The JUnit file names the cases not run, each skipped with why (it held only the cases that ran).
    root = ET.fromstring(junit_xml(stopped.suites()))
    assert (root.get("tests"), root.get("failures")) == ("4", "2")  # the cases not run counted among the tests
    suite = root.find("testsuite")
    assert suite is not None
    assert {k: suite.get(k) for k in ("tests", "failures", "errors", "skipped")} == {
        "tests": "4", "failures": "2", "errors": "0", "skipped": "2"
    }  # fmt: skip
    skipped = [
        (c.get("classname"), c.get("name"), [(e.tag, e.get("message")) for e in c]) for c in suite.iter("testcase")
    ][2:]
    why = "not run: the check stopped after 2 failing cases (--maxfail 1)"
    assert skipped == [
        ("retry_new_key", "request_lost seed 1", [("skipped", why)]),
        ("retry_new_key", "request_lost seed 2", [("skipped", why)]),
    ]
    whole = check_policy("retry_new_key", replace(asked, out=tmp_path / "whole", maxfail=3))
    assert whole.not_run == () and 'skipped="0"' in junit_xml(whole.suites())
    assert len(whole.cases) == 4 and not any(n.startswith("note: stopped") for n in whole.notes)
    with_baseline = check_policy("retry_new_key", replace(asked, out=tmp_path / "b", baseline="stop_on_timeout"))
    assert with_baseline.notes[-1].endswith("2 of 4 cases not run, nor the baseline")


@pytest.mark.parametrize(
    ("spec", "said"),
    [
        ("agentrt.good", "unknown policy 'agentrt.good'; fix: name the policy object after a colon, as in agentrt.good:POLICY"),
        ("agentrt.good.MINE", "unknown policy 'agentrt.good.MINE'; fix: name the policy object after a colon, as in agentrt.good:MINE"),
        ("agentrt.good:", "policy 'agentrt.good:': no attribute after ':'; fix: name the policy object, as in agentrt.good:POLICY"),
    ],
)  # fmt: skip
def test_a_policy_named_by_its_module_is_told_the_colon(
    spec: str, said: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A user's policy named as a module (``pkg.mod``), with its object dotted on, or with nothing after the colon
    was told to choose a shipped name or to name an importable module; the module is there, so the fix shows the
    colon. A package's misspelt module is not taken for an attribute (the usual message)."""
    from harness.policy import PolicyError

    (tmp_path / "agentrt").mkdir()
    (tmp_path / "agentrt" / "__init__.py").write_text("")
    (tmp_path / "agentrt" / "good.py").write_text(
        "from policies.reconcile_and_reauthorize import POLICY\nMINE = POLICY\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(PolicyError) as refused:
        load_policy(spec)
    assert str(refused.value) == said
    with pytest.raises(PolicyError) as misspelt:
        load_policy("agentrt.nosuch")
    assert str(misspelt.value).startswith("unknown policy 'agentrt.nosuch'; fix: use one of follow_and_inspect, ")


LATE_CALL = """name: late_call
revision: "1"
description: a bridge error that outruns its call, which lands LANDS s later; no deduplication, no request validity
task: {task_id: release-42, revision: 17, target: staging/fraud, model: m7, digest: "sha256:d7d7d7"}
approval: {approval_id: apr-17, token: "tok-17-secret-do-not-log"}
action_id: a73
bridge: {}
destination: {dedupe: none, request_validity_s: null}
faults:
  - {boundary: bridge_connection_error, nth: 1, forwarded: true, lands_after_s: LANDS}
"""


@pytest.mark.parametrize(("lands_s", "seen"), [(200.0, True), (5000.0, False)])
def test_a_bridge_call_landing_after_the_deadline_is_waited_for_or_said_to_be_cut_off(
    lands_s: float, seen: bool, tmp_path: Path
) -> None:
    """The case runs on past its deadline while a forwarded call is still on its way to the tool server, as it
    does for a request on the wire: a review found one landing 200 s after its error (the deadline 120 s) dropped,
    and retry_new_key's second effect unseen. One the end cuts off (past the horizon) is said, so the checker
    leaves what it might have done unknown instead of judging it absent."""
    from harness.model.events import StillInFlight

    path = tmp_path / "late_call.yaml"
    path.write_text(LATE_CALL.replace("LANDS", str(lands_s)), encoding="utf-8")
    result = simulate(load_scenario(path), load_policy("retry_new_key"), 1)
    checks = check(result.evidence).checks
    cut = [e for e in result.evidence.history if isinstance(e, StillInFlight)]
    if seen:
        assert checks["duplicate_effects"] == "false" and result.truth.duplicate_effects == 1 and not cut
    else:
        assert checks["duplicate_effects"] == "unknown" and [e.execution_id for e in cut] == ["a73-x1"]


def test_run_s_120_character_line_keeps_where_a_deeply_packaged_policy_raised() -> None:
    """run's reproduce list cuts a policy's error at 120 characters: a place 63 characters long (a module four
    packages deep) was dropped while it had to fit in half of them; now it is kept while 27 of the error's are."""
    from harness.errors import cut_keeping_place

    place = " (at line 12 of acme_platform.agents.recovery.policy, in decide)"
    cut = cut_keeping_place("RuntimeError: boom " + "x" * 200 + place, 120)
    assert len(cut) == 120 and cut.endswith("..." + place) and cut.startswith("RuntimeError: boom xxx")
