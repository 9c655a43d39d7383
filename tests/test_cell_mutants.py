"""The streamed tallies of a sweep, in process: what the thirty-first mutation pass found no test holding
(tests/MUTANTS.md).

A run's counts come from ``harness.run.cell`` (a piece's cases run and written, and its tally) and the merging in
``harness.run.grid`` (the pieces of a cell added up, coverage summed over cells, coverage.json, the split of a cell
into pieces). ``harness run`` calls the first in worker processes, so these tests call both here. Every expectation
is whole: exact counts, exact JSON, exact sets of files written.
"""

from __future__ import annotations

import csv
import dataclasses
import gzip
import io
import json
from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from typing import cast

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.limits import COMPACT_ABOVE
from harness.model import CaseReport
from harness.run import cell as cell_module
from harness.run.case import failed_report, run_case
from harness.run.cell import (
    NOTABLE_MAX,
    TALLY_FORMAT,
    CaseLine,
    CellJob,
    CellResult,
    FaultCoverage,
    MetricTally,
    _identity,
    _note,
    _within,
    cell_scenario,
    execute_cell,
    files_in_place,
    summary_part_path,
)
from harness.run.files import case_path, record_line, recovery_json, summary_row
from harness.run.grid import (
    PIECE_MAX,
    PIECE_MIN,
    _records,
    _Results,
    coverage_json,
    harness_errors,
    merge_coverage,
    pieces,
    unfired,
    unfired_or_unknown,
)
from harness.run.plan import Cell, load_grid
from harness.scenario.faults import CONNECTOR_PHASES

#: Incorrect at seeds 1, 2, 5, 10 and 12 of 1 to 12; correct at the others.
POLICY, SCENARIO = "retry_same_key", "connector_no_record_yet"
FAILING_SEEDS = [1, 2, 5, 10, 12]


@pytest.fixture(scope="module")
def reports() -> dict[int, CaseReport]:
    return {case.seed: run_case(case)[0] for case in load_grid([POLICY], [SCENARIO], range(1, 13)).cases}


def test_the_cell_fails_where_these_tests_expect(reports: dict[int, CaseReport]) -> None:
    assert [s for s, r in sorted(reports.items()) if r.outcome != "correct"] == FAILING_SEEDS
    assert {r.outcome for r in reports.values()} == {"correct", "incorrect"}


# --- the small records: coverage, metric tallies, a case line ----------------------------------------------------


def test_coverage_plus_adds_the_counts_and_keeps_what_it_is() -> None:
    one = FaultCoverage("s", 3, "request_cancel at_s=1.0", 2, 1, "operator")
    other = FaultCoverage("t", 4, "another", 5, 7, "fault")
    assert one.plus(other) == FaultCoverage("s", 3, "request_cancel at_s=1.0", 7, 8, "operator")
    assert other.plus(one) == FaultCoverage("t", 4, "another", 7, 8, "fault")


def test_a_metric_tally_counts_every_known_value_and_sums_it() -> None:
    tally = MetricTally()
    for value in (None, 0, 2, None, 1.5, True, False):
        tally.add(value)
    assert (tally.total, tally.known) == (4.5, 5)
    assert isinstance(tally.total, float)
    assert MetricTally(1.5, 2).plus(MetricTally(2.0, 3)) == MetricTally(3.5, 5)
    assert MetricTally(1.5, 2).plus(MetricTally()) == MetricTally(1.5, 2)


def test_a_tally_counts_its_cases_over_every_policy_and_scenario() -> None:
    assert CellResult().cases == 0
    result = CellResult(counts={("p", "s"): Counter(correct=3, incorrect=2), ("q", "t"): Counter(abandoned=4)})
    assert result.cases == 9


# --- the tally as JSON, for --resume -----------------------------------------------------------------------------


def _a_tally(summary_part: Path | None = Path(".parts/000002-000001.csv")) -> CellResult:
    return CellResult(
        counts={("p", "s"): Counter(correct=2, incorrect=1), ("p", "t"): Counter(harness_error=1)},
        notable=[
            CaseLine("p", "s", 3, "incorrect", "python -m harness run --seed 3", policy_error="ValueError: x"),
            CaseLine("p", "t", 9, "harness_error", "python -m harness run --seed 9", "its worker died"),
        ],
        errors=1,
        coverage=(FaultCoverage("s", 0, "response_lost", 2, 1), FaultCoverage("s", 1, "ev at_s=1.0", 1, 0, "operator")),
        metrics={"dispatches": MetricTally(5.0, 2), "reads": MetricTally()},
        identity={"policy_revision": "abc", "task_id": "t1"},
        summary_part=summary_part,
        files={"cases/p/s/seed-3/recovery.json": 120, ".parts/000002-000001.csv": 0},
    )


