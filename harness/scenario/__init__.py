"""Scenarios: YAML files validated into frozen models at the boundary, so bad input fails before a run.

A scenario fixes the world for one comparison: the task and its approval, the destination's deduplication
contract, latencies, the recovery deadline, scripted operator events, and faults at named protocol
boundaries. Every policy sees the same scenario, so every policy meets the same faults.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import yaml
from pydantic import Field, ValidationError, model_validator

from harness.errors import InputError
from harness.model import Frozen
from harness.scenario.faults import BOUNDARIES, FAULT_TYPES, Fault, FaultBase, Side
from harness.scenario.operator import ChangeTask, EventRef, ExpireApproval, OperatorEvent, RequestCancel, Trigger
from harness.scenario.specs import (
    SAFE_NAME,
    ApprovalSpec,
    DestinationSpec,
    PositiveSeconds,
    SafeName,
    TaskSpec,
    TransportSpec,
    WorkerSpec,
)

__all__ = [
    "BOUNDARIES",
    "FAULT_TYPES",
    "SAFE_NAME",
    "ApprovalSpec",
    "ChangeTask",
    "DestinationSpec",
    "EventRef",
    "ExpireApproval",
    "Fault",
    "FaultBase",
    "OperatorEvent",
    "RequestCancel",
    "Scenario",
    "ScenarioError",
    "Side",
    "TaskSpec",
    "TransportSpec",
    "Trigger",
    "WorkerSpec",
    "default_scenario_dir",
    "list_scenarios",
    "load_scenario",
    "resolve_scenario",
]


class ScenarioError(InputError):
    """A scenario file that cannot be used; the message is one line naming the file, the field and the fix."""


class Scenario(Frozen):
    """One scenario: the world every policy is run against, identically."""

    name: SafeName
    revision: Annotated[str, Field(min_length=1, max_length=64)]
    description: Annotated[str, Field(min_length=1)]
    task: TaskSpec
    approval: ApprovalSpec
    action_id: SafeName
    #: Who an unresolved action is escalated to.
    owner: str = "release-oncall"
    #: Time (from the start of the case) by which every action must be accounted for (or escalated).
    recovery_deadline_s: PositiveSeconds = 120.0
    #: After the deadline the simulation goes on while a request or an operation is still in flight, so that
    #: late effects are counted; at most this long.
    settle_max_s: PositiveSeconds = 600.0
    destination: DestinationSpec = DestinationSpec()
    transport: TransportSpec = TransportSpec()
    worker: WorkerSpec = WorkerSpec()
    operator: tuple[OperatorEvent, ...] = ()
    faults: tuple[Fault, ...] = ()

    @model_validator(mode="after")
    def _faults_name_an_action(self) -> Scenario:
        actions = self.action_ids
        if len(set(actions)) != len(actions):
            raise ValueError(f"action IDs must be distinct, got {', '.join(actions)}")
        for i, fault in enumerate(self.faults):
            if fault.action_id is not None and fault.action_id not in actions:
                raise ValueError(
                    f"faults.{i}.action_id '{fault.action_id}' is not an action of this scenario ({', '.join(actions)})"
                )
        return self

    @property
    def action_ids(self) -> tuple[str, ...]:
        """The first action, then each action a task change dispatches, in the order they are declared."""
        later = [e.action_id for e in self.operator if isinstance(e, ChangeTask) and e.action_id is not None]
        return (self.action_id, *later)

    @property
    def horizon_s(self) -> float:
        """The latest the simulation runs: the deadline, then while requests are in flight, at most ``settle_max_s``."""
        return self.recovery_deadline_s + self.settle_max_s


_FIXES = {
    "extra_forbidden": "remove it or check its spelling",
    "missing": "add it",
    "union_tag_invalid": "use one of the listed values",
    "literal_error": "use one of the listed values",
    "string_pattern_mismatch": "use lower case letters, digits, '_' or '-' (at most 64)",
}


def _one_line(path: Path, error: ValidationError) -> str:
    first = error.errors()[0]
    field = ".".join(str(part) for part in first["loc"]) or "(top level)"
    fix = _FIXES.get(first["type"], "correct the value")
    more = f" (+{error.error_count() - 1} more)" if error.error_count() > 1 else ""
    message = str(first["msg"]).removeprefix("Value error, ")
    return f"{path}: field '{field}': {message}; fix: {fix}{more}"


def load_scenario(path: Path | str) -> Scenario:
    """Read and validate one scenario file; raise ``ScenarioError`` with a one-line message otherwise."""
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ScenarioError(f"{path}: cannot read the file ({exc.strerror}); fix: check the path") from exc
    except UnicodeDecodeError as exc:
        raise ScenarioError(f"{path}: not UTF-8 text; fix: give a YAML scenario file") from exc
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise ScenarioError(f"{path}: malformed YAML{where}; fix: correct the YAML syntax") from exc
    if not isinstance(raw, dict):
        raise ScenarioError(f"{path}: field '(top level)': expected a mapping; fix: write 'key: value' pairs")
    try:
        scenario = Scenario.model_validate(raw)
    except ValidationError as exc:
        raise ScenarioError(_one_line(path, exc)) from exc
    if scenario.name != path.stem:
        raise ScenarioError(
            f"{path}: field 'name': '{scenario.name}' differs from the file name '{path.stem}'; fix: make them the same"
        )
    return scenario


def default_scenario_dir() -> Path:
    """The ``scenarios/`` folder shipped beside the ``harness`` package."""
    return Path(__file__).resolve().parents[2] / "scenarios"


def list_scenarios(directory: Path | None = None) -> list[str]:
    """Names of the shipped scenarios, sorted."""
    directory = directory or default_scenario_dir()
    return sorted(p.stem for p in directory.glob("*.yaml"))


def resolve_scenario(spec: str, directory: Path | None = None) -> Path:
    """Turn a scenario name or a path to a YAML file into a path, or raise ``ScenarioError``."""
    if spec.endswith((".yaml", ".yml")) or "/" in spec:
        return Path(spec)
    directory = directory or default_scenario_dir()
    path = directory / f"{spec}.yaml"
    if not path.is_file():
        known = ", ".join(list_scenarios(directory)) or "(none)"
        raise ScenarioError(f"unknown scenario '{spec}'; fix: use one of {known}, or a path to a YAML file")
    return path
