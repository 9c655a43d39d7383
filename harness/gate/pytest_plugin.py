"""``pytest --harness-policy SPEC``: gate a recovery policy from pytest, one test item per scenario x seed.

Registered through the ``pytest11`` entry point, so every pytest run in an environment where the harness is
installed loads this module. Without ``--harness-policy`` it only adds its options: it imports nothing of the
harness and collects nothing (``-p no:harness`` turns it off altogether). With it, the items are added to the
session's own collection, so they run in a folder without any test file, beside the folder's own tests, and
``-k``, ``--junitxml`` and ``-x`` apply to them as to any test. An item fails with the same text as its JUnit
failure (the anomaly, the witnessing timeline entries, the reproduce command of its repro file).
"""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from _pytest._code.code import TerminalRepr

    from harness.gate.repro import ReproFolder
    from harness.run.plan import Case

__all__ = ["PolicyCases", "ScenarioSeed"]

_DEFAULT_SEED_COUNT = 3
#: The cases of each policy asked for, and where failing cases' repro files go (set only with the option).
_CASES: pytest.StashKey[dict[str, tuple[Case, ...]]] = pytest.StashKey()
_REPROS: pytest.StashKey[ReproFolder] = pytest.StashKey()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("harness", "recovery-harness: gate a recovery policy")
    group.addoption(
        "--harness-policy",
        action="append",
        default=[],
        metavar="SPEC",
        help="collect one test per scenario x seed for this policy (a shipped name or package.module:attr; "
        "repeatable); without it the plugin does nothing",
    )
    group.addoption(
        "--harness-scenario",
        action="append",
        default=[],
        metavar="NAME|PATH",
        help="a shipped scenario or a YAML file (repeatable; default: every shipped scenario)",
    )
    group.addoption(
        "--harness-seed-count",
        type=int,
        default=_DEFAULT_SEED_COUNT,
        metavar="N",
        help=f"seeds 1..N (default {_DEFAULT_SEED_COUNT})",
    )
    group.addoption(
        "--harness-out",
        default=None,
        metavar="DIR",
        help="folder for the repro files of failing cases (default: a new temporary folder)",
    )


def pytest_configure(config: pytest.Config) -> None:
    specs: list[str] = config.getoption("harness_policy")
    if not specs:
        return
    # Only now, and only when asked: loading the harness costs a fraction of a second.
    from harness.errors import InputError
    from harness.gate.repro import ReproFolder
    from harness.run import load_grid
    from harness.scenario import list_scenarios

    count: int = config.getoption("harness_seed_count")
    if not 1 <= count <= 10_000:
        raise pytest.UsageError(f"--harness-seed-count {count} is outside 1..10000; fix: give a count in range")
    scenarios: list[str] = config.getoption("harness_scenario") or list_scenarios()
    cases: dict[str, tuple[Case, ...]] = {}
    try:
        for spec in dict.fromkeys(specs):
            grid = load_grid([spec], scenarios, range(1, count + 1))
            cases[grid.policies[0]] = grid.cases
    except InputError as exc:  # one line naming the field and the fix, as the command line says it
        raise pytest.UsageError(f"harness: {exc}") from None
    config.stash[_CASES] = cases
    out: str | None = config.getoption("harness_out")
    config.stash[_REPROS] = ReproFolder(Path(out) if out else None, prefix="harness-pytest-")


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(
    collector: pytest.Collector,
) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
    """Add one collector per policy to what the session itself collects (whatever the folder holds)."""
    report = yield
    cases = collector.config.stash.get(_CASES, None)
    if cases and isinstance(collector, pytest.Session) and report.passed and isinstance(report.result, list):
        for policy, policy_cases in cases.items():
            report.result.append(PolicyCases.from_parent(collector, name=policy, nodeid=policy, cases=policy_cases))
    return report


class PolicyCases(pytest.Collector):
    """Every scenario x seed of one policy."""

    def __init__(self, *, cases: tuple[Case, ...], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.cases = cases

    def collect(self) -> list[pytest.Item]:
        return [
            ScenarioSeed.from_parent(self, name=f"{case.scenario.name}[seed-{case.seed}]", case=case)
            for case in self.cases
        ]


class ScenarioSeed(pytest.Item):
    """One case: passes when its outcome is correct or escalated."""

    def __init__(self, *, case: Case, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.case = case

    def runtest(self) -> None:
        from harness.gate.cases import PolicyDoesNotRecover, judge
        from harness.run import run_case

        report, _ = run_case(self.case)
        verdict = judge(report, self.case, self.config.stash[_REPROS])
        if not verdict.passed:
            raise PolicyDoesNotRecover(verdict.policy, [verdict], 1)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str | TerminalRepr:
        from harness.gate.cases import PolicyDoesNotRecover

        if isinstance(excinfo.value, PolicyDoesNotRecover):
            return "\n\n".join(f.describe() for f in excinfo.value.failures)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"{self.case.policy.name} x {self.case.scenario.name} seed {self.case.seed}"
