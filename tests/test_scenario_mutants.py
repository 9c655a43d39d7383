"""Scenario and policy loading where a mutation pass found behaviour no test noticed (tests/MUTANTS.md, the
twenty-third pass): the bound a number breaks and whether null would do, a wrong value beside a missing field,
a section given as a plain value, the variants of a scenario and the fixes that name them, a scenario in a folder
whose name holds '@', a user's package or module named ``policies``, and a policy file named by a Windows path;
and (the twenty-fifth pass) names with '-' that look like another scenario's cases, files named by a path without
a folder or with '.yml', the folder a name is looked up in, aliases counted against the caps, the parser used
without libyaml, and the words of the YAML reader's refusals."""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

import pytest
from conftest import SCENARIO_DIR
from test_scenario_errors import BASE, error_for, write
from test_scenario_limits import unfolded

from harness.policy import SHIPPED_POLICIES, PolicyError, load_policy
from harness.scenario import ScenarioError, load_scenario, resolve_scenario, scenario_cases, yamlfile
from harness.scenario.faults import CONNECTOR_PHASES, ConnectorCrash
from harness.scenario.yamlfile import VALUE_COUNT_MAX

CRASH_POINTS = (SCENARIO_DIR / "connector_crash_points.yaml").read_text()


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        # A field that may not be null: null is no way out of its bound, and the fix must not offer it.
        ("recovery_deadline_s: 120", "recovery_deadline_s: 0", "field 'recovery_deadline_s': Input should be greater"
         " than 0; fix: give a number within that bound"),
        ("nth: 1}", "nth: 0}", "field 'faults.0.nth': Input should be greater than or equal to 1; fix: give a number"
         " within that bound"),
        # A field that may be null (count: null, every later occurrence too; no request validity): the fix says so.
        ("nth: 1}", "nth: 1, count: 0}", "field 'faults.0.count': Input should be greater than or equal to 1; fix:"
         " give a number within that bound, or null for none"),
        ("action_id: a73", "action_id: a73\ndestination: {request_validity_s: -1}", "field"
         " 'destination.request_validity_s': Input should be greater than 0; fix: give a number within that bound,"
         " or null for none"),
    ],
)  # fmt: skip
def test_a_number_out_of_its_bound_is_offered_null_only_where_the_field_takes_it(
    tmp_path: Path, old: str, new: str, expected: str
) -> None:
    """A fix offering null where the field refuses it would only lead to a second refusal."""
    assert error_for(write(tmp_path, old, new)) == expected


def test_a_wrong_value_beside_a_missing_field_is_named_alone_with_its_own_fix(tmp_path: Path) -> None:
    """Fields missing from one entry are named together ("add them"); a field of the same entry that is there but
    wrong is another mistake, with another fix, and the missing field is the "+1 more"."""
    path = write(
        tmp_path,
        "task: {task_id: release-42, revision: 17, target: staging/fraud,",
        'task: {task_id: release-42, revision: "17",',
    )
    assert error_for(path) == (
        "field 'task.revision': Input should be a valid integer; fix: write a whole number, without quotes (+1 more)"
    )


def test_a_section_given_as_a_plain_value_is_told_to_write_a_mapping(tmp_path: Path) -> None:
    """A section or an entry written as a plain value: pydantic's "a valid dictionary or instance of WorkerSpec"
    (or "object to extract fields from") and "correct the value" are said in YAML's words, with a fix that writes a
    mapping; a list entry that names a fault or an operator event is shown as the mapping it meant. An error
    pydantic has no plainer words or fix for still names the field and a fix."""
    said = error_for(write(tmp_path, "action_id: a73", "action_id: a73\nworker: fast"))
    assert (
        said
        == "field 'worker': expected a mapping of 'key: value' pairs; fix: write a mapping, one 'key: value' per line"
    )
    said = error_for(write(tmp_path, "action_id: a73", "action_id: a73\nworker: null"))
    assert said.endswith("; fix: write a mapping, one 'key: value' per line"), said
    said = error_for(write(tmp_path, "action_id: a73", "action_id: a73\noperator: [request_cancel]"))
    assert said.endswith("per line, as in - do: request_cancel"), said
    said = error_for(write(tmp_path, "action_id: a73", "action_id: {a: 1}"))
    assert said == "field 'action_id': Input should be a valid string; fix: correct the value"


