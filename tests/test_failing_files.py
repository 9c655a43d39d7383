"""``--failing-files N``: a sweep of a policy that fails most of its cases keeps at most N recovery.json files per
cell, while every case stays in the compact records, loads, and replays; nothing else a run writes changes."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_scale import records

from harness.cli import main
from harness.present.analysis import load
from harness.run.grid import GridOptions, _options_json, _options_of, pieces
from harness.run.plan import Cell

#: A cell whose seeds disagree: some cases correct, some not (a connector that has no record yet).
CELL = ("--policy", "retry_same_key", "--scenario", "connector_no_record_yet")
SWEEP = ("--seed-count", "200", "--concurrency", "2", "--records", "compact", "--tracking", "none", "--quiet")


def run(out: Path, *args: str) -> Path:
    assert main(["run", *CELL, *SWEEP, "--out", str(out), *args]) == 0
    return out


def outcomes(out: Path) -> dict[int, str]:
    """Every case's outcome, by seed, from the compact records (every case is there, whatever else was written)."""
    return {seed: json.loads(line)["outcome"] for seed, line in records(out).items()}


def written(out: Path) -> list[int]:
    """The seeds that have a recovery.json, in order."""
    return sorted(int(p.parent.name.removeprefix("seed-")) for p in (out / "cases").rglob("recovery.json"))


