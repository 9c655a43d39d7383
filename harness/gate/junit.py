"""JUnit XML, as CI servers read it (Jenkins, GitLab, GitHub test reporters): ``testsuites``, one ``testsuite``
per policy, one ``testcase`` per scenario x seed with the policy as its ``classname``, and a ``failure`` for each
case that is not correct or escalated (an ``error`` where the harness itself failed).

A failure's ``message`` names the outcome and the violated property; its text holds the anomalies, the
witnessing timeline entries and the reproduce command (``GateCase.text``). Written with the standard library's
ElementTree, atomically. Cases carry no ``time``: a case's evidence holds no wall-clock time, and a suite's time
is the wall time of the whole run.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.gate.cases import GateCase
from harness.run.files import check_writable, write_atomic
from harness.run.plan import UsageError

__all__ = ["Suite", "check_junit_path", "junit_xml", "write_junit"]

#: Characters XML 1.0 cannot hold, even escaped (control characters but tab, newline and carriage return).
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


@dataclass(frozen=True, slots=True)
class Suite:
    name: str
    cases: tuple[GateCase, ...]
    #: Wall time of the suite in seconds; None when not measured apart.
    time_s: float | None = None
    properties: tuple[tuple[str, str], ...] = ()
    #: The names of the cases planned and not run (a check ``--maxfail`` stopped), each a ``testcase`` holding
    #: ``skipped`` with ``skipped_why`` as its message.
    skipped: tuple[str, ...] = ()
    skipped_why: str = ""


def _clean(text: str) -> str:
    return _NOT_XML.sub("\ufffd", text)


def _counts(cases: Sequence[GateCase], skipped: int = 0) -> dict[str, str]:
    return {
        "tests": str(len(cases) + skipped),
        "failures": str(sum(c.status == "failed" for c in cases)),
        "errors": str(sum(c.status == "error" for c in cases)),
    }


def junit_xml(suites: Sequence[Suite], name: str = "recovery-harness") -> str:
    """The JUnit XML document for ``suites``."""
    every = [c for s in suites for c in s.cases]
    root = ET.Element("testsuites", {"name": name, **_counts(every, sum(len(s.skipped) for s in suites))})
    times = [s.time_s for s in suites if s.time_s is not None]
    if times:
        root.set("time", f"{sum(times):.3f}")
    for suite in suites:
        counts = _counts(suite.cases, len(suite.skipped))
        element = ET.SubElement(
            root, "testsuite", {"name": _clean(suite.name), **counts, "skipped": str(len(suite.skipped))}
        )
        if suite.time_s is not None:
            element.set("time", f"{suite.time_s:.3f}")
        if suite.properties:
            properties = ET.SubElement(element, "properties")
            for key, value in suite.properties:
                ET.SubElement(properties, "property", {"name": _clean(key), "value": _clean(value)})
        for case in suite.cases:
            testcase = ET.SubElement(element, "testcase", {"classname": _clean(case.policy), "name": _clean(case.name)})
            if case.status != "passed":
                tag = "failure" if case.status == "failed" else "error"
                failure = ET.SubElement(testcase, tag, {"message": _clean(case.message), "type": case.outcome})
                failure.text = _clean(case.text)
        for skipped in suite.skipped:
            testcase = ET.SubElement(element, "testcase", {"classname": _clean(suite.name), "name": _clean(skipped)})
            ET.SubElement(testcase, "skipped", {"message": _clean(suite.skipped_why)})
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def check_junit_path(path: Path, out: Path | None = None) -> None:
    """Refuse, before anything runs, a ``--junit`` path that cannot be written as a file, or whose writing would
    destroy a file that is not a JUnit report: one that exists, or (inside ``out``, the folder the run writes)
    one the run is about to write. The run writes no ``.xml`` file, so a name ending in ``.xml`` is safe there."""
    if path.is_dir():
        raise UsageError(f"--junit {path}: is a folder; fix: give a file name, such as {path / 'junit.xml'}")
    if out is not None and out.resolve().is_relative_to(path.resolve()):
        raise UsageError(f"--junit {path}: is the run's folder (--out {out}); fix: give another file name")
    if out is not None and path.suffix.lower() != ".xml" and path.resolve().is_relative_to(out.resolve()):
        raise UsageError(
            f"--junit {path}: inside the run's folder {out}, where it could replace a file the run writes; fix: give "
            f"a name ending in .xml, such as {out / 'junit.xml'}"
        )
    if path.is_file() and not _is_junit(path):
        raise UsageError(f"--junit {path}: exists and is not a JUnit report; fix: give a new file name, or remove it")
    check_writable(path, "--junit")


def _is_junit(path: Path) -> bool:
    """Whether an existing file is a JUnit report (a previous run's, which a run may write over): XML whose root
    element is ``testsuites`` or ``testsuite``. Only the start of the file is read."""
    try:
        with open(path, "rb") as handle:
            for _, element in ET.iterparse(handle, events=("start",)):
                return element.tag in ("testsuites", "testsuite")
    except (OSError, ET.ParseError):
        return False
    return False


def write_junit(path: Path, suites: Sequence[Suite]) -> None:
    """Write the JUnit XML for ``suites`` to ``path`` atomically (a CI server never reads half a file)."""
    write_atomic(path, junit_xml(suites))
