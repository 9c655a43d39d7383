"""Scenario files are checked where they enter: bad input fails with one line naming file, field and fix."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import SCENARIO_DIR

from harness.scenario import ScenarioError, list_scenarios, load_scenario, resolve_scenario


@pytest.mark.parametrize("name", list_scenarios(SCENARIO_DIR))
def test_shipped_scenarios_load_and_explain_themselves(name: str) -> None:
    """Every shipped scenario validates, has a revision, and a description of more than a sentence."""
    scenario = load_scenario(SCENARIO_DIR / f"{name}.yaml")
    assert scenario.revision and len(scenario.description.split()) > 20


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    return path


BASE = (SCENARIO_DIR / "lost_response.yaml").read_text()


def error_for(path: Path) -> str:
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    message = str(info.value)
    assert "\n" not in message and str(path) in message and "fix:" in message
    return message


def test_malformed_yaml_names_the_line(tmp_path: Path) -> None:
    """Broken YAML syntax is reported with its line."""
    message = error_for(write(tmp_path, "lost_response", BASE + "faults: [\n"))
    assert "malformed YAML at line" in message


def test_unknown_field_is_named(tmp_path: Path) -> None:
    """A misspelt field is rejected by name, not silently ignored."""
    message = error_for(write(tmp_path, "lost_response", BASE + "recovery_deadlin_s: 5\n"))
    assert "'recovery_deadlin_s'" in message


def test_a_misspelt_required_field_is_named_with_the_field_it_misspells(tmp_path: Path) -> None:
    """A required field misspelt is both missing and unknown: the message names the misspelling and the field it
    nearly spells, at the top level or nested; an unknown key like no missing field is only unknown."""
    message = error_for(write(tmp_path, "lost_response", BASE.replace("\naction_id:", "\naction_idd:")))
    assert message.endswith(
        "field 'action_idd': not a field; fix: rename it 'action_id' (a field this entry requires)"
    ), message
    nested = error_for(write(tmp_path, "lost_response", BASE.replace("revision: 17", "revison: 17")))
    assert "field 'task.revison': not a field; fix: rename it 'revision'" in nested, nested
    unlike = error_for(write(tmp_path, "lost_response", BASE.replace("\naction_id:", "\nzzz:")))
    assert "field 'action_id': Field required; fix: add it (+1 more)" in unlike, unlike


def test_wrong_type_names_the_nested_field(tmp_path: Path) -> None:
    """A value of the wrong type names its dotted path."""
    text = BASE.replace("revision: 17", "revision: seventeen")
    assert "'task.revision'" in error_for(write(tmp_path, "lost_response", text))


def test_unknown_boundary_lists_the_choices(tmp_path: Path) -> None:
    """A fault at a boundary that does not exist is rejected with the valid names."""
    text = BASE.replace("boundary: response_lost", "boundary: response_gone")
    message = error_for(write(tmp_path, "lost_response", text))
    assert "faults.0" in message and "response_lost" in message


def test_unsafe_name_is_rejected(tmp_path: Path) -> None:
    """A name that cannot be a folder or run name is rejected."""
    text = BASE.replace("name: lost_response", "name: ../evil")
    assert "'name'" in error_for(write(tmp_path, "evil", text))


def test_name_must_match_file(tmp_path: Path) -> None:
    """The scenario's name is its file name, so grid cells and files agree."""
    assert "differs from the file name" in error_for(write(tmp_path, "other", BASE))


def test_trigger_needs_exactly_one_time(tmp_path: Path) -> None:
    """An operator event with both at_s and after is ambiguous and rejected."""
    text = BASE + ("operator:\n  - do: request_cancel\n    when: {at_s: 1, after: {actor: worker, event: timeout}}\n")
    assert "exactly one" in error_for(write(tmp_path, "lost_response", text))


def test_fields_missing_from_one_entry_are_named_together(tmp_path: Path) -> None:
    """A change_task with neither model nor digest: both named, in one line (the second was "+1 more"); one
    missing beside another kind of error keeps the count of the rest."""
    text = BASE + "operator:\n  - {do: change_task, when: {at_s: 5}}\n"
    message = error_for(write(tmp_path, "lost_response", text))
    assert message.endswith("fields 'operator.0.model', 'operator.0.digest': Field required; fix: add them"), message
    text = BASE + "operator:\n  - {do: change_task, when: {at_s: 5}, model: m8}\n"
    assert error_for(write(tmp_path, "lost_response", text)).endswith(
        "field 'operator.0.digest': Field required; fix: add it"
    )


