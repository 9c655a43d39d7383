"""Tests for the lines the three user reviews' mending changed (e84ae8e), written against the mutants mutmut 3.8.1
made of them that the other tests let live (tests/MUTANTS.md, forty-fifth pass). In process: the plugin's
pytest-xdist path is called directly (the other tests of it start pytest in subprocesses, which run the harness
unmutated), and the worker processes of a grid are stood in for (``Supervised``)."""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from conftest import SCENARIO_DIR
from test_grid_mutants import Supervised  # the same in-process stand-in for the worker processes

import harness.run.grid as grid
import harness.run.pool as pool
from harness import cli
from harness.gate import cases, pytest_plugin

pytest_plugins = ["pytester"]

#: Every run of pytest here leaves out the plugins it does not need.
QUIET = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-p", "no:xdist", "-p", "no:anyio")


# --- The pytest plugin under pytest-xdist (harness/gate/pytest_plugin.py) ---------------------------------------


class _Run:
    """Stands in for ``_reports``' own ``run``: notes each folder it is given, what the folder held then, and
    writes a marker into it, as a grid writes its cases."""

    def __init__(self, found: Mapping[tuple[str, str, int], Any] | str, notes: list[str]) -> None:
        self.found, self.notes = found, notes
        self.given: list[tuple[Path, list[str]]] = []

    def __call__(self, out: Path) -> tuple[Any, list[str]]:
        self.given.append((out, sorted(p.name for p in out.iterdir()) if out.exists() else []))
        out.mkdir(parents=True, exist_ok=True)
        (out / "ran").write_text("yes")
        return self.found, self.notes


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """``read_reports`` as ``_run_once_for_all_workers`` imports it: notes the folder and gives a stand-in map."""
    import harness.run.files as files

    read: list[Path] = []

    def fake(folder: Path) -> dict[str, object]:
        read.append(folder)
        return {"read from": folder}

    monkeypatch.setattr(files, "read_reports", fake)
    return read


def test_the_first_worker_runs_the_cases_into_the_shared_folder_and_the_next_reads_them(
    tmp_path: Path, reads: list[Path]
) -> None:
    """The rule (``_run_once_for_all_workers``' docstring): the first worker to take the lock runs every case into
    ``SHARED/cases`` and says so in ``done.json``; a later one does not run them, reads the reports from that folder,
    and sends no notes (the first sent them). Kills the mutants that lose the folder's name, the ``done.json``
    round trip (its name, its key, the ``is_file`` test), or the later worker's empty notes."""
    shared = tmp_path / "harness-pytest-xdist-x"
    first = _Run({("p", "s", 1): "report"}, ["note: one"])
    assert pytest_plugin._run_once_for_all_workers(shared, first) == ({("p", "s", 1): "report"}, ["note: one"])
    assert first.given == [(shared / "cases", [])]
    assert json.loads((shared / "done.json").read_text(encoding="utf-8")) == {"failed": None}
    later = _Run({}, ["never"])
    assert pytest_plugin._run_once_for_all_workers(shared, later) == ({"read from": shared / "cases"}, [])
    assert later.given == [] and reads == [shared / "cases"]
    assert (shared / "cases" / "ran").read_text() == "yes"


def test_a_run_that_failed_is_said_to_every_later_worker(tmp_path: Path, reads: list[Path]) -> None:
    """A run that could not run the cases (one line saying why) is that line for every worker: the later ones
    read it from ``done.json`` and read no reports. Kills the mutants of the ``failed`` value written or read."""
    shared = tmp_path / "shared"
    line = "harness: the cases could not be run: no room"
    assert pytest_plugin._run_once_for_all_workers(shared, _Run(line, [])) == (line, [])
    assert json.loads((shared / "done.json").read_text(encoding="utf-8")) == {"failed": line}
    later = _Run({}, [])
    assert pytest_plugin._run_once_for_all_workers(shared, later) == (line, [])
    assert later.given == [] and reads == []


