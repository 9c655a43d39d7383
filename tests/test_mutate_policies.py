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
    """The copy's [tool.mutmut] names the three safe policies and the judged test; every other byte of
    pyproject.toml (comments too) is the project's, the policies are copied as they are, and the project's own
    files are untouched."""
    own = (ROOT / "pyproject.toml").read_bytes()
    mutate_policies.prepare(tmp_path)
    assert (ROOT / "pyproject.toml").read_bytes() == own
    copied = (tmp_path / "pyproject.toml").read_text(encoding="utf-8")
    mutmut = tomllib.loads(copied)["tool"]["mutmut"]
    assert mutmut["only_mutate"] == [f"policies/{p}.py" for p in mutate_policies.SAFE]
    assert "policies" in mutmut["source_paths"]
    assert mutmut["pytest_add_cli_args_test_selection"] == ["tests/test_safe_policies_judged.py"]
    before, _, rest = own.decode().partition("[tool.mutmut]")
    # The project's table ends with the closing bracket of its test selection.
    after = rest[rest.index("\n]\n", rest.index("pytest_add_cli_args_test_selection")) + 3 :]
    assert copied.startswith(before) and copied.endswith(after) and after.strip()
    for policy in mutate_policies.SAFE:
        path = Path("policies") / f"{policy}.py"
        assert (tmp_path / path).read_bytes() == (ROOT / path).read_bytes()
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


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        ("Stop(kind='stop', reason='accounted for as applied')", "wording"),
        ("Stop(kind='stop', reason=None)", "wording"),
        ("Escalated(owner='o', reason=\"it's late\")", "wording"),
        ("Anomaly(kind='k', witnesses=(1,), detail='m7 applied twice')", "wording"),
        ("Wait(kind='wait', duration_s=10.0)", "behaviour"),
        ("RequestRefused(treason='fenced')", "behaviour"),
    ],
)
def test_only_the_text_of_a_reason_or_a_detail_is_wording(line: str, kind: str) -> None:
    """What the sorting of survivors strips before comparing evidence: a reason's or a detail's text, nothing
    else (another field, or a field whose name merely ends in "reason", stays)."""
    assert (mutate_policies.WORDING.sub("", line) != line) == (kind == "wording")
