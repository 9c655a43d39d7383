"""The grid as a Polyaxon operation: read, checked by Polyaxon's own parser, expanded by its grid manager.

``python -m harness run`` and a Polyaxon grid study run the same cells because both come from the same file:
``polyaxonfiles/grid.yaml``. Polyaxon accepts matrix keys the component does not declare and does not
type-check choice values, so both are checked here, cell by cell, against the component's inputs.
"""

from __future__ import annotations

import logging
import re
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import InputError, one_line
from harness.limits import SEED_COUNT_MAX

__all__ = ["GridFile", "GridFileError", "default_grid_file", "load_grid_file"]


class GridFileError(InputError):
    """A polyaxonfile that cannot drive the grid; one line naming the file, the field and the fix."""


@dataclass(frozen=True, slots=True)
class GridFile:
    path: Path
    #: Every cell's params, in the grid manager's order (matrix params merged with the operation's params).
    cells: tuple[dict[str, Any], ...]
    concurrency: int
    inputs: tuple[str, ...]
    #: The params the matrix varies (the others are the operation's fixed ``params``).
    matrixed: tuple[str, ...] = ()


def default_grid_file() -> Path:
    return Path(__file__).resolve().parents[2] / "polyaxonfiles" / "grid.yaml"


def _quiet_import() -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from polyaxon import polyaxonfile

    return polyaxonfile


def load_grid_file(path: Path | str) -> GridFile:
    """Check ``path`` with Polyaxon, expand its grid matrix with hypertune, and check every cell."""
    path = Path(path)
    if not path.is_file():
        raise GridFileError(f"{path}: no such file; fix: check the path")
    plx = _quiet_import()
    from hypertune.search_managers.grid_search.manager import GridSearchManager
    from polyaxon.exceptions import PolyaxonfileError

    # A hubRef without an owner makes Polyaxon log a long traceback before it raises: keep the one line.
    previous = logging.root.manager.disable
    logging.disable(logging.CRITICAL)
    try:
        operation = plx.check_polyaxonfile(polyaxonfile=str(path), is_cli=False)
    except PolyaxonfileError as exc:
        cause = exc.__cause__ or exc
        reason = _shortened(re.sub(r"<\w+\.\w+: ('[^']*')>", r"\1", one_line(cause, 4000)), 400)
        raise GridFileError(f"{path}: Polyaxon rejects it: {reason}; fix: correct the polyaxonfile") from exc
    finally:
        logging.disable(previous)

    matrix = operation.matrix
    if matrix is None or matrix.kind != "grid":
        raise GridFileError(f"{path}: field 'matrix': expected a grid matrix; fix: add 'matrix: {{kind: grid, ...}}'")
    compiled = plx.OperationSpecification.compile_operation(operation)
    inputs = tuple(io.name for io in compiled.inputs or ())
    fixed = {name: param.value for name, param in (operation.params or {}).items()}
    for key in list(matrix.params) + list(fixed):
        if key not in inputs:
            where = "matrix.params" if key in matrix.params else "params"
            raise GridFileError(
                f"{path}: field '{where}.{key}': not an input of the component; fix: use one of {', '.join(inputs)}"
            )
    for key, param in matrix.params.items():
        values = param.value if param.kind == "choice" and isinstance(param.value, list) else []
        repeated = next((v for i, v in enumerate(values) if v in values[:i]), None)
        if repeated is not None:
            raise GridFileError(
                f"{path}: field 'matrix.params.{key}': {repeated!r} is listed more than once (its cells would run "
                "twice); fix: list each value once"
            )
    required = [io.name for io in compiled.inputs or () if not io.is_optional]
    missing = [name for name in required if name not in matrix.params and name not in fixed]
    if missing:
        raise GridFileError(f"{path}: field 'matrix.params': no value for input '{missing[0]}'; fix: add it")

    # Without the matrix, validate_params really checks each cell against the inputs and their types.
    unmatrixed = compiled.model_copy(update={"matrix": None})
    cells = []
    for suggestion in GridSearchManager(config=matrix).get_suggestions():
        cell = {**fixed, **{k: (v.item() if hasattr(v, "item") else v) for k, v in suggestion.items()}}
        try:
            specs = unmatrixed.validate_params(params={k: {"value": v} for k, v in cell.items()}, is_template=False)
        except Exception as exc:
            reason = one_line(exc, 300)
            raise GridFileError(
                f"{path}: field 'matrix.params': cell {cell} is invalid: {reason}; fix: correct it"
            ) from exc
        cells.append({spec.name: spec.param.value for spec in specs})
    if not cells:
        empty = next((k for k, p in matrix.params.items() if isinstance(p.value, list) and not p.value), None)
        where = f"matrix.params.{empty}" if empty else "matrix.params"
        raise GridFileError(f"{path}: field '{where}': the grid has no cell to run; fix: give it at least one value")
    drawn = matrix.params.get("seed_count")
    for cell in cells:
        _check_seed_count(path, cell.get("seed_count"), "matrix.params" if drawn else "params", drawn and drawn.kind)
    return GridFile(
        path=path,
        cells=tuple(cells),
        concurrency=int(matrix.concurrency or 1),
        inputs=inputs,
        matrixed=tuple(matrix.params),
    )


def _shortened(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters at the end of a word, saying it was cut: Polyaxon's messages
    can list every choice, each as an enum's repr (``<V1MatrixKind.GRID: 'grid'>``, written here as ``'grid'``)."""
    if len(text) <= limit:
        return text
    return text[:limit].rpartition(" ")[0].rstrip(",;:") + " ..."


def _check_seed_count(path: Path, count: object, where: str, kind: str | None = None) -> None:
    """A cell's ``seed_count`` is a whole number of seeds within the harness's cap, as ``--seed-count`` is.
    ``kind`` is the matrix's kind of values for it, when the matrix draws it: Polyaxon's ``range``, ``linspace``
    and the like give floats, even between whole numbers."""
    if count is None:
        return
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= SEED_COUNT_MAX:
        fix = "give the number of seeds each cell runs"
        if kind not in (None, "choice") and isinstance(count, float):
            fix = (
                f"list the counts with 'kind: choice' (Polyaxon's '{kind}' gives numbers with a fraction, as {count!r})"
            )
        raise GridFileError(
            f"{path}: field '{where}.seed_count': {count!r} is not a whole number in 1..{SEED_COUNT_MAX:,}; fix: {fix}"
        )
