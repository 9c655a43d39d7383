"""`harness replay` under supervision and with printable output, and `assert_recovers` refusing seeds it cannot run.

A policy that never returns or ends its process (``sys.exit``, ``os._exit``) cannot hang ``harness replay`` or
hand it its own exit status: the case runs in a supervised worker, as in ``harness run``, under the budget its
reproduce command names (else the default one), and comes out as a ``harness_error`` case with the reason. What
replay prints of a policy's text shows its control characters escaped, one line per timeline entry. ``seeds``
given to ``assert_recovers`` that are none or not seeds are refused in one line naming the argument.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import yaml

from harness.cli import main
from harness.errors import InputError
from harness.gate import CheckOptions, assert_recovers, check_policy
from harness.run import load_grid, run_case
from harness.run.files import recovery_json
from harness.run.replay import timeline_text

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "scenarios"
#: A policy that behaves as ``FLAKY_MODE`` says: never returns, ends its process, or stops with a reason full of
#: control characters (an ANSI colour, a carriage return and a line break that would fake a timeline line).
FLAKY = textwrap.dedent(
    r"""
    import os, sys

    from harness.model import Stop


    class Flaky:
        name, revision = "flaky", "1"

        def decide(self, situation):
            mode = os.environ.get("FLAKY_MODE", "")
            if mode == "loop":
                while True:
                    pass
            if mode == "osexit":
                os._exit(9)
            if mode == "sysexit":
                sys.exit(3)
            return Stop(reason="\x1b[31mRED\r\nFAKE LINE")


    POLICY = Flaky()
    """
)
SPEC = "flakypol:POLICY"
#: Longer than any of these tests should take; the old replay hung here forever.
PATIENCE_S = 60


@pytest.fixture
def flaky(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder holding the policy module, importable here (and in the workers this process spawns)."""
    folder = tmp_path / "policies"
    folder.mkdir()
    (folder / "flakypol.py").write_text(FLAKY, encoding="utf-8")
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.delenv("FLAKY_MODE", raising=False)
    return folder


def harness(
    *args: str, policies: Path, mode: str = "", code: str | None = None
) -> tuple[subprocess.CompletedProcess[str], float]:
    """``python -m harness ARGS`` (or ``python -c CODE ARGS``) with the policy importable; its result and time."""
    env = {**os.environ, "PYTHONPATH": str(policies), "FLAKY_MODE": mode}
    command = [sys.executable, "-c", code, *args] if code else [sys.executable, "-m", "harness", *args]
    started = time.monotonic()
    proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env=env, timeout=PATIENCE_S)
    return proc, time.monotonic() - started


def recorded_case(folder: Path) -> Path:
    """A recovery.json of the policy on lost_response seed 1, recorded while it behaved (it stops, abandoned)."""
    (case,) = load_grid([SPEC], ["lost_response"], [1]).cases
    report, _ = run_case(case)
    assert report.outcome == "abandoned"
    path = folder / "recovery.json"
    path.write_text(recovery_json(report), encoding="utf-8")
    return path


def finding_file(folder: Path) -> Path:
    """A scenario file as explore writes a finding: lost_response, reproducing the policy's abandoned case."""
    scenario = yaml.safe_load((SCENARIOS / "lost_response.yaml").read_text(encoding="utf-8"))
    scenario["reproduces"] = {
        "policy": SPEC,
        "policy_revision": "1",
        "seed": 1,
        "outcome": "abandoned",
        "properties": ["abandoned_actions"],
    }
    path = folder / "finding" / "lost_response.yaml"
    path.parent.mkdir()
    path.write_text(yaml.safe_dump(scenario, sort_keys=False), encoding="utf-8")
    return path


