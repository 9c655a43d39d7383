"""The command line: the default grid, single cases, exit statuses and one-line errors."""

from __future__ import annotations

import csv
import errno
import json
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from conftest import DEFAULT_RUN, Background, run_into

from harness.cli import main
from harness.model import OUTCOMES
from harness.policy import builtin_policy_names
from harness.scenario import list_scenarios, scenario_cases

ROOT = Path(__file__).resolve().parent.parent
#: For tests about the cases themselves: no per-cell lines, no Polyaxon runs.
FAST = ("--quiet", "--tracking", "none")


@pytest.mark.background_harness(*DEFAULT_RUN)
def test_default_grid_writes_every_case_and_a_summary(background_harness: Background) -> None:
    """With no options but --out, every policy x scenario x default seed is run, written and tabled.

    Over a minute of work: the command runs in the background from the start of the session, and this test runs
    last (tests/conftest.py, Background); test_tracking.py reads the same run."""
    run = background_harness.wait()
    assert run.returncode == 0, run.stderr[-3000:]
    out = run.out
    cases = sorted((out / "cases").rglob("recovery.json"))
    expected = len(builtin_policy_names()) * sum(len(scenario_cases(s)) for s in list_scenarios()) * 3
    assert len(cases) == expected
    # Offline tracking by default: one Polyaxon run per cell, pointing to the case files (no copy of them).
    assert len(list((out / "polyaxon" / "runs").iterdir())) == len(builtin_policy_names()) * len(list_scenarios())
    assert not list((out / "polyaxon").rglob("recovery.json"))
    rows = (out / "summary.csv").read_text().splitlines()
    assert len(rows) == expected + 1 and not (out / ".parts").exists()
    rows = list(csv.DictReader((out / "summary.csv").open()))
    assert len(rows) == expected
    assert {r["outcome"] for r in rows} <= set(OUTCOMES) - {"harness_error"}
    table = run.stdout
    assert "reconcile_and_reauthorize" in table and "uncertain_lookup" in table
    # The failing cells are named, worst first, each by its first case with its worst outcome, up to the cap.
    order = ("incorrect", "abandoned", "unresolved")
    by_cell: dict[tuple[str, str], list[dict[str, str]]] = {}
    for row in rows:
        by_cell.setdefault((row["policy"], row["scenario"]), []).append(row)
    expected_lines = []
    for cell_rows in by_cell.values():
        failed = [r for r in cell_rows if r["outcome"] in order]
        if failed:
            worst = min(failed, key=lambda r: (order.index(r["outcome"]), int(r["seed"])))
            expected_lines.append((order.index(worst["outcome"]), f"  {worst['outcome']:<13} {worst['reproduce']}"))
    assert {o for o, _ in expected_lines} >= {0, 1}  # incorrect and abandoned cells, at least
    named = table.split("worst outcome first):\n", 1)[1].splitlines()
    assert named[:20] == [line for _, line in sorted(expected_lines, key=lambda x: x[0])][:20]
    assert named[20].startswith(f"  ... and {len(expected_lines) - 20} more failing cells; ")
    report = json.loads(cases[0].read_text())
    assert report["reproduce"].startswith("python -m harness run --policy ")


def test_recovery_json_has_the_documented_keys_and_no_secret(tmp_path: Path) -> None:
    """recovery.json carries every documented key, and the approval token appears nowhere."""
    out = tmp_path / "run"
    assert run_into(out, "--policy", "retry_same_key", "--scenario", "lost_response", "--seed", "1") == 0
    text = (out / "cases/retry_same_key/lost_response/seed-1/recovery.json").read_text()
    report = json.loads(text)
    for key in (
        "schema_version",
        "scenario",
        "scenario_revision",
        "policy",
        "policy_revision",
        "seed",
        "task_id",
        "action_id",
        "attempts",
        "outcome",
        "verdict",
        "metrics",
        "unknown",
        "anomalies",
        "timeline",
        "reproduce",
    ):
        assert key in report, key
    assert report["attempts"] == ["a73-x1", "a73-x2"]
    assert "tok-17-secret" not in text and "token" not in text


