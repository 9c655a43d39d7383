"""Gating a policy: `harness check`, its JUnit failures and repro files, the pytest plugin, and assert_recovers."""

from __future__ import annotations

import errno
import shlex
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_junit import structure_problems

from harness.cli import main
from harness.errors import InputError
from harness.gate import PolicyDoesNotRecover, assert_recovers
from harness.gate.repro import repro_yaml
from harness.run import load_grid, run_case
from harness.run.replay import replay
from harness.scenario import list_scenarios, load_scenario, scenario_cases

ROOT = Path(__file__).resolve().parent.parent
#: Three cases retry_new_key fails (incorrect, incorrect after a crash point, abandoned) and one it passes.
UNSAFE_SCENARIOS = (
    "lost_response",
    "connector_crash_points@after_effect",
    "uncertain_lookup",
    "cancel_before_dispatch",
)


def check(*args: str) -> int:
    return main(["check", *args])


def failures(junit: Path) -> list[tuple[str, ET.Element]]:
    """(testcase name, its failure or error element) for every test case that did not pass."""
    out = []
    for case in ET.parse(junit).getroot().iter("testcase"):
        failure = case.find("failure")
        failure = failure if failure is not None else case.find("error")
        if failure is not None:
            out.append((case.get("name", ""), failure))
    return out


def reproduce_line(text: str) -> str:
    return next(line.removeprefix("reproduce: ") for line in text.splitlines() if line.startswith("reproduce: "))


