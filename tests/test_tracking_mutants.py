"""Polyaxon tracking, checked in this process (the thirty-fourth mutation pass, tests/MUTANTS.md).

tests/test_tracking.py reads runs back in a subprocess (tests/plx_read.py) and runs whole grids through
``harness run``; here every value is read in this process: a fake ``polyaxon.tracking`` records what a run is
given, and the few tests that track with Polyaxon itself (offline) read ``run.plx.json`` back as JSON.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import tempfile
import threading
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from harness.model import OUTCOMES
from harness.plx import tracking
from harness.plx.tracking import (
    SEEDS_LISTED,
    CellRecord,
    ExplorationRecord,
    PushResult,
    Tracked,
    cell_outcome,
    is_managed,
    offline_root,
    push_runs,
    split_project,
    track_cell,
    track_exploration,
)
from harness.version import __version__

_ENV = ("POLYAXON_IS_OFFLINE", "POLYAXON_OFFLINE_ROOT", "POLYAXON_TRACKING_FLUSH_DELAY")


def _import_polyaxon() -> None:
    """Import Polyaxon's tracking once, as the harness does (offline, into a root, no flush delay), and give the
    environment back: its import takes seconds, and a test of one mutant should not pay it."""
    saved = {key: os.environ.get(key) for key in _ENV}
    with tempfile.TemporaryDirectory() as root:
        try:
            tracking._polyaxon_tracking(Path(root))
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value


_import_polyaxon()


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Offline tracking, as tests/test_tracking.py's runs have it: not in a managed job, no flush delay."""
    monkeypatch.delenv("POLYAXON_IS_MANAGED", raising=False)
    monkeypatch.delenv("POLYAXON_RUN_INSTANCE", raising=False)
    monkeypatch.setenv("POLYAXON_OFFLINE_ROOT", str(tmp_path / "elsewhere"))
    monkeypatch.setenv("POLYAXON_TRACKING_FLUSH_DELAY", "0")


def _record(**changes: Any) -> CellRecord:
    fields: dict[str, Any] = {
        "policy": "stop_on_timeout",
        "scenario": "lost_response",
        "seeds": (1, 2, 3),
        "identity": {"policy_revision": "4", "scenario_revision": "5", "task_id": "t-1", "action_id": "a-1"},
        "counts": {("stop_on_timeout", "lost_response"): Counter(correct=2, incorrect=1)},
        "metrics": {"dispatches": 1.5, "executor_finished": 1.0, "reads": 0.0},
    }
    return CellRecord(**{**fields, **changes})


def _exploration(**changes: Any) -> ExplorationRecord:
    fields: dict[str, Any] = {
        "policy": "retry_same_key",
        "policy_revision": "2",
        "scenario": "lost_response",
        "scenario_revision": "3",
        "depth": 4,
        "swarm": 5,
        "seeds": (7, 8),
        "shard": 1,
        "shards": 1,
        "schedules": 40,
        "cases": 41,
        "violating": 6,
        "violations": {"no_duplicate": 2, "accounted": 4},
        "files": (("explore.json", "{}"), ("findings/a.yaml", "x: 1\n")),
        "findings": 3,
    }
    return ExplorationRecord(**{**fields, **changes})


class _Run:
    def __init__(self, run_uuid: str | None = None) -> None:
        self.run_uuid = run_uuid
        self.status = "running"
        self._log_end_status = lambda *a, **k: None
        self._collect_events_summaries = lambda *a, **k: None


class _Tracking:
    """``polyaxon.tracking`` as a run uses it: every call recorded."""

    def __init__(self, outputs: Path, init_raises: Exception | None = None, run_uuid: str | None = "managed-1"):
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.outputs, self.init_raises, self.run = outputs, init_raises, _Run(run_uuid)
        self.original = (self.run._log_end_status, self.run._collect_events_summaries)
        #: the offline root each run was given (None: a managed job's)
        self.roots: list[Path | None] = []

    def _note(self, called: str, /, **kwargs: Any) -> None:
        self.calls.append((called, kwargs))

    def init(self, **kwargs: Any) -> _Run:
        self._note("init", **kwargs)
        sys.excepthook = lambda *a: None  # as Polyaxon does
        sys.stdout = sys.stderr = None
        os.environ["POLYAXON_IS_OFFLINE"] = "changed"
        if self.init_raises is not None:
            raise self.init_raises
        return self.run

    def log_inputs(self, **kwargs: Any) -> None:
        self._note("log_inputs", **kwargs)

    def log_metrics(self, **kwargs: Any) -> None:
        self._note("log_metrics", **kwargs)

    def log_outputs(self, **kwargs: Any) -> None:
        self._note("log_outputs", **kwargs)

    def log_failed(self, **kwargs: Any) -> None:
        self._note("log_failed", **kwargs)

    def end(self) -> None:
        self._note("end")

    def get_outputs_path(self) -> str:
        return str(self.outputs)

    def named(self, name: str) -> list[dict[str, Any]]:
        return [kwargs for called, kwargs in self.calls if called == name]


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[_Tracking]:
    made = _Tracking(tmp_path / "outputs")
    roots: list[Path | None] = []

    def polyaxon_tracking(root: Path | None) -> _Tracking:
        roots.append(root)
        return made

    monkeypatch.setattr(tracking, "_polyaxon_tracking", polyaxon_tracking)
    made.roots = roots
    yield made


_COMMON = {"track_code": False, "track_env": False, "track_logs": False, "collect_resources": False}


# --- small parts ---------------------------------------------------------------------------------------------------


def test_the_offline_root_is_the_run_folders_polyaxon(tmp_path: Path) -> None:
    assert offline_root(tmp_path / "run") == tmp_path / "run" / "polyaxon"


