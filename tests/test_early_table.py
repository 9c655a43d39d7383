"""The outcome table is printed once every case is counted, before report.html is drawn: the page takes seconds on
the default grid, and a run stopped while it is drawn has already said what it found."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from harness.cli import main

WORDS = ["run", "--policy", "stop_on_timeout", "--policy", "reconcile_and_reauthorize", "--scenario",
         "lost_response", "--seed-count", "2", "--tracking", "none", "--quiet"]  # fmt: skip
TABLE = (
    "policy \\ scenario          lost_response\n"
    "-------------------------  -------------\n"
    "stop_on_timeout            abandoned\n"
    "reconcile_and_reauthorize  correct\n"
)


def test_the_table_is_printed_before_the_report_is_drawn(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """What stdout holds when the page starts to be drawn is the table, whole; a Ctrl-C then leaves it said (and
    the run resumable), and the table is not printed twice by a run that draws its page."""
    import harness.present.html_report as html_report

    said_before: list[str] = []
    drawn = html_report.write_report

    def drawing(*args: object, **kwargs: object) -> Path:
        said_before.append(capsys.readouterr().out)
        return drawn(*args, **kwargs)  # type: ignore[arg-type]

    def stopped(*args: object, **kwargs: object) -> None:
        said_before.append(capsys.readouterr().out)
        raise KeyboardInterrupt

    with monkeypatch.context() as patched:
        patched.setattr(html_report, "write_report", stopped)
        assert main([*WORDS, "--out", str(tmp_path / "stopped")]) == 130
    assert said_before == [TABLE]
    assert "run --resume" in capsys.readouterr().err
    with monkeypatch.context() as patched:
        patched.setattr(html_report, "write_report", drawing)
        assert main([*WORDS, "--out", str(tmp_path / "drawn")]) == 0
    after = capsys.readouterr().out
    assert said_before[1:] == [TABLE] and "policy \\ scenario" not in after
    assert after.startswith(f"\n4 cases in {tmp_path / 'drawn'}") and (tmp_path / "drawn" / "report.html").is_file()


def test_without_a_page_the_table_is_printed_at_the_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--no-report draws nothing, so there is nothing to print the table ahead of: it comes with the rest."""
    assert main([*WORDS, "--no-report", "--out", str(tmp_path / "run")]) == 0
    assert capsys.readouterr().out.startswith(TABLE + f"\n4 cases in {tmp_path / 'run'}")


class _GoneReader(io.StringIO):
    """A stdout whose reader went away (``| head``): every write is a broken pipe."""

    def write(self, text: str) -> int:
        raise BrokenPipeError


def test_a_reader_gone_at_the_table_leaves_the_run_to_write_its_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The table is the first thing a run prints to stdout: a reader gone by then does not stop the page or the
    JUnit file from being written, and the run exits 141, as one whose reader went away."""
    out, junit = tmp_path / "run", tmp_path / "junit.xml"
    monkeypatch.setattr("sys.stdout", _GoneReader())
    assert main([*WORDS, "--junit", str(junit), "--out", str(out)]) == 141
    assert (out / "report.html").is_file() and junit.is_file() and (out / "run.json").is_file()
