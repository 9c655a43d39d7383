"""The pytest plugin (harness/gate/pytest_plugin.py) and the gate's runner (``check_policy``, ``_checked``,
``assert_recovers`` in harness/gate/runner.py), checked in process.

Written against the mutants mutmut 3.8.1 made of them (tests/MUTANTS.md, thirty-fifth pass). Their other tests
start ``pytest`` or ``harness check`` as subprocesses, and the cases of both run in worker processes, which run
the harness unmutated (under mutmut they cannot start at all). Here pytest runs in this process
(``pytester.inline_run``, ``runpytest_inprocess``) and ``supervised`` stands in for
``harness.run.pool.supervise``: the pieces run here, one after another.
"""

from __future__ import annotations

import errno
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from test_grid_mutants import Supervised  # the same in-process stand-in for the worker processes

import harness.gate.runner as runner
import harness.run.grid as grid
import harness.run.pool as pool
from harness.errors import InputError, RunFailed
from harness.gate.cases import GateCase, PolicyDoesNotRecover, judge
from harness.gate.pytest_plugin import PolicyCases, ScenarioSeed
from harness.gate.repro import ReproFolder
from harness.gate.runner import CheckOptions, assert_recovers, check_policy, coverage_notes, judge_reports
from harness.policy import Escalate, Situation
from harness.run import GridOptions, load_grid, plan_cells, run_case, run_grid
from harness.run.files import iter_reports
from harness.run.grid import RunInterrupted, RunNotWritten
from harness.run.plan import Cell, Plan, UsageError
from harness.scenario import list_scenarios

pytest_plugins = ["pytester"]

UNSAFE, SAFE = "retry_new_key", "reconcile_and_reauthorize"


@pytest.fixture(autouse=True)
def supervised(monkeypatch: pytest.MonkeyPatch) -> Supervised:
    fake = Supervised()
    monkeypatch.setattr(pool, "supervise", fake)
    return fake


#: Every run of pytest here leaves out the plugins it does not need (hypothesis's ends each session with seconds
#: of work).
QUIET = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-p", "no:xdist", "-p", "no:anyio")


class EscalateThenRaise:
    """Escalates, then raises at its next decision: every case passes on the evidence, yet the policy raised."""

    name = "escalate_then_raise"
    revision = "1"

    def decide(self, situation: Situation) -> object:
        if situation.escalated:
            raise ValueError("boom after escalating")
        return Escalate(reason="unsure")


RAISES = EscalateThenRaise()


class Grids:
    """Wraps ``run_grid`` as the plugin imports it: notes each plan and options, then runs it (or ``instead``)."""

    def __init__(self) -> None:
        self.calls: list[tuple[Plan, GridOptions]] = []
        self.instead: Callable[[Plan, GridOptions], Any] | None = None

    def __call__(self, plan: Plan, options: GridOptions, *args: Any, **kwargs: Any) -> Any:
        self.calls.append((plan, options))
        if self.instead is not None:
            return self.instead(plan, options)
        return run_grid(plan, options, *args, **kwargs)


@pytest.fixture
def grids(monkeypatch: pytest.MonkeyPatch) -> Grids:
    fake = Grids()
    monkeypatch.setattr(grid, "run_grid", fake)
    return fake


def _args(*more: str, policy: str = UNSAFE, scenarios: Sequence[str] = ("lost_response",), seeds: int = 2) -> list[str]:
    args = [*QUIET, "--harness-policy", policy]
    for s in scenarios:
        args += ["--harness-scenario", s]
    return [*args, "--harness-seed-count", str(seeds), *more]


# --- Options ----------------------------------------------------------------------------------------------------


def test_the_plugins_options_have_their_defaults_and_help(pytester: pytest.Pytester) -> None:
    config = pytester.parseconfig()
    names = ("harness_policy", "harness_scenario", "harness_seed_count", "harness_case_timeout", "harness_out")
    assert [config.getoption(n) for n in names] == [[], [], 3, 60.0, None]
    group = next(g for g in config._parser._groups if g.name == "harness")
    assert group._arggroup.title == "recovery-harness: gate a recovery policy"
    keys = ("default", "type", "metavar", "help")
    shown = [(o.names(), {k: o.attrs()[k] for k in keys}) for o in group.options]
    assert shown == [
        (["--harness-policy"], {"default": [], "type": None, "metavar": "SPEC",
         "help": "collect one test per scenario x seed for this policy (a shipped name or package.module:attr; "
                 "repeatable); without it the plugin does nothing"}),
        (["--harness-scenario"], {"default": [], "type": None, "metavar": "NAME|PATH",
         "help": "a shipped scenario or a YAML file (repeatable; default: every shipped scenario)"}),
        (["--harness-seed-count"], {"default": 3, "type": int, "metavar": "N", "help": "seeds 1..N (default 3)"}),
        (["--harness-case-timeout"], {"default": 60.0, "type": float, "metavar": "SECONDS",
         "help": "wall-clock budget of one case; a case over it fails its item as a harness error (default 60; 0: none)"}),
        (["--harness-baseline"], {"default": None, "type": None, "metavar": "SPEC",
         "help": "also run this policy on the same cases, and fail each item that passes yet leaves the task "
                 "incomplete where the baseline completes it (safe is not done)"}),
        (["--harness-out"], {"default": None, "type": None, "metavar": "DIR",
         "help": "folder for the repro files of failing cases (default: a new temporary folder)"}),
    ]  # fmt: skip
    repeated = pytester.parseconfig("--harness-policy", "a", "--harness-policy", "b", "--harness-scenario", "s",
                                    "--harness-scenario", "t", "--harness-out", "o", "--harness-seed-count", "7",
                                    "--harness-case-timeout", "1.5")  # fmt: skip
    assert [repeated.getoption(n) for n in names] == [["a", "b"], ["s", "t"], 7, 1.5, "o"]
    assert [(o.dest, o.type) for o in group.options] == [
        ("harness_policy", None), ("harness_scenario", None), ("harness_seed_count", int),
        ("harness_case_timeout", float), ("harness_baseline", None), ("harness_out", None)
    ]  # fmt: skip