def test_reproduce_command_reruns_the_same_case(tmp_path: Path) -> None:
    """Running a case's reproduce command gives the same recovery.json bytes."""
    first = tmp_path / "first"
    assert main(["run", "--out", str(first), *FAST, "--scenario", "cancel_inflight", "--seed", "2"]) == 0
    path = first / "cases/retry_new_key/cancel_inflight/seed-2/recovery.json"
    command = json.loads(path.read_text())["reproduce"].split()[3:]
    again = tmp_path / "again"
    assert main([*command, "--out", str(again), *FAST]) == 0
    assert (again / path.relative_to(first)).read_bytes() == path.read_bytes()


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--policy", "retry_forever"], "unknown policy 'retry_forever'"),
        (["--scenario", "lost_respons"], "unknown scenario 'lost_respons'; fix: did you mean lost_response? Else use"),
        (["--policy", "retry_new_kye"], "unknown policy 'retry_new_kye'; fix: did you mean retry_new_key? Else use"),
        (["--policy", "no.such.module:POLICY"], "cannot import"),
        (["--seed", "minus"], "is not a whole number"),
        # A line break typed into a value is shown, not obeyed: the error stays one line.
        (["--policy", "retry\nforever"], "unknown policy 'retry\\nforever'"),
        (["--seed", "1\r\n2"], "'1\\r\\n2' is not a whole number"),
        (["--scenario", "no/such\nfile.yaml"], "no/such\\nfile.yaml"),
    ],
)
def test_bad_input_is_one_line_exit_2_nothing_written(tmp_path: Path, args: list[str], needle: str) -> None:
    """Bad input gets a one-line error naming the problem and the fix, exit 2, and no output folder."""
    out = tmp_path / "run"
    proc = subprocess.run(
        [sys.executable, "-m", "harness", "run", "--out", str(out), *args], cwd=ROOT, capture_output=True, text=True
    )
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0] and "fix:" in lines[0]
    assert "Traceback" not in proc.stderr
    assert not out.exists()


