"""Tests for the lines the forty-ninth mutation pass (tests/MUTANTS.md) found unpinned in d47440a..573fca3:
``assert_recovers`` refusing a baseline named as the policy it gates (what the refusal says; a policy given as its
own baseline is no such baseline) and the pytest plugin's baseline grid (run apart, one process at a time, as the
gated policies' cases are). Everything runs in this process: the grid's worker processes are replaced by
test_grid_mutants' in-process stand-in, which notes how it was called. Scenarios are given by their absolute path,
so the current folder does not matter."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from test_baseline import NEVER_RETRIES
from test_grid_mutants import Supervised  # the in-process stand-in for the worker processes
from test_stop56_mutants import scenario, supervised  # noqa: F401 (the fixture, autouse, and its helper)

from harness.errors import InputError
from harness.gate.runner import assert_recovers
from harness.policy import load_policy

pytest_plugins = ["pytester"]

SAFE = "reconcile_and_reauthorize"
#: Every run of pytest here leaves out the plugins it does not need.
QUIET = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-p", "no:xdist", "-p", "no:anyio")


# -- assert_recovers: a baseline named as the policy it gates -------------------------------------------------------


def test_assert_recovers_says_which_policy_a_same_named_baseline_is_taken_for(
    policy_module: Callable[..., Path],
) -> None:
    """A fork that kept the shipped name, gated by ``assert_recovers`` against the shipped policy: the refusal
    names the argument, the baseline's spec, the shared name and the policy's spec, as ``the policy``."""
    policy_module("tests_fork_stop57", NEVER_RETRIES.replace('"never_retries"', f'"{SAFE}"'))
    with pytest.raises(InputError) as refused:
        assert_recovers("tests_fork_stop57:POLICY", [scenario("request_lost")], seeds=[1], baseline=SAFE)
    assert str(refused.value) == (
        f"assert_recovers: argument 'baseline' {SAFE}: its name '{SAFE}' is that of the policy "
        "tests_fork_stop57:POLICY, and the cases of both would be taken for one policy's; fix: give one of them "
        "another name"
    )


def test_assert_recovers_takes_a_policy_as_its_own_baseline() -> None:
    """The same name from the same spec is one policy, not two told apart: a policy given as its own baseline,
    by name or as its object, is run against itself, and a policy completes every task it completes itself."""
    cases = [scenario("request_lost"), scenario("lost_response")]
    verdicts = assert_recovers(SAFE, cases, seeds=[1], baseline=SAFE)
    assert [(v.name, v.status) for v in verdicts] == [
        ("request_lost seed 1", "passed"),
        ("lost_response seed 1", "passed"),
    ]
    policy = load_policy(SAFE)
    assert [v.status for v in assert_recovers(policy, cases, seeds=[1], baseline=policy)] == ["passed", "passed"]


# -- the pytest plugin's baseline grid --------------------------------------------------------------------------------


def test_the_plugins_baseline_grid_runs_one_process_at_a_time(
    pytester: pytest.Pytester,
    supervised: Supervised,  # noqa: F811 (the fixture imported above)
) -> None:
    """The plugin runs the gated policies' cases one worker process at a time (pytest, or pytest-xdist's workers,
    have the rest of the machine), and the baseline's grid, run apart, likewise: two runs, each of both
    scenarios' pieces, neither with more than one process."""
    args = [*QUIET, "--harness-policy", SAFE, "--harness-seed-count", "1"]
    for s in ("request_lost", "lost_response"):
        args += ["--harness-scenario", scenario(s)]
    result = pytester.runpytest_inprocess(*args, "--harness-baseline", "retry_same_key")
    result.assert_outcomes(passed=2)
    assert [(pieces, concurrency) for pieces, concurrency, _ in supervised.calls] == [(2, 1), (2, 1)]