def test_nothing_is_set_to_begin_at_or_after_the_recovery_deadline(tmp_path: Path) -> None:
    """The first dispatch, or an operator event at a time (plus its delay), at or after the deadline would act when
    the case is over but for what is in flight, and a restart delay as long as the case would start no recovering
    worker: refused, naming the field; just before it loads."""
    deadline = "recovery_deadline_s: 120\n"
    assert deadline in BASE
    cancel = "operator:\n  - do: request_cancel\n    when: {at_s: %s}\n"
    for text, field in (
        (
            BASE + "worker: {dispatch_at_s: 120}\n",
            "'worker.dispatch_at_s': 120.0 s is not before the recovery deadline",
        ),
        (
            BASE + "worker: {restart_delay_s: 120}\n",
            "'worker.restart_delay_s': 120.0 s is not shorter than the recovery deadline (120.0 s)",
        ),
        (BASE + cancel % "120", "'operator.0.when': it would act at 120.0 s, not before the recovery deadline"),
        (BASE + cancel % "100, delay_s: 20", "'operator.0.when': it would act at 100.0 s + delay_s 20.0 s, not"),
    ):
        message = error_for(write(tmp_path, "lost_response", text))
        assert field in message and "fix: " in message, message
    for text in (
        BASE + "worker: {dispatch_at_s: 119.9}\n",
        BASE + "worker: {restart_delay_s: 119.9}\n",
        BASE + cancel % "100, delay_s: 19.9",
    ):
        load_scenario(write(tmp_path, "lost_response", text))


SHADOWED = "field 'faults.1': every occurrence it names is faults.0's too"


def test_a_fault_declared_twice_is_refused(tmp_path: Path) -> None:
    """The same fault twice: the second could never fire (the first takes its occurrence), and the run said it
    fired in no case, "make the fault reachable", though it was reached. Refused at load, naming both, however
    the site is said (the scenario's own action named, phase every beside one of its phases)."""
    text = BASE + "  - {boundary: response_lost, nth: 1}\n"
    message = error_for(write(tmp_path, "lost_response", text))
    assert (
        "field 'faults.1': every occurrence it names is faults.0's too, at the same boundary, so it could never fire"
        in message
        and "fix: " in message
    )
    load_scenario(write(tmp_path, "lost_response", BASE + "  - {boundary: response_lost, nth: 2}\n"))
    # The same site said two ways: the scenario's own action named, and phase every beside one of its phases.
    named = BASE + "  - {boundary: response_lost, nth: 1, action_id: a73}\n"
    assert SHADOWED in error_for(write(tmp_path, "lost_response", named))
    crashes = (SCENARIO_DIR / "connector_crash_points.yaml").read_text()
    for phase in ("after_started", "every"):
        text = crashes + f"  - {{boundary: connector_crash, phase: {phase}}}\n"
        assert SHADOWED in error_for(write(tmp_path, "connector_crash_points", text))
    again = (
        crashes.replace("phase: every}", "phase: after_started}") + "  - {boundary: connector_crash, phase: every}\n"
    )
    assert SHADOWED in error_for(write(tmp_path, "connector_crash_points", again))
    load_scenario(
        write(tmp_path, "connector_crash_points", crashes + "  - {boundary: connector_crash, phase: every, nth: 2}\n")
    )


def test_a_fault_whose_occurrences_an_earlier_one_takes_is_refused(tmp_path: Path) -> None:
    """A scenario author's review: occurrences 1 to 3 lost, then the 2nd lost again, loaded, and the run ended
    "its site was reached; make the fault reachable". The first listed takes an occurrence whatever else the
    second says (another delay), so a fault inside an earlier one's occurrences is refused; one that reaches past
    them, or begins before them, fires there and loads."""
    three = BASE.replace("{boundary: response_lost, nth: 1}", "{boundary: response_lost, nth: 1, count: 3}")
    assert three != BASE
    for inside in ("{boundary: response_lost, nth: 2}", "{boundary: response_lost, nth: 3}"):
        assert SHADOWED in error_for(write(tmp_path, "lost_response", three + f"  - {inside}\n"))
    every = BASE.replace("{boundary: response_lost, nth: 1}", "{boundary: response_lost, nth: 2, count: null}")
    assert SHADOWED in error_for(write(tmp_path, "lost_response", every + "  - {boundary: response_lost, nth: 9}\n"))
    delayed = "faults:\n  - {boundary: response_delayed, delay_s: 5}\n  - {boundary: response_delayed, delay_s: 20}\n"
    assert SHADOWED in error_for(write(tmp_path, "lost_response", BASE.split("faults:")[0] + delayed))
    for beside in (
        "{boundary: response_lost, nth: 3, count: 2}",  # the 4th is its own
        "{boundary: response_lost, nth: 4}",
        "{boundary: request_lost, nth: 2}",  # another boundary
    ):
        load_scenario(write(tmp_path, "lost_response", three + f"  - {beside}\n"))
    load_scenario(write(tmp_path, "lost_response", every + "  - {boundary: response_lost, nth: 1}\n"))


