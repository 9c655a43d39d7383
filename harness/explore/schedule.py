"""Fault schedules: what exploration adds to a template scenario, one element at a time.

A schedule is a set of elements applied to a template: a fault at a (boundary, occurrence), an operator
event inserted after an occurrence of a kind of history entry, one field of the destination's contract changed,
or one of the worker's delays between deciding and acting opened (or closed). Elements are
data with a stable key, so a schedule can be deduplicated, shrunk one element at a time, and written back as
a runnable scenario file.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from pydantic import TypeAdapter

from harness.model.events import VOCABULARY
from harness.scenario import DestinationSpec, Fault, OperatorEvent, Scenario, WorkerSpec
from harness.scenario.faults import BOUNDARIES, CONNECTOR_PHASES, LookupForeignReceipt

__all__ = [
    "SETTINGS",
    "Element",
    "Observed",
    "Schedule",
    "apply",
    "consistent",
    "contract_variants",
    "declared",
    "elements_of",
    "fault_elements",
    "operator_elements",
    "pairs",
    "singles",
    "worker_variants",
]

_FAULT: TypeAdapter[Fault] = TypeAdapter(Fault)
_OPERATOR: TypeAdapter[OperatorEvent] = TypeAdapter(OperatorEvent)

#: Delays tried for the boundaries that delay something: past the caller's timeout and restart, and past the
#: default request validity (where a late request is refused).
DELAYS_S = (20.0, 70.0)
#: At most this many occurrences of a boundary are tried, whatever the runs reached.
OCCURRENCE_MAX = 3
#: What a foreign receipt's status may be: another deployment applied, or another operation's refusal.
FOREIGN_STATUSES: tuple[str, ...] = get_args(LookupForeignReceipt.model_fields["status"].annotation)


#: What an element changes: a fault, an operator event, a field of the destination's contract, a field of the
#: worker's timing. The last two are settings (one value per field in a schedule); the first two are events.
Kind = Literal["fault", "operator", "contract", "worker"]
SETTINGS = ("contract", "worker")


@dataclass(frozen=True, slots=True)
class Element:
    """One thing a schedule changes: ``kind`` says which, ``data`` holds it as scenario YAML would."""

    kind: Kind
    data: tuple[tuple[str, Any], ...]
    #: A stable text for deduplicating and sorting elements (computed once: exploration asks for it often).
    key: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "key", f"{self.kind}:" + ",".join(f"{k}={v}" for k, v in self.data))


def _frozen(value: Any) -> Any:
    if isinstance(value, dict):
        return tuple((k, _frozen(v)) for k, v in value.items())
    return value


def element(kind: Kind, data: dict[str, Any]) -> Element:
    """An element from its YAML form; faults and operator events are normalized (defaults left out), so the
    same fault written two ways is one element. Their tag (``boundary``, ``do``) is the default of its class:
    it is put back first."""
    if kind == "fault":
        fault = _FAULT.validate_python(data)
        data = {"boundary": fault.boundary} | fault.model_dump(mode="json", exclude_defaults=True)
    elif kind == "operator":
        event = _OPERATOR.validate_python(data)
        data = {"do": event.do} | event.model_dump(mode="json", exclude_defaults=True)
    return Element(kind, tuple((k, _frozen(v)) for k, v in data.items()))


def _thaw(value: Any) -> Any:
    if isinstance(value, tuple) and value and all(isinstance(p, tuple) and len(p) == 2 for p in value):
        return {k: _thaw(v) for k, v in value}
    return value


def element_dict(e: Element) -> dict[str, Any]:
    """The element as the scenario YAML writes it."""
    return {k: _thaw(v) for k, v in e.data}


@dataclass(frozen=True, slots=True)
class Schedule:
    """A set of elements, in a canonical order (so equal sets are equal schedules)."""

    elements: tuple[Element, ...]
    key: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "key", "|".join(e.key for e in self.elements))

    @staticmethod
    def of(elements: Iterable[Element]) -> Schedule:
        unique = {e.key: e for e in elements}
        return Schedule(tuple(unique[k] for k in sorted(unique)))

    def without(self, drop: Element) -> Schedule:
        return Schedule(tuple(e for e in self.elements if e.key != drop.key))

    def replacing(self, old: Element, new: Element) -> Schedule:
        return Schedule.of([new if e.key == old.key else e for e in self.elements])


def elements_of(template: Scenario) -> list[Element]:
    """The template's own faults and operator events, as elements (exploration may shrink them away too)."""
    out = [element("fault", f.model_dump(mode="json")) for f in template.faults]
    out += [element("operator", e.model_dump(mode="json")) for e in template.operator]
    return out


