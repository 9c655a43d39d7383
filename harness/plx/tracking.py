"""Polyaxon tracking behind a small interface: each policy x scenario cell is one Polyaxon run.

Modes:
  offline  (default) tracks into ``<out>/polyaxon/runs/<uuid>/``, no server needed; send later with
           ``harness push <out>`` (``push_runs``: the runs the server has already are skipped)
  server   tracks offline the same way, then pushes each finished run to the configured server
           (``POLYAXON_HOST``), one request at a time; if that fails, nothing local is lost
  none     no Polyaxon at all
Inside a Polyaxon-managed job (Polyaxon sets ``POLYAXON_IS_MANAGED`` and ``POLYAXON_RUN_INSTANCE``), offline and
server mode log into that job's own run instead, and the job must run exactly one cell.

In each run: the inputs (scenario, policy and their revisions, task and action IDs, the seeds, harness
version); one batch of metrics, each the mean over the cell's cases of a figure the checker established (a
metric no case established is absent, never 0); and the outcome as ``outputs.recovery_outcome`` (the worst over
the seeds) with a count per outcome and ``outputs.cases_path``, the folder that holds the cell's case files
(``cases/<policy>``) in the run folder (the cases are not copied: a cell of a million seeds costs the same to
track as one of three). A cell with a harness error ends as a failed run with the reason.

``harness explore`` makes one run per (policy, scenario) explored: the template, depth, swarm, seeds and shard
as inputs; schedules, cases, violating cases, findings and violating cases per property as metrics; and the
exploration's ``explore.json`` with every finding's scenario file under ``outputs/findings/``.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import re
import sys
import threading
import time
import uuid
import warnings
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import Any, Literal, TypeVar

from harness.check.registry import METRICS
from harness.errors import one_line
from harness.model import OUTCOMES, Outcome
from harness.plx import DEFAULT_PROJECT, TRACKING_MODES, TrackingMode
from harness.version import __version__

__all__ = [
    "DEFAULT_PROJECT",
    "TRACKING_MODES",
    "CellRecord",
    "ExplorationRecord",
    "PushResult",
    "Tracked",
    "TrackingMode",
    "cell_outcome",
    "is_managed",
    "offline_root",
    "push_runs",
    "split_project",
    "track_cell",
    "track_exploration",
]

#: Worst first: a cell's outcome is the worst of its seeds'.
_SEVERITY: tuple[Outcome, ...] = tuple(reversed(OUTCOMES))
#: What the registry says Polyaxon gets (the worker's own report is not a measurement the checker established).
_LOGGED = frozenset(m.name for m in METRICS if m.logged)


@dataclass(frozen=True, slots=True)
class CellRecord:
    """One finished cell, as tallied over its cases: what ran, how the cases came out, and the mean figures."""

    policy: str
    scenario: str
    seeds: Sequence[int]
    #: policy_revision, scenario_revision, task_id, action_id
    identity: dict[str, str]
    #: Outcome counts per (policy, scenario variant).
    counts: dict[tuple[str, str], Counter[str]]
    #: The mean of each logged metric over the cases that established it.
    metrics: dict[str, float]
    #: The first harness error, if any: (seed, error); the run then ends as failed.
    first_error: Any = None


@dataclass(frozen=True, slots=True)
class Tracked:
    run_uuid: str | None
    status: Literal["succeeded", "failed", "error"]
    error: str | None = None


def offline_root(out: Path) -> Path:
    return out / "polyaxon"


def is_managed() -> bool:
    """True inside a job that Polyaxon started: it sets these two variables, and its client reads them."""
    flag = os.environ.get("POLYAXON_IS_MANAGED", "").strip().lower() in ("true", "1", "yes")
    return flag and bool(os.environ.get("POLYAXON_RUN_INSTANCE"))


def split_project(spec: str) -> tuple[str, str]:
    owner, _, name = spec.rpartition("/")
    return owner or "default", name


def cell_outcome(counts: Counter[str]) -> Outcome:
    """The worst outcome of a cell's cases."""
    return next((o for o in _SEVERITY if counts.get(o)), "harness_error")


_ENV_KEYS = ("POLYAXON_IS_OFFLINE", "POLYAXON_OFFLINE_ROOT", "POLYAXON_TRACKING_FLUSH_DELAY")


