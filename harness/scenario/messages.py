"""The words of a validation error, in the terms of the user's file rather than pydantic's.

Pydantic locates an error by its own path through the models: a tagged list entry's path holds the entry's tag
(``faults.0.response_lost.nth``), which the file does not. It also reports what it was given, not what the user
wrote: YAML 1.1 reads ``1e3`` as text and ``1`` as a number. These helpers walk the models along the error's path
(so nothing here names a field by hand) to give the path as the file has it, where a key put at the wrong level
belongs, and how to write a value so that YAML reads it as the type the field wants.
"""

from __future__ import annotations

import datetime
import math
import re
import types
from collections.abc import Sequence
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from yaml.nodes import ScalarNode
from yaml.representer import SafeRepresenter
from yaml.resolver import Resolver

from harness.scenario.yamlfile import shown

__all__ = ["Located", "locate", "number_fix", "placement_fix", "quote_fix"]

Loc = tuple[int | str, ...]
#: The models met along a path, each with its path in the user's file (the root's is ``()``).
Located = list[tuple[Loc, type[BaseModel]]]


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


def locate(root: type[BaseModel], loc: Sequence[int | str]) -> tuple[Loc, Located]:
    """The path in the user's file that pydantic's ``loc`` stands for (each tagged union's tag, which pydantic puts
    after the entry's index, dropped), and the models along it, from ``root``, each with its path in the file."""
    path: list[int | str] = []
    models: Located = [((), root)]
    kind: object = root
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
        inner = _model(kind)
        if inner is not None:
            models.append((tuple(path), inner))
    return tuple(path), models


def _dotted(path: Loc) -> str:
    return ".".join(str(part) for part in path)


def _place(path: Loc) -> str:
    if not path:
        return "to the top level"
    if len(path) == 1:
        return f"under '{path[0]}:'"
    return f"under '{path[-1]}:' in '{_dotted(path[:-1])}'"


def placement_fix(path: Loc, models: Located) -> str | None:
    """For a key that is not a field of its entry (``path`` ends with it): where it belongs when it is a field of
    a section of that entry (``recoverers`` at the top level belongs under ``worker:``), or of an enclosing entry or
    one of its sections (``recovery_deadline_s`` in ``worker:`` belongs at the top level); the nearest level wins."""
    if not path or not isinstance(path[-1], str) or not models or models[-1][0] != path[:-1]:
        return None
    name = path[-1]
    for depth in range(len(models) - 1, -1, -1):
        at, model = models[depth]
        places: list[Loc] = []
        if depth < len(models) - 1 and name in model.model_fields:
            places.append(at)
        for field, info in model.model_fields.items():
            section = _model(info.annotation)
            place = (*at, field)
            if section is not None and name in section.model_fields and place != path[: len(place)]:
                places.append(place)
        if places:
            return "move it " + " or ".join(_place(place) for place in places)
    return None


_TEXT = "tag:yaml.org,2002:str"
_FLOAT = "tag:yaml.org,2002:float"
_EXPONENT = re.compile(r"\s*([-+]?[0-9_]*)(\.[0-9_]*)?[eE]([-+]?)([0-9_]+)\s*")


def _plain_tag(text: str) -> str:
    """The type YAML gives ``text`` written without quotes."""
    resolver: Any = Resolver()  # PyYAML's stubs leave resolve untyped
    return str(resolver.resolve(ScalarNode, text, (True, False)))


def number_fix(error_type: str, value: object) -> str | None:
    """For text where a number belongs that Python reads as a number but YAML, unquoted, does not (``1e3``: YAML
    1.1 wants a dot and a signed exponent): how to write it so that YAML reads a number. ``None`` for any other
    value, and for text YAML would read as a number without its quotes (the usual fix, drop them, holds)."""
    if not isinstance(value, str) or _plain_tag(value) != _TEXT:
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    if not math.isfinite(number):
        return None
    written = shown(value.strip(), 40)
    if error_type == "int_type":
        return f"write {int(number)} (YAML reads {written} as text)" if number.is_integer() else None
    forms = [str(SafeRepresenter().represent_float(number).value)]
    exponent = _EXPONENT.fullmatch(value)
    if exponent is not None:
        whole, fraction, sign, digits = exponent.groups()
        repaired = f"{whole or '0'}{fraction or '.0'}e{sign or '+'}{digits}"
        if _plain_tag(repaired) == _FLOAT and repaired not in forms:
            forms.append(repaired)
    return f"write {' or '.join(forms)} (YAML reads {written} as text)"


def quote_fix(path: Loc, value: object) -> str | None:
    """For a value YAML read as a number, a flag or a date where text belongs: quote it, as it would be written."""
    if isinstance(value, bool):
        return "quote it (YAML reads true, false, yes, no, on and off without quotes as a flag)"
    if isinstance(value, int | float):
        text = repr(value)
    elif isinstance(value, datetime.date):
        text = value.isoformat()
    else:
        return None
    key = f"{shown(path[-1], 60)}: " if path and isinstance(path[-1], str) else ""
    return f'quote it: {key}"{text}"'
