"""Scenarios: YAML files validated into frozen models at the boundary, so bad input fails before a run.

A scenario fixes the world for one comparison: the task and its approval, the destination's deduplication
contract, latencies, the recovery deadline, scripted operator events, and faults at named protocol
boundaries. Every policy sees the same scenario, so every policy meets the same faults.
"""

from __future__ import annotations

import datetime
import difflib
import re
from pathlib import Path
from typing import Annotated, Any, get_args

import yaml
from pydantic import Field, Strict, ValidationError, model_validator

from harness.errors import InputError, nearly, one_of
from harness.limits import CASE_TIMEOUT_MAX_S
from harness.model import Frozen, Outcome
from harness.scenario.faults import (
    BOUNDARIES,
    CONNECTOR_PHASES,
    FAULT_TYPES,
    ConnectorCrash,
    Fault,
    FaultBase,
    Side,
)
from harness.scenario.messages import (
    BOUND_ERRORS,
    allows_null,
    bound_broken,
    entry_of,
    is_secret,
    locate,
    number_fix,
    placement_fix,
    quote_fix,
)
from harness.scenario.operator import ChangeTask, EventRef, ExpireApproval, OperatorEvent, RequestCancel, Trigger
from harness.scenario.specs import (
    SAFE_NAME,
    ApprovalSpec,
    BridgeSpec,
    ConnectorSpec,
    DestinationSpec,
    PositiveSeconds,
    SafeName,
    TaskSpec,
    Text,
    TransportSpec,
    WorkerSpec,
    derived_name,
)
from harness.scenario.yamlfile import (
    FILE_SIZE_MAX_BYTES,
    NESTING_DEPTH_MAX,
    VALUE_COUNT_MAX,
    Refused,
    read_bounded,
    shown,
)

__all__ = [
    "BOUNDARIES",
    "FAULT_TYPES",
    "FILE_SIZE_MAX_BYTES",
    "NESTING_DEPTH_MAX",
    "SAFE_NAME",
    "VALUE_COUNT_MAX",
    "ApprovalSpec",
    "BridgeSpec",
    "ChangeTask",
    "ConnectorSpec",
    "DestinationSpec",
    "EventRef",
    "ExpireApproval",
    "Fault",
    "FaultBase",
    "OperatorEvent",
    "Reproduction",
    "RequestCancel",
    "Scenario",
    "ScenarioError",
    "Side",
    "TaskSpec",
    "TransportSpec",
    "Trigger",
    "WorkerSpec",
    "default_scenario_dir",
    "is_scenario_path",
    "list_scenarios",
    "load_scenario",
    "resolve_scenario",
    "scenario_cases",
]


class ScenarioError(InputError):
    """A scenario file that cannot be used; the message is one line naming the file, the field and the fix."""


class Reproduction(Frozen):
    """What a scenario file written for one case reproduces: ``harness replay FILE`` runs this policy at this
    seed and checks it ends as recorded here (explore writes one per finding)."""

    policy: str
    policy_revision: str
    seed: Annotated[int, Strict(), Field(ge=0)]
    outcome: Outcome
    properties: tuple[str, ...] = ()
    #: The wall-clock budget the case ran under, when it ran over it (replay runs it under the same; none: the default).
    case_timeout_s: Annotated[float, Field(gt=0, le=CASE_TIMEOUT_MAX_S)] | None = None
    #: The folder a user's policy module was imported from, where the case ran (a test file's folder, which pytest
    #: put on the import path): replay puts it on the path too, after the rest, so the file replays from anywhere.
    policy_path: Annotated[str, Field(min_length=1, max_length=4096)] | None = None


