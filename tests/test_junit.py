"""JUnit XML: the structure CI servers read, counts that add up, and text that survives any characters."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from harness.gate.cases import GateCase
from harness.gate.junit import Suite, check_junit_path, junit_xml, write_junit
from harness.run import UsageError

#: The JUnit structure Jenkins validates (its xUnit plugin's junit-10 schema) and GitLab's and GitHub's test
#: reporters read: per element, (required attributes, optional attributes, allowed children). ``failure``,
#: ``error`` and ``skipped`` hold text only.
STRUCTURE: dict[str, tuple[set[str], set[str], set[str]]] = {
    "testsuites": (set(), {"name", "time", "tests", "failures", "errors"}, {"testsuite"}),
    "testsuite": (
        {"name", "tests", "failures", "errors"},
        {"group", "time", "skipped", "timestamp", "hostname", "id", "package", "file", "log", "url"},
        {"testsuite", "properties", "testcase", "system-out", "system-err"},
    ),
    "properties": (set(), set(), {"property"}),
    "property": ({"name", "value"}, set(), set()),
    "testcase": (
        {"name"},
        {"time", "classname", "group"},
        {"skipped", "error", "failure", "system-out", "system-err"},
    ),
    "failure": (set(), {"type", "message"}, set()),
    "error": (set(), {"type", "message"}, set()),
    "skipped": (set(), {"type", "message"}, set()),
}
#: Counts are whole numbers; times are decimal seconds (the schema's SUREFIRE_TIME, without thousands commas).
COUNT = re.compile(r"^[0-9]+$")
TIME = re.compile(r"^[0-9]+(\.[0-9]*)?$")


def structure_problems(root: ET.Element) -> list[str]:
    """Every way ``root`` strays from the structure CI servers read (empty when it does not)."""
    problems = []
    if root.tag != "testsuites":
        problems.append(f"root is <{root.tag}>, not <testsuites>")
    for element in root.iter():
        if element.tag not in STRUCTURE:
            problems.append(f"<{element.tag}> is not a JUnit element")
            continue
        required, optional, children = STRUCTURE[element.tag]
        attributes = set(element.attrib)
        problems += [f"<{element.tag}> lacks '{a}'" for a in sorted(required - attributes)]
        problems += [f"<{element.tag}> has unknown '{a}'" for a in sorted(attributes - required - optional)]
        problems += [f"<{element.tag}> holds <{c.tag}>" for c in element if c.tag not in children]
        for name in ("tests", "failures", "errors", "skipped"):
            if name in element.attrib and not COUNT.match(element.attrib[name]):
                problems.append(f"<{element.tag}> {name}='{element.attrib[name]}' is not a count")
        if "time" in element.attrib and element.tag != "testcase" and not TIME.match(element.attrib["time"]):
            problems.append(f"<{element.tag}> time='{element.attrib['time']}' is not a time")
    for suite in [root, *root.iter("testsuite")]:
        cases = list(suite.iter("testcase"))
        expected = {
            "tests": len(cases),
            "failures": sum(c.find("failure") is not None for c in cases),
            "errors": sum(c.find("error") is not None for c in cases),
        }
        for name, count in expected.items():
            if suite.get(name) is not None and suite.get(name) != str(count):
                problems.append(f"<{suite.tag} name='{suite.get('name')}'> {name}={suite.get(name)}, counted {count}")
    return problems


def failed(name: str, status: str = "failed") -> GateCase:
    return GateCase(
        "my_policy",
        name,
        "incorrect" if status == "failed" else "harness_error",
        status,  # type: ignore[arg-type]
        message="incorrect: duplicate_effects violated",
        text="anomaly duplicate_effect: a73 took effect 2 times <r1 & r2>\x00\x1b[31m \u00e9\nreproduce: python -m harness replay x.yaml",
        reproduce="python -m harness replay x.yaml",
        repro=Path("x.yaml"),
    )


SUITES = (
    Suite(
        "my_policy",
        (
            GateCase("my_policy", "lost_response seed 1", "correct", "passed"),
            failed("lost_response seed 2"),
            failed("uncertain_lookup seed 1", status="error"),
        ),
        1.5,
        (("policy_revision", "3"),),
    ),
    Suite("my_policy explored", (failed("explored request_lost-1 seed 1"),), None),
)


def test_junit_has_the_structure_ci_servers_read() -> None:
    """Every element, attribute and child is one Jenkins' schema allows, and the counts add up."""
    root = ET.fromstring(junit_xml(SUITES))
    assert structure_problems(root) == []
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("4", "2", "1")
    assert [s.get("name") for s in root.iter("testsuite")] == ["my_policy", "my_policy explored"]
    assert {c.get("classname") for c in root.iter("testcase")} == {"my_policy"}


def test_the_validator_catches_what_ci_servers_refuse() -> None:
    """The structure check is not vacuous: a missing name, a child in a failure and a wrong count are caught."""
    bad = ET.fromstring(
        '<testsuites><testsuite name="p" tests="2" failures="0" errors="0">'
        '<testcase classname="p"><failure message="m"><stackTrace/></failure></testcase></testsuite></testsuites>'
    )
    problems = structure_problems(bad)
    assert "<testcase> lacks 'name'" in problems
    assert "<failure> holds <stackTrace>" in problems
    assert any("tests=2, counted 1" in p for p in problems)
    assert any("failures=0, counted 1" in p for p in problems)


def test_a_failure_keeps_its_message_and_text_and_any_character_becomes_valid_xml() -> None:
    """Markup characters are escaped and characters XML cannot hold are replaced; the rest is kept as it was."""
    root = ET.fromstring(junit_xml(SUITES))
    case = next(c for c in root.iter("testcase") if c.get("name") == "lost_response seed 2")
    failure = case.find("failure")
    assert failure is not None and case.find("error") is None
    assert failure.get("message") == "incorrect: duplicate_effects violated"
    assert failure.get("type") == "incorrect"
    assert failure.text == (
        "anomaly duplicate_effect: a73 took effect 2 times <r1 & r2>\ufffd\ufffd[31m \u00e9\n"
        "reproduce: python -m harness replay x.yaml"
    )
    error = next(c for c in root.iter("testcase") if c.get("name") == "uncertain_lookup seed 1").find("error")
    assert error is not None and error.get("type") == "harness_error"
    passed = next(c for c in root.iter("testcase") if c.get("name") == "lost_response seed 1")
    assert list(passed) == []


def test_write_junit_writes_the_file_and_refuses_a_folder(tmp_path: Path) -> None:
    """The file is written whole, folders made; a --junit that is a folder is refused before anything runs."""
    path = tmp_path / "deep" / "junit.xml"
    check_junit_path(path)
    write_junit(path, SUITES)
    assert path.read_text(encoding="utf-8").startswith('<?xml version="1.0" encoding="UTF-8"?>')
    assert structure_problems(ET.parse(path).getroot()) == []
    assert [p.name for p in path.parent.iterdir()] == ["junit.xml"]  # no temporary file left behind
    with pytest.raises(UsageError, match="is a folder; fix: give a file name"):
        check_junit_path(tmp_path)
    with pytest.raises(UsageError, match="is a file, not a folder"):
        check_junit_path(path / "below.xml")
