"""Today's lines that no test pinned (the forty-third mutation pass, tests/MUTANTS.md): replay finding a user's
policy from the folder its run began in (``_look_where_run_began``, and only for a user's policy), and a finding of
a user's policy naming the folder its module was imported from (``finding_yaml``'s ``policy_path``). Every test
runs in process, with function-scoped fixtures, and lets go of the modules it imports."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_explore_run_mutants import _finding as _stand_in

from harness.explore import finding_yaml
from harness.explore.schedule import Schedule, element
from harness.explore.search import Finding
from harness.model import REQUEST
from harness.run import load_grid, run_case
from harness.run.files import recovery_json
from harness.run.replay import _look_where_run_began, replay
from harness.scenario import scenario_cases

#: A user's policy: retry_new_key's decisions under its own name.
MINE = (
    "from policies.retry_new_key import POLICY as _RETRY\n\n"
    "class Mine:\n    name, revision = 'mine_h43', '1'\n\n"
    "    def decide(self, situation):\n        return _RETRY.decide(situation)\n\n"
    "POLICY = Mine()\n"
)


@pytest.fixture
def own_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """``sys.path`` as it is, given back after the test whatever it appended."""
    monkeypatch.setattr(sys, "path", list(sys.path))


def _run_folder(root: Path, began_in: object) -> Path:
    """A run folder whose request says it began in ``began_in``, and where a case's recovery.json lies in it."""
    root.mkdir(parents=True)
    (root / REQUEST).write_text(json.dumps({"argv": ["run"], "cwd": began_in}), encoding="utf-8")
    case = root / "cases" / "mine" / "lost_response" / "seed-1" / "recovery.json"
    case.parent.mkdir(parents=True)
    return case


def _added(before: list[str]) -> list[str]:
    """What was put on ``sys.path`` after ``before`` (all of it, marked, if anything before it changed)."""
    return sys.path[len(before) :] if sys.path[: len(before)] == before else ["changed", *sys.path]


# -- _look_where_run_began --------------------------------------------------------------------------------------


@pytest.mark.usefixtures("own_path")
def test_the_folder_a_run_began_in_goes_last_on_the_path_once(tmp_path: Path) -> None:
    began = tmp_path / "project"
    began.mkdir()
    case = _run_folder(tmp_path / "run", str(began))
    before = list(sys.path)
    _look_where_run_began(case)
    assert _added(before) == [str(began)]
    _look_where_run_began(case)  # already there: not added again
    assert _added(before) == [str(began)] and sys.path.count(str(began)) == 1


@pytest.mark.usefixtures("own_path")
def test_a_folder_already_on_the_path_is_not_added_again(tmp_path: Path) -> None:
    began = tmp_path / "project"
    began.mkdir()
    sys.path.insert(0, str(began))
    case = _run_folder(tmp_path / "run", str(began))
    before = list(sys.path)
    _look_where_run_began(case)
    assert sys.path == before


@pytest.mark.usefixtures("own_path")
@pytest.mark.parametrize("began_in", ["missing", "a_file", None, 7])
def test_a_folder_that_is_gone_or_not_a_folder_or_not_said_is_not_put_on_the_path(
    tmp_path: Path, began_in: object
) -> None:
    (tmp_path / "a_file").write_text("")
    said = str(tmp_path / began_in) if isinstance(began_in, str) else began_in
    case = _run_folder(tmp_path / "run", said)
    before = list(sys.path)
    _look_where_run_began(case)
    assert sys.path == before


@pytest.mark.usefixtures("own_path")
def test_a_case_with_no_request_above_it_puts_nothing_on_the_path(tmp_path: Path) -> None:
    case = tmp_path / "loose" / "recovery.json"
    case.parent.mkdir()
    before = list(sys.path)
    _look_where_run_began(case)
    assert sys.path == before


# -- _replay_report: only a user's policy looks there -----------------------------------------------------------


@pytest.fixture
def mine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The user's policy importable here (and let go after the test); its spec."""
    folder = tmp_path / "user project"
    folder.mkdir()
    (folder / "mine_h43.py").write_text(MINE, encoding="utf-8")
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.setitem(sys.modules, "mine_h43", None)  # undone after the test: the module is let go
    del sys.modules["mine_h43"]
    return "mine_h43:POLICY"


def _recorded(spec: str, case: Path) -> None:
    (planned,) = load_grid([spec], ["lost_response"], [1]).cases
    case.write_text(recovery_json(run_case(planned)[0]), encoding="utf-8")


@pytest.mark.usefixtures("own_path")
def test_replaying_a_case_of_a_users_policy_looks_in_the_folder_its_run_began_in(tmp_path: Path, mine: str) -> None:
    began = tmp_path / "began here"
    began.mkdir()
    case = _run_folder(tmp_path / "run", str(began))
    _recorded(mine, case)
    before = list(sys.path)
    assert replay(case, supervised=False).differences == ()
    assert _added(before) == [str(began)]


@pytest.mark.usefixtures("own_path")
def test_replaying_a_case_of_a_shipped_policy_puts_nothing_on_the_path(tmp_path: Path) -> None:
    began = tmp_path / "began here"
    began.mkdir()
    case = _run_folder(tmp_path / "run", str(began))
    _recorded("retry_new_key", case)
    before = list(sys.path)
    assert replay(case, supervised=False).differences == ()
    assert sys.path == before


# -- finding_yaml: a user's policy's folder ---------------------------------------------------------------------


def _finding(**changes: Any) -> Finding:
    """The explore-run tests' stand-in finding, with one fault in its schedule."""
    return _stand_in(Schedule((element("fault", {"boundary": "request_lost", "nth": 2}),)), **changes)


def test_a_finding_of_a_users_policy_names_the_folder_its_module_came_from_last_in_reproduces(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    template = scenario_cases("lost_response")[0][1]
    module = types.ModuleType("h43_user")
    module.__file__ = str(tmp_path / "their project" / "h43_user.py")
    monkeypatch.setitem(sys.modules, "h43_user", module)
    users = yaml.safe_load(finding_yaml(template, _finding(policy="mine", policy_spec="h43_user:POLICY"), 2))
    shipped = yaml.safe_load(finding_yaml(template, _finding(policy="mine"), 2))
    assert "policy_path" not in shipped["reproduces"]
    assert list(users["reproduces"])[-1] == "policy_path"
    assert users["reproduces"].pop("policy_path") == str(tmp_path / "their project")
    assert users["reproduces"] == {**shipped["reproduces"], "policy": "h43_user:POLICY"}
    assert {k: v for k, v in users.items() if k != "reproduces"} == {
        k: v for k, v in shipped.items() if k != "reproduces"
    }