class Scenario(Frozen):
    """One scenario: the world every policy is run against, identically."""

    name: SafeName
    revision: Annotated[str, Field(min_length=1, max_length=64)]
    description: Annotated[str, Field(min_length=1)]
    task: TaskSpec
    approval: ApprovalSpec
    action_id: SafeName
    #: Who an unresolved action is escalated to.
    owner: Text = "release-oncall"
    #: Time (from the start of the case) by which every action must be accounted for (or escalated).
    recovery_deadline_s: PositiveSeconds = 120.0
    #: After the deadline the simulation goes on while a request or an operation is still in flight, so that
    #: late effects are counted; at most this long.
    settle_max_s: PositiveSeconds = 600.0
    destination: DestinationSpec = DestinationSpec()
    #: A device connector in the path between the caller and the destination (seed 000).
    connector: ConnectorSpec | None = None
    #: A bridge in the path between the caller's client and the tool server (seed 002).
    bridge: BridgeSpec | None = None
    transport: TransportSpec = TransportSpec()
    worker: WorkerSpec = WorkerSpec()
    operator: tuple[OperatorEvent, ...] = ()
    faults: tuple[Fault, ...] = ()
    #: Set in files written for one case (a finding, a failing case): the simulator ignores it.
    reproduces: Reproduction | None = None

    @model_validator(mode="after")
    def _faults_name_an_action(self) -> Scenario:
        actions = self.action_ids
        if len(set(actions)) != len(actions):
            raise ValueError(
                f"operator: action IDs must be distinct, got {', '.join(actions)}; fix: give each change_task an "
                "action_id of its own, other than the scenario's"
            )
        last = 1 + self.worker.command_count_max
        for i, fault in enumerate(self.faults):
            first = next((j for j, other in enumerate(self.faults[:i]) if self._shadows(other, fault)), None)
            if first is not None:
                raise ValueError(
                    f"faults.{i}: every occurrence it names is faults.{first}'s too, at the same boundary, so it "
                    "could never fire (the first listed takes an occurrence; an action_id naming the scenario's "
                    "own action is the same as none, and phase every stands for each phase); fix: remove it, or "
                    f"give it an nth past faults.{first}'s last"
                )
            if fault.nth > last:
                raise ValueError(
                    f"faults.{i}.nth: {fault.nth} is past the last request an action can make ({last}: its first "
                    f"dispatch, then one a command, and worker.command_count_max is {self.worker.command_count_max}"
                    f"), so it could never fire; fix: give an nth of {last} or less, or a larger command_count_max"
                )
            if fault.action_id is not None and fault.action_id not in actions:
                raise ValueError(
                    f"faults.{i}.action_id: '{fault.action_id}' is not an action of this scenario "
                    f"({', '.join(actions)}); fix: use one of {', '.join(actions)}, or leave it out (the scenario's)"
                )
        return self

    def _shadows(self, a: Fault, b: Fault) -> bool:
        """Whether ``a``, listed first, takes every occurrence ``b`` names in some case of this scenario: the same
        boundary of the same action (none is the scenario's own), at the same phase for a connector crash (``every``
        stands for each), and ``b``'s occurrences among ``a``'s, whatever else either says."""
        if a.boundary != b.boundary or (a.action_id or self.action_id) != (b.action_id or self.action_id):
            return False
        crashes = isinstance(a, ConnectorCrash) and isinstance(b, ConnectorCrash)
        if crashes and "every" not in (a.phase, b.phase) and a.phase != b.phase:  # type: ignore[union-attr]
            return False
        if b.nth < a.nth:
            return False
        if a.count is None:
            return True
        return b.count is not None and b.nth + b.count <= a.nth + a.count

    @model_validator(mode="after")
    def _faults_have_their_actor(self) -> Scenario:
        if self.connector is not None and self.bridge is not None:
            raise ValueError("bridge: a connector and a bridge in one path; fix: give one of them, not both")
        for i, fault in enumerate(self.faults):
            if fault.needs is not None and not self.has(fault.needs):
                raise ValueError(
                    f"faults.{i}.boundary: '{fault.boundary}' needs a {fault.needs} in the path; fix: add "
                    f"'{fault.needs}: {{}}'"
                )
        for i, event in enumerate(self.operator):
            after = event.when.after
            if after is not None and after.actor in ("connector", "bridge") and not self.has(after.actor):
                raise ValueError(
                    f"operator.{i}.when.after.actor: no {after.actor} is in the path, so its '{after.event}' never "
                    f"comes; fix: add '{after.actor}: {{}}', or trigger on a record of another actor"
                )
        return self

    @model_validator(mode="after")
    def _begins_before_the_deadline(self) -> Scenario:
        deadline = self.recovery_deadline_s
        if self.worker.dispatch_at_s >= deadline:
            raise ValueError(
                f"worker.dispatch_at_s: {self.worker.dispatch_at_s} s is not before the recovery deadline "
                f"({deadline} s), so the action would start when the case is over; fix: dispatch it earlier, or "
                "give a later recovery_deadline_s"
            )
        if self.worker.restart_delay_s >= deadline:
            raise ValueError(
                f"worker.restart_delay_s: {self.worker.restart_delay_s} s is not shorter than the recovery deadline "
                f"({deadline} s), so no recovering worker could start before the case is over; fix: give a shorter "
                "restart_delay_s, or a later recovery_deadline_s"
            )
        for i, event in enumerate(self.operator):
            at_s = event.when.at_s
            if at_s is None and event.when.delay_s >= deadline:
                raise ValueError(
                    f"operator.{i}.when.delay_s: {event.when.delay_s} s after its trigger is not before the recovery "
                    f"deadline ({deadline} s) even for a trigger at the start, so it would act when the case is "
                    "over; fix: give a shorter delay_s, or a later recovery_deadline_s"
                )
            if at_s is not None and at_s + event.when.delay_s >= deadline:
                moment = f"{at_s} s" + (f" + delay_s {event.when.delay_s} s" if event.when.delay_s else "")
                raise ValueError(
                    f"operator.{i}.when: it would act at {moment}, not before the recovery deadline ({deadline} s), "
                    "when the case is over but for what is still in flight (an event acts only before it); fix: "
                    "give an earlier time, or a later recovery_deadline_s"
                )
        return self

    def has(self, part: str) -> bool:
        """Whether a connector or a bridge stands in this scenario's path."""
        return (self.connector if part == "connector" else self.bridge) is not None

    def variants(self) -> tuple[Scenario, ...]:
        """The cases this scenario stands for: itself, or, when a connector crash says ``phase: every``, one
        scenario per phase boundary, named ``<name>-<phase>`` (exhaustive, not sampled)."""
        every = {i for i, f in enumerate(self.faults) if isinstance(f, ConnectorCrash) and f.phase == "every"}
        if not every:
            return (self,)
        return tuple(
            self.model_copy(
                update={
                    "name": derived_name(self.name, phase),
                    "faults": tuple(
                        f.model_copy(update={"phase": phase}) if i in every else f for i, f in enumerate(self.faults)
                    ),
                }
            )
            for phase in CONNECTOR_PHASES
        )

    @property
    def action_ids(self) -> tuple[str, ...]:
        """The first action, then each action a task change dispatches, in the order they are declared."""
        later = [e.action_id for e in self.operator if isinstance(e, ChangeTask) and e.action_id is not None]
        return (self.action_id, *later)

    @property
    def horizon_s(self) -> float:
        """The latest the simulation runs: the deadline, then while requests are in flight, at most ``settle_max_s``."""
        return self.recovery_deadline_s + self.settle_max_s


