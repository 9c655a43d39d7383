"""What the loader reads of a case, and the one check that decides whether a file holds a case it can read.

``load()`` (``harness.present.analysis``) skips a case ``checked_case`` refuses, listing why; ``harness replay``
refuses it, with the same words, before running anything. Kept apart from the loader so that checking one case
loads no pandas.
"""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter, ValidationError
from typing_extensions import TypedDict

from harness.check.registry import METRICS
from harness.errors import wrong_field
from harness.model import SCHEMA_VERSION, CaseReport

__all__ = ["INPUT_COLUMNS", "MalformedCase", "checked_case"]

INPUT_COLUMNS = ("policy", "policy_revision", "scenario", "scenario_revision", "seed", "task_id", "action_id")
_REQUIRED = ("schema_version", *INPUT_COLUMNS, "outcome", "verdict", "metrics", "unknown")
#: What a row reads of a case, with the types the report gives them and each metric's by its kind: a case of
#: another shape (a hand-edited file, a tool's own) is skipped with the field that is wrong, not made into a row
#: that breaks a table or the page. Other keys are not read, and not kept.
_READ = (*INPUT_COLUMNS, "outcome", "verdict", "unknown", "anomalies", "attempts", "reproduce", "error")
_VALUE_TYPES: dict[str, type] = {"count": int, "flag": bool, "duration": float}
_Metrics = TypedDict(  # type: ignore[misc]
    "_Metrics", {m.name: _VALUE_TYPES[m.value] | None for m in METRICS}, total=False
)
_SHAPE: TypeAdapter[dict[str, Any]] = TypeAdapter(
    TypedDict(  # type: ignore[operator]
        "_Case",
        {"metrics": _Metrics, **{name: CaseReport.model_fields[name].annotation for name in _READ}},
        total=False,
    )
)


class MalformedCase(ValueError):
    """A case the loader does not read; the message says why in one phrase (``malformed: field 'seed': ...``)."""


def checked_case(data: object) -> dict[str, Any]:
    """``data`` (a parsed recovery.json or compact record) as the loader reads it: the keys a row reads, typed.
    Raises ``MalformedCase`` for another schema version, a missing key, or a value of the wrong type."""
    if not isinstance(data, dict) or data.get("schema_version") != SCHEMA_VERSION:
        version = data.get("schema_version") if isinstance(data, dict) else None
        raise MalformedCase(f"schema_version {version!r}, expected {SCHEMA_VERSION}")
    missing = [key for key in _REQUIRED if key not in data]
    if missing:
        raise MalformedCase(f"missing keys: {', '.join(missing)}")
    try:
        return _SHAPE.validate_python(data)
    except ValidationError as exc:
        raise MalformedCase(f"malformed: {wrong_field(exc)}") from None