def no_traceback(proc: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout, proc.stderr


# --- 1. a policy that hangs or ends its process --------------------------------------------------------------


def test_replay_of_a_case_over_its_recorded_budget_stops_after_that_budget(flaky: Path, tmp_path: Path) -> None:
    """A case ``harness run`` stopped after ``--case-timeout 1`` replays under that budget (its reproduce command
    names it): the same harness_error case, byte for byte, exit 0, and the reason printed in one line. The
    replay used to run the endless policy in its own process and never return."""
    out = tmp_path / "run"
    run, _ = harness(
        "run", "--policy", SPEC, "--scenario", "lost_response", "--seed", "1", "--case-timeout", "1",
        "--tracking", "none", "--no-report", "--quiet", "--out", str(out), policies=flaky, mode="loop",
    )  # fmt: skip
    assert run.returncode == 1, run.stderr
    (case,) = (out / "cases").rglob("recovery.json")
    before = case.read_bytes()
    assert json.loads(before)["reproduce"].endswith("--case-timeout 1")
    proc, elapsed = harness("replay", str(case), policies=flaky, mode="loop")
    no_traceback(proc)
    assert proc.returncode == 0, proc.stderr
    assert elapsed < 20
    reason = "the case ran longer than its wall-clock budget of 1 s (--case-timeout); its worker process was stopped"
    assert [line for line in proc.stdout.splitlines() if reason in line] == [
        f"no timeline: the harness failed: {reason}"
    ]
    assert "replayed: the same as recorded" in proc.stdout
    assert case.read_bytes() == before


@pytest.mark.parametrize(("mode", "status"), [("osexit", 9), ("sysexit", 3)])
def test_replay_of_a_policy_that_ends_its_process_exits_1_saying_so(
    flaky: Path, tmp_path: Path, mode: str, status: int
) -> None:
    """A policy that now calls ``os._exit(9)`` or ``sys.exit(3)`` in ``decide``: replay exits 1 (not the same as
    recorded) with one line per difference, the worker's death among them; it used to exit 9 or 3 silently."""
    case = recorded_case(tmp_path)
    proc, _ = harness("replay", str(case), policies=flaky, mode=mode)
    no_traceback(proc)
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    lines = proc.stderr.splitlines()
    assert lines and all(line.startswith("harness: replay differs: ") for line in lines), proc.stderr
    assert 'outcome: recorded "abandoned", now "harness_error"' in proc.stderr
    assert f"the worker process exited (status {status}) while running the case" in proc.stderr
    assert "no timeline: the harness failed: the worker process exited" in proc.stdout


def test_replay_of_a_finding_whose_policy_hangs_stops_after_the_default_budget(flaky: Path, tmp_path: Path) -> None:
    """A scenario file names no budget: replay runs it under the default one (``DEFAULT_CASE_TIMEOUT_S``, made 1 s
    here), then says the outcome differs and why, exit 1. It used to hang."""
    path = finding_file(tmp_path)
    code = (
        "import sys; import harness.run.replay as replay; replay.DEFAULT_CASE_TIMEOUT_S = 1.0; "
        "from harness.cli import main; sys.exit(main(['replay', sys.argv[1]]))"
    )
    proc, elapsed = harness(str(path), policies=flaky, mode="loop", code=code)
    no_traceback(proc)
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    assert elapsed < 20
    assert "harness: replay differs: outcome: recorded abandoned, now harness_error" in proc.stderr
    assert "harness: replay differs: harness error: the case ran longer than its wall-clock budget of 1 s" in (
        proc.stderr
    )


def test_replay_of_a_finding_whose_policy_dies_exits_1(flaky: Path, tmp_path: Path) -> None:
    path = finding_file(tmp_path)
    proc, _ = harness("replay", str(path), policies=flaky, mode="osexit")
    no_traceback(proc)
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    assert "harness: replay differs: harness error: the worker process exited (status 9)" in proc.stderr


def test_a_finding_of_a_policy_that_behaves_still_replays_the_same(flaky: Path, tmp_path: Path) -> None:
    path = finding_file(tmp_path)
    proc, _ = harness("replay", str(path), policies=flaky)
    assert proc.returncode == 0, proc.stderr
    assert "replayed: the same as recorded" in proc.stdout


@pytest.mark.parametrize("budget", ["x", "-1", "nan", "86401", ""])
def test_a_reproduce_with_a_bad_case_timeout_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], budget: str
) -> None:
    """The budget is read from the reproduce command, so a bad one is bad input, said in one line (of a case
    the loader reads: a file of another shape is refused before its reproduce command is read)."""
    path = tmp_path / "recovery.json"
    reproduce = (
        f"python -m harness run --policy retry_same_key --scenario lost_response --seed 1 --case-timeout {budget}"
    )
    (case,) = load_grid(["retry_same_key"], ["lost_response"], [1]).cases
    record = json.loads(recovery_json(run_case(case)[0]))
    path.write_text(json.dumps({**record, "reproduce": reproduce.strip()}), encoding="utf-8")
    assert main(["replay", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "field 'reproduce': --case-timeout" in err, err


# --- 2. a policy's text is printed with its control characters escaped --------------------------------------


def test_replay_prints_a_policys_control_characters_escaped(
    flaky: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``Stop(reason="\\x1b[31mRED\\r\\nFAKE LINE")``: one printed line per timeline entry, the reason shown as
    ``\\x1b[31mRED\\r\\nFAKE LINE``; recovery.json keeps the text as given and replays byte for byte."""
    case = recorded_case(tmp_path)
    before = case.read_bytes()
    assert "\\u001b[31mRED\\r\\nFAKE LINE" in before.decode()
    assert main(["replay", str(case)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\r" not in out
    timeline = out.split("\n\n", 1)[0].splitlines()
    entries = json.loads(before)["timeline"]
    assert len(timeline) == len(entries)
    assert [int(line[2:6]) for line in timeline] == [e["index"] for e in entries]
    assert any("reason=\\x1b[31mRED\\r\\nFAKE LINE" in line for line in timeline), timeline
    assert "replayed: the same as recorded" in out
    assert case.read_bytes() == before


def test_timeline_text_is_one_printable_line_per_entry(flaky: Path) -> None:
    (case,) = load_grid([SPEC], ["lost_response"], [1]).cases
    report, _ = run_case(case)
    text = timeline_text(report)
    assert len(text.split("\n")) == len(report.timeline)
    assert all(c.isprintable() for c in text.replace("\n", ""))


def test_printable_escapes_what_a_terminal_acts_on_and_nothing_else() -> None:
    from harness.run.replay import printable

    assert printable("\x1b[31mRED\r\nFAKE\tLINE\x00\x7f\x9b") == "\\x1b[31mRED\\r\\nFAKE\\tLINE\\x00\\x7f\\x9b"
    assert printable("\u202eevil") == "\\u202eevil"
    plain = "ok reason=é ü 日本 'quoted' back\\slash"
    assert printable(plain) == plain


# --- 3. assert_recovers refuses seeds it cannot run -------------------------------------------------------------


def test_assert_recovers_with_no_seed_raises_instead_of_passing() -> None:
    with pytest.raises(InputError, match=r"assert_recovers: argument 'seeds': no seed given"):
        assert_recovers("retry_new_key", scenarios=["lost_response"], seeds=[])


@pytest.mark.parametrize("seeds", [[-1], [1, 2**63], [1.5], ["1"], [True], "12", None])
def test_assert_recovers_names_the_seeds_argument_for_a_bad_seed(seeds: object, tmp_path: Path) -> None:
    """As ``--seed`` takes it: a whole number 0..2**63-1. It used to fail on a temporary repro file's
    ``reproduces.seed`` (or run nothing)."""
    with pytest.raises(InputError) as raised:
        assert_recovers("retry_new_key", scenarios=["lost_response"], seeds=seeds, out=tmp_path / "out")  # type: ignore[arg-type]
    message = str(raised.value)
    assert message.startswith("assert_recovers: argument 'seeds': ") and "fix: " in message, message
    assert "\n" not in message and ".yaml" not in message and "reproduces" not in message
    assert not (tmp_path / "out").exists()


def test_assert_recovers_still_takes_one_seed_and_ranges() -> None:
    assert len(assert_recovers("reconcile_and_reauthorize", scenarios=["lost_response"], seeds=1)) == 1
    assert len(assert_recovers("reconcile_and_reauthorize", scenarios=["lost_response"], seeds=range(0, 2))) == 2


def test_check_policy_names_the_seeds_field_before_writing_anything(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with pytest.raises(InputError, match=r"check_policy: field 'seeds' of CheckOptions: -1 is not a seed"):
        check_policy("retry_new_key", CheckOptions(scenarios=("lost_response",), seeds=(-1,), out=out))
    assert not out.exists()


@pytest.mark.parametrize("records", ["full", "compact"])
def test_a_case_of_a_users_policy_replays_from_any_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, records: str
) -> None:
    """``harness replay`` of a recovery.json (or a compact record) whose policy is the user's own
    (``package.module:attr``) failed outside the folder the run began in ("No module named ..."), though
    ``--resume`` finds the policy from anywhere. Replay now imports it as the resume does: from the folder the
    run's request says it began in."""
    home = tmp_path / "user project"
    home.mkdir()
    (home / "mine_replayed.py").write_text(
        "from policies.retry_new_key import POLICY as _RETRY\n\n"
        "class Blind:\n    name, revision = 'blind_replayed', '1'\n\n"
        "    def decide(self, situation):\n        return _RETRY.decide(situation)\n\n"
        "BLIND = Blind()\n"
    )
    monkeypatch.chdir(home)
    monkeypatch.syspath_prepend(str(home))  # as `python -m` puts the folder it is given in first
    monkeypatch.setitem(sys.modules, "mine_replayed", None)  # undone after the test: the module is let go
    del sys.modules["mine_replayed"]
    out = tmp_path / "run"
    args = ["--policy", "mine_replayed:BLIND", "--scenario", "lost_response", "--seed-count", "2"]
    main(["run", *args, "--out", str(out), "--tracking", "none", "--no-report", "--records", records, "--quiet"])
    file = next(out.rglob("recovery.json" if records == "full" else "records-*.jsonl.gz"))
    mark = "" if records == "full" else "#seed-1"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    # From another folder by its whole path, and from its own folder by its name alone (the run's folder is
    # found above the file as it lies, not above the words given).
    for where, case in ((elsewhere, f"{file}{mark}"), (file.parent, f"{file.name}{mark}")):
        again = subprocess.run(
            [sys.executable, "-m", "harness", "replay", case],
            cwd=where,
            capture_output=True,
            text=True,
            timeout=120,
            env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
        )
        assert again.returncode == 0, again.stderr
        assert "replayed: the same as recorded" in again.stdout