_FIXES = {
    "extra_forbidden": "remove it or check its spelling",
    "missing": "add it",
    "literal_error": "use one of the listed values",
    "string_pattern_mismatch": "use lower case letters, digits, '_' or '-' (at most 64)",
    "int_type": "write a whole number, without quotes",
    "float_type": "write a number, without quotes",
    "bool_type": "write true or false, without quotes",
    "finite_number": "write a finite number",
    "tuple_type": "write a list: one '- item' line per entry, or [a, b]",
    "string_too_long": "shorten it (the text is copied into every record that names it)",
}
#: Pydantic's words for a type, where YAML's are plainer.
_MESSAGES = {
    "tuple_type": "expected a list",
    "dict_type": "expected a mapping of 'key: value' pairs",
    "model_type": "expected a mapping of 'key: value' pairs",
    "model_attributes_type": "expected a mapping of 'key: value' pairs",
}
#: The errors of a scalar of the wrong type, whose fix says what YAML read when the value was not quoted text.
_READ_AS = frozenset({"int_type", "float_type", "bool_type"})


def _read_as(value: object) -> str:
    """What YAML made of a value of the wrong type that was not text (text's fix is to drop its quotes)."""
    if value is None:
        return " (null, or nothing after the colon, is no value here)"
    if isinstance(value, bool):
        return f" (YAML reads {str(value).lower()} as a flag)"
    if isinstance(value, (datetime.date, datetime.datetime)):
        return f" (YAML reads {value} as a date)"
    if isinstance(value, float):
        return f" ({value} is not a whole number)"
    if isinstance(value, (list, tuple, dict)):
        return f" (not a {'mapping' if isinstance(value, dict) else 'list'})"
    return ""


