"""The import arrows point one way: model <- scenario/policy <- sim <- runner; check sees only model."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: What each part of the harness may import from the project (besides itself).
ALLOWED = {
    "harness.model": set(),
    "harness.seeds": set(),
    "harness.scenario": {"harness.model"},
    "harness.policy": {"harness.model", "policies"},
    "harness.check": {"harness.model", "harness.check"},
    "harness.sim": {"harness.model", "harness.scenario", "harness.policy", "harness.seeds", "harness.sim"},
    "policies": {"harness.policy", "harness.model", "policies"},
}


def imports_of(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return {n for n in names if n.split(".")[0] in ("harness", "policies")}


def part_of(module: str) -> str | None:
    for part in sorted(ALLOWED, key=len, reverse=True):
        if module == part or module.startswith(part + "."):
            return part
    return None


def test_no_backward_imports() -> None:
    """No module imports a later stage: the checker never sees the simulator or a policy."""
    problems = []
    for folder in ("harness", "policies"):
        for path in (ROOT / folder).rglob("*.py"):
            module = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
            part = part_of(module)
            if part is None:
                continue
            for imported in imports_of(path):
                target = part_of(imported) or imported
                if target != part and target not in ALLOWED[part]:
                    problems.append(f"{module} imports {imported}")
    assert not problems, problems
