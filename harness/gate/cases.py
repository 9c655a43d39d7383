"""The gate's view of one case: passed, failed or error, and, when it did not pass, the words that say why.

A failure's ``message`` is one line naming the outcome and the violated (or undecidable) properties, and the
policy's own error when it raised or returned no valid command; its ``text`` holds the anomalies, the timeline
entries that witness them (and the injected faults, and the policy's errors), and the command that reproduces
the case from its repro file. JUnit failures, pytest failures, ``assert_recovers`` and ``harness check`` all take
their words from here, so a failure reads the same wherever it is seen.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from harness.errors import cut_keeping_place, one_line
from harness.explore.search import Finding
from harness.gate.repro import ReproFolder, replay_command, violated
from harness.model import PASSING, CaseReport
from harness.policy import import_root
from harness.run.plan import Case
from harness.run.replay import printable, replay, timeline_text

__all__ = [
    "PASSING",
    "GateCase",
    "PolicyDoesNotRecover",
    "Status",
    "case_name",
    "judge",
    "judge_finding",
    "status_of",
]

#: ``error`` is the harness failing on the case (``harness_error``), not the policy.
Status = Literal["passed", "failed", "error"]


@dataclass(frozen=True, slots=True)
class GateCase:
    """One test case of the gate: a policy on one scenario at one seed (or one explored schedule)."""

    #: The policy's name (the JUnit ``classname``).
    policy: str
    #: ``<scenario> seed <n>``, or ``explored <finding> seed <n>`` for an explored schedule.
    name: str
    outcome: str
    status: Status
    #: One line: the outcome and the properties it breaks (empty when passed).
    message: str = ""
    #: The anomalies, the witnessing timeline entries, and how to reproduce it (empty when passed).
    text: str = ""
    #: ``python -m harness replay <repro file>``; None when passed.
    reproduce: str | None = None
    repro: Path | None = None
    #: How replaying its repro file did not end in this very case (none, when it did or was not replayed).
    differences: tuple[str, ...] = ()
    #: A passing case whose policy raised all the same (after escalating, say; the evidence judged the case): its
    #: first error on one line, and the command that runs the case again. Empty otherwise.
    raised: str = ""

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    def describe(self) -> str:
        """The whole failure, as JUnit and pytest show it: the message line, then the text."""
        return f"{self.message}\n{self.text}" if self.text else self.message


class PolicyDoesNotRecover(AssertionError):
    """Raised by ``assert_recovers`` (and by each failing pytest item): the failing cases, each described in
    full, with its reproduce command."""

    def __init__(self, policy: str, failures: Sequence[GateCase], total: int) -> None:
        self.policy = policy
        self.failures = tuple(failures)
        self.total = total
        head = f"{policy} does not recover in {len(self.failures)} of {total} cases"
        super().__init__("\n\n".join([head, *(f.describe() for f in self.failures)]))


def status_of(outcome: str) -> Status:
    if outcome in PASSING:
        return "passed"
    return "error" if outcome == "harness_error" else "failed"


def case_name(scenario: str, seed: int) -> str:
    return f"{scenario} seed {seed}"


#: Characters of a policy's error kept in a failure's one-line message (the text has all of it).
POLICY_ERROR_SHOWN = 160


def _policy_failed(report: CaseReport) -> str:
    """``; the policy failed: ValueError: boom`` (its first error, on one line, cut in its middle so that where the
    policy raised it stays), or nothing: a case the policy
    ended by failing must not read as a flaw of its recovery logic alone."""
    if report.policy_error is None:
        return ""
    return f"; the policy failed: {printable(cut_keeping_place(report.policy_error, POLICY_ERROR_SHOWN))}"


def message_of(report: CaseReport) -> str:
    """One line: the outcome and what makes it one (the violated properties, the undecided ones, the error), and
    the policy's own error when it failed."""
    if report.outcome == "harness_error":
        return f"harness_error: {one_line(report.error or 'the harness failed')}"
    broken = violated(report)
    if broken:
        return f"{report.outcome}: {', '.join(broken)} violated{_policy_failed(report)}"
    undecided = [name for name, verdict in report.checks.items() if verdict == "unknown"]
    if undecided:
        return f"{report.outcome}: {', '.join(undecided)} undecided by the evidence{_policy_failed(report)}"
    return f"{report.outcome}{_policy_failed(report)}"