#: The choices of each tagged list's tag, for an entry that lacks it.
_TAGS = {
    "do": tuple(get_args(kind.model_fields["do"].annotation)[0] for kind in get_args(get_args(OperatorEvent)[0])),
    "boundary": tuple(BOUNDARIES),
}
#: The kinds of entry of each tagged list, each with its tag's value.
_TAGGED: dict[str, tuple[tuple[str, type[Frozen]], ...]] = {
    tag: tuple((get_args(kind.model_fields[tag].annotation)[0], kind) for kind in get_args(get_args(union)[0]))
    for tag, union in (("do", OperatorEvent), ("boundary", Fault))
}


def _one_line(path: Path, error: ValidationError) -> str:
    first, meant = _misspelled(error) or (error.errors()[0], None)
    # The path as the file has it: pydantic's holds each tagged entry's tag too (faults.0.response_lost.nth).
    where, models = locate(Scenario, first["loc"])
    field = ".".join(str(part) for part in where) or "(top level)"
    fix = _FIXES.get(first["type"], "correct the value")
    # A secret's value (approval.token) is never shown, not even in a fix that would write it out; quote_fix shows
    # no value of any field.
    secret = is_secret(Scenario, first["loc"])
    value = None if secret else first.get("input")
    if first["type"] == "extra_forbidden":
        missing = [locate(Scenario, e["loc"])[0] for e in error.errors() if e["type"] == "missing"]
        fix = (
            _of_another_kind(where, models) or placement_fix(where, models, missing) or _respelled(where, models) or fix
        )
    elif first["type"] in ("float_type", "int_type"):
        fix = number_fix(first["type"], value, lambda number: bound_broken(Scenario, first["loc"], number)) or fix
    if first["type"] in _READ_AS and not isinstance(first.get("input"), str):
        # Not text whose quotes are the trouble: say what YAML read instead (a secret's value is not shown).
        fix = _FIXES[first["type"]].removesuffix(", without quotes") + ("" if secret else _read_as(first.get("input")))
    elif first["type"] in ("model_type", "model_attributes_type"):
        tag = {"faults": "boundary", "operator": "do"}.get(str(where[0])) if where else None
        example = f", as in - {tag}: {value}" if tag is not None and value in _TAGS[tag] else ""
        fix = f"write a mapping, one 'key: value' per line{example}"
    elif first["type"] == "string_type":
        fix = quote_fix(where, first.get("input")) or fix
    elif first["type"] in BOUND_ERRORS:
        fix = "give a number within that bound" + (", or null for none" if allows_null(Scenario, first["loc"]) else "")
    # A misspelt field is also a missing one: that is one mistake, not two.
    others = error.error_count() - 1 - (meant is not None)
    if first["type"] == "missing" and meant is None:
        # Fields missing from the same entry are one mistake, named together (the second was only "+1 more").
        siblings = [
            ".".join(str(part) for part in locate(Scenario, e["loc"])[0])
            for e in error.errors()[1:]
            if e["type"] == "missing" and tuple(e["loc"][:-1]) == tuple(first["loc"][:-1])
        ]
        if siblings:
            field = "', '".join([field, *siblings])
            fix = "add them"
            others -= len(siblings)
    more = f" (+{others} more)" if others > 0 else ""
    message = _MESSAGES.get(first["type"]) or str(first["msg"]).removeprefix("Value error, ")
    if first["type"] == "value_error":
        # A check across fields says where it looked and how to mend it: "faults.0.boundary: ...; fix: ...".
        inside, said, rest = message.partition(": ")
        if said and re.fullmatch(r"[a-z_]+(\.[a-z0-9_]+)*", inside):
            field = inside if field == "(top level)" else f"{field}.{inside}"
            message = rest
        message, said, own_fix = message.partition("; fix: ")
        if said:
            fix = own_fix
    if first["type"] == "union_tag_not_found":
        tag = str(first.get("ctx", {}).get("discriminator", "")).strip("'")
        message = f"the entry has no '{tag}'"
        fix = f"add '{tag}:' with one of {', '.join(_TAGS.get(tag, ()))}"
        given = first.get("input")
        spelt = (
            next((k for k in given if isinstance(k, str) and nearly(k, [tag])), None)
            if isinstance(given, dict)
            else None
        )
        if spelt is not None:
            message, fix = f"the entry has no '{tag}' ('{shown(spelt, 60)}' nearly spells it)", f"rename it '{tag}'"
    elif first["type"] == "union_tag_invalid":
        # Pydantic's own message lists the choices quoted, and a long list is cut mid-word: name them all in the fix.
        tag = str(first.get("ctx", {}).get("discriminator", "")).strip("'")
        given_tag = str(first.get("ctx", {}).get("tag", ""))
        message = f"'{shown(given_tag, 80)}' is not a known '{tag}'"
        close = difflib.get_close_matches(given_tag.casefold(), _TAGS.get(tag, ()), n=1, cutoff=0.8)
        mean = f"did you mean {close[0]}? Else use " if close else "use "
        fix = f"{mean}one of {', '.join(_TAGS.get(tag, ()))}"
        field = f"{field}.{tag}"
    elif meant is not None:
        message, fix = "not a field", f"rename it '{meant}' (a field this entry requires)"
    noun = "fields" if "', '" in field else "field"
    return f"{shown(path, PATH_SHOWN_MAX)}: {noun} '{shown(field)}': {shown(message, 400)}; fix: {fix}{more}"