def test_a_worker_stopped_half_way_leaves_the_cases_to_be_run_again(tmp_path: Path, reads: list[Path]) -> None:
    """A worker stopped half way leaves cases but no ``done.json``: the next runs them again, into an emptied
    folder (what was left is removed first). Kills the mutants of the ``rmtree`` of the left cases."""
    shared = tmp_path / "shared"
    (shared / "cases").mkdir(parents=True)
    (shared / "cases" / "half.json").write_text("{")
    again = _Run({}, ["note"])
    assert pytest_plugin._run_once_for_all_workers(shared, again) == ({}, ["note"])
    assert again.given == [(shared / "cases", [])]


def test_a_worker_waits_for_the_one_that_holds_the_shared_lock(tmp_path: Path, reads: list[Path]) -> None:
    """Workers take the shared folder's lock one at a time: while another holds it (even shared), a worker runs
    nothing; once it is let go, the worker goes on. Kills the mutants of the lock (``LOCK_EX`` taken as shared, or
    on another file)."""
    import fcntl
    import threading

    shared = tmp_path / "shared"
    shared.mkdir()
    waiting = _Run({}, [])
    with open(shared / "lock", "a") as held:
        fcntl.flock(held, fcntl.LOCK_SH)
        worker = threading.Thread(target=pytest_plugin._run_once_for_all_workers, args=(shared, waiting))
        worker.start()
        worker.join(0.5)
        assert worker.is_alive() and waiting.given == []
    worker.join(10)
    assert not worker.is_alive() and waiting.given == [(shared / "cases", [])]


