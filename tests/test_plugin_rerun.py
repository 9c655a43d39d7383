"""Running again what the pytest plugin's items said failed, as a CI user does with any test: the node ID pytest
printed given back to it, ``--lf`` / ``--ff``, and the JUnit names ``--junitxml`` gives them
(harness/gate/pytest_plugin.py).

Before: ``pytest 'POLICY::SCENARIO[seed-N]' --harness-policy POLICY`` stopped at "file or directory not found";
``--lf`` ran every item again (pytest 9 parsed the cached IDs with the seed as a parameter, and the items' own IDs
without); ``--junitxml`` named a case ``SCENARIO[seed-N]`` where ``harness check --junit`` names it ``SCENARIO seed
N``. Each test runs pytest in a subprocess, in a temporary folder that is its rootdir, with the cache on where it
matters. A narrowed selection must also run fewer cases: the policy here logs each of its decisions, and the
narrowed run must log as many as the same items selected with ``-k`` (which runs only the selected items' cases,
tests/test_plugin_mutants.py), and fewer than all of them.
"""

from __future__ import annotations

import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from harness.cli import main

#: retry_new_key fails lost_response at every seed and passes request_lost; request_lost comes first, so that
#: ``--ff`` putting the failures first is seen.
SCENARIOS = ("--harness-scenario", "request_lost", "--harness-scenario", "lost_response", "--harness-seed-count", "2")
FAILED_IDS = ["logpol::lost_response[seed-1]", "logpol::lost_response[seed-2]"]
EVERY_ID = ["logpol::request_lost[seed-1]", "logpol::request_lost[seed-2]", *FAILED_IDS]


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    """A folder with no test file and a policy, ``logpol:POLICY``, that is retry_new_key logging each decision."""
    (tmp_path / "logpol.py").write_text(
        "from policies.retry_new_key import POLICY as NEW\n\n\nclass P:\n"
        "    name, revision = 'logpol', '1'\n\n    def decide(self, situation):\n"
        f"        with open({str(tmp_path / 'decided.log')!r}, 'a') as log:\n"
        "            log.write('decided\\n')\n        return NEW.decide(situation)\n\n\nPOLICY = P()\n"
    )
    return tmp_path


def run_pytest(folder: Path, *args: str, cache: bool = True) -> subprocess.CompletedProcess[str]:
    """``python -m pytest -rA ARGS`` in ``folder``, its rootdir; the cache (``folder/.pytest_cache``) on unless
    told."""
    quiet = () if cache else ("-p", "no:cacheprovider")
    return subprocess.run(
        [sys.executable, "-m", "pytest", "--rootdir", str(folder), "-p", "no:hypothesispytest", *quiet, "-rA", *args],
        capture_output=True,
        text=True,
        cwd=folder,
        timeout=300,
    )


def gate(folder: Path, *args: str, cache: bool = True) -> tuple[dict[str, str], int, str]:
    """Run the plugin on logpol: each item's outcome by node ID (from the short summary), the count of the
    policy's decisions (every case it ran), and the output."""
    (folder / "decided.log").unlink(missing_ok=True)
    proc = run_pytest(folder, "--harness-policy", "logpol:POLICY", *SCENARIOS, *args, cache=cache)
    output = proc.stdout + proc.stderr
    outcomes = {m[2]: m[1] for m in re.finditer(r"^(PASSED|FAILED|ERROR) (\S+)", proc.stdout, re.MULTILINE)}
    log = folder / "decided.log"
    return outcomes, len(log.read_text().splitlines()) if log.exists() else 0, output


def test_the_node_id_of_a_failing_item_given_back_runs_that_item_and_only_its_case(suite: Path) -> None:
    outcomes, every, output = gate(suite)
    assert outcomes == dict.fromkeys(EVERY_ID[:2], "PASSED") | dict.fromkeys(FAILED_IDS, "FAILED"), output
    printed = re.search(r"^FAILED (logpol::lost_response\[seed-2\])(?: |$)", output, re.MULTILINE)
    assert printed is not None, output

    outcomes, one, output = gate(suite, printed[1])
    assert outcomes == {"logpol::lost_response[seed-2]": "FAILED"}, output
    assert "1 failed in" in output and "deselected" not in output, output
    _, by_k, _ = gate(suite, "-k", "lost_response and seed-2", cache=False)
    assert 0 < one == by_k < every

    # A node ID's prefixes select as pytest's do: every seed of a scenario, every item of a policy.
    outcomes, _, output = gate(suite, "logpol::lost_response")
    assert outcomes == dict.fromkeys(FAILED_IDS, "FAILED"), output
    outcomes, _, output = gate(suite, "logpol")
    assert sorted(outcomes) == sorted(EVERY_ID), output

    # Beside a test path, the folder's own test runs too, and of the plugin's items only the one named.
    (suite / "test_own.py").write_text("def test_own():\n    pass\n")
    outcomes, _, output = gate(suite, "test_own.py", "logpol::lost_response[seed-1]")
    assert outcomes == {"test_own.py::test_own": "PASSED", "logpol::lost_response[seed-1]": "FAILED"}, output


