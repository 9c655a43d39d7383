"""What the checker reads (``Evidence``), what it finds (``Anomaly``, ``CheckResult``), and what is saved
(``CaseReport``, the content of one ``recovery.json``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, NamedTuple

from pydantic import Field

from harness.model.base import (
    Actor,
    Frozen,
    InferredOnOutput,
    MetricValue,
    Outcome,
    Scalar,
    Verdict,
    _new,
    _set_dict,
    _set_extra,
    _set_fields_set,
    _set_private,
)
from harness.model.events import Event, event_data, parse_event

__all__ = [
    "MANIFEST",
    "RECORDS_GLOB",
    "REPORT_HTML",
    "RUN_RECORD",
    "SCHEMA_VERSION",
    "Anomaly",
    "CaseReport",
    "CheckResult",
    "Entry",
    "Evidence",
    "entries",
    "events",
    "record_ref",
]

#: Bumped whenever a key of ``recovery.json`` changes meaning or disappears.
SCHEMA_VERSION = 2
#: Compact record files (for ``Path.rglob``): gzipped JSON lines, each line the recovery.json of one case.
RECORDS_GLOB = "records-*.jsonl.gz"
#: A run folder's manifest (what it was asked to do, written first) and its record (written last): a folder
#: with the first and not the second is a run that was stopped before it ended.
MANIFEST = "manifest.json"
RUN_RECORD = "run.json"
#: The command line a run was started with, written the moment its folder is claimed (before the grid is
#: even planned), so a run killed that early can still be resumed: it is planned again from the same words.
REQUEST = "request.json"
#: What an exploration was asked, written before any of its parts runs and removed once its explore.json is:
#: a folder that holds it is an exploration that stopped short (``harness explore --resume``).
EXPLORE_REQUEST = "explore-request.json"
#: A run folder's page for people (``harness.present.html_report``).
REPORT_HTML = "report.html"


def record_ref(path: Path | str) -> tuple[str, str] | None:
    """``(file, seed)`` when ``path`` names one case of a compact record file, as ``<file>.jsonl.gz#seed-<n>``
    (``seed`` as written, checked by whoever reads it); ``None`` for any other path, a recovery.json under a folder
    that has ``#seed-`` in its name included."""
    file, marker, seed = str(path).rpartition("#seed-")
    return (file, seed) if marker and file.endswith(".jsonl.gz") else None


@dataclass(frozen=True, slots=True)
class Evidence:
    """What the checker may look at: the history as the trusted records show it.

    When ``destination_visible`` is false, the destination's own entries (what it received, applied and
    answered) have been withheld, exactly as when the service's ledger cannot be read after the fact.
    """

    task_id: str
    recovery_deadline_s: float
    destination_visible: bool
    history: tuple[Event, ...]


class Anomaly(Frozen):
    """One violation of a property: which property, the witnessing entry indexes, then prose."""

    kind: str
    witnesses: tuple[int, ...]
    detail: str


class CheckResult(NamedTuple):
    """The result of one checker function.

    ``value`` is the measured figure (a count, a duration or a flag); it is ``None`` exactly when the
    evidence cannot establish it, and then ``reason`` says why and ``verdict`` is ``unknown``. A plain
    immutable record, built nineteen times per case from values the checker's functions already typed: a
    named tuple is built in about half the time a frozen dataclass takes (its fields are not set one by one
    through ``object.__setattr__``).
    """

    name: str
    verdict: Verdict
    value: MetricValue
    reason: str | None = None
    anomalies: tuple[Anomaly, ...] = ()


class Entry(Frozen):
    """One history record as ``recovery.json`` holds it; ``events`` turns a timeline back into records."""

    index: int
    at_s: float
    actor: Actor
    event: str
    data: Annotated[dict[str, Scalar], InferredOnOutput] = Field(default_factory=dict)


def entries(history: Sequence[Event]) -> tuple[Entry, ...]:
    """The history as timeline entries, built as ``Frozen.trusted`` builds (through BaseModel's slot descriptors),
    without its keyword arguments and private defaults: a case has a few dozen of them, and ``Entry.trusted``
    made the whole case path 1.5% dearer (callgrind)."""
    out = []
    every_field = _ENTRY_FIELDS  # read only, as ``Frozen.trusted`` shares its class's set
    for e in history:
        entry = _new(Entry)
        _set_dict(entry, {"index": e.index, "at_s": e.at_s, "actor": e.actor, "event": e.event, "data": event_data(e)})
        _set_fields_set(entry, every_field)
        _set_extra(entry, None)
        _set_private(entry, None)
        out.append(entry)
    return tuple(out)


_ENTRY_FIELDS = set(Entry.model_fields)


def events(timeline: Sequence[Entry | dict[str, Any]]) -> tuple[Event, ...]:
    """Timeline entries (models, or dicts read from JSON) back as typed records; raises ``EventError``."""
    out = []
    for item in timeline:
        e = item if isinstance(item, dict) else item.model_dump()
        out.append(parse_event(e["actor"], e["event"], e["data"], e["index"], e["at_s"]))
    return tuple(out)


class CaseReport(Frozen):
    """The sanitized content of one ``recovery.json``: one policy, one scenario, one seed."""

    schema_version: int = SCHEMA_VERSION
    harness_version: str
    scenario: str
    scenario_revision: str
    policy: str
    policy_revision: str
    seed: int
    task_id: str
    action_id: str
    attempts: tuple[str, ...]
    outcome: Outcome
    verdict: Verdict
    metrics: Annotated[dict[str, MetricValue], InferredOnOutput]
    unknown: dict[str, str]
    checks: dict[str, Verdict]
    anomalies: tuple[Anomaly, ...]
    claimed: Annotated[dict[str, Scalar], InferredOnOutput]
    timeline: tuple[Entry, ...]
    reproduce: str
    error: str | None = None

    @property
    def policy_error(self) -> str | None:
        """What the policy raised (or returned that was not a command) the first time it failed, if it did: a
        case its policy ended by crashing is not one whose recovery logic alone is at fault."""
        failed = next((e for e in self.timeline if e.event == "policy_error"), None)
        return None if failed is None else str(failed.data.get("error") or "no reason given")
