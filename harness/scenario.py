"""Scenarios: YAML files validated into frozen models at the boundary, so bad input fails before a run.

A scenario fixes the world for one comparison: the task and its approval, the destination's deduplication
contract, latencies, the recovery deadline, scripted operator events, and faults at named protocol
boundaries. Every policy sees the same scenario, so every policy meets the same faults.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, model_validator

__all__ = [
    "BOUNDARIES",
    "EVENTS",
    "SAFE_NAME",
    "ApprovalSpec",
    "DestinationSpec",
    "EventRef",
    "Fault",
    "OperatorEvent",
    "Scenario",
    "ScenarioError",
    "TaskSpec",
    "TransportSpec",
    "Trigger",
    "WorkerSpec",
    "default_scenario_dir",
    "list_scenarios",
    "load_scenario",
    "resolve_scenario",
]

#: Names that end up in file paths and Polyaxon run names: lower case, digits, ``_`` and ``-`` only.
SAFE_NAME = r"^[a-z0-9][a-z0-9_-]{0,63}$"
SafeName = Annotated[str, Field(pattern=SAFE_NAME)]
PositiveSeconds = Annotated[float, Field(gt=0, le=86_400)]
Seconds = Annotated[float, Field(ge=0, le=86_400)]


class ScenarioError(ValueError):
    """A scenario file that cannot be used; the message is one line naming the file, the field and the fix."""


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TaskSpec(Strict):
    """The task as the controller first records it: revision ``revision`` authorizes this one operation."""

    task_id: SafeName
    revision: Annotated[int, Field(ge=1)]
    operation: str = "activate_model"
    target: str
    model: str
    digest: str


class ApprovalSpec(Strict):
    """The approval for the first revision, bound to operation, target, digest and revision.

    ``token`` is a secret the executor presents; it must never appear in evidence or reports.
    """

    approval_id: SafeName
    token: SecretStr = SecretStr("approval-token-not-set")
    expires_at_s: PositiveSeconds | None = None


class DestinationSpec(Strict):
    """The mock deployment service and its documented deduplication contract."""

    #: Requests with the same idempotency key and the same arguments within this window replay the
    #: recorded result; after it, the same key is applied again as a new operation.
    dedupe_window_s: PositiveSeconds = 300.0
    #: Same key with different arguments: ``reject`` answers a conflict; ``replay`` silently returns the
    #: cached result of the first request (a weaker contract worth measuring).
    on_conflict: Literal["reject", "replay"] = "reject"
    #: Time from accepting a request to applying it.
    apply_s: Seconds = 0.5
    #: Time the lookup of a durable result takes to answer.
    lookup_s: Seconds = 0.2
    #: Models the service refuses; a refused request leaves a ``rejected`` receipt and no effect.
    reject_models: tuple[str, ...] = ()
    #: False when the service's ledger cannot be read after the run: its entries are withheld from the
    #: checker, which must then say ``unknown`` where only that ledger could tell.
    ledger_visible: bool = True


class TransportSpec(Strict):
    """One-way latency of every crossing: ``latency_s`` plus a uniform draw in ``[0, jitter_s]``."""

    latency_s: Seconds = 0.05
    jitter_s: Seconds = 0.02


class WorkerSpec(Strict):
    """The caller: how long it waits, how long a replacement takes to start, and its bounds."""

    #: How long the caller waits for a dispatch's reply before it calls the attempt timed out.
    timeout_s: PositiveSeconds = 5.0
    #: How long after a timeout or a crash the recovering worker starts asking its policy. Positive, so a
    #: worker that crashes on every attempt still lets virtual time reach the deadline.
    restart_delay_s: PositiveSeconds = 10.0
    #: How long the caller waits for a lookup's reply before it calls the lookup unknown.
    lookup_timeout_s: PositiveSeconds = 2.0
    #: Upper bound on policy commands over the whole case (every incarnation), so a policy that never stops
    #: still ends.
    command_count_max: Annotated[int, Field(ge=1, le=10_000)] = 64
    #: Upper bound on one ``wait`` command.
    wait_max_s: PositiveSeconds = 60.0


#: Every event each actor records in the history: the vocabulary operator triggers may refer to.
EVENTS: dict[str, frozenset[str]] = {
    "worker": frozenset(
        {
            "start",
            "timeout",
            "crashed",
            "report",
            "command",
            "command_refused",
            "policy_error",
            "deadline_reached",
            "command_budget_exhausted",
            "lookup_timeout",
        }
    ),
    "transport": frozenset({"send", "receive", "undeliverable"}),
    "destination": frozenset(
        {"received", "accepted", "applied", "rejected", "replayed", "conflict", "lookup_answered"}
    ),
    "controller": frozenset(
        {
            "task_revision",
            "approval_granted",
            "approval_expired",
            "cancel_requested",
            "action_recorded",
            "claim",
            "attempt_recorded",
            "effect_recorded",
            "rejection_recorded",
            "record_repeated",
            "record_conflict",
            "task_completed",
            "task_not_completed",
            "held",
            "escalated",
        }
    ),
    "operator": frozenset({"change_task", "request_cancel", "expire_approval"}),
    "injector": frozenset({"fault"}),
}


class EventRef(Strict):
    """The ``nth`` history entry recorded by ``actor`` with event name ``event``."""

    actor: Literal["worker", "transport", "destination", "controller", "operator", "injector"]
    event: str
    nth: Annotated[int, Field(ge=1)] = 1

    @model_validator(mode="after")
    def _known_event(self) -> EventRef:
        if self.event not in EVENTS[self.actor]:
            known = ", ".join(sorted(EVENTS[self.actor]))
            raise ValueError(f"the {self.actor} records no event '{self.event}' (it records: {known})")
        return self


class Trigger(Strict):
    """When a scripted operator event happens: at a virtual time, or after an occurrence in the history."""

    at_s: Seconds | None = None
    after: EventRef | None = None
    delay_s: Seconds = 0.0

    @model_validator(mode="after")
    def _exactly_one(self) -> Trigger:
        if (self.at_s is None) == (self.after is None):
            raise ValueError("give exactly one of 'at_s' or 'after'")
        return self


class _OperatorBase(Strict):
    when: Trigger


class ChangeTask(_OperatorBase):
    """The task advances to a new revision requesting another model; approved only if ``approved``."""

    do: Literal["change_task"]
    model: str
    digest: str
    approved: bool = False


class RequestCancel(_OperatorBase):
    """A person asks to cancel the task's outstanding work."""

    do: Literal["request_cancel"]
    reason: str = "cancel requested by the task owner"


