"""Refusals a user meets at the command line: no abbreviated options, a --junit that would destroy another file,
a report of a folder a run is still writing, and the pytest plugin's --harness-out that is not empty. Each is
one line on stderr, exit 2 (4 for pytest's own usage errors), and nothing written."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.cli import main
from harness.run.folder import claim, in_use

ONE_CASE = ["--policy", "reconcile_and_reauthorize", "--scenario", "lost_response", "--seed-count", "1"]


def _refused(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    """Run the command line; return its one stderr line, having checked it exited 2 and printed nothing else."""
    try:
        status = main(argv)
    except SystemExit as exc:  # argparse's refusals leave through its exit
        status = exc.code  # type: ignore[assignment]
    out, err = capsys.readouterr()
    assert status == 2 and out == "", (status, out, err)
    assert len(err.splitlines()) == 1, err
    return err


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        # `check` has no --seed: it must not quietly become --seed-count (five seeds, not seed 5).
        (["check", "--policy", "retry_new_key", "--seed", "5"], "unrecognized arguments: --seed 5"),
        (["run", "--seed-c", "2"], "unrecognized arguments: --seed-c 2"),
        (["explore", "--seed", "2"], "unrecognized arguments: --seed 2"),
    ],
)
def test_an_abbreviated_option_is_refused_by_its_command(
    capsys: pytest.CaptureFixture[str], argv: list[str], says: str
) -> None:
    err = _refused(capsys, argv)
    assert says in err and f"fix: see 'python -m harness {argv[0]} --help'" in err, err


@pytest.mark.parametrize("value", ["-1/2", "-0/2"])
def test_a_negative_shard_is_refused_for_what_it_is(capsys: pytest.CaptureFixture[str], value: str) -> None:
    """argparse took '-1/2' for an option and said only that --shard expected one argument."""
    err = _refused(capsys, ["explore", "--shard", value, "--policy", "retry_new_key"])
    assert f"shard '{value}' is not I/N with 0 <= I < N" in err


@pytest.mark.parametrize(
    ("value", "says"),
    [("0", "count 0 is outside 1..10000"), ("-2", "count -2 is outside"), ("two", "count 'two' is not a whole number")],
)
def test_a_resume_refuses_a_concurrency_that_is_no_count_of_processes(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, value: str, says: str
) -> None:
    """--concurrency given with --resume is checked as a new run's is: one line naming it, nothing written."""
    err = _refused(capsys, ["run", "--resume", str(tmp_path / "run"), "--concurrency", value])
    assert err.startswith(f"harness: argument --concurrency: {says}") and "fix: see" in err, err
    assert not (tmp_path / "run").exists()


def test_run_refuses_a_junit_that_would_replace_one_of_its_own_files(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = tmp_path / "run"
    argv = ["run", *ONE_CASE, "--tracking", "none", "--no-report", "--out", str(out)]
    err = _refused(capsys, [*argv, "--junit", str(out / "summary.csv")])
    assert f"--junit {out / 'summary.csv'}: inside the run's folder" in err
    assert f"fix: give a name ending in .xml, such as {out / 'junit.xml'}" in err
    assert not out.exists()
    # A name ending in .xml there is fine: the run writes no such file.
    assert main([*argv, "--junit", str(out / "junit.xml")]) == 0
    assert (out / "summary.csv").read_text(encoding="utf-8").startswith("policy,")
    assert b"<testsuite" in (out / "junit.xml").read_bytes()


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("summary.csv", "policy,scenario\n"),
        # Only the root element counts: a file that mentions one is not a report.
        ("notes.md", "Our reporter reads each <testsuite> element; keep this file.\n"),
    ],
)
def test_a_junit_over_a_file_that_is_not_a_junit_report_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str, text: str
) -> None:
    other = tmp_path / name
    other.write_text(text, encoding="utf-8")
    err = _refused(capsys, ["check", *ONE_CASE, "--junit", str(other)])
    assert f"--junit {other}: exists and is not a JUnit report; fix:" in err
    assert other.read_text(encoding="utf-8") == text
    # A JUnit report from an earlier run is written over, as CI jobs that keep one path expect.
    earlier = tmp_path / "junit.xml"
    earlier.write_text('<?xml version="1.0"?>\n<testsuites name="old"/>\n', encoding="utf-8")
    assert main(["check", *ONE_CASE, "--junit", str(earlier)]) == 0
    assert 'name="old"' not in earlier.read_text(encoding="utf-8")
    capsys.readouterr()


