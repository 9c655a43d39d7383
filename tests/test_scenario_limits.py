"""A scenario file is read within documented bounds, and every way it can be malformed is one line naming the
file, what is wrong and the fix: never a traceback, never a value silently dropped."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest
import yaml
from conftest import SCENARIO_DIR

from harness.cli import main
from harness.limits import TEXT_MAX
from harness.scenario import (
    FILE_SIZE_MAX_BYTES,
    NESTING_DEPTH_MAX,
    VALUE_COUNT_MAX,
    ScenarioError,
    load_scenario,
)

BASE = (SCENARIO_DIR / "lost_response.yaml").read_text()
README = (Path(__file__).resolve().parent.parent / "README.md").read_text()


def write(tmp_path: Path, text: str | bytes, name: str = "lost_response") -> Path:
    path = tmp_path / f"{name}.yaml"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def error_for(path: Path) -> str:
    """The one-line message loading ``path`` fails with (it names the file and the fix)."""
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    message = str(info.value)
    assert message.splitlines() == [message] and message.isprintable(), message
    assert message.startswith(f"{path}: ") and "fix:" in message, message
    return message


def nested_list(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize(
    "value",
    [
        nested_list(900),
        "{a: " * 900 + "1" + "}" * 900,
        "[{a: " * 450 + "1" + "}]" * 450,
        nested_list(100_000),
    ],
    ids=["lists", "mappings", "mixed", "lists-100k"],
)
def test_deep_nesting_is_one_line_not_a_recursion_error(tmp_path: Path, value: str) -> None:
    """Nesting far past Python's stack gives the depth error, not a RecursionError traceback."""
    message = error_for(write(tmp_path, BASE + f"owner: {value}\n"))
    assert f"nested deeper than {NESTING_DEPTH_MAX} lists or mappings at line 14" in message


def test_deep_block_mappings_are_refused(tmp_path: Path) -> None:
    """Indented (block) mappings count like flow ones."""
    text = BASE + "".join("  " * i + "k:\n" for i in range(300))
    assert "nested deeper than" in error_for(write(tmp_path, text))


@pytest.mark.parametrize("depth", [NESTING_DEPTH_MAX, NESTING_DEPTH_MAX + 1])
def test_the_depth_cap_is_exactly_the_documented_one(tmp_path: Path, depth: int) -> None:
    """At the cap the file is read (and refused only for its field); one level more is refused for its depth."""
    message = error_for(write(tmp_path, BASE + f"owner: {nested_list(depth - 1)}\n"))
    if depth <= NESTING_DEPTH_MAX:
        assert "field 'owner'" in message and "nested" not in message
    else:
        assert "nested deeper than" in message
        assert message.endswith("; fix: flatten it (a scenario needs at most 5 levels)"), message


def unfolded(text: str) -> tuple[int, int]:
    """The values a YAML text holds and the characters of its scalars, every alias counted as what it repeats:
    the composed tree walked, a node counted each time it is reached (keys too), as the caps count them."""

    def walk(node: yaml.Node) -> tuple[int, int]:
        if isinstance(node, yaml.ScalarNode):
            return 1, len(node.value)
        children = [part for pair in node.value for part in pair] if isinstance(node, yaml.MappingNode) else node.value
        counts = [walk(child) for child in children]
        return 1 + sum(values for values, _ in counts), sum(chars for _, chars in counts)

    return walk(yaml.compose(text, Loader=yaml.SafeLoader))


@pytest.mark.parametrize("over", [0, 1])
def test_the_value_cap_is_exactly_the_documented_one(tmp_path: Path, over: int) -> None:
    """A file of exactly the cap's values is read (and refused only for its field); one value more is refused
    for its count."""
    items = VALUE_COUNT_MAX - unfolded(BASE + "owner: []\n")[0] + over
    text = BASE + f"owner: [{', '.join(['1'] * items)}]\n"
    assert unfolded(text)[0] == VALUE_COUNT_MAX + over
    message = error_for(write(tmp_path, text))
    if over:
        assert f"more than {VALUE_COUNT_MAX:,} values" in message and message.endswith("; fix: shorten the file")
    else:
        assert "field 'owner'" in message and "more than" not in message, message