def _polyaxon_tracking(root: Path | None) -> ModuleType:
    """Import ``polyaxon.tracking`` configured for offline tracking into ``root`` (``None``: managed job)."""
    if root is not None:
        os.environ["POLYAXON_IS_OFFLINE"] = "true"
        os.environ["POLYAXON_OFFLINE_ROOT"] = str(root)
    os.environ.setdefault("POLYAXON_TRACKING_FLUSH_DELAY", "0")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from polyaxon import tracking
        from polyaxon._contexts import paths as ctx_paths
    if root is not None:
        # Polyaxon reads the offline root once, at import; point it at this run's folder every time.
        ctx_paths.CONTEXT_OFFLINE_ROOT = str(root)
        ctx_paths.CONTEXT_OFFLINE_FORMAT = f"{root}/{{}}"
    return tracking


def track_cell(cell: CellRecord, out: Path, project: str, run_uuid: str | None = None) -> Tracked:
    """Record one cell as one Polyaxon run (with ``run_uuid``, or a new one). Never raises: a tracking failure
    is returned as ``error``."""
    tags = ["recovery-harness", cell.policy, cell.scenario]
    log = partial(_log_cell, cell=cell, out=out)
    return _track_run(out, project, f"{cell.policy}-{cell.scenario}", tags, log, run_uuid)


@dataclass(frozen=True, slots=True)
class ExplorationRecord:
    """One exploration of one (policy, scenario): what was explored, what was found, and the files to keep."""

    policy: str
    policy_revision: str
    scenario: str
    scenario_revision: str
    depth: int
    swarm: int
    seeds: tuple[int, ...]
    shard: int
    shards: int
    schedules: int
    cases: int
    violating: int
    #: violating cases per property
    violations: dict[str, int]
    #: (path under the run's outputs, text): the exploration's summary and every finding's scenario file
    files: tuple[tuple[str, str], ...]
    findings: int


def track_exploration(
    record: ExplorationRecord, out: Path, project: str, write: Callable[[Path, str], None]
) -> Tracked:
    """Record one exploration of one (policy, scenario) as one Polyaxon run. Never raises."""
    tags = ["recovery-harness", "explore", record.policy, record.scenario]
    name = f"explore-{record.policy}-{record.scenario}"
    if record.shards > 1:
        name += f"-{record.shard}of{record.shards}"
    return _track_run(out, project, name, tags, partial(_log_exploration, record=record, write=write))