def test_report_refuses_a_folder_a_run_is_still_writing(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert main(["run", *ONE_CASE, "--tracking", "none", "--no-report", "--quiet", "--out", str(out)]) == 0
    capsys.readouterr()
    assert not in_use(out)
    hold = claim(out, fresh=False)  # as the run that writes it holds it
    try:
        assert in_use(out)
        err = _refused(capsys, ["report", str(out)])
        assert f"{out}: a harness run is still writing it; fix: wait for that run to end" in err
        assert not (out / "report.html").exists()
    finally:
        hold.release()
    assert not in_use(out)
    assert main(["report", str(out)]) == 0
    assert (out / "report.html").is_file()
    capsys.readouterr()


def test_in_use_writes_nothing_in_a_folder_no_run_ever_held(tmp_path: Path) -> None:
    assert not in_use(tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_the_pytest_plugin_refuses_a_harness_out_that_is_not_empty(tmp_path: Path) -> None:
    out = tmp_path / "repros"
    out.mkdir()
    (out / "kept.txt").write_text("someone's file\n", encoding="utf-8")
    plugin = ["--harness-policy", "retry_new_key", "--harness-scenario", "lost_response", "--harness-seed-count", "1"]
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *plugin, "--harness-out", str(out)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert f"--harness-out {out}: is not empty; fix: give a new or empty folder" in proc.stderr
    assert sorted(p.name for p in out.iterdir()) == ["kept.txt"]


def test_a_junit_that_is_the_run_folder_itself_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """`--out X.xml --junit X.xml` ended after the whole run in an internal error (a folder where the file goes)."""
    out = tmp_path / "x.xml"
    err = _refused(capsys, ["check", *ONE_CASE, "--out", str(out), "--junit", str(out)])
    assert f"--junit {out}: is the run's folder (--out {out}); fix: give another file name" in err
    assert not out.exists()


def test_an_exploration_holds_its_folder_while_it_runs_and_leaves_no_lock(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Two explorations into one --out both passed the empty-folder check and wrote at the end: the later
    explore.json listed only its own policies. An exploration now holds the folder from its start, as a run does,
    and leaves only its own files."""
    import json
    import time

    out = tmp_path / "explore"
    explore = ["explore", "--scenario", "lost_response", "--depth", "2", "--tracking", "none", "--quiet"]
    first = subprocess.Popen(
        [sys.executable, "-m", "harness", *explore, "--policy", "retry_new_key", "--out", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not (out / ".lock").exists() and first.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert first.poll() is None and (out / ".lock").exists(), "the exploration took no hold of its folder"
        _refused(capsys, [*explore, "--policy", "retry_same_key", "--out", str(out)])
    finally:
        _, err = first.communicate(timeout=300)
    assert first.returncode == 1, err  # retry_new_key has findings
    assert json.loads((out / "explore.json").read_text())["policies"] == ["retry_new_key"]
    assert not (out / ".lock").exists()


def test_a_folder_for_a_scenario_and_a_long_policy_name_say_what_to_give(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--scenario scen`, a folder of the user's, was an unknown scenario with the list of shipped ones; a policy
    name of 65 characters was 'not safe' without the limit. And a run refused for its input, without --out, left
    an empty reports/runs/ behind in the folder it was started from."""
    (tmp_path / "scen").mkdir()
    (tmp_path / "long.py").write_text(
        "from harness.policy import Stop\n"
        "class P:\n    name, revision = 'a' * 65, '1'\n    def decide(self, situation):\n        return Stop()\n"
        "POLICY = P()\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    said = _refused(capsys, ["run", "--policy", "retry_new_key", "--scenario", "scen", "--tracking", "none"])
    assert "scenario 'scen': is a folder, not a scenario; fix: give one of its files, as scen/<name>.yaml" in said
    said = _refused(capsys, ["check", "--policy", "long:POLICY", "--scenario", "lost_response"])
    assert "fix: use 1 to 64 lower case letters, digits" in said
    assert sorted(p.name for p in tmp_path.iterdir()) == ["long.py", "scen"]


def test_an_out_that_holds_a_run_says_what_to_do_with_it(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """`run --out` of a folder that holds something: a run stopped before its end is pointed to its resume command
    (the same command given again said only "is not empty; give a new or empty folder"), a complete one is not,
    one a run is writing now says so (with --resume too, whose fix cannot be another --out), anything else is
    "not empty". One line each, exit 2, nothing written."""
    out = tmp_path / "run"
    again = ["run", *ONE_CASE, "--tracking", "none", "--no-report", "--quiet", "--out", str(out)]
    assert main(again) == 0
    capsys.readouterr()
    assert f"--out {out}: holds a complete run; fix: give a new or empty folder" in _refused(capsys, again)
    (out / "run.json").unlink()  # as if stopped just before its end
    before = sorted(p.name for p in out.iterdir())
    said = _refused(capsys, again)
    assert f"--out {out}: holds a run that was stopped before its end; fix: complete it with " in said
    assert f"python -m harness run --resume {out}, or give a new or empty folder" in said
    hold = claim(out, fresh=False)  # as a run writing it holds it
    try:
        said = _refused(capsys, again)
        assert f"output folder {out} is in use by another harness run; fix: wait for it to end, or pass" in said
        said = _refused(capsys, ["run", "--resume", str(out)])
        assert said.rstrip().endswith(
            "is in use by another harness run; fix: wait for it to end, then resume it only if it stopped short (one that ends is whole)"
        )
    finally:
        hold.release()
    assert sorted(p.name for p in out.iterdir()) == before
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    said = _refused(capsys, [*again[:-1], str(other)])
    assert f"--out {other}: is not empty; fix: give a new or empty folder" in said
    assert [p.name for p in other.iterdir()] == ["notes.txt"]


def test_a_python_without_the_harnesss_packages_is_told_which_python_to_run(tmp_path: Path) -> None:
    """A printed ``python -m harness ...`` pasted where ``python`` is not the venv's: the harness's own modules
    import, simpy does not. That is this Python's, not a bug of the harness ("internal error ... report it"):
    one line naming the missing package, this interpreter and the fix, exit 2, nothing written."""
    out = tmp_path / "run"
    code = (
        "import sys; sys.modules['simpy'] = None\n"  # as if not installed: importing it raises ModuleNotFoundError
        "from harness.cli import main\n"
        f"raise SystemExit(main(['run', *{ONE_CASE!r}, '--tracking', 'none', '--out', {str(out)!r}]))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1, done.stderr
    assert f"this Python ({sys.executable}) cannot import 'simpy', which the harness needs; fix: " in done.stderr
    assert "internal error" not in done.stderr
    assert not out.exists() or not any(out.iterdir())


def test_a_missing_module_of_the_harness_itself_is_still_its_own_bug(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only another package's absence is the environment's: one of the harness's own is a bug, said as one."""

    def missing(name: str) -> Callable[..., int]:
        def command(*args: object) -> int:
            raise ModuleNotFoundError(f"No module named '{name}'", name=name)

        return command

    monkeypatch.setattr("harness.cli._command", missing("harness.run.gone"))
    assert main(["list"]) == 1
    assert "internal error: ModuleNotFoundError" in capsys.readouterr().err
    monkeypatch.setattr("harness.cli._command", missing("pandas.core"))
    assert main(["list"]) == 2
    assert "cannot import 'pandas.core', which the harness needs" in capsys.readouterr().err


@pytest.mark.parametrize(("blocked", "command"), [("reports", "run"), ("reports/runs", "explore")])
def test_a_file_where_the_default_output_folder_goes_is_refused_with_the_fix(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path, blocked: str, command: str
) -> None:
    """With no --out, a run goes to reports/runs/<time> under the current folder; a file in the way of that was
    "internal error: NotADirectoryError ... a bug of the harness". Now one line, exit 2, the file left alone."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / blocked).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / blocked).write_text("mine")
    args = ["--policy", "retry_new_key", "--scenario", "lost_response", "--tracking", "none"]
    said = _refused(capsys, [command, *args])
    assert f"{tmp_path / 'reports' / 'runs'}: cannot create the default output folder (" in said
    assert "fix: give --out DIR" in said
    assert (tmp_path / blocked).read_text() == "mine"
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == sorted(
        {blocked, *([] if blocked == "reports" else ["reports"])}
    )


def test_report_refuses_a_folder_where_its_page_goes_and_replaces_a_link_without_following_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """`harness report` of a run whose report.html is a folder said "internal error: IsADirectoryError" after
    writing heatmap.png; a link named report.html had the page written wherever it pointed. Now the folder is
    refused before anything is written, and a link is replaced by the page (written through a rename)."""
    run = tmp_path / "run"
    assert main(["run", *ONE_CASE, "--tracking", "none", "--no-report", "--quiet", "--out", str(run)]) == 0
    capsys.readouterr()
    (run / "report.html").mkdir()
    said = _refused(capsys, ["report", str(run)])
    assert f"{run / 'report.html'}: is a folder, where this writes a file; fix: move it away" in said
    assert not (run / "heatmap.png").exists()
    (run / "report.html").rmdir()
    elsewhere = tmp_path / "elsewhere.html"
    (run / "report.html").symlink_to(elsewhere)
    assert main(["report", str(run)]) == 0
    capsys.readouterr()
    assert not elsewhere.exists() and not (run / "report.html").is_symlink()
    assert (run / "report.html").read_text(encoding="utf-8").rstrip().endswith("</body></html>")
    assert not list(run.glob(".*.tmp"))


def test_list_prints_nothing_before_a_scenario_file_that_does_not_load(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A broken file among the scenarios: `list` printed the policies and the scenarios before it, then the error
    (exit 2). Now the error alone, one line; with every file sound, the whole listing."""
    import shutil

    from conftest import SCENARIO_DIR

    import harness.scenario

    folder = tmp_path / "scenarios"
    shutil.copytree(SCENARIO_DIR, folder)
    monkeypatch.setattr(harness.scenario, "default_scenario_dir", lambda: folder)
    assert main(["list"]) == 0
    listing = capsys.readouterr().out
    assert listing.startswith("policies:\n") and "\nscenarios:\n  absent_then_late_original" in listing
    last = sorted(folder.glob("*.yaml"))[-1]
    last.write_text("name: [unclosed\n")
    said = _refused(capsys, ["list"])
    assert said.startswith(f"harness: {last}: ") and "fix:" in said


def _files(folder: Path) -> dict[str, int]:
    return {p.relative_to(folder).as_posix(): p.stat().st_mtime_ns for p in folder.rglob("*")}


def test_report_out_writes_the_page_elsewhere_and_nothing_into_the_run(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A run folder the user cannot write (a colleague's, a read-only mount) had no report: `report` wrote only
    into it. With --out the page and its heatmap go there, the timelines of failing cases drawn into the page
    alone, and the run folder is left as it was."""
    run = tmp_path / "run"
    lost = ["--policy", "retry_new_key", "--scenario", "lost_response", "--seed-count", "2"]
    assert main(["run", *lost, "--tracking", "none", "--no-report", "--quiet", "--out", str(run)]) == 0
    before = _files(run)
    page = tmp_path / "elsewhere" / "page.html"
    assert main(["report", str(run), "--out", str(page)]) == 0
    out, _ = capsys.readouterr()
    assert out.strip().endswith(str(page))
    assert _files(run) == before
    text = page.read_text(encoding="utf-8")
    assert (page.parent / "heatmap.png").is_file()
    assert "retry_new_key x lost_response seed 1" in text
    assert text.count('src="data:image/png;base64,') >= 2  # the heatmap and the failing case's timeline
    said = _refused(capsys, ["report", str(run), "--out", str(tmp_path / "page")])
    assert f"--out {tmp_path / 'page'}: not a page's name; fix: give a file name ending in .html" in said
    assert not (tmp_path / "page").exists()


def test_report_of_a_run_folder_it_cannot_write_says_to_write_it_elsewhere(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import errno

    import harness.present.html_report as html_report

    run = tmp_path / "run"
    assert main(["run", *ONE_CASE, "--tracking", "none", "--no-report", "--quiet", "--out", str(run)]) == 0
    capsys.readouterr()

    def read_only(fig: object, path: Path) -> Path:
        raise OSError(errno.EROFS, "Read-only file system", str(path))

    monkeypatch.setattr(html_report, "save_png", read_only)
    assert main(["report", str(run)]) == 1
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1, err
    assert f"harness: {run}: cannot write its report ({run / 'heatmap.png'}): Read-only file system" in err
    assert f"fix: write it elsewhere, as in python -m harness report {run} --out /tmp/report.html" in err