def test_without_a_policy_the_plugin_collects_nothing(pytester: pytest.Pytester, grids: Grids) -> None:
    assert pytester.runpytest_inprocess(*QUIET).ret == pytest.ExitCode.NO_TESTS_COLLECTED
    pytester.makepyfile(test_own="def test_own():\n    pass\n")
    items, _ = pytester.inline_genitems(*QUIET)
    assert [i.nodeid for i in items] == ["test_own.py::test_own"]
    assert grids.calls == []


@pytest.mark.parametrize(
    ("given", "named"),
    [
        (
            ("--harness-seed-count", "2", "--harness-scenario", "lost_response"),
            "--harness-scenario, --harness-seed-count",
        ),
        (("--harness-case-timeout", "5"), "--harness-case-timeout"),
        (("--harness-baseline", "retry_same_key", "--harness-out", "o"), "--harness-baseline, --harness-out"),
    ],
)
def test_the_plugins_options_without_a_policy_are_warned_of(
    pytester: pytest.Pytester, given: tuple[str, ...], named: str
) -> None:
    """A demanding user's review: a CI script that lost --harness-policy passed, gating nothing, and said nothing.
    Its other options given are named in a warning; given as their defaults, or not at all, nothing is said."""
    pytester.makepyfile(test_own="def test_own():\n    pass\n")
    ran = pytester.runpytest_inprocess(*QUIET, *given)
    assert ran.ret == pytest.ExitCode.OK
    said = f"harness: {named} given without --harness-policy, so no case is collected and nothing is gated"
    assert any(said in line for line in ran.outlines), ran.outlines
    quiet = pytester.runpytest_inprocess(*QUIET, "--harness-seed-count", "3", "--harness-case-timeout", "60")
    assert not any("without --harness-policy" in line for line in quiet.outlines)


# --- Collection -------------------------------------------------------------------------------------------------


def test_each_policy_collects_one_item_per_scenario_and_seed_beside_the_folders_tests(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_own="def test_own():\n    pass\n")
    args = _args("--harness-policy", SAFE, "--harness-policy", UNSAFE, scenarios=("lost_response", "request_lost"))
    items, _ = pytester.inline_genitems(*args)
    assert [i.nodeid for i in items] == [
        "test_own.py::test_own",
        *(f"{p}::{s}[seed-{n}]" for p in (UNSAFE, SAFE) for s in ("lost_response", "request_lost") for n in (1, 2)),
    ]
    seed = items[1]
    assert isinstance(seed, ScenarioSeed) and isinstance(seed.parent, PolicyCases)
    assert seed.parent.name == UNSAFE and seed.parent.nodeid == UNSAFE
    assert seed.name == "lost_response[seed-1]"
    assert (seed.case.policy_spec, seed.case.scenario.name, seed.case.seed) == (UNSAFE, "lost_response", 1)
    assert [(c.policy_spec, c.scenario_spec, c.seed) for c in seed.parent.cases] == [
        (UNSAFE, s, n) for s in ("lost_response", "request_lost") for n in (1, 2)
    ]
    assert seed.reportinfo() == (seed.path, None, f"{UNSAFE} x lost_response seed 1")
    assert items[-1].reportinfo()[2] == f"{SAFE} x request_lost seed 2"


def test_by_default_every_shipped_scenario_is_collected_at_seeds_one_to_three(pytester: pytest.Pytester) -> None:
    items, _ = pytester.inline_genitems(*QUIET, "--harness-policy", SAFE)
    expected = load_grid([SAFE], list_scenarios(), (1, 2, 3)).cases  # a scenario's variants are cases of their own
    assert [i.name for i in items] == [f"{c.scenario.name}[seed-{c.seed}]" for c in expected]
    assert {c.scenario_spec.split("@")[0] for c in expected} == set(list_scenarios())


def test_a_scenario_file_is_named_by_its_whole_path(pytester: pytest.Pytester) -> None:
    source = Path(__file__).resolve().parent.parent / "scenarios" / "lost_response.yaml"
    (pytester.path / "scen").mkdir()
    (pytester.path / "scen" / "mine.yaml").write_text(source.read_text().replace("name: lost_response", "name: mine"))
    items, _ = pytester.inline_genitems(*_args(scenarios=("scen/mine.yaml",), seeds=1))
    assert [(i.name, i.case.scenario_spec) for i in items] == [  # type: ignore[attr-defined]
        ("mine[seed-1]", str(pytester.path / "scen" / "mine.yaml"))
    ]


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("--harness-seed-count", "0"), "--harness-seed-count 0 is outside 1..10000; fix: give a count in range"),
        (("--harness-seed-count", "10001"), "--harness-seed-count 10001 is outside 1..10000; fix: give a count in range"),
        (("--harness-case-timeout", "-0.5"), "--harness-case-timeout -0.5 is outside 0..86400; fix: give seconds in range"),
        (("--harness-case-timeout", "86400.5"),
         "--harness-case-timeout 86400.5 is outside 0..86400; fix: give seconds in range"),
        (("--harness-out", " "),
         "harness: --harness-out: an empty path; fix: give a folder, or leave the option out for a temporary one"),
        (("--harness-out", ""),
         "harness: --harness-out: an empty path; fix: give a folder, or leave the option out for a temporary one"),
    ],
)  # fmt: skip
def test_the_plugin_refuses_bad_options_with_their_fix(
    pytester: pytest.Pytester, args: tuple[str, ...], said: str
) -> None:
    with pytest.raises(pytest.UsageError) as refused:
        pytester.parseconfigure(*_args(*args))
    assert str(refused.value) == said