def _track_run(
    out: Path,
    project: str,
    name: str,
    tags: list[str],
    log: Callable[[ModuleType], str | None],
    run_uuid: str | None = None,
) -> Tracked:
    """One Polyaxon run around ``log(tracking)`` (which returns a failure reason, or None). Never raises."""
    managed = is_managed()
    root = None if managed else offline_root(out)
    # init() replaces sys.excepthook and end() resets stdout/stderr: give the caller back its own, and its
    # environment too (offline mode is set through environment variables).
    saved = (sys.excepthook, sys.stdout, sys.stderr)
    saved_env = {key: os.environ.get(key) for key in _ENV_KEYS}
    run_uuid = None if managed else (run_uuid or uuid.uuid4().hex)
    # Polyaxon writes events from threads of its own: one that fails (a full disk) printed its traceback, a
    # screen of it before the harness's own line. Its failure is this run's, in one line.
    # Only threads started meanwhile are Polyaxon's: any other's failure goes to the hook that was there.
    thread_failed: list[str] = []
    saved_thread_hook, running = threading.excepthook, set(threading.enumerate())

    def on_thread_failure(hook: Any) -> None:
        if hook.thread is None or hook.thread in running:
            saved_thread_hook(hook)
        else:
            thread_failed.append(f"{hook.exc_type.__name__}: {hook.exc_value}")

    threading.excepthook = on_thread_failure
    # In a managed job the client talks to the server, and logs a screen of traceback for each error it also
    # raises (``handle_api_error``): the failure is said in one line instead, from what it raised.
    quieted = logging.root.manager.disable
    if managed:
        logging.disable(logging.CRITICAL)
    try:
        tracking = _polyaxon_tracking(root)
        owner, project_name = split_project(project)
        common: dict[str, Any] = {
            "track_code": False,
            # The environment record holds host details and needs a cluster namespace in managed jobs.
            "track_env": False,
            "track_logs": False,
            "collect_resources": False,
        }
        if managed:
            run = tracking.init(**common)
            run_uuid = getattr(run, "run_uuid", None)
        else:
            run = tracking.init(
                owner=owner,
                project=project_name,
                run_uuid=run_uuid,
                name=name,
                is_offline=True,
                is_new=True,
                tags=tags,
                **common,
            )
            _end_once_without_sleep(run)
        failed: str | None = None
        try:
            failed = log(tracking)
            if failed is None and thread_failed:  # the run on disk says so too
                failed = thread_failed[0]
                tracking.log_failed(reason="TrackingError", message=failed[:500])
        except Exception as exc:
            failed = f"{type(exc).__name__}: {exc}"
            tracking.log_failed(reason="TrackingError", message=failed[:500])
        finally:
            tracking.end()
        failed = failed or next(iter(thread_failed), None)
        return Tracked(run_uuid, "failed" if failed else "succeeded", failed)
    except Exception as exc:
        return Tracked(run_uuid, "error", f"{type(exc).__name__}: {exc}")
    finally:
        logging.disable(quieted)
        if threading.excepthook is on_thread_failure:  # not if another caller has put its own since
            threading.excepthook = saved_thread_hook
        sys.excepthook, sys.stdout, sys.stderr = saved
        for key, value in saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _end_once_without_sleep(run: Any) -> None:
    """Polyaxon (2.18) ends a run by writing its final status, calling ``end()`` (which, on a tracking run, runs the
    whole ending again from the start: closing the loggers, reading back every metric's events for the summaries,
    persisting the run), then sleeping 0.1 s "to give the opportunity to the worker to pick the message". Offline
    there is no such worker (the status is written in the call), and the ending that called for the final status
    goes on to do all of that once itself. The sleep and the second ending were nearly all that tracking cost
    per cell (a default grid spent 70 of its 74 s in them); this run ends the same way without them, its files
    the same but for their times."""
    from polyaxon._schemas.lifecycle import LifeCycle

    def log_end_status(status: Any, reason: str | None = None, message: str | None = None) -> None:
        if run.status in LifeCycle.DONE_VALUES:
            return
        run.log_status(status=status, reason=reason, message=message)

    if callable(getattr(run, "_log_end_status", None)):  # the method this replaces, as polyaxon 2.18 names it
        run._log_end_status = log_end_status
    if callable(getattr(run, "_collect_events_summaries", None)):  # likewise
        run._collect_events_summaries = partial(_collect_events_summaries, run, run._collect_events_summaries)


def _collect_events_summaries(
    run: Any,
    polyaxons: Callable[..., tuple[list[Any], dict[str, Any]]],
    events_path: str,
    events_kind: str,
    last_check: Any,
    is_system_resource: bool = False,
) -> tuple[list[Any], dict[str, Any]]:
    """What Polyaxon (2.18) collects as a run ends, for a folder of metrics that each hold one value (as a cell's
    and an exploration's do): the same lineage summaries and last values, built from the one line of each file.

    Polyaxon reads every metric's file back with ``pandas.read_csv`` and summarizes it with ``describe()``: about
    2 ms per metric, 34 of the 39 ms a cell's tracking cost (``benchmarks/bench.py``, before and after). Any
    other folder (a metric logged at several steps, a value that is not a plain finite number, another kind of
    event) is Polyaxon's own to summarize. tests/test_tracking.py compares both summaries, file by file."""
    from clipped.utils.paths import get_files_in_path
    from polyaxon._env_vars.getters import get_artifacts_store_name  # type: ignore[attr-defined]
    from traceml.artifacts import V1ArtifactKind, V1RunArtifact  # type: ignore[attr-defined]

    if events_kind != V1ArtifactKind.METRIC or last_check is not None or is_system_resource:
        return polyaxons(events_path, events_kind, last_check, is_system_resource)
    # The files in the order Polyaxon lists them (its get_files_in_path_context yields this list).
    files: list[str] = get_files_in_path(os.path.join(events_path, events_kind))
    read = [(f, _one_value(f)) for f in files]
    if any(value is None for _, value in read):
        return polyaxons(events_path, events_kind, last_check, is_system_resource)
    connection = get_artifacts_store_name(default=None)
    summaries: list[Any] = []
    last_values: dict[str, Any] = {}
    for f, one in read:
        assert one is not None
        step, at, value = one
        name = os.path.basename(f).split(".plx")[0]
        summary = {
            "is_event": True,
            "step": {"count": 1, "min": step, "max": step},
            "timestamp": {"min": at, "max": at},
            "metric": {
                "count": 1.0,
                "mean": value,
                "std": None,
                "min": value,
                "25%": value,
                "50%": value,
                "75%": value,
                "max": value,
                "last": value,
            },
        }
        summaries.append(  # kind: a str, as Polyaxon passes it
            V1RunArtifact.model_construct(
                name=name,
                kind=events_kind,  # type: ignore[arg-type]
                connection=connection,
                summary=summary,
                path=run._sanitize_filepath(filepath=f),
                is_input=False,
            )
        )
        last_values[name] = value
    return summaries, last_values


