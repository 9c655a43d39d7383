"""The README says what the code does: every metric, outcome, fault boundary, scenario and policy is documented."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any, get_args

import pytest
from pydantic import BaseModel, SecretStr

from harness.check.registry import METRICS
from harness.cli import _parser
from harness.model import OUTCOMES
from harness.policy import builtin_policy_names
from harness.scenario import BOUNDARIES, Scenario, list_scenarios
from harness.scenario.specs import DestinationSpec

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


def test_the_policy_example_passes_the_gate_as_the_readme_says(tmp_path: Path) -> None:
    """The README's own policy, saved where it says and gated as it says, passes every shipped scenario, some of
    them by accounting for the action (not only by escalating it)."""
    import csv
    import os
    import subprocess
    import sys

    section = README[README.index("### Writing your own") : README.index("## Scenarios")]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None
    package = tmp_path / "mypolicies"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "record_or_escalate.py").write_text(code.group(1))
    spec = "mypolicies.record_or_escalate:POLICY"
    assert f"--policy {spec}" in " ".join(section.split())
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "-m", "harness", "check", "--policy", spec, "--seed-count", "1", "--out", str(out)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr[-2000:]
    with open(out / "summary.csv", encoding="utf-8") as handle:
        outcomes = [row["outcome"] for row in csv.DictReader(handle)]
    assert len(outcomes) >= len(list_scenarios()) and set(outcomes) == {"correct", "escalated"}
    # It does what its escalation says: where no lookup finds a receipt, it looked up three times first.
    case = json.loads((out / "cases/record_or_escalate/uncertain_lookup/seed-1/recovery.json").read_text())
    kinds = [e["data"]["kind"] for e in case["timeline"] if e["event"] == "command"]
    assert kinds.count("look_up") == 3 and kinds[-2:] == ["escalate", "stop"], kinds


def test_every_situation_field_and_command_is_in_the_policy_tables() -> None:
    """The tables under "Writing your own" name every field and derived value of a Situation and every command."""
    from harness.model import COMMAND_TYPES
    from harness.policy import Situation

    section = README[README.index("### Writing your own") : README.index("## Scenarios")]
    named = set(re.findall(r"`([A-Za-z_]+)(?:\(\))?`", section))
    derived = {n for n, v in vars(Situation).items() if isinstance(v, property)} | {"observed_receipts"}
    fields = set(Situation.model_fields) | derived
    assert fields <= named, sorted(fields - named)
    commands = {c.__name__ for c in COMMAND_TYPES}
    assert commands <= named, sorted(commands - named)


def _shown_default(info: Any) -> str:
    """A field's default as the scenario field table writes it."""
    if info.is_required():
        return "required"
    value = info.get_default(call_default_factory=True)
    if value is None:
        return "`null`"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, tuple):
        return "`[]`"
    if isinstance(value, SecretStr):
        return f"`{value}`"
    return f"`{value}`"


def test_the_scenario_field_table_is_the_model() -> None:
    """Every field of a scenario file, section by section, has its row with the model's own default; no row names a
    field the model lacks; the destination's fields are in its contract table. An author could not find
    worker.timeout_s, transport.latency_s or owner anywhere but in an error message."""
    section = README.split("Every field a scenario file can hold", 1)[1].split("\n\n", 2)[1]
    rows = {m.group(1): m.group(2).strip() for m in re.finditer(r"^\| `([a-z_.]+)` \|([^|]*)\|", section, re.M)}
    expected: dict[str, str] = {}
    for name, info in Scenario.model_fields.items():
        section_model = next(
            (
                a
                for a in (info.annotation, *get_args(info.annotation))
                if isinstance(a, type) and issubclass(a, BaseModel)
            ),
            None,
        )
        if section_model is None or name in ("destination", "reproduces"):
            expected[name] = "" if name == "destination" else _shown_default(info)
            continue
        for inner, inner_info in section_model.model_fields.items():
            expected[f"{name}.{inner}"] = _shown_default(inner_info)
    assert rows == expected
    contract = README.split("### The destination's contract", 1)[1].split("Shipped scenarios", 1)[0]
    for name in DestinationSpec.model_fields:
        assert f"`{name}`" in contract, name
