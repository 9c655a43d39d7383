"""tools/mutate_policies.py prepares a copy in which mutmut mutates the safe policies, and only them, and asks
only whether every shipped case judges them clean; the project's own mutation setup is left as it was."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import mutate_policies  # noqa: E402


def test_the_copy_mutates_the_safe_policies_and_asks_the_judged_test(tmp_path: Path) -> None:
    mutate_policies.prepare(tmp_path)
    copied = tomllib.loads((tmp_path / "pyproject.toml").read_text(encoding="utf-8"))
    own = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    mutmut = copied["tool"]["mutmut"]
    assert mutmut["only_mutate"] == [f"policies/{p}.py" for p in mutate_policies.SAFE]
    assert "policies" in mutmut["source_paths"]
    assert mutmut["pytest_add_cli_args_test_selection"] == ["tests/test_safe_policies_judged.py"]
    # Everything else in pyproject.toml is the project's, and the project's own file is untouched.
    assert {k: v for k, v in copied["tool"].items() if k != "mutmut"} == {
        k: v for k, v in own["tool"].items() if k != "mutmut"
    }
    assert copied["project"] == own["project"]
    assert own["tool"]["mutmut"]["only_mutate"] != mutmut["only_mutate"]
    for policy in mutate_policies.SAFE:
        assert (tmp_path / "policies" / f"{policy}.py").read_bytes() == (
            ROOT / "policies" / f"{policy}.py"
        ).read_bytes()
    assert (tmp_path / "tests" / "test_safe_policies_judged.py").is_file()


def test_the_judged_test_fails_a_policy_that_breaks_a_property(tmp_path: Path) -> None:
    """The test mutmut asks is one a mutant can fail: run on a policy that retries under a new key, it fails."""
    mutate_policies.prepare(tmp_path)
    source = (tmp_path / "tests" / "test_safe_policies_judged.py").read_text(encoding="utf-8")
    namespace: dict[str, object] = {}
    exec(compile(source, "test_safe_policies_judged.py", "exec"), namespace)
    judged = namespace["test_judged_clean"]
    assert callable(judged)
    judged("reconcile_and_reauthorize")  # the correct policy passes
    with pytest.raises(AssertionError):
        judged("retry_new_key")
