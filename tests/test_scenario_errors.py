"""A refused scenario names the field as the file has it and a fix that works: how to write a number YAML reads
as one, to quote text YAML reads as a number, where a setting put at the wrong level belongs, and a case may be
selected by the name the harness prints for it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import SCENARIO_DIR
from pydantic import BaseModel, Secret, SecretStr

from harness.cli import main
from harness.scenario import Scenario, ScenarioError, list_scenarios, load_scenario, resolve_scenario, scenario_cases
from harness.scenario.faults import CONNECTOR_PHASES
from harness.scenario.messages import _model, is_secret, number_fix

BASE = (SCENARIO_DIR / "lost_response.yaml").read_text()


def write(tmp_path: Path, old: str, new: str) -> Path:
    assert old in BASE
    path = tmp_path / "lost_response.yaml"
    path.write_text(BASE.replace(old, new, 1), encoding="utf-8")
    return path


def error_for(path: Path) -> str:
    """What follows the file's name in the one-line message loading ``path`` fails with."""
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    message = str(info.value)
    assert message.splitlines() == [message] and message.startswith(f"{path}: field '"), message
    return message.removeprefix(f"{path}: ")


DEADLINE = "recovery_deadline_s: 120"


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (DEADLINE, "recovery_deadline_s: 1e3", "field 'recovery_deadline_s': Input should be a valid number; fix: write"
         " 1000.0 or 1.0e+3 (YAML reads 1e3 as text)"),
        (DEADLINE, "recovery_deadline_s: '1e3'", "field 'recovery_deadline_s': Input should be a valid number; fix:"
         " write 1000.0 or 1.0e+3 (YAML reads 1e3 as text)"),
        (DEADLINE, "recovery_deadline_s: 1E-3", "field 'recovery_deadline_s': Input should be a valid number; fix:"
         " write 0.001 or 1.0e-3 (YAML reads 1E-3 as text)"),
        (DEADLINE, "recovery_deadline_s: 1.5e3", "field 'recovery_deadline_s': Input should be a valid number; fix:"
         " write 1500.0 or 1.5e+3 (YAML reads 1.5e3 as text)"),
        (DEADLINE, "recovery_deadline_s: 1e4", "field 'recovery_deadline_s': Input should be a valid number; fix:"
         " write 10000.0 or 1.0e+4 (YAML reads 1e4 as text)"),
        ("nth: 1}", "nth: 1e0}", "field 'faults.0.nth': Input should be a valid integer; fix: write 1 (YAML reads 1e0"
         " as text)"),
        # A field whose bounds are in its type, not in Field(...): no metadata to read them from (that raised).
        ('do-not-log"}', 'do-not-log", expires_at_s: 1e3}', "field 'approval.expires_at_s': Input should be a valid"
         " number; fix: write 1000.0 or 1.0e+3 (YAML reads 1e3 as text)"),
        # Quoted text that, unquoted, YAML reads as a number, and text that is no number: the fix stays.
        (DEADLINE, "recovery_deadline_s: '120'", "field 'recovery_deadline_s': Input should be a valid number; fix:"
         " write a number, without quotes"),
        (DEADLINE, "recovery_deadline_s: soon", "field 'recovery_deadline_s': Input should be a valid number; fix:"
         " write a number, without quotes"),
        ("nth: 1}", "nth: 1.5e0}", "field 'faults.0.nth': Input should be a valid integer; fix: write a whole number,"
         " without quotes"),
        # A whole number is written exactly as the text says, not as the float it makes (1000000000000000019884...).
        ("nth: 1}", "nth: 1e30}", "field 'faults.0.nth': Input should be a valid integer; fix: write"
         " 1000000000000000000000000000000 (YAML reads 1e30 as text)"),
        # Too small or too large for a float: no number to write would keep the value, so the plain fix stays.
        (DEADLINE, "recovery_deadline_s: 1e-400", "field 'recovery_deadline_s': Input should be a valid number; fix:"
         " write a number, without quotes"),
        (DEADLINE, "recovery_deadline_s: 1e400", "field 'recovery_deadline_s': Input should be a valid number; fix:"
         " write a number, without quotes"),
        ("nth: 1}", "nth: 1e-400}", "field 'faults.0.nth': Input should be a valid integer; fix: write a whole number,"
         " without quotes"),
    ],
)  # fmt: skip
def test_a_number_yaml_reads_as_text_is_told_how_to_write_it(tmp_path: Path, old: str, new: str, expected: str) -> None:
    """YAML 1.1 reads 1e3 as text (a number needs a dot and a signed exponent): "without quotes" would not help."""
    assert error_for(write(tmp_path, old, new)) == expected