def _misspelled(error: ValidationError) -> tuple[Any, str] | None:
    """A key that is not a field, beside a required field that is missing and that it nearly spells: that key
    misspelled (``action_idd`` for ``action_id``), reported as such rather than as a missing field."""
    errors = error.errors()
    missing: dict[tuple[Any, ...], list[str]] = {}
    for e in errors:
        if e["type"] == "missing" and e["loc"]:
            missing.setdefault(tuple(e["loc"][:-1]), []).append(str(e["loc"][-1]))
    for e in errors:
        if e["type"] == "extra_forbidden" and e["loc"]:
            close = difflib.get_close_matches(str(e["loc"][-1]), missing.get(tuple(e["loc"][:-1]), []), n=1)
            if close:
                return e, close[0]
    return None


def _of_another_kind(where: tuple[Any, ...], models: Any) -> str | None:
    """For a key that is not a field of a fault or an operator event but is one of another kind of them (``model``
    is a field of ``lookup_foreign_receipt``, not of ``response_lost``): the fix saying which kinds have it."""
    model = entry_of(where, models)
    if model is None:
        return None
    for tag, kinds in _TAGGED.items():
        if tag in model.model_fields:
            having = [value for value, kind in kinds if where[-1] in kind.model_fields]
            if having:
                own = get_args(model.model_fields[tag].annotation)[0]
                which = "which has it" if len(having) == 1 else "which have it"
                return f"remove it ({tag} {own} has no '{where[-1]}'), or use {tag} {' or '.join(having)}, {which}"
    return None


def _respelled(where: tuple[Any, ...], models: Any) -> str | None:
    """For a key that is not a field of its entry: the fix naming a field of that entry it nearly spells
    (``recovery_deadlin_s``, ``lookup_lag``), required or optional; ``None`` when none is close."""
    entry = entry_of(where, models)
    if entry is None:
        return None
    close = nearly(str(where[-1]), list(entry.model_fields))
    return f"rename it '{close}' (a field of this entry)" if close else None


#: A path is quoted in an error message up to this many characters.
PATH_SHOWN_MAX = 300


def _refused(path: Path, what: str) -> ScenarioError:
    return ScenarioError(f"{shown(path, PATH_SHOWN_MAX)}: {what}")


