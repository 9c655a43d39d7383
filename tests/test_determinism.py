"""Same inputs and seed give byte-identical evidence and recovery.json, across processes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import shipped

from harness.policy import builtin_policy_names, load_policy
from harness.sim import simulate

ROOT = Path(__file__).resolve().parent.parent


def test_same_seed_same_evidence_in_process() -> None:
    """Two simulations of one case produce equal histories; another seed moves latencies."""
    policy = load_policy("reconcile_and_reauthorize")
    a = simulate(shipped("duplicate_receipt"), policy, 7).evidence
    b = simulate(shipped("duplicate_receipt"), policy, 7).evidence
    c = simulate(shipped("duplicate_receipt"), policy, 8).evidence
    assert a == b
    assert a != c


def test_recovery_json_is_byte_identical_across_processes(tmp_path: Path) -> None:
    """Two separate processes running the same grid write byte-identical recovery.json files (tracking and the
    report are left out: neither touches a case's file, and they made each run seven times as long)."""
    outs = []
    for name in ("one", "two"):
        out = tmp_path / name
        subprocess.run(
            [
                sys.executable,
                "-m",
                "harness",
                "run",
                "--quiet",
                "--seed",
                "5",
                "--out",
                str(out),
                "--scenario",
                "changed_task",
                "--scenario",
                "uncertain_lookup",
                "--tracking",
                "none",
                "--no-report",
            ],
            cwd=ROOT,
            check=True,
            capture_output=True,
            text=True,
        )
        outs.append(out)
    files = sorted(p.relative_to(outs[0]) for p in (outs[0] / "cases").rglob("recovery.json"))
    assert len(files) == 2 * len(builtin_policy_names())
    for rel in files:
        assert (outs[0] / rel).read_bytes() == (outs[1] / rel).read_bytes(), rel