def failure_text(
    report: CaseReport, reproduce: str, also: str | None, repro: Path, differences: Sequence[str] = ()
) -> str:
    """The anomalies, the witnessing timeline entries (and those recording the policy's own error) and the injected
    faults, and the reproduce commands."""
    lines = [
        f"{report.policy} (revision {report.policy_revision}) on {report.scenario} (revision "
        f"{report.scenario_revision}) at seed {report.seed}: {report.outcome}, verdict {report.verdict}"
    ]
    if report.error:
        lines.append(f"harness error: {report.error}")
    for anomaly in report.anomalies:
        lines.append(f"anomaly {anomaly.kind}: {anomaly.detail} (entries {', '.join(map(str, anomaly.witnesses))})")
    for name, verdict in report.checks.items():
        if verdict == "unknown":
            lines.append(f"undecided {name}: {report.unknown.get(name, 'not established')}")
    witnesses = {i for a in report.anomalies for i in a.witnesses}
    shown = tuple(
        e for e in report.timeline if e.index in witnesses or e.actor == "injector" or e.event == "policy_error"
    )
    if shown:
        lines.append("timeline entries (* witnesses an anomaly, ! an injected fault):")
        lines.append(timeline_text(report.model_copy(update={"timeline": shown})))
    lines.append(f"reproduce: {reproduce}")
    if also:
        lines.append(f"or run it: {also}")
    lines.append(f"repro file: {repro}")
    for difference in differences:
        lines.append(f"warning: the repro file does not replay to this case: {difference}")
    return "\n".join(lines)


def _importable(command: str, *policy_specs: str) -> str:
    """``command`` (``python -m harness run --policy package.module:attr ...``) as it runs where the check ran: with
    the folders its policies were imported from on ``PYTHONPATH``, each once, where they are not the current folder
    (a policy in a test file, imported by pytest from the suite's folder: the command alone said "No module named
    ..."; a policy and its baseline from two folders need both on the one variable the shell keeps)."""
    roots = [r for r in dict.fromkeys(import_root(s) for s in policy_specs) if r is not None and r != Path.cwd()]
    if not roots:
        return command
    return f"PYTHONPATH={shlex.quote(os.pathsep.join(map(str, roots)))} {command}"


def judge(report: CaseReport, case: Case, repros: ReproFolder) -> GateCase:
    """The gate's verdict on one case; a case that does not pass gets a repro file, replayed once to prove it
    runs to this very failure (any difference is said in the text). The replay runs in this process, not in a
    supervised worker: the case's policy has just run to the end of it, and ``assert_recovers`` runs the policy
    in its caller's process anyway."""
    name = case_name(report.scenario, report.seed)
    status = status_of(report.outcome)
    if status == "passed":
        raised = ""
        if report.policy_error is not None:
            raised = f"{_policy_failed(report).removeprefix('; ')}; run it again: {report.reproduce}"
        return GateCase(report.policy, name, report.outcome, status, raised=raised)
    path = repros.write(case.scenario, report, case.policy_spec)
    # No secret to scrub: a case report has no secret field (see harness.run.files.recovery_json).
    differences: tuple[str, ...] = ()
    if report.outcome == "harness_error":
        # Over its budget, or its worker died: replayed here it could hang or kill the gate itself. Its reproduce
        # command runs it again in a supervised worker.
        reproduce = report.reproduce
        text = failure_text(report, reproduce, None, path)
    else:
        reproduce = replay_command(path)
        differences = replay(path, supervised=False).differences
        text = failure_text(report, reproduce, _importable(report.reproduce, case.policy_spec), path, differences)
    return GateCase(
        report.policy,
        name,
        report.outcome,
        status,
        message=message_of(report),
        text=text,
        reproduce=reproduce,
        repro=path,
        differences=differences,
    )


def judge_finding(finding: Finding, path: Path) -> GateCase:
    """An explored schedule on which a safety property is false: always a failure. Its file (written by explore)
    is its repro file; replaying it gives the report the text is made from (in this process, as ``judge``
    replays: the policy ran to the end of this very schedule while it was explored)."""
    replayed = replay(path, supervised=False)
    report = replayed.report
    reproduce = replay_command(path)
    also = _importable(
        f"python -m harness run --policy {shlex.quote(finding.policy_spec)} --scenario {shlex.quote(str(path))} "
        f"--seed {finding.seed}",
        finding.policy_spec,
    )
    return GateCase(
        finding.policy,
        f"explored {path.stem} seed {finding.seed}",
        finding.outcome,
        "failed",
        message=f"{finding.outcome}: {', '.join(finding.properties)} violated{_policy_failed(report)}",
        text=failure_text(report, reproduce, also, path, replayed.differences),
        reproduce=reproduce,
        repro=path,
        differences=replayed.differences,
    )