def _read(path: Path) -> object:
    """The file's YAML document, or ``ScenarioError`` in one line for every way reading it can fail."""
    if "\0" in str(path):
        raise _refused(path, "the path holds a NUL character; fix: check the path")
    try:
        return read_bounded(path)
    except Refused as exc:
        raise _refused(path, str(exc)) from exc
    except IsADirectoryError as exc:
        raise _refused(path, "is a folder, not a file; fix: give a scenario file") from exc
    except OSError as exc:
        reason = shown(exc.strerror or exc, 100)
        raise _refused(path, f"cannot read the file ({reason}); fix: check the path and its permissions") from exc
    except UnicodeDecodeError as exc:
        raise _refused(path, f"not UTF-8 text (byte {exc.start}); fix: give a YAML scenario file") from exc
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = f" ({shown(exc.problem or exc.context, 120)})" if exc.problem or exc.context else ""
        raise _refused(path, f"malformed YAML{where}{problem}; fix: correct the YAML syntax") from exc
    except yaml.reader.ReaderError as exc:
        code = exc.character if isinstance(exc.character, int) else ord(exc.character or b"\0")
        raise _refused(
            path, f"character U+{code:04X} (at character {exc.position}) is not allowed in YAML; fix: remove it"
        ) from exc
    except yaml.YAMLError as exc:
        raise _refused(path, f"malformed YAML ({shown(exc, 120)}); fix: correct the YAML syntax") from exc
    except (ValueError, TypeError, AttributeError, OverflowError) as exc:
        # PyYAML builds some plain scalars it cannot represent by raising these: a date like 2024-13-45, an
        # explicit tag on a value of another type (!!int x, !!timestamp x), an integer of over 4,300 digits.
        raise _refused(
            path, f"a value YAML cannot build ({shown(exc, 120)}); fix: quote it to make it text, or correct it"
        ) from exc


def load_scenario(path: Path | str) -> Scenario:
    """Read and validate one scenario file; raise ``ScenarioError`` with a one-line message otherwise.

    The file is read within bounds (``harness.scenario.yamlfile``: at most 1 MiB, 50 levels of nesting, 10,000
    values) and a key given twice in one mapping is refused, so a file written by anyone fails in one line.
    """
    path = Path(path)
    raw = _read(path)
    if not isinstance(raw, dict):
        raise _refused(
            path, f"field '(top level)': expected a mapping, got {_kind(raw)}; fix: write 'key: value' pairs"
        )
    try:
        scenario = Scenario.model_validate(raw)
    except ValidationError as exc:
        raise ScenarioError(_one_line(path, exc)) from None  # pydantic's lines (and the values, a secret too) stay out
    if scenario.name != path.stem:
        raise _refused(
            path,
            f"field 'name': '{scenario.name}' differs from the file name '{shown(path.stem)}'; fix: make them the same",
        )
    return scenario


_KINDS = {list: "a list", str: "text", int: "a number", float: "a number", bool: "true or false"}


def _kind(value: object) -> str:
    if value is None:
        return "nothing (an empty file)"
    return _KINDS.get(type(value), type(value).__name__)


def default_scenario_dir() -> Path:
    """The ``scenarios/`` folder shipped beside the ``harness`` package."""
    return Path(__file__).resolve().parents[2] / "scenarios"


def list_scenarios(directory: Path | None = None) -> list[str]:
    """Names of the shipped scenarios, sorted."""
    directory = directory or default_scenario_dir()
    return sorted(p.stem for p in directory.glob("*.yaml"))


#: Separates a scenario spec from the variant it picks: ``connector_crash_points@after_started``.
VARIANT = "@"


def scenario_cases(spec: str, directory: Path | None = None) -> tuple[tuple[str, Scenario], ...]:
    """The (spec, scenario) pairs a scenario spec stands for: one per variant (``SPEC@variant`` picks one, and so
    does the case's name as the harness prints it, ``SPEC-variant``, for a shipped scenario)."""
    base, sep, chosen = spec.rpartition(VARIANT)
    if sep and is_scenario_path(chosen):  # the '@' is in a folder's name (user@host/...), not before a variant
        base, sep, chosen = spec, "", ""
    if not sep:
        printed = _printed_case(spec, directory)
        if printed is not None:
            return (printed,)
        base = spec
    scenario = load_scenario(resolve_scenario(base, directory))
    variants = scenario.variants()
    if len(variants) == 1:
        if sep:
            raise ScenarioError(f"scenario '{shown(base)}' has no variants; fix: drop '{VARIANT}{shown(chosen)}'")
        return ((spec, scenario),)
    pairs = tuple((f"{base}{VARIANT}{v.name.rpartition('-')[2]}", v) for v in variants)
    if not sep:
        return pairs
    picked = tuple(p for p in pairs if p[0] == spec)
    if not picked:
        names = ", ".join(p[0].rpartition(VARIANT)[2] for p in pairs)
        raise ScenarioError(f"scenario '{shown(base)}' has no variant '{shown(chosen)}'; fix: use one of {names}")
    return picked


