"""What a policy author meets first: a policy that fails says so in every failure, a policy that cannot be loaded
says which part is wrong, a command class returned uncalled is named, and a repro file of a case over its budget
replays under that budget."""

from __future__ import annotations

import json
import textwrap
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from harness.cli import main
from harness.gate import PolicyDoesNotRecover, assert_recovers
from harness.gate.cases import message_of
from harness.gate.repro import repro_yaml
from harness.limits import DEFAULT_CASE_TIMEOUT_S
from harness.model.commands import validated
from harness.policy import LookUp, PolicyError, Situation, load_policy
from harness.run import load_grid, run_case
from harness.run.case import failed_report
from harness.run.replay import replay
from harness.scenario import load_scenario

MODULE = "authorpol"
POLICIES = textwrap.dedent(
    """
    import time

    from harness.policy import Escalate, LookUp, Stop

    class Boom:
        name, revision = "boom", "1"
        def decide(self, situation):
            raise ValueError("boom")

    class Long:
        name, revision = "long", "1"
        def decide(self, situation):
            raise RuntimeError("line\\n" * 500)

    class Uncalled:
        name, revision = "uncalled", "1"
        def decide(self, situation):
            return LookUp

    class NoName:
        revision = "1"
        def decide(self, situation): ...

    class NoRevision:
        name = "norevision"
        def decide(self, situation): ...

    class IntRevision:
        name, revision = "intrevision", 1
        def decide(self, situation): ...

    class NoDecide:
        name, revision = "nodecide", "1"

    class Static:
        name, revision = "static", "1"
        @staticmethod
        def decide(situation):
            return LookUp()

    class Sleeps:
        name, revision = "sleeps", "1"
        def decide(self, situation):
            time.sleep(100)

    BOOM, LONG, UNCALLED, SLEEPS = Boom(), Long(), Uncalled(), Sleeps()
    NO_NAME, NO_REVISION, INT_REVISION, NO_DECIDE = NoName(), NoRevision(), IntRevision(), NoDecide()
    class ListName:
        name, revision = list(range(30)), "1"
        def decide(self, situation): ...

    class TextDecide:
        name, revision, decide = "textdecide", "1", "look up " * 10

    LIST_NAME, TEXT_DECIDE = ListName(), TextDecide()
    class Surrogate:
        name, revision = "surrogate", "1"
        def decide(self, situation):
            if situation.escalated:
                return Stop()
            return Escalate(reason=b"owner \\xff".decode("utf-8", "surrogateescape"))

    class RaisesSurrogate:
        name, revision = "raisessurrogate", "1"
        def decide(self, situation):
            raise ValueError("bad \\ud800 text")

    UNSET = None
    SURROGATE, RAISES_SURROGATE = Surrogate(), RaisesSurrogate()

    class Async:
        name, revision = "async", "1"
        async def decide(self, situation):
            return LookUp()

    class AsyncGen:
        name, revision = "asyncgen", "1"
        async def decide(self, situation):
            yield LookUp()

    class Yields:
        name, revision = "yields", "1"
        def decide(self, situation):
            yield LookUp()

    import functools

    class WrappedAsync:
        name, revision = "wrappedasync", "1"
        async def _decide(self, situation):
            return LookUp()
        @functools.wraps(_decide)
        def decide(self, situation):
            return self._decide(situation)

    class AsyncCall:
        async def __call__(self, situation):
            return LookUp()

    class CallableAsync:
        name, revision, decide = "callableasync", "1", AsyncCall()

    class StaticAsync:
        name, revision = "staticasync", "1"
        @staticmethod
        async def decide(situation):
            return LookUp()

    ASYNC, ASYNC_GEN, YIELDS = Async(), AsyncGen(), Yields()
    WRAPPED_ASYNC, CALLABLE_ASYNC, STATIC_ASYNC = WrappedAsync(), CallableAsync(), StaticAsync()

    class LoopedAsync:
        name, revision = "loopedasync", "1"
        async def decide(self, situation):
            return LookUp()
    LoopedAsync.decide.__wrapped__ = LoopedAsync.decide
    LOOPED_ASYNC = LoopedAsync()
    """
)


#: Where BOOM raises, as a policy error says it: the line of its module (not a file: the same wherever it lies).
BOOM_RAISES = '        raise ValueError("boom")'
BOOM_AT = f" (at line {POLICIES.splitlines().index(BOOM_RAISES) + 1} of {MODULE}, in decide)"