@pytest.mark.parametrize("args", [("--harness-seed-count", "1"), ("--harness-seed-count", "10000"),
                                  ("--harness-case-timeout", "0"), ("--harness-case-timeout", "86400")])  # fmt: skip
def test_the_plugin_takes_options_at_their_bounds(pytester: pytest.Pytester, args: tuple[str, ...]) -> None:
    pytester.parseconfigure(*_args(*args))


def test_the_plugin_refuses_an_unknown_policy_or_scenario_as_the_command_line_does(pytester: pytest.Pytester) -> None:
    for policy, scenario in (("nosuch", "lost_response"), (SAFE, "nosuch")):
        with pytest.raises(InputError) as wrong:
            load_grid([policy], [scenario], [1])
        with pytest.raises(pytest.UsageError) as refused:
            pytester.parseconfigure(*_args(policy=policy, scenarios=(scenario,)))
        assert str(refused.value) == f"harness: {wrong.value}"
        assert refused.value.__cause__ is None and refused.value.__suppress_context__


def test_the_plugin_refuses_an_out_that_holds_anything_or_is_a_file(pytester: pytest.Pytester) -> None:
    full = pytester.path / "full"
    full.mkdir()
    (full / "x").write_text("")
    with pytest.raises(pytest.UsageError) as refused:
        pytester.parseconfigure(*_args("--harness-out", str(full)))
    assert str(refused.value) == f"harness: --harness-out {full}: is not empty; fix: give a new or empty folder"
    assert refused.value.__cause__ is None and refused.value.__suppress_context__
    with pytest.raises(pytest.UsageError) as refused:
        pytester.parseconfigure(*_args("--harness-out", str(full / "x")))
    assert str(refused.value) == f"harness: --harness-out {full / 'x'}: is a file; fix: give a folder"


def test_the_plugin_refuses_an_out_it_cannot_write_in_before_anything_runs(pytester: pytest.Pytester) -> None:
    """Not writable (``/sys`` refuses even root): a passing run accepted it silently, and a failing case's repro
    file ended in a PermissionError traceback in place of the finding. Refused as ``check --out`` is, in one line."""
    with pytest.raises(pytest.UsageError) as refused:
        pytester.parseconfigure(*_args("--harness-out", "/sys/harness-out"))
    assert str(refused.value) == (
        "harness: --harness-out /sys/harness-out: cannot be written (Permission denied); fix: give a writable folder"
    )
    pytester.parseconfigure(*_args("--harness-out", str(pytester.path / "new" / "deeper")))  # made when written
    assert not (pytester.path / "new").exists() and list(pytester.path.glob(".harness-*")) == []


