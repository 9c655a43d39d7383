"""Repro files: one failing case as a self-contained scenario file that ``harness replay`` runs to that failure.

The format is the one ``harness explore`` writes for its findings: the scenario with exactly its faults,
operator events and destination contract, plus ``reproduces`` (the policy spec, its revision, the seed, the
outcome and the violated properties, and the case's wall-clock budget when it ran over it), so ``harness replay
FILE`` runs that policy at that seed (under that budget) and checks the case ends as recorded. The file needs
nothing but the policy to be importable: a shipped scenario that later changes, or a user's scenario file that
moves, does not change what it reproduces. The approval's token is a secret and is never written (the simulator
needs none: any token is presented the same way).
"""

from __future__ import annotations

import shlex
import tempfile
from pathlib import Path
from typing import Any

import yaml

from harness.explore.schedule import element_dict, elements_of
from harness.limits import CASE_TIMEOUT_MAX_S
from harness.model import CaseReport
from harness.policy import import_root
from harness.run.files import write_atomic
from harness.scenario import Scenario

__all__ = ["ReproFolder", "case_timeout", "replay_command", "repro_path", "repro_yaml", "violated"]


def violated(report: CaseReport) -> tuple[str, ...]:
    """The safety properties the case is witnessed to break (verdict ``false``), in the registry's order."""
    return tuple(name for name, verdict in report.checks.items() if verdict == "false")


def repro_yaml(scenario: Scenario, report: CaseReport, policy_spec: str, policy_path: Path | None = None) -> str:
    """The case as a runnable scenario file: ``scenario`` (the very case that ran, one variant of a crash-point
    scenario) with ``reproduces`` saying which policy, revision and seed give which outcome (and, for a user's
    policy, the folder its module was imported from)."""
    own = elements_of(scenario)
    data: dict[str, Any] = scenario.model_dump(
        mode="json", exclude_defaults=True, exclude={"approval", "faults", "operator", "reproduces"}
    )
    # Faults and operator events are written as their YAML form (with their ``boundary`` and ``do``), exactly
    # as explore writes them; a plain dump would drop those tags, which have defaults.
    data["approval"] = scenario.approval.model_dump(mode="json", exclude={"token"}, exclude_defaults=True)
    data["faults"] = [element_dict(e) for e in own if e.kind == "fault"]
    data["operator"] = [element_dict(e) for e in own if e.kind == "operator"]
    broken = violated(report)
    because = f", violating {', '.join(broken)}" if broken else ""
    data["description"] = (
        f"One failing case, written for harness replay: {report.policy} (revision {report.policy_revision}) at "
        f"seed {report.seed} is {report.outcome}{because}. Scenario {scenario.name} (revision "
        f"{scenario.revision}): {scenario.description.strip()}"
    )
    data["reproduces"] = {
        "policy": policy_spec,
        "policy_revision": report.policy_revision,
        "seed": report.seed,
        "outcome": report.outcome,
        "properties": list(broken),
    }
    budget_s = case_timeout(report)
    if budget_s is not None:  # a case stopped over its budget replays under the same, not the default
        data["reproduces"]["case_timeout_s"] = budget_s
    if policy_path is not None:
        data["reproduces"]["policy_path"] = str(policy_path)
    order = ["name", "revision", "description", "reproduces"]
    ordered = {k: data[k] for k in order} | {k: v for k, v in data.items() if k not in order}
    return yaml.safe_dump(ordered, sort_keys=False, width=110)


def case_timeout(report: CaseReport) -> float | None:
    """The wall-clock budget the case ran under, as its reproduce command names it (``--case-timeout``: a case
    stopped over its budget); None when it names none, or one that is not a budget."""
    try:
        args = shlex.split(report.reproduce)
    except ValueError:
        return None
    if "--case-timeout" not in args[:-1]:
        return None
    try:
        budget_s = float(args[args.index("--case-timeout") + 1])
    except ValueError:
        return None
    return budget_s if 0 < budget_s <= CASE_TIMEOUT_MAX_S else None


def repro_path(folder: Path, report: CaseReport) -> Path:
    """``<folder>/<policy>/seed-<n>/<scenario>.yaml``: a scenario file must carry its scenario's name, so the
    policy and the seed go into the folders."""
    return folder / report.policy / f"seed-{report.seed}" / f"{report.scenario}.yaml"


def replay_command(path: Path) -> str:
    """The command that re-runs a repro file (or an explore finding) and checks it ends as recorded."""
    return f"python -m harness replay {shlex.quote(str(path))}"


class ReproFolder:
    """Where repro files go: the given folder, or a new temporary one, made when the first file is written
    (a run in which everything passes leaves nothing behind)."""

    def __init__(self, path: Path | None, prefix: str = "harness-repro-") -> None:
        self._path = path
        self._prefix = prefix

    @property
    def path(self) -> Path:
        if self._path is None:
            self._path = Path(tempfile.mkdtemp(prefix=self._prefix))
        return self._path

    def write(self, scenario: Scenario, report: CaseReport, policy_spec: str) -> Path:
        """Write the case's repro file (atomically) and return its path."""
        path = repro_path(self.path, report)
        write_atomic(path, repro_yaml(scenario, report, policy_spec, import_root(policy_spec)))
        return path
