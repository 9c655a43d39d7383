"""The words of a validation error, in the terms of the user's file rather than pydantic's.

Pydantic locates an error by its own path through the models: a tagged list entry's path holds the entry's tag
(``faults.0.response_lost.nth``), which the file does not. It also reports what it was given, not what the user
wrote: YAML 1.1 reads ``1e3`` as text and ``1`` as a number. These helpers walk the models along the error's path
(so nothing here names a field by hand) to give the path as the file has it, whether the value there is a secret,
where a key put at the wrong level belongs, and how to write a value so that YAML reads it as the type the field
wants.

A fix never quotes a value back as pydantic got it: that is YAML's reading, not the user's text (``1.10`` reaches
pydantic as 1.1, ``010`` as 8, ``12:30`` as 750), and a secret's value must never be shown at all.
"""

from __future__ import annotations

import datetime
import math
import re
import types
from collections.abc import Callable, Collection, Sequence
from decimal import Decimal, InvalidOperation
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, Secret, SecretBytes, SecretStr, TypeAdapter, ValidationError
from pydantic.fields import FieldInfo
from yaml.nodes import ScalarNode
from yaml.representer import SafeRepresenter
from yaml.resolver import Resolver

from harness.scenario.yamlfile import shown

__all__ = [
    "BOUND_ERRORS",
    "Located",
    "bound_broken",
    "entry_of",
    "is_secret",
    "locate",
    "number_fix",
    "placement_fix",
    "quote_fix",
]

Loc = tuple[int | str, ...]
#: The models met along a path, each with its path in the user's file (the root's is ``()``).
Located = list[tuple[Loc, type[BaseModel]]]


def entry_of(path: Loc, models: Located) -> type[BaseModel] | None:
    """The model of the entry whose key ``path`` ends with (the last model located, when ``path`` is a key of it),
    or ``None``: the path ends at a list's index, or beyond the entries located."""
    if not path or not isinstance(path[-1], str) or not models or models[-1][0] != path[:-1]:
        return None
    return models[-1][1]


def _model(kind: object) -> type[BaseModel] | None:
    """The model ``kind`` is, optional or not; ``None`` when it is no model."""
    if get_origin(kind) in (Union, types.UnionType):
        members = [k for k in get_args(kind) if k is not type(None)]
        kind = members[0] if len(members) == 1 else None
    return kind if isinstance(kind, type) and issubclass(kind, BaseModel) else None


def _tagged(kind: object) -> dict[str, type[BaseModel]] | None:
    """For a tagged union (``Annotated[A | B, Field(discriminator=...)]``): each member by its tag; else ``None``."""
    if get_origin(kind) is not Annotated:
        return None
    union, *metadata = get_args(kind)
    tag = next((m.discriminator for m in metadata if isinstance(m, FieldInfo) and m.discriminator), None)
    if not isinstance(tag, str):
        return None
    members: dict[str, type[BaseModel]] = {}
    for member in get_args(union):
        if isinstance(member, type) and issubclass(member, BaseModel) and tag in member.model_fields:
            for value in get_args(member.model_fields[tag].annotation):
                members[str(value)] = member
    return members


def _walk(root: type[BaseModel], loc: Sequence[int | str]) -> tuple[Loc, Located, list[object]]:
    """``locate``'s path and models, and the type at each step of ``loc`` (``None`` past where the models end)."""
    path: list[int | str] = []
    models: Located = [((), root)]
    kind: object = root
    kinds: list[object] = []
    for part in loc:
        members = _tagged(kind)
        if members is not None and str(part) in members:
            kind = members[str(part)]  # the tag: in the entry, not in its path
            models.append((tuple(path), kind))
            continue
        path.append(part)
        model = _model(kind)
        if model is not None and isinstance(part, str) and part in model.model_fields:
            kind = model.model_fields[part].annotation
        elif get_origin(kind) in (tuple, list) and isinstance(part, int):
            kind = get_args(kind)[0]
        else:
            kind = None
        kinds.append(kind)
        inner = _model(kind)
        if inner is not None:
            models.append((tuple(path), inner))
    return tuple(path), models, kinds