@pytest.mark.parametrize(
    ("flag", "instance", "managed"),
    [
        ("true", "default.p.runs.1", True),
        (" TRUE ", "x", True),
        ("1", "x", True),
        ("Yes", "x", True),
        ("true", "", False),
        ("true", None, False),
        ("false", "x", False),
        ("no", "x", False),
        ("", "x", False),
        (None, "x", False),
        ("truely", "x", False),
    ],
)
def test_a_managed_job_has_both_polyaxon_variables(
    monkeypatch: pytest.MonkeyPatch, flag: str | None, instance: str | None, managed: bool
) -> None:
    for key, value in (("POLYAXON_IS_MANAGED", flag), ("POLYAXON_RUN_INSTANCE", instance)):
        if value is None:
            monkeypatch.delenv(key, raising=False)
        else:
            monkeypatch.setenv(key, value)
    assert is_managed() is managed


@pytest.mark.parametrize(
    ("spec", "split"),
    [("acme/proj", ("acme", "proj")), ("proj", ("default", "proj")), ("a/b/c", ("a/b", "c")), ("/p", ("default", "p"))],
)
def test_a_project_is_owner_and_name_the_owner_default(spec: str, split: tuple[str, str]) -> None:
    assert split_project(spec) == split


@pytest.mark.parametrize(
    ("counts", "outcome"),
    [
        (Counter(correct=3), "correct"),
        (Counter(correct=3, escalated=1), "escalated"),
        (Counter(escalated=1, unresolved=2), "unresolved"),
        (Counter(unresolved=1, abandoned=1, correct=1), "abandoned"),
        (Counter(abandoned=1, incorrect=1), "incorrect"),
        (Counter(incorrect=1, harness_error=1), "harness_error"),
        (Counter(correct=1, incorrect=0, harness_error=0), "correct"),
        (Counter(), "harness_error"),
    ],
)
def test_a_cells_outcome_is_its_worst_cases(counts: Counter[str], outcome: str) -> None:
    assert cell_outcome(counts) == outcome


# --- a run around what is logged ----------------------------------------------------------------------------------


def test_an_offline_run_is_made_with_its_name_tags_project_and_no_host_details(fake: _Tracking, tmp_path: Path) -> None:
    tracked = track_cell(_record(), tmp_path / "out", "acme/proj", run_uuid="u-1")
    assert tracked == Tracked("u-1", "succeeded", None)
    assert fake.roots == [tmp_path / "out" / "polyaxon"]
    assert fake.calls[0] == (
        "init",
        {
            "owner": "acme",
            "project": "proj",
            "run_uuid": "u-1",
            "name": "stop_on_timeout-lost_response",
            "is_offline": True,
            "is_new": True,
            "tags": ["recovery-harness", "stop_on_timeout", "lost_response"],
            **_COMMON,
        },
    )
    assert fake.calls[-1] == ("end", {})
    # Its ending is replaced by the one without Polyaxon's sleep.
    assert fake.run._log_end_status is not fake.original[0]
    assert fake.run._collect_events_summaries is not fake.original[1]


def test_a_run_without_a_uuid_gets_a_new_one_each_time(fake: _Tracking, tmp_path: Path) -> None:
    first = track_cell(_record(), tmp_path, "p")
    second = track_cell(_record(), tmp_path, "p")
    assert first.run_uuid is not None and second.run_uuid is not None and first.run_uuid != second.run_uuid
    assert len(first.run_uuid) == 32 and int(first.run_uuid, 16) >= 0
    assert [kwargs["run_uuid"] for kwargs in fake.named("init")] == [first.run_uuid, second.run_uuid]
    assert fake.named("init")[0]["owner"] == "default" and fake.named("init")[0]["project"] == "p"


