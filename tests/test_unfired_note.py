"""``--unfired note``: a declared fault or operator event that fired in no case is said as a note, and the exit
status is what it would be had it fired; the choice is kept in the run's manifest, so a resume exits as the run
did, and ``explore`` takes it too."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main

CELL = ["--policy", "reconcile_and_reauthorize", "--scenario", "retry_with_seconds_left", "--seed-count", "1"]


def test_a_complete_run_resumed_exits_as_it_ran(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    noted, failed = tmp_path / "noted", tmp_path / "failed"
    assert (
        main(["run", *CELL, "--tracking", "none", "--no-report", "--quiet", "--unfired", "note", "--out", str(noted)])
        == 0
    )
    assert main(["run", *CELL, "--tracking", "none", "--no-report", "--quiet", "--out", str(failed)]) == 4
    assert json.loads((noted / "manifest.json").read_text())["options"]["unfired"] == "note"
    capsys.readouterr()
    assert main(["run", "--resume", str(noted), "--quiet"]) == 0
    assert capsys.readouterr().out.startswith(f"nothing to resume: the run in {noted} is complete\n")
    assert main(["run", "--resume", str(failed), "--quiet"]) == 4
    assert main(["run", "--resume", str(noted), "--unfired", "fail"]) == 2  # the manifest's, not another


def test_explore_says_it_as_a_note(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["explore", *CELL[:4], "--depth", "1", "--swarm", "0", "--tracking", "none", "--quiet"]
    assert main([*args, "--unfired", "note", "--out", str(tmp_path / "a")]) == 0
    assert (
        "harness: note: scenario retry_with_seconds_left declares fault response_lost nth=2" in capsys.readouterr().err
    )
    assert main([*args, "--out", str(tmp_path / "b")]) == 4