@pytest.mark.parametrize(
    ("old", "new", "field", "bound", "text"),
    [
        (DEADLINE, "recovery_deadline_s: 1e308", "recovery_deadline_s", "less than or equal to 86400", "1e308"),
        (DEADLINE, "recovery_deadline_s: -1e3", "recovery_deadline_s", "greater than 0", "-1e3"),
        ("nth: 1}", "nth: 0e0}", "faults.0.nth", "greater than or equal to 1", "0e0"),
        (DEADLINE, f"{DEADLINE}\nsettle_max_s: 1e18", "settle_max_s", "less than or equal to 86400", "1e18"),
        ("{boundary: response_lost, nth: 1}", "{boundary: request_delayed, nth: 1, delay_s: 1e300}",
         "faults.0.delay_s", "less than or equal to 86400", "1e300"),
    ],
)  # fmt: skip
def test_a_number_yaml_reads_as_text_and_out_of_bounds_is_told_its_bound(
    tmp_path: Path, old: str, new: str, field: str, bound: str, text: str
) -> None:
    """The fix for 1e308 was "write 1.0e+308", and that was refused next for its bound (86400): it names the bound."""
    path = write(tmp_path, old, new)
    valid = "integer" if field.endswith("nth") else "number"
    assert error_for(path) == (
        f"field '{field}': Input should be a valid {valid}; fix: give a number {bound}, written so that "
        f"YAML reads a number ({text} is read as text)"
    )


@pytest.mark.parametrize("error_type", ["float_type", "int_type"])
@pytest.mark.parametrize("text", ["1e-400", "-1.5E-999", "0.0001e-330", "1e400", "-9e999"])
def test_a_number_a_float_cannot_hold_gets_no_value_to_write(error_type: str, text: str) -> None:
    """Under- or overflowing a float (1e-400 is 0.0) is no number to suggest: the fix would load another value."""
    assert number_fix(error_type, text) is None


def test_a_zero_written_with_an_exponent_is_still_told_how_to_write_it() -> None:
    """Only a nonzero mantissa the float loses is refused: 0e5 is zero as written."""
    assert number_fix("float_type", "0e5") == "write 0.0 or 0.0e+5 (YAML reads 0e5 as text)"
    assert number_fix("int_type", "0e5") == "write 0 (YAML reads 0e5 as text)"


@pytest.mark.parametrize(
    ("text", "fix"),
    [
        # No digit before the dot: the repaired spelling gets one (a bare ".5e+3" is no YAML float).
        (".5e3", "write 500.0 or 0.5e+3 (YAML reads .5e3 as text)"),
        # Python reads underscores in an exponent, YAML does not: the repaired spelling would be text again.
        ("1e0_1", "write 10.0 (YAML reads 1e0_1 as text)"),
    ],
)
def test_only_spellings_yaml_reads_as_numbers_are_suggested(text: str, fix: str) -> None:
    assert number_fix("float_type", text) == fix


