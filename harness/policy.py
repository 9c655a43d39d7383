"""The policy interface: what a recovering worker can know (``Situation``) and what it may do (``Command``).

A policy is a pure decision object. It never touches the clock, the network or the destination: it reads a
``Situation`` and returns one ``Command``; the simulator carries the command out, including commands a correct
policy would never give, so that the checker can catch them.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import inspect
import pkgutil
import sys
import traceback
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, Protocol, Self, cast, runtime_checkable

from pydantic import PrivateAttr

from harness.errors import InputError, one_line, one_of
from harness.limits import REVISION_MAX
from harness.model import (
    COMMAND_TYPES,
    Action,
    Artifact,
    Command,
    Escalate,
    FollowJob,
    Frozen,
    Hold,
    LookUp,
    Receipt,
    RecordAbsent,
    RecordEffect,
    RecordRejection,
    ResendCurrentArguments,
    RetryNewKey,
    RetrySameAction,
    Stop,
    VerifyOutcome,
    Wait,
)

__all__ = [
    "COMMAND_TYPES",
    "Action",
    "ApprovalView",
    "Artifact",
    "AttemptView",
    "Command",
    "CommandResult",
    "ContractView",
    "Effect",
    "Escalate",
    "FollowJob",
    "Hold",
    "LookUp",
    "LookupView",
    "PatienceView",
    "Policy",
    "PolicyError",
    "Receipt",
    "RecordAbsent",
    "RecordEffect",
    "RecordRejection",
    "ResendCurrentArguments",
    "ResponseStatus",
    "RetryNewKey",
    "RetrySameAction",
    "Situation",
    "Stop",
    "TaskView",
    "Verified",
    "VerifyOutcome",
    "Wait",
    "builtin_policy_names",
    "load_policy",
    "look_in",
]

#: What a read can answer: the target's durable result (applied, rejected, pending, absent, or unknown: an
#: unavailable or inconclusive lookup, never evidence of absence), or a connector job's state (running, or
#: unknown_outcome: started, never completed).
Effect = Literal["applied", "rejected", "pending", "absent", "unknown", "running", "unknown_outcome"]
#: What a dispatch's reply can say: a receipt's status; a conflict (same key, other request); pending or in
#: progress (the first request under the key is not applied yet); refused (too old, or fenced); running (a
#: connector job outlived the wait: follow it); unknown_outcome (a connector started it and never completed
#: it); connection_error (the reply was lost in an intermediary: see ``do_not_replay``); blocked (the bridge
#: refuses mutations until the last uncertain outcome is verified).
ResponseStatus = Literal[
    "applied",
    "rejected",
    "conflict",
    "pending",
    "in_progress",
    "refused",
    "running",
    "unknown_outcome",
    "connection_error",
    "blocked",
]
#: A verification's verdict on the run: it matches the original expectation (confirmed), another result stands
#: under its run ID (refuted), nothing is there (absent), or the read could not tell (unknown).
Verified = Literal["confirmed", "refuted", "absent", "unknown"]


class AttemptView(Frozen):
    """One execution attempt of the action and what this worker observed of it.

    ``observation`` is ``unknown`` for attempts made by a worker incarnation that crashed: its
    replacement knows the attempt existed (the controller recorded it) but not what came back.
    """

    execution_id: str
    idempotency_key: str
    #: When the controller recorded the attempt, just before it could be sent (known to every worker).
    recorded_at_s: float
    #: ``None`` when this worker cannot know (the attempt belonged to a crashed incarnation).
    sent: bool | None
    sent_at_s: float | None
    observation: Literal["response", "timeout", "unknown", "in_flight"]
    late: bool = False
    response_status: ResponseStatus | None = None
    #: When the reply reached this worker.
    replied_at_s: float | None = None
    receipt: Receipt | None = None
    #: The connector's job for this attempt, when a reply named it.
    job_id: str | None = None
    #: The reply was a connection error that an intermediary or the client marked "do not replay automatically".
    do_not_replay: bool = False


class LookupView(Frozen):
    """One read of the action's outcome: a lookup of the target's durable result (``lookup``), a connector job's
    status (``follow_job``), or a verification through the bridge (``verify``).

    ``unknown`` covers an unavailable, inconclusive or unanswered read: it is not evidence of absence.
    """

    #: When the answer reached this worker.
    at_s: float
    effect: Effect
    receipt: Receipt | None = None
    source: Literal["lookup", "follow_job", "verify"] = "lookup"
    #: When the read was sent: the answer describes the target no earlier than this (``None``: as ``at_s``).
    sent_at_s: float | None = None
    job_id: str | None = None
    verified: Verified | None = None


class TaskView(Frozen):
    """The task as the controller reports it now."""

    task_id: str
    revision: int
    artifact: Artifact
    cancel_requested: bool
    completed_revision: int | None


class ApprovalView(Frozen):
    """Whether the approval the action relies on is valid now, as trusted state reports it."""

    approval_id: str
    valid: bool
    expires_at_s: float | None


class ContractView(Frozen):
    """The destination's documented contract (see ``DestinationSpec`` for what each field means)."""

    dedupe: Literal["durable", "process", "none"]
    dedupe_window_s: float
    on_conflict: Literal["reject", "replay"]
    on_in_flight: Literal["pending", "in_progress"]
    request_validity_s: float | None
    fencing: bool
    lookup_lag_s: float
    #: What stands between the caller and the destination: nothing, a device connector, or a bridge.
    via: Literal["direct", "connector", "bridge"] = "direct"


