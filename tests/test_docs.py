"""The README says what the code does: every metric, outcome, fault boundary, scenario and policy is documented."""

from __future__ import annotations

import re
from pathlib import Path

from harness.check.registry import METRICS
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