@pytest.mark.parametrize("written", ["1000.0", "1.0e+3"])
def test_the_numbers_the_fix_suggests_are_read_as_numbers(tmp_path: Path, written: str) -> None:
    """Each spelling the fix for 1e3 suggests loads, as 1000 seconds."""
    path = write(tmp_path, DEADLINE, f"recovery_deadline_s: {written}")
    assert load_scenario(path).recovery_deadline_s == 1000.0


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ('revision: "1"', "revision: 1", "field 'revision': Input should be a valid string; fix: quote it as written,"
         ' such as revision: "..." (YAML reads it unquoted as a number)'),
        ('revision: "1"', "revision: 1.5", "field 'revision': Input should be a valid string; fix: quote it as written,"
         ' such as revision: "..." (YAML reads it unquoted as a number)'),
        ('revision: "1"', "revision: 2024-01-02", "field 'revision': Input should be a valid string; fix: quote it as"
         ' written, such as revision: "..." (YAML reads it unquoted as a date)'),
        ('revision: "1"', "revision: yes", "field 'revision': Input should be a valid string; fix: quote it (YAML reads"
         " true, false, yes, no, on and off without quotes as a flag)"),
        ("action_id: a73", "action_id: a73\ndestination: {reject_models: [7]}", "field 'destination.reject_models.0':"
         ' Input should be a valid string; fix: quote it as written, such as "..." (YAML reads it unquoted as a'
         " number)"),
    ],
)  # fmt: skip
def test_a_number_where_text_belongs_is_told_to_quote_it(tmp_path: Path, old: str, new: str, expected: str) -> None:
    """A number, a flag or a date where text belongs: the fix says to quote it as written."""
    assert error_for(write(tmp_path, old, new)) == expected


@pytest.mark.parametrize(
    "written", ["1", "42", "1.10", "010", "0b101", "12:30", "0x1F", "+7", "1_000", ".5", "1.0e+3", "2024-01-02",
                "2024-01-02 10:00:00", "2024-01-02t10:00:00Z"],
)  # fmt: skip
def test_the_quote_fix_never_changes_the_value(tmp_path: Path, written: str) -> None:
    """YAML reads 1.10 as 1.1, 010 as 8, 12:30 as 750, 0x1F as 31, 0b101 as 5: the fix proposes no quoted value other than the
    text written in the file, and quoting that text, as it says, loads exactly that text."""
    message = error_for(write(tmp_path, 'revision: "1"', f"revision: {written}"))
    fix = message.partition("; fix: ")[2]
    assert fix.startswith("quote it"), message
    assert set(re.findall(r'"([^"]*)"', fix)) <= {written, "..."}, message
    assert load_scenario(write(tmp_path, 'revision: "1"', f'revision: "{written}"')).revision == written


TOKEN = 'token: "tok-17-secret-do-not-log"'


@pytest.mark.parametrize("token", ["170042", "1.70042", "0170042", "0x170042", "2170-04-02", "[170042]", "{a: 170042}"])
def test_a_secret_is_never_shown_in_the_message(tmp_path: Path, token: str) -> None:
    """approval.token is a secret: a value that is no text is refused without its digits anywhere in the line."""
    message = error_for(write(tmp_path, TOKEN, f"token: {token}"))
    assert message.startswith("field 'approval.token': "), message
    assert "170042" not in message and "2170" not in message, message


class _Vault(BaseModel):
    pin: Secret[int]
    keys: list[SecretStr | None] = []
    name: str = ""


def test_a_secret_field_is_found_from_its_type() -> None:
    """Whether a path is a secret's comes from the field's type, through unions and lists, and holds inside it."""
    assert is_secret(Scenario, ("approval", "token")) and is_secret(Scenario, ("approval", "token", "x"))
    assert not is_secret(Scenario, ("approval", "approval_id")) and not is_secret(Scenario, ("approval",))
    assert is_secret(_Vault, ("pin",)) and is_secret(_Vault, ("keys", 0)) and not is_secret(_Vault, ("name",))


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("nth: 1}", "nth: -1}", "field 'faults.0.nth': Input should be greater than or equal to 1; fix: give a"
         " number within that bound"),
        ("nth: 1}", "nth: 1, delay_s: 2}", "field 'faults.0.delay_s': Extra inputs are not permitted"),
        # A key spelt like the entry's tag is the file's own: kept.
        ("nth: 1}", "nth: 1, response_lost: 2}", "field 'faults.0.response_lost': Extra inputs are not permitted"),
        ("action_id: a73", "action_id: a73\noperator: [{do: request_cancel, when: {at_s: -1}}]", "field"
         " 'operator.0.when.at_s': Input should be greater than or equal to 0"),
        ("action_id: a73", "action_id: a73\noperator: [{do: change_task, model: m8, digest: 7, when: {at_s: 1}}]",
         "field 'operator.0.digest': Input should be a valid string"),
    ],
)  # fmt: skip
def test_a_path_into_a_tagged_list_is_the_files_own(tmp_path: Path, old: str, new: str, expected: str) -> None:
    """faults[0].nth is shown as faults.0.nth, never with the entry's tag pydantic adds (faults.0.response_lost.nth),
    in the faults and in the operator events alike."""
    assert error_for(write(tmp_path, old, new)).startswith(expected)