#: One metric's file with one line: ``step|timestamp|value``, the value a float as Python writes it.
_ONE_VALUE = re.compile(
    r"step\|timestamp\|metric\n(\d+)\|(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{6})?\+00:00)\|(-?\d+\.\d+(?:e[+-]\d+)?)\n?"
)


def _one_value(path: str) -> tuple[int, str, float] | None:
    """A metric file's one (step, ISO time, value), as pandas would read them; None for any other file."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read(4096)
    except (OSError, UnicodeDecodeError):  # not text the harness wrote: None, as any other file
        return None
    match = _ONE_VALUE.fullmatch(text)
    if match is None:
        return None
    step, at, value = match.groups()
    return int(step), at.replace(" ", "T", 1), float(value)


def _log_exploration(tracking: ModuleType, record: ExplorationRecord, write: Callable[[Path, str], None]) -> None:
    tracking.log_inputs(
        policy=record.policy,
        policy_revision=record.policy_revision,
        scenario=record.scenario,
        scenario_revision=record.scenario_revision,
        depth=record.depth,
        swarm=record.swarm,
        seeds=list(record.seeds),
        shard=record.shard,
        shards=record.shards,
        harness_version=__version__,
    )
    outputs = Path(tracking.get_outputs_path())
    for name, text in record.files:
        write(outputs / name, text)
    by_property = {f"violations_{name}": count for name, count in sorted(record.violations.items())}
    tracking.log_metrics(
        step=0,
        schedules=record.schedules,
        cases=record.cases,
        violating_cases=record.violating,
        findings=record.findings,
        **by_property,
    )
    tracking.log_outputs(findings=record.findings, violating_cases=record.violating, schedules=record.schedules)


#: Seeds listed one by one in a run's inputs up to this many; beyond, their first, last and count.
SEEDS_LISTED = 1000


def _log_cell(tracking: ModuleType, cell: CellRecord, out: Path) -> str | None:
    variants = list(dict.fromkeys(s for _, s in cell.counts))
    inputs: dict[str, Any] = {}
    if len(variants) > 1:
        # A scenario that stands for several cases (one per connector crash point).
        inputs["variants"] = variants
    seeds = cell.seeds
    if len(seeds) <= SEEDS_LISTED:
        inputs["seeds"] = list(seeds)
    else:
        inputs.update(seed_first=seeds[0], seed_last=seeds[-1], seed_count=len(seeds))
    tracking.log_inputs(
        scenario=cell.scenario,
        scenario_revision=cell.identity.get("scenario_revision"),
        policy=cell.policy,
        policy_revision=cell.identity.get("policy_revision"),
        task_id=cell.identity.get("task_id"),
        action_id=cell.identity.get("action_id"),
        harness_version=__version__,
        **inputs,
    )
    metrics = {name: value for name, value in cell.metrics.items() if name in _LOGGED}
    if metrics:
        tracking.log_metrics(step=0, **metrics)
    total: Counter[str] = Counter()
    for counter in cell.counts.values():
        total.update(counter)
    counts = {f"cases_{o}": total.get(o, 0) for o in OUTCOMES}
    # Where the case files are, not a copy of them: tracking costs the same for three seeds or a million. (A
    # lineage reference to a local folder would be neater, but a Polyaxon server refuses it on push.)
    cases_path = out.resolve() / "cases" / cell.policy
    tracking.log_outputs(
        recovery_outcome=cell_outcome(total), cases=sum(total.values()), cases_path=str(cases_path), **counts
    )
    if cell.first_error is not None:
        reason = f"harness error at seed {cell.first_error.seed}: {cell.first_error.error}"
        tracking.log_failed(reason="HarnessError", message=reason[:500])
        return reason
    return None


@dataclass(frozen=True, slots=True)
class PushResult:
    pushed: tuple[str, ...]
    error: str | None
    #: Runs the server had already (``skip_present``), not sent again.
    present: tuple[str, ...] = ()


T = TypeVar("T")


def _one_at_a_time(call: Callable[[], T], attempts: int = 8) -> T:
    """Retry a write the server refused with 405: a sqlite-backed server allows one writer at a time."""
    from polyaxon.exceptions import ApiException

    for attempt in range(attempts):
        try:
            return call()
        except ApiException as exc:
            if exc.status != 405 or attempt == attempts - 1:
                raise
            time.sleep(0.2 * (attempt + 1))
    raise AssertionError("unreachable")


def _push_offline_run(client: Any, path: str) -> None:
    """What ``RunClient.push_offline_run`` of polyaxon 2.18.0 (pinned) sends (the run, its lineage, its files),
    each write retried on its own.

    Retrying the whole push after the server refused a later write re-sends the run it already created, which it
    answers with 400 (a run with that uuid already exists); that failed a clean-clone CI run.
    """
    client._is_offline = False  # the client's writes are no-ops while it is offline
    _one_at_a_time(
        partial(
            client.client.runs_v1.sync_run,
            owner=client.owner,
            project=client.project,
            body=client.run_data,
            async_req=False,
        )
    )
    lineage = list(client._artifacts_lineage.values())
    if lineage:
        _one_at_a_time(partial(client.log_artifact_lineage, lineage, async_req=False))
    # The client draws an upload bar (rich's, on standard output, whatever is asked): in the outcome table a run
    # prints there, even --quiet, one a run pushed. The harness says its own progress; the bar goes nowhere.
    with contextlib.redirect_stdout(io.StringIO()):
        _one_at_a_time(partial(client.upload_artifacts_dir, dirpath=path, path="/", overwrite=True, relative_to=path))


def _on_server(client: Any) -> bool:
    """Whether the server has the run ``client`` names already (sent by an earlier push, whole or in part)."""
    from polyaxon.exceptions import ApiException

    try:
        client.refresh_data()
    except ApiException as exc:
        if exc.status == 404:
            return False
        raise
    return True


def push_runs(root: Path, run_uuids: Sequence[str], project: str, skip_present: bool = False) -> PushResult:
    """Send finished offline runs to the configured Polyaxon server, one at a time; stop at the first error. With
    ``skip_present``, a run the server has already is not sent again (it would answer 400: a run with that uuid
    already exists): what ``harness push`` does, so that a push that stopped part way can be given again."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from polyaxon.client import ProjectClient, RunClient  # type: ignore[attr-defined]
        from polyaxon.exceptions import ApiException
    owner, name = split_project(project)
    previous = logging.root.manager.disable
    logging.disable(logging.CRITICAL)  # the client logs whole tracebacks for errors it also raises
    pushed: list[str] = []
    present: list[str] = []
    try:
        projects = ProjectClient(owner=owner, project=name, is_offline=False)
        try:
            projects.refresh_data()
        except ApiException as exc:
            if exc.status != 404:
                raise
            _one_at_a_time(lambda: projects.create({"name": name}))
        for run_uuid in run_uuids:
            if skip_present and _on_server(RunClient(owner=owner, project=name, run_uuid=run_uuid, is_offline=False)):
                present.append(run_uuid)
                continue
            path = str(root / "runs" / run_uuid)
            client = RunClient(owner=owner, project=name, run_uuid=run_uuid, is_offline=True)
            RunClient.load_offline_run(path=path, run_client=client, reset_project=True, raise_if_not_found=True)
            _push_offline_run(client, path)
            pushed.append(run_uuid)
    except Exception as exc:
        reason = one_line(getattr(exc, "reason", None) or exc)
        return PushResult(tuple(pushed), f"{type(exc).__name__}: {reason}", tuple(present))
    finally:
        logging.disable(previous)
    return PushResult(tuple(pushed), None, tuple(present))
