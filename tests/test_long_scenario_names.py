"""A scenario of the user's may take the longest name and revision the loader allows (64 characters); the files the
harness derives from it (a crash point's case in a check's repro file, an exploration's finding) must load again.
They were named ``<name>-<phase>`` and ``<name>-<n>`` with revision ``<revision>+explore``, past that bound: the
check stopped with exit 2 on its own repro file, and each finding's replay command was refused."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from harness.cli import main
from harness.scenario import SAFE_NAME, load_scenario, scenario_cases
from harness.scenario.specs import derived_name, derived_revision

ROOT = Path(__file__).resolve().parent.parent


def _long(tmp_path: Path, source: str, name: str, revision: str = "1") -> Path:
    doc = yaml.safe_load((ROOT / "scenarios" / f"{source}.yaml").read_text())
    doc["name"], doc["revision"] = name, revision
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_derived_names_and_revisions_stay_within_the_bound_and_apart() -> None:
    assert derived_name("lost_response", "3") == "lost_response-3"
    assert derived_revision("1", "+explore") == "1+explore"
    for base in ("a" * 64, "a" * 63 + "b", "x-" * 32):
        for suffix in ("after_completed", "1", "12345"):
            name = derived_name(base, suffix)
            assert re.match(SAFE_NAME, name) and name.endswith(f"-{suffix}"), name
    assert derived_name("a" * 64, "1") != derived_name("a" * 63 + "b", "1")
    assert len(derived_revision("r" * 64, "+explore")) <= 64


def test_a_crash_point_scenario_with_the_longest_name_is_checked_and_its_repro_files_replay(tmp_path: Path) -> None:
    path = _long(tmp_path, "connector_crash_points", "c" * 64)
    assert [spec.rpartition("@")[2] for spec, _ in scenario_cases(str(path))] == [
        "before_started",
        "after_started",
        "after_effect",
        "after_completed",
    ]
    out = tmp_path / "check"
    args = ["check", "--policy", "retry_new_key", "--scenario", str(path), "--seed-count", "1", "--out", str(out)]
    assert main(args) == 1  # a finding, not bad input
    repros = sorted((out / "repro").rglob("*.yaml"))
    assert repros
    for repro in repros:
        assert load_scenario(repro).name == repro.stem
        assert main(["replay", str(repro)]) == 0


def test_findings_of_a_scenario_with_the_longest_name_and_revision_replay(tmp_path: Path) -> None:
    path = _long(tmp_path, "lost_response", "e" * 64, "r" * 64)
    out = tmp_path / "explore"
    args = ["explore", "--policy", "retry_new_key", "--scenario", str(path), "--depth", "1", "--swarm", "1"]
    assert main([*args, "--tracking", "none", "--out", str(out), "--quiet"]) == 1
    findings = sorted((out / "findings").rglob("*.yaml"))
    assert findings
    for finding in findings[:3]:
        assert load_scenario(finding).name == finding.stem
        assert main(["replay", str(finding)]) == 0


def test_a_derived_name_is_cut_exactly_to_the_bound() -> None:
    """The exact shapes (mutation found only their bound tested): a name of 64 is kept whole; a longer one keeps
    as much of its base as leaves room for the digest and the suffix, and is 64 long; a suffix too long for any of
    the base keeps its first character (a name starts with a letter or digit)."""
    import hashlib

    def digest(text: str) -> str:
        return hashlib.sha256(text.encode()).hexdigest()[:8]

    fits = "a" * 51
    assert derived_name(fits, "after_effect") == f"{fits}-after_effect"  # 51 + 1 + 12 = 64
    base = "a" * 64
    cut = derived_name(base, "after_effect")
    assert cut == f"{'a' * 42}-{digest(base)}-after_effect" and len(cut) == 64
    assert derived_name("ab" * 40, "x" * 60) == f"a-{digest('ab' * 40)}-{'x' * 60}"[:64]
    fits_revision = "r" * 56
    assert derived_revision(fits_revision, "+explore") == f"{fits_revision}+explore"  # 56 + 8 = 64
    revision = "r" * 64
    assert derived_revision(revision, "+explore") == f"{'r' * 47}~{digest(revision)}+explore"
    assert derived_revision("abc" * 30, "+" + "e" * 60) == f"~{digest('abc' * 30)}+{'e' * 60}"[:64]