@pytest.mark.parametrize(
    ("new", "expected"),
    [
        ("recoverers: 2", "field 'recoverers': Extra inputs are not permitted; fix: move it under 'worker:'"),
        ("dispatch_at_s: 1.0", "field 'dispatch_at_s': Extra inputs are not permitted; fix: move it under 'worker:'"),
        ("ledger_write_s: 0.5", "field 'ledger_write_s': Extra inputs are not permitted; fix: move it under 'worker:'"),
        ("worker: {recovery_deadline_s: 60}", "field 'worker.recovery_deadline_s': Extra inputs are not permitted; fix:"
         " move it to the top level"),
        ("destination: {timeout_s: 3}", "field 'destination.timeout_s': Extra inputs are not permitted; fix: move it"
         " under 'worker:'"),
        # revision is set at the top level already, and under task: too (moved there, it would be given twice).
        ("destination: {revision: 3}", "field 'destination.revision': Extra inputs are not permitted; fix: remove it"
         " or check its spelling"),
        # task: sets its model already: change it there.
        ("model: m8", "field 'model': Extra inputs are not permitted; fix: remove it, or change it under 'task:', which"
         " has it already"),
        # A field of another kind of operator event: which kinds have it.
        ("operator: [{do: request_cancel, model: m8, when: {at_s: 1}}]", "field 'operator.0.model': Extra inputs are"
         " not permitted; fix: remove it (do request_cancel has no 'model'), or use do change_task, which has it"),
        ("operator: [{do: request_cancel, when: {at_s: 1, reason: x}}]", "field 'operator.0.when.reason': Extra inputs"
         " are not permitted; fix: move it into the entry 'operator.0'"),
        ("operator: [{do: change_task, digest: d, when: {at_s: 1, model: m8}}]", "field 'operator.0.when.model': Extra"
         " inputs are not permitted; fix: move it into the entry 'operator.0' (+1 more)"),
        ("operator: [{do: request_cancel, at_s: 1, when: {at_s: 1}}]", "field 'operator.0.at_s': Extra inputs are not"
         " permitted; fix: move it under 'when:' in 'operator.0'"),
        ("zzz: 3", "field 'zzz': Extra inputs are not permitted; fix: remove it or check its spelling"),
    ],
)  # fmt: skip
def test_a_setting_at_the_wrong_level_says_where_it_belongs(tmp_path: Path, new: str, expected: str) -> None:
    """An unknown key that is a field of a section (or of an enclosing level) is told to move there."""
    assert error_for(write(tmp_path, "action_id: a73", f"action_id: a73\n{new}")) == expected


@pytest.mark.parametrize(
    ("new", "expected"),
    [
        ("nth: 1, model: m2}", "field 'faults.0.model': Extra inputs are not permitted; fix: remove it (boundary"
         " response_lost has no 'model'), or use boundary lookup_foreign_receipt, which has it"),
        ("nth: 1, delay_s: 3}", "field 'faults.0.delay_s': Extra inputs are not permitted; fix: remove it (boundary"
         " response_lost has no 'delay_s'), or use boundary request_delayed or apply_delayed or response_delayed or"
         " read_answer_delayed, which have it"),
    ],
)  # fmt: skip
def test_a_field_of_another_kind_of_fault_names_the_kinds_that_have_it(tmp_path: Path, new: str, expected: str) -> None:
    """``model`` in a response_lost fault was told to move under ``task:``, which has its own (a key given twice
    then); it belongs to another boundary, which the fix names."""
    assert error_for(write(tmp_path, "nth: 1}", new)) == expected


