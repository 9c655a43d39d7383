"""The history's records and the messages: each type's generated constructor and data reader do exactly what the dataclass's own
fields say, for every type, and every history the simulator writes survives the trip to a timeline and back.

The constructors and readers are generated from the field names (``harness.model.events``) because a case
builds and reads a few dozen records; these tests hold them to the plain definition: the constructor takes the
dataclass's fields as keywords with their defaults, sets each one and keeps the record frozen, and the reader
writes each field as itself, an Artifact as its four keys and a command as its own fields.
"""

from __future__ import annotations

import dataclasses
import inspect
import typing
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import Field, ValidationError

from harness.model import Artifact, CaseReport, entries, events
from harness.model.base import Frozen, Scalar, fast_frozen_init
from harness.model.commands import COMMAND_TYPES, Command, RecordEffect
from harness.model.events import EVENT_TYPES, Event, event_data
from harness.model.report import Entry
from harness.policy import builtin_policy_names
from harness.run.plan import load_grid
from harness.scenario import list_scenarios
from harness.sim import simulate
from harness.sim.messages import Reply, Request

ARTIFACT = Artifact(operation="activate_model", target="staging/fraud", model="m9", digest="sha256:99")


def _value(cls: type[Any], name: str, hint: object, i: int) -> object:
    """A value for field ``name`` that no default and no other field of the record has."""
    if hint is Artifact:
        return ARTIFACT
    if hint == Command:
        return RecordEffect(receipt_id=f"r{i}", guarded=False)
    if hint is bool or name in ("finished", "ok", "arguments_match", "guarded"):
        return True
    if name == "kind" and cls is Request:
        return "lookup"
    if name == "kind" or name in ("status", "effect", "verified"):
        return f"{name}-value"
    if hint is int:
        return 1000 + i
    if hint is float:
        return 1000.5 + i
    return f"{cls.__name__}.{name}"


def _values(cls: type[Any]) -> dict[str, object]:
    hints = typing.get_type_hints(cls, include_extras=True)
    return {f.name: _value(cls, f.name, hints[f.name], i) for i, f in enumerate(dataclasses.fields(cls))}


#: Every record type whose constructor is generated: the history's records and the messages.
GENERATED = (*EVENT_TYPES, Request, Reply)


@pytest.mark.parametrize("cls", GENERATED, ids=lambda c: c.__name__)
def test_each_constructor_takes_the_fields_as_the_dataclass_does_sets_each_and_stays_frozen(cls: type[Any]) -> None:
    parameters = list(inspect.signature(cls.__init__).parameters.values())[1:]
    fields = dataclasses.fields(cls)
    assert [p.name for p in parameters] == [f.name for f in fields]
    for p, f in zip(parameters, fields, strict=True):
        kind = inspect.Parameter.KEYWORD_ONLY if f.kw_only else inspect.Parameter.POSITIONAL_OR_KEYWORD
        assert p.kind is kind, f.name
        expected = inspect.Parameter.empty if f.default is dataclasses.MISSING else f.default
        assert p.default == expected, f.name

    values = _values(cls)
    record = cls(**values)
    assert {f.name: getattr(record, f.name) for f in fields} == values
    first = fields[0].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(record, first, values[first])
    required = [f.name for f in fields if f.default is dataclasses.MISSING]
    if required:
        with pytest.raises(TypeError):
            cls(**{k: v for k, v in values.items() if k != required[-1]})
    if any(f.kw_only for f in fields):
        with pytest.raises(TypeError):
            cls(*values.values())  # positional arguments are refused, as the keyword-only dataclass refuses them
    else:
        assert cls(*values.values()) == record
    # Defaults are what the dataclass declares.
    bare = cls(**{k: values[k] for k in required})
    assert all(getattr(bare, f.name) == f.default for f in fields if f.default is not dataclasses.MISSING)


def test_only_frozen_slotted_dataclasses_without_factories_get_a_generated_constructor() -> None:
    @dataclasses.dataclass(frozen=True)
    class NoSlots:
        x: int

    @dataclasses.dataclass(slots=True)
    class Mutable:
        x: int

    @dataclasses.dataclass(frozen=True, slots=True)
    class Factory:
        x: list[int] = dataclasses.field(default_factory=list)

    @dataclasses.dataclass(frozen=True, slots=True)
    class Derived:
        x: int
        y: int = dataclasses.field(init=False, default=0)

    @dataclasses.dataclass(frozen=True, slots=True)
    class Checked:
        x: int

        def __post_init__(self) -> None:  # a generated constructor would skip it
            if self.x < 0:
                raise ValueError(self.x)

    for cls in (NoSlots, Mutable, Factory, Derived, Checked, int):
        with pytest.raises(TypeError, match=cls.__name__):
            fast_frozen_init(cls)
    with pytest.raises(ValueError):
        Checked(-1)  # left as it was


def _reference_data(event: Event) -> dict[str, Any]:
    """A record's ``data`` written the plain way: a loop over its fields."""
    hints = typing.get_type_hints(type(event), include_extras=True)
    data: dict[str, Any] = {}
    for f in dataclasses.fields(event):
        if f.name in ("index", "at_s"):
            continue
        value = getattr(event, f.name)
        if hints[f.name] is Artifact:
            data.update(value.model_dump())
        elif hints[f.name] == Command:
            # A retry's lease, added later, is left out unset: the evidence reads as it did before it.
            dumped = value.model_dump(mode="json")
            data.update({k: v for k, v in dumped.items() if not (k == "send_by_s" and v is None)})
        else:
            data[f.name] = value
    return data