@pytest.mark.parametrize("over", [0, 1])
def test_the_cap_on_unfolded_text_is_exactly_the_documented_one(tmp_path: Path, over: int) -> None:
    """Aliases that unfold to exactly the size cap's characters of text are read (and refused only for their
    field); one character more is refused, though the file itself is a seventh of the cap."""

    def text(padding: int) -> str:
        return BASE + f"owner: [&long {'x' * 100_000}, {', '.join(['*long'] * 9)}, {'y' * padding}]\n"

    padding = FILE_SIZE_MAX_BYTES - unfolded(text(1))[1] + 1 + over
    assert unfolded(text(padding))[1] == FILE_SIZE_MAX_BYTES + over
    assert len(text(padding)) < FILE_SIZE_MAX_BYTES // 6
    message = error_for(write(tmp_path, text(padding)))
    if over:
        assert f"its aliases unfold to more than {FILE_SIZE_MAX_BYTES:,} characters of text" in message
        assert message.endswith("; fix: write the values out, or shorten them"), message
    else:
        assert "field 'owner'" in message and "more than" not in message, message


def test_aliases_cannot_build_depth_the_file_does_not_show(tmp_path: Path) -> None:
    """Each alias stands for the whole value it repeats, so a chain of shallow anchors is as deep as it unfolds."""
    chain = "".join(f"x{i}: &a{i} [[*a{i - 1}]]\n" for i in range(1, 40))
    message = error_for(write(tmp_path, BASE + f"x0: &a0 {nested_list(10)}\n" + chain))
    assert "nested deeper than" in message


def test_a_billion_laughs_is_refused_at_once(tmp_path: Path) -> None:
    """Ten levels of ten aliases each (10^10 values once unfolded) are counted, refused, and never unfolded."""
    laughs = "x0: &a0 [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n" + "".join(
        f"x{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]\n" for i in range(1, 10)
    )
    started = time.perf_counter()
    message = error_for(write(tmp_path, BASE + laughs))
    assert f"more than {VALUE_COUNT_MAX:,} values" in message
    assert time.perf_counter() - started < 2


def test_aliases_cannot_unfold_into_more_text_than_the_size_cap(tmp_path: Path) -> None:
    """2,000 aliases of a 1,000-character string would be 2 MB of text from a 40 KB file: refused."""
    text = BASE + f"x: &long {'x' * 1000}\nowner: [{', '.join(['*long'] * 2000)}]\n"
    assert len(text) < FILE_SIZE_MAX_BYTES // 20
    assert f"its aliases unfold to more than {FILE_SIZE_MAX_BYTES:,} characters" in error_for(write(tmp_path, text))


def test_an_alias_inside_its_own_anchor_is_refused(tmp_path: Path) -> None:
    """A value that contains itself would unfold forever: refused, naming the alias."""
    assert "alias '*loop' at line 14 repeats a value that contains it" in error_for(
        write(tmp_path, BASE + "owner: &loop [*loop]\n")
    )


def test_too_many_values_are_refused(tmp_path: Path) -> None:
    """A flat list longer than the value cap is refused by count, long before the file size cap."""
    items = ", ".join(["1"] * VALUE_COUNT_MAX)
    assert len(items) < FILE_SIZE_MAX_BYTES
    assert f"more than {VALUE_COUNT_MAX:,} values" in error_for(write(tmp_path, BASE + f"owner: [{items}]\n"))


def test_the_size_cap_is_exactly_the_documented_one(tmp_path: Path) -> None:
    """A file of exactly the cap (padded with a comment) loads; one byte more is refused before parsing."""
    padding = FILE_SIZE_MAX_BYTES - len(BASE.encode()) - 2
    at_cap = write(tmp_path, BASE + "#" + "x" * padding + "\n")
    assert at_cap.stat().st_size == FILE_SIZE_MAX_BYTES
    assert load_scenario(at_cap).name == "lost_response"
    over = write(tmp_path, BASE + "#" + "x" * (padding + 1) + "\n")
    assert f"larger than {FILE_SIZE_MAX_BYTES:,} bytes" in error_for(over)


def test_a_huge_file_is_not_read_whole(tmp_path: Path) -> None:
    """A 200 MB file (sparse: no disk needed) is refused as fast as a small one: only the cap is ever read."""
    path = tmp_path / "lost_response.yaml"
    with path.open("wb") as stream:
        stream.truncate(200 * 2**20)
    started = time.perf_counter()
    assert "larger than" in error_for(path)
    assert time.perf_counter() - started < 1


def test_a_key_given_twice_names_the_key_and_both_lines(tmp_path: Path) -> None:
    """A second ``action_id`` would silently replace the first: refused, with where both are."""
    message = error_for(write(tmp_path, BASE + "action_id: a74\n"))
    assert "key 'action_id' given twice (lines 10 and 14); fix: keep one of them" in message


