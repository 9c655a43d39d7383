"""The README says what the code does: every metric, outcome, fault boundary, scenario and policy is documented."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from harness.check.registry import METRICS
from harness.cli import _parser
from harness.model import OUTCOMES
from harness.policy import builtin_policy_names
from harness.scenario import BOUNDARIES, list_scenarios

README = (Path(__file__).resolve().parent.parent / "README.md").read_text()


def table_names(text: str) -> set[str]:
    """Every `name` in the first column of the README's markdown tables."""
    return {
        n
        for line in text.splitlines()
        if line.startswith("| `")
        for n in re.findall(r"`([a-z0-9_]+)`", line.split("|")[1])
    }


def test_every_metric_and_outcome_has_a_row() -> None:
    """Each registry metric and each outcome appears in the first column of a README table."""
    named = table_names(README)
    assert {m.name for m in METRICS} <= named
    assert set(OUTCOMES) <= named


def test_every_boundary_scenario_and_policy_is_named() -> None:
    """Each fault boundary, shipped scenario and shipped policy is named in the README."""
    for name in [*BOUNDARIES, *list_scenarios(), *builtin_policy_names()]:
        assert f"`{name}`" in README, name


@pytest.mark.parametrize("command", ["run", "explore", "check"])
def test_every_command_line_option_is_documented(command: str) -> None:
    """Each option of `harness run`, `harness explore` and `harness check` is in the README (in its options table)."""
    parser = _parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[command]
    options = {o for a in sub._actions for o in a.option_strings if o.startswith("--") and o != "--help"}
    assert options and all(f"`{o}" in README for o in options), sorted(o for o in options if f"`{o}" not in README)


def test_every_exit_status_of_explore_is_documented() -> None:
    """The README's explore exit statuses are the ones the help text gives."""
    section = README[README.index("## Exploring") : README.index("### Fault-site coverage")]
    for status in ("`0` no finding", "`1` findings", "`2` bad usage", "`3` Polyaxon tracking failed", "`4` a fault"):
        assert status in section, status


def test_every_pytest_plugin_option_and_check_exit_status_is_documented() -> None:
    """The pytest plugin's options and `harness check`'s exit statuses are in the README's gating section."""
    section = README[README.index("## Gating a policy in CI") : README.index("## Three ways to run with Polyaxon")]
    plugin = (Path(__file__).resolve().parent.parent / "harness" / "gate" / "pytest_plugin.py").read_text()
    options = set(re.findall(r'"(--harness-[a-z-]+)"', plugin))
    assert options and all(f"`{o}" in section for o in options), options
    for status in ("`0` every case is correct or escalated", "`1` some case is not", "`2` bad usage"):
        assert status in section, status