def test_a_managed_job_logs_into_its_own_run(fake: _Tracking, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POLYAXON_IS_MANAGED", "true")
    monkeypatch.setenv("POLYAXON_RUN_INSTANCE", "default.p.runs.managed-1")
    tracked = track_cell(_record(), tmp_path, "acme/proj", run_uuid="ignored")
    assert tracked == Tracked("managed-1", "succeeded", None)
    assert fake.roots == [None]
    assert fake.calls[0] == ("init", _COMMON)
    # Its ending is Polyaxon's own: it is not an offline run.
    assert (fake.run._log_end_status, fake.run._collect_events_summaries) == fake.original


def test_a_managed_run_without_a_uuid_is_tracked_as_none(
    fake: _Tracking, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("POLYAXON_IS_MANAGED", "1")
    monkeypatch.setenv("POLYAXON_RUN_INSTANCE", "x")
    del fake.run.run_uuid
    assert track_cell(_record(), tmp_path, "p") == Tracked(None, "succeeded", None)


def test_a_run_that_cannot_start_is_an_error_and_everything_is_given_back(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    made = _Tracking(tmp_path, init_raises=RuntimeError("no store"))
    monkeypatch.setattr(tracking, "_polyaxon_tracking", lambda root: made)
    monkeypatch.setenv("POLYAXON_IS_OFFLINE", "before")
    monkeypatch.delenv("POLYAXON_TRACKING_FLUSH_DELAY")
    saved = (sys.excepthook, sys.stdout, sys.stderr, threading.excepthook)
    tracked = track_cell(_record(), tmp_path, "p", run_uuid="u-2")
    assert tracked == Tracked("u-2", "error", "RuntimeError: no store")
    assert (sys.excepthook, sys.stdout, sys.stderr, threading.excepthook) == saved
    assert os.environ["POLYAXON_IS_OFFLINE"] == "before"
    assert os.environ["POLYAXON_OFFLINE_ROOT"] == str(tmp_path / "elsewhere")
    assert "POLYAXON_TRACKING_FLUSH_DELAY" not in os.environ
    assert made.named("end") == []


def test_a_managed_run_that_cannot_start_has_no_uuid(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("POLYAXON_IS_MANAGED", "true")
    monkeypatch.setenv("POLYAXON_RUN_INSTANCE", "x")
    made = _Tracking(tmp_path, init_raises=ValueError("no namespace"))
    monkeypatch.setattr(tracking, "_polyaxon_tracking", lambda root: made)
    assert track_cell(_record(), tmp_path, "p", run_uuid="u-3") == Tracked(None, "error", "ValueError: no namespace")


def _run_logging(log: Callable[[Any], str | None], tmp_path: Path) -> Tracked:
    return tracking._track_run(tmp_path, "p", "a-run", ["t"], log, "u-4")


def test_a_log_that_fails_fails_the_run_with_its_reason_cut_for_polyaxon(fake: _Tracking, tmp_path: Path) -> None:
    def log(_tracking: Any) -> str | None:
        raise KeyError("x" * 600)

    tracked = _run_logging(log, tmp_path)
    failed = f"KeyError: '{'x' * 600}'"
    assert tracked == Tracked("u-4", "failed", failed)
    assert fake.calls[1:] == [("log_failed", {"reason": "TrackingError", "message": failed[:500]}), ("end", {})]


def test_a_log_that_says_why_it_failed_fails_the_run_with_that(fake: _Tracking, tmp_path: Path) -> None:
    tracked = _run_logging(lambda _t: "harness error at seed 3: boom", tmp_path)
    assert tracked == Tracked("u-4", "failed", "harness error at seed 3: boom")
    assert fake.calls[1:] == [("end", {})]


def test_a_polyaxon_thread_that_fails_fails_the_run_with_its_first_failure(fake: _Tracking, tmp_path: Path) -> None:
    def log(_tracking: Any) -> None:
        for error in (OSError(28, "No space left on device"), ValueError("y" * 600)):

            def write(error: Exception = error) -> None:
                raise error

            thread = threading.Thread(target=write)
            thread.start()
            thread.join()

    before = threading.excepthook
    tracked = _run_logging(log, tmp_path)
    assert tracked == Tracked("u-4", "failed", "OSError: [Errno 28] No space left on device")
    assert fake.calls[1:] == [
        ("log_failed", {"reason": "TrackingError", "message": "OSError: [Errno 28] No space left on device"}),
        ("end", {}),
    ]
    assert threading.excepthook is before


def test_a_polyaxon_threads_long_failure_is_cut_for_polyaxon_only(fake: _Tracking, tmp_path: Path) -> None:
    def log(_tracking: Any) -> None:
        def write() -> None:
            raise ValueError("y" * 600)

        thread = threading.Thread(target=write)
        thread.start()
        thread.join()

    tracked = _run_logging(log, tmp_path)
    assert tracked.error == f"ValueError: {'y' * 600}" and tracked.status == "failed"
    assert fake.named("log_failed") == [{"reason": "TrackingError", "message": tracked.error[:500]}]


def test_a_thread_failure_during_a_failing_log_keeps_the_logs_reason(fake: _Tracking, tmp_path: Path) -> None:
    def log(_tracking: Any) -> str:
        thread = threading.Thread(target=lambda: 1 / 0)
        thread.start()
        thread.join()
        return "the log's own reason"

    assert _run_logging(log, tmp_path) == Tracked("u-4", "failed", "the log's own reason")
    assert fake.named("log_failed") == []


def test_a_thread_failure_after_the_log_still_fails_the_run(fake: _Tracking, tmp_path: Path) -> None:
    """A Polyaxon thread that fails while the run ends (its events written at ``end()``) fails it too."""

    def end() -> None:
        thread = threading.Thread(target=lambda: [][1])
        thread.start()
        thread.join()

    fake.end = end  # type: ignore[method-assign]
    tracked = _run_logging(lambda _t: None, tmp_path)
    assert tracked == Tracked("u-4", "failed", "IndexError: list index out of range")


def test_failures_of_threads_not_polyaxons_go_to_the_hook_that_was_there(fake: _Tracking, tmp_path: Path) -> None:
    seen: list[Any] = []
    go = threading.Event()

    def other() -> None:
        go.wait(30)
        raise ValueError("not Polyaxon's")

    running = threading.Thread(target=other)
    running.start()

    def log(_tracking: Any) -> None:
        go.set()
        running.join()
        hook = threading.excepthook
        hook(cast(Any, SimpleNamespace(thread=None, exc_type=TypeError, exc_value=TypeError("threadless"))))

    before = threading.excepthook
    threading.excepthook = seen.append
    try:
        tracked = _run_logging(log, tmp_path)
        assert threading.excepthook == seen.append
    finally:
        threading.excepthook = before
    assert tracked == Tracked("u-4", "succeeded", None)
    assert [str(hook.exc_value) for hook in seen] == ["not Polyaxon's", "threadless"]


def test_a_thread_hook_put_in_meanwhile_is_left_in_place(fake: _Tracking, tmp_path: Path) -> None:
    def theirs(hook: Any) -> None:
        pass

    def log(_tracking: Any) -> None:
        threading.excepthook = theirs

    before = threading.excepthook
    try:
        _run_logging(log, tmp_path)
        assert threading.excepthook is theirs
    finally:
        threading.excepthook = before


def test_hooks_streams_and_environment_come_back_after_a_run(
    fake: _Tracking, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("POLYAXON_IS_OFFLINE", raising=False)
    monkeypatch.setenv("POLYAXON_OFFLINE_ROOT", "/before")
    saved = (sys.excepthook, sys.stdout, sys.stderr)
    assert track_cell(_record(), tmp_path, "p").status == "succeeded"
    assert (sys.excepthook, sys.stdout, sys.stderr) == saved
    assert "POLYAXON_IS_OFFLINE" not in os.environ
    assert os.environ["POLYAXON_OFFLINE_ROOT"] == "/before"
    assert os.environ["POLYAXON_TRACKING_FLUSH_DELAY"] == "0"


# --- what a cell logs -------------------------------------------------------------------------------------------


def test_a_cell_logs_its_inputs_metrics_and_outcome(fake: _Tracking, tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert track_cell(_record(), out, "p").status == "succeeded"
    assert fake.named("log_inputs") == [
        {
            "scenario": "lost_response",
            "scenario_revision": "5",
            "policy": "stop_on_timeout",
            "policy_revision": "4",
            "task_id": "t-1",
            "action_id": "a-1",
            "harness_version": __version__,
            "seeds": [1, 2, 3],
        }
    ]
    # The worker's own report (executor_finished) is not a measurement: it is not logged.
    assert fake.named("log_metrics") == [{"step": 0, "dispatches": 1.5, "reads": 0.0}]
    assert fake.named("log_outputs") == [
        {
            "recovery_outcome": "incorrect",
            "cases": 3,
            "cases_path": str(out.resolve() / "cases" / "stop_on_timeout"),
            **{f"cases_{o}": {"correct": 2, "incorrect": 1}.get(o, 0) for o in OUTCOMES},
        }
    ]
    assert [name for name, _ in fake.calls] == ["init", "log_inputs", "log_metrics", "log_outputs", "end"]


def test_a_cell_of_several_variants_names_them_and_counts_them_all(fake: _Tracking, tmp_path: Path) -> None:
    counts = {
        ("p", "crash@before"): Counter(correct=1),
        ("p", "crash@after"): Counter(incorrect=2),
        ("q", "crash@before"): Counter(escalated=1, correct=1),
    }
    identity = {"policy_revision": "1"}
    assert track_cell(_record(counts=counts, identity=identity, metrics={}), tmp_path, "p").status == "succeeded"
    (inputs,) = fake.named("log_inputs")
    assert inputs["variants"] == ["crash@before", "crash@after"]
    assert (inputs["scenario_revision"], inputs["task_id"], inputs["action_id"]) == (None, None, None)
    assert fake.named("log_metrics") == []  # no metric established: none logged, not zeros
    (outputs,) = fake.named("log_outputs")
    assert (outputs["cases"], outputs["cases_correct"], outputs["cases_incorrect"], outputs["cases_escalated"]) == (
        5,
        2,
        2,
        1,
    )
    assert outputs["recovery_outcome"] == "incorrect"


def test_a_cell_of_one_variant_does_not_list_it(fake: _Tracking, tmp_path: Path) -> None:
    counts = {("p", "v"): Counter(correct=1), ("q", "v"): Counter(correct=1)}
    track_cell(_record(counts=counts), tmp_path, "p")
    (inputs,) = fake.named("log_inputs")
    assert "variants" not in inputs


@pytest.mark.parametrize("count", [SEEDS_LISTED - 1, SEEDS_LISTED, SEEDS_LISTED + 1, 5000])
def test_seeds_are_listed_up_to_the_limit_and_given_as_a_range_beyond(
    fake: _Tracking, tmp_path: Path, count: int
) -> None:
    seeds = range(10, 10 + count)
    track_cell(_record(seeds=seeds), tmp_path, "p")
    (inputs,) = fake.named("log_inputs")
    if count <= 1000:
        assert inputs["seeds"] == list(seeds) and "seed_count" not in inputs
    else:
        assert "seeds" not in inputs
        assert (inputs["seed_first"], inputs["seed_last"], inputs["seed_count"]) == (10, 9 + count, count)


def test_a_cell_with_a_harness_error_ends_failed_with_its_first_error(fake: _Tracking, tmp_path: Path) -> None:
    error = SimpleNamespace(seed=7, error="E" * 600)
    tracked = track_cell(_record(first_error=error), tmp_path, "p", run_uuid="u-5")
    reason = f"harness error at seed 7: {'E' * 600}"
    assert tracked == Tracked("u-5", "failed", reason)
    assert fake.named("log_failed") == [{"reason": "HarnessError", "message": reason[:500]}]
    assert [name for name, _ in fake.calls] == [
        "init",
        "log_inputs",
        "log_metrics",
        "log_outputs",
        "log_failed",
        "end",
    ]


# --- what an exploration logs -----------------------------------------------------------------------------------


def test_an_exploration_logs_its_inputs_files_metrics_and_outputs(fake: _Tracking, tmp_path: Path) -> None:
    written: list[tuple[Path, str]] = []
    tracked = track_exploration(_exploration(), tmp_path, "acme/p", lambda path, text: written.append((path, text)))
    assert tracked.status == "succeeded" and tracked.run_uuid is not None
    (init,) = fake.named("init")
    assert init["name"] == "explore-retry_same_key-lost_response"
    assert init["tags"] == ["recovery-harness", "explore", "retry_same_key", "lost_response"]
    assert (init["owner"], init["project"], init["is_offline"], init["is_new"]) == ("acme", "p", True, True)
    assert fake.named("log_inputs") == [
        {
            "policy": "retry_same_key",
            "policy_revision": "2",
            "scenario": "lost_response",
            "scenario_revision": "3",
            "depth": 4,
            "swarm": 5,
            "seeds": [7, 8],
            "shard": 1,
            "shards": 1,
            "harness_version": __version__,
        }
    ]
    assert written == [(fake.outputs / "explore.json", "{}"), (fake.outputs / "findings/a.yaml", "x: 1\n")]
    (metrics,) = fake.named("log_metrics")
    assert metrics == {
        "step": 0,
        "schedules": 40,
        "cases": 41,
        "violating_cases": 6,
        "findings": 3,
        "violations_accounted": 4,
        "violations_no_duplicate": 2,
    }
    assert list(metrics) == [
        "step",
        "schedules",
        "cases",
        "violating_cases",
        "findings",
        "violations_accounted",
        "violations_no_duplicate",
    ]
    assert fake.named("log_outputs") == [{"findings": 3, "violating_cases": 6, "schedules": 40}]


@pytest.mark.parametrize(("shard", "shards", "name"), [(2, 3, "explore-p-s-2of3"), (0, 2, "explore-p-s-0of2")])
def test_a_shard_of_an_exploration_is_named_by_its_place(
    fake: _Tracking, tmp_path: Path, shard: int, shards: int, name: str
) -> None:
    record = _exploration(policy="p", scenario="s", shard=shard, shards=shards, files=())
    track_exploration(record, tmp_path, "p", lambda path, text: None)
    assert fake.named("init")[0]["name"] == name


# --- Polyaxon itself -----------------------------------------------------------------------------------------------


def test_polyaxon_is_pointed_at_this_runs_folder_every_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from polyaxon._contexts import paths as ctx_paths

    monkeypatch.setattr(ctx_paths, "CONTEXT_OFFLINE_ROOT", ctx_paths.CONTEXT_OFFLINE_ROOT)
    monkeypatch.setattr(ctx_paths, "CONTEXT_OFFLINE_FORMAT", ctx_paths.CONTEXT_OFFLINE_FORMAT)
    monkeypatch.delenv("POLYAXON_IS_OFFLINE", raising=False)
    monkeypatch.setenv("POLYAXON_TRACKING_FLUSH_DELAY", "5")
    for root in (tmp_path / "a", tmp_path / "b"):
        module = tracking._polyaxon_tracking(root)
        assert module.__name__ == "polyaxon.tracking" and callable(module.init)
        offline = (ctx_paths.CONTEXT_OFFLINE_ROOT, ctx_paths.CONTEXT_OFFLINE_FORMAT)
        assert offline == (str(root), f"{root}/{{}}")
        assert os.environ["POLYAXON_IS_OFFLINE"] == "true"
        assert os.environ["POLYAXON_OFFLINE_ROOT"] == str(root)
        assert os.environ["POLYAXON_TRACKING_FLUSH_DELAY"] == "5"  # a delay set is kept


def test_a_managed_job_leaves_polyaxons_offline_settings_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from polyaxon._contexts import paths as ctx_paths

    monkeypatch.setattr(ctx_paths, "CONTEXT_OFFLINE_ROOT", "/theirs")
    monkeypatch.setattr(ctx_paths, "CONTEXT_OFFLINE_FORMAT", "/theirs/{}")
    monkeypatch.delenv("POLYAXON_IS_OFFLINE", raising=False)
    monkeypatch.delenv("POLYAXON_TRACKING_FLUSH_DELAY")
    tracking._polyaxon_tracking(None)
    assert (ctx_paths.CONTEXT_OFFLINE_ROOT, ctx_paths.CONTEXT_OFFLINE_FORMAT) == ("/theirs", "/theirs/{}")
    assert "POLYAXON_IS_OFFLINE" not in os.environ
    assert os.environ["POLYAXON_OFFLINE_ROOT"] == str(tmp_path / "elsewhere")
    assert os.environ["POLYAXON_TRACKING_FLUSH_DELAY"] == "0"  # none set: no delay


class _Warnings:
    """The warnings module as tracking.py sees it, recording the filters it sets."""

    def __init__(self) -> None:
        self.filters: list[tuple[Any, ...]] = []

    def simplefilter(self, *args: Any) -> None:
        self.filters.append(args)
        warnings.simplefilter(*args)

    def __getattr__(self, name: str) -> Any:
        return getattr(warnings, name)


def test_only_polyaxons_deprecation_warnings_are_silenced_while_it_is_imported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = _Warnings()
    monkeypatch.setattr(tracking, "warnings", seen)
    tracking._polyaxon_tracking(tmp_path)
    assert seen.filters == [("ignore", DeprecationWarning)]


def _offline_run(out: Path) -> dict[str, Any]:
    (run,) = (out / "polyaxon" / "runs").iterdir()
    return json.loads((run / "run.plx.json").read_text())  # type: ignore[no-any-return]


def test_an_offline_cell_is_a_polyaxon_run_on_disk(tmp_path: Path) -> None:
    out = tmp_path / "run"
    tracked = track_cell(_record(), out, "acme/proj", run_uuid="0123456789abcdef0123456789abcdef")
    assert tracked == Tracked("0123456789abcdef0123456789abcdef", "succeeded", None)
    run = _offline_run(out)
    assert (run["uuid"], run["name"], run["owner"], run["project"], run["status"]) == (
        "0123456789abcdef0123456789abcdef",
        "stop_on_timeout-lost_response",
        "acme",
        "proj",
        "succeeded",
    )
    assert run["tags"] == ["recovery-harness", "stop_on_timeout", "lost_response"]
    assert run["inputs"]["seeds"] == [1, 2, 3] and run["outputs"]["recovery_outcome"] == "incorrect"
    assert (run["outputs"]["dispatches"], run["outputs"]["reads"]) == (1.5, 0.0)
    assert [c["type"] for c in run["status_conditions"]] == ["created", "running", "succeeded"]


def test_an_offline_cell_with_a_harness_error_is_a_failed_run_on_disk(tmp_path: Path) -> None:
    tracked = track_cell(_record(first_error=SimpleNamespace(seed=2, error="boom")), tmp_path, "p")
    assert tracked.status == "failed" and tracked.error == "harness error at seed 2: boom"
    run = _offline_run(tmp_path)
    assert run["status"] == "failed"
    assert [c["type"] for c in run["status_conditions"]] == ["created", "running", "failed"]
    assert run["status_conditions"][-1]["reason"] == "HarnessError"
    assert run["status_conditions"][-1]["message"] == "harness error at seed 2: boom"


def test_a_run_ended_once_does_not_end_again() -> None:
    from polyaxon._schemas.lifecycle import LifeCycle

    logged: list[dict[str, Any]] = []
    run = SimpleNamespace(
        status="running",
        log_status=lambda **kw: logged.append(kw),
        _log_end_status=lambda *a: None,
        _collect_events_summaries=lambda *a: ("theirs", a),
    )
    original = run._collect_events_summaries
    tracking._end_once_without_sleep(run)
    run._log_end_status("succeeded")
    run._log_end_status("failed", "R", "M")
    assert logged == [
        {"status": "succeeded", "reason": None, "message": None},
        {"status": "failed", "reason": "R", "message": "M"},
    ]
    for done in LifeCycle.DONE_VALUES:
        run.status = done
        run._log_end_status("failed", "again")
    assert len(logged) == 2
    summaries = run._collect_events_summaries
    assert summaries.func is tracking._collect_events_summaries and summaries.args == (run, original)


def test_a_run_without_those_methods_is_left_as_it_is() -> None:
    run = SimpleNamespace(status="running", _log_end_status=None)
    tracking._end_once_without_sleep(run)
    assert run._log_end_status is None and not hasattr(run, "_collect_events_summaries")
    run2 = SimpleNamespace(status="running", _collect_events_summaries="not callable")
    tracking._end_once_without_sleep(run2)
    assert run2._collect_events_summaries == "not callable" and not hasattr(run2, "_log_end_status")


_HEADER = "step|timestamp|metric\n"
_AT = "2026-12-04 19:29:49.301351+00:00"


def test_the_summaries_are_polyaxons_for_one_value_each(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POLYAXON_ARTIFACTS_STORE_NAME", "store-1")
    folder = tmp_path / "events" / "metric"
    folder.mkdir(parents=True)
    (folder / "b.plx").write_text(f"{_HEADER}3|{_AT}|-2.5\n")
    (folder / "a.plx").write_text(f"{_HEADER}0|2026-12-04 19:29:49+00:00|1.0e+20")
    (tmp_path / "events" / "html").mkdir()  # another kind's events: not the metrics'
    (tmp_path / "events" / "html" / "c.plx").write_text(f"{_HEADER}0|{_AT}|9.5")
    sanitized: list[str] = []

    class Run:
        @staticmethod
        def _sanitize_filepath(*, filepath: str) -> str:
            sanitized.append(filepath)
            return f"rel/{os.path.basename(filepath)}"

    def polyaxons(*args: Any) -> Any:
        raise AssertionError(f"read back: {args}")

    summaries, last = tracking._collect_events_summaries(Run(), polyaxons, str(tmp_path / "events"), "metric", None)
    assert last == {"a": 1e20, "b": -2.5} and list(last) == [s.name for s in summaries]
    by_name = {s.name: s for s in summaries}
    b = by_name["b"]
    assert (b.kind, b.connection, b.path, b.is_input) == ("metric", "store-1", "rel/b.plx", False)
    assert b.summary == {
        "is_event": True,
        "step": {"count": 1, "min": 3, "max": 3},
        "timestamp": {"min": _AT.replace(" ", "T"), "max": _AT.replace(" ", "T")},
        "metric": {
            "count": 1.0,
            "mean": -2.5,
            "std": None,
            "min": -2.5,
            "25%": -2.5,
            "50%": -2.5,
            "75%": -2.5,
            "max": -2.5,
            "last": -2.5,
        },
    }
    assert by_name["a"].summary["timestamp"]["min"] == "2026-12-04T19:29:49+00:00"
    assert sorted(sanitized) == sorted(str(folder / n) for n in ("a.plx", "b.plx"))


@pytest.mark.parametrize(
    ("kind", "last_check", "system", "second"),
    [
        ("metric", None, True, None),
        ("metric", "since", False, None),
        ("image", None, False, None),
        ("metric", None, False, f"{_HEADER}0|{_AT}|nan"),
    ],
)
def test_anything_else_is_left_to_polyaxon_with_what_it_was_given(
    tmp_path: Path, kind: str, last_check: str | None, system: bool, second: str | None
) -> None:
    folder = tmp_path / "events" / "metric"
    folder.mkdir(parents=True)
    (folder / "a.plx").write_text(f"{_HEADER}0|{_AT}|2.5")
    if second is not None:
        (folder / "b.plx").write_text(second)
    given: list[tuple[Any, ...]] = []

    def polyaxons(*args: Any) -> tuple[list[Any], dict[str, Any]]:
        given.append(args)
        return ["Polyaxon's"], {"x": 1}

    events = str(tmp_path / "events")
    assert tracking._collect_events_summaries(object(), polyaxons, events, kind, last_check, system) == (
        ["Polyaxon's"],
        {"x": 1},
    )
    assert given == [(events, kind, last_check, system)]


def test_a_metric_file_is_one_value_only_within_its_first_4096_characters(tmp_path: Path) -> None:
    long_step = tmp_path / "long.plx"
    long_step.write_text(f"{_HEADER}{'0' * 5000}1|{_AT}|2.5")
    assert tracking._one_value(str(long_step)) is None
    short = tmp_path / "short.plx"
    short.write_text(f"{_HEADER}{'0' * 3000}1|{_AT}|2.5")
    assert tracking._one_value(str(short)) == (1, _AT.replace(" ", "T"), 2.5)
    # Exactly at the limit: 4096 characters are read, the 4097th is not.
    at_limit = f"{_HEADER}1|{_AT}|2.5"
    padded = f"{_HEADER}{'0' * (4096 - len(at_limit))}1|{_AT}|2.5"
    over = f"{_HEADER}{'0' * (4097 - len(at_limit))}1|{_AT}|2.5"
    assert (len(padded), len(over)) == (4096, 4097)
    (tmp_path / "4096.plx").write_text(padded)
    (tmp_path / "4097.plx").write_text(over)
    assert tracking._one_value(str(tmp_path / "4096.plx")) == (1, _AT.replace(" ", "T"), 2.5)
    assert tracking._one_value(str(tmp_path / "4097.plx")) is None
    assert tracking._one_value(str(tmp_path / "missing.plx")) is None
    assert tracking._one_value(str(tmp_path)) is None  # a folder


def test_a_metric_file_that_is_not_utf8_is_no_one_value(tmp_path: Path) -> None:
    """Not text the harness wrote: None, as for any other file (it raised UnicodeDecodeError)."""
    odd = tmp_path / "odd.plx"
    odd.write_bytes(f"{_HEADER}1|{_AT}|2.5".encode() + b"\xff")
    assert tracking._one_value(str(odd)) is None


# --- pushing ---------------------------------------------------------------------------------------------------------


def _api(status: int, reason: str | None = "Refused") -> Exception:
    from polyaxon.exceptions import ApiException

    refusal: Exception = ApiException(status=status, reason=reason)  # type: ignore[no-untyped-call]
    return refusal


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    slept: list[float] = []
    monkeypatch.setattr(tracking, "time", SimpleNamespace(sleep=slept.append))
    return slept


@pytest.mark.parametrize("refusals", [0, 1, 3, 7])
def test_a_write_refused_with_405_is_tried_again_later_each_time(sleeps: list[float], refusals: int) -> None:
    answers = iter([*[_api(405)] * refusals, None])

    def call() -> str:
        answer = next(answers)
        if answer is not None:
            raise answer
        return "written"

    assert tracking._one_at_a_time(call) == "written"
    assert sleeps == pytest.approx([0.2 * n for n in range(1, refusals + 1)])


def test_a_write_refused_eight_times_fails_with_the_last_refusal(sleeps: list[float]) -> None:
    from polyaxon.exceptions import ApiException

    calls: list[int] = []

    def call() -> None:
        calls.append(1)
        raise _api(405, f"no {len(calls)}")

    with pytest.raises(ApiException) as raised:
        tracking._one_at_a_time(call)
    assert raised.value.reason == "no 8" and len(calls) == 8 and len(sleeps) == 7
    calls.clear()
    with pytest.raises(ApiException):
        tracking._one_at_a_time(call, attempts=2)
    assert calls == [1, 1]


@pytest.mark.parametrize("status", [400, 404, 500, None])
def test_a_write_refused_otherwise_fails_at_once(sleeps: list[float], status: int | None) -> None:
    from polyaxon.exceptions import ApiException

    calls: list[int] = []

    def call() -> None:
        calls.append(1)
        raise _api(status)  # type: ignore[arg-type]

    with pytest.raises(ApiException):
        tracking._one_at_a_time(call)
    assert calls == [1] and sleeps == []


def test_no_attempt_at_all_is_a_harness_bug(sleeps: list[float]) -> None:
    with pytest.raises(AssertionError, match=r"^unreachable$"):
        tracking._one_at_a_time(lambda: None, attempts=0)


class _Client:
    owner, project = "acme", "p"

    def __init__(self, lineage: dict[str, Any]) -> None:
        self.calls: list[tuple[str, Any, dict[str, Any], bool]] = []
        self._artifacts_lineage = lineage
        self._is_offline = True
        self.run_data = {"uuid": "u"}
        client = self

        class Runs:
            def sync_run(self, **kwargs: Any) -> None:
                client.calls.append(("sync_run", (), kwargs, client._is_offline))

        self.client = SimpleNamespace(runs_v1=Runs())

    def log_artifact_lineage(self, *args: Any, **kwargs: Any) -> None:
        self.calls.append(("lineage", args, kwargs, self._is_offline))

    def upload_artifacts_dir(self, *args: Any, **kwargs: Any) -> None:
        self.calls.append(("upload", args, kwargs, self._is_offline))


def test_a_run_is_pushed_as_its_record_lineage_and_files(sleeps: list[float]) -> None:
    client = _Client({"b": "lineage-b", "a": "lineage-a"})
    tracking._push_offline_run(client, "/runs/u")
    assert client.calls == [
        ("sync_run", (), {"owner": "acme", "project": "p", "body": {"uuid": "u"}, "async_req": False}, False),
        ("lineage", (["lineage-b", "lineage-a"],), {"async_req": False}, False),
        ("upload", (), {"dirpath": "/runs/u", "path": "/", "overwrite": True, "relative_to": "/runs/u"}, False),
    ]


def test_the_clients_upload_bar_never_reaches_standard_output(
    sleeps: list[float], capsys: pytest.CaptureFixture[str]
) -> None:
    """polyaxon's upload draws rich's progress bar on standard output, whatever is asked: 'Uploading content:
    ... 100% eta 0:00:00' was the first line of a --quiet run's outcome table, one a run pushed."""
    from clipped.formatting import Printer

    client = _Client({})

    def upload(*args: Any, **kwargs: Any) -> None:
        client.calls.append(("upload", args, kwargs, client._is_offline))
        with Printer.get_progress() as progress:  # what polyaxon's store does as it uploads
            task = progress.add_task("[cyan]Uploading content:", total=100)
            progress.update(task, completed=100)
        print("and anything else it prints")
        sys.stdout.write("or writes\n")  # a stream to write to, not None

    client.upload_artifacts_dir = upload  # type: ignore[method-assign]
    tracking._push_offline_run(client, "/r")
    assert [call[0] for call in client.calls] == ["sync_run", "upload"]
    assert capsys.readouterr() == ("", "")
    print("after it")  # standard output is the caller's again
    assert capsys.readouterr().out == "after it\n"


def test_a_run_with_no_lineage_sends_none(sleeps: list[float]) -> None:
    client = _Client({})
    tracking._push_offline_run(client, "/r")
    assert [call[0] for call in client.calls] == ["sync_run", "upload"]


class _Projects:
    made: list[dict[str, Any]]
    refresh: Exception | None = None

    def __init__(self, **kwargs: Any) -> None:
        self.made.append({"project": kwargs})

    def refresh_data(self) -> None:
        self.made.append({"refresh": logging.root.manager.disable})
        if self.refresh is not None:
            raise self.refresh

    def create(self, data: dict[str, Any]) -> None:
        self.made.append({"create": data})


@pytest.fixture
def pushing(monkeypatch: pytest.MonkeyPatch, sleeps: list[float]) -> list[dict[str, Any]]:
    import polyaxon.client

    made: list[dict[str, Any]] = []
    projects = type("Projects", (_Projects,), {"made": made, "refresh": None})

    class Runs:
        def __init__(self, **kwargs: Any) -> None:
            self.kwargs = kwargs
            made.append({"client": kwargs})

        @staticmethod
        def load_offline_run(**kwargs: Any) -> None:
            made.append({"load": {**kwargs, "run_client": kwargs["run_client"].kwargs}})

    def push(client: Any, path: str) -> None:
        made.append({"push": (client.kwargs["run_uuid"], path)})
        if client.kwargs["run_uuid"] == "bad":
            raise _api(500, "Internal\n  Server   Error")

    monkeypatch.setattr(polyaxon.client, "ProjectClient", projects)
    monkeypatch.setattr(polyaxon.client, "RunClient", Runs)
    monkeypatch.setattr(tracking, "_push_offline_run", push)
    made.append({"projects": projects})
    return made


def test_runs_are_pushed_one_at_a_time_in_order(pushing: list[dict[str, Any]], tmp_path: Path) -> None:
    previous = logging.root.manager.disable
    logging.disable(logging.INFO)
    try:
        result = push_runs(tmp_path, ["u1", "u2"], "acme/proj")
        assert logging.root.manager.disable == logging.INFO
    finally:
        logging.disable(previous)
    assert result == PushResult(("u1", "u2"), None)
    runs = tmp_path / "runs"
    assert pushing[1:] == [
        {"project": {"owner": "acme", "project": "proj", "is_offline": False}},
        {"refresh": logging.CRITICAL},
        {"client": {"owner": "acme", "project": "proj", "run_uuid": "u1", "is_offline": True}},
        {
            "load": {
                "path": str(runs / "u1"),
                "run_client": {"owner": "acme", "project": "proj", "run_uuid": "u1", "is_offline": True},
                "reset_project": True,
                "raise_if_not_found": True,
            }
        },
        {"push": ("u1", str(runs / "u1"))},
        {"client": {"owner": "acme", "project": "proj", "run_uuid": "u2", "is_offline": True}},
        {
            "load": {
                "path": str(runs / "u2"),
                "run_client": {"owner": "acme", "project": "proj", "run_uuid": "u2", "is_offline": True},
                "reset_project": True,
                "raise_if_not_found": True,
            }
        },
        {"push": ("u2", str(runs / "u2"))},
    ]


def test_a_project_the_server_lacks_is_made_first(pushing: list[dict[str, Any]], tmp_path: Path) -> None:
    pushing[0]["projects"].refresh = _api(404, "Not Found")
    assert push_runs(tmp_path, ["u1"], "proj") == PushResult(("u1",), None)
    assert pushing[1] == {"project": {"owner": "default", "project": "proj", "is_offline": False}}
    assert pushing[3] == {"create": {"name": "proj"}}


@pytest.mark.parametrize(
    ("refusal", "error"),
    [
        (_api(403, "Forbidden"), "ApiException: Forbidden"),
        (_api(401, None), "ApiException: (401) Reason: None"),
        (ConnectionError("refused\n  to connect"), "ConnectionError: refused to connect"),
    ],
)
def test_a_project_that_cannot_be_read_stops_the_push(
    pushing: list[dict[str, Any]], tmp_path: Path, refusal: Exception, error: str
) -> None:
    pushing[0]["projects"].refresh = refusal
    previous = logging.root.manager.disable
    assert push_runs(tmp_path, ["u1"], "acme/proj") == PushResult((), error)
    assert logging.root.manager.disable == previous
    assert not any("client" in entry or "create" in entry for entry in pushing)


def test_a_push_stops_at_the_first_run_that_fails_and_says_which_were_sent(
    pushing: list[dict[str, Any]], tmp_path: Path
) -> None:
    result = push_runs(tmp_path, ["u1", "bad", "u3"], "acme/proj")
    assert result == PushResult(("u1",), "ApiException: Internal Server Error")
    assert [entry["push"][0] for entry in pushing if "push" in entry] == ["u1", "bad"]


def test_a_push_silences_only_polyaxons_deprecation_warnings(
    pushing: list[dict[str, Any]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = _Warnings()
    monkeypatch.setattr(tracking, "warnings", seen)
    assert push_runs(tmp_path, [], "p") == PushResult((), None)
    assert seen.filters == [("ignore", DeprecationWarning)]


def test_a_long_reason_is_cut_to_one_line_of_200(pushing: list[dict[str, Any]], tmp_path: Path) -> None:
    pushing[0]["projects"].refresh = RuntimeError("word " * 100)
    result = push_runs(tmp_path, ["u1"], "p")
    assert result.error == "RuntimeError: " + " ".join(["word"] * 100)[:200]