@pytest.mark.parametrize(
    ("field", "written", "fix"),
    [
        ("recovery_deadline_s", "2024-01-01", "write a number (YAML reads 2024-01-01 as a date)"),
        ("recovery_deadline_s", "null", "write a number (null, or nothing after the colon, is no value here)"),
        ("recovery_deadline_s", "", "write a number (null, or nothing after the colon, is no value here)"),
        ("recovery_deadline_s", "[1]", "write a number (not a list)"),
        ("recovery_deadline_s", "{a: 1}", "write a number (not a mapping)"),
        ("recovery_deadline_s", "'12'", None),  # text: the quotes are the trouble, as before
        ("task.revision", "1.5", "write a whole number (1.5 is not a whole number)"),
        ("task.revision", "true", "write a whole number (YAML reads true as a flag)"),
    ],
)
def test_a_value_that_is_not_text_is_not_told_to_drop_quotes_it_has_not(
    tmp_path: Path, field: str, written: str, fix: str | None
) -> None:
    """ "write a number, without quotes" was said for a date, a null, a flag, a fraction: values with no quotes.
    The fix now says what YAML read instead; for quoted text it is unchanged."""
    old, new = {
        "recovery_deadline_s": ("recovery_deadline_s: 120", f"recovery_deadline_s: {written}"),
        "task.revision": ("revision: 17", f"revision: {written}"),
    }[field]
    said = error_for(write(tmp_path, old, new))
    assert said.startswith(f"field '{field}': "), said
    assert said.endswith(f"; fix: {fix}" if fix else ", without quotes"), said


def test_a_key_unlike_every_field_of_its_entry_is_not_told_to_rename_it(tmp_path: Path) -> None:
    """A rename is suggested only for a near spelling: a delay is not a timeout, though the words share most
    letters (``lookup_delay_s`` and the worker's ``lookup_timeout_s``)."""
    far = error_for(write(tmp_path, "action_id: a73", "action_id: a73\nworker: {lookup_delay_s: 1}"))
    assert far == "field 'worker.lookup_delay_s': Extra inputs are not permitted; fix: remove it or check its spelling"
    near = error_for(write(tmp_path, "action_id: a73", "action_id: a73\nworker: {lookup_timout_s: 1}"))
    assert near.endswith("; fix: rename it 'lookup_timeout_s' (a field of this entry)"), near


def test_a_variant_a_scenario_does_not_have_is_refused_with_the_variants_it_has() -> None:
    with pytest.raises(ScenarioError) as info:
        scenario_cases("lost_response@after_effect")
    assert str(info.value) == "scenario 'lost_response' has no variants; fix: drop '@after_effect'"
    with pytest.raises(ScenarioError) as info:
        scenario_cases("connector_crash_points@after_nothing")
    assert str(info.value) == (
        "scenario 'connector_crash_points' has no variant 'after_nothing'; fix: use one of "
        + ", ".join(CONNECTOR_PHASES)
    )


def test_a_variant_of_a_file_in_a_folder_whose_name_holds_an_at_sign_is_found(tmp_path: Path) -> None:
    """The variant is what follows the last '@': a folder named like user@host (a home folder) is the path's."""
    folder = tmp_path / "user@host"
    folder.mkdir()
    path = folder / "connector_crash_points.yaml"
    path.write_text(CRASH_POINTS, encoding="utf-8")
    ((spec, scenario),) = scenario_cases(f"{path}@after_effect")
    assert spec == f"{path}@after_effect" and scenario.name == "connector_crash_points-after_effect"
    with pytest.raises(ScenarioError) as info:
        scenario_cases(f"{path}@after_nothing")
    assert str(info.value).endswith("has no variant 'after_nothing'; fix: use one of " + ", ".join(CONNECTOR_PHASES))
    # Without a variant, such a file is the file (it was split at the folder's '@', and the folder "user" was
    # not found).
    plain = folder / "lost_response.yaml"
    plain.write_text(BASE, encoding="utf-8")
    ((spec, scenario),) = scenario_cases(str(plain))
    assert (spec, scenario.name) == (str(plain), "lost_response")
    assert len(scenario_cases(str(path))) == len(CONNECTOR_PHASES)


def test_a_variant_changes_only_the_crash_that_says_every(tmp_path: Path) -> None:
    """A connector crash at a phase of its own, and a fault of another kind, are the same in every variant."""
    text = CRASH_POINTS.replace(
        "  - {boundary: connector_crash, phase: every}\n",
        "  - {boundary: connector_crash, phase: every}\n"
        "  - {boundary: connector_crash, phase: after_effect, nth: 2}\n"
        "  - {boundary: response_lost, nth: 3}\n",
    )
    path = tmp_path / "connector_crash_points.yaml"
    path.write_text(text, encoding="utf-8")
    scenario = load_scenario(path)
    variants = scenario.variants()
    assert [v.name for v in variants] == [f"connector_crash_points-{phase}" for phase in CONNECTOR_PHASES]
    for phase, variant in zip(CONNECTOR_PHASES, variants, strict=True):
        every, own, lost = variant.faults
        assert isinstance(every, ConnectorCrash) and every.phase == phase
        assert own == scenario.faults[1] and lost == scenario.faults[2]
        assert lost.model_dump() == scenario.faults[2].model_dump() and not hasattr(lost, "phase")