@pytest.fixture
def policies(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A module of test policies, importable here and in the workers this process spawns."""
    folder = tmp_path / "policies"
    folder.mkdir()
    (folder / f"{MODULE}.py").write_text(POLICIES, encoding="utf-8")
    monkeypatch.syspath_prepend(str(folder))
    return folder


def message(attr: str) -> str:
    (case,) = load_grid([f"{MODULE}:{attr}"], ["lost_response"], [1]).cases
    report, _ = run_case(case)
    assert report.outcome == "abandoned"  # judged from the evidence, as before
    return message_of(report)


# --- 1. the policy's own error in every failure --------------------------------------------------------------


def test_a_raising_policys_check_line_and_junit_failure_name_its_error(
    policies: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    junit, out = tmp_path / "j.xml", tmp_path / "out"
    args = ["--policy", f"{MODULE}:BOOM", "--scenario", "lost_response", "--seed-count", "1"]
    assert main(["check", *args, "--junit", str(junit), "--out", str(out)]) == 1
    stdout = capsys.readouterr().out
    said = f"abandoned: abandoned_actions violated; the policy failed: ValueError: boom{BOOM_AT}"
    assert f"FAIL boom x lost_response seed 1: {said}; reproduce: " in stdout
    (case,) = ET.parse(junit).getroot().iter("testcase")
    failure = case.find("failure")
    assert failure is not None and failure.get("type") == "abandoned"  # the outcome is unchanged
    assert failure.get("message") == said
    entry = next(line for line in (failure.text or "").splitlines() if "policy_error" in line)
    assert "worker" in entry and f"error=ValueError: boom{BOOM_AT}" in entry


def test_assert_recovers_names_the_policys_error(policies: Path, tmp_path: Path) -> None:
    with pytest.raises(PolicyDoesNotRecover) as raised:
        assert_recovers(f"{MODULE}:BOOM", ["lost_response"], [1], out=tmp_path / "repro")
    assert "abandoned_actions violated; the policy failed: ValueError: boom" in str(raised.value)
    assert "policy_error         action_id=a73 error=ValueError: boom" in str(raised.value)


def test_a_long_policy_error_is_one_cut_line_in_the_message(policies: Path) -> None:
    said = message("LONG")
    assert said.startswith("abandoned: abandoned_actions violated; the policy failed: RuntimeError: line line")
    # Cut in its middle: where the policy raised it stays whole at its end.
    assert "\n" not in said and "... (at line " in said and said.endswith(", in decide)") and len(said) < 260


# --- 2. and 3. a policy that cannot be loaded says what is wrong with it ---------------------------------------


def test_a_policy_file_given_by_its_path_is_named_as_a_module_from_its_packages_folder(tmp_path: Path) -> None:
    """A file that is there, given by its path (absolute, say): the fix named a module of every folder on the way
    (tmp.mypol.mypolicies.record_or_escalate), which imports from nowhere; it now names the module from the folder
    above its outermost package, and that folder to run from. A path to no file keeps the general fix."""
    package = tmp_path / "mypol" / "mypolicies"
    (package / "deeper").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "deeper" / "__init__.py").write_text("")
    for file in (package / "record_or_escalate.py", package / "deeper" / "more.py", tmp_path / "alone.py"):
        file.write_text("POLICY = None\n")
    cases = (
        (package / "record_or_escalate.py", "mypolicies.record_or_escalate", tmp_path / "mypol"),
        (package / "deeper" / "more.py", "mypolicies.deeper.more", tmp_path / "mypol"),
        (tmp_path / "alone.py", "alone", tmp_path),
    )
    for file, dotted, root in cases:
        with pytest.raises(PolicyError) as raised:
            load_policy(f"{file}:POLICY")
        assert str(raised.value).endswith(
            f"fix: name the module as in {dotted}:POLICY, and run from {root} (or put it on PYTHONPATH)"
        ), raised.value
    with pytest.raises(PolicyError, match=r"as in sc\.my_pol:P \(run from the folder its package is in\)$"):
        load_policy("sc/my_pol.py:P")


def test_a_policy_class_is_refused_with_how_to_instantiate_it(
    policies: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    said = f"policy '{MODULE}:Boom': is the class Boom, not a policy object; fix: instantiate it, Boom()"
    with pytest.raises(PolicyError) as raised:
        load_policy(f"{MODULE}:Boom")
    assert str(raised.value) == said
    args = ["--policy", f"{MODULE}:Boom", "--scenario", "lost_response", "--seed-count", "1"]
    assert main(["check", *args, "--out", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err == f"harness: {said}\n"
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("attr", "says"),
    [
        ("UNSET", f"'{MODULE}.UNSET' is None, not a policy object; fix: set it to a policy"),
        ("ABSENT", f"'{MODULE}' has no attribute 'ABSENT'; fix: check the name"),
    ],
)
def test_an_attribute_set_to_none_is_not_called_missing(policies: Path, attr: str, says: str) -> None:
    """A module attribute that is None was said not to exist ("check the name"), sending its author to look
    for a typo; it is named as what it is."""
    with pytest.raises(PolicyError) as raised:
        load_policy(f"{MODULE}:{attr}")
    assert str(raised.value).startswith(f"policy '{MODULE}:{attr}': {says}")


@pytest.mark.parametrize(("attr", "outcome", "written"), [("SURROGATE", "escalated", "owner \\udcff"),
                                                         ("RAISES_SURROGATE", "abandoned", "bad \\ud800 text")])  # fmt: skip
def test_text_no_file_can_hold_is_written_escaped(
    policies: Path, tmp_path: Path, attr: str, outcome: str, written: str
) -> None:
    """A lone surrogate in a policy's text (a reason, an error) could not be serialized: every worker died outside
    any case, and no case was judged. It is written as its escape, and the case judged as usual."""
    junit, out = tmp_path / "j.xml", tmp_path / "out"
    args = ["--policy", f"{MODULE}:{attr}", "--scenario", "lost_response", "--seed-count", "1"]
    assert main(["check", *args, "--junit", str(junit), "--out", str(out)]) == (0 if outcome == "escalated" else 1)
    (case,) = out.rglob("recovery.json")
    data = json.loads(case.read_text())
    assert data["outcome"] == outcome and json.dumps(written)[1:-1] in json.dumps(data["timeline"])
    assert junit.is_file()


def test_a_class_whose_decide_is_static_is_a_policy_as_it_is(policies: Path) -> None:
    assert load_policy(f"{MODULE}:Static").name == "static"


@pytest.mark.parametrize(
    ("attr", "returns"),
    [
        ("ASYNC", "a coroutine"),
        ("ASYNC_GEN", "an async generator"),
        ("YIELDS", "a generator"),
        ("WRAPPED_ASYNC", "a coroutine"),
        ("CALLABLE_ASYNC", "a coroutine"),
        ("STATIC_ASYNC", "a coroutine"),
        ("LOOPED_ASYNC", "a coroutine"),  # a loop of wrappers: read as it is
    ],
)
def test_a_decide_that_never_returns_a_command_is_refused_when_the_policy_loads(
    policies: Path, attr: str, returns: str
) -> None:
    """Refused before any case runs: every case failed on "returned coroutine", with Python's RuntimeWarning that a
    coroutine was never awaited printed beside the harness's line. A wrapped async def, and an object whose
    __call__ is one, are read as what they call."""
    with pytest.raises(PolicyError) as raised:
        load_policy(f"{MODULE}:{attr}")
    assert str(raised.value) == (
        f"policy '{MODULE}:{attr}': its 'decide' returns {returns}, never a command; fix: make it a plain def "
        "that returns the command (no async, no yield)"
    )


@pytest.mark.parametrize(
    ("attr", "says"),
    [
        ("NO_NAME", "its 'name' is missing"),
        ("NO_REVISION", "its 'revision' is missing"),
        ("INT_REVISION", "its 'revision' is int 1, not text"),
        ("NO_DECIDE", "its 'decide' is missing"),
        # A part of another type is named with its type and its value, cut to 40 characters.
        ("LIST_NAME", f"its 'name' is list {repr(list(range(30)))[:40]}, not text"),
        ("TEXT_DECIDE", f"its 'decide' is str {repr('look up ' * 10)[:40]}, not a method"),
    ],
)
def test_a_policy_missing_a_part_is_refused_naming_that_part(policies: Path, attr: str, says: str) -> None:
    with pytest.raises(PolicyError) as raised:
        load_policy(f"{MODULE}:{attr}")
    text = str(raised.value)
    assert text.startswith(f"policy '{MODULE}:{attr}': {says} (a policy needs str 'name', str 'revision'")
    assert text.endswith("; fix: see harness.policy.Policy") and "\n" not in text


# --- 4. a command class returned uncalled ----------------------------------------------------------------------


def test_a_command_class_returned_uncalled_is_named_with_the_call(policies: Path) -> None:
    with pytest.raises(TypeError) as raised:
        validated(LookUp)
    assert str(raised.value) == "decide() returned the class LookUp, not a command; call it: LookUp(...)"
    with pytest.raises(TypeError, match=r"^decide\(\) returned the class Situation, not a Command$"):
        validated(Situation)
    said = message("UNCALLED")
    assert said.endswith(
        "the policy failed: TypeError: decide() returned the class LookUp, not a command; call it: LookUp(...)"
    )


# --- 5. a repro file replays under the budget its case ran over ------------------------------------------------


def budgets(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The budgets replay supervises its runs under; the runs themselves done here, at once."""
    seen: list[float] = []

    def supervise(jobs: list[object], concurrency: int, timeout_s: float, on_result: Callable[..., None]) -> None:
        seen.append(timeout_s)
        for job in jobs:
            on_result(job, job.execute(lambda _: None))  # type: ignore[attr-defined]

    monkeypatch.setattr("harness.run.replay.supervise", supervise)
    return seen


def test_a_repro_of_a_case_over_its_budget_carries_it_and_replays_under_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (case,) = load_grid(["stop_on_timeout"], ["lost_response"], [1]).cases
    report = failed_report(case, "the case ran longer than its wall-clock budget of 3 s", 3.0)
    assert "--case-timeout 3" in report.reproduce
    text = repro_yaml(case.scenario, report, case.policy_spec)
    assert yaml.safe_load(text)["reproduces"]["case_timeout_s"] == 3.0
    path = tmp_path / "lost_response.yaml"
    path.write_text(text, encoding="utf-8")
    wanted = load_scenario(path).reproduces
    assert wanted is not None and wanted.case_timeout_s == 3.0
    seen = budgets(monkeypatch)
    replay(path)
    assert seen == [3.0]
    # An older repro file, without the field, replays under the default budget as before.
    doc = yaml.safe_load(text)
    del doc["reproduces"]["case_timeout_s"]
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    replay(path)
    assert seen == [3.0, DEFAULT_CASE_TIMEOUT_S]


def test_a_repro_of_a_case_that_passed_its_budget_names_none(tmp_path: Path) -> None:
    (case,) = load_grid(["retry_new_key"], ["lost_response"], [1]).cases
    report, _ = run_case(case)
    assert report.outcome == "incorrect"
    assert "case_timeout_s" not in yaml.safe_load(repro_yaml(case.scenario, report, case.policy_spec))["reproduces"]


def test_check_writes_the_case_timeout_into_the_repro_of_a_timed_out_case(
    policies: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    args = ["--policy", f"{MODULE}:SLEEPS", "--scenario", "lost_response", "--seed-count", "1", "--case-timeout", "1"]
    assert main(["check", *args, "--out", str(out)]) == 1
    assert "harness_error" in capsys.readouterr().out
    repro = out / "repro" / "sleeps" / "seed-1" / "lost_response.yaml"
    wanted = load_scenario(repro).reproduces
    assert wanted is not None and (wanted.outcome, wanted.case_timeout_s) == ("harness_error", 1.0)


def test_what_a_policy_prints_goes_to_stderr_and_leaves_the_outcome_table_alone(tmp_path: Path) -> None:
    """A policy's prints came out in the middle of `harness run`'s stdout (six thousand lines before the table
    with --quiet); the workers send them to stderr, so stdout is the harness's own."""
    import os
    import subprocess
    import sys

    (tmp_path / "chatty.py").write_text(
        "from harness.policy import Escalate, Stop\n"
        "print('IMPORTED chatty')\n"
        "class Chatty:\n    name, revision = 'chatty', '1'\n"
        "    def decide(self, situation):\n        print('DEBUG from the policy')\n"
        "        return Stop() if situation.escalated else Escalate(reason='x')\n"
        "POLICY = Chatty()\n"
    )
    quiet = ["--seed-count", "2", "--tracking", "none", "--no-report", "--quiet", "--out", str(tmp_path / "o")]
    proc = subprocess.run(
        [sys.executable, "-m", "harness", "run", "--policy", "chatty:POLICY", "--scenario", "lost_response", *quiet],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert "DEBUG" not in proc.stdout and proc.stdout.startswith("policy \\ scenario")
    assert proc.stderr.count("DEBUG from the policy") == 4  # two decisions in each of two cases
    # So does what its module prints as it is imported (by the command line itself, before any worker starts).
    assert "IMPORTED" not in proc.stdout and "IMPORTED chatty" in proc.stderr


def test_what_a_failing_policy_prints_goes_to_stderr_under_check_too(tmp_path: Path) -> None:
    """`harness check` replays each failing case in its own process to show it; the policy's prints came out on
    stdout there, between the gate's own lines. They go to stderr, as from the workers."""
    import os
    import subprocess
    import sys

    (tmp_path / "chatty.py").write_text(
        "from harness.policy import Stop\n"
        "print('IMPORTED gives')\n"
        "class Gives:\n    name, revision = 'gives', '1'\n"
        "    def decide(self, situation):\n        print('DEBUG from the policy')\n        return Stop()\n"
        "POLICY = Gives()\n"
    )
    args = ["--policy", "chatty:POLICY", "--scenario", "lost_response", "--seed-count", "1", "--out", "o"]
    proc = subprocess.run(
        [sys.executable, "-m", "harness", "check", *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
        timeout=300,
    )
    assert proc.returncode == 1, proc.stderr  # it gives up on a lost reply: abandoned
    assert "abandoned" in proc.stdout and "DEBUG" not in proc.stdout and "IMPORTED" not in proc.stdout
    assert "DEBUG from the policy" in proc.stderr and "IMPORTED gives" in proc.stderr


def test_the_line_naming_a_case_whose_policy_failed_says_what_it_raised(
    policies: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An abandoned case whose policy raised read as one whose policy gave up: `harness run` named it with its
    outcome and reproduce command only. The line now ends with what the policy raised, as a shell comment (the
    line still runs pasted whole), and a resumed run's tally keeps it."""
    from harness.run.cell import CellResult, _note

    out = tmp_path / "out"
    args = ["--policy", f"{MODULE}:LONG", "--scenario", "lost_response", "--seed", "1", "--tracking", "none"]
    assert main(["run", *args, "--no-report", "--out", str(out)]) == 0
    (line,) = [x for x in capsys.readouterr().out.splitlines() if x.startswith("  abandoned ")]
    command, comment = line.split("  # ")
    assert command.split() == ["abandoned", "python", "-m", "harness", "run", *args[:6]]
    assert comment.startswith("the policy failed: RuntimeError: line line line") and len(comment) < 160
    (case,) = load_grid([f"{MODULE}:BOOM"], ["lost_response"], [1]).cases
    result = CellResult()
    _note(result, run_case(case)[0])
    (noted,) = CellResult.from_json(result.to_json()).notable
    assert noted.policy_error == f"ValueError: boom{BOOM_AT}"
    (case,) = load_grid(["stop_on_timeout"], ["lost_response"], [1]).cases
    gave_up = CellResult()
    _note(gave_up, run_case(case)[0])
    assert [n.policy_error for n in gave_up.notable] == [None]


def test_a_timeline_picture_labels_a_policy_failure_with_what_it_raised() -> None:
    from harness.model.events import PolicyFailed
    from harness.present.pictures import _label

    label = _label(PolicyFailed(action_id="a73", error="ValueError: boom"))
    assert label == "policy_error error=ValueError: boom"
    # Text a policy wrote, drawn as it is: on one line, and a pair of '$' is not math (it stopped the picture).
    from harness.present.pictures import png_bytes, timeline
    from harness.run.files import recovery_json

    said = "KeyError: 'cost $\\frac$'\nsecond line"
    assert (
        _label(PolicyFailed(action_id="a73", error=said)) == "policy_error error=KeyError: 'cost $\\frac$' second line"
    )

    class Raises:
        name, revision = "raises_dollars", "1"

        def decide(self, situation: Situation) -> object:
            raise KeyError("cost $\\frac$")

    from harness.run.plan import Case

    (shipped,) = load_grid(["stop_on_timeout"], ["lost_response"], [1]).cases
    case = Case("x:RAISES", "lost_response", 1, Raises(), shipped.scenario)
    report = json.loads(recovery_json(run_case(case)[0]))
    assert png_bytes(timeline(report)).startswith(b"\x89PNG")


def test_a_policy_that_changes_its_situation_fails_in_one_line_naming_the_field() -> None:
    """A Situation is frozen: assigning to it raised pydantic's four-line error, and the policy's failure was
    recorded with a link to pydantic's site and the field on a line of its own. It is one line now."""
    from harness.model.events import PolicyFailed
    from harness.policy import Wait
    from harness.sim import simulate

    class Changes:
        name, revision = "changes", "1"

        def decide(self, situation: Situation) -> object:
            situation.escalated = True  # type: ignore[misc]
            return LookUp()

    class WaitsBackwards:
        name, revision = "waits_backwards", "1"

        def decide(self, situation: Situation) -> object:
            return Wait(duration_s=-5)

    scenario = load_grid(["stop_on_timeout"], ["lost_response"], [1]).cases[0].scenario
    errors = []
    for policy in (Changes(), WaitsBackwards()):
        (failed,) = [e for e in simulate(scenario, policy, 1).evidence.history if isinstance(e, PolicyFailed)]
        errors.append(failed.error)
    # Each is said where the policy's own line is, not where pydantic raised it.
    at = [
        f" (at line {c.decide.__code__.co_firstlineno + 1} of {__name__}, in decide)" for c in (Changes, WaitsBackwards)
    ]
    assert errors[0] == (
        "ValidationError: Situation: field 'escalated': Instance is frozen (a Situation is read-only: "
        f"model_copy(update={{...}}) gives a changed copy){at[0]}"
    )
    assert errors[1] == f"ValidationError: Wait: field 'duration_s': Input should be greater than 0{at[1]}"


def test_a_module_whose_own_import_is_missing_is_told_to_check_the_module(tmp_path: Path) -> None:
    """`depmod_pol` imports `depmod`, which is not installed: the fix is in the module, not in the folder it is
    run from (the name of the missing module only begins the policy module's)."""
    import sys

    (tmp_path / "depmod_pol.py").write_text("import depmod\nPOLICY = None\n")
    sys.path.insert(0, str(tmp_path))
    try:
        with pytest.raises(PolicyError) as raised:
            load_policy("depmod_pol:POLICY")
    finally:
        sys.path.remove(str(tmp_path))
    assert str(raised.value).endswith(
        f"(ModuleNotFoundError: No module named 'depmod'); fix: check the module, at {tmp_path / 'depmod_pol.py'}:1"
    )


def test_a_module_that_raises_as_it_is_imported_is_told_where(tmp_path: Path) -> None:
    """A policy module that raises while imported was refused with its exception and "check the module", and no
    place: the fix now names the last line of Python that ran (in a function the module calls, here), not one of
    the import machinery's. A syntax error says where already: nothing is added to it."""
    import sys

    (tmp_path / "raising_pol.py").write_text("def boom():\n    raise RuntimeError('no')\n\n\nboom()\n")
    (tmp_path / "broken_pol.py").write_text("POLICY = (\n")
    sys.path.insert(0, str(tmp_path))
    try:
        with pytest.raises(PolicyError) as raised:
            load_policy("raising_pol:POLICY")
        assert str(raised.value).endswith(
            f"(RuntimeError: no); fix: check the module, at {tmp_path / 'raising_pol.py'}:2"
        )
        with pytest.raises(PolicyError) as raised:
            load_policy("broken_pol:POLICY")
        assert str(raised.value).endswith("(broken_pol.py, line 1)); fix: check the module")
    finally:
        sys.path.remove(str(tmp_path))


def test_a_missing_module_of_a_package_that_is_there_is_told_to_check_the_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`mine.nope:X` where `mine` imports: the folder is right and the module's name is wrong (the fix said to run
    from the folder that holds 'mine'). `mine.good.x:X` names a module as if it were a package."""
    package = tmp_path / "mine"
    package.mkdir()
    for name in ("__init__", "good", "other", "_private"):
        (package / f"{name}.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(PolicyError) as raised:
        load_policy("mine.nope:X")
    assert str(raised.value).endswith("fix: 'mine' has no module 'nope': check the name (it has good, other)")
    with pytest.raises(PolicyError) as raised:
        load_policy("mine.good.x:X")
    assert str(raised.value).endswith(
        "fix: 'mine.good' is a module, not a package: name a policy in it as mine.good:ATTR"
    )


def test_a_package_of_many_modules_is_named_with_its_first_ten(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A package of eleven modules: the fix lists the first ten and marks the rest, so the line stays short; one of
    exactly ten lists them all."""
    for count, listed in ((11, ", ..."), (10, "")):
        package = tmp_path / f"many{count}"
        package.mkdir()
        (package / "__init__.py").write_text("")
        for i in range(count):
            (package / f"m{i:02}.py").write_text("")
        monkeypatch.syspath_prepend(str(tmp_path))
        with pytest.raises(PolicyError) as raised:
            load_policy(f"many{count}.nope:X")
        names = ", ".join(f"m{i:02}" for i in range(10))
        assert str(raised.value).endswith(
            f"fix: 'many{count}' has no module 'nope': check the name (it has {names}{listed})"
        )