class PatienceView(Frozen):
    """How long this worker waits for what it sends before its policy is asked again (the scenario's ``worker``):
    the longest one round trip may keep it. An answer may come back sooner, never later: past it the worker calls
    a dispatch timed out and a read unknown. A round trip sent with less time than this left before the deadline
    may still be out when the deadline passes, and the action then goes unaccounted for."""

    #: A dispatch's reply (``worker.timeout_s``): a retry, under its own key or a new one, waits this long.
    reply_s: float
    #: A lookup's or a verification's answer (``worker.lookup_timeout_s``).
    read_s: float
    #: A job follow's answer: ``read_s``, plus the connector's wait where a connector stands in the path (the
    #: caller allows for the wait at the connector on top of its read timeout).
    follow_s: float
    #: The longest one ``Wait`` lasts (``worker.wait_max_s``): a longer one is cut to it.
    wait_max_s: float


class CommandResult(Frozen):
    """What became of one command this worker gave: carried out, or refused (a claim the controller refused,
    a receipt never observed, ...) with the reason."""

    kind: str
    refused: bool = False
    reason: str | None = None


class Situation(Frozen):
    """Everything a recovering worker may base its next decision on."""

    now_s: float
    deadline_s: float
    #: When this worker incarnation started: any attempt of an earlier, crashed one was sent before it.
    started_at_s: float
    action: Action
    attempts: tuple[AttemptView, ...]
    lookups: tuple[LookupView, ...]
    task: TaskView
    approval: ApprovalView
    contract: ContractView
    #: What the controller's action ledger holds for the action (``None``: nothing recorded yet).
    recorded: Literal["applied", "rejected", "absent"] | None
    escalated: bool
    #: Whether the controller holds further dispatch of the action.
    held: bool = False
    #: The outcome of this worker's last command (``None`` before its first).
    last: CommandResult | None = None
    #: Every command of this worker that was refused, oldest first.
    refusals: tuple[CommandResult, ...] = ()
    #: How many commands may still be given for the action, the one asked for now included: the scenario's
    #: ``worker.command_count_max`` less those given (a ``Wait`` is one), by every worker that recovers it (two
    #: recovering side by side, or a crashed incarnation and the next, share it). At 1, the command returned now
    #: is the last any of them gives: spent before the action is recorded or escalated, it is abandoned. ``None``
    #: in a Situation built by hand that does not say.
    commands_left: int | None = None
    #: How long this worker waits for each kind of answer (``None``: in a Situation built by hand that does not
    #: say). ``round_trip_s(command)`` reads it for one command.
    patience: PatienceView | None = None

    def round_trip_s(self, command: Command) -> float | None:
        """The longest ``command`` may keep this worker before its policy is asked again: a read's answer or a
        dispatch's reply, as ``patience`` says (a retry may also leave later than it was decided, by a delay no
        policy sees). ``None`` for a command that sends nothing (a record, a hold, a wait, an escalation, a stop),
        and when the patience is not known."""
        patience = self.patience
        if patience is None:
            return None
        if isinstance(command, LookUp | VerifyOutcome):
            return patience.read_s
        if isinstance(command, FollowJob):
            return patience.follow_s
        if isinstance(command, RetrySameAction | RetryNewKey | ResendCurrentArguments):
            return patience.reply_s
        return None

    @property
    def time_left_s(self) -> float:
        """Seconds until the recovery deadline (never negative)."""
        return max(0.0, self.deadline_s - self.now_s)

    @property
    def first_sent_at_s(self) -> float | None:
        """When the action was first sent, if ever (as early as its first attempt was recorded, if unseen)."""
        times = [a.sent_at_s if a.sent_at_s is not None else a.recorded_at_s for a in self.attempts]
        return min(times) if times else None

    @property
    def last_sent_bound_s(self) -> float | None:
        """The latest moment an attempt may have been sent: its send time when this worker saw it; else, for an
        attempt another worker made, no earlier than this incarnation's start (a crashed one sent it before
        that) nor than when the controller recorded it (a concurrent one sends it then)."""
        times = [
            a.sent_at_s if a.sent_at_s is not None else max(a.recorded_at_s, self.started_at_s)
            for a in self.attempts
            if a.sent is not False
        ]
        return max(times) if times else None

    #: ``observed_receipts()`` as the simulator kept it while the case ran (``None``: derived on each call), so
    #: that reading it costs the same after a thousand reads as after one. Not a field: never serialized.
    _receipts: tuple[Receipt, ...] | None = PrivateAttr(default=None)

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy, as pydantic makes it; with ``update``, ``observed_receipts()`` is derived anew from the copy's
        own attempts and lookups (a policy that rewrites what it saw must not read the receipts kept before)."""
        copy = super().model_copy(update=update, deep=deep)
        if update:
            copy._receipts = None
        return copy

    def observed_receipts(self) -> list[Receipt]:
        """Every receipt seen so far, from replies and lookups, oldest first, without repeats."""
        # Read from the private slot directly: pydantic's attribute path for a private attribute costs more than
        # the whole derivation on a short case.
        private = self.__pydantic_private__
        kept = private["_receipts"] if private else None
        if kept is not None:
            return list(kept)
        seen: dict[str, Receipt] = {}
        for attempt in self.attempts:
            if attempt.receipt is not None:
                seen.setdefault(attempt.receipt.receipt_id, attempt.receipt)
        for lookup in self.lookups:
            if lookup.receipt is not None:
                seen.setdefault(lookup.receipt.receipt_id, lookup.receipt)
        return list(seen.values())


@runtime_checkable
class Policy(Protocol):
    """A recovery policy: a name, a revision that goes into every report, and a pure decision."""

    name: str
    revision: str

    def decide(self, situation: Situation) -> Command:
        """Return the next command for this situation."""
        ...


class PolicyError(InputError):
    """A policy that cannot be loaded; the message is one line naming what and how to fix it."""


#: Where the shipped policies are: beside the harness package, in a checkout and once installed alike.
SHIPPED_POLICIES = Path(__file__).resolve().parents[1] / "policies"


def builtin_policy_names() -> list[str]:
    """Names of the policies shipped in the ``policies`` package, sorted. Raises ``PolicyError`` when another
    package of that name comes first on the path (a user's own ``policies/`` folder), which would hide them."""
    import policies

    found = [Path(p).resolve() for p in getattr(policies, "__path__", ())]
    if SHIPPED_POLICIES not in found:
        where = found[0] if found else getattr(policies, "__file__", None)
        raise PolicyError(
            f"the package 'policies' is imported from {where}, not the harness's own "
            f"({SHIPPED_POLICIES}): a folder of yours named policies/ hides the shipped policies; fix: rename it "
            "(my_policies/, say), or run from another folder"
        )
    return sorted(m.name for m in pkgutil.iter_modules(policies.__path__) if not m.name.startswith("_"))


def _module_of_file(path: str, attr: str) -> str:
    """How to name the module a file's path names: for a file that is there, its dotted name from the folder above
    its outermost package (the folders with an ``__init__.py``), and that folder to run from; else the path's
    parts with dots."""
    file = Path(path.replace("\\", "/"))
    if file.suffix == ".py" and file.is_file():
        root, parts = file.resolve().parent, [file.stem]
        while (root / "__init__.py").is_file() and root.parent != root:
            root, parts = root.parent, [root.name, *parts]
        dotted = ".".join(parts)
        return f"name the module as in {dotted}:{attr}, and run from {root} (or put it on PYTHONPATH)"
    parts = path.removesuffix(".py").replace("\\", "/").split("/")
    dotted = ".".join(part for part in parts if part not in ("", ".", ".."))
    return f"name the module with dots and without '.py', as in {dotted}:{attr} (run from the folder its package is in)"


def _raised_at(exc: BaseException) -> str:
    """Where importing a module raised ``exc``: the last line of Python that ran (``, at FILE:LINE``), not one of the
    import machinery's; nothing for a syntax error, whose message says where already."""
    if isinstance(exc, SyntaxError):
        return ""
    machinery = (__file__, importlib.__file__)
    frames = [
        f
        for f in traceback.extract_tb(exc.__traceback__)
        if not f.filename.startswith("<") and f.filename not in machinery
    ]
    return f", at {frames[-1].filename}:{frames[-1].lineno}" if frames else ""


def import_root(spec: str) -> Path | None:
    """The folder on the import path that a user's policy (``package.module:attr``, already loaded) was imported
    from: the one holding its top-level package or module. None for a shipped policy, or a module not loaded from
    a folder."""
    if ":" not in spec:
        return None
    module = sys.modules.get(spec.partition(":")[0].split(".")[0])
    if module is None:
        return None
    places = list(getattr(module, "__path__", None) or [])  # a package: the folder above its own
    if places:
        return Path(places[0]).absolute().parent
    file = getattr(module, "__file__", None)
    return Path(file).absolute().parent if file else None


def look_in(folder: str | None) -> None:
    """Put ``folder``, where a user's policy (``package.module:attr``) was imported from when its cases ran, on the
    import path: last, so that it shadows nothing; not when it is there already, or is no folder (any more). A
    worker process started after it is given the same path."""
    if folder is not None and folder not in sys.path and Path(folder).is_dir():
        sys.path.append(folder)


def _dotted_as_module(spec: str) -> str | None:
    """How to name a policy given as a module's dotted name (``pkg.mod``) or with its attribute dotted on
    (``pkg.mod.POLICY``), when that module is there: with a colon before the attribute. ``None`` otherwise (the
    module is not found, or importing it fails: left to the usual error)."""
    if "." not in spec or spec.startswith(".") or ":" in spec:
        return None
    head, _, tail = spec.rpartition(".")
    for module_name, attr in ((spec, "POLICY"), (head, tail)):
        try:
            found = importlib.util.find_spec(module_name)
        except (ImportError, ValueError):  # a parent that is not a package, or not there
            found = None
        # A package's missing module (``pkg.nosuch``) is a misspelt module, not an attribute: the usual error.
        if found is not None and (module_name == spec or found.submodule_search_locations is None):
            return f"name the policy object after a colon, as in {module_name}:{attr}"
    return None


def load_policy(spec: str) -> Policy:
    """Load a shipped policy by name, or a user's policy given as ``package.module:attr``."""
    if ":" in spec:
        module_name, _, attr = spec.partition(":")
        where = spec
        if attr and ("/" in module_name or "\\" in module_name):
            raise PolicyError(
                f"policy '{spec}': '{module_name}' is a file's path, not a module's name; fix: "
                + _module_of_file(module_name, attr)
            )
        if module_name and not attr and not module_name.startswith("."):
            raise PolicyError(
                f"policy '{spec}': no attribute after ':'; fix: name the policy object, as in {spec}POLICY"
            )
        if not module_name or not attr or module_name.startswith("."):
            raise PolicyError(f"policy '{spec}': expected package.module:attr; fix: name an importable module")
    else:
        known = builtin_policy_names()
        if spec not in known:
            dotted = _dotted_as_module(spec)
            if dotted is not None:
                raise PolicyError(f"unknown policy '{spec}'; fix: {dotted}")
            choose = one_of(spec, known, "policies 'python -m harness list' names")
            raise PolicyError(f"unknown policy '{spec}'; fix: {choose}, or package.module:attr")
        module_name, attr, where = f"policies.{spec}", "POLICY", spec
    try:
        # What a module prints as it is imported goes where what its policy prints goes: to stderr, never into
        # the tables and lines the harness prints on stdout.
        with contextlib.redirect_stdout(sys.stderr):
            module = importlib.import_module(module_name)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # a user's module can fail to import in any way (sys.exit too): one line
        reason = one_line(exc)
        fix = "check the module" + _raised_at(exc)
        missing = exc.name if isinstance(exc, ModuleNotFoundError) else None
        # The module itself, or a package it is in: not one of its own imports, whatever their names.
        if missing is not None and (missing == module_name or module_name.startswith(f"{missing}.")):
            # The module itself (or its package) is not on the path, as from another folder than usual.
            fix = f"run from the folder that holds '{module_name.split('.')[0]}', or put that folder on PYTHONPATH"
            package = sys.modules.get(missing.rpartition(".")[0])
            if module_name.endswith(".py"):  # a file's name given for the module's
                fix = f"name the module without '.py', as in {module_name.removesuffix('.py')}:{attr}"
            elif package is not None and hasattr(package, "__path__"):  # the package is there; its module is not
                has = sorted(m.name for m in pkgutil.iter_modules(package.__path__) if not m.name.startswith("_"))
                fix = f"'{package.__name__}' has no module '{missing.rpartition('.')[2]}': check the name" + (
                    f" (it has {', '.join(has[:10])}{', ...' if len(has) > 10 else ''})" if has else ""
                )
            elif package is not None:
                fix = f"'{package.__name__}' is a module, not a package: name a policy in it as {package.__name__}:ATTR"
        raise PolicyError(
            f"policy '{where}': cannot import '{module_name}' ({type(exc).__name__}: {reason}); fix: {fix}"
        ) from exc
    try:
        policy: Any = getattr(module, attr, _MISSING)
        if policy is _MISSING:
            raise PolicyError(f"policy '{where}': '{module_name}' has no attribute '{attr}'; fix: check the name")
        if policy is None:
            raise PolicyError(
                f"policy '{where}': '{module_name}.{attr}' is None, not a policy object; fix: set it to a policy "
                "(an object with 'name', 'revision' and 'decide(situation)')"
            )
        if _a_policy_class(policy):
            name = policy.__name__
            raise PolicyError(
                f"policy '{where}': is the class {name}, not a policy object; fix: instantiate it, {name}()"
            )
        problem = _shape_problem(policy)
    except PolicyError:
        raise
    except Exception as exc:  # a property of the user's object that raises
        raise PolicyError(
            f"policy '{where}': reading its name or revision raised {type(exc).__name__}: {one_line(exc)}; "
            "fix: make 'name' and 'revision' plain strings"
        ) from exc
    returns = _never_a_command(policy.decide) if problem is None else None
    if returns is not None:
        raise PolicyError(
            f"policy '{where}': its 'decide' returns {returns}, never a command; fix: make it a plain def that "
            "returns the command (no async, no yield)"
        )
    if problem is not None:
        raise PolicyError(
            f"policy '{where}': {problem} (a policy needs str 'name', str 'revision' and a 'decide(situation)' "
            "method); fix: see harness.policy.Policy"
        )
    if not 1 <= len(policy.revision) <= REVISION_MAX:
        raise PolicyError(
            f"policy '{where}': revision is {len(policy.revision)} characters; fix: give 1 to {REVISION_MAX} "
            "(it goes into every report and file name)"
        )
    if not policy.revision.isprintable():
        raise PolicyError(
            f"policy '{where}': revision {policy.revision!r} has a character that is not printable (a line break, "
            "a tab, a control character); fix: give printable text (it goes into every report, table and JUnit line)"
        )
    return cast(Policy, policy)


_MISSING = object()


def _a_policy_class(value: object) -> bool:
    """Whether ``value`` is a class whose instances would be policies: its ``decide`` takes ``self``, so called on
    the class every case would fail (its ``name`` and ``revision``, class attributes, make it look like one). A
    class whose ``decide`` is a static or class method is a policy as it is."""
    if not isinstance(value, type):
        return False
    decide = inspect.getattr_static(value, "decide", None)
    return decide is not None and not isinstance(decide, staticmethod | classmethod)


def _shape_problem(policy: object) -> str | None:
    """What keeps ``policy`` from being one (``its 'revision' is missing``, ``its 'name' is int 1, not text``), or
    None. Reading an attribute may raise: the caller says so."""
    for attr in ("name", "revision"):
        value = getattr(policy, attr, _MISSING)
        if value is _MISSING:
            return f"its '{attr}' is missing"
        if not isinstance(value, str):
            return f"its '{attr}' is {type(value).__name__} {one_line(repr(value), 40)}, not text"
    decide = getattr(policy, "decide", _MISSING)
    if decide is _MISSING:
        return "its 'decide' is missing"
    if not callable(decide):
        return f"its 'decide' is {type(decide).__name__} {one_line(repr(decide), 40)}, not a method"
    return None


def _never_a_command(decide: object) -> str | None:
    """What a ``decide`` returns instead of a command when it is an ``async def`` or yields (``a coroutine``), or
    None: called, it would fail every case the same way, with Python's own warning that a coroutine was never
    awaited beside it. A wrapped function (``functools.wraps``) and an object whose ``__call__`` is one are read
    as what they call."""
    try:
        inner = inspect.unwrap(decide)  # type: ignore[arg-type]
    except ValueError:  # a loop of wrappers: read as it is
        inner = decide
    for function in (inner, getattr(inner, "__call__", None)):  # noqa: B004 (its __call__ is read, not called)
        if inspect.isasyncgenfunction(function):
            return "an async generator"
        if inspect.iscoroutinefunction(function):
            return "a coroutine"
        if inspect.isgeneratorfunction(function):
            return "a generator"
    return None