def test_a_key_given_twice_in_a_nested_mapping_is_refused(tmp_path: Path) -> None:
    """Duplicates are refused at every level, in block and flow mappings."""
    text = BASE + "worker: {timeout_s: 5, timeout_s: 50}\n"
    assert "key 'timeout_s' given twice (lines 14 and 14)" in error_for(write(tmp_path, text))
    text = BASE + "destination:\n  fencing: true\n  dedupe: none\n  fencing: false\n"
    assert "key 'fencing' given twice (lines 15 and 17)" in error_for(write(tmp_path, text))


def test_a_merge_key_may_still_be_overridden(tmp_path: Path) -> None:
    """YAML's merge (``<<``) brings in defaults that a key of the mapping overrides: that is not a duplicate."""
    task = "task: {<<: {task_id: release-42, revision: 1, target: staging/fraud, model: m7, digest: d}, revision: 17}"
    text = re.sub(r"^task: .*$", task, BASE, flags=re.M)
    assert load_scenario(write(tmp_path, text)).task.revision == 17


def test_a_key_given_twice_after_a_merge_key_is_refused(tmp_path: Path) -> None:
    """A merge key is passed over, not the end of the mapping: a key given twice after it is still refused."""
    task = "task: {<<: {task_id: release-42, target: staging/fraud, model: m7, digest: d}, revision: 17, revision: 18}"
    text = re.sub(r"^task: .*$", task, BASE, flags=re.M)
    assert "key 'revision' given twice (lines 8 and 8); fix: keep one of them" in error_for(write(tmp_path, text))


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2024-13-45", "field 'owner' at line 14: '2024-13-45' is a value YAML cannot build (month must be in 1..12)"),
        ("!!int twelve", "field 'owner' at line 14: 'twelve' is a value YAML cannot build"),
        ("!!timestamp soon", "field 'owner' at line 14: 'soon' is a value YAML cannot build"),
        ("!!float x", "field 'owner' at line 14: 'x' is a value YAML cannot build"),
        (
            "1" * 5000,
            "field 'owner' at line 14: '1111111111111111111111111111111111111...' is a value YAML cannot build",
        ),
        ("[ok, !!int twelve]", "at line 14: 'twelve' is a value YAML cannot build"),  # a list item: no key to name
        ("!!python/object:os.system {}", "malformed YAML at line 14 (could not determine a constructor"),
        ("!!binary 'a'", "malformed YAML at line 14 (failed to decode base64 data"),
        ("[1, 2", "malformed YAML at line"),
        ("*nowhere", "malformed YAML at line 14 (found undefined alias 'nowhere')"),
        ("'\x00'", "character U+0000 (at character"),
        ("'\x1b[2J'", "character U+001B"),
    ],
)
def test_values_yaml_cannot_build_are_one_line(tmp_path: Path, value: str, expected: str) -> None:
    """Scalars PyYAML raises on (bad dates, wrong explicit tags, huge integers, control characters) are one line."""
    assert expected in error_for(write(tmp_path, BASE + f"owner: {value}\n"))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", "expected a mapping, got nothing (an empty file)"),
        ("- a\n- b\n", "expected a mapping, got a list"),
        ("just text\n", "expected a mapping, got text"),
        ("12\n", "expected a mapping, got a number"),
        # A kind of value with no plainer name is named by its type, not as nothing.
        ("2024-01-01\n", "expected a mapping, got date"),
        ("---\na: 1\n---\nb: 2\n", "malformed YAML at line 3 (but found another document)"),
    ],
)
def test_a_file_that_is_not_one_mapping_is_one_line(tmp_path: Path, text: str, expected: str) -> None:
    """The top level must be one mapping."""
    assert expected in error_for(write(tmp_path, text))


def test_user_text_in_a_message_stays_on_one_line(tmp_path: Path) -> None:
    """Line breaks and control characters in keys and values are escaped, and a huge key is cut."""
    assert "field 'a\\nb'" in error_for(write(tmp_path, BASE + '"a\\nb": 1\n'))
    event = "x\\ny\\u2028z\\e"
    text = BASE + f'operator:\n  - do: request_cancel\n    when: {{after: {{actor: worker, event: "{event}"}}}}\n'
    assert "no event 'x\\ny\\u2028z\\x1b'" in error_for(write(tmp_path, text))
    long_key = "k" * 100_000
    message = error_for(write(tmp_path, BASE + f"? {long_key}\n: 1\n? {long_key}\n: 2\n"))
    assert "given twice" in message and len(message) < 600