def test_malformed_scenario_file_exit_2(tmp_path: Path) -> None:
    """A broken scenario file given by path is refused before anything runs."""
    bad = tmp_path / "broken.yaml"
    bad.write_text("name: broken\nrevision: [\n")
    out = tmp_path / "run"
    proc = subprocess.run(
        [sys.executable, "-m", "harness", "run", "--scenario", str(bad), "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2 and str(bad) in proc.stderr and not out.exists()


def test_non_empty_output_folder_is_refused(tmp_path: Path) -> None:
    """An existing non-empty --out is never mixed with a new run."""
    (tmp_path / "keep.txt").write_text("x")
    assert main(["run", "--out", str(tmp_path), "--quiet"]) == 2


def test_user_policy_by_module_attr(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A user's policy loads with package.module:attr, and a policy that raises is a recovery failure, not a crash."""
    (tmp_path / "mypolicies.py").write_text(
        "from harness.policy import LookUp\n"
        "class Crashy:\n"
        "    name = 'crashy'\n    revision = '0.1'\n"
        "    def decide(self, situation):\n        raise RuntimeError('bug in my policy ' + 'x' * 300)\n"
        "POLICY = Crashy()\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    out = tmp_path / "run"
    assert run_into(out, "--policy", "mypolicies:POLICY", "--scenario", "lost_response", "--seed", "1") == 0
    report = json.loads((out / "cases/crashy/lost_response/seed-1/recovery.json").read_text())
    assert report["policy_revision"] == "0.1" and report["outcome"] == "abandoned"
    assert any(e["event"] == "policy_error" and "bug in my policy" in e["data"]["error"] for e in report["timeline"])
    assert "mypolicies:POLICY" in report["reproduce"]
    # summary.csv says so too: its error column, one line; a policy that did not fail leaves it empty.
    (row,) = csv.DictReader((out / "summary.csv").open())
    # All of it, not its first 200 characters, and where the policy raised it (line 6 of the module).
    assert row["error"] == "RuntimeError: bug in my policy " + "x" * 300 + " (at line 6 of mypolicies, in decide)"


def test_list_shows_policies_scenarios_and_boundaries(capsys: pytest.CaptureFixture[str]) -> None:
    """`harness list` names every policy, scenario and fault boundary."""
    assert main(["list"]) == 0
    text = capsys.readouterr().out
    for name in [*builtin_policy_names(), *list_scenarios(), "response_lost", "lookup_unavailable"]:
        assert name in text
    # The boundaries' docstrings without their markup: "later than usual" of delay_s, not ``delay_s``.
    assert "reaches the destination delay_s later" in text and "``" not in text
    # Each scenario with the first sentence of its description, on the line after its name.
    lines = text.splitlines()
    for name in list_scenarios():
        (_, scenario), *_ = scenario_cases(name)
        at = next(i for i, line in enumerate(lines) if line.startswith(f"  {name} (revision {scenario.revision}"))
        said = lines[at + 1].strip()
        words = " ".join(scenario.description.split())
        assert said and (words.startswith(said) or words.startswith(said.removesuffix("...")))


def test_a_first_sentence_ends_at_a_full_stop_outside_quotations() -> None:
    from harness.cli import _first_sentence

    assert _first_sentence('Seed 002, "a new UUID by default. Sending again ... does not": a call. More.') == (
        'Seed 002, "a new UUID by default. Sending again ... does not": a call.'
    )
    assert _first_sentence("The reply is lost. Then it recovers.") == "The reply is lost."
    assert _first_sentence("Waits... then stops. Done.") == "Waits... then stops."  # an ellipsis goes on
    assert _first_sentence('A 3.5" drive fails. Then it recovers.') == 'A 3.5" drive fails.'  # a lone quote
    assert _first_sentence("x" * 250) == "x" * 197 + "..."
    # A long first sentence is cut at a word, not inside one ("...until a ve...").
    assert _first_sentence("word " * 60 + "end.") == ("word " * 39).rstrip() + "..."


def test_schema_export_matches_the_report_model(tmp_path: Path) -> None:
    """The exported JSON Schema requires the report's keys, and a written recovery.json validates against it."""
    schema_path = tmp_path / "schema.json"
    assert main(["schema", "--out", str(schema_path)]) == 0
    schema = json.loads(schema_path.read_text())
    out = tmp_path / "run"
    main(["run", "--out", str(out), *FAST, "--scenario", "uncertain_lookup", "--seed", "1"])
    for path in out.rglob("recovery.json"):
        jsonschema.validate(json.loads(path.read_text()), schema)
    assert {"outcome", "metrics", "timeline", "reproduce"} <= set(schema["required"])


def test_schema_out_writes_over_a_schema_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`schema --out` wrote over any file (a run's summary.csv, say) and said nothing; it writes over an earlier
    schema, and refuses anything else in one line, leaving it as it was."""
    other = tmp_path / "summary.csv"
    other.write_text("policy,scenario\n")
    assert main(["schema", "--out", str(other)]) == 2
    assert other.read_text() == "policy,scenario\n"
    assert "exists and is not a schema of recovery.json; fix:" in capsys.readouterr().err
    schema = tmp_path / "schema.json"
    schema.write_text('{"title": "CaseReport", "properties": {}}')
    assert main(["schema", "--out", str(schema)]) == 0
    assert json.loads(schema.read_text()) == json.loads((ROOT / "reports" / "recovery.schema.json").read_text())


def test_committed_schema_is_current() -> None:
    """reports/recovery.schema.json is the schema the code exports (regenerate with `harness schema --out`)."""
    from harness.present.shape import recovery_schema

    committed = json.loads((ROOT / "reports" / "recovery.schema.json").read_text())
    assert committed == recovery_schema()


@pytest.mark.background_harness(*DEFAULT_RUN)
def test_every_kind_of_entry_the_default_grid_writes_validates(background_harness: Background) -> None:
    """The schema accepts what the harness writes: of the default grid's cases, the fewest files that hold every
    (actor, event, data keys) its timelines show, each validated whole (all 1,134 would take 20 s)."""
    from harness.present.shape import recovery_schema

    run = background_harness.wait()
    assert run.returncode == 0, run.stderr[-3000:]
    validator = jsonschema.Draft202012Validator(recovery_schema())
    seen: set[tuple[str, str, tuple[str, ...]]] = set()
    chosen = 0
    for path in sorted((run.out / "cases").rglob("recovery.json")):
        report = json.loads(path.read_text())
        shapes = {(e["actor"], e["event"], tuple(sorted(e["data"]))) for e in report["timeline"]}
        if shapes <= seen:
            continue
        seen |= shapes
        chosen += 1
        assert not list(validator.iter_errors(report)), path
    assert chosen >= 10 and len({(a, e) for a, e, _ in seen}) >= 40


def test_a_case_whose_end_cut_something_off_validates(tmp_path: Path) -> None:
    """The records the end of a case makes (a dispatch still on its way, an operation not yet applied) are in
    the schema: no shipped case has them, so the default grid's files do not show it."""
    from harness.present.shape import recovery_schema
    from harness.run.case import run_case
    from harness.run.plan import load_grid

    validator = jsonschema.Draft202012Validator(recovery_schema())
    text = (ROOT / "scenarios" / "lost_response.yaml").read_text().replace("name: lost_response", "name: cut")
    for fault in ("request_delayed", "apply_delayed"):
        path = tmp_path / f"cut-{fault}" / "cut.yaml"
        path.parent.mkdir()
        late = "{boundary: response_lost, nth: 1}"
        path.write_text(text.replace(late, f"{{boundary: {fault}, nth: 1, delay_s: 5000.0}}"))
        (case,) = load_grid(["retry_same_key"], [str(path)], [1]).cases
        report = json.loads(run_case(case)[0].model_dump_json())
        assert report["timeline"][-1]["event"] in ("still_in_flight", "still_pending"), report["timeline"][-1]
        assert not list(validator.iter_errors(report))


def test_the_schema_refuses_what_the_harness_would_not_read(tmp_path: Path) -> None:
    """A schema that calls a file valid that the loader skips or the report cannot rebuild is no help to a user
    who validates saved cases: another schema version, a metric the harness has no name for, a metric of the
    wrong type, an event its actor never records, an entry's data with a key more or less, a missing key. A
    case the harness could not judge (no metrics, why under "*") is valid."""
    from harness.present.shape import recovery_schema
    from harness.run.case import failed_report, run_case
    from harness.run.plan import load_grid

    validator = jsonschema.Draft202012Validator(recovery_schema())
    (case,) = load_grid(["reconcile_and_reauthorize"], ["lost_response"], [1]).cases
    good = json.loads(run_case(case)[0].model_dump_json())
    assert not list(validator.iter_errors(good))
    assert not list(validator.iter_errors(json.loads(failed_report(case, "boom").model_dump_json())))
    send = next(i for i, e in enumerate(good["timeline"]) if e["event"] == "send" and e["data"]["kind"] == "dispatch")

    def broken(change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
        report = json.loads(json.dumps(good))
        change(report)
        return report

    for name, change in {
        "schema_version": lambda r: r.update(schema_version=7),
        "unknown metric": lambda r: r["metrics"].update(bogus=1),
        "metric type": lambda r: r["metrics"].update(duplicate_effects="1"),
        "unknown property": lambda r: r["checks"].update(bogus="true"),
        "unknown event": lambda r: r["timeline"][0].update(event="bogus"),
        "another actor's event": lambda r: r["timeline"][send].update(actor="worker"),
        "a data key more": lambda r: r["timeline"][send]["data"].update(extra=1),
        "a data key less": lambda r: r["timeline"][send]["data"].pop("digest"),
        "another kind's keys": lambda r: r["timeline"][send]["data"].update(kind="lookup"),
        "missing error": lambda r: r.pop("error"),
    }.items():
        assert list(validator.iter_errors(broken(change))), name


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["run", "--policy", ":"], "expected package.module:attr"),
        (["run", "--policy", "..x:y"], "expected package.module:attr"),
        # A file's path for a module's name, and a module not on the path: the fix says which.
        (["run", "--policy", "sc/my_pol:P"], "file's path, not a module's name; fix: name the module with dots"),
        (["run", "--policy", "./my_pol.py:P"], "as in my_pol:P"),
        (["run", "--policy", "no_such_pol.py:P"], "fix: name the module without '.py', as in no_such_pol:P"),
        (["run", "--policy", "no_such_pol:P"], "fix: run from the folder that holds 'no_such_pol', or put that"),
        (["run", "--seed-count", "100000000"], "outside 1..10000"),
        (["run", "--project", "", "--policy", "stop_on_timeout"], "not a Polyaxon project name"),
        (["run", "--policy", "stop_on_timeout", "--polyaxonfile", "polyaxonfiles/grid.yaml"], "not both"),
    ],
)
def test_more_bad_input_is_one_line(args: list[str], needle: str, tmp_path: Path) -> None:
    """Odd policy specs, huge counts, an empty project, conflicting options: one line, exit 2, nothing written."""
    out = tmp_path / "run"
    proc = subprocess.run(
        [sys.executable, "-m", "harness", *args, "--out", str(out)], cwd=ROOT, capture_output=True, text=True
    )
    assert proc.returncode == 2 and needle in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert not out.exists()


def test_a_path_that_is_empty_or_of_the_wrong_kind_is_named_as_such(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An empty --out is not the current folder; a file given to --resume, or a folder to replay, is said to be
    one (not "no such")."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "afile").write_text("x")
    (tmp_path / "adir").mkdir()
    for args, said in [
        (["run", "--out", "", "--scenario", "lost_response"], "argument --out: an empty path"),
        (["replay", ""], "argument CASE: an empty path"),
        (["run", "--resume", "afile"], "afile: a file, not a folder; fix: give a folder written by 'harness run'"),
        (["replay", "adir"], "adir: a folder, not a file; fix: give a recovery.json"),
    ]:
        try:
            code = main(args)
        except SystemExit as stopped:  # argparse's own refusal
            code = int(stopped.code or 0)
        assert code == 2
        err = capsys.readouterr().err
        assert said in err and len(err.strip().splitlines()) == 1, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["adir", "afile"]


def test_out_that_is_a_file_or_under_one(tmp_path: Path) -> None:
    """--out naming a file, or a folder under a file, is refused in one line."""
    afile = tmp_path / "afile"
    afile.write_text("x")
    for out in (afile, afile / "sub"):
        proc = subprocess.run(
            [sys.executable, "-m", "harness", "run", "--policy", "stop_on_timeout", "--out", str(out)],
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
        assert proc.returncode == 2 and "--out" in proc.stderr and "Traceback" not in proc.stderr
    assert main(["schema", "--out", str(tmp_path)]) == 2


def test_runs_started_in_the_same_second_get_their_own_folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two default output folders made in the same second are distinct, and both are created empty."""
    from harness.run.grid import new_out

    monkeypatch.chdir(tmp_path)
    first, second = new_out(None), new_out(None)
    assert (
        first != second and first.parent == second.parent == tmp_path / "reports" / "runs"
    )  # absolute: printed, it runs anywhere
    assert first.is_dir() and second.is_dir()


def test_view_refuses_bad_port_and_folders_without_runs(tmp_path: Path) -> None:
    """`harness view` takes any TCP port, refuses one out of range, and a folder with no Polyaxon runs."""
    proc = subprocess.run(
        [sys.executable, "-m", "harness", "view", str(tmp_path), "--port", "70000"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2 and "outside 1..65535" in proc.stderr
    proc = subprocess.run(
        [sys.executable, "-m", "harness", "view", str(tmp_path), "--port", "18555"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2 and "no Polyaxon runs" in proc.stderr and "Traceback" not in proc.stderr
    assert "a run tracked offline" in proc.stderr


def test_view_says_a_port_it_may_not_listen_on_is_not_in_use(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A port below 1024 without the privilege to listen there was said to be "in use"."""
    import socket

    import harness.plx.viewer as viewer

    class Refused(socket.socket):
        def bind(self, address: object) -> None:
            raise OSError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(viewer.socket, "socket", Refused)
    (tmp_path / "polyaxon" / "runs").mkdir(parents=True)
    assert main(["view", str(tmp_path), "--port", "80"]) == 2
    assert capsys.readouterr().err == (
        "harness: --port 80: cannot listen on it (Permission denied); fix: give a port of 1024 or more\n"
    )


def test_view_refuses_a_port_in_use(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """On a port another program listens on (another `harness view`, over another run), the viewer failed to bind
    it, yet view said "ready" at that address, where the other run's pages were served, and exited 0."""
    import socket

    (tmp_path / "polyaxon" / "runs").mkdir(parents=True)
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        port = other.getsockname()[1]
        assert main(["view", str(tmp_path), "--port", str(port)]) == 2
    err = capsys.readouterr().err
    assert (
        err
        == f"harness: --port {port}: 127.0.0.1:{port} is in use (Address already in use); fix: give another --port, or stop what listens there\n"
    )


def test_progress_is_a_line_per_piece_saying_which_seeds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A cell split over two processes prints two lines: each names its seeds and which piece of the cell it is,
    so that they do not read as two cells; a cell in one piece prints one line without them."""
    split = ["--seed-count", "200", "--concurrency", "2", "--force-concurrency"]  # two pieces of PIECE_MIN seeds
    for args, out in ((split, "split"), (["--seed-count", "3"], "whole")):
        code = main(["run", "--policy", "retry_same_key", "--scenario", "lost_response", *args, "--tracking", "none",
                     "--no-report", "--out", str(tmp_path / out)])  # fmt: skip
        assert code == 0
        lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("[")]
        if out == "split":
            # Pieces finish in either order: the counter counts finished pieces.
            assert [line[:6] for line in lines] == ["[1/2] ", "[2/2] "]
            assert sorted(line[6:] for line in lines) == [
                "retry_same_key x lost_response (100 seeds, 1..100, piece 1 of 2): correct 100",
                "retry_same_key x lost_response (100 seeds, 101..200, piece 2 of 2): correct 100",
            ]
        else:
            assert lines == ["[1/1] retry_same_key x lost_response: correct 3"]


@pytest.mark.parametrize(
    ("given", "named"),
    [
        (["--tracking", "none"], "--tracking"),
        (["--tracking", "offline"], "--tracking"),  # the default, given: still not the run's to change
        (["--project", "me/other"], "--project"),
        (["--force-concurrency"], "--force-concurrency"),  # alone: the run's own concurrency, changed by nothing
        (["--concurrency", "1", "--records", "auto"], "--records"),  # --concurrency is the resume's to give
        (["--concurrency", "1", "--force-concurrency", "--seed", "1"], "--seed"),
        (["--records", "auto"], "--records"),
        (["--case-timeout", "60"], "--case-timeout"),
        (["--seed-count", "3", "--policy", "stop_on_timeout"], "--seed-count, --policy"),
    ],
)
def test_resume_refuses_every_option_its_manifest_decides(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], given: list[str], named: str
) -> None:
    """Only --no-report, --junit, --quiet and --concurrency (with --force-concurrency) may be given with --resume;
    any other option given, whatever its value, is refused in one line naming it (it would be silently ignored
    otherwise)."""
    assert main(["run", "--resume", str(tmp_path), *given]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"harness: --resume takes its cells and options from the run's manifest, not {named}; "
        f"fix: drop {'them' if ', ' in named else 'it'}\n"
    )


def test_resume_takes_no_report_junit_and_quiet(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    assert main(["run", "--policy", "stop_on_timeout", "--scenario", "lost_response", "--seed-count", "1",
                 "--tracking", "none", "--no-report", "--quiet", "--out", str(out)]) == 0  # fmt: skip
    capsys.readouterr()
    junit = tmp_path / "junit.xml"
    assert main(["run", "--resume", str(out), "--no-report", "--quiet", "--junit", str(junit)]) == 0
    said = capsys.readouterr()
    assert said.out == f"nothing to resume: the run in {out} is complete\njunit: {junit}\n" and said.err == ""
    assert junit.is_file()


def test_a_complete_run_missing_its_summary_says_so_when_resumed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A complete run whose summary.csv was deleted said only "nothing to resume: ... complete": a warning names the
    missing file and the fix (a complete run keeps no parts to write it from again); the exit status is the run's."""
    out = tmp_path / "run"
    assert main(["run", "--policy", "stop_on_timeout", "--scenario", "lost_response", "--seed-count", "1",
                 "--tracking", "none", "--no-report", "--quiet", "--out", str(out)]) == 0  # fmt: skip
    capsys.readouterr()
    (out / "summary.csv").unlink()
    assert main(["run", "--resume", str(out)]) == 0
    said = capsys.readouterr()
    assert said.out == f"nothing to resume: the run in {out} is complete\n"
    assert said.err == (
        f"harness: warning: {out / 'summary.csv'} is missing (deleted since the run completed), and a complete run "
        "is not run again; fix: run its grid anew with another --out\n"
    )


def test_a_complete_run_resumed_exits_as_it_ended(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A complete run resumed (with --junit, as a CI script retries) said "nothing to resume" and exited 0, whatever
    the run's own status: a run that ended 4 (a declared fault fired in no case) passed its CI on the retry. It
    exits as the run did, and says why; a run.json that is not one is refused in one line."""
    out = tmp_path / "run"
    grid = ["--policy", "retry_same_key", "--scenario", "uncertain_lookup", "--seed-count", "1"]
    assert main(["run", *grid, "--tracking", "none", "--no-report", "--quiet", "--out", str(out)]) == 4
    capsys.readouterr()
    junit = tmp_path / "junit.xml"
    assert main(["run", "--resume", str(out), "--junit", str(junit)]) == 4
    assert capsys.readouterr().out == (
        f"nothing to resume: the run in {out} is complete; a fault or operator event it declares fired in no case "
        f"(coverage.json), so it exits 4 again\njunit: {junit}\n"
    )
    (out / "run.json").write_text("[]")
    assert main(["run", "--resume", str(out)]) == 2
    assert "run.json: not a run record the harness wrote (AttributeError); fix:" in capsys.readouterr().err


def test_a_run_stopped_while_writing_its_report_resumes_to_its_report_and_junit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stopped after run.json, while drawing report.html: it said it was resumable, and --resume then said
    "nothing to resume", leaving no report, no JUnit file and the pieces' parts for good. It resumes to all of
    them; and a complete run whose JUnit file (asked for when it began) is missing gets it written."""
    import harness.present.html_report as html_report

    out, junit = tmp_path / "run", tmp_path / "junit.xml"
    words = ["run", "--policy", "stop_on_timeout", "--scenario", "lost_response", "--seed-count", "2",
             "--tracking", "none", "--quiet", "--junit", str(junit), "--out", str(out)]  # fmt: skip

    def stopped(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    with monkeypatch.context() as patched:
        patched.setattr(html_report, "write_report", stopped)
        assert main(words) == 130
    assert (out / "run.json").is_file() and (out / ".parts").is_dir()
    assert not (out / "report.html").exists() and not junit.exists()
    capsys.readouterr()
    assert main(["run", "--resume", str(out), "--quiet"]) == 0
    assert (out / "report.html").is_file() and junit.is_file() and not (out / ".parts").exists()
    junit.unlink()  # as a run killed after its report, before its JUnit file
    assert main(["run", "--resume", str(out), "--quiet"]) == 0
    assert capsys.readouterr().out.endswith(f"is complete\njunit: {junit}\n") and junit.is_file()


def test_report_says_which_files_it_left_out(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`harness report` of a folder with an unreadable recovery.json writes the page of the others and says on
    stderr, in one line, how many files it left out and the first with why (the page lists them all)."""
    out = tmp_path / "run"
    assert main(["run", "--policy", "stop_on_timeout", "--scenario", "lost_response", "--seed-count", "1",
                 "--tracking", "none", "--no-report", "--quiet", "--out", str(out)]) == 0  # fmt: skip
    broken = out / "cases" / "stop_on_timeout" / "lost_response" / "seed-2" / "recovery.json"
    broken.parent.mkdir()
    broken.write_text('{"broken": ', encoding="utf-8")
    capsys.readouterr()
    assert main(["report", str(out)]) == 0
    captured = capsys.readouterr()
    assert captured.out == f"{out / 'report.html'}\n"
    said = [line for line in captured.err.splitlines() if line.startswith("harness: ")]
    assert len(said) == 1 and said[0].startswith(
        f"harness: 1 file left out, unreadable or of another schema (the report lists them): {broken}: malformed: JSONDecodeError: Expecting value"
    )
    assert str(broken) in (out / "report.html").read_text(encoding="utf-8")


def test_progress_names_the_cell_as_the_table_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A progress line names the policy and the scenario by their own names, as the outcome table below it does,
    not by the specs given (a module:attr, a scenario's variant)."""
    (tmp_path / "mypolicies.py").write_text(
        "from harness.policy import Stop\n"
        "class Quitter:\n"
        "    name = 'quitter'\n    revision = '1'\n"
        "    def decide(self, situation):\n        return Stop()\n"
        "POLICY = Quitter()\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    args = ["run", "--policy", "mypolicies:POLICY", "--scenario", "connector_crash_points@after_effect", "--seed", "1"]
    assert main([*args, "--tracking", "none", "--no-report", "--out", str(tmp_path / "run")]) == 0
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("[")]
    assert len(lines) == 1 and lines[0].startswith("[1/1] quitter x connector_crash_points-after_effect: "), lines


def test_a_long_report_says_how_far_it_has_read(capsys: pytest.CaptureFixture[str]) -> None:
    """While a report reads a run's cases back: a line every few seconds, then one when every file is read; a
    report that reads in less says nothing."""
    from harness.cli import _ReadingLines
    from harness.present.analysis import Reading

    lines = _ReadingLines(every_s=5.0)
    for seconds, files_read in ((1.0, 1), (6.0, 2), (7.0, 3), (8.4, 4)):
        lines(Reading(files_read, 4, 5000 * files_read, seconds))
    assert capsys.readouterr().err.splitlines() == [
        "harness: report: read 2 of 4 files, 10,000 cases, in 6 s",
        "harness: report: read 4 of 4 files, 20,000 cases, in 8 s; writing report.html",
    ]
    quick = _ReadingLines(every_s=5.0)
    for files_read in (1, 2):
        quick(Reading(files_read, 2, 3 * files_read, 0.1 * files_read))
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("how", ["report", "report --out", "run", "resume"])
def test_report_progress_reaches_every_command_that_writes_a_report(
    how: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`harness report`, a run and a resumed run that write report.html all say how far reading the cases has
    got (here after every file: the interval set to zero)."""
    import harness.cli

    monkeypatch.setattr(harness.cli, "READING_EVERY_S", 0.0)
    out = tmp_path / "run"
    grid = ["--policy", "stop_on_timeout", "--scenario", "lost_response", "--seed-count", "2", "--tracking", "none"]
    if how == "run":
        command = ["run", *grid, "--out", str(out)]
    else:
        assert main(["run", *grid, "--quiet", "--out", str(out)]) == 0
        if how == "resume":
            (out / "run.json").unlink()  # as if stopped before its end: the resumed run writes the report again
            command = ["run", "--resume", str(out)]
        elif how == "report --out":
            command = ["report", str(out), "--out", str(tmp_path / "mine.html")]
        else:
            command = ["report", str(out)]
    capsys.readouterr()
    assert main(command) == 0
    said = [line for line in capsys.readouterr().err.splitlines() if line.startswith("harness: report: ")]
    page = "mine.html" if how == "report --out" else "report.html"  # the page it writes, by its name
    assert [re.sub(r"in \d+ s", "in N s", line) for line in said] == [
        "harness: report: read 1 of 2 files, 1 case, in N s",
        f"harness: report: read 2 of 2 files, 2 cases, in N s; writing {page}",
    ]


def test_a_quiet_run_says_nothing_of_reading_its_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """--quiet: the report is written, and nothing is said of reading the cases back, even at every file."""
    import harness.cli

    monkeypatch.setattr(harness.cli, "READING_EVERY_S", 0.0)
    out = tmp_path / "run"
    assert main(["run", "--policy", "stop_on_timeout", "--scenario", "lost_response", "--seed-count", "2",
                 "--tracking", "none", "--quiet", "--out", str(out)]) == 0  # fmt: skip
    assert (out / "report.html").is_file() and "report: read" not in capsys.readouterr().err


@pytest.mark.parametrize(
    ("error", "said"),
    [
        (
            OSError(errno.ENOSPC, "No space left on device", "/full/schema.json"),
            "harness: cannot write a file (/full/schema.json): No space left on device; fix: make room or give a "
            "writable folder, then run the command again",
        ),
        (OSError(errno.EROFS, "Read-only file system"), "harness: cannot write a file: Read-only file system; fix:"),
        # An immutable folder (chattr +i) refuses even root: it was "internal error: PermissionError ... a bug".
        (
            PermissionError(errno.EPERM, "Operation not permitted", "/frozen/.heatmap.png.1.tmp"),
            "harness: cannot write a file (/frozen/.heatmap.png.1.tmp): Operation not permitted; fix: make room",
        ),
        (FileNotFoundError(errno.ENOENT, "No such file or directory", "/gone"), "harness: internal error:"),
    ],
)
def test_a_file_the_system_will_not_write_is_one_line_not_a_bug(
    error: OSError, said: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Any command that meets a full disk or a read-only one says so in one line, exit 1; it was "internal
    error: OSError ... this is a bug of the harness". A missing file may well be a bug, and is still said so."""
    import harness.run.files as files

    def refused(path: Path, text: str) -> None:
        raise error

    monkeypatch.setattr(files, "write_atomic", refused)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    assert main(["schema", "--out", str(tmp_path / "schema.json")]) == 1
    err = capsys.readouterr().err
    assert err.startswith(said) and len(err.splitlines()) == 1


def test_a_resume_interrupted_before_its_cells_ran_says_the_folder_is_still_resumable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Ctrl-C in a resume's first moments (while it loads and checks its inputs) printed only "interrupted": the
    folder is as resumable as it was, and the line says how."""
    import harness.run.grid as grid

    out = tmp_path / "run"
    args = ["--policy", "stop_on_timeout", "--scenario", "lost_response", "--seed-count", "1", "--tracking", "none"]
    assert main(["run", *args, "--no-report", "--quiet", "--out", str(out)]) == 0
    (out / "run.json").unlink()  # as if stopped before it was written

    def stopped(*_: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(grid, "load_grid", stopped)
    capsys.readouterr()
    assert main(["run", "--resume", str(out), "--quiet"]) == 130
    assert capsys.readouterr().err == (
        f"harness: interrupted; {out} is resumable: python -m harness run --resume {out}\n"
    )
    monkeypatch.undo()
    assert main(["run", "--resume", str(out), "--quiet", "--no-report"]) == 0
