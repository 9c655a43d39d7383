"""What a user's install and a user's folder can do to the harness: a wheel (`pip install .`, not `-e`) carries
the shipped scenarios and polyaxonfiles, and a folder of the user's own named like a shipped package is named
in one line instead of quietly replacing it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from harness.scenario import list_scenarios

ROOT = Path(__file__).resolve().parent.parent


def _harness(cwd: Path, *args: str, path: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if path is not None:
        env["PYTHONPATH"] = str(path)
    return subprocess.run(
        [sys.executable, "-m", "harness", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def test_a_wheel_runs_the_shipped_scenarios_and_the_default_grid_file(tmp_path: Path) -> None:
    """Built as `pip install .` builds it and unpacked, the harness finds every shipped scenario and the
    default grid's polyaxonfile beside its package (a wheel held only harness/ and policies/: 'unknown scenario
    lost_response', and a run with no options had no grid)."""
    # From a copy of what the project's files say to package: a build in the checkout reads (and leaves) its
    # egg-info and build/ folders, whose lists of files outlive the configuration that made them.
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    for name in ("harness", "policies", "scenarios", "polyaxonfiles"):
        shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path / "wheel"), str(source)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert built.returncode == 0, built.stderr[-2000:]
    (wheel,) = (tmp_path / "wheel").glob("*.whl")
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    assert sorted(p.stem for p in (site / "scenarios").glob("*.yaml")) == list_scenarios()
    project = tmp_path / "project"  # a user's folder: no scenarios/ or polyaxonfiles/ of the checkout here
    project.mkdir()
    where = _harness(project, "list", path=site)
    assert where.returncode == 0, where.stderr
    assert all(f"  {name} (revision" in where.stdout for name in list_scenarios())
    probe = subprocess.run(
        [sys.executable, "-c", "import harness, harness.plx.plxfile as f; print(harness.__file__); "
         "print(f.default_grid_file().is_file())"],
        cwd=project, env={**os.environ, "PYTHONPATH": str(site)}, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert probe.stdout.split() == [str(site / "harness" / "__init__.py"), "True"], probe.stderr
    checked = _harness(project, "check", "--policy", "reconcile_and_reauthorize", "--scenario", "lost_response",
                       "--seed-count", "1", "--quiet", path=site)  # fmt: skip
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_a_users_policies_folder_is_named_not_taken_for_the_shipped_one(tmp_path: Path) -> None:
    """A user's package named policies/ (as the README calls the shipped one) came first on the path: the shipped
    policies were gone ('unknown policy retry_new_key'), the user's modules listed as shipped, and `list` failed on
    a helper module. Now whatever needs the shipped policies says so in one line; the user's own policy, named
    by its module, still runs."""
    package = tmp_path / "policies"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "helpers.py").write_text("")
    (package / "deployctl.py").write_text(
        "from harness.policy import Stop\n"
        "class P:\n    name, revision = 'deployctl', '1'\n    def decide(self, situation):\n        return Stop()\n"
        "POLICY = P()\n"
    )
    for args in (["list"], ["check", "--policy", "retry_new_key", "--scenario", "lost_response", "--seed-count", "1"]):
        proc = _harness(tmp_path, *args)
        assert proc.returncode == 2, proc.stderr
        assert proc.stdout == "" and len(proc.stderr.splitlines()) == 1, proc.stderr
        assert f"imported from {package}, not the harness's own" in proc.stderr and "fix: rename it" in proc.stderr
    own = _harness(tmp_path, "check", "--policy", "policies.deployctl:POLICY", "--scenario", "lost_response",
                   "--seed-count", "1", "--quiet")  # fmt: skip
    assert own.returncode == 1 and "deployctl (revision 1): 0 of 1 cases correct" in own.stdout, own.stderr
