"""report.html and its timelines grow with the grid's cells, not its seeds: one picture per policy, scenario and
failing outcome, the group's other cases listed under it (the first REPORT_LISTED_MAX), the pictures drawn in
worker processes."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from conftest import run_into

from harness.cli import main
from harness.limits import REPORT_LISTED_MAX
from harness.present.analysis import load
from harness.present.html_report import TIMELINE_OUTCOMES, render_timeline
from harness.run.pictures import PARALLEL_FROM, _Drawing, draw_timelines

SEEDS = REPORT_LISTED_MAX + 5


@pytest.fixture(scope="module")
def many_seeds(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A failing cell of more seeds than the page lists under a timeline."""
    out = tmp_path_factory.mktemp("report-scale") / "run"
    status = run_into(out, "--tracking", "none", "--policy", "retry_new_key", "--scenario", "lost_response",
                      "--seed-count", str(SEEDS))  # fmt: skip
    assert status == 0  # a run reports failing cases; `harness check` is the gate
    return out


def _groups(run: Path) -> list[int]:
    frame = load(run)
    failing = frame[frame["outcome"].isin(TIMELINE_OUTCOMES)]
    return list(failing.groupby(["policy", "scenario", "outcome"]).size())


def test_a_failing_cell_of_many_seeds_draws_one_timeline_per_outcome_and_lists_the_rest(many_seeds: Path) -> None:
    sizes = _groups(many_seeds)
    assert sizes and max(sizes) > REPORT_LISTED_MAX + 1  # the cap is reached
    assert len(list(many_seeds.rglob("timeline.png"))) == len(sizes)
    page = (many_seeds / "report.html").read_text(encoding="utf-8")
    assert page.count('<div class="case" id="case-') == len(sizes) == page.count('<img alt="timeline of ')
    others = re.findall(r'<table class="others">.*?</table>', page, flags=re.S)
    assert sum(table.count("<tr><td>") for table in others) == sum(min(n - 1, REPORT_LISTED_MAX) for n in sizes)
    for n in sizes:
        if n - 1 > REPORT_LISTED_MAX:
            assert f"and {n - 1 - REPORT_LISTED_MAX:,} more: summary.csv lists every case" in page


def test_timelines_drawn_in_worker_processes_are_those_drawn_here(many_seeds: Path, tmp_path: Path) -> None:
    paths = []
    for n, source in enumerate(sorted(many_seeds.rglob("recovery.json"))):
        target = tmp_path / str(n) / "recovery.json"
        target.parent.mkdir()
        shutil.copy(source, target)
        paths.append(target)
    assert len(paths) >= PARALLEL_FROM  # so that they are drawn over processes
    draw_timelines(paths, 2)
    drawn = [p.with_name("timeline.png") for p in paths]
    assert all(p.is_file() for p in drawn)
    for path in (paths[0], paths[-1]):
        here = tmp_path / "here" / path.parent.name / "recovery.json"
        here.parent.mkdir(parents=True)
        shutil.copy(path, here)
        assert render_timeline(here) is not None
        assert here.with_name("timeline.png").read_bytes() == path.with_name("timeline.png").read_bytes()


def test_a_restarted_drawing_skips_what_is_drawn_and_leaves_out_what_failed(tmp_path: Path) -> None:
    a, b, c = (tmp_path / name / "recovery.json" for name in "abc")
    assert _Drawing((a, b, c)).without(1, "the worker died").paths == (a, c)
    a.parent.mkdir()
    a.with_name("timeline.png").write_bytes(b"drawn before the restart")
    seen: list[int] = []
    # b and c have no recovery.json: their drawing fails, which leaves them to the page, and the job goes on.
    assert _Drawing((a, b, c)).execute(seen.append) == 3
    assert seen == [1, -1, 2, -1]
    assert a.with_name("timeline.png").read_bytes() == b"drawn before the restart"


def test_report_of_compact_records_alone_draws_their_timelines_into_the_page(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records = tmp_path / "records"
    run = tmp_path / "compact"
    assert run_into(run, "--tracking", "none", "--no-report", "--records", "compact", "--policy", "retry_new_key",
                    "--scenario", "lost_response", "--seed-count", "3") == 0  # fmt: skip
    for source in run.rglob("records-*.jsonl.gz"):
        target = records / source.relative_to(run)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(source, target)
    assert not list(records.rglob("recovery.json"))
    capsys.readouterr()
    assert main(["report", str(records)]) == 0
    assert capsys.readouterr().out.strip() == str(records / "report.html")
    page = (records / "report.html").read_text(encoding="utf-8")
    assert page.count('<img alt="timeline of ') == len(_groups(records)) > 0
    assert not list(records.rglob("timeline.png"))  # nothing written beside a file of records


def test_a_cell_is_the_same_at_every_seed_only_when_outcome_counts_and_flags_all_agree(many_seeds: Path) -> None:
    from harness.check.registry import METRICS
    from harness.present.analysis import _steady

    frame = load(many_seeds).head(3).copy()
    key = (frame["policy"].iloc[0], frame["scenario"].iloc[0])
    for metric in METRICS:
        frame[metric.name] = frame[metric.name].iloc[0]
    assert _steady(frame) == {key: True}
    duration = next(m.name for m in METRICS if m.value == "duration")
    frame.loc[frame.index[1], duration] = 1234.5  # durations move with the latencies a seed draws
    assert _steady(frame) == {key: True}
    count = next(m.name for m in METRICS if m.value == "count")
    changed = frame.copy()
    changed.loc[changed.index[2], count] = 7
    assert _steady(changed) == {key: False}
    unknown = frame.copy()
    unknown.loc[unknown.index[0], count] = None  # an unknown count is not the count the other seeds gave
    assert _steady(unknown) == {key: False}
    other = frame.copy()
    other.loc[other.index[1], "outcome"] = "correct" if other["outcome"].iloc[0] != "correct" else "incorrect"
    assert _steady(other) == {key: False}


def test_a_piece_that_draws_draws_its_lowest_seed_of_each_failing_outcome(tmp_path: Path) -> None:
    from harness.run.cell import CellJob, execute_cell

    job = CellJob("retry_new_key", "lost_response", (3, 1, 2), tmp_path, timelines=True)
    result = execute_cell(job)
    assert set(result.counts[("retry_new_key", "lost_response")]) == {"incorrect"}
    drawn = sorted(p.parent.name for p in tmp_path.rglob("timeline.png"))
    assert drawn == ["seed-1"]
    execute_cell(CellJob("retry_new_key", "lost_response", (4,), tmp_path / "not-drawn"))
    assert not list((tmp_path / "not-drawn").rglob("timeline.png"))