TALLY_DOCUMENT = {
    "counts": [["p", "s", {"correct": 2, "incorrect": 1}], ["p", "t", {"harness_error": 1}]],
    "coverage": [
        {"fault": "response_lost", "fired": 1, "index": 0, "kind": "fault", "reached": 2, "scenario": "s"},
        {"fault": "ev at_s=1.0", "fired": 0, "index": 1, "kind": "operator", "reached": 1, "scenario": "s"},
    ],
    "errors": 1,
    "files": {".parts/000002-000001.csv": 0, "cases/p/s/seed-3/recovery.json": 120},
    "format": 5,
    "identity": {"policy_revision": "abc", "task_id": "t1"},
    "metrics": {"dispatches": [5.0, 2], "reads": [0.0, 0]},
    "notable": [
        {
            "error": None,
            "outcome": "incorrect",
            "policy": "p",
            "policy_error": "ValueError: x",
            "reproduce": "python -m harness run --seed 3",
            "scenario": "s",
            "seed": 3,
        },
        {
            "error": "its worker died",
            "outcome": "harness_error",
            "policy": "p",
            "policy_error": None,
            "reproduce": "python -m harness run --seed 9",
            "scenario": "t",
            "seed": 9,
        },
    ],
    "summary_part": ".parts/000002-000001.csv",
}


def test_a_tally_is_written_as_this_json_and_read_back_as_itself() -> None:
    assert TALLY_FORMAT == 5
    text = _a_tally().to_json()
    assert text == json.dumps(TALLY_DOCUMENT, sort_keys=True)
    read = CellResult.from_json(text)
    assert read == _a_tally()
    assert all(type(c) is Counter for c in read.counts.values())
    assert all(type(n) is CaseLine for n in read.notable)
    assert type(read.coverage) is tuple and all(type(c) is FaultCoverage for c in read.coverage)
    assert all(type(t) is MetricTally for t in read.metrics.values())
    assert read.summary_part == Path(".parts/000002-000001.csv")


def test_a_tally_without_summary_rows_says_null_and_reads_back_as_none() -> None:
    text = _a_tally(None).to_json()
    assert json.loads(text) == {**TALLY_DOCUMENT, "summary_part": None}
    assert CellResult.from_json(text).summary_part is None
    empty = CellResult()
    assert json.loads(empty.to_json()) == {
        "counts": [],
        "coverage": [],
        "errors": 0,
        "files": {},
        "format": 5,
        "identity": {},
        "metrics": {},
        "notable": [],
        "summary_part": None,
    }
    assert CellResult.from_json(empty.to_json()) == empty


def test_tallies_read_back_add_up_as_the_tallies_did() -> None:
    """A resumed run merges tallies read from disk: their counts must add (a Counter), not replace."""
    merged = CellResult.from_json(_a_tally().to_json())
    merged.merge(CellResult.from_json(_a_tally().to_json()))
    assert merged.counts == {("p", "s"): Counter(correct=4, incorrect=2), ("p", "t"): Counter(harness_error=2)}
    assert merged.metrics == {"dispatches": MetricTally(10.0, 4), "reads": MetricTally()}
    assert merged.errors == 2


