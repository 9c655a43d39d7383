"""Shared test helpers: a tiny text notation for hand-written histories, and world builders."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from harness.model import Evidence, Scalar
from harness.model.events import parse_event
from harness.scenario import Scenario, load_scenario, resolve_scenario

SCENARIO_DIR = Path(__file__).resolve().parent.parent / "scenarios"
#: A small grid with every kind of cell: correct, incorrect, unresolved, and an unknown duplicate count.
SMALL_GRID = (
    "--policy",
    "retry_same_key",
    "--policy",
    "reconcile_and_reauthorize",
    "--scenario",
    "lost_response",
    "--scenario",
    "uncertain_lookup",
)


#: Tables a test wants shown after the run, by title: printed at the end of pytest's output.
SUMMARIES: dict[str, str] = {}


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for title, text in SUMMARIES.items():
        terminalreporter.write_sep("-", title)
        terminalreporter.write_line(text)


def run_into(out: Path, *args: str) -> int:
    """``python -m harness run --out OUT --quiet ARGS...`` in this process; returns the exit status."""
    from harness.cli import main

    return main(["run", "--out", str(out), "--quiet", *args])


def _value(text: str) -> Scalar:
    if text == "none":
        return None
    if text in ("true", "false"):
        return text == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def history(text: str, *, visible: bool = True, deadline_s: float = 120.0) -> Evidence:
    """Build evidence from lines of ``<at_s> <actor> <event> key=value ...``; ``#`` starts a comment.

    Values ``none``, ``true``, ``false`` and numbers are converted; everything else stays a string. Each line
    becomes the typed record of its event, so a misspelt key fails here, not silently in a checker.
    """
    entries = []
    for line in text.strip().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        at, actor, event, *pairs = shlex.split(line)
        data = {k: _value(v) for k, v in (p.split("=", 1) for p in pairs)}
        entries.append(parse_event(actor, event, data, index=len(entries), at_s=float(at)))
    return Evidence(
        task_id="release-42",
        recovery_deadline_s=deadline_s,
        destination_visible=visible,
        history=tuple(entries),
    )


#: The opening every hand-written history shares: revision 17, its approval, action a73, a successful claim.
OPENING = """
0 controller task_revision task_id=release-42 revision=17 operation=activate target=staging/fraud model=m7 digest=d7
0 controller approval_granted approval_id=apr-17 revision=17 operation=activate target=staging/fraud digest=d7 expires_at_s=none
0 controller action_recorded action_id=a73 task_id=release-42 revision=17 operation=activate target=staging/fraud model=m7 digest=d7 approval_id=apr-17
0 controller claim action_id=a73 revision=17 ok=true reason=none
"""


def dispatch(at: float, n: int, key: str = "a73", model: str = "m7", digest: str = "d7") -> str:
    return (
        f"{at} transport send kind=dispatch n={n} action_id=a73 execution_id=a73-x{n} idempotency_key={key} "
        f"operation=activate target=staging/fraud model={model} digest={digest}"
    )


def applied(at: float, n: int, receipt: str, key: str = "a73") -> str:
    return (
        f"{at} destination applied receipt_id={receipt} idempotency_key={key} execution_id=a73-x{n} "
        "operation=activate target=staging/fraud model=m7 digest=d7"
    )


def recorded(at: float, receipt: str, event: str = "effect_recorded", version: int = 1) -> str:
    return (
        f"{at} controller {event} action_id=a73 receipt_id={receipt} idempotency_key=a73 operation=activate "
        f"target=staging/fraud model=m7 digest=d7 action_revision=17 version={version} guarded=true"
    )


def shipped(name: str) -> Scenario:
    return load_scenario(resolve_scenario(name, SCENARIO_DIR))


@pytest.fixture
def lost_response() -> Scenario:
    return shipped("lost_response")