@pytest.fixture(scope="module")
def every(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The cell as a run writes it without --failing-files: a recovery.json for every case that is not correct."""
    return run(tmp_path_factory.mktemp("every") / "run", "--no-report")


@pytest.fixture(scope="module")
def three(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return run(tmp_path_factory.mktemp("three") / "run", "--no-report", "--failing-files", "3")


def test_a_cell_keeps_the_first_failing_cases_of_each_piece_up_to_its_share(every: Path, three: Path) -> None:
    """Rule: with --failing-files 3 over two pieces (seeds 1 to 100 and 101 to 200), the first piece writes a
    recovery.json for its first two cases that are not correct and the second for its first one; the records,
    summary.csv and coverage.json are those of the run without it, byte for byte."""
    cases = outcomes(three)
    assert sorted(cases) == list(range(1, 201)) and cases == outcomes(every)
    failing = [seed for seed, outcome in sorted(cases.items()) if outcome != "correct"]
    low, high = [s for s in failing if s <= 100], [s for s in failing if s > 100]
    assert len(low) > 2 and len(high) > 1  # the cell fails often enough in each piece for the cap to bite
    assert written(every) == failing
    assert written(three) == low[:2] + high[:1]
    for name in ("summary.csv", "coverage.json"):
        assert (three / name).read_bytes() == (every / name).read_bytes(), name


def test_every_case_of_a_capped_cell_loads_once_and_replays(three: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Rule: load() gives every case once, a failing case without a recovery.json by its compact record, and that
    record replays byte for byte."""
    frame = load(three)
    assert len(frame) == 200 and frame["seed"].is_unique
    assert dict(zip(frame["seed"], frame["outcome"], strict=True)) == outcomes(three)
    by_file = sorted(int(s) for s, p in zip(frame["seed"], frame["path"], strict=True) if p.endswith("recovery.json"))
    assert by_file == written(three)
    unwritten = frame[(frame["outcome"] != "correct") & frame["path"].str.contains("#seed-")]
    assert len(unwritten) > 0
    capsys.readouterr()
    assert main(["replay", unwritten["path"].iloc[0]]) == 0
    assert "replayed: the same as recorded" in capsys.readouterr().out


def test_no_failing_file_at_all_still_shows_the_failing_case_in_the_report(tmp_path: Path) -> None:
    """Rule: --failing-files 0 writes no case folder; report.html still shows the timeline of the cell's lowest
    failing seed, drawn into the page alone."""
    out = run(tmp_path / "none", "--failing-files", "0")
    assert written(out) == [] and not list((out / "cases").rglob("seed-*"))
    first, outcome = min((seed, outcome) for seed, outcome in outcomes(out).items() if outcome != "correct")
    page = (out / "report.html").read_text(encoding="utf-8")
    # The picture's alternative text names the case; the picture itself is in the page.
    assert re.search(rf'seed {first}: {outcome} \(verdict \w+\)" src="data:image/png;base64,\w', page)


def test_a_resumed_run_keeps_the_cap_it_began_with(three: Path, tmp_path: Path) -> None:
    """Rule: the manifest keeps --failing-files, so a run resumed after every piece was lost writes the same
    recovery.json files as it would have (without it, one for every failing case)."""
    out = tmp_path / "stopped"
    shutil.copytree(three, out)
    for name in ("run.json", "summary.csv"):
        (out / name).unlink()
    shutil.rmtree(out / "cases")
    assert main(["run", "--resume", str(out), "--no-report", "--quiet"]) == 0
    assert written(out) == written(three)
    assert (out / "summary.csv").read_bytes() == (three / "summary.csv").read_bytes()
    options = GridOptions(out=out, failing_files=7)
    assert _options_of(_options_json(options), out) == options


@given(st.integers(0, 20), st.integers(100, 25_000), st.integers(1, 4))
def test_a_cells_cap_is_shared_among_its_pieces_as_evenly_as_its_seeds(cap: int, n: int, concurrency: int) -> None:
    """Rule: the pieces' shares add up to the cell's cap, differ by one at most, and the first pieces take the
    larger; no cap stays no cap."""
    cell = Cell("p", "s", range(1, n + 1))
    shares = [job.failing_files for job in pieces(cell, Path("out"), concurrency, "compact", failing_files=cap)]
    assert all(share is not None for share in shares)
    counted = [share for share in shares if share is not None]
    assert sum(counted) == cap and max(counted) - min(counted) <= 1
    assert counted == sorted(counted, reverse=True)
    assert {job.failing_files for job in pieces(cell, Path("out"), concurrency, "compact")} == {None}


def test_a_cap_with_full_records_is_refused_and_nothing_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Rule: --records full writes a recovery.json for every case, so --failing-files with it is refused in one
    line naming both and the mend, exit 2, and no folder is made."""
    out = tmp_path / "run"
    assert main(["run", *CELL, "--records", "full", "--failing-files", "3", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        "harness: --failing-files: limits the recovery.json files of cells written as compact records, and "
        "--records full writes one for every case; fix: drop --failing-files, or give --records compact or auto"
    )
    assert not out.exists()


def test_a_run_that_wrote_many_failing_files_says_how_to_write_fewer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Rule: past ``FAILING_FILES_SAID`` recovery.json files of failing cases beside compact records, a run ends
    with one line on stderr giving their number and size and naming --failing-files; with the cap given, or at
    that many files or fewer, nothing is said."""
    import harness.cli

    out = run(tmp_path / "every", "--no-report")
    count = len(written(out))
    size = sum(p.stat().st_size for p in (out / "cases").rglob("recovery.json"))
    said = capsys.readouterr().err
    assert "--failing-files" not in said  # the limit is far above this cell's failing cases
    monkeypatch.setattr(harness.cli, "FAILING_FILES_SAID", count - 1)
    run(tmp_path / "again", "--no-report")
    (line,) = [line for line in capsys.readouterr().err.splitlines() if "--failing-files" in line]
    assert line == (
        f"harness: note: {count:,} cases that are not correct each have a recovery.json beside their compact record "
        f"({size / 1e6:,.1f} MB, more on disk); --failing-files N keeps at most N per cell, every case still loaded "
        "and replayed from the records"
    )
    monkeypatch.setattr(harness.cli, "FAILING_FILES_SAID", count)
    run(tmp_path / "at", "--no-report")
    assert "--failing-files" not in capsys.readouterr().err
    monkeypatch.setattr(harness.cli, "FAILING_FILES_SAID", 0)
    run(tmp_path / "capped", "--no-report", "--failing-files", "5")
    assert "--failing-files" not in capsys.readouterr().err