def apply(template: Scenario, schedule: Schedule) -> Scenario:
    """The template with exactly the schedule's faults and operator events, and its contract and worker changes."""
    faults = tuple(_validated(e, _FAULT) for e in schedule.elements if e.kind == "fault")
    operator = tuple(_validated(e, _OPERATOR) for e in schedule.elements if e.kind == "operator")
    # The template's own settings are already validated: only changed ones are validated again.
    destination, worker = template.destination, template.worker
    contract = _settings(schedule, "contract")
    if contract:
        destination = DestinationSpec.model_validate(destination.model_dump() | contract)
    timing = _settings(schedule, "worker")
    if timing:
        worker = WorkerSpec.model_validate(worker.model_dump() | timing)
    return template.model_copy(
        update={"faults": faults, "operator": operator, "destination": destination, "worker": worker}
    )


def _settings(schedule: Schedule, kind: Kind) -> dict[str, Any]:
    return {k: v for e in schedule.elements if e.kind == kind for k, v in element_dict(e).items()}


#: Each fault and operator event validated once, by its element's key: an exploration applies a few hundred
#: elements in hundreds of thousands of schedules, and the records are frozen, so one can serve them all.
_VALIDATED: dict[str, Any] = {}
_VALIDATED_MAX = 100_000


def _validated(e: Element, adapter: TypeAdapter[Any]) -> Any:
    found = _VALIDATED.get(e.key)
    if found is None:
        if len(_VALIDATED) >= _VALIDATED_MAX:
            _VALIDATED.clear()
        found = _VALIDATED[e.key] = adapter.validate_python(element_dict(e))
    return found


def declared(e: Element) -> Fault | OperatorEvent:
    """The fault or operator event a fault or operator element declares (validated once per element)."""
    if e.kind in SETTINGS:
        raise ValueError(f"a {e.kind} change declares no fault or event: {e.key}")
    return _validated(e, _FAULT if e.kind == "fault" else _OPERATOR)  # type: ignore[no-any-return]


@dataclass(frozen=True, slots=True)
class Observed:
    """What baseline runs of the template reached: the most dispatches and reads of any action, every (actor,
    event) kind recorded, and the most records of each kind in any one run (in ``kinds``' order; none given:
    once each)."""

    dispatches: int
    reads: int
    kinds: tuple[tuple[str, str], ...]
    times: tuple[int, ...] = ()

    def most(self, kind: tuple[str, str]) -> int:
        """The most records of ``kind`` in any one baseline run (0: none recorded it)."""
        if kind not in self.kinds:
            return 0
        return self.times[self.kinds.index(kind)] if self.times else 1


def fault_elements(template: Scenario, seen: Observed) -> list[Element]:
    """Every single fault at every (boundary, occurrence) the runs reach, for every action of the template."""
    out = []
    for name, cls in BOUNDARIES.items():
        if cls.needs is not None and not template.has(cls.needs):
            continue
        reached = seen.dispatches if cls.counted == "dispatch" else seen.reads
        for action_id in template.action_ids:
            for nth in range(1, min(reached, OCCURRENCE_MAX) + 1):
                base = {"boundary": name, "nth": nth} | (
                    {} if action_id == template.action_id else {"action_id": action_id}
                )
                for extra in _variants_of(name):
                    out.append(element("fault", base | extra))
    return out


def _variants_of(boundary: str) -> list[dict[str, Any]]:
    if boundary in ("request_delayed", "response_delayed", "apply_delayed", "read_answer_delayed"):
        return [{"delay_s": d} for d in DELAYS_S]
    if boundary == "connector_crash":
        return [{"phase": p} for p in CONNECTOR_PHASES]
    if boundary == "bridge_connection_error":
        return [{"forwarded": True}, {"forwarded": False}, *({"lands_after_s": d} for d in DELAYS_S)]
    if boundary == "lookup_foreign_receipt":
        return [{"status": s} for s in FOREIGN_STATUSES]
    return [{}]


#: The operator events exploration inserts: a change to another model (not approved), a cancellation, and
#: the approval running out.
OPERATOR_EVENTS: tuple[dict[str, Any], ...] = (
    {"do": "change_task", "model": "m9", "digest": "sha256:d9d9d9"},
    {"do": "request_cancel"},
    {"do": "expire_approval"},
)