def test_a_fault_past_the_last_request_an_action_can_make_is_refused(tmp_path: Path) -> None:
    """The first dispatch and one request a command: an nth past 1 + worker.command_count_max could never fire
    (nor could 10^23, which loaded before): refused with the bound; at the bound it loads."""
    for nth, budget in (("66", ""), ("10", "worker: {command_count_max: 8}\n"), ("99999999999999999999999", "")):
        text = BASE.replace("nth: 1}", f"nth: {nth}}}") + budget
        message = error_for(write(tmp_path, "lost_response", text))
        last = 9 if budget else 65
        assert f"'faults.0.nth': {nth} is past the last request an action can make ({last}:" in message, message
    load_scenario(write(tmp_path, "lost_response", BASE.replace("nth: 1}", "nth: 65}")))
    load_scenario(
        write(tmp_path, "lost_response", BASE.replace("nth: 1}", "nth: 9}") + "worker: {command_count_max: 8}\n")
    )


def test_an_event_whose_delay_alone_reaches_the_deadline_is_refused(tmp_path: Path) -> None:
    """An event triggered by a record, delay_s at or past the deadline: it would act after the case is over
    whenever its trigger comes. Refused; just under the deadline it loads."""
    event = "operator:\n  - do: request_cancel\n    when: {after: {actor: worker, event: timeout}, delay_s: %s}\n"
    message = error_for(write(tmp_path, "lost_response", BASE + event % "500"))
    assert "'operator.0.when.delay_s': 500.0 s after its trigger is not before the recovery deadline" in message
    assert "after its trigger" in error_for(write(tmp_path, "lost_response", BASE + event % "120"))
    load_scenario(write(tmp_path, "lost_response", BASE + event % "119"))


def test_unknown_scenario_name_lists_known_ones() -> None:
    """An unknown scenario name is refused with the shipped names."""
    with pytest.raises(ScenarioError, match="lost_response"):
        resolve_scenario("lost_respons", SCENARIO_DIR)


def test_binary_file_is_refused(tmp_path: Path) -> None:
    """A file that is not text gets a one-line error, not a decoding traceback."""
    path = tmp_path / "lost_response.yaml"
    path.write_bytes(b"\xff\xfe\x00binary")
    assert "not UTF-8 text" in error_for(path)


def test_trigger_on_an_event_nobody_records_is_refused(tmp_path: Path) -> None:
    """A misspelt trigger event would silently never fire: refused, with the events that actor records."""
    text = BASE + "operator:\n  - do: request_cancel\n    when: {after: {actor: worker, event: timout}}\n"
    message = error_for(write(tmp_path, "lost_response", text))
    assert "no event 'timout'" in message and "timeout" in message and "Value error" not in message


def test_fault_for_another_action_is_refused(tmp_path: Path) -> None:
    """A fault aimed at an action the scenario does not have would never be injected: refused."""
    text = BASE.replace("{boundary: response_lost, nth: 1}", "{boundary: response_lost, nth: 1, action_id: a99}")
    assert "'a99' is not an action of this scenario (a73)" in error_for(write(tmp_path, "lost_response", text))


def test_event_vocabulary_matches_what_the_simulator_records() -> None:
    """Most of the vocabulary is recorded somewhere in the shipped grid or under random commands."""
    from test_soundness import RandomPolicy

    from harness.model.events import VOCABULARY
    from harness.policy import builtin_policy_names, load_policy
    from harness.sim import simulate

    seen: set[tuple[str, str]] = set()
    policies = [load_policy(p) for p in builtin_policy_names()] + [RandomPolicy(i) for i in range(30)]
    from harness.scenario import scenario_cases

    for scenario in (case for name in list_scenarios(SCENARIO_DIR) for _, case in scenario_cases(name)):
        visible = scenario.model_copy(
            update={"destination": scenario.destination.model_copy(update={"ledger_visible": True})}
        )
        for policy in policies:
            seen |= {(e.actor, e.event) for e in simulate(visible, policy, 1).evidence.history}
    unknown = {pair for pair in seen if pair[1] not in VOCABULARY[pair[0]]}  # type: ignore[index]
    assert not unknown
    assert len(seen) >= 50  # most of the vocabulary is exercised, not just declared