@pytest.mark.parametrize("cls", EVENT_TYPES, ids=lambda c: c.__name__)
def test_each_reader_writes_every_field_in_order(cls: type[Event]) -> None:
    record = cls(**_values(cls))  # type: ignore[arg-type]
    data = event_data(record)
    assert data == _reference_data(record)
    assert list(data) == list(_reference_data(record))  # key order is part of recovery.json's bytes


def test_every_shipped_history_survives_the_timeline_and_back() -> None:
    """Every record of every history the shipped policies and scenarios produce, written as a timeline entry and
    read back, is the record it was (its index and time included), and its data is the plain reading of it."""
    seen: set[type[Event]] = set()
    commands: set[type[object]] = set()
    for case in load_grid(builtin_policy_names(), list_scenarios(), [1]).cases:
        history = simulate(case.scenario, case.policy, case.seed).evidence.history
        assert events(entries(history)) == history, (case.policy.name, case.scenario.name)
        for record in history:
            assert event_data(record) == _reference_data(record)
            seen.add(type(record))
            command = getattr(record, "command", None)
            if command is not None:
                commands.add(type(command))
    # The shipped cases write most record types and every command a shipped policy gives, so the trip was made by
    # records of every layout: plain, with an Artifact, and with a command.
    assert len(seen) > len(EVENT_TYPES) // 2
    assert len(commands) >= len(COMMAND_TYPES) - 3


class _DeclaredEntry(Frozen):
    """``Entry`` as it was declared before its data was serialized by each value's own type."""

    index: int
    at_s: float
    actor: str
    event: str
    data: dict[str, Scalar] = Field(default_factory=dict)


_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([0.0, -0.0, 5.0, 1e-07, 1e-05, 0.0001, 1e16, 123456.000001]),
    st.text(max_size=12),
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(max_size=8), _SCALARS, max_size=6), st.floats(0, 1e6, allow_nan=False))
def test_a_timeline_entrys_data_is_written_as_its_declared_type_writes_it(data: dict[str, Scalar], at_s: float) -> None:
    """``InferredOnOutput`` changes how ``Entry.data`` is serialized, not what: the same bytes as the union of
    scalars the field declares, for any scalars (bools, ints, floats in and out of exponent notation, texts), in
    recovery.json's indented form and the compact records' one line."""
    ours = Entry(index=3, at_s=at_s, actor="worker", event="send", data=data)
    declared = _DeclaredEntry(index=3, at_s=at_s, actor="worker", event="send", data=data)
    assert ours.model_dump_json() == declared.model_dump_json()
    assert ours.model_dump_json(indent=2) == declared.model_dump_json(indent=2)


def test_a_report_validates_and_describes_its_scalar_maps_as_declared() -> None:
    """Serialized by each value's own type, the maps of scalars are still validated as declared (a list in a
    timeline entry's data, a text as a metric, are refused) and the JSON schema still names their scalars."""
    with pytest.raises(ValidationError):
        Entry(index=0, at_s=0.0, actor="worker", event="send", data={"n": [1]})  # type: ignore[dict-item]
    report = CaseReport.model_json_schema()
    scalars = [{"type": t} for t in ("string", "integer", "number", "boolean", "null")]
    assert report["$defs"]["Entry"]["properties"]["data"]["additionalProperties"] == {"anyOf": scalars}
    assert report["properties"]["metrics"]["additionalProperties"] == {
        "anyOf": [{"type": "integer"}, {"type": "number"}, {"type": "boolean"}, {"type": "null"}]
    }
    assert report["properties"]["claimed"]["additionalProperties"] == {"anyOf": scalars}
    with pytest.raises(ValidationError):
        CaseReport.model_validate({**_minimal_report(), "metrics": {"dispatches": "three"}})


def _inferred(schema: object, path: str = "") -> set[str]:
    """The paths, in a pydantic core schema, of the schemas serialized by inference (``{"type": "any"}``)."""
    found: set[str] = set()
    if isinstance(schema, dict):
        if schema.get("serialization") == {"type": "any"}:
            found.add(path)
        for key, value in schema.items():
            found |= _inferred(value, f"{path}/{key}")
    elif isinstance(schema, list):
        for i, value in enumerate(schema):
            found |= _inferred(value, f"{path}[{i}]")
    return found


def test_the_reports_maps_of_scalars_reach_pydantics_serializer_as_inferred() -> None:
    """What ``InferredOnOutput`` is for (a report written a quarter faster) reaches the serializer pydantic builds:
    the timeline entries' data, the metrics and the claim, and nothing else of a report, are serialized by
    inference. (The bytes are the same either way, so this is what tells the marker is in force.)"""
    fields = [p.split("/fields/")[-1].split("/")[0] for p in _inferred(CaseReport.__pydantic_core_schema__)]
    assert sorted(fields) == ["claimed", "data", "metrics"]


def _minimal_report() -> dict[str, Any]:
    return {
        "harness_version": "0",
        "scenario": "s",
        "scenario_revision": "1",
        "policy": "p",
        "policy_revision": "1",
        "seed": 1,
        "task_id": "t",
        "action_id": "a",
        "attempts": [],
        "outcome": "correct",
        "verdict": "true",
        "metrics": {},
        "unknown": {},
        "checks": {},
        "anomalies": [],
        "claimed": {},
        "timeline": [],
        "reproduce": "r",
    }