@pytest.mark.parametrize(
    "change",
    [
        {"format": 4},
        {"files": {"a": -1}},
        {"errors": "x"},
        {"counts": [["p", "s"]]},
        {"metrics": {"dispatches": [1.0]}},
    ],
)
def test_a_tally_of_another_shape_is_refused(change: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        CellResult.from_json(json.dumps({**TALLY_DOCUMENT, **change}))
    document = dict(TALLY_DOCUMENT)
    del document[next(iter(change))]
    with pytest.raises(ValueError):
        CellResult.from_json(json.dumps(document))


# --- pieces of a cell merged -------------------------------------------------------------------------------------


def _line(seed: int, outcome: str = "incorrect", policy: str = "p", scenario: str = "s") -> CaseLine:
    return CaseLine(policy, scenario, seed, outcome, f"run {policy} {scenario} {seed}")


def _error(seed: int) -> CaseLine:
    return CaseLine("p", "s", seed, "harness_error", f"run {seed}", "its worker died")


def test_merging_adds_counts_errors_coverage_metrics_and_files() -> None:
    first = CellResult(
        counts={("p", "s"): Counter(correct=2, incorrect=1)},
        errors=1,
        coverage=(FaultCoverage("s", 0, "a", 1, 1), FaultCoverage("s", 1, "b", 0, 0)),
        metrics={"dispatches": MetricTally(3.0, 2)},
        identity={"policy_revision": "first"},
        files={"x": 1, "y": 2},
    )
    second = CellResult(
        counts={("p", "s"): Counter(incorrect=2, abandoned=1), ("p", "t"): Counter(correct=1)},
        errors=2,
        coverage=(FaultCoverage("t", 0, "c", 2, 0), FaultCoverage("s", 1, "b", 3, 2), FaultCoverage("s", 0, "a", 1, 0)),
        metrics={"reads": MetricTally(1.0, 1), "dispatches": MetricTally(4.0, 3)},
        identity={"policy_revision": "second"},
        files={"y": 5, "z": 3},
    )
    first.merge(second)
    assert first.counts == {("p", "s"): Counter(correct=2, incorrect=3, abandoned=1), ("p", "t"): Counter(correct=1)}
    assert first.errors == 3
    assert first.coverage == (
        FaultCoverage("s", 0, "a", 2, 1),
        FaultCoverage("s", 1, "b", 3, 2),
        FaultCoverage("t", 0, "c", 2, 0),
    )
    assert first.metrics == {"dispatches": MetricTally(7.0, 5), "reads": MetricTally(1.0, 1)}
    assert first.identity == {"policy_revision": "first"}
    assert first.files == {"x": 1, "y": 5, "z": 3}
    assert first.cases == 7
    # The second piece is left as it was.
    assert second.counts == {("p", "s"): Counter(incorrect=2, abandoned=1), ("p", "t"): Counter(correct=1)}
    assert second.metrics == {"reads": MetricTally(1.0, 1), "dispatches": MetricTally(4.0, 3)}


def test_merging_into_an_empty_tally_gives_the_piece() -> None:
    merged = CellResult()
    merged.merge(_a_tally())
    assert merged == dataclasses.replace(_a_tally(), summary_part=None)


def test_merging_keeps_the_lowest_seed_of_each_failing_outcome_and_adds_the_new_ones() -> None:
    merged = CellResult(notable=[_line(5), _error(7), _line(6, "abandoned")])
    merged.merge(
        CellResult(
            notable=[
                _line(3),  # lower: takes the place of seed 5
                _line(9, "abandoned"),  # higher: seed 6 stays
                _line(4, "unresolved"),  # new outcome: added
                _line(2, policy="q"),  # another policy: added
                _line(1, scenario="t"),  # another scenario: added
                _line(8, "unresolved"),  # higher than the one just added
                _error(2),
            ]
        )
    )
    assert merged.notable == [
        _line(3),
        _error(7),
        _line(6, "abandoned"),
        _line(4, "unresolved"),
        _line(2, policy="q"),
        _line(1, scenario="t"),
        _error(2),
    ]


def test_merging_keeps_the_line_it_has_at_the_same_seed() -> None:
    kept = CaseLine("p", "s", 4, "incorrect", "first")
    merged = CellResult(notable=[kept])
    merged.merge(CellResult(notable=[CaseLine("p", "s", 4, "incorrect", "second")]))
    assert merged.notable == [kept]


def test_merging_names_harness_errors_up_to_the_cap_counting_those_it_has() -> None:
    merged = CellResult(notable=[_line(1), *(_error(100 + i) for i in range(NOTABLE_MAX - 2))])
    merged.merge(CellResult(notable=[_error(1), _error(2), _error(3), _line(0)], errors=4))
    assert merged.notable == [
        _line(0),
        *(_error(100 + i) for i in range(NOTABLE_MAX - 2)),
        _error(1),
        _error(2),
    ]
    assert merged.errors == 4
    # Lines that are no harness error do not count toward the cap.
    merged = CellResult(notable=[_line(i, scenario=f"s{i}") for i in range(NOTABLE_MAX)])
    merged.merge(CellResult(notable=[_error(1)]))
    assert merged.notable[-1] == _error(1) and len(merged.notable) == NOTABLE_MAX + 1


def test_a_harness_error_is_never_taken_for_the_first_case_of_an_outcome() -> None:
    """A line with an error is matched with no line, and no line is matched with it."""
    merged = CellResult(notable=[CaseLine("p", "s", 5, "incorrect", "r5", "why")])
    merged.merge(CellResult(notable=[_line(6)]))
    assert merged.notable == [CaseLine("p", "s", 5, "incorrect", "r5", "why"), _line(6)]


def test_the_identity_of_the_first_piece_that_has_one_is_kept() -> None:
    merged = CellResult()
    merged.merge(CellResult(identity={"task_id": "a"}))
    merged.merge(CellResult(identity={"task_id": "b"}))
    assert merged.identity == {"task_id": "a"}


# --- a case noted --------------------------------------------------------------------------------------------------


def _report(
    seed: int, outcome: str = "incorrect", policy: str = "p", error: str | None = None, policy_error: str | None = None
) -> CaseReport:
    """What ``_note`` reads of a case report."""
    fields = {"scenario": "s", "reproduce": f"run {policy} {seed}"}
    return cast(
        CaseReport,
        SimpleNamespace(policy=policy, seed=seed, outcome=outcome, error=error, policy_error=policy_error, **fields),
    )


def _noted(seed: int, outcome: str = "incorrect", policy: str = "p", policy_error: str | None = None) -> CaseLine:
    return CaseLine(policy, "s", seed, outcome, f"run {policy} {seed}", None, policy_error)


def test_a_failing_case_is_noted_at_its_lowest_seed_in_its_place(reports: dict[int, CaseReport]) -> None:
    result = CellResult()
    for seed in (10, 3, 12, 5, 2):
        _note(result, reports[seed])
    low = reports[2]
    assert result.notable == [CaseLine(POLICY, SCENARIO, 2, "incorrect", low.reproduce, None, low.policy_error)]
    assert result.errors == 0
    result = CellResult()
    for report in (
        _report(5, policy_error="E5"),
        _report(9, "abandoned", policy_error="E9"),
        _report(7, policy_error="E7"),  # higher: seed 5 stays
        _report(4, "unresolved"),
        _report(3, "abandoned", policy_error="E3"),  # lower: takes seed 9's place
        _report(2, policy="q"),  # another policy
        _report(1, "correct"),  # not failing: not noted
        _report(1, "escalated"),
        _report(4, policy_error="E4"),  # lower: takes seed 5's place
    ):
        _note(result, report)
    assert result.notable == [
        _noted(4, policy_error="E4"),
        _noted(3, "abandoned", policy_error="E3"),
        _noted(4, "unresolved"),
        _noted(2, policy="q"),
    ]
    assert result.errors == 0


def test_a_harness_error_is_counted_always_and_named_up_to_the_cap(reports: dict[int, CaseReport]) -> None:
    case = load_grid([POLICY], [SCENARIO], [4]).cases[0]
    failed = failed_report(case, "its worker died", 2.0)
    result = CellResult(notable=[CaseLine("x", "y", 1, "incorrect", "r") for _ in range(NOTABLE_MAX)])
    _note(result, failed)
    assert result.errors == 1
    assert result.notable[NOTABLE_MAX:] == [
        CaseLine(POLICY, SCENARIO, 4, "harness_error", failed.reproduce, failed.error)
    ]
    assert failed.error
    for _ in range(NOTABLE_MAX + 2):
        _note(result, failed)
    assert result.errors == NOTABLE_MAX + 3
    assert len(result.notable) == 2 * NOTABLE_MAX
    # An error is noted even after a failing line of the same outcome: a failed case is never merged into one.
    result = CellResult(notable=[CaseLine(POLICY, SCENARIO, 1, "harness_error", "r")])
    _note(result, failed)
    assert result.notable == [
        CaseLine(POLICY, SCENARIO, 1, "harness_error", "r"),
        CaseLine(POLICY, SCENARIO, 4, "harness_error", failed.reproduce, failed.error),
    ]


def test_the_identity_is_what_ran(reports: dict[int, CaseReport]) -> None:
    r = reports[1]
    assert _identity(r) == {
        "policy_revision": r.policy_revision,
        "scenario_revision": r.scenario_revision,
        "task_id": r.task_id,
        "action_id": r.action_id,
    }


# --- where a piece writes -----------------------------------------------------------------------------------------


def test_a_pieces_rows_wait_under_parts_named_by_cell_and_part() -> None:
    job = CellJob("p", "s", [1], Path("out"), part=3)
    assert summary_part_path(Path("/run"), job, 5) == Path("/run/.parts/000005-000003.csv")
    assert summary_part_path(Path("run"), CellJob("p", "s", [1], Path("x")), 1234567) == Path(
        "run/.parts/1234567-000000.csv"
    )


def test_a_file_is_listed_relative_to_the_run_with_slashes() -> None:
    assert _within(Path("/run"), Path("/run/cases/p/s/seed-1/recovery.json")) == "cases/p/s/seed-1/recovery.json"
    with pytest.raises(ValueError):
        _within(Path("/run"), Path("/elsewhere/x"))


def test_files_are_in_place_only_when_each_is_there_at_its_size(tmp_path: Path) -> None:
    (tmp_path / "a").write_bytes(b"12345")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b").write_bytes(b"")
    assert files_in_place(tmp_path, {})
    assert files_in_place(tmp_path, {"a": 5, "sub/b": 0})
    assert not files_in_place(tmp_path, {"a": 4, "sub/b": 0})
    assert not files_in_place(tmp_path, {"a": 5, "sub/b": 1})
    assert not files_in_place(tmp_path, {"missing": 0, "a": 5})
    assert not files_in_place(tmp_path, {"a": 5, "missing": 0})
    assert not files_in_place(tmp_path, {"a/under-a-file": 0})


def test_a_cells_scenario_is_its_one_scenario_or_the_name_its_variants_share() -> None:
    assert cell_scenario(["lost_response"]) == "lost_response"
    assert cell_scenario(["crash-after_effect"]) == "crash-after_effect"
    for phase in CONNECTOR_PHASES:
        assert cell_scenario([f"crash-{phase}", "crash-other"]) == "crash"
    assert cell_scenario(["a", "b-after_effect"]) == "a"
    assert cell_scenario(["crash_after_effect", "x"]) == "crash_after_effect"
    assert cell_scenario(["crash-after_effect-before_started", "x"]) == "crash-after_effect"


# --- a piece run and written -----------------------------------------------------------------------------------------


def _written(out: Path) -> set[str]:
    return {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()}


def _recovery(seed: int) -> str:
    return f"cases/{POLICY}/{SCENARIO}/seed-{seed}/recovery.json"


RECORDS = f"cases/{POLICY}/{SCENARIO}/records-000002.jsonl.gz"


@pytest.mark.parametrize(
    ("seeds", "cap", "kept"),
    [
        (range(1, 13), None, FAILING_SEEDS),
        (range(1, 13), 2, [1, 2]),
        (range(1, 13), 5, FAILING_SEEDS),
        (range(1, 13), 9, FAILING_SEEDS),
        (range(1, 13), 0, []),
        (range(12, 0, -1), 3, [12, 10, 5]),
        (range(3, 5), 1, []),
    ],
)
def test_a_compact_piece_writes_its_records_and_the_first_failing_cases_up_to_its_cap(
    seeds: range, cap: int | None, kept: list[int], reports: dict[int, CaseReport], tmp_path: Path
) -> None:
    out = tmp_path / "run"
    job = CellJob(POLICY, SCENARIO, seeds, out, part=2, parts=3, records="compact", failing_files=cap)
    result = execute_cell(job, 7)
    rows = ".parts/000007-000002.csv"
    assert _written(out) == {RECORDS, rows, ".parts/000007-000002.json", *map(_recovery, kept)}
    texts = {_recovery(s): recovery_json(reports[s]) for s in kept}
    assert {name: (out / name).read_text(encoding="utf-8") for name in texts} == texts
    assert result.files == {
        **{name: len(text.encode()) for name, text in texts.items()},
        RECORDS: (out / RECORDS).stat().st_size,
        rows: (out / rows).stat().st_size,
    }
    with gzip.open(out / RECORDS, "rt", encoding="utf-8") as handle:
        assert handle.read() == "".join(record_line(reports[s]) for s in seeds)
    assert result.counts == {(POLICY, SCENARIO): Counter(reports[s].outcome for s in seeds)}
    assert result.cases == len(seeds)
    assert json.loads((out / ".parts/000007-000002.json").read_text(encoding="utf-8")) == json.loads(result.to_json())


def test_a_full_piece_writes_a_recovery_json_per_case_whatever_its_cap(
    reports: dict[int, CaseReport], tmp_path: Path
) -> None:
    out = tmp_path / "run"
    result = execute_cell(CellJob(POLICY, SCENARIO, range(1, 13), out, failing_files=1))
    names = {_recovery(s): recovery_json(reports[s]) for s in range(1, 13)}
    assert _written(out) == {*names, ".parts/000000-000000.csv", ".parts/000000-000000.json"}
    rows = (out / ".parts/000000-000000.csv").read_text(encoding="utf-8")
    assert result.files == {
        **{name: len(text.encode()) for name, text in names.items()},
        ".parts/000000-000000.csv": len(rows.encode()),
    }
    assert result.summary_part == out / ".parts/000000-000000.csv"
    assert result.errors == 0 and result.cases == 12


def test_a_piece_with_a_case_not_run_counts_it_in_no_coverage(tmp_path: Path) -> None:
    """follow_and_inspect x newer_write_held: two faults and an operator event, each reached and fired in every
    case that ran; the case given up on counts in neither."""
    seeds = range(1, 5)
    result = execute_cell(CellJob("follow_and_inspect", "newer_write_held", seeds, tmp_path, failed=((1, "died"),)))
    grid = load_grid(["follow_and_inspect"], ["newer_write_held"], [1])
    scenario = grid.cases[0].scenario
    assert (len(scenario.faults), len(scenario.operator)) == (2, 1)
    faults = [cell_module.describe(f) for f in scenario.faults]
    event = cell_module.describe_event(scenario.operator[0])
    assert result.coverage == (
        FaultCoverage("newer_write_held", 0, faults[0], 3, 3, "fault"),
        FaultCoverage("newer_write_held", 1, faults[1], 3, 3, "fault"),
        FaultCoverage("newer_write_held", 2, event, 3, 3, "operator"),
    )
    assert result.counts == {("follow_and_inspect", "newer_write_held"): Counter(correct=3, harness_error=1)}
    assert result.errors == 1
    assert [(n.seed, n.outcome, n.error) for n in result.notable] == [(2, "harness_error", "died")]


def test_a_piece_sums_every_logged_metric_over_its_cases(reports: dict[int, CaseReport], tmp_path: Path) -> None:
    result = execute_cell(CellJob(POLICY, SCENARIO, range(1, 13), tmp_path))
    logged = [name for name in cell_module._LOGGED]
    assert list(result.metrics) == logged
    for name in logged:
        known = [float(v) for r in reports.values() if (v := r.metrics.get(name)) is not None]
        assert result.metrics[name] == MetricTally(sum(known), len(known)), name
    assert any(t.known < 12 for t in result.metrics.values())  # a metric some case does not know
    assert any(t.total > 0 for t in result.metrics.values())


def test_a_pieces_rows_are_its_cases_in_the_order_run(reports: dict[int, CaseReport], tmp_path: Path) -> None:
    result = execute_cell(CellJob(POLICY, SCENARIO, [3, 1, 2], tmp_path))
    assert result.summary_part is not None
    text = result.summary_part.read_text(encoding="utf-8")
    expected = io.StringIO()
    writer = csv.writer(expected, lineterminator="\n")
    for seed in (3, 1, 2):
        writer.writerow(summary_row(reports[seed]))
    assert text == expected.getvalue()


@pytest.mark.parametrize("records", ["full", "compact"])
def test_a_piece_that_draws_draws_the_lowest_seed_of_each_failing_outcome(
    records: str, reports: dict[int, CaseReport], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    drawn: list[tuple[list[Path], int]] = []
    monkeypatch.setattr(cell_module, "draw_timelines", lambda paths, n: drawn.append((list(paths), n)))
    out = tmp_path / "run"
    failed = ((0, "died"), (1, "died"))  # seeds 12 and 10: harness errors, drawn no timeline
    seeds = [12, 10, 5, 2, 4, 1, 3]
    execute_cell(CellJob(POLICY, SCENARIO, seeds, out, records=records, timelines=True, failed=failed))  # type: ignore[arg-type]
    assert drawn == [([case_path(out, reports[1])], 1)]
    drawn.clear()
    execute_cell(CellJob(POLICY, SCENARIO, [3, 4], tmp_path / "correct", records=records, timelines=True))  # type: ignore[arg-type]
    execute_cell(CellJob(POLICY, SCENARIO, seeds, tmp_path / "not", records=records))  # type: ignore[arg-type]
    assert drawn == []


@pytest.mark.parametrize(
    ("records", "cap", "expected"), [("full", None, [1, 3]), ("compact", None, [1, 3]), ("compact", 2, [12, 11])]
)
def test_a_piece_that_draws_draws_one_timeline_per_failing_outcome_of_those_it_wrote(
    records: str, cap: int | None, expected: list[int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """retry_same_key x connector_down_when_followed ends incorrect at seeds 1, 2, 5, 10 and 12 and abandoned at
    the others: one picture per outcome, at its lowest seed of those given a recovery.json, in the order the
    outcomes first came."""
    drawn: list[list[Path]] = []
    monkeypatch.setattr(cell_module, "draw_timelines", lambda paths, n: drawn.append(list(paths)))
    policy, scenario = "retry_same_key", "connector_down_when_followed"
    seeds = range(12, 0, -1)
    job = CellJob(policy, scenario, seeds, tmp_path, records=records, timelines=True, failing_files=cap)  # type: ignore[arg-type]
    execute_cell(job)
    folder = tmp_path / "cases" / policy / scenario
    assert drawn == [[folder / f"seed-{seed}" / "recovery.json" for seed in expected]]
    outcomes = {
        s: json.loads((folder / f"seed-{s}" / "recovery.json").read_text(encoding="utf-8"))["outcome"] for s in expected
    }
    assert outcomes == dict(zip(expected, ["incorrect", "abandoned"], strict=True))


# --- a run's coverage, over cells --------------------------------------------------------------------------------


COVERAGE = (
    FaultCoverage("s", 0, "a", 3, 0),
    FaultCoverage("s", 1, "ev at_s=1.0", 2, 0, "operator"),
    FaultCoverage("t", 0, "b", 1, 1),
    FaultCoverage("t", 1, "c", 0, 0),
    FaultCoverage("u", 0, "d", 4, 2, "operator"),
)


def test_unfired_is_what_fired_in_no_case() -> None:
    assert unfired(COVERAGE) == (COVERAGE[0], COVERAGE[1], COVERAGE[3])
    assert unfired(iter(COVERAGE)) == (COVERAGE[0], COVERAGE[1], COVERAGE[3])
    assert unfired(()) == ()


def test_unfired_is_unknown_where_a_case_of_its_scenario_did_not_finish() -> None:
    assert unfired_or_unknown(COVERAGE, {}) == (3, 0)
    assert unfired_or_unknown(COVERAGE, {"s": 1}) == (1, 2)
    assert unfired_or_unknown(COVERAGE, {"t": 2, "s": 0}) == (2, 1)
    assert unfired_or_unknown(COVERAGE, {"u": 3}) == (3, 0)
    assert unfired_or_unknown(iter(COVERAGE), {"s": 1, "t": 1}) == (0, 3)


def test_harness_errors_are_counted_per_scenario_over_every_policy() -> None:
    counts = {
        ("p", "s"): Counter(correct=1, harness_error=2),
        ("q", "s"): Counter(harness_error=3, incorrect=1),
        ("p", "t"): Counter(correct=4),
        ("q", "u"): Counter(harness_error=1),
    }
    assert harness_errors(counts) == Counter(s=5, u=1, t=0)
    assert dict(harness_errors(counts)) == {"s": 5, "t": 0, "u": 1}
    assert harness_errors({}) == Counter()


def test_coverage_is_summed_per_declared_fault_in_the_order_first_seen() -> None:
    parts = [
        FaultCoverage("t", 0, "b", 1, 0),
        FaultCoverage("s", 0, "a", 2, 1),
        FaultCoverage("t", 0, "b", 3, 2),
        FaultCoverage("s", 1, "e", 1, 1, "operator"),
        FaultCoverage("s", 0, "a", 0, 0),
        FaultCoverage("t", 0, "b", 1, 1),
    ]
    assert merge_coverage(iter(parts)) == (
        FaultCoverage("t", 0, "b", 5, 3),
        FaultCoverage("s", 0, "a", 2, 1),
        FaultCoverage("s", 1, "e", 1, 1, "operator"),
    )
    assert merge_coverage([]) == ()


def test_coverage_json_is_every_fault_then_every_event_with_the_counts() -> None:
    text = coverage_json(COVERAGE, Counter(s=2))
    assert text == (
        "{\n"
        '  "faults": [\n'
        "    {\n"
        '      "scenario": "s",\n'
        '      "fault": "a",\n'
        '      "index": 0,\n'
        '      "reached": 3,\n'
        '      "fired": 0,\n'
        '      "harness_errors": 2\n'
        "    },\n"
        "    {\n"
        '      "scenario": "t",\n'
        '      "fault": "b",\n'
        '      "index": 0,\n'
        '      "reached": 1,\n'
        '      "fired": 1,\n'
        '      "harness_errors": 0\n'
        "    },\n"
        "    {\n"
        '      "scenario": "t",\n'
        '      "fault": "c",\n'
        '      "index": 1,\n'
        '      "reached": 0,\n'
        '      "fired": 0,\n'
        '      "harness_errors": 0\n'
        "    }\n"
        "  ],\n"
        '  "operator_events": [\n'
        "    {\n"
        '      "scenario": "s",\n'
        '      "event": "ev at_s=1.0",\n'
        '      "index": 1,\n'
        '      "reached": 2,\n'
        '      "fired": 0,\n'
        '      "harness_errors": 2\n'
        "    },\n"
        "    {\n"
        '      "scenario": "u",\n'
        '      "event": "d",\n'
        '      "index": 0,\n'
        '      "reached": 4,\n'
        '      "fired": 2,\n'
        '      "harness_errors": 0\n'
        "    }\n"
        "  ],\n"
        '  "unfired": 1,\n'
        '  "unknown": 2\n'
        "}\n"
    )
    assert json.loads(coverage_json((), {})) == {"faults": [], "operator_events": [], "unfired": 0, "unknown": 0}


# --- a cell split into pieces --------------------------------------------------------------------------------------


def test_records_are_compact_above_the_threshold_unless_chosen() -> None:
    assert (_records("auto", COMPACT_ABOVE), _records("auto", COMPACT_ABOVE + 1)) == ("full", "compact")
    assert (_records("auto", 0), _records("full", COMPACT_ABOVE * 5), _records("compact", 1)) == (
        "full",
        "full",
        "compact",
    )


def _job(seeds: range, part: int, parts: int, **kw: object) -> CellJob:
    return CellJob("p", "s", seeds, Path("out"), part=part, parts=parts, records="compact", **kw)  # type: ignore[arg-type]


def test_a_small_cell_is_one_piece_with_everything_it_was_given() -> None:
    cell = Cell("p", "s", range(1, 2 * PIECE_MIN))
    assert pieces(cell, Path("out"), 8, "compact", True, 2.5, 3) == [
        _job(range(1, 2 * PIECE_MIN), 0, 1, timelines=True, case_timeout_s=2.5, failing_files=3)
    ]
    assert pieces(Cell("p", "s", [5, 3, 4]), Path("out"), 1, "full") == [
        CellJob("p", "s", [5, 3, 4], Path("out"), records="full")
    ]
    assert pieces(Cell("p", "s", [5, 3, 4]), Path("out"), 4, "full", True)[0].timelines


def test_a_cell_is_shared_by_the_processes_in_pieces_as_even_as_they_come() -> None:
    cell = Cell("p", "s", range(1, 4 * PIECE_MIN + 4))  # 403 seeds over 4 processes: 101, 101, 101, 100
    assert pieces(cell, Path("out"), 4, "compact", True, None, 7) == [
        _job(range(1, 102), 0, 4, timelines=True, failing_files=2),
        _job(range(102, 203), 1, 4, failing_files=2),
        _job(range(203, 304), 2, 4, failing_files=2),
        _job(range(304, 404), 3, 4, failing_files=1),
    ]
    # No more pieces than processes, and none under the minimum.
    assert [len(j.seeds) for j in pieces(cell, Path("out"), 9, "compact")] == [101, 101, 101, 100]
    assert [len(j.seeds) for j in pieces(Cell("p", "s", range(4 * PIECE_MIN - 1)), Path("out"), 9, "full")] == [
        133,
        133,
        133,
    ]
    assert len(pieces(Cell("p", "s", range(PIECE_MIN)), Path("out"), 9, "full")) == 1
    assert len(pieces(Cell("p", "s", range(2 * PIECE_MIN)), Path("out"), 9, "full")) == 2
    assert len(pieces(Cell("p", "s", range(2 * PIECE_MIN)), Path("out"), 0, "full")) == 1


def test_a_large_cell_is_cut_into_pieces_of_at_most_the_cap() -> None:
    cell = Cell("p", "s", range(2 * PIECE_MAX + 1))
    assert [(j.seeds, j.part, j.parts) for j in pieces(cell, Path("out"), 1, "compact")] == [
        (range(0, 3334), 0, 3),
        (range(3334, 6668), 1, 3),
        (range(6668, 10001), 2, 3),
    ]
    assert len(pieces(Cell("p", "s", range(2 * PIECE_MAX)), Path("out"), 1, "compact")) == 2


def test_only_a_first_piece_below_every_other_seed_draws() -> None:
    down = Cell("p", "s", range(4 * PIECE_MIN, 0, -1))
    assert [j.timelines for j in pieces(down, Path("out"), 4, "compact", True)] == [False] * 4
    up = Cell("p", "s", range(1, 4 * PIECE_MIN + 1))
    assert [j.timelines for j in pieces(up, Path("out"), 4, "compact", True)] == [True, False, False, False]
    assert [j.timelines for j in pieces(up, Path("out"), 4, "compact")] == [False] * 4
    # The first piece's highest seed just under the others' lowest draws; equal to it does not.
    seeds = [*range(1, PIECE_MIN + 1), PIECE_MIN + 1, *range(PIECE_MIN + 2, 2 * PIECE_MIN + 1)]
    assert pieces(Cell("p", "s", seeds), Path("out"), 2, "compact", True)[0].timelines
    seeds[PIECE_MIN] = PIECE_MIN
    assert not pieces(Cell("p", "s", seeds), Path("out"), 2, "compact", True)[0].timelines


@given(cap=st.integers(0, 50), n=st.integers(1, 1200), concurrency=st.integers(1, 12))
def test_the_pieces_hold_the_seeds_in_order_and_share_the_cap(cap: int, n: int, concurrency: int) -> None:
    cell = Cell("p", "s", range(n))
    jobs = pieces(cell, Path("out"), concurrency, "compact", failing_files=cap)
    assert [s for j in jobs for s in j.seeds] == list(range(n))
    assert [j.part for j in jobs] == list(range(len(jobs)))
    assert {j.parts for j in jobs} == {len(jobs)}
    shares = [j.failing_files for j in jobs]
    assert shares == [cap // len(jobs) + (i < cap % len(jobs)) for i in range(len(jobs))]
    sizes = [len(j.seeds) for j in jobs]
    assert max(sizes) - min(sizes) <= 1 and sizes == sorted(sizes, reverse=True)


# --- the pieces of each cell, as they come in ------------------------------------------------------------------------


def test_a_cell_is_complete_when_its_last_piece_comes_in() -> None:
    results = _Results(Counter({0: 2, 1: 1}))
    assert not results.complete(0) and not results.complete(1)
    first = CellResult(counts={("p", "s"): Counter(correct=1)}, files={"a": 1})
    assert results.add(0, first) is False
    assert not results.complete(0)
    assert results.add(1, CellResult(counts={("q", "t"): Counter(incorrect=2)})) is True
    assert results.add(0, CellResult(counts={("p", "s"): Counter(correct=2)}, files={"b": 2})) is True
    assert results.complete(0) and results.complete(1)
    assert results[0] == CellResult(counts={("p", "s"): Counter(correct=3)}, files={"a": 1, "b": 2})
    assert results[1] == CellResult(counts={("q", "t"): Counter(incorrect=2)})
    assert results[0] is not first and first.counts == {("p", "s"): Counter(correct=1)}
    assert results.seen == Counter({0: 2, 1: 1})
    assert results.complete(2)  # a cell of no piece
    assert results.add(0, CellResult()) is False  # a piece too many is no completion