@pytest.mark.parametrize("shape", ["package", "module"])
def test_a_users_policies_package_or_module_is_named_with_where_it_came_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shape: str
) -> None:
    """A user's ``policies/`` folder or ``policies.py`` first on the path hides the shipped policies: loading one by
    name is refused in one line naming what was imported instead, not with an IndexError or a TypeError."""
    if shape == "package":
        (tmp_path / "policies").mkdir()
        (tmp_path / "policies" / "__init__.py").write_text("")
        where = (tmp_path / "policies").resolve()
    else:
        (tmp_path / "policies.py").write_text("")
        where = tmp_path / "policies.py"
    importlib.import_module("policies")  # the shipped package, put back when the test ends
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "policies")
    with pytest.raises(PolicyError) as info:
        load_policy("reconcile_and_reauthorize")
    assert str(info.value) == (
        f"the package 'policies' is imported from {where}, not the harness's own ({SHIPPED_POLICIES}): a folder of "
        "yours named policies/ hides the shipped policies; fix: rename it (my_policies/, say), or run from another "
        "folder"
    )


def test_a_policy_file_given_by_a_windows_path_is_named_as_a_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Backslashes separate folders as slashes do: a file that is there is named from its folder, one that is not
    by the path's parts, and the parts '', '.' and '..' are no module's."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sc").mkdir()
    (tmp_path / "sc" / "my_pol.py").write_text("POLICY = None\n")
    cases = {
        "sc\\my_pol.py": f"name the module as in my_pol:P, and run from {tmp_path.resolve() / 'sc'} (or put it on "
        "PYTHONPATH)",
        "no\\such\\pol.py": "name the module with dots and without '.py', as in no.such.pol:P (run from the folder "
        "its package is in)",
        "/no//such/./pol.py": "name the module with dots and without '.py', as in no.such.pol:P (run from the folder "
        "its package is in)",
        "../no/pol.py": "name the module with dots and without '.py', as in no.pol:P (run from the folder its "
        "package is in)",
    }
    for module, fix in cases.items():
        with pytest.raises(PolicyError) as info:
            load_policy(f"{module}:P")
        assert str(info.value).endswith(f"is a file's path, not a module's name; fix: {fix}"), info.value


def test_a_name_other_than_the_files_is_refused_naming_both(tmp_path: Path) -> None:
    """The scenario's name is its file's (grid cells, case folders and reproduce lines name it): both are named."""
    path = tmp_path / "renamed.yaml"
    path.write_text(BASE, encoding="utf-8")
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert str(info.value) == (
        f"{path}: field 'name': 'lost_response' differs from the file name 'renamed'; fix: make them the same"
    )


def test_a_path_that_names_no_file_is_refused_naming_the_path(tmp_path: Path) -> None:
    """A NUL character in the path and a folder are refused in one line that starts with the path as given (the
    NUL escaped, so the line stays printable), then what is wrong and the fix."""
    nul = f"{tmp_path}/a\0b.yaml"
    for spec, shown_as, said in (
        (nul, nul.replace("\0", "\\x00"), "the path holds a NUL character; fix: check the path"),
        (str(tmp_path), str(tmp_path), "is a folder, not a file; fix: give a scenario file"),
    ):
        with pytest.raises(ScenarioError) as info:
            load_scenario(spec)
        assert str(info.value) == f"{shown_as}: {said}"


def test_a_scenario_named_like_a_case_of_another_is_read_as_itself(tmp_path: Path) -> None:
    """Names may hold '-', so a scenario added beside one with variants may be named like a case of it
    (``crash-mine`` beside ``crash``): it is read as itself, not refused as a case ``crash`` does not have; the
    printed name of a real case of ``crash`` still selects that case. Every name is looked up in the folder given,
    not in the shipped one."""
    (tmp_path / "crash.yaml").write_text(
        CRASH_POINTS.replace("name: connector_crash_points", "name: crash"), encoding="utf-8"
    )
    (tmp_path / "crash-mine.yaml").write_text(BASE.replace("name: lost_response", "name: crash-mine"), encoding="utf-8")
    ((spec, scenario),) = scenario_cases("crash-mine", tmp_path)
    assert (spec, scenario.name, len(scenario.faults)) == ("crash-mine", "crash-mine", 1)
    assert resolve_scenario("crash-mine", tmp_path) == tmp_path / "crash-mine.yaml"
    ((spec, scenario),) = scenario_cases("crash-after_effect", tmp_path)
    assert (spec, scenario.name) == ("crash@after_effect", "crash-after_effect")
    assert [spec for spec, _ in scenario_cases("crash", tmp_path)] == [f"crash@{phase}" for phase in CONNECTOR_PHASES]