def _printed_case(spec: str, directory: Path | None) -> tuple[str, Scenario] | None:
    """The case a shipped scenario's variant is printed as (tables, ``summary.csv`` and case folders name it
    ``<scenario>-<variant>``), as ``scenario_cases`` gives it for ``<scenario>@<variant>``; ``None`` when ``spec``
    names a scenario itself, or looks like no scenario's case. Only when no scenario is named ``spec`` are the
    scenarios whose names it extends past a '-' read. A name like a case of one but of no case of it is refused
    with that scenario's cases."""
    directory = directory or default_scenario_dir()
    if is_scenario_path(spec) or "-" not in spec or (directory / f"{spec}.yaml").is_file():
        return None
    cases: list[tuple[str, Scenario]] = []
    for base in list_scenarios(directory):
        if spec.startswith(f"{base}-"):
            try:
                variants = load_scenario(directory / f"{base}.yaml").variants()
            except ScenarioError:
                continue  # named as it is, the scenario's own error says what is wrong with it
            if len(variants) > 1:
                cases += [(f"{base}{VARIANT}{v.name.rpartition('-')[2]}", v) for v in variants]
    found = [case for case in cases if case[1].name == spec]
    if len(found) == 1:
        return found[0]
    if cases:
        names = ", ".join(case_spec for case_spec, _ in (found or cases))
        raise ScenarioError(f"unknown scenario '{shown(spec)}'; fix: use one of {names}")
    return None


def is_scenario_path(spec: str) -> bool:
    """Whether a scenario spec (without its ``@variant``) names a YAML file rather than a shipped scenario."""
    return spec.endswith((".yaml", ".yml")) or "/" in spec


def resolve_scenario(spec: str, directory: Path | None = None) -> Path:
    """Turn a scenario name or a path to a YAML file into a path, or raise ``ScenarioError``."""
    if not spec.strip():  # an unset variable in a script: Path("") is the current folder, which it does not mean
        raise ScenarioError(
            f"scenario '{shown(spec)}': an empty name; fix: give a shipped scenario's name (python -m harness list) "
            "or a path to a YAML file"
        )
    if is_scenario_path(spec):
        return Path(spec)
    directory = directory or default_scenario_dir()
    path = directory / f"{spec}.yaml"
    if not path.is_file():
        printed = _printed_case(spec, directory)
        if printed is not None:  # scenario_cases takes this spelling; a path is a whole scenario's
            raise ScenarioError(f"'{shown(spec)}' names a case, not a scenario; fix: write {shown(printed[0])}")
        if Path(spec).is_dir():  # a folder of the user's, named without a slash: not a shipped name either
            raise ScenarioError(
                f"scenario '{shown(spec)}': is a folder, not a scenario; fix: give one of its files, as "
                f"{shown(spec)}/<name>.yaml (--scenario once per file)"
            )
        phase = next((p for p in CONNECTOR_PHASES if spec.endswith(f"-{p}")), None)
        if phase is not None:  # the printed name of a case of the user's own file, which is no shipped name
            base = spec.removesuffix(f"-{phase}")
            file = base if base.endswith((".yaml", ".yml")) else f"{base}.yaml"  # the file as it was named, if it was
            raise ScenarioError(
                f"unknown scenario '{shown(spec)}'; fix: name a case of your own file by its path, as "
                f"{shown(file)}{VARIANT}{phase} (the SCENARIO-phase names are the shipped scenarios')"
            )
        if Path(spec).is_file():  # a file of the user's whose name does not end in .yaml: read as a name
            raise ScenarioError(
                f"unknown scenario '{shown(spec)}'; fix: a file of that name is here: to run it, give it as a "
                f"path, ./{shown(spec)} (a name without a folder or .yaml is a shipped scenario's)"
            )
        known = one_of(spec, list_scenarios(directory), "scenarios 'python -m harness list' names")
        raise ScenarioError(f"unknown scenario '{shown(spec)}'; fix: {known}, or a path to a YAML file")
    return path