def locate(root: type[BaseModel], loc: Sequence[int | str]) -> tuple[Loc, Located]:
    """The path in the user's file that pydantic's ``loc`` stands for (each tagged union's tag, which pydantic puts
    after the entry's index, dropped), and the models along it, from ``root``, each with its path in the file."""
    path, models, _ = _walk(root, loc)
    return path, models


_SECRETS = (Secret, SecretStr, SecretBytes)


def _holds_secret(kind: object) -> bool:
    """Whether the type ``kind`` is a secret or is made of one (``SecretStr | None``, ``list[Secret[int]]``)."""
    if isinstance(kind, type) and issubclass(kind, _SECRETS):
        return True
    origin = get_origin(kind)
    if isinstance(origin, type) and issubclass(origin, _SECRETS):
        return True
    return any(_holds_secret(arg) for arg in get_args(kind))


def allows_null(root: type[BaseModel], loc: Sequence[int | str]) -> bool:
    """Whether the field at pydantic's ``loc`` may be null (``float | None``): its fix may say so."""
    kinds = _walk(root, loc)[2]
    return bool(kinds) and type(None) in get_args(kinds[-1])


def is_secret(root: type[BaseModel], loc: Sequence[int | str]) -> bool:
    """Whether pydantic's ``loc`` is at or inside a field whose type is a secret: its value must not be shown."""
    return any(_holds_secret(kind) for kind in _walk(root, loc)[2])


def _dotted(path: Loc) -> str:
    return ".".join(str(part) for part in path)


def _place(path: Loc) -> str:
    if not path:
        return "to the top level"
    if isinstance(path[-1], int):  # a list entry: it has no key of its own to write the setting under
        return f"into the entry '{_dotted(path)}'"
    if len(path) == 1:
        return f"under '{path[0]}:'"
    return f"under '{path[-1]}:' in '{_dotted(path[:-1])}'"


def _given(at: Loc, model: type[BaseModel], name: str, path: Loc, missing: Collection[Loc]) -> bool:
    """Whether the entry at ``at`` (one that encloses ``path``) has ``name`` already: the path goes through it, or
    it is a required field pydantic did not find missing."""
    here = (*at, name)
    return path[: len(here)] == here or (model.model_fields[name].is_required() and here not in missing)


def placement_fix(path: Loc, models: Located, missing: Collection[Loc] = ()) -> str | None:
    """For a key that is not a field of its entry (``path`` ends with it): where it belongs when it is a field of
    a section of that entry (``recoverers`` at the top level belongs under ``worker:``), or of an enclosing entry or
    one of its sections (``recovery_deadline_s`` in ``worker:`` belongs at the top level); the nearest level wins.
    An enclosing entry that has the key already is no place for it, nor is anywhere farther out (a second ``do:``
    in an operator event's trigger is one too many, not one misplaced): ``None`` then. A section that has it already
    is no place to move it to either (``model`` at the top level, beside ``task:``'s own): the fix says to change
    it there instead. ``missing`` holds the paths (in the file) of the required fields pydantic found missing, so
    any other required field is known to be set; an optional one is known to be set only where the path goes
    through it."""
    if entry_of(path, models) is None:
        return None
    name = str(path[-1])
    for depth in range(len(models) - 1, -1, -1):
        at, model = models[depth]
        enclosing = depth < len(models) - 1 and name in model.model_fields
        places: list[Loc] = [at] if enclosing and not _given(at, model, name, path, missing) else []
        taken: list[Loc] = []
        for field, info in model.model_fields.items():
            section = _model(info.annotation)
            place = (*at, field)
            if section is not None and name in section.model_fields and place != path[: len(place)]:
                (taken if _given(place, section, name, path, missing) else places).append(place)
        if places:
            return "move it " + " or ".join(_place(place) for place in places)
        if enclosing:
            return None
        if taken:
            return "remove it, or change it " + " or ".join(_place(place) for place in taken) + ", which has it already"
    return None


_TEXT = "tag:yaml.org,2002:str"
_FLOAT = "tag:yaml.org,2002:float"
_EXPONENT = re.compile(r"\s*([-+]?[0-9_]*)(\.[0-9_]*)?[eE]([-+]?)([0-9_]+)\s*")