@pytest.mark.parametrize(
    ("new", "expected"),
    [
        ("recovery_deadlin_s: 60", "field 'recovery_deadlin_s': Extra inputs are not permitted; fix: rename it"
         " 'recovery_deadline_s' (a field of this entry)"),
        ("destination: {lookup_lag: 3}", "field 'destination.lookup_lag': Extra inputs are not permitted; fix: rename"
         " it 'lookup_lag_s' (a field of this entry)"),
        ("worker: {recoverer: 2}", "field 'worker.recoverer': Extra inputs are not permitted; fix: rename it"
         " 'recoverers' (a field of this entry)"),
        # Nothing of the entry is close: no guess.
        ("worker: {retries: 2}", "field 'worker.retries': Extra inputs are not permitted; fix: remove it or check its"
         " spelling"),
    ],
)  # fmt: skip
def test_a_misspelt_optional_field_is_named(tmp_path: Path, new: str, expected: str) -> None:
    """A key that nearly spells a field of its entry, required or optional, is told its name; it was told only
    to check its spelling unless the field was required and missing."""
    assert error_for(write(tmp_path, "action_id: a73", f"action_id: a73\n{new}")) == expected


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        # Too short for a ratio to tell (a scenario author's review): a unit left off, two letters swapped.
        ("action_id: a73", "action_id: a73\noperator: [{do: request_cancel, when: {at: 3}}]",
         "field 'operator.0.when.at': Extra inputs are not permitted; fix: rename it 'at_s' (a field of this entry)"),
        ("nth: 1}", "nth: 1, nht: 2}",
         "field 'faults.0.nht': Extra inputs are not permitted; fix: rename it 'nth' (a field of this entry)"),
        # The key that names the entry's kind, misspelt: named, not only "has no 'boundary'".
        ("{boundary: response_lost, nth: 1}", "{boundry: response_lost, nth: 1}",
         "field 'faults.0': the entry has no 'boundary' ('boundry' nearly spells it); fix: rename it 'boundary'"),
        ("action_id: a73", "action_id: a73\noperator: [{doo: request_cancel, when: {at_s: 3}}]",
         "field 'operator.0': the entry has no 'do' ('doo' nearly spells it); fix: rename it 'do'"),
    ],
)  # fmt: skip
def test_a_short_or_kind_naming_key_misspelt_is_named(tmp_path: Path, old: str, new: str, expected: str) -> None:
    """``at`` for ``at_s`` and ``nht`` for ``nth`` were told only to check their spelling, and ``boundry`` was
    reported as a missing ``boundary``: each is now told the name it nearly spells."""
    assert error_for(write(tmp_path, old, new)) == expected


def test_a_kind_naming_key_missing_with_nothing_close_lists_the_kinds(tmp_path: Path) -> None:
    """No key near ``boundary``: the fix still lists every boundary."""
    message = error_for(write(tmp_path, "{boundary: response_lost, nth: 1}", "{nth: 1}"))
    assert message.startswith("field 'faults.0': the entry has no 'boundary'; fix: add 'boundary:' with one of ")


@pytest.mark.parametrize(
    ("old", "new", "meant"),
    [
        ("{boundary: response_lost, nth: 1}", "{boundary: respnse_lost, nth: 1}", "response_lost"),
        ("{boundary: response_lost, nth: 1}", "{boundary: Response_Lost, nth: 1}", "response_lost"),
        ("action_id: a73", "action_id: a73\noperator: [{do: request_cancl, when: {at_s: 3}}]", "request_cancel"),
    ],
)  # fmt: skip
def test_a_kind_misspelt_is_told_the_one_it_nearly_spells(tmp_path: Path, old: str, new: str, meant: str) -> None:
    """A boundary or operator event mistyped was told only the list of fifteen: the one it nearly spells comes
    first, the list after it."""
    message = error_for(write(tmp_path, old, new))
    assert (
        f"is not a known '{'do' if 'do:' in new else 'boundary'}'; fix: did you mean {meant}? Else use one of "
        in message
    )
    assert message.count(meant) >= 2  # named, and listed