def test_a_folder_a_missing_file_and_a_pipe_are_one_line(tmp_path: Path) -> None:
    """Whatever the path names, reading it fails in one line, and a pipe is not waited on."""
    folder = tmp_path / "lost_response.yaml"
    folder.mkdir()
    assert "is a folder, not a file" in error_for(folder)
    assert "cannot read the file (No such file or directory)" in error_for(tmp_path / "missing.yaml")
    pipe = tmp_path / "pipe.yaml"
    os.mkfifo(pipe)
    assert "not a regular file" in error_for(pipe)
    with pytest.raises(ScenarioError, match="NUL"):
        load_scenario("a/b\0.yaml")


def test_permission_denied_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An unreadable file says so (simulated: the tests may run as root, who can read anything)."""
    path = write(tmp_path, BASE)

    def refuse(self: Path, *args: object, **kwargs: object) -> object:
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "open", refuse)
    assert "cannot read the file (Permission denied); fix: check the path and its permissions" in error_for(path)


def test_the_command_line_refuses_a_deep_file_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``harness run`` with a 900-deep scenario exits 2 with one line on stderr, and writes nothing."""
    path = write(tmp_path, BASE + f"owner: {nested_list(900)}\n")
    out = tmp_path / "out"
    status = main(["run", "--policy", "retry_same_key", "--scenario", str(path), "--out", str(out), "--quiet"])
    err = capsys.readouterr().err
    assert status == 2 and not out.exists()
    assert err.count("\n") == 1 and "nested deeper than" in err and "Traceback" not in err


def test_the_readme_documents_the_caps() -> None:
    """The README's scenario section states each cap with the value the loader enforces."""
    section = README[README.index("## Scenarios") : README.index("### What stands in the path")]
    assert "1 MiB" in section and FILE_SIZE_MAX_BYTES == 2**20
    assert f"{NESTING_DEPTH_MAX} levels" in section
    assert f"{VALUE_COUNT_MAX:,} values" in section
    assert "given twice" in section


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("nth: 1}", "nth: true}", "field 'faults.0.nth': Input should be a valid integer; fix: write a whole"),
        ("nth: 1}", 'nth: "1"}', "field 'faults.0.nth': Input should be a valid integer; fix: write a whole"),
        ("nth: 1}", "nth: 1.0}", "field 'faults.0.nth': Input should be a valid integer"),
        ("revision: 17,", 'revision: "17",', "field 'task.revision': Input should be a valid integer"),
        ("action_id: a73", "action_id: a73\ndestination: {fencing: 'yes'}", "field 'destination.fencing': Input should"
         " be a valid boolean; fix: write true or false, without quotes"),
        ("action_id: a73", "action_id: a73\ndestination: {apply_s: '0.5'}", "field 'destination.apply_s': Input should"
         " be a valid number; fix: write a number, without quotes"),
        ("action_id: a73", "action_id: a73\ndestination: {dedupe_window_s: .nan}", "field 'destination.dedupe_window_s':"
         " Input should be a finite number; fix: write a finite number"),
        ("action_id: a73", "action_id: a73\ntransport: {latency_s: .inf}", "field 'transport.latency_s': Input should be"
         " a finite number"),
        ("faults:\n  - {boundary: response_lost, nth: 1}", "faults: 3", "field 'faults': expected a list; fix: write a"
         " list"),
        ("action_id: a73", "action_id: a73\noperator: [{event: nuke, at_s: 3}]", "field 'operator.0': the entry has no"
         " 'do'; fix: add 'do:' with one of change_task, request_cancel, expire_approval"),
        ("{boundary: response_lost, nth: 1}", "{nth: 1}", "field 'faults.0': the entry has no 'boundary'; fix: add"
         " 'boundary:' with one of request_lost, "),
        # An unknown kind names every choice: pydantic's own message cut the list mid-word before bridge_restart.
        ("{boundary: response_lost, nth: 1}", "{boundary: nope, nth: 1}", "field 'faults.0.boundary': 'nope' is not a"
         " known 'boundary'; fix: use one of request_lost, request_delayed, accepted_not_applied, apply_delayed, "
         "destination_restart, response_lost, response_delayed, crash_before_send, crash_awaiting_reply, "
         "lookup_unavailable, lookup_foreign_receipt, read_answer_delayed, connector_crash, started_not_durable, "
         "bridge_connection_error, bridge_restart"),
        ("action_id: a73", "action_id: a73\noperator: [{do: nuke, when: {at_s: 3}}]", "field 'operator.0.do': 'nuke' is"
         " not a known 'do'; fix: use one of change_task, request_cancel, expire_approval"),
    ],
)  # fmt: skip
def test_a_value_of_the_wrong_type_is_refused_not_converted(tmp_path: Path, old: str, new: str, expected: str) -> None:
    """A number, a flag or a list is taken as written: "1", true and 1.0 are not the occurrence 1, "yes" is not
    a flag, .nan is no duration, and an entry without its kind says which kinds there are."""
    assert old in BASE
    assert expected in error_for(write(tmp_path, BASE.replace(old, new, 1)))