def test_the_workers_share_a_folder_named_by_the_runs_id(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Every worker of one run gets the same ID, so the same folder, in the temporary folder; another run's ID,
    another folder. Kills ``_shared_folder``'s mutants."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    assert pytest_plugin._shared_folder("feed") == tmp_path / "harness-pytest-xdist-feed"
    assert pytest_plugin._shared_folder("beef") != pytest_plugin._shared_folder("feed")


@pytest.mark.parametrize("worker", [False, True])
def test_the_controller_alone_removes_the_shared_folder_when_the_session_ends(tmp_path: Path, worker: bool) -> None:
    """The rule (``_SHARED``'s comment): the shared folder is removed by the controller once every worker is done;
    a worker's own session end (which has ``workerinput``) keeps it for the others. A folder already gone is no
    error, and a session with none noted removes nothing. Kills ``pytest_sessionfinish``'s mutants."""
    from types import SimpleNamespace

    shared = tmp_path / "shared"
    (shared / "cases").mkdir(parents=True)
    config = SimpleNamespace(stash=pytest.Stash(), **({"workerinput": {"testrunuid": "x"}} if worker else {}))
    pytest_plugin.pytest_sessionfinish(SimpleNamespace(config=config))  # type: ignore[arg-type]
    assert shared.is_dir()
    config.stash[pytest_plugin._SHARED] = shared
    pytest_plugin.pytest_sessionfinish(SimpleNamespace(config=config))  # type: ignore[arg-type]
    assert shared.is_dir() is worker
    if not worker:
        pytest_plugin.pytest_sessionfinish(SimpleNamespace(config=config))  # type: ignore[arg-type]


def test_under_xdist_a_worker_runs_the_cases_once_and_sends_its_notes(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The rule (the module's docstring): under pytest-xdist the first worker to reach a case runs them all, once,
    into the run's shared folder, and sends its coverage notes to the controller (``workeroutput``); another worker
    of the same run reads its reports, runs nothing, and sends no notes. Kills the mutants of ``_reports``' worker
    branch (the run's ID, the notes' key, the notes sent, the policies they name: both, joined by ", ")."""
    from types import SimpleNamespace

    monkeypatch.setattr(pool, "supervise", Supervised())
    ran: list[object] = []
    real_grid = grid.run_grid

    def counted(*args: Any, **kwargs: Any) -> Any:
        ran.append(args[0])
        return real_grid(*args, **kwargs)

    monkeypatch.setattr(grid, "run_grid", counted)
    items, _ = pytester.inline_genitems(
        *QUIET,
        "--harness-policy",
        "retry_new_key",
        "--harness-policy",
        "retry_same_key",
        "--harness-scenario",
        "uncertain_lookup",
        "--harness-seed-count",
        "1",
    )
    getoption = items[0].config.getoption
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))

    def worker() -> Any:
        return SimpleNamespace(
            stash=pytest.Stash(), getoption=getoption, workerinput={"testrunuid": "u1"}, workeroutput={}
        )

    first = worker()
    found = pytest_plugin._reports(SimpleNamespace(config=first, items=items))  # type: ignore[arg-type]
    assert not isinstance(found, str) and sorted(found) == [
        ("retry_new_key", "uncertain_lookup", 1),
        ("retry_same_key", "uncertain_lookup", 1),
    ]
    notes = first.workeroutput["harness_coverage_notes"]
    assert notes and all(
        n.startswith("note: scenario uncertain_lookup declares fault")
        and "which fired in no case of retry_new_key, retry_same_key (" in n
        for n in notes
    ), notes
    assert first.stash[pytest_plugin._REPORTS] is found and len(ran) == 1
    assert (tmp_path / "harness-pytest-xdist-u1" / "done.json").is_file()
    second = worker()
    again = pytest_plugin._reports(SimpleNamespace(config=second, items=items))  # type: ignore[arg-type]
    assert again == found and second.workeroutput == {"harness_coverage_notes": []} and len(ran) == 1


# --- cli.cores_here, gate.cases._importable ----------------------------------------------------------------------


def test_the_cores_here_are_the_processes_affinity_else_the_machines(monkeypatch: pytest.MonkeyPatch) -> None:
    """The rule (``cores_here``' docstring): the cores this process may run on, its CPU affinity (asked of this
    process, pid 0), else the machine's, one when either is unknown or empty. Kills the mutants of the pid, the
    attribute's name and the fallbacks of one."""
    asked: list[object] = []

    def affinity(pid: object) -> set[int]:
        asked.append(pid)
        return {0, 1, 2}

    monkeypatch.setattr(cli.os, "sched_getaffinity", affinity, raising=False)
    monkeypatch.setattr(cli.os, "cpu_count", lambda: 8)
    assert cli.cores_here() == 3 and asked == [0]
    monkeypatch.setattr(cli.os, "sched_getaffinity", lambda pid: set(), raising=False)
    assert cli.cores_here() == 1
    monkeypatch.delattr(cli.os, "sched_getaffinity", raising=False)
    assert cli.cores_here() == 8
    monkeypatch.setattr(cli.os, "cpu_count", lambda: None)
    assert cli.cores_here() == 1


def test_the_or_run_it_command_puts_a_policy_imported_from_elsewhere_on_the_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rule (``_importable``' docstring): the command as it runs where the check ran, with the folder the
    user's policy was imported from on ``PYTHONPATH`` (quoted for a shell) when that is not the current folder;
    unchanged for a policy imported from the current folder, and for a shipped one. Kills ``_importable``'s
    mutants."""
    from types import ModuleType

    folder = tmp_path / "my policies"
    folder.mkdir()
    module = ModuleType("mine_r45")
    module.__file__ = str(folder / "mine_r45.py")
    monkeypatch.setitem(sys.modules, "mine_r45", module)
    command = "python -m harness run --policy mine_r45:POLICY --scenario lost_response --seed 1"
    monkeypatch.chdir(tmp_path)
    assert cases._importable(command, "mine_r45:POLICY") == f"PYTHONPATH='{folder}' {command}"
    monkeypatch.chdir(folder)
    assert cases._importable(command, "mine_r45:POLICY") == command
    assert cases._importable("python -m harness run --policy retry_new_key", "retry_new_key") == (
        "python -m harness run --policy retry_new_key"
    )


# --- properties._answered_applied_twice, auditor._stands ---------------------------------------------------------


def _second_action(n: int) -> str:
    """Lines of a second action, b9, on another target, dispatched once and answered applied under ``r-b9``."""
    return (
        "0 controller action_recorded action_id=b9 task_id=release-42 revision=17 operation=activate "
        "target=staging/other model=m7 digest=d7 approval_id=apr-17\n"
        "0 controller claim action_id=b9 revision=17 ok=true reason=none\n"
        f"{n} transport send kind=dispatch n=1 action_id=b9 execution_id=b9-x1 idempotency_key=b9 operation=activate "
        "target=staging/other model=m7 digest=d7\n"
        f"{n + 0.5} transport receive kind=dispatch n=1 action_id=b9 execution_id=b9-x1 status=applied receipt_id=r-b9"
    )


def test_receipts_of_two_actions_witness_no_duplicate_and_a_witnessed_one_is_a_duplicate_effect() -> None:
    """The rule (``_answered_applied_twice``): receipts are counted per action; one ``applied`` receipt for each
    of two actions is no duplicate (kills the mutant that keys every receipt under one action). Two receipts of
    one action are an anomaly of kind ``duplicate_effect`` (the kind recovery.json names), said of that action
    (kills the mutants of the kind)."""
    from conftest import OPENING, dispatch, history
    from test_check_mutants import reply, run

    lines = [dispatch(1.0, 1), dispatch(15.0, 2), reply(1.5, 1, "applied", "r1"), _second_action(2)]
    alone = run("duplicate_effects", history(OPENING + "\n".join(lines), visible=False))
    assert alone.value is None and alone.anomalies == ()
    twice = run(
        "duplicate_effects",
        history(OPENING + "\n".join([*lines, reply(15.5, 2, "applied", "r2")]), visible=False),
    )
    assert [(a.kind, a.detail.split(" ")[0]) for a in twice.anomalies] == [("duplicate_effect", "a73")]


def test_a_completion_stands_unless_a_later_effect_puts_other_arguments_on_its_target() -> None:
    """The rule (``Auditor._stands``): only effects applied after the completing one count; one of other
    arguments on the same target undoes it, one of the same arguments or on another target does not, and one
    before it does not either. Kills the mutants that start the look-after at the wrong effect."""
    from harness.model import Artifact
    from harness.sim.auditor import Auditor

    def art(model: str, target: str = "staging/fraud") -> Artifact:
        return Artifact(operation="activate", target=target, model=model, digest="d7")

    def stands(*effects: tuple[str, Artifact], receipt: str) -> bool:
        auditor = Auditor(deadline_s=120.0)
        for n, (receipt_id, artifact) in enumerate(effects, start=1):
            auditor.applied("a73", n, receipt_id, float(n), artifact)
        return auditor._stands(receipt, art("m7"))

    assert stands(("r1", art("m7")), ("r2", art("m8")), receipt="r1") is False
    assert stands(("r1", art("m7")), ("r2", art("m7")), receipt="r1") is True
    assert stands(("r1", art("m7")), ("r2", art("m8", "prod/other")), receipt="r1") is True
    assert stands(("r0", art("m8")), ("r0b", art("m8")), ("r1", art("m7")), receipt="r1") is True


# --- errors.nearly, plx.viewer.view ------------------------------------------------------------------------------


def test_a_name_is_nearly_another_only_from_a_ratio_of_eight_tenths() -> None:
    """The rule (``nearly``' docstring): close means difflib's ratio 0.8 or more. ``reason`` and ``rezone``
    (ratio 2/3, neither begins the other, other letters) are not close; ``boundry`` and ``boundary`` are.
    Kills the mutant that drops the cutoff (difflib's default is 0.6)."""
    import difflib

    from harness.errors import nearly

    assert 0.6 <= difflib.SequenceMatcher(None, "reason", "rezone").ratio() < 0.8
    assert nearly("reason", ["rezone"]) is None
    assert nearly("boundry", ["boundary"]) == "boundary"


def test_a_run_folder_that_holds_a_folder_named_runs_is_served_from_its_polyaxon_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rule (``view``): a folder is taken for a run's polyaxon/ folder only when it has runs/ and its own
    polyaxon/runs/ is missing; a run folder with polyaxon/runs/ is served from there even if it also holds a
    folder named runs. Kills the mutants of the second ``runs``."""
    from test_viewer_mutants import _Health, _Viewer

    import harness.plx.viewer as viewer

    run = tmp_path / "run"
    (run / "polyaxon" / "runs").mkdir(parents=True)
    (run / "runs").mkdir()
    (run / "run.json").write_text(json.dumps({"project": "acme/fraud"}))
    monkeypatch.setattr(viewer, "haupt_command", lambda: "/bin/haupt")
    monkeypatch.setattr(viewer, "_check_port_free", lambda port: None)
    monkeypatch.setattr(viewer.tempfile, "mkdtemp", lambda prefix: str(tmp_path / f"{prefix}x"))
    (tmp_path / "harness-viewer-home-x").mkdir()
    process = _Viewer()
    monkeypatch.setattr(viewer.subprocess, "Popen", process)
    monkeypatch.setattr(viewer.urllib.request, "urlopen", _Health(0))
    assert viewer.view(run, 8123) == 0
    assert process.command[-1] == str((run / "polyaxon").resolve())


# --- scenario: Scenario._shadows for connector crashes ------------------------------------------------------------


@pytest.mark.parametrize(
    ("phases", "refused"),
    [
        (("after_started", "after_effect"), False),
        (("after_started", "after_started"), True),
        (("every", "after_effect"), True),
        (("after_effect", "every"), True),
    ],
)
def test_a_connector_crash_shadows_another_only_at_its_own_phase(phases: tuple[str, str], refused: bool) -> None:
    """The rule (``_shadows``' docstring): a connector crash takes the other's occurrences only at the same phase,
    ``every`` standing for each; two at different phases, the same nth, both fire (in different cases' places) and
    load. Kills the mutants that drop or invert the phase test."""
    import yaml
    from pydantic import ValidationError

    from harness.scenario import Scenario

    data = yaml.safe_load((SCENARIO_DIR / "connector_cancel_while_new_operation_leaves.yaml").read_text())
    data["faults"] = [{"boundary": "connector_crash", "phase": phase, "nth": 1} for phase in phases]
    if not refused:
        assert [f.phase for f in Scenario.model_validate(data).faults] == list(phases)  # type: ignore[union-attr]
        return
    with pytest.raises(ValidationError, match=r"faults\.1: every occurrence it names is faults\.0's too"):
        Scenario.model_validate(data)


def test_a_completion_by_a_receipt_the_destination_never_applied_is_not_a_completed_task() -> None:
    """The rule (``task_completed``' docstring): the task stands completed only by a receipt the destination
    applied; with the ledger in view and no effect of the completing receipt, the finding is false (not an
    error). Kills the mutant that drops ``next``'s default (StopIteration)."""
    from conftest import OPENING, dispatch, history, recorded
    from test_check_mutants import completed, run

    found = run("task_completed", history(OPENING + "\n".join([dispatch(0.0, 1), recorded(15, "r1"), completed(15)])))
    assert found.value is False


def test_a_cases_digest_is_found_among_the_digests_kept_end_to_end() -> None:
    """The rule (``_holds``): the digests kept under one identity lie end to end, each ``_DIGEST_SIZE`` bytes, and
    a later copy's digest is found among them, not only when it is the one kept first. Two contents that differ
    only in their reproduce command digest alike (``_digest``'s docstring). Kills the mutant of ``_digest`` that
    drops ``digest_size`` (a 64-byte digest then matches no 16-byte slice)."""
    from harness.present import analysis

    first, second = b'{"case":1,"reproduce":"a"}', b'{"case":2,"reproduce":"b"}'
    kept = analysis._digest(first) + analysis._digest(second)
    assert analysis._holds(kept, analysis._digest(second)) and analysis._holds(kept, analysis._digest(first))
    assert analysis._digest(b'{"case":2,"reproduce":"./c"}') == analysis._digest(second)
    assert not analysis._holds(kept, analysis._digest(b'{"case":3,"reproduce":"b"}'))


# --- policies/reconcile_and_reauthorize.py: the command budget's last command ------------------------------------


def test_the_escalation_at_the_budgets_last_command_says_why() -> None:
    """The rule (revision 7, ``decide``): the last command the action's budget allows escalates what the policy
    would have waited or read for, and the escalation, which the owner reads, says the budget is why. Kills the
    mutants of the escalation's reason."""
    from harness.model.events import CommandGiven
    from harness.policy import load_policy
    from harness.scenario import scenario_cases
    from harness.sim import simulate

    ((_, scenario),) = scenario_cases("step_budget_while_unsure")
    history = simulate(scenario, load_policy("reconcile_and_reauthorize"), 1).evidence.history
    last = [e.command for e in history if isinstance(e, CommandGiven)][-1]
    assert last.kind == "escalate"
    assert last.reason == "the action's command budget has room for one command more"  # type: ignore[union-attr]