def test_a_kind_far_from_every_name_is_told_the_list_only(tmp_path: Path) -> None:
    message = error_for(write(tmp_path, "{boundary: response_lost, nth: 1}", "{boundary: zzz, nth: 1}"))
    assert "'zzz' is not a known 'boundary'; fix: use one of request_lost, " in message


@pytest.mark.parametrize(
    "new",
    [
        # The entry has its do: already (it is how pydantic knew the entry's kind).
        "operator: [{do: request_cancel, when: {at_s: 1, after: {actor: worker, event: x, do: y}}}]",
        # The entry has its model: (a required field pydantic did not find missing).
        "operator: [{do: change_task, model: m, digest: d, when: {at_s: 1, model: m8}}]",
        # The path goes through the entry's when:.
        "operator: [{do: request_cancel, when: {at_s: 1, after: {actor: worker, event: x, when: y}}}]",
    ],
)
def test_a_key_the_entry_has_already_is_not_told_to_move_there(tmp_path: Path, new: str) -> None:
    """Moving a key into an entry that sets it already would only make it a key given twice: the fix stays."""
    message = error_for(write(tmp_path, "action_id: a73", f"action_id: a73\n{new}"))
    assert message.endswith("Extra inputs are not permitted; fix: remove it or check its spelling"), message


def test_every_section_field_at_the_top_level_is_told_its_section(tmp_path: Path) -> None:
    """Derived from the models, not listed: each field of each section, put at the top level, names its section."""
    sections = {
        name: model for name, info in Scenario.model_fields.items() if (model := _model(info.annotation)) is not None
    }
    assert {"task", "approval", "destination", "connector", "bridge", "transport", "worker"} <= set(sections)
    for section, model in sections.items():
        for field in set(model.model_fields) - set(Scenario.model_fields):
            message = error_for(write(tmp_path, "action_id: a73", f"action_id: a73\n{field}: 1"))
            # A field the section must give (task's model) is there already: changed there, not moved there.
            verb = "change" if model.model_fields[field].is_required() else "move"
            assert message.startswith(f"field '{field}': Extra inputs are not permitted; fix: "), message
            assert f"{verb} it under '{section}:'" in message, message


def test_the_command_line_says_where_a_setting_belongs_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``harness run`` with a worker setting at the top level exits 2 with one line naming the section."""
    path = write(tmp_path, "action_id: a73", "action_id: a73\nrecoverers: 2")
    out = tmp_path / "out"
    status = main(["run", "--policy", "retry_same_key", "--scenario", str(path), "--out", str(out), "--quiet"])
    err = capsys.readouterr().err
    assert status == 2 and not out.exists()
    assert err.count("\n") == 1 and "field 'recoverers'" in err and "fix: move it under 'worker:'" in err, err


def test_a_case_is_selected_by_the_name_the_harness_prints() -> None:
    """Tables, summary.csv and case folders name a case <scenario>-<variant>: that name selects the same case as
    <scenario>@<variant>."""
    cases = scenario_cases("connector_crash_points")
    assert len(cases) == len(CONNECTOR_PHASES)
    for spec, scenario in cases:
        assert scenario.name == spec.replace("@", "-")
        assert scenario_cases(scenario.name) == scenario_cases(spec) == ((spec, scenario),)


def test_a_printed_name_of_no_case_lists_the_scenarios_cases() -> None:
    """A variant misspelt in the printed form is told the scenario's cases, not all sixty scenarios; a name like
    no scenario's case still lists the scenarios."""
    with pytest.raises(ScenarioError) as info:
        scenario_cases("connector_crash_points-after_nothing")
    names = ", ".join(f"connector_crash_points@{phase}" for phase in CONNECTOR_PHASES)
    assert str(info.value) == f"unknown scenario 'connector_crash_points-after_nothing'; fix: use one of {names}"
    with pytest.raises(ScenarioError) as info:
        scenario_cases("lost_response-x")
    assert str(info.value) == (
        "unknown scenario 'lost_response-x'; fix: did you mean lost_response? Else use one of the "
        f"{len(list_scenarios())} scenarios 'python -m harness list' names, or a path to a YAML file"
    )


