"""Large sweeps: cells split into pieces that processes share, cases streamed to disk, compact records that
load, replay byte for byte and hold every field of recovery.json, and seed counts up to a million."""

from __future__ import annotations

import errno
import gzip
import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.cli import _parser, main
from harness.limits import SEED_COUNT_MAX
from harness.model import CaseReport, Entry
from harness.policy import Situation
from harness.present.analysis import load
from harness.run.grid import PIECE_MAX, PIECE_MIN, pieces
from harness.run.plan import Cell

#: A cell whose seeds disagree: some cases correct, some incorrect (a connector that has no record yet).
CELL = ("--policy", "retry_same_key", "--scenario", "connector_no_record_yet")
QUIET = ("--tracking", "none", "--no-report", "--quiet")


def run(out: Path, *args: str) -> Path:
    assert main(["run", *CELL, *QUIET, "--out", str(out), *args]) == 0
    return out


def records(out: Path) -> dict[int, str]:
    """Every compact record of a run, by seed."""
    lines: dict[int, str] = {}
    for path in sorted(out.rglob("records-*.jsonl.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            for line in handle:
                seed = json.loads(line)["seed"]
                assert seed not in lines, f"seed {seed} written twice"
                lines[seed] = line
    return lines


@pytest.fixture(scope="module")
def compact(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return run(tmp_path_factory.mktemp("compact") / "run", "--seed-count", "40", "--records", "compact")


@pytest.fixture(scope="module")
def full(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return run(tmp_path_factory.mktemp("full") / "run", "--seed-count", "40", "--records", "full")


def test_a_compact_record_holds_every_field_of_the_recovery_json(compact: Path, full: Path) -> None:
    """Seed for seed, a record is the full run's recovery.json on one line: same fields, same values."""
    lines = records(compact)
    assert sorted(lines) == list(range(1, 41))
    for seed, line in lines.items():
        (path,) = (full / "cases").rglob(f"seed-{seed}/recovery.json")
        assert json.loads(line) == json.loads(path.read_text())
        assert "\n" not in line.rstrip("\n")


def test_compact_runs_write_a_recovery_json_only_for_cases_that_are_not_correct(compact: Path) -> None:
    outcomes = {seed: json.loads(line)["outcome"] for seed, line in records(compact).items()}
    written = {int(p.parent.name.removeprefix("seed-")) for p in (compact / "cases").rglob("recovery.json")}
    assert written == {seed for seed, outcome in outcomes.items() if outcome != "correct"}
    assert written and len(written) < len(outcomes)  # this cell has both kinds


def test_the_loader_reads_records_and_recovery_json_once_each(compact: Path, full: Path) -> None:
    """One row per case either way, with the same outcomes; a not-correct case keeps its recovery.json path."""
    a, b = load(compact), load(full)
    assert len(a) == len(b) == 40 and a["seed"].is_unique
    assert dict(a.groupby("seed")["outcome"].first()) == dict(b.groupby("seed")["outcome"].first())
    assert all(p.endswith("recovery.json") == (o != "correct") for p, o in zip(a["path"], a["outcome"], strict=True))


def test_a_line_that_is_not_json_skips_that_case_not_the_file(compact: Path, tmp_path: Path) -> None:
    """One damaged line of a compact record file (valid gzip): the loader skips that line, naming the file and the
    line, and keeps the file's other cases (it dropped every case of the file for one line)."""
    (file,) = compact.rglob("records-*.jsonl.gz")
    with gzip.open(file, "rt", encoding="utf-8") as handle:
        lines = handle.read().splitlines(keepends=True)
    copy = tmp_path / "run"
    shutil.copytree(compact, copy)
    damaged = copy / file.relative_to(compact)
    with gzip.open(damaged, "wt", encoding="utf-8") as handle:
        handle.writelines(["{not json\n" if n == 6 else line for n, line in enumerate(lines, 1)])
    frame = load(copy)
    assert sorted(frame["seed"]) == [seed for seed in range(1, 41) if seed != 6]
    (skipped,) = frame.attrs["skipped"]
    assert skipped.path == f"{damaged} line 6"
    assert skipped.reason.startswith("malformed: JSONDecodeError: "), skipped.reason


def test_a_record_replays_byte_for_byte(compact: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The loader's path of a record is a replayable case; a changed record is not the same."""
    frame = load(compact)
    path = frame[frame["outcome"] == "correct"]["path"].iloc[0]
    assert "#seed-" in path
    assert main(["replay", path]) == 0
    assert "replayed: the same as recorded" in capsys.readouterr().out
    file, _, seed = path.rpartition("#seed-")
    with gzip.open(file, "rt", encoding="utf-8") as handle:
        lines = handle.read().splitlines(keepends=True)
    tampered = Path(file).with_name("records-999999.jsonl.gz")
    with gzip.open(tampered, "wt", encoding="utf-8") as handle:
        handle.writelines(
            line.replace('"dispatches":', '"dispatches":9') if f'"seed":{seed},' in line else line for line in lines
        )
    assert main(["replay", f"{tampered}#seed-{seed}"]) == 1
    assert main(["replay", f"{file}#seed-4000"]) == 2
    assert main(["replay", file]) == 2


def test_a_seed_of_another_piece_is_named_where_it_is(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A case asked of the wrong piece of its cell: the line says which seeds that file holds and names the piece
    that has the case (it said only "use a seed of that file"); a seed that is no number is said to be none, and
    leading zeros name the same seed."""
    out = run(tmp_path / "two", "--seed-count", "200", "--concurrency", "2", "--records", "compact")
    first, second = sorted((out / "cases").rglob("records-*.jsonl.gz"))
    capsys.readouterr()
    assert main(["replay", f"{first}#seed-150"]) == 2
    err = capsys.readouterr().err
    assert f"{first}: no case with seed 150 (it holds seeds 1 to 100); fix: the case is in another piece of the " in err
    assert f"cell: {second}#seed-150\n" in err
    assert main(["replay", f"{second}#seed-999"]) == 2
    said = "no case with seed 999 (it holds seeds 101 to 200); fix: use a seed of that file (load() lists them)"
    assert said in capsys.readouterr().err
    assert main(["replay", f"{first}#seed-x1"]) == 2
    assert f"{first}#seed-x1: 'x1' is not a seed; fix: name a case as #seed-<n>" in capsys.readouterr().err
    assert main(["replay", f"{second}#seed-0150"]) == 0
    assert "replayed: the same as recorded" in capsys.readouterr().out


def test_pieces_share_a_cell_and_the_summary_comes_out_in_seed_order(tmp_path: Path) -> None:
    """Two processes split one cell; summary.csv is byte-identical to one process's, and each case is once."""
    # Two pieces of PIECE_MIN seeds each: a smaller cell is not split.
    one = run(tmp_path / "one", "--seed-count", "200", "--concurrency", "1", "--records", "compact")
    two = run(tmp_path / "two", "--seed-count", "200", "--concurrency", "2", "--records", "compact")
    assert len(list((two / "cases").rglob("records-*.jsonl.gz"))) == 2
    assert (one / "summary.csv").read_bytes() == (two / "summary.csv").read_bytes()
    assert records(one) == records(two)
    assert not (two / ".parts").exists()


@pytest.mark.parametrize(
    "damage",
    [
        None,
        b"",
        b'{"counts": [',
        b'{"counts": "x"}',
        "errors",
        "earlier format",
        "summary rows without error",
        # The piece's own files damaged since: its records deleted or cut short, its rows deleted (it was
        # counted from its tally all the same: 75,000 rows loaded of a run said to hold 80,000, or an error
        # "cannot write the run's files ... make room" at every resume).
        "records deleted",
        "records cut short",
        "rows deleted",
    ],
)
def test_a_finished_piece_whose_tally_is_damaged_runs_again_on_resume(
    damage: bytes | str | None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A stopped run keeps each finished piece's tally in .parts/; one that no longer reads as one (cut short,
    not JSON, a field of another type) is not added into the counts: --resume runs that piece again, and the run
    ends as a clean run does. It was a traceback, "internal error: this is a bug of the harness". So does one an
    earlier version wrote, which counted no operator events (kept, it left its cases out of their coverage) or
    wrote summary rows without their ``error`` column (kept, summary.csv had rows a column short)."""
    from harness.run.cell import execute_cell

    clean = run(tmp_path / "clean", "--seed-count", "200", "--concurrency", "2", "--records", "compact")
    out = tmp_path / "stopped"
    shutil.copytree(clean, out)
    for name in ("run.json", "summary.csv"):
        (out / name).unlink()
    shutil.rmtree(out / "cases")
    first, _ = pieces(Cell(CELL[1], CELL[3], range(1, 201)), out, 2, "compact")
    execute_cell(first)  # the first piece finished before the run was stopped
    tally = next((out / ".parts").glob("*.json"))
    if isinstance(damage, bytes):
        tally.write_bytes(damage)
    elif damage == "errors":
        tally.write_text(json.dumps({**json.loads(tally.read_text()), "errors": "x"}))
    elif damage == "earlier format":  # as a run begun before operator events were counted left it
        tally.write_text(json.dumps({k: v for k, v in json.loads(tally.read_text()).items() if k != "format"}))
    elif damage == "summary rows without error":  # as a run begun before summary.csv had an error column left it
        tally.write_text(json.dumps({**json.loads(tally.read_text()), "format": 2}))
    elif damage == "records deleted":
        next((out / "cases").rglob("records-*.jsonl.gz")).unlink()
    elif damage == "records cut short":
        written = next((out / "cases").rglob("records-*.jsonl.gz"))
        written.write_bytes(written.read_bytes()[:-100])
    elif damage == "rows deleted":
        tally.with_suffix(".csv").unlink()
    capsys.readouterr()
    assert main(["run", "--resume", str(out), "--no-report"]) == 0
    ran = [line for line in capsys.readouterr().err.splitlines() if line.startswith("[")]
    assert len(ran) == (1 if damage is None else 2)
    assert (out / "summary.csv").read_bytes() == (clean / "summary.csv").read_bytes()
    assert (out / "coverage.json").read_bytes() == (clean / "coverage.json").read_bytes()
    assert records(out) == records(clean)


def test_pieces_cover_every_seed_once_and_none_is_over_the_cap() -> None:
    cell = Cell("p", "s", range(1, 2 * PIECE_MAX + 7))
    split = pieces(cell, Path("out"), 2, "compact")
    assert [job.part for job in split] == list(range(len(split)))
    assert [s for job in split for s in job.seeds] == list(cell.seeds)
    assert max(len(job.seeds) for job in split) <= PIECE_MAX
    # A cell is split among processes into pieces of PIECE_MIN seeds or more, else kept whole.
    assert len(pieces(Cell("p", "s", range(1, 2 * PIECE_MIN + 1)), Path("out"), 2, "full")) == 2
    assert len(pieces(Cell("p", "s", range(1, 2 * PIECE_MIN)), Path("out"), 2, "full")) == 1
    assert len(pieces(Cell("p", "s", (1, 2, 3)), Path("out"), 2, "full")) == 1
    assert len(pieces(Cell("p", "s", range(1, 2 * PIECE_MIN + 1)), Path("out"), 1, "full")) == 1


@given(st.integers(1, 4 * PIECE_MAX), st.integers(1, 4))
def test_no_piece_is_under_the_minimum_or_over_the_cap(n: int, concurrency: int) -> None:
    """Whatever the cell's size: pieces of PIECE_MIN to PIECE_MAX seeds (a smaller cell is one piece), as many
    as the processes can share, sizes as even as they come. A cell of 10,001 seeds ended in a piece of one."""
    split = pieces(Cell("p", "s", range(1, n + 1)), Path("out"), concurrency, "compact")
    sizes = [len(job.seeds) for job in split]
    assert [s for job in split for s in job.seeds] == list(range(1, n + 1))
    assert min(sizes) >= min(n, PIECE_MIN) and max(sizes) <= PIECE_MAX
    assert max(sizes) - min(sizes) <= 1
    assert len(split) >= min(concurrency, n // PIECE_MIN)


def test_the_piece_with_a_cells_lowest_seeds_draws_its_timelines_and_no_other_does() -> None:
    def drawing(seeds: tuple[int, ...] | range, timelines: bool = True) -> list[bool]:
        return [job.timelines for job in pieces(Cell("p", "s", seeds), Path("out"), 2, "full", timelines)]

    low, high = tuple(range(1, PIECE_MIN + 1)), tuple(range(PIECE_MIN + 1, 2 * PIECE_MIN + 1))
    assert drawing(range(1, 2 * PIECE_MAX + 7)) == [True, False, False]
    assert drawing(low + high) == [True, False]
    assert drawing((1, 2, 3)) == [True]
    assert drawing((7,)) == [True]
    assert drawing(low[::-1] + high) == [True, False]  # the first piece holds seeds each lower than the rest's
    assert drawing(high + low) == [False, False]  # the lowest seeds are in the last piece: the report draws them
    assert drawing(low + high, timelines=False) == [False, False]  # --no-report


def test_a_cell_names_the_same_first_cases_whatever_order_its_pieces_finish_in(tmp_path: Path) -> None:
    """Pieces of a cell finish in any order; the first failing case of each outcome it names is the lowest seed."""
    from harness.run.cell import CellJob, CellResult, execute_cell

    parts = [
        execute_cell(CellJob("retry_same_key", "connector_no_record_yet", seeds, tmp_path / f"p{i}", part=i))
        for i, seeds in enumerate((range(1, 16), range(16, 31)))
    ]
    assert all(any(n.outcome == "incorrect" for n in part.notable) for part in parts)
    named = []
    for order in (parts, parts[::-1]):
        merged = CellResult()
        for part in order:
            merged.merge(part)
        named.append([(n.outcome, n.seed) for n in merged.notable])
    assert named[0] == named[1] and named[0] == [("incorrect", min(n.seed for n in parts[0].notable))]


def test_seed_count_goes_up_to_a_million() -> None:
    args = _parser().parse_args(["run", "--seed-count", str(SEED_COUNT_MAX)])
    assert args.seed_count == SEED_COUNT_MAX == 1_000_000
    with pytest.raises(SystemExit) as stopped:
        _parser().parse_args(["run", "--seed-count", str(SEED_COUNT_MAX + 1)])
    assert stopped.value.code == 2


def test_the_situations_built_without_validation_are_what_validation_gives() -> None:
    """The hot path builds each Situation without validating it, and keeps the receipts seen as the case runs
    instead of deriving them at every decision; every Situation a policy saw, in every shipped scenario, must
    survive validation unchanged (a field of a wrong type or a missing one would not), and the receipts kept
    must be exactly those derived from its attempts and reads."""
    from harness.policy import builtin_policy_names
    from harness.run.plan import load_grid
    from harness.scenario import list_scenarios
    from harness.sim import simulate

    seen: list[Situation] = []
    for case in load_grid(builtin_policy_names(), list_scenarios(), [1]).cases:
        simulate(case.scenario, Recording(case.policy, seen), case.seed)  # type: ignore[arg-type]
    assert len(seen) > 500
    with_receipts = 0
    for situation in seen:
        again = Situation.model_validate(situation.model_dump())
        assert again.model_dump() == situation.model_dump()
        assert again.model_dump_json() == situation.model_dump_json()
        assert situation.model_fields_set == set(Situation.model_fields)
        assert situation._receipts is not None and again._receipts is None  # kept, and derived
        assert situation.observed_receipts() == again.observed_receipts()
        with_receipts += bool(again.observed_receipts())
    assert with_receipts > 100  # the receipts were compared where there were some, not only where there were none
    # A policy that rewrites what it saw (model_copy with an update) reads the receipts of what it rewrote, not
    # the ones the simulator kept; a plain copy keeps them, being the same situation.
    for situation in seen:
        if situation.observed_receipts():
            blind = situation.model_copy(update={"attempts": (), "lookups": ()})
            assert blind.observed_receipts() == [] and blind._receipts is None
            assert situation.model_copy()._receipts == situation._receipts
    with pytest.raises(Exception, match="frozen"):
        seen[0].now_s = 1.0  # type: ignore[misc]


def test_the_reports_built_without_validation_are_what_validation_gives() -> None:
    """Every case's report is built without validation; read back through the model it must be equal, write the
    same bytes, and have every field set, for every policy and scenario shipped."""
    from harness.policy import builtin_policy_names
    from harness.run.case import run_case
    from harness.run.files import recovery_json
    from harness.run.plan import load_grid
    from harness.scenario import list_scenarios

    outcomes = set()
    for case in load_grid(builtin_policy_names(), list_scenarios(), [1]).cases:
        report, _ = run_case(case)
        outcomes.add(report.outcome)
        again = CaseReport.model_validate_json(recovery_json(report))
        assert again == report, (case.policy.name, case.scenario.name)
        assert recovery_json(again) == recovery_json(report)
        assert report.model_fields_set == set(CaseReport.model_fields)
        assert all(entry.model_fields_set == set(Entry.model_fields) for entry in report.timeline)
    assert {"correct", "incorrect", "escalated"} <= outcomes


class Recording:
    """A policy that keeps every Situation it is shown and decides as ``inner`` does."""

    def __init__(self, inner: object, seen: list[Situation]) -> None:
        self.inner, self.seen = inner, seen
        self.name, self.revision = inner.name, inner.revision  # type: ignore[attr-defined]

    def decide(self, situation: Situation) -> object:
        self.seen.append(situation)
        return self.inner.decide(situation)  # type: ignore[attr-defined]


def test_progress_counts_the_pieces_and_cases_this_run_has_to_do(tmp_path: Path) -> None:
    """Each finished piece reports the pieces and cases done so far out of those the run has to do, with the time
    since it began; a resumed run counts only what it runs again."""
    from harness.run import GridOptions, plan_cells, run_grid
    from harness.run.grid import Progress, resume_grid

    seen: list[Progress] = []
    plan = plan_cells(["stop_on_timeout"], ["lost_response", "changed_task"], [1, 2, 3], None, 1)
    out = tmp_path / "run"
    options = GridOptions(out=out, tracking="none", report=False, isolate=False)
    run_grid(plan, options, progress=lambda p, job, result: seen.append(p))
    assert [(p.pieces_done, p.pieces, p.cases_done, p.cases) for p in seen] == [(1, 2, 3, 6), (2, 2, 6, 6)]
    assert 0 < seen[0].elapsed_s <= seen[1].elapsed_s

    # Stopped as its first piece ended (the second not yet run): the resumed run has one piece of three cases.
    class Stopped(Exception):
        pass

    def stop(p: Progress, job: object, result: object) -> None:
        raise Stopped

    again = tmp_path / "again"
    with pytest.raises(Stopped):
        run_grid(plan, replace(options, out=again), progress=stop)
    seen.clear()
    assert resume_grid(again, progress=lambda p, job, result: seen.append(p), report=False) is not None
    assert [(p.pieces_done, p.pieces, p.cases_done, p.cases) for p in seen] == [(1, 1, 3, 3)]


def test_a_sweep_s_progress_says_cases_rate_and_time_left() -> None:
    from harness.cli import _duration, _sweep
    from harness.run.grid import Progress

    assert _sweep(Progress(3, 200, 15_000, 1_000_000, 4.0)) == (
        "15,000 of 1,000,000 cases, 3,750 cases/s, about 4 min 23 s left"  # 985,000 cases at 3,750/s: 262.7 s
    )
    assert _sweep(Progress(200, 200, 1_000_000, 1_000_000, 250.0)) == "1,000,000 of 1,000,000 cases, 4,000 cases/s"
    assert _sweep(Progress(1, 2, 5_000, 10_000, 0.0)) == "5,000 of 10,000 cases"  # no time yet, no rate
    # Two pieces side by side: the first to finish is not the rate (the other is about as far along), the second is.
    assert _sweep(Progress(1, 16, 5_000, 80_000, 4.0, concurrency=2)) == "5,000 of 80,000 cases"
    assert _sweep(Progress(2, 16, 10_000, 80_000, 4.0, concurrency=2)) == (
        "10,000 of 80,000 cases, 2,500 cases/s, about 28 s left"
    )
    assert _sweep(Progress(1, 1, 5_000, 5_000, 2.0, concurrency=2)) == "5,000 of 5,000 cases, 2,500 cases/s"
    assert [_duration(s) for s in (0.4, 59.4, 60, 3599.4, 3600, 7530)] == [
        "0 s", "59 s", "1 min 0 s", "59 min 59 s", "1 h 00 min", "2 h 05 min"
    ]  # fmt: skip


def test_only_a_sweep_s_progress_lines_carry_its_rate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Below ``SWEEP_FROM`` cases a progress line is the cell's outcomes alone; from it, the line adds the cases
    done, the rate and the time left (the threshold is lowered here so that a three-case run is a sweep)."""
    import harness.cli

    args = ["run", *CELL, "--seed-count", "3", "--tracking", "none", "--no-report"]
    assert main([*args, "--out", str(tmp_path / "grid")]) == 0
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("[")]
    assert lines == ["[1/1] retry_same_key x connector_no_record_yet: incorrect 2, correct 1"]

    monkeypatch.setattr(harness.cli, "SWEEP_FROM", 3)
    assert main([*args, "--out", str(tmp_path / "sweep")]) == 0
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("[")]
    assert len(lines) == 1
    head, sweep = lines[0].split("; ")
    assert head == "[1/1] retry_same_key x connector_no_record_yet: incorrect 2, correct 1"
    assert sweep.startswith("3 of 3 cases, ") and sweep.endswith(" cases/s") and "left" not in sweep


def test_progress_counts_each_case_of_a_crash_point_scenario(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A crash-point scenario is one case per boundary a seed: the progress counts them all, as the final line
    does (it counted seeds: a first-time user's run of 15,000 cases never reached the sweep's 10,000)."""
    import harness.cli

    monkeypatch.setattr(harness.cli, "SWEEP_FROM", 1)
    args = ["run", "--policy", "stop_on_timeout", "--scenario", "connector_crash_points", "--scenario"]
    args += ["lost_response", "--seed-count", "2", "--tracking", "none", "--no-report"]
    assert main([*args, "--out", str(tmp_path / "run")]) == 0
    said = capsys.readouterr()
    lines = [line.split("; ")[1] for line in said.err.splitlines() if line.startswith("[")]
    assert [line.partition(" cases")[0] for line in lines] == ["8 of 10", "10 of 10"]
    assert "10 cases in " in said.out


def test_a_run_that_cannot_write_its_files_says_whose_and_how_to_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full disk as a cell writes its cases: one line naming the run's folder, the system's reason and the
    resume command (a worker's error reaches the parent as this same OSError: tests/test_supervised.py)."""
    import harness.run.cell as cell
    from harness.errors import RunFailed
    from harness.run import GridOptions, plan_cells, run_grid

    def full(path: Path, text: str) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(cell, "write_atomic", full)
    out = tmp_path / "run"
    plan = plan_cells(["stop_on_timeout"], ["lost_response"], [1], None, 1)
    with pytest.raises(RunFailed) as failed:
        run_grid(plan, GridOptions(out=out, tracking="none", report=False, isolate=False))
    assert str(failed.value) == (
        f"cannot write the run's files in {out} (No space left on device); fix: make room or give a writable "
        f"folder, then resume: python -m harness run --resume {out}"
    )


def test_a_run_whose_manifest_cannot_be_written_says_to_resume_and_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The manifest is written before any case, outside the cases' own handling: a full disk there said "run the
    command again", which was then refused (the --out no longer empty). The request the run began with is there,
    so it resumes."""
    import harness.run.grid as grid

    real = grid.write_atomic

    def full(path: Path, text: str) -> None:
        if path.name == "manifest.json":
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        real(path, text)

    monkeypatch.setattr(grid, "write_atomic", full)
    out = tmp_path / "run"
    args = ["--policy", "stop_on_timeout", "--scenario", "lost_response", "--seed-count", "1", "--tracking", "none"]
    assert main(["run", *args, "--no-report", "--quiet", "--out", str(out)]) == 1
    assert capsys.readouterr().err == (
        f"harness: cannot write the run's files in {out} (No space left on device); fix: make room or give a "
        f"writable folder, then resume: python -m harness run --resume {out}\n"
    )
    monkeypatch.undo()
    assert main(["run", "--resume", str(out), "--quiet"]) == 0
    assert len(list(out.rglob("recovery.json"))) == 1


def test_a_compact_piece_stopped_midway_leaves_none_of_its_files(tmp_path: Path) -> None:
    """A compact piece writes a record per case and a recovery.json per case that is not correct. Stopped midway,
    its record file was never finished, but the recovery.json files of its failing cases were there: a stopped
    run's report and notebook counted its failing cases and not its correct ones (a correct rate of 47% for a
    true 50%). They now appear together with the records, as the piece ends."""
    from harness.run.cell import CellJob, execute_cell

    out = tmp_path / "run"
    job = CellJob(CELL[1], CELL[3], range(1, 31), out, records="compact")

    def stop(position: int) -> None:
        if position == 20:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        execute_cell(job, on_case=stop)
    left = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert left == [], left  # no recovery.json, no record file, no pending file
    execute_cell(job)
    loose = list(out.rglob("recovery.json"))
    assert loose and len(loose) < 30  # this cell has correct cases and others: only the others are loose files
    failing = {seed for seed, line in records(out).items() if json.loads(line)["outcome"] != "correct"}
    assert {p.parent.name for p in loose} == {f"seed-{seed}" for seed in failing}
    assert not [p for p in out.rglob("*.tmp")]


def test_a_resumed_runs_wall_time_counts_every_invocation_that_worked_on_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """run.json's wall_time_s counted only the invocation that finished the run: a run stopped after an hour and
    resumed for a minute said a minute. A stopped run keeps its wall time so far beside its pieces, and the
    resume adds its own to it."""
    import time

    import harness.run.grid as grid
    from harness.run import GridOptions, plan_cells, run_grid
    from harness.run.grid import resume_grid

    real = grid.execute_cell
    calls: list[object] = []
    noted: list[float] = []

    def slow_then_stopped(job: object, cell: object) -> object:
        calls.append(cell)
        if len(calls) == 2:
            # Kept as each piece finishes, not only when the run is stopped: a killed run says nothing.
            noted.append(float((out / ".parts" / grid.WALL_NOTE).read_text()))
            time.sleep(0.3)  # stopped a while into the second piece: that time counts too
            raise KeyboardInterrupt
        time.sleep(0.5)
        return real(job, cell)  # type: ignore[arg-type]

    monkeypatch.setattr(grid, "execute_cell", slow_then_stopped)
    out = tmp_path / "run"
    plan = plan_cells(["stop_on_timeout"], ["lost_response", "changed_task"], [1], None, 1)
    with pytest.raises(grid.RunInterrupted):
        run_grid(plan, GridOptions(out=out, tracking="none", report=False, isolate=False))
    note = out / ".parts" / grid.WALL_NOTE
    # The first piece's time, then the stop's (each kept to the millisecond, so 0.3 s may read as 0.299).
    assert noted[0] >= 0.5 and float(note.read_text()) >= noted[0] + 0.3 - 0.0015
    note.write_text("100.000\n")  # as if the invocations before had taken 100 s
    monkeypatch.setattr(grid, "execute_cell", real)
    started = time.perf_counter()
    assert resume_grid(out, report=False) is not None
    took = time.perf_counter() - started
    wall = json.loads((out / "run.json").read_text())["wall_time_s"]
    assert 100 < wall <= 100 + took + 0.001


@pytest.mark.parametrize(("text", "earlier"), [("12.5\n", 12.5), ("nan\n", 0.0), ("-3\n", 0.0), ("inf\n", 0.0),
                                                ("junk\n", 0.0), (None, 0.0)])  # fmt: skip
def test_a_damaged_wall_time_note_counts_as_none(tmp_path: Path, text: str | None, earlier: float) -> None:
    """The note is read back as the time earlier invocations took; anything but a finite time not below zero (a
    damaged note, or none) counts as no earlier time, rather than making run.json's wall time NaN or negative."""
    from harness.run.grid import WALL_NOTE, _earlier_wall_s

    if text is not None:
        (tmp_path / ".parts").mkdir()
        (tmp_path / ".parts" / WALL_NOTE).write_text(text)
    assert _earlier_wall_s(tmp_path) == earlier
