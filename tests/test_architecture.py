"""The import arrows point one way, in the source and at run time, for every module of the harness.

model <- scenario, policy <- sim; model <- check; check.registry <- plx, present; everything <- run <- explore <- gate
<- cli.
The checker never sees the simulator or a policy; the lower layers load no simpy, pandas, matplotlib or
Polyaxon when imported; ``harness list`` starts without pandas, matplotlib or Polyaxon.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

_BASE = {"harness.version", "harness.errors", "harness.limits"}
#: What each part of the harness may import from the project (besides itself).
ALLOWED: dict[str, set[str]] = {
    "harness": {"harness.version"},
    "harness.__main__": {"harness.cli"},
    "harness.version": set(),
    "harness.errors": set(),
    "harness.limits": set(),
    "harness.seeds": set(),
    "harness.model": {"harness.limits"},
    "harness.scenario": {"harness.model", *_BASE},
    "harness.policy": {"harness.model", "policies", *_BASE},
    "harness.check": {"harness.model"},
    "harness.sim": {"harness.model", "harness.scenario", "harness.policy", "harness.seeds", "harness.limits"},
    "harness.plx": {"harness.model", "harness.check", *_BASE},
    "harness.present": {"harness.model", "harness.check", "harness.scenario", *_BASE},
    "harness.run": {
        "harness.model",
        "harness.scenario",
        "harness.policy",
        "harness.seeds",
        "harness.sim",
        "harness.check",
        "harness.plx",
        "harness.present",
        *_BASE,
    },
    "harness.explore": {
        "harness.model",
        "harness.scenario",
        "harness.policy",
        "harness.seeds",
        "harness.sim",
        "harness.check",
        "harness.run",
        "harness.plx",
        *_BASE,
    },
    "harness.gate": {
        "harness.model",
        "harness.scenario",
        "harness.policy",
        "harness.seeds",
        "harness.run",
        "harness.explore",
        *_BASE,
    },
    "harness.cli": {
        "harness.gate",
        "harness.explore",
        "harness.model",
        "harness.scenario",
        "harness.policy",
        "harness.seeds",
        "harness.run",
        "harness.plx",
        "harness.present",
        *_BASE,
    },
    "policies": {"harness.policy", "harness.model"},
}


def _type_checking_only(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"


def imports_of(path: Path) -> set[str]:
    """Every project module ``path`` imports at run time (``if TYPE_CHECKING:`` blocks never run)."""
    names: set[str] = set()
    tree = ast.parse(path.read_text())
    skipped = {id(n) for block in ast.walk(tree) if _type_checking_only(block) for n in ast.walk(block)}
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
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


def modules() -> list[tuple[str, Path]]:
    found = []
    for folder in ("harness", "policies"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            found.append((".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"), path))
    return found


def test_every_module_belongs_to_a_part() -> None:
    """No module escapes the rules: each one is in a part with declared imports."""
    assert [m for m, _ in modules() if part_of(m) is None] == []


def test_no_backward_imports() -> None:
    """No module imports a later stage: the checker never sees the simulator or a policy."""
    problems = []
    for module, path in modules():
        part = part_of(module)
        assert part is not None
        for imported in imports_of(path):
            target = part_of(imported) or imported
            if target != part and target not in ALLOWED[part]:
                problems.append(f"{module} imports {imported}")
    assert not problems, problems


HEAVY = ("simpy", "pandas", "matplotlib", "polyaxon")


def loaded_by(code: str) -> set[str]:
    """The top-level packages and harness modules loaded by running ``code`` in a fresh interpreter."""
    probe = f"{code}\nimport sys\nprint(' '.join(sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, check=True)
    return set(out.stdout.split())


@pytest.mark.parametrize(
    ("module", "forbidden"),
    [
        ("harness.model", (*HEAVY, "harness.scenario", "harness.policy", "harness.sim", "harness.check")),
        ("harness.scenario", (*HEAVY, "harness.sim", "harness.check", "harness.run")),
        ("harness.policy", (*HEAVY, "harness.sim", "harness.check", "harness.run")),
        ("harness.check", (*HEAVY, "harness.sim", "harness.run", "harness.policy")),
        ("harness.sim", ("pandas", "matplotlib", "polyaxon", "harness.check", "harness.run")),
        ("harness.version", ("pydantic", "harness.model")),
    ],
)
def test_lower_layers_load_nothing_above_them(module: str, forbidden: tuple[str, ...]) -> None:
    """Importing a layer loads no heavy library it does not use and no module of a higher layer."""
    loaded = loaded_by(f"import {module}")
    hit = sorted(m for m in loaded if any(m == f or m.startswith(f + ".") for f in forbidden))
    assert not hit, hit


def test_list_loads_no_pandas_matplotlib_or_polyaxon() -> None:
    """`harness list` starts without the libraries only the grid, the report and tracking need, and without the
    checker, the simulator and the tracking module (the command line's tracking options come from harness.plx)."""
    code = (
        "import contextlib, io, sys\nfrom harness.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n    assert main(['list']) == 0"
    )
    loaded = loaded_by(code)
    assert not {m.split(".")[0] for m in loaded} & {"pandas", "matplotlib", "polyaxon"}
    assert not sorted(m for m in loaded if m.startswith(("harness.check", "harness.sim", "harness.plx.")))
