"""What the worker claims is kept for comparison only: it changes no verdict or metric but its own."""

from __future__ import annotations

import dataclasses

from conftest import shipped

from harness.check import check
from harness.model.events import WorkerReported
from harness.policy import load_policy
from harness.sim import simulate


def test_claimed_success_without_effect_changes_nothing() -> None:
    """A worker reporting success it did not achieve leaves every other metric, the verdict and the outcome alone."""
    evidence = simulate(shipped("lost_response"), load_policy("stop_on_timeout"), 1).evidence
    honest = check(evidence)
    lying = dataclasses.replace(
        evidence,
        history=tuple(
            dataclasses.replace(e, finished=True, claimed="completed, no duplicates, task done")
            if isinstance(e, WorkerReported)
            else e
            for e in evidence.history
        ),
    )
    lied = check(lying)
    assert honest.outcome == lied.outcome == "abandoned"
    assert honest.verdict == lied.verdict
    for name, value in honest.metrics.items():
        if name != "executor_finished":
            assert lied.metrics[name] == value, name
    assert lied.metrics["task_completed"] is False


def test_executor_finished_is_distinct_from_task_completed() -> None:
    """stop_on_timeout finishes normally while the task is not complete."""
    judgement = check(simulate(shipped("lost_response"), load_policy("stop_on_timeout"), 1).evidence)
    assert judgement.metrics["executor_finished"] is True
    assert judgement.metrics["task_completed"] is False