def test_check_fails_an_unsafe_policy_with_a_failure_per_case_and_each_reproduces(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """retry_new_key exits 1; every failing case is one JUnit failure naming the property, with the witnessing
    entries and a reproduce command; running one reproduces the incorrect outcome."""
    junit, out = tmp_path / "j.xml", tmp_path / "out"
    scenarios = [a for s in UNSAFE_SCENARIOS for a in ("--scenario", s)]
    assert (
        check("--policy", "retry_new_key", *scenarios, "--seed-count", "2", "--junit", str(junit), "--out", str(out))
        == 1
    )
    stdout = capsys.readouterr().out
    root = ET.parse(junit).getroot()
    assert structure_problems(root) == []
    names = [c.get("name") for c in root.iter("testcase")]
    assert len(names) == 8 and {c.get("classname") for c in root.iter("testcase")} == {"retry_new_key"}
    failed = dict(failures(junit))
    assert sorted(failed) == sorted(n for n in names if n and not n.startswith("cancel_before_dispatch"))
    lost = failed["lost_response seed 1"]
    assert lost.tag == "failure" and lost.get("message") == "incorrect: duplicate_effects violated"
    assert "anomaly duplicate_effect: a73 took effect 2 times" in (lost.text or "")
    assert "*    9" in (lost.text or "") and "!   10" in (lost.text or "")  # a witness, the injected fault
    assert failed["uncertain_lookup seed 2"].get("message") == "abandoned: abandoned_actions violated"
    for name, failure in failed.items():
        command = reproduce_line(failure.text or "")
        repro = Path(shlex.split(command)[-1])
        assert command.startswith("python -m harness replay ") and repro.is_file(), name
        assert f"FAIL retry_new_key x {name}: {failure.get('message')}; reproduce: {command}" in stdout
    command = shlex.split(reproduce_line(failed["connector_crash_points-after_effect seed 2"].text or ""))
    proc = subprocess.run([sys.executable, *command[1:]], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "seed 2: incorrect (verdict false)" in proc.stdout and "replayed: the same as recorded" in proc.stdout
    assert "2 of 8 cases correct or escalated; not: incorrect 4, abandoned 2" in stdout


def test_check_passes_the_safe_policy_on_every_shipped_scenario(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """reconcile_and_reauthorize exits 0 over every shipped scenario x 3 seeds, with no failure in the JUnit."""
    junit = tmp_path / "j.xml"
    assert check("--policy", "reconcile_and_reauthorize", "--junit", str(junit)) == 0
    stdout = capsys.readouterr().out
    root = ET.parse(junit).getroot()
    cases = sum(len(scenario_cases(s)) for s in list_scenarios()) * 3
    assert root.get("tests") == str(cases) and failures(junit) == [] and structure_problems(root) == []
    assert "FAIL" not in stdout and "check: passed" in stdout
    assert "repro files in" not in stdout  # nothing kept: its temporary folder is gone


def test_an_unresolved_case_fails_the_gate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A case the evidence cannot decide is not shown safe: unresolved fails, naming the undecided properties."""
    text = (ROOT / "scenarios" / "lost_response.yaml").read_text().replace("name: lost_response", "name: unseen")
    scenario = tmp_path / "unseen.yaml"
    scenario.write_text(text + "destination: {ledger_visible: false}\n")
    junit = tmp_path / "j.xml"
    assert (
        check("--policy", "retry_same_key", "--scenario", str(scenario), "--seed-count", "1", "--junit", str(junit))
        == 1
    )
    ((name, failure),) = failures(junit)
    assert name == "unseen seed 1" and failure.get("type") == "unresolved"
    # false_records is decided: the retry's reply, "applied" under the receipt recorded, stands in for the ledger.
    assert failure.get("message") == "unresolved: duplicate_effects undecided by the evidence"
    assert "undecided duplicate_effects: the destination's ledger is unavailable" in (failure.text or "")
    assert replay(Path(shlex.split(reproduce_line(failure.text or ""))[-1])).same
    capsys.readouterr()


def _warned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], source: str, seeds: str
) -> list[str]:
    """Gate the policy ``source`` defines (attribute ``POLICY`` of a module named for the test, as one imported
    stays imported) on lost_response at seeds 1..``seeds``; the lines printed under the FAIL line of the last seed
    (replayed last: after every other case the policy saw)."""
    module = f"policy_{tmp_path.name}"
    (tmp_path / f"{module}.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert check("--policy", f"{module}:POLICY", "--scenario", "lost_response", "--seed-count", seeds) == 1
    lines = capsys.readouterr().out.splitlines()
    at = next(i for i, line in enumerate(lines) if f" x lost_response seed {seeds}: abandoned" in line)
    assert lines[at].startswith("FAIL ") and lines[at + 1].startswith(
        "  warning: its repro file does not replay to this case: "
    ), lines
    return lines[at + 1 :]


def test_a_repro_file_that_does_not_replay_is_said_under_its_fail_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A policy that does not decide the same way twice: its FAIL line's replay command then gives another
    outcome, and only the JUnit text said so, blaming the simulation. The console says it under the line, and
    names the policy's decisions as the cause."""
    source = (
        "from harness.policy import Escalate, Stop\n"
        "class Flipping:\n"
        "    name, revision, calls = 'flipping', '1', 0\n"
        "    def decide(self, situation):\n"
        "        type(self).calls += 1\n"
        "        return Stop() if type(self).calls % 2 else Escalate(reason='unsure')\n"
        "POLICY = Flipping()\n"
    )
    warned = "\n".join(_warned(tmp_path, monkeypatch, capsys, source, "1"))
    assert "the policy did not decide the same way twice" in warned


def test_a_policy_that_counts_across_cases_is_named_as_the_cause_when_its_repro_differs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A policy that counts its calls in a global and turns reckless after a few decides the same way twice in
    a replay (it is past the count by then), yet not as recorded: the warning named only the differences."""
    source = (
        "from harness.policy import RetryNewKey, Stop\n"
        "CALLS = 0\n"
        "class Counting:\n"
        "    name, revision = 'counting', '1'\n"
        "    def decide(self, situation):\n"
        "        global CALLS\n"
        "        CALLS += 1\n"
        "        return RetryNewKey() if CALLS > 2 and not situation.attempts[-1].receipt else Stop()\n"
        "POLICY = Counting()\n"
    )
    warned = "\n".join(_warned(tmp_path, monkeypatch, capsys, source, "2"))
    assert "outcome: recorded abandoned, now incorrect" in warned
    assert "the policy's revision is the one recorded, yet it decided otherwise" in warned
    assert "did not decide the same way twice" not in warned


def test_explored_findings_fail_the_gate_with_their_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """With --explore each finding is a failure whose repro file is the finding; the safe policy has none."""
    junit = tmp_path / "j.xml"
    args = ["--scenario", "lost_response", "--seed-count", "1", "--explore", "--quiet", "--junit", str(junit)]
    assert check("--policy", "retry_new_key", *args, "--out", str(tmp_path / "bad")) == 1
    explored = [(n, f) for n, f in failures(junit) if n.startswith("explored ")]
    findings = sorted((tmp_path / "bad" / "explore" / "findings" / "retry_new_key").glob("*.yaml"))
    assert findings and len(explored) == len(findings)
    name, failure = explored[0]
    assert name == "explored lost_response-1 seed 1" and "violated" in (failure.get("message") or "")
    assert reproduce_line(failure.text or "") == f"python -m harness replay {findings[0]}"
    root = ET.parse(junit).getroot()
    assert [s.get("name") for s in root.iter("testsuite")] == ["retry_new_key", "retry_new_key explored"]
    assert check("--policy", "reconcile_and_reauthorize", *args[:-1], str(tmp_path / "good.xml")) == 0
    good = ET.parse(tmp_path / "good.xml").getroot()
    assert [c.get("name") for c in good.iter("testcase")][-1] == "explored lost_response seed 1"
    assert failures(tmp_path / "good.xml") == []
    # A scenario given as a file: both suites name it by its name (the explored one used the path as given).
    mine = tmp_path / "files" / "lost_response.yaml"
    mine.parent.mkdir()
    mine.write_text((Path(__file__).resolve().parent.parent / "scenarios" / "lost_response.yaml").read_text())
    given = ["--scenario", str(mine), *args[2:-1], str(tmp_path / "file.xml")]
    assert check("--policy", "reconcile_and_reauthorize", *given, "--out", str(tmp_path / "file")) == 0
    names = [c.get("name") for c in ET.parse(tmp_path / "file.xml").getroot().iter("testcase")]
    assert names == ["lost_response seed 1", "explored lost_response seed 1"]
    capsys.readouterr()


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--policy", "nosuch"], "unknown policy 'nosuch'; fix:"),
        (["--policy", "retry_new_key", "--scenario", "nosuch"], "unknown scenario 'nosuch'; fix:"),
        (["--policy", "retry_new_key", "--policy", "retry_same_key"], "check gates one policy; fix:"),
        (["--policy", "retry_new_key", "--junit", "."], "--junit .: is a folder; fix:"),
        (["--scenario", "lost_response"], "the following arguments are required: --policy; fix:"),
        (["--policy", "retry_new_key", "--seed-count", "0"], "count 0 is outside 1..10000; fix:"),
    ],
)
def test_bad_usage_exits_2_with_one_line_and_writes_nothing(tmp_path: Path, args: list[str], says: str) -> None:
    """Bad input exits 2 with one line naming the field and the fix, before anything is written."""
    proc = subprocess.run(
        [sys.executable, "-m", "harness", "check", *args, "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert proc.returncode == 2 and proc.stdout == ""
    assert len(proc.stderr.splitlines()) == 1 and says in proc.stderr, proc.stderr
    assert not (tmp_path / "out").exists()


def test_every_scenario_round_trips_through_its_repro_file(tmp_path: Path) -> None:
    """A repro file holds the case's scenario exactly (every shipped one, every crash-point variant), so replay
    runs the very case that failed; only the description, `reproduces` and the secret token differ."""
    grid = load_grid(["retry_new_key"], list_scenarios(), [1])
    for case in grid.cases:
        report, _ = run_case(case)
        path = tmp_path / f"{case.scenario.name}.yaml"
        path.write_text(repro_yaml(case.scenario, report, "retry_new_key"))
        loaded = load_scenario(path)
        drop = {"description", "reproduces", "approval"}
        assert loaded.model_dump(exclude=drop) == case.scenario.model_dump(exclude=drop), case.scenario.name
        assert loaded.approval.model_dump(exclude={"token"}) == case.scenario.approval.model_dump(exclude={"token"})
        assert "token" not in path.read_text() and loaded.reproduces is not None
        assert (loaded.reproduces.outcome, loaded.reproduces.seed) == (report.outcome, 1)


def test_assert_recovers_raises_for_a_bad_policy_and_returns_for_a_good_one(tmp_path: Path) -> None:
    """assert_recovers raises an AssertionError listing each failing case with its repro file; a safe policy
    passes and gets each case's verdict back; a policy object works when it is a module attribute."""
    from harness.policy import RetryNewKey
    from policies._retrying import BlindRetry
    from policies.retry_new_key import POLICY as RETRY_NEW_KEY

    with pytest.raises(PolicyDoesNotRecover) as raised:
        assert_recovers(
            RETRY_NEW_KEY, scenarios=["lost_response", "cancel_before_dispatch"], seeds=[1, 2], out=tmp_path
        )
    assert isinstance(raised.value, AssertionError)
    assert str(raised.value).startswith("retry_new_key does not recover in 2 of 4 cases\n\nincorrect: duplicate")
    assert [f.name for f in raised.value.failures] == ["lost_response seed 1", "lost_response seed 2"]
    first = raised.value.failures[0]
    assert first.repro == tmp_path / "retry_new_key" / "seed-1" / "lost_response.yaml" and first.repro.is_file()
    recorded = yaml.safe_load(first.repro.read_text())["reproduces"]
    assert recorded["policy"] == "retry_new_key" and recorded["properties"] == ["duplicate_effects"]
    verdicts = assert_recovers("reconcile_and_reauthorize", scenarios="uncertain_lookup", seeds=[1, 2, 3])
    assert [v.outcome for v in verdicts] == ["escalated"] * 3 and all(v.passed for v in verdicts)
    with pytest.raises(InputError, match="not a module-level attribute of any module"):
        assert_recovers(BlindRetry("orphan", "1", RetryNewKey()), scenarios=["lost_response"], seeds=[1])


def test_assert_recovers_given_a_class_names_the_module_that_defines_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A policy's class passed for the policy is refused naming the module it is written in, not the first module
    (in sorted order) that imported it."""
    (tmp_path / "zz_home.py").write_text(
        "from harness.policy import Stop\n\nclass Cls:\n    name, revision = 'cls', '1'\n\n"
        "    def decide(self, situation):\n        return Stop()\n"
    )
    (tmp_path / "aa_alias.py").write_text("from zz_home import Cls\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import aa_alias  # noqa: F401
    import zz_home

    with pytest.raises(InputError, match=r"^policy 'zz_home:Cls': is the class Cls, not a policy object; fix: "):
        assert_recovers(zz_home.Cls, scenarios=["lost_response"], seeds=[1], out=tmp_path / "out")


def test_a_repro_file_of_a_policy_defined_in_a_test_file_replays_from_any_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A policy object defined in a test file is importable only because pytest put the test's folder on the
    import path: its repro file's ``python -m harness replay`` failed from the project's folder and from any
    other ("cannot import 'test_mine'"). The file now names that folder, and replay puts it on the path."""
    tests = tmp_path / "user project" / "tests"
    tests.mkdir(parents=True)
    (tests / "test_mine_blind.py").write_text(
        "from policies.retry_new_key import POLICY as _RETRY\n\n"
        "class Blind:\n    name, revision = 'blind_in_test', '1'\n\n"
        "    def decide(self, situation):\n        return _RETRY.decide(situation)\n\n"
        "BLIND = Blind()\n"
    )
    monkeypatch.syspath_prepend(str(tests))  # as pytest does for a test file's folder
    monkeypatch.setitem(sys.modules, "test_mine_blind", None)  # undone after the test: the module is let go
    del sys.modules["test_mine_blind"]
    import test_mine_blind

    with pytest.raises(PolicyDoesNotRecover) as failed:
        assert_recovers(test_mine_blind.BLIND, scenarios=["lost_response"], seeds=[1], out=tmp_path / "repro")
    (case,) = failed.value.failures
    assert case.repro is not None and case.differences == ()
    assert yaml.safe_load(case.repro.read_text())["reproduces"]["policy_path"] == str(tests)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    again = subprocess.run(
        shlex.split(case.reproduce.replace("python", shlex.quote(sys.executable), 1)),
        cwd=elsewhere,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert again.returncode == 0, again.stderr
    assert "the same as recorded" in again.stdout + again.stderr


def test_a_users_policy_is_found_from_the_folder_above_its_top_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.policy import import_root

    (tmp_path / "pkg_root" / "mypkg" / "sub").mkdir(parents=True)
    for init in ("mypkg", "mypkg/sub"):
        (tmp_path / "pkg_root" / init / "__init__.py").write_text("")
    (tmp_path / "pkg_root" / "mypkg" / "sub" / "pol.py").write_text("P = 1\n")
    (tmp_path / "flat").mkdir()
    (tmp_path / "flat" / "flat_pol.py").write_text("P = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path / "pkg_root"))
    monkeypatch.syspath_prepend(str(tmp_path / "flat"))
    try:
        import flat_pol  # noqa: F401
        import mypkg.sub.pol  # noqa: F401

        assert import_root("mypkg.sub.pol:P") == tmp_path / "pkg_root"
        assert import_root("flat_pol:P") == tmp_path / "flat"
        assert import_root("retry_new_key") is None  # shipped: found as the harness is
        assert import_root("not_loaded_anywhere:P") is None
        assert import_root("sys:path") is None  # built in: no folder
    finally:  # a later session in this process (mutmut's) imports them afresh from its own folders
        for name in ("flat_pol", "mypkg.sub.pol", "mypkg.sub", "mypkg"):
            sys.modules.pop(name, None)


def test_assert_recovers_takes_out_as_text_and_names_a_scenario_file_by_its_whole_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`out` given as text made a TypeError the first time a case failed, hiding the failure; a file for `out`
    made a bare NotADirectoryError; a scenario given by a relative path gave commands that ran only from where
    the suite ran. Text is a folder's path, a file or a non-path is refused in one line before anything runs,
    and the commands name the scenario file by its whole path."""
    scenario = tmp_path / "scen" / "mine.yaml"
    scenario.parent.mkdir()
    scenario.write_text(
        (ROOT / "scenarios" / "lost_response.yaml").read_text().replace("name: lost_response", "name: mine")
    )
    monkeypatch.chdir(tmp_path)
    with pytest.raises(PolicyDoesNotRecover) as raised:
        assert_recovers("retry_new_key", scenarios=["scen/mine.yaml"], seeds=[1], out=str(tmp_path / "o"))
    (failure,) = raised.value.failures
    assert failure.repro is not None and failure.repro.is_relative_to(tmp_path / "o") and failure.repro.is_file()
    assert f"--scenario {scenario} --seed 1" in failure.text
    (tmp_path / "afile").write_text("")
    for out, says in ((tmp_path / "afile", "is a file; fix: give a folder"), (7, "7 is not a folder's path")):
        with pytest.raises(InputError, match=f"assert_recovers: argument 'out': .*{says}"):
            assert_recovers("retry_new_key", scenarios=["lost_response"], seeds=[1], out=out)  # type: ignore[arg-type]


def pytest_in(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``python -m pytest ARGS`` in ``folder`` (a folder with no test file): the plugin comes from its entry point.
    ``folder`` is the rootdir: a stray setup.py or tox.ini above it (in /tmp, say) would move the rootdir there and
    the node IDs with it."""
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--rootdir", str(folder), *args],
        capture_output=True,
        text=True,
        cwd=folder,
        timeout=300,
    )


def test_pytest_plugin_fails_an_unsafe_policy_with_the_junit_text_and_passes_a_safe_one(tmp_path: Path) -> None:
    """In a folder without tests, --harness-policy collects scenario x seed items: retry_new_key fails with the
    very text of its JUnit failure, reconcile_and_reauthorize passes, and without the option nothing is collected."""
    empty = tmp_path / "empty"
    empty.mkdir()
    subset = ["--harness-scenario", "lost_response", "--harness-scenario", "cancel_before_dispatch"]
    proc = pytest_in(empty, "-q", "--harness-policy", "retry_new_key", *subset, "--harness-out", str(tmp_path / "r"))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "3 failed, 3 passed" in proc.stdout
    assert "FAILED retry_new_key::lost_response[seed-1]" in proc.stdout
    # The same case through harness check writes the same repro file, so the whole text must match.
    junit = tmp_path / "j.xml"
    check(
        "--policy",
        "retry_new_key",
        "--scenario",
        "lost_response",
        "--seed-count",
        "1",
        "--junit",
        str(junit),
        "--out",
        str(tmp_path / "c"),
    )
    ((_, failure),) = failures(junit)
    text = f"{failure.get('message')}\n{failure.text}".replace(str(tmp_path / "c" / "repro"), str(tmp_path / "r"))
    assert text in proc.stdout
    good = pytest_in(empty, "-q", "--harness-policy", "reconcile_and_reauthorize", *subset, "--harness-seed-count", "2")
    assert good.returncode == 0 and "4 passed" in good.stdout, good.stdout + good.stderr
    none = pytest_in(empty, "-q")
    assert none.returncode == 5 and "no tests ran" in none.stdout
    bad = pytest_in(empty, "-q", "--harness-policy", "nosuch")
    assert bad.returncode == 4 and "ERROR: harness: unknown policy 'nosuch'; fix:" in bad.stderr


def test_under_xdist_the_cases_run_once_and_their_coverage_notes_are_printed(tmp_path: Path) -> None:
    """A CI integrator's review: with ``-n 2`` every worker ran every case (a policy that logs its decisions
    logged twice as many), and the coverage section was gone. The first worker runs them, the other reads its
    reports; the controller prints the notes; the shared folder is gone at the end; the items fail and pass as
    without xdist."""
    (tmp_path / "logpol.py").write_text(
        "import os\nfrom policies.retry_same_key import POLICY as SAME\n\n\nclass P:\n"
        "    name, revision = 'logpol', '1'\n\n    def decide(self, situation):\n"
        f"        with open({str(tmp_path / 'decided.log')!r}, 'a') as log:\n"
        "            log.write(f'{os.getpid()}\\n')\n        return SAME.decide(situation)\n\n\nPOLICY = P()\n"
    )
    uid = "feedc0de" * 4
    args = ["-q", "--harness-policy", "logpol:POLICY", "--harness-scenario", "lost_response", "--harness-scenario",
            "uncertain_lookup"]  # fmt: skip
    counts, outputs = [], []
    for extra in ([], ["-n", "2", "--testrunuid", uid]):
        (tmp_path / "decided.log").unlink(missing_ok=True)
        proc = pytest_in(tmp_path, *args, *extra)
        assert proc.returncode == 1 and "3 failed, 3 passed" in proc.stdout, proc.stdout + proc.stderr
        counts.append(len((tmp_path / "decided.log").read_text().splitlines()))
        outputs.append(proc.stdout)
    assert counts[0] == counts[1] > 0
    for out in outputs:
        assert "recovery harness: coverage" in out and "note: scenario uncertain_lookup declares fault" in out, out
    assert not (Path(tempfile.gettempdir()) / f"harness-pytest-xdist-{uid}").exists()


def test_the_plugin_refuses_an_empty_out_and_names_a_scenario_file_by_its_whole_path(tmp_path: Path) -> None:
    """`--harness-out ""` (an unset variable in a CI script) quietly put the repro files in a temporary folder,
    where the CI's upload of them found nothing; a scenario given by a relative path gave a command that ran only
    from the suite's folder."""
    (tmp_path / "scen").mkdir()
    (tmp_path / "scen" / "mine.yaml").write_text(
        (ROOT / "scenarios" / "lost_response.yaml").read_text().replace("name: lost_response", "name: mine")
    )
    empty = pytest_in(tmp_path, "-q", "--harness-policy", "retry_new_key", "--harness-out", "")
    assert empty.returncode == 4 and "ERROR: harness: --harness-out: an empty path; fix:" in empty.stderr
    proc = pytest_in(tmp_path, "-q", "--harness-policy", "retry_new_key", "--harness-scenario", "scen/mine.yaml",
                     "--harness-seed-count", "1")  # fmt: skip
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"--scenario {tmp_path / 'scen' / 'mine.yaml'} --seed 1" in proc.stdout


def test_the_plugin_says_when_a_path_option_moved_pytests_rootdir(tmp_path: Path) -> None:
    """pytest chooses its rootdir and ini file before it knows the plugin's options, so in the space form a
    scenario file outside the project was taken for a test path: the rootdir moved above the project and its
    pytest.ini went unread, unsaid. The plugin now says so and names the ``=`` form, which keeps them."""
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    project.mkdir()
    elsewhere.mkdir()
    (project / "pytest.ini").write_text("[pytest]\n")
    scenario = elsewhere / "mine.yaml"
    scenario.write_text(
        (ROOT / "scenarios" / "lost_response.yaml").read_text().replace("name: lost_response", "name: mine")
    )

    def run(*scenario_args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--harness-policy"]
        command += ["reconcile_and_reauthorize", *scenario_args, "--harness-seed-count", "1"]
        return subprocess.run(command, capture_output=True, text=True, cwd=project, timeout=300)

    spaced = run("--harness-scenario", "../elsewhere/mine.yaml")
    assert spaced.returncode == 0, spaced.stdout + spaced.stderr
    assert f"rootdir: {tmp_path}\n" in spaced.stdout
    said = " ".join(spaced.stdout.split())
    assert "PytestConfigWarning: harness: pytest took ../elsewhere/mine.yaml for a test path" in said
    assert f"ini file (none, not {project / 'pytest.ini'})" in said
    assert "fix: give --harness-scenario=../elsewhere/mine.yaml" in said
    joined = run("--harness-scenario=../elsewhere/mine.yaml")
    assert joined.returncode == 0 and f"rootdir: {project}\n" in joined.stdout, joined.stdout
    assert "PytestConfigWarning" not in joined.stdout
    # A scenario file inside the project leaves the choice as it was: nothing is said.
    (project / "mine.yaml").write_text(scenario.read_text())
    inside = run("--harness-scenario", "mine.yaml")
    assert inside.returncode == 0 and f"rootdir: {project}\n" in inside.stdout, inside.stdout
    assert "PytestConfigWarning" not in inside.stdout


def test_the_rootdir_note_says_nothing_when_this_pytest_cannot_choose_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rootdir is chosen again with pytest's own function, which is private: a pytest whose function takes
    other arguments (or has none) leaves the note unsaid rather than failing the run. With the function as this
    pytest has it, the same configuration is said to have moved, so the test sees both branches."""
    import types

    import _pytest.config.findpaths as findpaths

    from harness.gate.pytest_plugin import _rootdir_moved

    scenario = tmp_path / "mine.yaml"
    scenario.write_text("name: mine\n")
    config = types.SimpleNamespace(
        invocation_params=types.SimpleNamespace(args=("--harness-scenario", str(scenario)), dir=tmp_path),
        option=types.SimpleNamespace(inifilename=None, override_ini=None, file_or_dir=[], rootdir=None),
        rootpath=Path("/"),
        inipath=None,
    )
    moved = _rootdir_moved(config)  # type: ignore[arg-type]
    assert moved is not None and f"pytest took {scenario} for a test path" in moved

    def other_signature(**_: object) -> None:
        raise TypeError("determine_setup() got an unexpected keyword argument 'invocation_dir'")

    monkeypatch.setattr(findpaths, "determine_setup", other_signature)
    assert _rootdir_moved(config) is None  # type: ignore[arg-type]


def test_the_plugin_loads_nothing_of_the_harness_until_asked() -> None:
    """pytest loads the plugin in every run: importing it loads no harness layer (the suite is not slowed)."""
    code = "import sys, harness.gate.pytest_plugin\nprint(' '.join(sorted(m for m in sys.modules if m.startswith('harness'))))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert out.split() == ["harness", "harness.gate", "harness.gate.pytest_plugin", "harness.version"]


def test_run_junit_has_a_failure_per_failing_case_and_keeps_its_exit_status(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`harness run --junit` writes one suite per policy in grid order and a repro file per failing case; an
    incorrect policy is still a finding there, not an error (exit 0)."""
    junit, out = tmp_path / "j.xml", tmp_path / "run"
    args = ["--policy", "retry_same_key", "--policy", "reconcile_and_reauthorize", "--scenario", "changed_task"]
    args += ["--scenario", "uncertain_lookup", "--seed-count", "1", "--tracking", "none", "--no-report", "--quiet"]
    assert main(["run", *args, "--out", str(out), "--junit", str(junit)]) == 0
    root = ET.parse(junit).getroot()
    assert structure_problems(root) == []
    assert [s.get("name") for s in root.iter("testsuite")] == ["retry_same_key", "reconcile_and_reauthorize"]
    found = {n: f.get("message") for n, f in failures(junit)}
    assert found == {
        "changed_task seed 1": "incorrect: unauthorized_dispatches violated",
        "uncertain_lookup seed 1": "abandoned: abandoned_actions violated",
    }
    assert (out / "repro" / "retry_same_key" / "seed-1" / "changed_task.yaml").is_file()
    assert f"junit: {junit}" in capsys.readouterr().out
    # A complete run resumed with --junit writes its JUnit as it stands (it said "nothing to resume" and wrote none).
    again = tmp_path / "again.xml"
    assert main(["run", "--resume", str(out), "--junit", str(again)]) == 0
    assert capsys.readouterr().out == f"nothing to resume: the run in {out} is complete\njunit: {again}\n"
    assert {n: f.get("message") for n, f in failures(again)} == found
    assert [s.get("name") for s in ET.parse(again).getroot().iter("testsuite")] == [
        "retry_same_key",
        "reconcile_and_reauthorize",
    ]


def test_the_pytest_plugin_says_which_declared_faults_and_events_fired_in_no_case(tmp_path: Path) -> None:
    """As `harness check` notes them: a fault no case reaches, an operator event whose trigger never comes. The
    plugin passed such a scenario's items without a word (the scenario tested nothing of them)."""
    root = Path(__file__).resolve().parent.parent
    doc = yaml.safe_load((root / "scenarios" / "lost_response.yaml").read_text())
    doc["name"] = "quiet"
    doc["faults"] = [*doc["faults"], {"boundary": "lookup_unavailable", "nth": 9}]
    doc["operator"] = [{"do": "expire_approval", "when": {"after": {"actor": "worker", "event": "crashed"}}}]
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "quiet.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    args = ["--harness-policy", "reconcile_and_reauthorize", "--harness-scenario", str(empty / "quiet.yaml")]
    proc = pytest_in(empty, *args, "--harness-seed-count", "1")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    section = proc.stdout.split("recovery harness: coverage", 1)[1]
    notes = [line for line in section.splitlines() if line.startswith("note: ")]
    assert notes == [
        "note: scenario quiet declares fault lookup_unavailable nth=9, which fired in no case of "
        "reconcile_and_reauthorize (its site was reached in 0 cases): that scenario tested nothing of this fault "
        "for this policy",
        "note: scenario quiet declares operator event expire_approval after=worker.crashed nth=1, which fired in "
        "no case of reconcile_and_reauthorize (its trigger came in 0 cases): that scenario tested nothing of this "
        "operator event for this policy",
    ]
    quiet = pytest_in(empty, "--harness-policy", "reconcile_and_reauthorize", "--harness-scenario", "lost_response")
    assert quiet.returncode == 0 and "recovery harness: coverage" not in quiet.stdout


@pytest.mark.parametrize("named", [False, True])
def test_an_interrupted_check_says_to_run_it_again_not_to_resume_it_as_a_run(
    named: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Ctrl-C during check said 'resumable: python -m harness run --resume DIR'; that finished the cases as a
    plain run (exit 4, no FAIL lines, no repro files, no JUnit report) and left the temporary folder behind for
    good. A check is not resumable: it says to run it again, and its temporary folder goes."""
    import tempfile

    import harness.gate.runner as runner
    from harness.run.grid import RunInterrupted

    real = runner.run_grid

    def stopped(plan: object, options: object, progress: object = None) -> object:
        summary = real(plan, options)  # type: ignore[arg-type]
        raise RunInterrupted(summary.out)  # as the grid raises it on Ctrl-C, with cases on disk

    monkeypatch.setattr(runner, "run_grid", stopped)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    out = tmp_path / "gate"
    named_out = ["--out", str(out)] if named else []
    junit = tmp_path / "check.xml"
    args = ["--policy", "retry_new_key", "--scenario", "lost_response", "--seed-count", "1", "--junit", str(junit)]
    assert check(*args, *named_out) == 130
    err = capsys.readouterr().err.strip()
    assert "resume" not in err and len(err.splitlines()) == 1 and "a check is not resumable" in err
    assert not junit.exists()
    if named:
        assert err.endswith(
            f"a check is not resumable: run the same command again with a new --out ({out} holds what it wrote)"
        )
        assert len(list(out.rglob("recovery.json"))) == 1
        # The same command again (a CI job's retry), or the resume a run's folder would take: both refused, and
        # neither says to resume (done as a run, it exited 0 over incorrect cases, with no JUnit or repro files).
        (out / ".parts").mkdir(exist_ok=True)  # as a check stopped before its end leaves it
        refused = (
            f"harness: --out {out}: holds the cases of a check that was stopped before its end, and a check is not "
            "resumable; fix: run the check again with a new or empty --out"
        )
        assert check(*args, *named_out) == 2
        assert capsys.readouterr().err.strip() == refused
        from harness.cli import main

        assert main(["run", "--resume", str(out)]) == 2
        assert capsys.readouterr().err.strip() == refused
        (out / ".parts").rmdir()
        assert check(*args, *named_out) == 2
        assert capsys.readouterr().err.strip() == refused.replace(" that was stopped before its end", "")
    else:
        assert err == "harness: interrupted; a check is not resumable: run the same command again"
        assert list((tmp_path / "tmp").iterdir()) == []


def test_a_check_that_cannot_write_its_files_says_to_run_it_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A full disk under check said "cannot write the run's files (No space left on device): " (a dangling colon,
    no folder, no fix); said as a run's, it would point at `run --resume`, which a check is not. One line, exit
    1, and the temporary folder is gone."""
    import tempfile

    import harness.gate.runner as runner
    from harness.run.grid import RunNotWritten

    def full(plan: object, options: Any, progress: object = None) -> object:
        (options.out / "cases").mkdir(parents=True)
        raise RunNotWritten(options.out, "No space left on device")

    monkeypatch.setattr(runner, "run_grid", full)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    assert check("--policy", "retry_new_key", "--scenario", "lost_response", "--seed-count", "1") == 1
    err = capsys.readouterr().err.strip()
    (folder,) = [line.split(" in ", 1)[1].split(" (")[0] for line in err.splitlines()]
    assert err == (
        f"harness: cannot write the check's files in {folder} (No space left on device); fix: make room or give a "
        "writable folder, then run the same command again"
    )
    assert folder.startswith(str(tmp_path)) and list(tmp_path.iterdir()) == []
    # A folder given with --out keeps what was written: the same --out would be refused as not empty.
    named = tmp_path / "named"
    assert (
        check("--policy", "retry_new_key", "--scenario", "lost_response", "--seed-count", "1", "--out", str(named)) == 1
    )
    assert (
        capsys.readouterr()
        .err.strip()
        .endswith(f"then run the same command again with a new --out ({named} holds what it wrote)")
    )
    assert (named / "cases").is_dir()


@pytest.mark.parametrize("where", ["harness.explore", "harness.gate.repro"])
def test_a_check_whose_exploration_or_repro_files_cannot_be_written_says_to_run_it_again(
    where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Its exploration's files said "then explore again", its repro files "run the command again" (refused: the
    same --out is no longer empty), and the temporary folder stayed. Both are the check's files."""
    import importlib
    import tempfile

    def full(path: Path, text: str) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(importlib.import_module(where), "write_atomic", full)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    policy = "retry_new_key" if where == "harness.gate.repro" else "stop_on_timeout"  # a failing case has a repro
    args = ["--policy", policy, "--scenario", "lost_response", "--seed-count", "1", "--explore", "--quiet"]
    assert check(*args) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("harness: cannot write the check's files in ") and err.endswith(
        "(No space left on device); fix: make room or give a writable folder, then run the same command again"
    )
    assert list(tmp_path.iterdir()) == []


def test_a_run_whose_junit_cannot_be_written_prints_its_table_and_how_to_write_it_later(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The run is complete when its JUnit is written: a full disk there was "run the command again" (refused: the
    folder is not empty) before any table. The table comes, then one line with the command that writes it."""
    import harness.gate.junit as junit_module

    real = junit_module.write_atomic
    monkeypatch.setattr(
        junit_module,
        "write_atomic",
        lambda p, t: (_ for _ in ()).throw(OSError(errno.ENOSPC, "No space left on device")),
    )
    junit, out = tmp_path / "j.xml", tmp_path / "run"
    args = ["--policy", "retry_new_key", "--scenario", "lost_response", "--seed-count", "1", "--tracking", "none"]
    assert main(["run", *args, "--no-report", "--out", str(out), "--junit", str(junit)]) == 1
    printed = capsys.readouterr()
    assert "retry_new_key" in printed.out and "junit:" not in printed.out
    assert printed.err.splitlines()[-1] == (
        f"harness: --junit {junit}: cannot write it (No space left on device); fix: make room or give a writable "
        f"path, then write it: python -m harness run --resume {out} --junit {junit}"
    )
    monkeypatch.setattr(junit_module, "write_atomic", real)
    assert main(["run", "--resume", str(out), "--junit", str(junit)]) == 0
    assert [n for n, _ in failures(junit)] == ["lost_response seed 1"]


def test_an_explored_seed_passes_only_where_exploration_saw_no_violation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A seed without a finding of its own passed, though its schedules violated as seed 1's did (one finding
    stands for a shape at every seed): "explored lost_response seed 2" passed for a policy that fails it as
    written. Passing cases are given only for a scenario whose exploration saw no violation; the summary line
    counts findings, not harness errors."""
    junit = tmp_path / "j.xml"
    args = ["--scenario", "lost_response", "--seed-count", "2", "--explore", "--quiet", "--junit", str(junit)]
    assert check("--policy", "retry_new_key", *args, "--out", str(tmp_path / "bad")) == 1
    names = [c.get("name") or "" for c in ET.parse(junit).getroot().iter("testcase")]
    explored = [n for n in names if n.startswith("explored ")]
    assert explored and len(explored) == len(failures(junit)) - 2  # every explored case a finding, as written 2
    findings = list((tmp_path / "bad" / "explore" / "findings").rglob("*.yaml"))
    assert f"schedules explored (each at every seed), {len(findings)} findings;" in capsys.readouterr().out


def test_an_exploration_the_harness_failed_on_passes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A policy slower than --case-timeout: exploration ran no schedule, the JUnit had a passing "explored
    lost_response seed 1" and the line said "0 schedules explored, 1 findings". Nothing passes there now, and
    the line says the harness failed instead."""
    (tmp_path / "slowpol.py").write_text(
        "import time\n"
        "class Slow:\n"
        "    name, revision = 'slow', '1'\n"
        "    def decide(self, situation):\n"
        "        time.sleep(30)\n"
        "POLICY = Slow()\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    junit = tmp_path / "j.xml"
    args = ["--scenario", "lost_response", "--seed-count", "1", "--explore", "--case-timeout", "1", "--quiet"]
    assert check("--policy", "slowpol:POLICY", *args, "--junit", str(junit), "--out", str(tmp_path / "out")) == 1
    cases = {c.get("name"): c for c in ET.parse(junit).getroot().iter("testcase")}
    assert [n for n in cases if n and n.startswith("explored ")] == ["explored schedules: harness errors"]
    out = capsys.readouterr().out
    assert "0 findings (the harness failed on 1 explored schedule)" in out


def test_every_command_check_prints_runs_from_another_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """--out given relative: the reproduce commands (the FAIL lines, the JUnit, explore's findings) named
    relative paths, which fail from any other folder. They are absolute."""
    monkeypatch.chdir(tmp_path)
    args = ["--policy", "retry_new_key", "--scenario", "lost_response", "--seed-count", "1", "--explore", "--quiet"]
    assert check(*args, "--out", "rel", "--junit", "j.xml") == 1
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("FAIL ")]
    commands = [line.partition("; reproduce: ")[2] for line in lines]
    assert commands and all(f" {tmp_path / 'rel'}/" in c for c in commands), commands
    other = tmp_path / "elsewhere"
    other.mkdir()
    for command in commands:
        words = shlex.split(command)
        assert words[:3] == ["python", "-m", "harness"]
        proc = subprocess.run([sys.executable, *words[1:]], cwd=other, capture_output=True, text=True, timeout=300)
        assert proc.returncode in (0, 1) and "replayed: the same as recorded" in proc.stdout, proc.stderr


def test_assert_recovers_names_its_repro_files_by_absolute_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(PolicyDoesNotRecover) as raised:
        assert_recovers("retry_new_key", ["lost_response"], [1], out="rel")
    assert f"python -m harness replay {tmp_path / 'rel'}/" in str(raised.value)


def test_an_explored_variant_of_a_file_scenario_is_named_as_its_case_is(tmp_path: Path) -> None:
    """A file's scenario with variants: the explored suite named a case `explored <file>.yaml@<variant>`, the
    grid's suite `<name>-<variant>`; both name it by its name now."""
    mine = tmp_path / "files" / "my_points.yaml"
    mine.parent.mkdir()
    text = (Path(__file__).resolve().parent.parent / "scenarios" / "connector_crash_points.yaml").read_text()
    mine.write_text(text.replace("name: connector_crash_points", "name: my_points"))
    junit = tmp_path / "j.xml"
    args = ["--policy", "reconcile_and_reauthorize", "--scenario", f"{mine}@after_effect", "--seed-count", "1"]
    assert check(*args, "--explore", "--quiet", "--junit", str(junit), "--out", str(tmp_path / "out")) == 0
    names = [c.get("name") for c in ET.parse(junit).getroot().iter("testcase")]
    assert names == ["my_points-after_effect seed 1", "explored my_points-after_effect seed 1"]
    # The whole file, explored as one template: named by the scenario's own name, not its first variant's.
    args = ["--policy", "reconcile_and_reauthorize", "--scenario", str(mine), "--seed-count", "1", "--explore"]
    assert check(*args, "--quiet", "--junit", str(junit), "--out", str(tmp_path / "whole")) == 0
    names = [c.get("name") for c in ET.parse(junit).getroot().iter("testcase")]
    assert names[-1] == "explored my_points seed 1" and len(names) == 5


def test_the_pytest_plugins_reproduce_commands_name_absolute_paths(tmp_path: Path) -> None:
    """`--harness-out rel`: the failures' reproduce commands named `rel/...`, which fail from another folder."""
    empty = tmp_path / "empty"
    empty.mkdir()
    args = ["--harness-policy", "retry_new_key", "--harness-scenario", "lost_response", "--harness-seed-count", "1"]
    proc = pytest_in(empty, "-q", *args, "--harness-out", "rel")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"python -m harness replay {empty / 'rel'}/" in proc.stdout, proc.stdout[-2000:]


def test_a_junit_file_that_cannot_be_written_is_named_with_a_fix_that_works(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full disk under --junit said "cannot write a file: No space left on device; fix: ... run the command
    again", naming no file, printing no FAIL line, and the same command was then refused (--out not empty)."""
    import harness.gate.junit

    def full(path: Path, suites: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(harness.gate.junit, "write_junit", full)
    junit, out = tmp_path / "j.xml", tmp_path / "out"
    args = ["--policy", "retry_new_key", "--scenario", "lost_response", "--seed-count", "1"]
    assert check(*args, "--junit", str(junit), "--out", str(out)) == 1
    said = capsys.readouterr()
    assert said.err == (
        f"harness: --junit {junit}: cannot write it (No space left on device); fix: make room or give a writable "
        "path, then run with a new --out (this one holds the cases)\n"
    )
    assert "FAIL retry_new_key x lost_response seed 1:" in said.out and "check: failed (no JUnit file)" in said.out


def test_an_exploration_the_harness_failed_on_once_passes_no_seed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One schedule on which the harness itself raised: what it would have shown is unknown, so the scenario's
    explored seeds do not pass (the gate's error case says why)."""
    import harness.explore.search as search
    from harness.explore import ExploreOptions, explore
    from harness.gate.runner import judge_exploration

    real = search._simulate_and_check
    calls: list[int] = []

    def once_broken(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("the harness broke")
        return real(*args, **kwargs)

    monkeypatch.setattr(search, "_simulate_and_check", once_broken)
    options = ExploreOptions(out=tmp_path / "x", depth=1, swarm=0, tracking="none", isolate=False)
    summary = explore(["reconcile_and_reauthorize"], ["lost_response"], options)
    assert summary.errors and not summary.findings
    cases = judge_exploration(summary, (1,))
    assert [(c.name, c.status) for c in cases] == [("explored schedules: harness errors", "error")]


ESCALATE_THEN_RAISE = """
from harness.policy import Escalate, Situation


class EscalateThenRaise:
    name = "escalate_then_raise"
    revision = "1"

    def decide(self, situation: Situation):
        if situation.escalated:
            raise ValueError("boom after escalating")
        return Escalate(reason="unsure")


POLICY = EscalateThenRaise()
"""


def test_a_policy_that_raises_in_a_passing_case_passes_and_is_said_to_have_raised(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A policy that escalates, then raises at its next decision: every case passes on the evidence (escalated in
    time), and `check` said "passed" and nothing more; only summary.csv's error column had the error, in a folder
    removed when every case passes. Now a note says how many passing cases raised, the first one's error and the
    command that runs it again; the exit status stays the evidence's."""
    (tmp_path / "escraise.py").write_text(ESCALATE_THEN_RAISE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    args = ["check", "--policy", "escraise:POLICY", "--scenario", "lost_response", "--scenario", "request_lost"]
    assert main([*args, "--seed-count", "2"]) == 0
    out, err = capsys.readouterr()
    assert "4 of 4 cases correct or escalated" in out and out.rstrip().endswith("check: passed")
    (note,) = [line for line in err.splitlines() if "raised in" in line]
    assert ESCALATE_THEN_RAISE.splitlines()[11 - 1].strip() == 'raise ValueError("boom after escalating")'

    assert note == (
        "note: escalate_then_raise raised in 4 of its passing cases (each passed on the evidence: its actions "
        "accounted for or escalated in time): lost_response seed 1: the policy failed: ValueError: boom after "
        "escalating (at line 11 of escraise, in decide); run it again: python -m harness run --policy escraise:POLICY --scenario lost_response --seed 1"
    )
    # A policy that never raises gets no such note.
    assert main(["check", "--policy", "reconcile_and_reauthorize", "--scenario", "lost_response"]) == 0
    assert "raised in" not in capsys.readouterr().err


def test_the_or_run_it_line_of_a_policy_imported_from_elsewhere_runs_where_the_check_ran(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A CI integrator's review: a policy in a test file (imported by pytest from the suite's folder) failed with
    "or run it: python -m harness run --policy test_inline:POLICY ...", which said "No module named 'test_inline'"
    where the check ran. The line puts the policy's folder on PYTHONPATH when it is not the current folder, and
    runs; a policy imported from the current folder keeps the plain command."""
    suite, here = tmp_path / "suite", tmp_path / "here"
    suite.mkdir()
    here.mkdir()
    (suite / "test_inline.py").write_text(
        "from policies.retry_new_key import POLICY as NEW\n\n\nclass Inline:\n    name, revision = 'inline', '1'\n\n"
        "    def decide(self, situation):\n        return NEW.decide(situation)\n\n\nPOLICY = Inline()\n"
    )
    monkeypatch.syspath_prepend(str(suite))
    monkeypatch.chdir(here)
    monkeypatch.setitem(sys.modules, "test_inline", None)  # gone again after the test, whatever it imports
    del sys.modules["test_inline"]
    with pytest.raises(PolicyDoesNotRecover) as failed:
        assert_recovers("test_inline:POLICY", scenarios=["lost_response"], seeds=[1], out=tmp_path / "r")
    line = next(x for x in str(failed.value).splitlines() if x.startswith("or run it: "))
    assert line.startswith(f"or run it: PYTHONPATH={suite} python -m harness run --policy test_inline:POLICY "), line
    proc = subprocess.run(["bash", "-c", line.removeprefix("or run it: ").replace("python", shlex.quote(sys.executable), 1)],
                          cwd=here, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 0 and "incorrect" in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    monkeypatch.chdir(suite)
    with pytest.raises(PolicyDoesNotRecover) as again:
        assert_recovers("test_inline:POLICY", scenarios=["lost_response"], seeds=[1], out=tmp_path / "r2")
    assert "\nor run it: python -m harness run --policy test_inline:POLICY " in str(again.value)