def test_a_node_id_that_names_no_item_is_refused_in_one_line(suite: Path) -> None:
    outcomes, decided, output = gate(suite, "logpol::lost_response[seed-9]")
    assert outcomes == {} and decided == 0, output
    assert (
        "ERROR: harness: logpol::lost_response[seed-9] names no item of --harness-policy logpol:POLICY" in output
        and "fix: give the --harness-scenario and --harness-seed-count of the run that printed it" in output
    ), output


def test_last_failed_runs_again_only_the_items_that_failed_and_only_their_cases(suite: Path) -> None:
    outcomes, every, output = gate(suite)
    assert sorted(k for k, v in outcomes.items() if v == "FAILED") == FAILED_IDS, output

    outcomes, again, output = gate(suite, "--lf")
    assert outcomes == dict.fromkeys(FAILED_IDS, "FAILED"), output
    assert "rerun previous 2 failures" in output and "2 failed, 2 deselected" in output, output
    _, by_k, _ = gate(suite, "-k", "lost_response", cache=False)
    assert 0 < again == by_k < every

    # --ff runs every item, those that failed first (-v prints them in the order they ran).
    (suite / "decided.log").unlink()
    proc = run_pytest(suite, "-v", "--ff", "--harness-policy", "logpol:POLICY", *SCENARIOS)
    ran = re.findall(r"^(logpol::\S+) (?:PASSED|FAILED)", proc.stdout, re.MULTILINE)
    assert ran == [*FAILED_IDS, *EVERY_ID[:2]], proc.stdout + proc.stderr


def test_stepwise_goes_on_from_the_item_that_failed(suite: Path) -> None:
    """``--sw`` finds the item it stopped at by the same IDs as ``--lf``: before, it said "previously failed test
    not found" and ran every item again."""
    outcomes, _, output = gate(suite, "--sw")
    assert outcomes == dict.fromkeys(EVERY_ID[:2], "PASSED") | {FAILED_IDS[0]: "FAILED"}, output
    outcomes, _, output = gate(suite, "--sw")
    assert outcomes == {FAILED_IDS[0]: "FAILED"}, output
    assert "skipping 2 already passed items" in output and "1 failed, 2 deselected" in output, output


@pytest.mark.parametrize("xdist", [(), ("-n", "2")], ids=["alone", "xdist"])
def test_junit_names_each_case_as_harness_check_does(tmp_path: Path, xdist: tuple[str, ...]) -> None:
    """classname the policy, name ``<scenario> seed <n>``, failing where check's fail; under pytest-xdist too,
    where the items run in workers and the controller writes the file."""
    options = ["--scenario", "lost_response", "--scenario", "request_lost", "--seed-count", "2"]
    assert main(["check", "--policy", "retry_new_key", *options, "--junit", str(tmp_path / "check.xml"),
                 "--out", str(tmp_path / "check")]) == 1  # fmt: skip
    folder = tmp_path / "suite"
    folder.mkdir()
    proc = run_pytest(folder, *xdist, "--harness-policy", "retry_new_key", *(o.replace("--", "--harness-", 1)
                      if o.startswith("--") else o for o in options), "--junitxml", str(tmp_path / "pytest.xml"),
                      cache=False)  # fmt: skip
    assert proc.returncode == 1, proc.stdout + proc.stderr

    def cases(junit: Path) -> dict[tuple[str, str], bool]:
        """(classname, name) of every test case, and whether it failed."""
        return {
            (case.get("classname", ""), case.get("name", "")): case.find("failure") is not None
            for case in ET.parse(junit).getroot().iter("testcase")
        }

    expected = cases(tmp_path / "check.xml")
    assert expected == {
        ("retry_new_key", "lost_response seed 1"): True,
        ("retry_new_key", "lost_response seed 2"): True,
        ("retry_new_key", "request_lost seed 1"): False,
        ("retry_new_key", "request_lost seed 2"): False,
    }
    assert cases(tmp_path / "pytest.xml") == expected


def test_an_argument_whose_first_part_is_a_path_that_exists_stays_a_path(suite: Path) -> None:
    """A folder named as the policy is the folder: its tests run, beside every item of the plugin."""
    (suite / "logpol").mkdir()
    (suite / "logpol" / "test_in.py").write_text("def test_in():\n    pass\n")
    outcomes, _, output = gate(suite, "logpol")
    assert outcomes == {"logpol/test_in.py::test_in": "PASSED"} | dict.fromkeys(EVERY_ID[:2], "PASSED") | dict.fromkeys(
        FAILED_IDS, "FAILED"
    ), output
