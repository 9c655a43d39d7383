"""``pytest --harness-policy SPEC``: gate a recovery policy from pytest, one test item per scenario x seed.

Registered through the ``pytest11`` entry point, so every pytest run in an environment where the harness is
installed loads this module. Without ``--harness-policy`` it only adds its options: it imports nothing of the
harness and collects nothing (``-p no:harness`` turns it off altogether). With it, the items are added to the
session's own collection, so they run in a folder without any test file, beside the folder's own tests, and
``-k`` and ``-x`` apply to them as to any test. An item fails with the same text as its JUnit failure (the
anomaly, the witnessing timeline entries, the reproduce command of its repro file).

An item's node ID, ``POLICY::SCENARIO[seed-N]``, names no file, so pytest would refuse it on its command line;
the plugin takes such arguments out of the paths pytest collects from and collects only the items they name
(``_take_node_ids``). The IDs are given to pytest as text, as its cache stores them, so ``--lf``, ``--ff`` and
``--sw`` find them (pytest 9 told them apart from its cached IDs before). ``--junitxml`` names each test case as
``harness check --junit`` does (``_JUnitNames``).

The selected cases run once, together, when the first of them is reached: in worker processes the harness
supervises, as ``harness run`` runs them, so a policy that never returns costs one case's budget
(``--harness-case-timeout``) and one that kills its process fails its own item, never the pytest session.
Under pytest-xdist (``-n``), the first worker to reach one runs them all, once, and the others read its reports
(every worker collects every item, and each ran them all before); its coverage notes reach the controller.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Generator, Mapping
from dataclasses import replace
from itertools import pairwise
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from _pytest._code.code import TerminalRepr

    from harness.gate.repro import ReproFolder
    from harness.model import CaseReport
    from harness.run.plan import Case

__all__ = ["PolicyCases", "ScenarioSeed"]

_DEFAULT_SEED_COUNT = 3
#: The cases of each policy asked for, and where failing cases' repro files go (set only with the option).
_CASES: pytest.StashKey[dict[str, tuple[Case, ...]]] = pytest.StashKey()
_REPROS: pytest.StashKey[ReproFolder] = pytest.StashKey()
#: Every selected case's report by (policy, scenario, seed), once they have run; or why they could not.
_REPORTS: pytest.StashKey[Mapping[tuple[str, str, int], CaseReport] | str] = pytest.StashKey()
_DEFAULT_CASE_TIMEOUT_S = 60.0
#: What ``harness check`` notes about the cases run: declared faults and operator events that fired in none.
_NOTES: pytest.StashKey[list[str]] = pytest.StashKey()
#: ``--harness-baseline``: its spec and its name (its cases run in a grid of their own, keyed by its name).
_BASELINE: pytest.StashKey[tuple[str, str]] = pytest.StashKey()
#: The node IDs of the items named on the command line (``pytest POLICY::SCENARIO[seed-N]``); unset: every item.
_SELECTED: pytest.StashKey[frozenset[str]] = pytest.StashKey()


def _item_name(case: Case) -> str:
    return f"{case.scenario.name}[seed-{case.seed}]"


def _nodeid(case: Case) -> str:
    """``POLICY::SCENARIO[seed-N]``: what pytest prints for the item, and takes back on its command line."""
    return f"{case.policy.name}::{_item_name(case)}"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("harness", "recovery-harness: gate a recovery policy")
    group.addoption(
        "--harness-policy",
        action="append",
        default=[],
        metavar="SPEC",
        help="collect one test per scenario x seed for this policy (a shipped name or package.module:attr; "
        "repeatable); without it the plugin does nothing",
    )
    group.addoption(
        "--harness-scenario",
        action="append",
        default=[],
        metavar="NAME|PATH",
        help="a shipped scenario or a YAML file (repeatable; default: every shipped scenario)",
    )
    group.addoption(
        "--harness-seed-count",
        type=int,
        default=_DEFAULT_SEED_COUNT,
        metavar="N",
        help=f"seeds 1..N (default {_DEFAULT_SEED_COUNT})",
    )
    group.addoption(
        "--harness-case-timeout",
        type=float,
        default=_DEFAULT_CASE_TIMEOUT_S,
        metavar="SECONDS",
        help=f"wall-clock budget of one case; a case over it fails its item as a harness error (default "
        f"{_DEFAULT_CASE_TIMEOUT_S:g}; 0: none)",
    )
    group.addoption(
        "--harness-baseline",
        default=None,
        metavar="SPEC",
        help="also run this policy on the same cases, and fail each item that passes yet leaves the task "
        "incomplete where the baseline completes it (safe is not done)",
    )
    group.addoption(
        "--harness-out",
        default=None,
        metavar="DIR",
        help="folder for the repro files of failing cases (default: a new temporary folder)",
    )


#: The plugin's options whose value can be a path.
_PATH_OPTIONS = ("--harness-scenario", "--harness-out")


def _rootdir_moved(config: pytest.Config) -> str | None:
    """What to say when pytest chose its rootdir or ini file with a path option's value in it.

    pytest chooses them before it loads plugins from entry points, so the value of ``--harness-scenario PATH``
    (the space form) is taken for a test path in that choice: a scenario file outside the project moves the
    rootdir to a common ancestor and the project's pytest.ini goes unread. ``--harness-scenario=PATH`` does not.
    The choice is made again without those values (with pytest's own function, where this pytest has it); only a
    choice that differs is said."""
    args = [str(a) for a in config.invocation_params.args]
    taken = [(name, value) for name, value in pairwise(args) if name in _PATH_OPTIONS and Path(value).exists()]
    if not taken:
        return None
    try:
        from _pytest.config.findpaths import determine_setup

        rootpath, inipath, *_ = determine_setup(
            inifile=config.option.inifilename,
            override_ini=config.option.override_ini,
            args=[str(a) for a in config.option.file_or_dir or ()],
            rootdir_cmd_arg=config.option.rootdir or None,
            invocation_dir=config.invocation_params.dir,
        )
    except Exception:  # another pytest: the choice cannot be made again, and nothing is said
        return None
    if (rootpath, inipath) == (config.rootpath, config.inipath):
        return None
    values = ", ".join(value for _, value in taken)
    joined = ", ".join(f"{name}={value}" for name, value in taken)
    return (
        f"harness: pytest took {values} for a test path when it chose its rootdir ({config.rootpath}, "
        f"not {rootpath}) and ini file ({config.inipath or 'none'}, not {inipath or 'none'}): it chooses them before "
        f"it knows the plugin's options; fix: give {joined}"
    )


def _given_without_a_policy(config: pytest.Config) -> list[str]:
    """The plugin's options given other than as their defaults: without ``--harness-policy`` they do nothing, and a
    CI script that lost that option would pass without gating anything."""
    given = {
        "--harness-scenario": bool(config.getoption("harness_scenario")),
        "--harness-seed-count": config.getoption("harness_seed_count") != _DEFAULT_SEED_COUNT,
        "--harness-case-timeout": config.getoption("harness_case_timeout") != _DEFAULT_CASE_TIMEOUT_S,
        "--harness-baseline": config.getoption("harness_baseline") is not None,
        "--harness-out": config.getoption("harness_out") is not None,
    }
    return [name for name, was in given.items() if was]


def pytest_configure(config: pytest.Config) -> None:
    moved = _rootdir_moved(config)
    if moved is not None:
        config.issue_config_time_warning(pytest.PytestConfigWarning(moved), stacklevel=2)
    specs: list[str] = config.getoption("harness_policy")
    if not specs:
        alone = _given_without_a_policy(config)
        if alone:
            config.issue_config_time_warning(
                pytest.PytestConfigWarning(
                    f"harness: {', '.join(alone)} given without --harness-policy, so no case is collected and nothing "
                    "is gated; fix: add --harness-policy SPEC (or drop them)"
                ),
                stacklevel=2,
            )
        return
    # Only now, and only when asked: loading the harness costs a fraction of a second.
    from harness.errors import InputError
    from harness.gate.repro import ReproFolder
    from harness.limits import CASE_TIMEOUT_MAX_S, COUNT_MAX
    from harness.run import load_grid
    from harness.run.files import check_new_or_empty, check_writable_folder
    from harness.run.plan import absolute
    from harness.scenario import list_scenarios

    count: int = config.getoption("harness_seed_count")
    if not 1 <= count <= COUNT_MAX:
        raise pytest.UsageError(f"--harness-seed-count {count} is outside 1..{COUNT_MAX}; fix: give a count in range")
    budget: float = config.getoption("harness_case_timeout")
    if not 0 <= budget <= CASE_TIMEOUT_MAX_S:
        raise pytest.UsageError(
            f"--harness-case-timeout {budget:g} is outside 0..{CASE_TIMEOUT_MAX_S:g}; fix: give seconds in range"
        )
    # A scenario file's path made absolute, as the command line makes it: a failure's commands run anywhere.
    scenarios = [absolute(s) for s in config.getoption("harness_scenario") or list_scenarios()]
    cases: dict[str, tuple[Case, ...]] = {}
    named: dict[str, str] = {}  # each policy's spec by its name
    try:
        for spec in dict.fromkeys(specs):
            grid = load_grid([spec], scenarios, range(1, count + 1))
            cases[grid.policies[0]] = grid.cases
            named.setdefault(grid.policies[0], spec)
    except InputError as exc:  # one line naming the field and the fix, as the command line says it
        raise pytest.UsageError(f"harness: {exc}") from None
    config.stash[_CASES] = cases
    selected = _take_node_ids(config, cases, named)
    if selected is not None:
        config.stash[_SELECTED] = selected
    config.pluginmanager.register(_JUnitNames(config, cases), "harness-junit-names")
    baseline: str | None = config.getoption("harness_baseline")
    if baseline is not None:
        try:
            name = load_grid([baseline], scenarios, [1]).policies[0]
        except InputError as exc:
            raise pytest.UsageError(f"harness: --harness-baseline: {exc}") from None
        if named.get(name, baseline) != baseline:
            raise pytest.UsageError(
                f"harness: --harness-baseline {baseline}: its name '{name}' is that of --harness-policy "
                f"{named[name]}, and the cases of both would be taken for one policy's; fix: give one of them "
                "another name"
            )
        config.stash[_BASELINE] = (baseline, name)
    out: str | None = config.getoption("harness_out")
    if out is not None and not out.strip():  # an unset variable in a CI script ("--harness-out $REPROS")
        raise pytest.UsageError(
            "harness: --harness-out: an empty path; fix: give a folder, or leave the option out for a temporary one"
        )
    if out:
        try:  # as `harness check --out`: repro files never mix with what another run left there
            check_new_or_empty(Path(out), "--harness-out")
            check_writable_folder(Path(out), "--harness-out")
        except InputError as exc:
            raise pytest.UsageError(f"harness: {exc}") from None
    config.stash[_REPROS] = ReproFolder(Path(out).absolute() if out else None, prefix="harness-pytest-")


def _take_node_ids(
    config: pytest.Config, cases: Mapping[str, tuple[Case, ...]], named: Mapping[str, str]
) -> frozenset[str] | None:
    """The items the command line names by node ID, as pytest prints them: ``POLICY`` (every item of that policy),
    ``POLICY::SCENARIO`` (every seed) or ``POLICY::SCENARIO[seed-N]``; None when it names none (every item is
    collected, as before). pytest would take such an argument for a path and stop at "file or directory not
    found", so each is taken out of the paths it collects from (``config.args``); an argument whose first part is
    a path that exists stays a path. One that names no item is refused, as pytest refuses a node ID it cannot
    find."""
    ids = [_nodeid(case) for policy_cases in cases.values() for case in policy_cases]
    taken: list[str] = []
    selected: set[str] = set()
    for arg in config.args:
        head = arg.partition("[")[0].split("::")[0]
        if head not in cases or (config.invocation_params.dir / head).exists():
            continue
        found = [i for i in ids if i == arg or i.startswith(f"{arg}::") or ("[" not in arg and i.startswith(f"{arg}["))]
        if not found:
            raise pytest.UsageError(
                f"harness: {arg} names no item of --harness-policy {named[head]} (its items are "
                f"{head}::<scenario>[seed-<n>], for the --harness-scenario given and seeds 1..--harness-seed-count); "
                "fix: give the --harness-scenario and --harness-seed-count of the run that printed it"
            )
        taken.append(arg)
        selected.update(found)
    if not taken:
        return None
    config.args[:] = [arg for arg in config.args if arg not in taken]
    return frozenset(selected)


class _JUnitNames:
    """``--junitxml``: each item's ``testcase`` named as ``harness check --junit`` names its case (``name``
    ``<scenario> seed <n>``; pytest's ``classname`` is already the policy), not ``<scenario>[seed-<n>]``.

    The name goes to pytest's own JUnit reporter as ``record_xml_attribute`` puts it there, but from the process
    that writes the file and from each item's report: under pytest-xdist the items run in workers, which write
    no JUnit and where that fixture does nothing. Each attribute is set before that reporter reads the report
    (``tryfirst``), and only for a report it opens a test case for (a setup that passed opens none)."""

    def __init__(self, config: pytest.Config, cases: Mapping[str, tuple[Case, ...]]) -> None:
        from harness.gate.cases import case_name

        self.config = config
        self.names = {_nodeid(c): case_name(c.scenario.name, c.seed) for cs in cases.values() for c in cs}

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        name = self.names.get(report.nodeid)
        if name is None or (report.when == "setup" and report.passed):
            return
        try:
            from _pytest.junitxml import xml_key
        except ImportError:  # another pytest: its own names stay
            return
        xml = self.config.stash.get(xml_key, None)
        if xml is not None:
            xml.node_reporter(report).add_attribute("name", name)


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(
    collector: pytest.Collector,
) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
    """Add one collector per policy to what the session itself collects (whatever the folder holds)."""
    report = yield
    cases = collector.config.stash.get(_CASES, None)
    if cases and isinstance(collector, pytest.Session) and report.passed and isinstance(report.result, list):
        selected = collector.config.stash.get(_SELECTED, None)
        for policy, policy_cases in cases.items():
            if selected is None or any(_nodeid(c) in selected for c in policy_cases):
                report.result.append(PolicyCases.from_parent(collector, name=policy, nodeid=policy, cases=policy_cases))
    return report


class PolicyCases(pytest.Collector):
    """Every scenario x seed of one policy."""

    def __init__(self, *, cases: tuple[Case, ...], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.cases = cases

    def collect(self) -> list[pytest.Item]:
        # The node ID given as text, not left to pytest to derive from the name: pytest 9 then parses it as it parses
        # the IDs in its cache (the seed a parameter), so --lf and --sw find the items that failed last time.
        selected = self.config.stash.get(_SELECTED, None)
        return [
            ScenarioSeed.from_parent(self, name=_item_name(case), nodeid=_nodeid(case), case=case)
            for case in self.cases
            if selected is None or _nodeid(case) in selected
        ]


class ScenarioSeed(pytest.Item):
    """One case: passes when its outcome is correct or escalated."""

    def __init__(self, *, case: Case, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.case = case

    def runtest(self) -> None:
        from harness.gate.cases import PolicyDoesNotRecover, judge

        reports = _reports(self.session)
        if isinstance(reports, str):
            raise RuntimeError(reports)
        report = reports.get((self.case.policy.name, self.case.scenario.name, self.case.seed))
        if report is None:
            from harness.run.plan import reproduce_command

            raise RuntimeError(f"the harness wrote no report for this case; reproduce: {reproduce_command(self.case)}")
        unwritten = None
        try:
            verdict = judge(report, self.case, self.config.stash[_REPROS])
        except OSError as exc:  # a full disk, say: the verdict stands, said in one line, with no repro file
            unwritten = exc.strerror or str(exc)
        if unwritten is not None:
            from harness.gate.cases import message_of

            pytest.fail(
                f"{message_of(report)}; its repro file could not be written in {self.config.stash[_REPROS].path} "
                f"({unwritten}); reproduce: {report.reproduce}",
                pytrace=False,
            )
        baseline = self.config.stash.get(_BASELINE, None)
        if baseline is not None:
            from harness.gate.runner import Brief, against_baseline

            spec, name = baseline
            found = reports.get((name, self.case.scenario.name, self.case.seed))
            reference = Brief.of(found) if found is not None else None
            mine = Brief.of(report)
            verdict = against_baseline(verdict, mine, reference, self.case.policy_spec, spec, self.case.scenario_spec)
        if not verdict.passed:
            raise PolicyDoesNotRecover(verdict.policy, [verdict], 1)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str | TerminalRepr:
        from harness.gate.cases import PolicyDoesNotRecover

        if isinstance(excinfo.value, PolicyDoesNotRecover):
            return "\n\n".join(f.describe() for f in excinfo.value.failures)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"{self.case.policy.name} x {self.case.scenario.name} seed {self.case.seed}"


def _reports(session: pytest.Session) -> Mapping[tuple[str, str, int], CaseReport] | str:
    """Run every selected case once (the first item to need one runs them all), in supervised worker
    processes; the reports by (policy, scenario, seed), or one line saying why the run failed."""
    config = session.config
    found = config.stash.get(_REPORTS, None)
    if found is not None:
        return found
    from harness.errors import InputError, RunFailed
    from harness.gate.runner import coverage_notes
    from harness.run.files import read_reports
    from harness.run.grid import GridOptions, RunInterrupted, run_grid
    from harness.run.plan import Cell, Plan

    baseline = config.stash.get(_BASELINE, None)

    def run(out: Path) -> tuple[Mapping[tuple[str, str, int], CaseReport] | str, list[str]]:
        seeds: dict[tuple[str, str], list[int]] = {}
        items = [item for item in session.items if isinstance(item, ScenarioSeed)]
        for item in items:
            seeds.setdefault((item.case.policy_spec, item.case.scenario_spec), []).append(item.case.seed)
        plan = Plan(tuple(Cell(p, s, tuple(dict.fromkeys(n))) for (p, s), n in seeds.items()), concurrency=1)
        budget: float = config.getoption("harness_case_timeout")
        options = GridOptions(out=out, tracking="none", report=False, case_timeout_s=budget or None, check=True)
        try:
            summary = run_grid(plan, options)
            policies = dict.fromkeys(i.case.policy.name for i in items)
            reports = dict(read_reports(out))
            # Only the gated policies' cases say which declared faults fired: the baseline's run apart.
            notes = coverage_notes(summary, ", ".join(policies))
            if baseline is not None:  # on the same cases: every selected item's scenario at its seeds
                wanted: dict[str, list[int]] = {}
                for item in items:
                    wanted.setdefault(item.case.scenario_spec, []).append(item.case.seed)
                cells = tuple(Cell(baseline[0], s, tuple(dict.fromkeys(n))) for s, n in wanted.items())
                run_grid(Plan(cells, concurrency=1), replace(options, out=out / "baseline"))
                reports.update(read_reports(out / "baseline"))
                notes += _completion_notes(reports, items, baseline[1])
            return reports, notes
        except (InputError, RunFailed, OSError) as exc:
            return f"harness: the cases could not be run: {exc}", []
        except RunInterrupted:  # its folder is removed here, so it is not resumable, as the message would say
            raise KeyboardInterrupt("interrupted; the harness's cases are not kept: run pytest again") from None

    worker: dict[str, Any] | None = getattr(config, "workerinput", None)
    if worker is None:
        out = Path(tempfile.mkdtemp(prefix="harness-pytest-cases-"))
        try:
            found, config.stash[_NOTES] = run(out)
        finally:
            shutil.rmtree(out, ignore_errors=True)
    else:
        found, notes = _run_once_for_all_workers(_shared_folder(worker["testrunuid"]), run)
        config.workeroutput[_WORKER_NOTES] = notes  # type: ignore[attr-defined]
    config.stash[_REPORTS] = found
    return found


def _completion_notes(
    reports: Mapping[tuple[str, str, int], CaseReport], items: list[ScenarioSeed], baseline: str
) -> list[str]:
    """For each policy gated against the baseline, how often it and the baseline completed the task on the
    selected cases (``harness check --baseline``'s note)."""
    from harness.gate.runner import Brief, completion_note

    notes = []
    for policy in dict.fromkeys(i.case.policy.name for i in items):
        cases = [(i.case.scenario.name, i.case.seed) for i in items if i.case.policy.name == policy]
        mine = [Brief.of(reports[(policy, *c)]) for c in cases if (policy, *c) in reports]
        theirs = [Brief.of(reports[(baseline, *c)]) for c in cases if (baseline, *c) in reports]
        notes.append(f"{completion_note(mine, theirs, baseline)} ({policy})")
    return notes


#: What a pytest-xdist worker that ran the cases sends the controller: its coverage notes.
_WORKER_NOTES = "harness_coverage_notes"
#: The shared folder of a pytest-xdist run, removed by the controller once every worker is done.
_SHARED: pytest.StashKey[Path] = pytest.StashKey()


def _shared_folder(testrunuid: str) -> Path:
    """Where the workers of one pytest-xdist run share the cases: named by the run's ID, which they all get."""
    return Path(tempfile.gettempdir()) / f"harness-pytest-xdist-{testrunuid}"


def _run_once_for_all_workers(
    shared: Path, run: Callable[[Path], tuple[Mapping[tuple[str, str, int], CaseReport] | str, list[str]]]
) -> tuple[Mapping[tuple[str, str, int], CaseReport] | str, list[str]]:
    """The first worker to take the shared folder's lock runs every case into it and says so in ``done.json``;
    every later one reads its reports (and sends no notes: the first sent them). A worker stopped half way
    leaves no ``done.json``, and the next one runs them again."""
    import fcntl
    import json

    from harness.run.files import read_reports

    shared.mkdir(exist_ok=True)
    with open(shared / "lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, or the process ends
        done = shared / "done.json"
        if done.is_file():
            failed = json.loads(done.read_text(encoding="utf-8"))["failed"]
            return (failed if failed is not None else read_reports(shared / "cases")), []
        shutil.rmtree(shared / "cases", ignore_errors=True)  # what a worker stopped half way left
        found, notes = run(shared / "cases")
        done.write_text(json.dumps({"failed": found if isinstance(found, str) else None}), encoding="utf-8")
        return found, notes


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    """pytest-xdist's controller, as each worker ends: keep the notes of the worker that ran the cases, and the
    shared folder's name, to remove it when the session ends."""
    config: pytest.Config = node.config
    notes = getattr(node, "workeroutput", {}).get(_WORKER_NOTES)
    if notes:
        config.stash[_NOTES] = notes
    uid = getattr(node, "workerinput", {}).get("testrunuid")
    if uid and config.stash.get(_CASES, None) is not None:
        config.stash[_SHARED] = _shared_folder(uid)


def pytest_sessionfinish(session: pytest.Session) -> None:
    shared = session.config.stash.get(_SHARED, None)
    if shared is not None and not hasattr(session.config, "workerinput"):
        shutil.rmtree(shared, ignore_errors=True)


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """Say, as ``harness check`` does, which declared faults and operator events fired in no case run: the
    scenario tested nothing of them, whatever the items say."""
    notes = config.stash.get(_NOTES, None)
    if notes:
        terminalreporter.section("recovery harness: coverage")
        for note in notes:
            terminalreporter.write_line(note)