def test_resolving_a_printed_case_name_gives_its_spelling() -> None:
    """A scenario path is a whole scenario's (a grid file's scenario, say): a case's printed name is refused with
    the spelling that selects it."""
    with pytest.raises(ScenarioError) as info:
        resolve_scenario("connector_crash_points-after_effect")
    assert str(info.value) == (
        "'connector_crash_points-after_effect' names a case, not a scenario; fix: write "
        "connector_crash_points@after_effect"
    )


LOST = "{boundary: response_lost, nth: 1}"


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        # An operator trigger on an actor not in the path loaded, and its event then "fired in no case", with a
        # fix no policy could follow (a fault at such an actor's boundary was refused already).
        (
            "faults:",
            "operator:\n  - {do: request_cancel, when: {after: {actor: connector, event: started}}}\nfaults:",
            "field 'operator.0.when.after.actor': no connector is in the path, so its 'started' never comes; "
            "fix: add 'connector: {}', or trigger on a record of another actor",
        ),
        # Checks across fields named '(top level)' and put their own advice before a generic one.
        (
            LOST,
            "{boundary: bridge_restart}",
            "field 'faults.0.boundary': 'bridge_restart' needs a bridge in the path; fix: add 'bridge: {}'",
        ),
        (
            LOST,
            "{boundary: response_lost, action_id: a99}",
            "field 'faults.0.action_id': 'a99' is not an action of this scenario (a73); fix: use one of a73, or "
            "leave it out (the scenario's)",
        ),
        (
            "faults:",
            "operator:\n  - {do: change_task, model: m9, digest: d9, action_id: a2, when: {at_s: 5}}\nfaults:",
            "field 'operator.0': action 'a2' would need an approval to be dispatched; fix: set approved: true",
        ),
        (
            "faults:",
            "operator:\n  - {do: request_cancel, when: {at_s: 5, after: {actor: worker, event: start}}}\nfaults:",
            "field 'operator.0.when': both or neither of 'at_s' and 'after' given; fix: give exactly one of them",
        ),
        # A number out of its range said only "correct the value"; a field that may be null says so.
        (
            "faults:",
            "destination: {request_validity_s: 0}\nfaults:",
            "field 'destination.request_validity_s': Input should be greater than 0; fix: give a number within "
            "that bound, or null for none",
        ),
        (
            DEADLINE,
            "recovery_deadline_s: 100000",
            "field 'recovery_deadline_s': Input should be less than or equal to 86400; fix: give a number within "
            "that bound",
        ),
        # What the end of a case records comes after any operator event could act: a trigger on it never fires.
        (
            "faults:",
            "operator:\n  - {do: request_cancel, when: {after: {actor: transport, event: still_in_flight}}}\nfaults:",
            "field 'operator.0.when.after': the transport's 'still_in_flight' is recorded as the case ends, after "
            "any operator event could act; fix: trigger on a record made while the case runs",
        ),
        (
            "faults:",
            "operator:\n  - {do: request_cancel, when: {after: {actor: worker, event: nope}}}\nfaults:",
            "field 'operator.0.when.after': the worker records no event 'nope'; fix: use one of command, ",
        ),
    ],
)
def test_a_check_across_fields_names_its_field_and_its_own_fix(
    tmp_path: Path, old: str, new: str, expected: str
) -> None:
    said = error_for(write(tmp_path, old, new))
    assert said.startswith(expected), said
    assert said.count("fix:") == 1