class ExpireApproval(_OperatorBase):
    """The current revision's approval is revoked or runs out."""

    do: Literal["expire_approval"]


OperatorEvent = Annotated[ChangeTask | RequestCancel | ExpireApproval, Field(discriminator="do")]


class _FaultBase(Strict):
    """A fault at a named protocol boundary, triggered by occurrence, never by elapsed time.

    ``nth`` is the first occurrence of the boundary (counted per action, from 1) that the fault hits;
    ``count`` is how many consecutive occurrences it hits (``null``: every later one too).
    """

    action_id: SafeName | None = None
    nth: Annotated[int, Field(ge=1)] = 1
    count: Annotated[int, Field(ge=1)] | None = 1

    def hits(self, occurrence: int) -> bool:
        """Whether this fault applies to the given 1-based occurrence of its boundary."""
        if occurrence < self.nth:
            return False
        return self.count is None or occurrence < self.nth + self.count


class RequestLost(_FaultBase):
    """The dispatch is lost in the transport before it reaches the destination."""

    boundary: Literal["request_lost"]


class RequestDelayed(_FaultBase):
    """The dispatch reaches the destination ``delay_s`` later than usual (a late original request)."""

    boundary: Literal["request_delayed"]
    delay_s: PositiveSeconds


class AcceptedNotApplied(_FaultBase):
    """The destination accepts the dispatch, then stops before applying it: the operation stays pending."""

    boundary: Literal["accepted_not_applied"]


class ResponseLost(_FaultBase):
    """The destination applied the dispatch and recorded its receipt; the response is lost on the way back."""

    boundary: Literal["response_lost"]


class ResponseDelayed(_FaultBase):
    """The response arrives ``delay_s`` later than usual, typically after the caller timed out."""

    boundary: Literal["response_delayed"]
    delay_s: PositiveSeconds


class CrashBeforeSend(_FaultBase):
    """The worker crashes after recording the action and its attempt, before the dispatch is sent."""

    boundary: Literal["crash_before_send"]


class CrashAwaitingReply(_FaultBase):
    """The worker crashes right after sending the dispatch, while awaiting its reply."""

    boundary: Literal["crash_awaiting_reply"]


class LookupFailing(_FaultBase):
    """The destination's lookup answers without a result: ``unavailable`` or ``inconclusive``."""

    boundary: Literal["lookup_unavailable"]
    mode: Literal["unavailable", "inconclusive"] = "unavailable"


Fault = Annotated[
    RequestLost
    | RequestDelayed
    | AcceptedNotApplied
    | ResponseLost
    | ResponseDelayed
    | CrashBeforeSend
    | CrashAwaitingReply
    | LookupFailing,
    Field(discriminator="boundary"),
]