def test_both_parsers_build_every_shipped_scenario_alike() -> None:
    """libyaml's parser (the fast path) and PyYAML's own build the same value from every shipped file."""
    from harness.scenario import yamlfile

    assert yamlfile._FAST is not None, "PyYAML without libyaml: every file would take the slow parser"
    for path in sorted(SCENARIO_DIR.glob("*.yaml")):
        text = path.read_text(encoding="utf-8")
        assert yamlfile._load(yamlfile._FAST, text) == yamlfile._load(yamlfile._BoundedLoader, text), path.name


def test_the_fast_parser_keeps_the_bounds(tmp_path: Path) -> None:
    """The bounds are checked as libyaml's events are composed, not only by the slow parser's fallback."""
    from harness.scenario import yamlfile

    assert yamlfile._FAST is not None
    deep = "a: " + "[" * (NESTING_DEPTH_MAX + 1) + "]" * (NESTING_DEPTH_MAX + 1) + "\n"
    with pytest.raises(yamlfile.Refused, match="nested deeper"):
        yamlfile._load(yamlfile._FAST, deep)
    with pytest.raises(yamlfile.Refused, match="given twice"):
        yamlfile._load(yamlfile._FAST, "k: 1\nk: 2\n")


def test_a_syntax_error_is_told_in_pure_pythons_words(tmp_path: Path) -> None:
    """A file libyaml refuses is read again by PyYAML's parser, whose message names the character at fault."""
    message = error_for(write(tmp_path, BASE + "\n\t x: 1\n"))
    assert "found character '\\t' that cannot start any token" in message and "fix: correct the YAML" in message


def test_libyaml_decides_what_is_yaml(tmp_path: Path) -> None:
    """A tab after a value is YAML's white space (PyYAML's own parser refuses it, libyaml does not), and a
    byte-order mark inside the text is refused (PyYAML's parser would take it): one answer, libyaml's."""
    from harness.scenario import yamlfile

    tabbed = BASE.replace("nth: 1}\n", "nth: 1}\t\n")
    assert tabbed != BASE
    with pytest.raises(yaml.YAMLError):
        yamlfile._load(yamlfile._BoundedLoader, tabbed)
    assert load_scenario(write(tmp_path, tabbed)) == load_scenario(SCENARIO_DIR / "lost_response.yaml")
    marked = BASE.replace("\naction_id:", "\n\ufeffaction_id:")
    assert "\ufeffaction_id" in yamlfile._load(yamlfile._BoundedLoader, marked)  # type: ignore[operator]
    assert "malformed YAML" in error_for(write(tmp_path, marked, "marked"))


@pytest.mark.parametrize(
    ("where", "old", "new"),
    [
        ("task.model", "model: m7", "model: {}"),
        ("task.target", "target: staging/fraud", "target: {}"),
        ("task.operation", "model: m7", "model: m7, operation: {}"),
        ("task.digest", 'digest: "sha256:d7d7d7"', "digest: {}"),
        ("owner", "action_id: a73", "action_id: a73\nowner: {}"),
        ("operator.0.reason", "action_id: a73", "action_id: a73\noperator: [{{do: request_cancel, when: {{at_s: 1}}, reason: {}}}]"),
        ("operator.0.model", "action_id: a73", "action_id: a73\noperator: [{{do: change_task, when: {{at_s: 1}}, model: {}, digest: d}}]"),
        ("destination.reject_models.0", "action_id: a73", "action_id: a73\ndestination: {{reject_models: [{}]}}"),
    ],
)  # fmt: skip
def test_text_the_world_copies_into_its_records_is_bounded(tmp_path: Path, where: str, old: str, new: str) -> None:
    """A scenario author's review: a 50,000-character model loaded, and one case's recovery.json was 1.2 MB. Text
    the scenario gives the world is copied into every record naming it, so it is bounded (``limits.TEXT_MAX``):
    one character past it is refused, naming the field; at the bound it loads."""
    assert old in BASE
    at_bound = BASE.replace(old, new.format("x" * TEXT_MAX), 1)
    load_scenario(write(tmp_path, at_bound))
    message = error_for(write(tmp_path, BASE.replace(old, new.format("x" * (TEXT_MAX + 1)), 1)))
    assert f"field '{where}': String should have at most {TEXT_MAX} characters; fix: shorten it" in message, message
