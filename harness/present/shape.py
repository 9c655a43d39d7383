"""What the loader reads of a case, and the one check that decides whether a file holds a case it can read.

``load()`` (``harness.present.analysis``) skips a case ``checked_case`` refuses, listing why; ``harness replay``
refuses it, with the same words, before running anything. Kept apart from the loader so that checking one case
loads no pandas.
"""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter, ValidationError
from typing_extensions import TypedDict

from harness.check.registry import METRICS, PROPERTIES
from harness.errors import wrong_field
from harness.model import SCHEMA_VERSION, CaseReport
from harness.model.events import entry_shapes

__all__ = ["INPUT_COLUMNS", "MalformedCase", "checked_case", "recovery_schema"]

INPUT_COLUMNS = ("policy", "policy_revision", "scenario", "scenario_revision", "seed", "task_id", "action_id")
_REQUIRED = ("schema_version", *INPUT_COLUMNS, "outcome", "verdict", "metrics", "unknown")
#: What a row reads of a case, with the types the report gives them and each metric's by its kind: a case of
#: another shape (a hand-edited file, a tool's own) is skipped with the field that is wrong, not made into a row
#: that breaks a table or the page. Other keys are not read, and not kept.
_READ = (*INPUT_COLUMNS, "outcome", "verdict", "checks", "unknown", "anomalies", "attempts", "reproduce", "error")
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


_JSON_TYPES = {"count": "integer", "flag": "boolean", "duration": "number"}


def recovery_schema() -> dict[str, Any]:
    """The JSON Schema of recovery.json, as strict as the harness reads one: every key present, this schema
    version, the metrics and properties by name with each metric's type, and each timeline entry an event its
    actor records, with that event's data keys (``harness replay`` and the report rebuild the records)."""
    schema = CaseReport.model_json_schema()
    fields = schema["properties"]
    schema["required"] = list(fields)  # every key is written, ``error`` as null when there is none
    fields["schema_version"] = {"const": SCHEMA_VERSION, "title": "Schema Version", "type": "integer"}
    fields["metrics"] = {
        "title": "Metrics",
        "type": "object",
        "properties": {m.name: {"type": [_JSON_TYPES[m.value], "null"]} for m in METRICS},
        "additionalProperties": False,
    }
    # A case the harness could not judge says why under "*", for every metric at once.
    fields["unknown"]["propertyNames"] = {"enum": [*(m.name for m in METRICS), "*"]}
    fields["checks"]["propertyNames"] = {"enum": [m.name for m in PROPERTIES]}
    entry = schema["$defs"]["Entry"]
    shapes = entry_shapes()
    by_actor: dict[str, list[str]] = {}
    by_name: dict[tuple[str, str], list[Any]] = {}
    for shape in shapes:
        by_actor.setdefault(shape.actor, []).append(shape.event)
        by_name.setdefault((shape.actor, shape.event), []).append(shape)
    # Per actor, the events it records and, for the one this entry names, its data: a validator reads the
    # branches of one actor only (one flat list of every event's branch took ten times as long to validate).
    entry["allOf"] = [
        {
            "if": {"properties": {"actor": {"const": actor}}},
            "then": {
                "properties": {"event": {"enum": sorted(set(events))}},
                "allOf": [
                    {
                        "if": {"properties": {"event": {"const": event}}},
                        "then": {"properties": {"data": _data_shape(by_name[(actor, event)])}},
                    }
                    for event in dict.fromkeys(events)
                    if any(shape.keys is not None for shape in by_name[(actor, event)])
                ],
            },
        }
        for actor, events in by_actor.items()
    ]
    return schema


def _data_shape(kinds: list[Any]) -> dict[str, Any]:
    """An entry's data: its keys exactly (a command's entry, whose command decides them, any keys), and where
    several record types share the event's name, the ``kind`` that tells them apart."""
    shapes = []
    for shape in kinds:
        data: dict[str, Any] = {}
        if shape.keys is not None:
            data = {"required": sorted(shape.keys), "propertyNames": {"enum": sorted(shape.keys)}}
        if shape.kind is not None:
            data["properties"] = {"kind": {"const": shape.kind}}
        shapes.append(data)
    return shapes[0] if len(shapes) == 1 else {"anyOf": shapes}
