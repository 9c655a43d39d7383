"""The gate reads a run's cases back one at a time: each report is judged, briefed and let go, so ``harness check``
and ``harness run --junit`` hold a verdict a case (well under a kilobyte), not its report (about 33 KB). A check of a
million cases would otherwise need tens of gigabytes (a demanding user's review measured 801 MB for 20,000)."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator
from pathlib import Path

import pytest

import harness.gate.runner as runner
from harness.gate.repro import ReproFolder
from harness.gate.runner import CheckOptions, check_policy, grid_suites
from harness.model import CaseReport
from harness.run.files import iter_reports, read_reports
from harness.run.grid import GridOptions, run_grid
from harness.run.plan import load_grid, plan_cells


class Watched:
    """Wraps ``iter_reports``: before each report is given out, how many of those given before are still alive."""

    def __init__(self) -> None:
        self.given: list[weakref.ref[CaseReport]] = []
        self.most_alive = 0

    def __call__(self, out: Path) -> Iterator[CaseReport]:
        for report in iter_reports(out):
            gc.collect()
            self.most_alive = max(self.most_alive, sum(r() is not None for r in self.given))
            self.given.append(weakref.ref(report))
            yield report


def test_check_and_its_baseline_hold_no_report_once_judged(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Over 12 cases of the policy and 12 of its baseline, no report read before the last one is still alive:
    the verdicts and the notes (completion, escalations) come from what each report left behind."""
    watched = Watched()
    monkeypatch.setattr(runner, "iter_reports", watched)
    options = CheckOptions(
        scenarios=("lost_response", "request_lost"), seeds=tuple(range(1, 7)), out=tmp_path, baseline="retry_same_key"
    )
    summary = check_policy("reconcile_and_reauthorize", options)
    assert len(watched.given) == 24 and len(summary.cases) == 12
    assert watched.most_alive <= 1  # the one before, still the loops' variable as the next is read
    assert any(n.startswith("note: the task ended completed in 12 of 12 cases, 12 of 12") for n in summary.notes)


def test_the_junit_of_a_run_reads_its_cases_one_at_a_time(tmp_path: Path) -> None:
    """``grid_suites`` (behind ``run --junit``) takes the cases as they are read, and judges each as the whole
    folder read at once would."""
    grid_cases = load_grid(["retry_new_key", "reconcile_and_reauthorize"], ["lost_response"], [1, 2, 3]).cases
    run_grid(
        plan_cells(["retry_new_key", "reconcile_and_reauthorize"], ["lost_response"], [1, 2, 3], None, 1),
        GridOptions(out=tmp_path / "run", tracking="none", report=False),
    )
    specs = [("retry_new_key", "lost_response"), ("reconcile_and_reauthorize", "lost_response")]
    watched = Watched()
    streamed = grid_suites(specs, [1, 2, 3], watched(tmp_path / "run"), ReproFolder(tmp_path / "a"))
    whole = grid_suites(specs, [1, 2, 3], read_reports(tmp_path / "run").values(), ReproFolder(tmp_path / "b"))
    assert watched.most_alive <= 1 and len(watched.given) == len(grid_cases) == 6
    strip = [[(c.policy, c.name, c.status, c.message) for c in s.cases] for s in streamed]
    assert strip == [[(c.policy, c.name, c.status, c.message) for c in s.cases] for s in whole]
    assert [c.status for c in streamed[0].cases] == ["failed"] * 3
