"""The ``harness`` command the package installs behaves as ``python -m harness``: a policy of one's own in the
folder it is run in imports from there (a demanding user's review: the installed script could not find it, and
said to run from the folder it was already run from)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from harness.policy import load_policy

POLICY = """from policies.reconcile_and_reauthorize import ReconcileAndReauthorize


class Mine(ReconcileAndReauthorize):
    name = "mine"


POLICY = Mine()
"""


def test_the_installed_command_imports_a_policy_from_the_folder_it_is_run_in(tmp_path: Path) -> None:
    script = Path(sys.executable).parent / "harness"
    (tmp_path / "mp").mkdir()
    (tmp_path / "mp" / "__init__.py").write_text("")
    (tmp_path / "mp" / "pol.py").write_text(POLICY)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    args = ["check", "--policy", "mp.pol:POLICY", "--scenario", "lost_response", "--seed-count", "1", "--quiet"]
    done = subprocess.run([str(script), *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    revision = load_policy("reconcile_and_reauthorize").revision  # the module's class is its subclass
    said = f"mine (revision {revision}): 1 of 1 cases correct or escalated\ncheck: passed\n"
    assert (done.returncode, done.stdout) == (0, said), done.stderr