@pytest.mark.parametrize(
    ("error", "said"),
    [
        (OSError(errno.ENOSPC, "No space left on device"), "No space left on device"),
        (OSError("the disk went away"), "the disk went away"),  # no errno: its message
    ],
)
def test_a_repro_file_that_cannot_be_written_leaves_the_finding_said_in_one_line(
    error: OSError, said: str, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full disk while a failing case's repro file is written: the item fails with the gate's one line (the
    outcome and the violated property), why no repro file, and the command that runs the case again."""
    from harness.gate.repro import ReproFolder

    def full(*args: object, **kwargs: object) -> Path:
        raise error

    monkeypatch.setattr(ReproFolder, "write", full)
    recorder = pytester.inline_run(*_args("--harness-out", "repros", scenarios=("lost_response",), seeds=1))
    [failed] = [r for r in recorder.getreports("pytest_runtest_logreport") if r.when == "call" and r.failed]
    assert failed.longreprtext == (
        "incorrect: duplicate_effects violated; its repro file could not be written in "
        f"{pytester.path / 'repros'} ({said}); reproduce: python -m harness run --policy "
        f"{UNSAFE} --scenario lost_response --seed 1"
    )


# --- Running the items ----------------------------------------------------------------------------------------


def _expected(policy: str, scenarios: Sequence[str], seeds: Sequence[int], repros: Path) -> list[GateCase]:
    folder = ReproFolder(repros)
    return [judge(run_case(c)[0], c, folder) for c in load_grid([policy], list(scenarios), seeds).cases]


def test_an_unsafe_policys_items_fail_with_the_gates_text_and_write_their_repro_files(
    pytester: pytest.Pytester, grids: Grids, supervised: Supervised, tmp_path: Path
) -> None:
    out = pytester.path / "repros"
    recorder = pytester.inline_run(*_args("--harness-out", "repros", scenarios=("lost_response", "request_lost")))
    expected = _expected(UNSAFE, ("lost_response", "request_lost"), (1, 2), out)
    reports = [r for r in recorder.getreports("pytest_runtest_logreport") if r.when == "call"]
    assert [(r.nodeid, r.outcome) for r in reports] == [
        (f"{UNSAFE}::{c.name.replace(' seed ', '[seed-')}]", "passed" if c.passed else "failed") for c in expected
    ]
    assert any(not c.passed for c in expected) and any(c.passed for c in expected)
    assert [r.longreprtext for r in reports if r.failed] == [c.describe() for c in expected if not c.passed]
    assert sorted(p.relative_to(out) for p in out.rglob("*.yaml")) == sorted(
        c.repro.relative_to(out) for c in expected if c.repro is not None
    )
    assert len(supervised.calls) == 1  # every case, once, together
    [(plan, options)] = grids.calls
    assert plan == Plan((Cell(UNSAFE, "lost_response", (1, 2)), Cell(UNSAFE, "request_lost", (1, 2))), concurrency=1)
    assert options == GridOptions(out=options.out, tracking="none", report=False, case_timeout_s=60.0, check=True)
    assert options.out is not None and options.out.name.startswith("harness-pytest-cases-")
    assert options.out.parent == Path(tempfile.gettempdir()) and not options.out.exists()


def test_the_repro_files_go_to_a_temporary_folder_unless_one_is_given(pytester: pytest.Pytester) -> None:
    config = pytester.parseconfigure(*_args())
    from harness.gate import pytest_plugin

    repros = config.stash[pytest_plugin._REPROS]
    assert repros._path is None and repros._prefix == "harness-pytest-"
    config = pytester.parseconfigure(*_args("--harness-out", "rel"))
    assert config.stash[pytest_plugin._REPROS]._path == pytester.path / "rel"


def test_only_the_selected_items_run_under_their_budget(pytester: pytest.Pytester, grids: Grids) -> None:
    recorder = pytester.inline_run(*_args("-k", "seed-2", "--harness-case-timeout", "0", policy=SAFE, seeds=3))
    recorder.assertoutcome(passed=1)
    [(plan, options)] = grids.calls
    assert plan.cells == (Cell(SAFE, "lost_response", (2,)),)
    assert options.case_timeout_s is None  # 0: none
    grids.calls.clear()
    pytester.inline_run(*_args("--harness-case-timeout", "2.5", "--harness-policy", UNSAFE, policy=SAFE, seeds=1))
    [(plan, options)] = grids.calls
    assert plan.cells == (Cell(SAFE, "lost_response", (1,)), Cell(UNSAFE, "lost_response", (1,)))
    assert options.case_timeout_s == 2.5


def test_a_safe_policys_items_pass(pytester: pytest.Pytester) -> None:
    recorder = pytester.inline_run(*_args(policy=SAFE, scenarios=("lost_response", "request_lost")))
    recorder.assertoutcome(passed=4)


@pytest.mark.parametrize("error", [RunFailed("the run broke"), InputError("bad input"), OSError("disk gone")])
def test_cases_that_could_not_run_fail_every_item_with_why(
    pytester: pytest.Pytester, grids: Grids, error: Exception
) -> None:
    def broken(plan: Plan, options: GridOptions) -> None:
        assert options.out is not None and options.out.is_dir()
        raise error

    grids.instead = broken
    recorder = pytester.inline_run(*_args())
    reports = [r for r in recorder.getreports("pytest_runtest_logreport") if r.when == "call"]
    assert [r.outcome for r in reports] == ["failed", "failed"] and len(grids.calls) == 1
    for r in reports:
        assert r.longrepr.reprcrash.message == f"RuntimeError: harness: the cases could not be run: {error}"  # type: ignore[union-attr]
        assert r.longreprtext.endswith(": RuntimeError")  # pytest's own traceback, not the gate's text
    assert grids.calls[0][1].out is not None and not grids.calls[0][1].out.exists()


def test_an_interrupted_run_of_the_cases_is_not_said_to_be_resumable(grids: Grids) -> None:
    """A CI integrator's review: Ctrl-C printed "<folder> is resumable: python -m harness run --resume ...", a
    folder the plugin had already removed. It stops with what to do instead, and the folder is gone. (Called
    directly: pytester passes a KeyboardInterrupt on to the session running this test.)"""
    from types import SimpleNamespace

    from harness.gate import pytest_plugin

    def stopped(plan: Plan, options: GridOptions) -> None:
        assert options.out is not None and options.out.is_dir()
        raise RunInterrupted(options.out)

    grids.instead = stopped
    config = SimpleNamespace(stash=pytest.Stash(), getoption=lambda name: 0.0)
    with pytest.raises(KeyboardInterrupt) as stop:
        pytest_plugin._reports(SimpleNamespace(config=config, items=[]))  # type: ignore[arg-type]
    assert str(stop.value) == "interrupted; the harness's cases are not kept: run pytest again"
    assert type(stop.value) is KeyboardInterrupt
    assert grids.calls[0][1].out is not None and not grids.calls[0][1].out.exists()


def test_a_case_the_harness_wrote_no_report_for_fails_its_item_with_its_command(
    pytester: pytest.Pytester, grids: Grids
) -> None:
    def without_seed_2(plan: Plan, options: GridOptions, progress: Any = None) -> Any:
        summary = run_grid(plan, options)
        assert options.out is not None
        for path in options.out.rglob("seed-2/recovery.json"):
            path.unlink()
        return summary

    grids.instead = without_seed_2
    recorder = pytester.inline_run(*_args(policy=SAFE))
    reports = [r for r in recorder.getreports("pytest_runtest_logreport") if r.when == "call"]
    assert [r.outcome for r in reports] == ["passed", "failed"]
    assert reports[1].longrepr.reprcrash.message == (  # type: ignore[union-attr]
        "RuntimeError: the harness wrote no report for this case; reproduce: python -m harness run --policy "
        f"{SAFE} --scenario lost_response --seed 2"
    )


def test_the_session_ends_with_the_faults_that_fired_in_no_case(pytester: pytest.Pytester) -> None:
    # stop_on_timeout gives up before connector_no_record_yet's second delayed request: that fault never fires.
    plan = plan_cells(["stop_on_timeout"], ["connector_no_record_yet"], [1], None, 1)
    summary = run_grid(plan, GridOptions(out=pytester.path / "direct", tracking="none", report=False, isolate=False))
    notes = coverage_notes(summary, "stop_on_timeout, " + SAFE)
    assert notes
    args = _args("--harness-policy", SAFE, policy="stop_on_timeout", scenarios=("connector_no_record_yet",), seeds=1)
    result = pytester.runpytest_inprocess(*args)
    lines = result.outlines
    at = next(i for i, line in enumerate(lines) if "recovery harness: coverage" in line)
    assert lines[at].strip("= ") == "recovery harness: coverage"
    assert lines[at + 1 : at + 1 + len(notes)] == notes
    quiet = pytester.runpytest_inprocess(*_args(policy=SAFE, seeds=1))
    assert quiet.ret == 0 and not [line for line in quiet.outlines if "recovery harness" in line]


# --- check_policy ----------------------------------------------------------------------------------------------


def test_a_check_of_a_failing_policy_keeps_its_temporary_folder_and_judges_every_case(
    supervised: Supervised, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[Plan, GridOptions]] = []

    def noted(plan: Plan, options: GridOptions, progress: Any = None) -> Any:
        calls.append((plan, options))
        return run_grid(plan, options)

    monkeypatch.setattr(runner, "run_grid", noted)
    summary = check_policy(UNSAFE, CheckOptions(scenarios=("lost_response", "request_lost"), seeds=(1, 2),
                                                concurrency=3, case_timeout_s=4.0))  # fmt: skip
    [(plan, options)] = calls
    assert plan == Plan((Cell(UNSAFE, "lost_response", (1, 2)), Cell(UNSAFE, "request_lost", (1, 2))), 3)
    assert options == GridOptions(out=options.out, tracking="none", report=False, case_timeout_s=4.0, check=True)
    assert summary.out == options.out and summary.out is not None and summary.out.is_dir()
    assert summary.out.name.startswith("harness-check-")
    grid_ = load_grid([UNSAFE], ["lost_response", "request_lost"], [1, 2])
    assert summary.cases == judge_reports(iter_reports(summary.out), grid_.cases, ReproFolder(summary.out / "repro"))
    assert (summary.policy, summary.policy_revision) == (UNSAFE, grid_.cases[0].policy.revision)
    assert summary.seeds == (1, 2) and summary.explored == () and summary.schedules == 0
    assert summary.explore_elapsed_s == 0.0 and 0 < summary.elapsed_s < 60
    assert summary.elapsed_s == round(summary.elapsed_s, 3)
    assert summary.notes == ()
    assert any(not c.passed for c in summary.cases) and len(summary.cases) == 4


def test_a_check_that_passes_leaves_nothing_behind_unless_given_a_folder(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    made: list[Path] = []
    real = runner.run_grid

    def noted(plan: Plan, options: GridOptions, progress: Any = None) -> Any:
        assert options.out is not None
        made.append(options.out)
        return real(plan, options)

    monkeypatch.setattr(runner, "run_grid", noted)
    summary = check_policy(SAFE, CheckOptions(scenarios=("lost_response",), seeds=(1,)))
    assert summary.out is None and not made[0].exists() and summary.ok
    kept = check_policy(SAFE, CheckOptions(scenarios=("lost_response",), seeds=(1,), out=tmp_path / "c"))
    assert kept.out == tmp_path / "c" and (tmp_path / "c" / "summary.csv").is_file()


def test_a_check_notes_faults_that_fired_in_no_case_once_each() -> None:
    summary = check_policy("stop_on_timeout", CheckOptions(scenarios=("connector_no_record_yet",), seeds=(1, 2)))
    plan = plan_cells(["stop_on_timeout"], ["connector_no_record_yet"], [1, 2], None, 1)
    with tempfile.TemporaryDirectory() as folder:
        direct = run_grid(plan, GridOptions(out=Path(folder) / "o", tracking="none", report=False, isolate=False))
        notes = coverage_notes(direct, "stop_on_timeout")
    assert notes and summary.notes == tuple(notes)


def test_a_check_says_when_the_policy_raised_in_passing_cases(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = f"{__name__}:RAISES"
    summary = check_policy(spec, CheckOptions(scenarios=("lost_response", "request_lost"), seeds=(1, 2)))
    assert summary.ok and summary.out is None
    raised = [c for c in summary.cases if c.raised]
    assert len(raised) == 4
    assert summary.notes == (
        "note: escalate_then_raise raised in 4 of its passing cases (each passed on the evidence: its actions "
        f"accounted for or escalated in time): {raised[0].name}: {raised[0].raised}",
    )
    one = check_policy(spec, CheckOptions(scenarios=("lost_response",), seeds=(1,)))
    assert one.notes == (
        "note: escalate_then_raise raised in 1 of its passing case (each passed on the evidence: its actions "
        f"accounted for or escalated in time): {one.cases[0].name}: {one.cases[0].raised}",
    )


def test_a_check_refuses_bad_seeds_before_anything_runs(supervised: Supervised) -> None:
    with pytest.raises(InputError) as refused:
        check_policy(SAFE, CheckOptions(scenarios=("lost_response",), seeds=()))
    assert str(refused.value) == (
        "check_policy: field 'seeds' of CheckOptions: no seed given, so no case would run; fix: give whole numbers "
        "such as seeds=[1, 2, 3]"
    )
    with pytest.raises(InputError):
        check_policy("nosuch", CheckOptions(scenarios=("lost_response",), seeds=(1,)))
    assert supervised.calls == []


def test_a_check_runs_every_shipped_scenario_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Plan] = []

    def noted(plan: Plan, options: GridOptions, progress: Any = None) -> Any:
        seen.append(plan)
        raise RunNotWritten(Path("x"), "stop here")

    monkeypatch.setattr(runner, "run_grid", noted)
    with pytest.raises(RunFailed):
        check_policy(SAFE, CheckOptions(seeds=(1,)))
    assert [c.scenario_spec for c in seen[0].cells] == list_scenarios()


@pytest.mark.parametrize("given", [False, True])
def test_a_check_that_cannot_write_says_to_run_it_again(
    given: bool, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    made: list[Path] = []

    def full(plan: Plan, options: GridOptions, progress: Any = None) -> Any:
        assert options.out is not None
        options.out.mkdir(parents=True, exist_ok=True)
        made.append(options.out)
        raise RunNotWritten(options.out, "No space left on device")

    monkeypatch.setattr(runner, "run_grid", full)
    options = CheckOptions(scenarios=("lost_response",), seeds=(1,), out=tmp_path / "c" if given else None)
    with pytest.raises(RunFailed) as failed:
        check_policy(SAFE, options)
    out = made[0]
    again = (
        f"run the same command again with a new --out ({out} holds what it wrote)"
        if given
        else "run the same command again"
    )
    assert str(failed.value) == (
        f"cannot write the check's files in {out} (No space left on device); fix: make room or give a writable "
        f"folder, then {again}"
    )
    assert type(failed.value) is RunFailed and failed.value.__cause__ is None and failed.value.__suppress_context__
    assert out.exists() is given

    def no_room(plan: Plan, options: GridOptions, progress: Any = None) -> Any:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(runner, "run_grid", no_room)
    with pytest.raises(RunFailed) as failed:
        check_policy(SAFE, replace(options, out=tmp_path / "d" if given else None))
    assert "(No space left on device); fix:" in str(failed.value)

    def bare(plan: Plan, options: GridOptions, progress: Any = None) -> Any:
        raise OSError(errno.EACCES, "")

    monkeypatch.setattr(runner, "run_grid", bare)
    with pytest.raises(RunFailed) as failed:
        check_policy(SAFE, replace(options, out=tmp_path / "e" if given else None))
    assert "files in" in str(failed.value) and f"({OSError(errno.EACCES, '')}); fix:" in str(failed.value)

    def missing(plan: Plan, options: GridOptions, progress: Any = None) -> Any:
        raise FileNotFoundError(errno.ENOENT, "No such file or directory")

    monkeypatch.setattr(runner, "run_grid", missing)
    with pytest.raises(FileNotFoundError):  # not the user's to mend: the harness's own bug, reported as one
        check_policy(SAFE, replace(options, out=tmp_path / "f" if given else None))


@pytest.mark.parametrize("given", [False, True])
def test_an_interrupted_check_says_it_is_not_resumable(
    given: bool, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    made: list[Path] = []

    def stopped(plan: Plan, options: GridOptions, progress: Any = None) -> Any:
        assert options.out is not None
        options.out.mkdir(parents=True, exist_ok=True)
        made.append(options.out)
        raise RunInterrupted(options.out)

    monkeypatch.setattr(runner, "run_grid", stopped)
    options = CheckOptions(scenarios=("lost_response",), seeds=(1,), out=tmp_path / "c" if given else None)
    with pytest.raises(KeyboardInterrupt) as stop:
        check_policy(SAFE, options)
    again = (
        f"run the same command again with a new --out ({made[0]} holds what it wrote)"
        if given
        else "run the same command again"
    )
    assert str(stop.value) == f"interrupted; a check is not resumable: {again}"
    assert type(stop.value) is KeyboardInterrupt and stop.value.__cause__ is None and stop.value.__suppress_context__


def test_a_check_with_exploration_explores_each_scenario_at_its_seeds(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from harness.explore import explore

    calls: list[tuple[list[str], list[str], Any, Any]] = []

    def small(policies: list[str], scenarios: list[str], options: Any, progress: Any) -> Any:
        calls.append((policies, scenarios, options, progress))
        return explore(policies, scenarios, replace(options, depth=1, swarm=0, isolate=False), progress)

    monkeypatch.setattr(runner, "explore", small)
    progress: list[int] = []
    options = CheckOptions(scenarios=("lost_response",), seeds=(1, 2), explore=True, out=tmp_path / "c",
                           concurrency=2, case_timeout_s=7.0)  # fmt: skip
    summary = check_policy(UNSAFE, options, progress=lambda done, total, result: progress.append(done))
    [(policies, scenarios, explore_options, _)] = calls
    assert (policies, scenarios) == ([UNSAFE], ["lost_response"])
    assert (explore_options.out, explore_options.seeds, explore_options.concurrency, explore_options.tracking,
            explore_options.case_timeout_s) == (tmp_path / "c" / "explore", (1, 2), 2, "none", 7.0)  # fmt: skip
    assert (explore_options.depth, explore_options.swarm, explore_options.isolate) == (2, 20, True)  # the defaults
    assert progress and summary.explored and summary.schedules > 0
    assert 0 < summary.explore_elapsed_s < 60 and summary.explore_elapsed_s == round(summary.explore_elapsed_s, 3)
    assert any(not c.passed for c in summary.explored)
    assert summary.out == tmp_path / "c"


def test_a_passing_check_with_exploration_leaves_nothing_behind(monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.explore import explore

    outs: list[Path] = []

    def small(policies: list[str], scenarios: list[str], options: Any, progress: Any) -> Any:
        outs.append(options.out)
        return explore(policies, scenarios, replace(options, depth=1, swarm=0, isolate=False), progress)

    monkeypatch.setattr(runner, "explore", small)
    summary = check_policy(SAFE, CheckOptions(scenarios=("lost_response",), seeds=(1,), explore=True))
    assert summary.ok and summary.out is None and not outs[0].parent.exists()
    assert [(c.name, c.status) for c in summary.explored] == [("explored lost_response seed 1", "passed")]


def test_a_check_notes_what_exploration_never_fired_unless_it_stopped_there(monkeypatch: pytest.MonkeyPatch) -> None:
    from types import SimpleNamespace

    unfired = [SimpleNamespace(scenario="a", what="fault f"), SimpleNamespace(scenario="b", what="fault g")]
    found = SimpleNamespace(explorations=[], errors=[], unfired=unfired, stopped_in={"b"}, schedules=5, reproduce=[])
    monkeypatch.setattr(runner, "explore", lambda *args: found)
    summary = check_policy(SAFE, CheckOptions(scenarios=("lost_response",), seeds=(1,), explore=True))
    assert summary.notes == (
        f"note: scenario a declares fault f, which fired in no case of {SAFE} on the scenario as written "
        "(exploration's schedules may change when it fires)",
    )
    assert summary.schedules == 5


# --- assert_recovers ---------------------------------------------------------------------------------------------


def test_assert_recovers_returns_every_verdict_of_a_safe_policy() -> None:
    verdicts = assert_recovers(SAFE, scenarios=["lost_response", "request_lost"], seeds=[1, 2])
    assert [(v.policy, v.name, v.status) for v in verdicts] == [
        (SAFE, f"{s} seed {n}", "passed") for s in ("lost_response", "request_lost") for n in (1, 2)
    ]
    assert assert_recovers(SAFE, scenarios="lost_response", seeds=3)[0].name == "lost_response seed 3"


def test_assert_recovers_raises_with_every_failing_case_and_its_repro_file(tmp_path: Path) -> None:
    out = tmp_path / "o"
    with pytest.raises(PolicyDoesNotRecover) as raised:
        assert_recovers(UNSAFE, scenarios=["lost_response", "request_lost"], seeds=[1, 2], out=str(out))
    expected = _expected(UNSAFE, ("lost_response", "request_lost"), (1, 2), out)
    assert raised.value.policy == UNSAFE and raised.value.total == 4
    assert list(raised.value.failures) == [c for c in expected if not c.passed]
    assert all(c.repro is not None and c.repro.is_file() for c in raised.value.failures)


def test_assert_recovers_writes_its_repro_files_by_absolute_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(PolicyDoesNotRecover) as raised:
        assert_recovers(UNSAFE, scenarios=["lost_response"], seeds=[1], out=Path("rel"))
    (failure,) = raised.value.failures
    assert failure.repro is not None and failure.repro.is_absolute() and failure.repro.is_relative_to(tmp_path / "rel")


def test_assert_recovers_names_a_policy_object_by_where_it_is_defined() -> None:
    verdicts = assert_recovers(RAISES, scenarios=["lost_response"], seeds=[1])
    assert [(v.policy, v.status) for v in verdicts] == [("escalate_then_raise", "passed")]
    assert verdicts[0].raised is not None


def test_assert_recovers_runs_every_shipped_scenario_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[str, int]] = []

    class Enough(Exception):
        pass

    def quick(case: Any) -> Any:
        seen.append((case.scenario_spec, case.seed))
        raise Enough

    monkeypatch.setattr(runner, "run_case", quick)
    with pytest.raises(Enough):
        assert_recovers(SAFE)
    assert seen == [(list_scenarios()[0], 1)]
    seen.clear()
    monkeypatch.setattr(runner, "run_case", lambda case: seen.append((case.scenario_spec, case.seed)) or run_case(case))
    verdicts = assert_recovers(SAFE, scenarios=[], seeds=[5])
    assert [s for s, _ in seen] == [c.scenario_spec for c in load_grid([SAFE], list_scenarios(), [5]).cases]
    assert len(verdicts) == len(seen) and {n for _, n in seen} == {5}


def test_assert_recovers_refuses_bad_seeds_and_outs_naming_its_argument(tmp_path: Path) -> None:
    with pytest.raises(InputError) as refused:
        assert_recovers(SAFE, scenarios=["lost_response"], seeds=[])
    assert str(refused.value).startswith("assert_recovers: argument 'seeds': no seed given")
    (tmp_path / "f").write_text("")
    with pytest.raises(InputError) as refused:
        assert_recovers(SAFE, scenarios=["lost_response"], seeds=[1], out=tmp_path / "f")
    assert str(refused.value) == f"assert_recovers: argument 'out': {tmp_path / 'f'} is a file; fix: give a folder"
    with pytest.raises(UsageError if False else InputError):
        assert_recovers(SAFE, scenarios=["nosuch"], seeds=[1])


# --- The rootdir note -------------------------------------------------------------------------------------------


def _said(result: pytest.RunResult) -> list[str]:
    """The plugin's config warnings in a run's warnings summary, each with the file it is said to come from."""
    found = []
    for line in result.outlines:
        head, sep, message = line.strip().partition(": PytestConfigWarning: ")
        if sep:
            found.append(f"{Path(head.rsplit(':', 1)[0]).name}: {message}")
    return found


@pytest.fixture
def layout(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    """project/ (with a pytest.ini, the folder pytest runs from), elsewhere/ (a scenario file and an empty
    folder) and other/ (a pytest.ini and a test file)."""
    root = pytester.path
    source = Path(__file__).resolve().parent.parent / "scenarios" / "lost_response.yaml"
    for folder in ("project", "elsewhere/empty", "other"):
        (root / folder).mkdir(parents=True)
    (root / "project" / "pytest.ini").write_text("[pytest]\n")
    (root / "other" / "pytest.ini").write_text("[pytest]\n")
    (root / "other" / "test_y.py").write_text("def test_y():\n    pass\n")
    (root / "elsewhere" / "mine.yaml").write_text(source.read_text().replace("name: lost_response", "name: mine"))
    monkeypatch.chdir(root / "project")
    return root


def _collect(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_inprocess(*QUIET, "--co", "--harness-policy", SAFE, "--harness-seed-count", "1", *args)


def test_the_plugin_says_which_path_options_moved_the_rootdir_away_from_the_projects_ini(
    pytester: pytest.Pytester, layout: Path
) -> None:
    # --confcutdir's value is a folder too, but not the plugin's: it is not named.
    args = ("--confcutdir", str(layout), "--harness-scenario", "../elsewhere/mine.yaml", "--harness-out",
            "../elsewhere/empty")  # fmt: skip
    assert _said(_collect(pytester, *args)) == [
        f"pytest_plugin.py: harness: pytest took ../elsewhere/mine.yaml, ../elsewhere/empty for a test path when it "
        f"chose its rootdir ({layout}, not {layout / 'project'}) and ini file (none, not "
        f"{layout / 'project' / 'pytest.ini'}): it chooses them before it knows the plugin's options; fix: give "
        "--harness-scenario=../elsewhere/mine.yaml, --harness-out=../elsewhere/empty"
    ]
    assert _said(_collect(pytester, "--harness-scenario=../elsewhere/mine.yaml")) == []


def test_the_plugin_says_when_a_path_options_own_ini_was_taken(pytester: pytest.Pytester, layout: Path) -> None:
    (layout / "project" / "pytest.ini").unlink()
    (layout / "elsewhere" / "pytest.ini").write_text("[pytest]\n")
    assert _said(_collect(pytester, "--harness-scenario", "../elsewhere/mine.yaml")) == [
        f"pytest_plugin.py: harness: pytest took ../elsewhere/mine.yaml for a test path when it chose its rootdir "
        f"({layout / 'elsewhere'}, not {layout / 'project'}) and ini file ({layout / 'elsewhere' / 'pytest.ini'}, not "
        "none): it chooses them before it knows the plugin's options; fix: give "
        "--harness-scenario=../elsewhere/mine.yaml"
    ]


def test_the_rootdir_is_chosen_again_with_the_runs_own_test_paths_and_rootdir(
    pytester: pytest.Pytester, layout: Path
) -> None:
    # A test path of the run's own (other/, with its ini) decides the choice either way: nothing moved.
    assert _said(_collect(pytester, "../other/test_y.py", "--harness-scenario", "../elsewhere/mine.yaml")) == []
    # So does an ini file given with -c.
    assert _said(_collect(pytester, "-c", "../other/pytest.ini", "--harness-scenario", "../elsewhere/mine.yaml")) == []
    # --rootdir given: the rootdir stays, the ini file moved.
    said = _said(_collect(pytester, "--rootdir=../elsewhere", "--harness-scenario", "../elsewhere/mine.yaml"))
    assert said == [
        f"pytest_plugin.py: harness: pytest took ../elsewhere/mine.yaml for a test path when it chose its rootdir "
        f"({layout / 'elsewhere'}, not {layout / 'elsewhere'}) and ini file (none, not "
        f"{layout / 'project' / 'pytest.ini'}): it chooses them before it knows the plugin's options; fix: give "
        "--harness-scenario=../elsewhere/mine.yaml"
    ]


def test_a_failing_item_raises_the_gates_exception_for_its_one_case(pytester: pytest.Pytester) -> None:
    items, _ = pytester.inline_genitems(*_args(seeds=1))
    (item,) = items
    with pytest.raises(PolicyDoesNotRecover) as raised:
        item.runtest()
    (verdict,) = _expected(UNSAFE, ("lost_response",), (1,), pytester.path / "unused")
    assert (raised.value.policy, raised.value.total, len(raised.value.failures)) == (UNSAFE, 1, 1)
    assert raised.value.failures[0].message == verdict.message
    assert str(raised.value).startswith(f"{UNSAFE} does not recover in 1 of 1 cases")


def test_a_check_with_exploration_keeps_the_cases_own_notes(monkeypatch: pytest.MonkeyPatch) -> None:
    from types import SimpleNamespace

    found = SimpleNamespace(explorations=[], errors=[], unfired=[], stopped_in=set(), schedules=1, reproduce=[])
    monkeypatch.setattr(runner, "explore", lambda *args: found)
    options = CheckOptions(scenarios=("connector_no_record_yet",), seeds=(1,))
    plain = check_policy("stop_on_timeout", options)
    explored = check_policy("stop_on_timeout", replace(options, explore=True))
    assert plain.notes and explored.notes == plain.notes


def test_a_checks_time_is_kept_to_the_millisecond(monkeypatch: pytest.MonkeyPatch) -> None:
    from types import SimpleNamespace

    ticks = iter([5.0, 5.1234567])
    monkeypatch.setattr(runner, "time", SimpleNamespace(perf_counter=lambda: next(ticks)))
    summary = check_policy(SAFE, CheckOptions(scenarios=("lost_response",), seeds=(1,)))
    assert summary.elapsed_s == 0.123


def test_assert_recovers_puts_its_repro_files_in_a_temporary_folder_of_its_own() -> None:
    with pytest.raises(PolicyDoesNotRecover) as raised:
        assert_recovers(UNSAFE, scenarios=["lost_response"], seeds=[1])
    (failure,) = raised.value.failures
    assert failure.repro is not None
    folder = failure.repro.relative_to(tempfile.gettempdir()).parts[0]
    assert folder.startswith("harness-recovers-")