def test_a_file_without_reproduces_is_told_every_key_replay_compares(tmp_path: Path) -> None:
    """The fix named four of reproduces' keys; written as told, the replay then differed, for 'properties' was
    left at none. It names them all, and what to give when there are none."""
    from harness.run.replay import replay

    path = tmp_path / "lost_response.yaml"
    path.write_text(BASE, encoding="utf-8")
    with pytest.raises(ScenarioError) as info:
        replay(path)
    said = str(info.value)
    assert "properties: [...]}' (the properties it violates; [] for none)" in said
    (run,) = [line for line in said.split("; ") if line.startswith("fix:")]
    assert "policy: ..., policy_revision: ..., seed: ..., outcome: ..., properties:" in run


def test_the_printed_name_of_a_files_case_says_how_to_name_it() -> None:
    """`--scenario serving_rollover-after_effect` (the name a run prints for a case of the user's own file) was an
    unknown scenario with the shipped list; the fix now writes the name that runs it."""
    with pytest.raises(ScenarioError) as info:
        resolve_scenario("serving_rollover-after_effect")
    assert str(info.value) == (
        "unknown scenario 'serving_rollover-after_effect'; fix: name a case of your own file by its path, as "
        "serving_rollover.yaml@after_effect (the SCENARIO-phase names are the shipped scenarios')"
    )
    # Printed from a file named with its extension (the name of a case of `--scenario mine.yaml`), the fix named
    # mine.yaml.yaml, a file that is not there.
    with pytest.raises(ScenarioError) as info:
        resolve_scenario("serving_rollover.yaml-after_effect")
    assert "fix: name a case of your own file by its path, as serving_rollover.yaml@after_effect (" in str(info.value)


def test_a_file_here_named_without_yaml_is_pointed_to_as_a_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--scenario mine.json`, a file in the current folder, is read as a shipped scenario's name (a spec without a
    folder or .yaml is one): it said "unknown scenario" and listed every shipped name. The fix now says how to give
    the file; a name with no such file still gets the list."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine.json").write_text(BASE, encoding="utf-8")
    with pytest.raises(ScenarioError) as info:
        resolve_scenario("mine.json")
    assert str(info.value) == (
        "unknown scenario 'mine.json'; fix: a file of that name is here: to run it, give it as a path, ./mine.json "
        "(a name without a folder or .yaml is a shipped scenario's)"
    )
    with pytest.raises(ScenarioError, match=r"fix: use one of the \d+ scenarios 'python -m harness list' names"):
        resolve_scenario("theirs.json")


@pytest.mark.parametrize("spec", ["", " "])
@pytest.mark.parametrize("command", ["run", "check", "explore"])
def test_an_empty_scenario_name_is_refused_as_one(
    spec: str, command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--scenario ''` (an unset variable in a CI script) was read as the current folder: "is a folder, not a
    scenario; fix: give one of its files, as /<name>.yaml", a path at the root of the disk."""
    tracking = [] if command == "check" else ["--tracking", "none"]
    args = [command, "--policy", "retry_new_key", "--scenario", spec, *tracking, "--out", str(tmp_path / "o")]
    assert main(args) == 2
    assert capsys.readouterr().err == (
        f"harness: scenario '{spec}': an empty name; fix: give a shipped scenario's name (python -m harness list) "
        "or a path to a YAML file\n"
    )
    assert not (tmp_path / "o").exists()


def test_a_refused_scenario_carries_no_pydantic_error_with_it(tmp_path: Path) -> None:
    """The one line is the whole error: the chained ValidationError printed every wrong value under it in a
    traceback (assert_recovers in a user's test), the approval's token among them."""
    path = write(tmp_path, "approval_id: apr-17, ", "")  # pydantic shows the whole approval as the input
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert info.value.__cause__ is None and info.value.__suppress_context__
    import traceback

    printed = "".join(traceback.format_exception(info.value))
    assert "tok-17-secret" not in printed and "ValidationError" not in printed
