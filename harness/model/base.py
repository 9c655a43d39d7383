"""The vocabulary every stage shares: scalar types, verdicts, outcomes, and the frozen record base."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable, Iterable
from typing import Any, Literal, Self, TypeVar, cast

from pydantic import BaseModel, ConfigDict, GetCoreSchemaHandler
from pydantic_core import CoreSchema, core_schema

__all__ = [
    "CONCLUSIVE_READS",
    "FAILING",
    "OUTCOMES",
    "PASSING",
    "UNCERTAIN_REPLIES",
    "Actor",
    "Frozen",
    "InferredOnOutput",
    "MetricValue",
    "Outcome",
    "RequestKind",
    "Scalar",
    "Verdict",
    "compiled",
    "conclusive",
    "fast_frozen_init",
]

Scalar = str | int | float | bool | None
MetricValue = int | float | bool | None

#: Who recorded an entry. ``injector`` records faults in the same history as the operations they disturb;
#: ``connector`` (a device connector, seed 000) and ``bridge`` (a client-to-tool-server bridge, seed 002) stand
#: between the caller and the destination when a scenario puts them there.
Actor = Literal["worker", "transport", "connector", "bridge", "destination", "controller", "operator", "injector"]

#: What a request asks: a side effect (``dispatch``) or one of the reads: the target's durable result
#: (``lookup``), a connector job's status (``follow_job``), or a verification of the original expectation
#: through the bridge (``verify``).
RequestKind = Literal["dispatch", "lookup", "follow_job", "verify"]

#: Dispatch replies that tell the caller its outcome is uncertain (an intermediary's connection error marked
#: "do not replay", a connector's unknown outcome): automatic retries stop until a read settles it.
UNCERTAIN_REPLIES = frozenset({"connection_error", "unknown_outcome"})
#: Read answers that settle an outcome: a receipt's status, an absence, or a verification's comparison.
CONCLUSIVE_READS = frozenset({"applied", "rejected", "absent", "confirmed", "refuted"})


def conclusive(kind: RequestKind, status: str | None) -> bool:
    """Whether a read's answer settles the outcome at the target. A connector's "absent" says only that its own
    ledger holds no record (it may have lost one), so it settles nothing."""
    return kind != "dispatch" and status in CONCLUSIVE_READS and not (kind == "follow_job" and status == "absent")


#: Jepsen-style verdicts: composing them, false beats unknown beats true.
Verdict = Literal["true", "false", "unknown"]

#: Best first. ``correct``: no violation, every action accounted for by the deadline. ``escalated``: no
#: violation, and each action left unaccounted for was handed to its owner in time. ``unresolved``: no
#: violation witnessed, but the evidence cannot decide one (see ``unknown``). ``abandoned``: an action was
#: neither accounted for nor escalated by the deadline. ``incorrect``: another safety violation is witnessed.
#: ``harness_error``: the harness itself failed.
Outcome = Literal["correct", "escalated", "unresolved", "abandoned", "incorrect", "harness_error"]
OUTCOMES: tuple[Outcome, ...] = ("correct", "escalated", "unresolved", "abandoned", "incorrect", "harness_error")
#: The outcomes that pass the gate: no violation, and every action accounted for (``correct``) or, where it
#: could not be, escalated to its owner in time (``escalated``). ``unresolved`` fails: the evidence could not
#: decide a safety property, so the case has not been shown safe.
PASSING: frozenset[Outcome] = frozenset({"correct", "escalated"})
#: The outcomes a policy fails by, worst first (``harness_error`` is the harness failing, not the policy).
FAILING: tuple[Outcome, ...] = tuple(o for o in reversed(OUTCOMES) if o not in PASSING and o != "harness_error")


class InferredOnOutput:
    """``Annotated[T, InferredOnOutput]``: a field validated as ``T`` and serialized as each value's own type says.

    For the collections of scalars a report holds by the dozen (each timeline entry's ``data``, the metrics):
    pydantic's serializer for ``dict[str, str | int | float | bool | None]`` tries the union's members on every
    value, and writes the same text as serializing each value for what it is, which takes about a third less time
    (a ``recovery.json``'s timeline: 15 us against 11). Validation and the JSON schema are ``T``'s, unchanged.
    ``tests/test_records.py`` holds the text to the declared type's for any scalars, and holds the marker in force
    (a misspelt one keeps the bytes and loses only the speed).
    """

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        schema: dict[str, Any] = {**handler(source), "serialization": core_schema.simple_ser_schema("any")}
        return cast("CoreSchema", schema)


class Frozen(BaseModel):
    """Base for every validated record: immutable, and unknown fields are an error rather than silently kept."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    @classmethod
    def trusted(cls, **values: object) -> Self:
        """Build from values that are already checked and of the right types, every field given, in order.

        For the simulation's hot path (a Situation per decision, a timeline entry per record): pydantic's
        ``model_construct`` costs about 8 us, validation more; this costs under 1 us. Anything that comes from
        outside (a scenario file, a policy's command, a saved recovery.json) is validated, never built this way.
        """
        model = _new(cls)
        _set_dict(model, values)
        parts = _CLASS_PARTS.get(cls)
        if parts is None:
            parts = _CLASS_PARTS[cls] = (
                set(cls.model_fields),
                {k: a.get_default() for k, a in cls.__private_attributes__.items()},
            )
        every_field, private = parts
        # Every field given (as the hot path gives them): the class's one set of all its field names serves every
        # record, read only (the record is frozen, and pydantic's copies copy the set before changing it).
        _set_fields_set(model, every_field if len(values) == len(every_field) else set(values))
        _set_extra(model, None)
        _set_private(model, dict(private) if private else None)
        return model

    def __eq__(self, other: object) -> bool:
        """Pydantic's equality, after a test of identity: most records a case compares are one object (the task's
        artifact reaches the receipt, the ledger and the completion unchanged), and pydantic's own comparison
        goes through the type, the private and extra attributes and every field to say so."""
        return self is other or super().__eq__(other)

    def replaced(self, **changes: object) -> Self:
        """A copy with ``changes``, built as ``trusted`` is: for the hot path's own records only."""
        return self.trusted(**{**self.__dict__, **changes})


_new = object.__new__
# BaseModel's own slots, written through their descriptors: the same as ``object.__setattr__`` with the slot's
# name, without looking the name up along the class's bases each time (half of what a record cost).
_set_dict = BaseModel.__dict__["__dict__"].__set__
_set_fields_set = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
_set_private = BaseModel.__dict__["__pydantic_private__"].__set__
#: Each class's set of all its field names, and its private attributes with their defaults (most have none),
#: looked up once per class.
_CLASS_PARTS: dict[type[Frozen], tuple[set[str], dict[str, object]]] = {}


def compiled(source: str, namespace: dict[str, Any], name: str, qualname: str) -> Any:
    """The function ``name`` that ``source`` defines, as dataclasses builds its methods. ``source`` is generated
    from a class's own field names, never from input: code written for one class runs faster than a loop over
    its fields."""
    exec(source, namespace)
    function = namespace[name]
    function.__qualname__ = qualname
    return function


def fast_frozen_init(cls: type[Any]) -> None:
    """Give the frozen, slotted dataclass ``cls`` a constructor that writes each slot through its own descriptor.

    The same signature and the same frozen record as the dataclass's own ``__init__``, which sets every field
    through ``object.__setattr__`` (a lookup of the name along the class's bases each time): a record of five
    fields is built in about two thirds of the time. For the records a case builds by the dozen (the history's,
    the messages); tests/test_records.py holds every one to its dataclass definition. Fields with a default
    factory, ``init=False`` or ``__post_init__`` are not supported, and refused.
    """
    params = getattr(cls, "__dataclass_params__", None)
    if params is None or not params.frozen or "__slots__" not in cls.__dict__:
        raise TypeError(f"{cls.__name__} is not a frozen dataclass with slots")
    if hasattr(cls, "__post_init__"):
        raise TypeError(f"{cls.__name__} has __post_init__")
    namespace: dict[str, Any] = {}
    positional: list[str] = []
    keywords: list[str] = []
    body: list[str] = []
    for f in dataclasses.fields(cls):
        if not f.init or f.default_factory is not dataclasses.MISSING:
            raise TypeError(f"{cls.__name__}.{f.name}: a default factory or init=False")
        param = f.name
        if f.default is not dataclasses.MISSING:
            namespace[f"_default_{f.name}"] = f.default
            param = f"{f.name}=_default_{f.name}"
        (keywords if f.kw_only else positional).append(param)
        namespace[f"_set_{f.name}"] = getattr(cls, f.name).__set__
        body.append(f"    _set_{f.name}(self, {f.name})")
    signature = ", ".join(["self", *positional, *(["*", *keywords] if keywords else [])])
    source = f"def __init__({signature}):\n" + "\n".join(body)
    cls.__init__ = compiled(source, namespace, "__init__", f"{cls.__qualname__}.__init__")


F = TypeVar("F")


def part_findings(findings: Iterable[F], key: Callable[[F], Hashable], kept: Callable[[F], str | None]) -> list[F]:
    """What one part of an exploration (a ``--shard``, run apart from the others) writes, of its ``findings`` given in
    the order they were first seen, so that ``needed_findings`` over every part's gives what it gives over every
    copy at once: of a finding shrinking reached for any violation here (``kept`` None), its first copy (the
    caller marks it so); of one reached here only keeping one property, its first copy keeping each. A part
    cannot choose for itself: a copy it would leave out as showing nothing new (what it kept is shown by another
    of its findings) is needed once another part's copies are counted, when that other finding is not written
    (the whole's choice shows the property by an earlier copy of its own, or not at all)."""
    ordered = list(findings)
    anyway = {key(f) for f in ordered if kept(f) is None}
    out, taken = [], set()
    for f in ordered:
        mark = (key(f), None if key(f) in anyway else kept(f))
        if mark not in taken:
            taken.add(mark)
            out.append(f)
    return out


def needed_findings(
    findings: Iterable[F],
    key: Callable[[F], Hashable],
    group: Callable[[F], Hashable],
    kept: Callable[[F], str | None],
    properties: Callable[[F], Iterable[str]],
) -> list[F]:
    """The findings worth showing, of ``findings`` given in the order they were first seen, copies of one finding
    (one ``key``, from several parts of an exploration, or shrunk keeping several properties) included: each at
    most once. One that shrinking for any violation reached in some copy (``kept`` None) is shown at its first
    copy, and what that copy violates counts as shown; of those shrinking reached only keeping one property, a
    copy is shown when no finding of its ``group`` (a policy and a template) shown before it shows the property
    it kept. Decided over every part's findings at once, so that the result does not depend on how the
    schedules were split among processes (each part alone would decide otherwise); and deciding again over what
    it returns (with ``kept`` None for each finding any copy of which had it None) returns the same."""
    ordered = list(findings)
    first: dict[Hashable, F] = {}
    for f in ordered:
        first.setdefault(key(f), f)
    anyway = {key(f) for f in ordered if kept(f) is None}
    shown: dict[Hashable, set[str]] = {}
    for k in anyway:
        shown.setdefault(group(first[k]), set()).update(properties(first[k]))
    needed, written = [], set()
    for f in ordered:
        if key(f) in written:
            continue
        if key(f) not in anyway:
            seen = shown.setdefault(group(f), set())
            if kept(f) in seen:
                continue
            seen.update(properties(f))
        written.add(key(f))
        needed.append(f)
    return needed