#: Every fault boundary, with the sentence that says what it does (for ``harness list``).
BOUNDARIES: dict[str, str] = {
    cls.model_fields["boundary"].annotation.__args__[0]: (cls.__doc__ or "").strip()  # type: ignore[union-attr]
    for cls in (
        RequestLost,
        RequestDelayed,
        AcceptedNotApplied,
        ResponseLost,
        ResponseDelayed,
        CrashBeforeSend,
        CrashAwaitingReply,
        LookupFailing,
    )
}


class Scenario(Strict):
    """One scenario: the world every policy is run against, identically."""

    name: SafeName
    revision: Annotated[str, Field(min_length=1, max_length=64)]
    description: Annotated[str, Field(min_length=1)]
    task: TaskSpec
    approval: ApprovalSpec
    action_id: SafeName
    #: Who an unresolved action is escalated to.
    owner: str = "release-oncall"
    #: Time (from the start of the case) by which every action must be accounted for.
    recovery_deadline_s: PositiveSeconds = 120.0
    destination: DestinationSpec = DestinationSpec()
    transport: TransportSpec = TransportSpec()
    worker: WorkerSpec = WorkerSpec()
    operator: tuple[OperatorEvent, ...] = ()
    faults: tuple[Fault, ...] = ()

    @model_validator(mode="after")
    def _faults_name_the_action(self) -> Scenario:
        for i, fault in enumerate(self.faults):
            if fault.action_id is not None and fault.action_id != self.action_id:
                raise ValueError(
                    f"faults.{i}.action_id '{fault.action_id}' is not this scenario's action '{self.action_id}'"
                )
        return self

    @property
    def horizon_s(self) -> float:
        """When the simulation stops: after the deadline, leaving room for late requests and replies."""
        return self.recovery_deadline_s + 60.0


_FIXES = {
    "extra_forbidden": "remove it or check its spelling",
    "missing": "add it",
    "union_tag_invalid": "use one of the listed values",
    "literal_error": "use one of the listed values",
    "string_pattern_mismatch": "use lower case letters, digits, '_' or '-' (at most 64)",
}


def _one_line(path: Path, error: ValidationError) -> str:
    first = error.errors()[0]
    field = ".".join(str(part) for part in first["loc"]) or "(top level)"
    fix = _FIXES.get(first["type"], "correct the value")
    more = f" (+{error.error_count() - 1} more)" if error.error_count() > 1 else ""
    message = str(first["msg"]).removeprefix("Value error, ")
    return f"{path}: field '{field}': {message}; fix: {fix}{more}"


def load_scenario(path: Path | str) -> Scenario:
    """Read and validate one scenario file; raise ``ScenarioError`` with a one-line message otherwise."""
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ScenarioError(f"{path}: cannot read the file ({exc.strerror}); fix: check the path") from exc
    except UnicodeDecodeError as exc:
        raise ScenarioError(f"{path}: not UTF-8 text; fix: give a YAML scenario file") from exc
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise ScenarioError(f"{path}: malformed YAML{where}; fix: correct the YAML syntax") from exc
    if not isinstance(raw, dict):
        raise ScenarioError(f"{path}: field '(top level)': expected a mapping; fix: write 'key: value' pairs")
    try:
        scenario = Scenario.model_validate(raw)
    except ValidationError as exc:
        raise ScenarioError(_one_line(path, exc)) from exc
    if scenario.name != path.stem:
        raise ScenarioError(
            f"{path}: field 'name': '{scenario.name}' differs from the file name '{path.stem}'; fix: make them the same"
        )
    return scenario


def default_scenario_dir() -> Path:
    """The ``scenarios/`` folder shipped beside the ``harness`` package."""
    return Path(__file__).resolve().parent.parent / "scenarios"


def list_scenarios(directory: Path | None = None) -> list[str]:
    """Names of the shipped scenarios, sorted."""
    directory = directory or default_scenario_dir()
    return sorted(p.stem for p in directory.glob("*.yaml"))


def resolve_scenario(spec: str, directory: Path | None = None) -> Path:
    """Turn a scenario name or a path to a YAML file into a path, or raise ``ScenarioError``."""
    if spec.endswith((".yaml", ".yml")) or "/" in spec:
        return Path(spec)
    directory = directory or default_scenario_dir()
    path = directory / f"{spec}.yaml"
    if not path.is_file():
        known = ", ".join(list_scenarios(directory)) or "(none)"
        raise ScenarioError(f"unknown scenario '{spec}'; fix: use one of {known}, or a path to a YAML file")
    return path