def _plain_tag(text: str) -> str:
    """The type YAML gives ``text`` written without quotes."""
    resolver: Any = Resolver()  # PyYAML's stubs leave resolve untyped
    return str(resolver.resolve(ScalarNode, text, (True, False)))


def number_fix(
    error_type: str, value: object, bound: Callable[[float | int], str | None] = lambda _: None
) -> str | None:
    """For text where a number belongs that Python reads as a number but YAML, unquoted, does not (``1e3``: YAML
    1.1 wants a dot and a signed exponent): how to write it so that YAML reads a number. ``None`` for any other
    value, and for text YAML would read as a number without its quotes (the usual fix, drop them, holds).
    ``bound`` says which of the field's bounds a number breaks (see ``bound_broken``): written as a number, the
    value would be refused again, so the fix names the bound instead."""
    if not isinstance(value, str) or _plain_tag(value) != _TEXT:
        return None
    try:
        number = float(value)
        exact = Decimal(value.strip())
    except (ValueError, InvalidOperation):
        return None
    if not math.isfinite(number) or (number == 0) != exact.is_zero():
        return None  # too large or too small for a float (1e400, 1e-400): no number to write would load as written
    written = shown(value.strip(), 40)
    broken = bound(int(exact) if error_type == "int_type" and exact == exact.to_integral_value() else number)
    if broken is not None:
        return f"give a number {broken}, written so that YAML reads a number ({written} is read as text)"
    if error_type == "int_type":
        # Exactly as written (1e30 is 10**30, not the float's 1000000000000000019884624838656); a whole number of
        # more digits than a float's range is refused above.
        return f"write {int(exact)} (YAML reads {written} as text)" if exact == exact.to_integral_value() else None
    forms = [str(SafeRepresenter().represent_float(number).value)]
    exponent = _EXPONENT.fullmatch(value)
    if exponent is not None:
        whole, fraction, sign, digits = exponent.groups()
        repaired = f"{whole or '0'}{fraction or '.0'}e{sign or '+'}{digits}"
        if _plain_tag(repaired) == _FLOAT and repaired not in forms:
            forms.append(repaired)
    return f"write {' or '.join(forms)} (YAML reads {written} as text)"


#: Pydantic's error types for a number out of its field's range.
BOUND_ERRORS = frozenset({"greater_than", "greater_than_equal", "less_than", "less_than_equal"})


def bound_broken(root: type[BaseModel], loc: Sequence[int | str], number: float | int) -> str | None:
    """The bound of the field at pydantic's ``loc`` that ``number`` breaks (``less than or equal to 86400``), or
    ``None`` when it breaks none (or the field is not one with bounds to check)."""
    path, models, _ = _walk(root, loc)
    entry = entry_of(path, models)
    if entry is None:
        return None
    info = entry.model_fields.get(str(path[-1]))
    if info is None:
        return None
    # The field's own constraints (Field(le=...)) are in its metadata, which may be empty (the bounds in its type).
    kind: Any = Annotated[info.annotation, *info.metadata] if info.metadata else info.annotation
    try:
        TypeAdapter(kind).validate_python(number)
    except ValidationError as exc:
        error = exc.errors()[0]
        if error["type"] in BOUND_ERRORS:
            return str(error["msg"]).removeprefix("Input should be ")
    return None


def quote_fix(path: Loc, value: object) -> str | None:
    """For a value YAML read as a number, a flag or a date where text belongs: quote it as written. The value is
    never shown: pydantic has YAML's reading of it, not the text in the file (``1.10`` is 1.1, ``010`` is 8, a
    date and time comes back with a T), so quoting that would load a different value; and it may be a secret."""
    if isinstance(value, bool):
        return "quote it (YAML reads true, false, yes, no, on and off without quotes as a flag)"
    if isinstance(value, int | float):
        what = "a number"
    elif isinstance(value, datetime.date):
        what = "a date"
    else:
        return None
    key = f"{shown(path[-1], 60)}: " if path and isinstance(path[-1], str) else ""
    return f'quote it as written, such as {key}"..." (YAML reads it unquoted as {what})'