def operator_elements(seen: Observed) -> list[Element]:
    """Every operator event inserted right after each of the first ``OCCURRENCE_MAX`` entries of each kind the
    runs recorded (as many as one run recorded): after the worker's second command, say, which is where a
    decision to retry is made once a first read found nothing."""
    out = []
    for actor, event in seen.kinds:
        if actor in ("operator", "injector") or event not in VOCABULARY.get(actor, frozenset()):  # type: ignore[call-overload]
            continue
        for nth in range(1, min(seen.most((actor, event)), OCCURRENCE_MAX) + 1):
            for op in OPERATOR_EVENTS:
                after = {"actor": actor, "event": event, "nth": nth}
                out.append(element("operator", op | {"when": {"after": after}}))
    return out


#: The destination's defaults: a contract field exploration changes goes back to its default, or away from it.
_DEFAULT = DestinationSpec()
#: A lookup that answers from the ledger as it stood this long ago: longer than a worker takes to time out and
#: restart, so that its first read after a lost reply can miss an effect that did happen.
LOOKUP_LAG_S = 20.0
#: A deduplication window that closes before a worker that timed out and restarted sends again.
SHORT_DEDUPE_WINDOW_S = 10.0


def contract_variants(template: Scenario) -> list[Element]:
    """Each field of the destination's contract changed to another value it could have."""
    d = template.destination
    changes: list[dict[str, Any]] = [{"dedupe": v} for v in ("durable", "process", "none") if v != d.dedupe]
    changes.append({"on_conflict": "replay" if d.on_conflict == "reject" else "reject"})
    changes.append({"on_in_flight": "in_progress" if d.on_in_flight == "pending" else "pending"})
    changes.append({"fencing": not d.fencing})
    changes.append({"request_validity_s": None if d.request_validity_s is not None else _DEFAULT.request_validity_s})
    changes.append({"lookup_lag_s": LOOKUP_LAG_S if d.lookup_lag_s == 0 else 0.0})
    short = SHORT_DEDUPE_WINDOW_S
    changes.append({"dedupe_window_s": short if d.dedupe_window_s > short else _DEFAULT.dedupe_window_s})
    return [element("contract", c) for c in changes]


#: How long a worker delay exploration opens lasts: time for an operator event inserted at the decision to come
#: between the decision and what it decided (a cancellation between a retry's decision and its send).
WORKER_DELAY_S = 1.0


def worker_variants(template: Scenario) -> list[Element]:
    """Each of the worker's delays between deciding and acting opened when the template has none, closed when
    it has one: between deciding a retry and sending it (``retry_send_s``), and between deciding a write to
    the action ledger and its landing (``ledger_write_s``). Where a template declares neither, a decision and
    its act are one instant, and no operator event can come between them. And a second recovering worker
    beside the first (one alone, where the template has several): the races between workers."""
    w = template.worker
    delays = [
        element("worker", {name: WORKER_DELAY_S if getattr(w, name) == 0 else 0.0})
        for name in ("retry_send_s", "ledger_write_s")
    ]
    return [*delays, element("worker", {"recoverers": 2 if w.recoverers == 1 else 1})]


def singles(template: Scenario, seen: Observed) -> list[Element]:
    """Every element exploration may add to the template, without repeats of what the template has."""
    own = {e.key for e in elements_of(template)}
    candidates = (
        fault_elements(template, seen)
        + operator_elements(seen)
        + contract_variants(template)
        + worker_variants(template)
    )
    unique = {e.key: e for e in candidates if e.key not in own}
    return [unique[k] for k in sorted(unique)]


def _compatible(a: Element, b: Element) -> bool:
    """Two changes to the same field of the contract, or of the worker, cannot stand together."""
    if a.kind == b.kind and a.kind in SETTINGS:
        return {k for k, _ in a.data}.isdisjoint(k for k, _ in b.data)
    return True


def consistent(elements: Sequence[Element]) -> bool:
    """Whether the elements can stand together in one schedule: no field of the contract or of the worker
    changed twice (what ``pairs`` keeps, and what a swarm draw must be)."""
    return all(_compatible(a, b) for a, b in itertools.combinations(elements, 2))


def pairs(added: Sequence[Element], depth: int) -> Iterator[tuple[Element, ...]]:
    """Every combination of 1 to ``depth`` added elements, lazily, without impossible ones."""
    for size in range(1, depth + 1):
        for combo in itertools.combinations(added, size):
            if consistent(combo):
                yield combo