def test_a_file_named_like_a_case_of_a_shipped_scenario_is_read_as_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A copy of a shipped scenario saved as ``connector_crash_points-mine.yaml`` and given by that path is the file,
    not refused as a case ``connector_crash_points`` does not have (only a name without '.yaml', '.yml' or '/' may
    be a printed case)."""
    monkeypatch.chdir(tmp_path)
    name = "connector_crash_points-mine"
    Path(f"{name}.yaml").write_text(BASE.replace("name: lost_response", f"name: {name}"), encoding="utf-8")
    ((spec, scenario),) = scenario_cases(f"{name}.yaml")
    assert (spec, scenario.name) == (f"{name}.yaml", name)
    # So is a file in the folder run from whose name ends in '.yml' (not a shipped name with '.yaml' added).
    Path("mine.yml").write_text(BASE.replace("name: lost_response", "name: mine"), encoding="utf-8")
    ((spec, scenario),) = scenario_cases("mine.yml")
    assert (spec, scenario.name) == ("mine.yml", "mine")
    # And a file without either ending, named by a path with a folder in it.
    Path("d").mkdir()
    Path("d/mine").write_text(BASE.replace("name: lost_response", "name: mine"), encoding="utf-8")
    ((spec, scenario),) = scenario_cases("d/mine")
    assert (spec, scenario.name) == ("d/mine", "mine")


def test_a_case_of_a_scenario_whose_name_holds_a_dash_is_found_past_a_broken_one(tmp_path: Path) -> None:
    """``crash-x-after_effect`` could be a case of ``crash`` or of ``crash-x``: it is the second's, spelt
    ``crash-x@after_effect`` (the variant is what follows the last '-'); a misspelt one is told the cases of both;
    and a file ``crash.yaml`` that cannot be read does not hide the cases of ``crash-x``."""
    for name in ("crash", "crash-x"):
        text = CRASH_POINTS.replace("name: connector_crash_points", f"name: {name}")
        (tmp_path / f"{name}.yaml").write_text(text, encoding="utf-8")
    ((spec, scenario),) = scenario_cases("crash-x-after_effect", tmp_path)
    assert (spec, scenario.name) == ("crash-x@after_effect", "crash-x-after_effect")
    with pytest.raises(ScenarioError) as info:
        scenario_cases("crash-x-after_nothing", tmp_path)
    names = ", ".join(f"{name}@{phase}" for name in ("crash", "crash-x") for phase in CONNECTOR_PHASES)
    assert str(info.value) == f"unknown scenario 'crash-x-after_nothing'; fix: use one of {names}"
    (tmp_path / "crash.yaml").write_text("name: [\n", encoding="utf-8")
    ((spec, _),) = scenario_cases("crash-x-after_effect", tmp_path)
    assert spec == "crash-x@after_effect"


def test_a_name_is_resolved_in_the_folder_given_and_refused_with_that_folders_names(tmp_path: Path) -> None:
    """``resolve_scenario(name, folder)`` looks in that folder only: the printed name of one of its cases is told
    its spelling, and an unknown name is told every scenario the folder holds (or that it holds none)."""
    (tmp_path / "crash.yaml").write_text(
        CRASH_POINTS.replace("name: connector_crash_points", "name: crash"), encoding="utf-8"
    )
    (tmp_path / "quiet.yaml").write_text(BASE.replace("name: lost_response", "name: quiet"), encoding="utf-8")
    with pytest.raises(ScenarioError) as info:
        resolve_scenario("crash-after_effect", tmp_path)
    assert str(info.value) == "'crash-after_effect' names a case, not a scenario; fix: write crash@after_effect"
    with pytest.raises(ScenarioError) as info:
        resolve_scenario("lost_response", tmp_path)
    assert str(info.value) == "unknown scenario 'lost_response'; fix: use one of crash, quiet, or a path to a YAML file"
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ScenarioError) as info:
        resolve_scenario("lost_response", empty)
    assert str(info.value) == "unknown scenario 'lost_response'; fix: use one of (none), or a path to a YAML file"


def test_aliases_count_as_every_value_they_repeat(tmp_path: Path) -> None:
    """A hundred values under an anchor, repeated by 101 aliases, are over 10,000 values though the file holds a
    few hundred: refused for their count (the aliases' few characters of text are far under the cap on text)."""
    path = tmp_path / "lost_response.yaml"
    aliases = ", ".join(["*hundred"] * 101)
    path.write_text(BASE + f"owner: [[&hundred [{', '.join(['1'] * 100)}]], {aliases}]\n", encoding="utf-8")
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert str(info.value) == (
        f"{path}: more than 10,000 values (aliases counted as what they repeat) by line 14; fix: shorten the file"
    )


def test_a_pipe_and_an_alias_inside_its_own_value_are_refused_with_their_fix(tmp_path: Path) -> None:
    """The whole line a user reads, fix included; an anchor's name is quoted cut to 40 characters."""
    pipe = tmp_path / "pipe.yaml"
    os.mkfifo(pipe)
    with pytest.raises(ScenarioError) as info:
        load_scenario(pipe)
    assert str(info.value) == f"{pipe}: not a regular file (a pipe, socket or device); fix: give a scenario file"
    anchor = "a" * 50
    path = tmp_path / "lost_response.yaml"
    path.write_text(BASE + f"owner: &{anchor} [1, *{anchor}]\n", encoding="utf-8")
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert str(info.value) == (
        f"{path}: alias '*{'a' * 37}...' at line 14 repeats a value that contains it; fix: write the value out "
        "instead of the alias"
    )


def test_without_libyaml_a_file_is_read_and_refused_as_with_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """PyYAML built without libyaml (``_FAST`` is None) reads every file with its own parser: a shipped scenario
    loads, and a malformed one is refused in the same one line."""
    malformed = tmp_path / "lost_response.yaml"
    malformed.write_text(BASE + "owner: [1\n", encoding="utf-8")
    with pytest.raises(ScenarioError) as info:
        load_scenario(malformed)
    monkeypatch.setattr(yamlfile, "_FAST", None)
    assert load_scenario(SCENARIO_DIR / "lost_response.yaml") == load_scenario(SCENARIO_DIR / "lost_response.yaml")
    assert load_scenario(SCENARIO_DIR / "lost_response.yaml").name == "lost_response"
    with pytest.raises(ScenarioError) as again:
        load_scenario(malformed)
    assert str(again.value) == str(info.value)


@pytest.mark.parametrize("over", [0, 1])
def test_the_value_cap_counts_an_alias_as_exactly_the_values_it_repeats(tmp_path: Path, over: int) -> None:
    """With 90 aliases of a list of a hundred values, exactly 10,000 values in all are read (and refused only for
    their field), one more refused for its count: each alias counts the list itself and its hundred values, no
    more and no fewer."""

    def text(padding: int) -> str:
        aliases = ", ".join(["*hundred"] * 90)
        return BASE + f"owner: [[&hundred [{', '.join(['1'] * 100)}]], {aliases}{', 2' * padding}]\n"

    padding = VALUE_COUNT_MAX - unfolded(text(0))[0] + over
    assert unfolded(text(padding))[0] == VALUE_COUNT_MAX + over
    path = tmp_path / "lost_response.yaml"
    path.write_text(text(padding), encoding="utf-8")
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    if over:
        assert "more than 10,000 values" in str(info.value), info.value
    else:
        assert "field 'owner'" in str(info.value) and "more than" not in str(info.value), info.value


def test_an_alias_deep_in_the_file_is_as_deep_as_what_it_repeats(tmp_path: Path) -> None:
    """An anchored list 32 levels down repeated beside itself is 33 levels deep, well within the cap of 50: the
    file is read (and refused only for its field), not refused as nested too deep."""
    path = tmp_path / "lost_response.yaml"
    path.write_text(BASE + f"owner: {'[' * 30}&deep [1], *deep{']' * 30}\n", encoding="utf-8")
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert "field 'owner'" in str(info.value) and "nested" not in str(info.value), info.value


def test_a_value_yaml_cannot_build_is_named_by_its_key_only_where_it_has_one(tmp_path: Path) -> None:
    """A bad date in a list has no key of its own: the line names none (not "field 'None'"); a key is quoted cut
    to 60 characters."""
    path = tmp_path / "lost_response.yaml"
    path.write_text(BASE + "owner: [2024-13-45]\n", encoding="utf-8")
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert str(info.value).startswith(f"{path}: at line 14: '2024-13-45' is a value YAML cannot build ("), info.value
    path.write_text(BASE + f"{'k' * 70}: 2024-13-45\n", encoding="utf-8")
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert str(info.value).startswith(f"{path}: field '{'k' * 57}...' at line 14: '2024-13-45' is a value"), info.value
