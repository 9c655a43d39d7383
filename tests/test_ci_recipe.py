"""The README's CI job: its YAML parses, and each harness command in it is one the harness's own parser takes
(an option renamed or dropped would leave users a job that fails on its first run)."""

from __future__ import annotations

import shlex
from pathlib import Path

import yaml

from harness.cli import _parser

README = Path(__file__).resolve().parent.parent / "README.md"


def _job() -> dict[str, object]:
    text = README.read_text(encoding="utf-8")
    section = text[text.index("### In a CI job") :]
    block = section[section.index("```yaml\n") + len("```yaml\n") : section.index("\n```", section.index("```yaml"))]
    return yaml.safe_load(block)  # type: ignore[no-any-return]


def test_the_ci_job_s_harness_commands_are_ones_the_harness_takes() -> None:
    job = _job()
    [gate] = job["jobs"].values()  # type: ignore[attr-defined]
    assert gate["timeout-minutes"] > 0
    runs = [step["run"] for step in gate["steps"] if "run" in step]
    commands = [shlex.split(r) for r in runs if r.startswith("python -m harness ")]
    assert len(commands) == 2
    for words in commands:
        args = _parser().parse_args(words[3:])
        assert args.command == "check" and args.junit.parent == args.out  # the JUnit file inside what is kept
        assert args.policy == ["mypkg.recovery:POLICY"]
    assert commands[0].count("--scenario") == 0 and commands[1].count("--scenario") == 1
    assert _parser().parse_args(commands[0][3:]).maxfail == 20
    artifact = next(s for s in gate["steps"] if str(s.get("uses", "")).startswith("actions/upload-artifact"))
    assert artifact["if"] == "failure()" and artifact["with"]["path"] == "gate*/"
