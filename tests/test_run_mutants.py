"""Writing, reading and re-creating case records, in process: what the twenty-seventh mutation pass found no test
holding (tests/MUTANTS.md).

``harness run`` runs its cases in worker processes, so a test that goes through the command line sees the code of
``harness.run.files``, ``case``, ``cell`` and ``replay`` only as a worker imports it. These tests call the code here:
a piece of a cell written by ``execute_cell``, its records read back by ``read_reports``, and a case re-created by
``replay(..., supervised=False)``. Every expectation is derived from the rule the code states: a record is the case's
``record_line``, a recovery.json its ``recovery_json``, a replay of what was written is the same, and a difference is
named at the deepest place it differs.
"""

from __future__ import annotations

import copy
import csv
import dataclasses
import gzip
import io
import json
import os
import shutil
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import SCENARIO_DIR

from harness.check.registry import METRIC_NAMES, METRICS
from harness.errors import InputError
from harness.gate.repro import repro_yaml
from harness.limits import CASE_TIMEOUT_MAX_S, DEFAULT_CASE_TIMEOUT_S
from harness.model import FAILING, SCHEMA_VERSION, CaseReport, entries
from harness.model.events import WorkerReported, event_data
from harness.policy import PolicyError
from harness.run.case import failed_report, run_case
from harness.run.cell import (
    NOTABLE_MAX,
    CaseLine,
    CellJob,
    CellResult,
    FaultCoverage,
    MetricTally,
    describe,
    describe_event,
    execute_cell,
    files_in_place,
    summary_part_path,
)
from harness.run.files import (
    SUMMARY_COLUMNS,
    case_path,
    check_new_or_empty,
    read_reports,
    record_line,
    recovery_json,
    summary_row,
    write_atomic,
    write_summary,
)
from harness.run.plan import UsageError, load_grid, reproduce_command
from harness.run.replay import (
    DIFFERENCES_SHOWN,
    PROPERTY_NAMES,
    _budget,
    _differences,
    _listed,
    printable,
    replay,
    timeline_text,
)
from harness.scenario import ScenarioError
from harness.seeds import SEED_MAX
from harness.sim import simulate
from harness.version import __version__

#: A cell with correct cases and incorrect ones among its first seeds.
POLICY, SCENARIO = "retry_same_key", "connector_no_record_yet"
SEEDS = range(1, 13)


@pytest.fixture(scope="module")
def reports() -> dict[int, CaseReport]:
    """Each seed's report, run here."""
    return {case.seed: run_case(case)[0] for case in load_grid([POLICY], [SCENARIO], SEEDS).cases}


def _lines(path: Path) -> list[str]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return handle.readlines()


# --- the differences a replay names ------------------------------------------------------------------------------


def _recorded(report: CaseReport) -> dict[str, Any]:
    data = json.loads(recovery_json(report))
    assert isinstance(data, dict)
    return data


def _shown(value: object) -> str:
    """A value as a difference shows it: its JSON, cut to 120 characters."""
    return json.dumps(value)[:120]


def test_a_difference_is_named_at_the_deepest_place_with_both_values(reports: dict[int, CaseReport]) -> None:
    """Rule: one line per value that differs, at its path (``timeline[i].data.key``), saying what was recorded and
    what is there now; equal values say nothing."""
    recorded = _recorded(reports[1])
    assert list(_differences(recorded, copy.deepcopy(recorded), "")) == []
    now = copy.deepcopy(recorded)
    i, entry = next((i, e) for i, e in enumerate(now["timeline"]) if e["data"])
    key = next(iter(entry["data"]))
    was = entry["data"][key]
    entry["data"][key] = [was, "changed"]
    assert list(_differences(recorded, now, "")) == [
        f"timeline[{i}].data.{key}: recorded {_shown(was)}, now {_shown([was, 'changed'])}"
    ]
    # Two places at once: each named, in the order of the keys now written.
    now["seed"] = recorded["seed"] + 1
    assert list(_differences(recorded, now, "")) == [
        f"seed: recorded {recorded['seed']}, now {recorded['seed'] + 1}",
        f"timeline[{i}].data.{key}: recorded {_shown(was)}, now {_shown([was, 'changed'])}",
    ]


def test_a_key_on_one_side_only_is_nothing_on_the_other(reports: dict[int, CaseReport]) -> None:
    """Rule: a key missing on one side shows as ``nothing`` there; the keys now written come first, then those
    only recorded."""
    recorded = _recorded(reports[1])
    now = copy.deepcopy(recorded)
    removed = now.pop("task_id")
    now["added"] = {"x": 1}
    assert list(_differences(recorded, now, "")) == [
        f"added: recorded nothing, now {_shown({'x': 1})}",
        f"task_id: recorded {_shown(removed)}, now nothing",
    ]


def test_a_list_of_another_length_names_the_lengths_after_the_entries_both_have(
    reports: dict[int, CaseReport],
) -> None:
    """Rule: entries both lists have are compared by index; a length that differs is one more line; an empty side
    is shown whole (one line, not one per entry)."""
    recorded = _recorded(reports[1])
    n = len(recorded["timeline"])
    assert n > 2
    now = copy.deepcopy(recorded)
    del now["timeline"][-1]
    now["timeline"][0]["at_s"] = recorded["timeline"][0]["at_s"] + 1
    assert list(_differences(recorded, now, "")) == [
        f"timeline[0].at_s: recorded {_shown(recorded['timeline'][0]['at_s'])}, "
        f"now {_shown(recorded['timeline'][0]['at_s'] + 1)}",
        f"timeline: recorded {n} entries, now {n - 1}",
    ]
    now = copy.deepcopy(recorded)
    now["timeline"] = []
    assert list(_differences(recorded, now, "")) == [f"timeline: recorded {_shown(recorded['timeline'])}, now []"]
    now = copy.deepcopy(recorded)
    now["metrics"] = {}
    assert list(_differences(recorded, now, "")) == [f"metrics: recorded {_shown(recorded['metrics'])}, now {{}}"]


@pytest.mark.parametrize(("was", "now"), [(1, 1.0), (1, True), (0, False), ("1", 1), ("x" * 200, "x" * 199)])
def test_values_equal_in_python_but_of_another_type_differ(was: object, now: object) -> None:
    """Rule: a value differs when it is unequal or of another type (JSON writes 1, 1.0 and true apart); each side
    is shown as its JSON, cut to 120 characters."""
    assert list(_differences({"a": {"b": was}}, {"a": {"b": now}}, "")) == [
        f"a.b: recorded {_shown(was)}, now {_shown(now)}"
    ]


def test_at_most_ten_differences_are_listed_then_how_many_more() -> None:
    """Rule: up to ``DIFFERENCES_SHOWN`` lines are listed as found; past that, the first ones and a count of the
    rest."""
    found = [f"d{i}" for i in range(DIFFERENCES_SHOWN + 3)]
    assert _listed(found[:DIFFERENCES_SHOWN]) == found[:DIFFERENCES_SHOWN]
    assert _listed(found) == [*found[:DIFFERENCES_SHOWN], "and 3 more differences"]


# --- a piece of a cell, written here ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def compact(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A compact piece (part 3) of the cell, written by ``execute_cell`` in this process."""
    out = tmp_path_factory.mktemp("compact") / "run"
    execute_cell(CellJob(POLICY, SCENARIO, SEEDS, out, part=3, records="compact"), cell=5)
    return out


@pytest.fixture(scope="module")
def full(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same seeds written as a recovery.json per case."""
    out = tmp_path_factory.mktemp("full") / "run"
    execute_cell(CellJob(POLICY, SCENARIO, SEEDS, out, part=3), cell=5)
    return out


def test_a_compact_piece_writes_each_case_as_its_record_line_in_seed_order(
    compact: Path, reports: dict[int, CaseReport]
) -> None:
    """Rule: a compact piece writes ``cases/<policy>/<scenario>/records-<part, six digits>.jsonl.gz``, one
    ``record_line`` per case in the order its seeds were given, and nothing else there but a recovery.json for each
    case that is not correct, holding its ``recovery_json``."""
    folder = compact / "cases" / POLICY / SCENARIO
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        ["records-000003.jsonl.gz", *(f"seed-{s}" for s, r in reports.items() if r.outcome != "correct")]
    )
    assert _lines(folder / "records-000003.jsonl.gz") == [record_line(reports[s]) for s in SEEDS]
    assert {r.outcome for r in reports.values()} >= {"correct", "incorrect"}
    for seed, report in reports.items():
        path = case_path(compact, report)
        assert path == compact / "cases" / POLICY / SCENARIO / f"seed-{seed}" / "recovery.json"
        if report.outcome == "correct":
            assert not path.parent.exists()
        else:
            assert path.read_text(encoding="utf-8") == recovery_json(report)


def test_a_recovery_json_is_the_cases_json_indented_by_two_and_a_record_the_same_on_one_line(
    reports: dict[int, CaseReport],
) -> None:
    """Rule: a recovery.json is the bytes ``json.dumps`` gives with ``indent=2`` (then a newline); a record is the
    same JSON on one line."""
    for report in reports.values():
        line = record_line(report)
        assert line.endswith("}\n") and "\n" not in line[:-1]
        assert recovery_json(report) == json.dumps(json.loads(line), indent=2) + "\n"


def test_a_full_piece_writes_each_case_as_its_recovery_json(full: Path, reports: dict[int, CaseReport]) -> None:
    """Rule: a full piece writes every case's ``recovery_json`` at its ``case_path``, and no records."""
    assert not list(full.rglob("records-*"))
    for report in reports.values():
        assert case_path(full, report).read_bytes() == recovery_json(report).encode()


def test_the_bytes_of_a_compact_piece_are_the_same_every_time(compact: Path, tmp_path: Path) -> None:
    """Rule: the same cases give the same bytes (gzip written with no name and no time in its header), and the
    files are ordinary files, readable as the umask allows, with no temporary file left."""
    again = tmp_path / "again"
    execute_cell(CellJob(POLICY, SCENARIO, SEEDS, again, part=3, records="compact"), cell=5)
    written = sorted(p.relative_to(compact) for p in compact.rglob("*") if p.is_file())
    assert written == sorted(p.relative_to(again) for p in again.rglob("*") if p.is_file())
    for name in written:
        if name.suffix != ".json":  # the tally names the summary part by its absolute path
            assert (again / name).read_bytes() == (compact / name).read_bytes(), name
    umask = os.umask(0)
    os.umask(umask)
    for name in written:
        assert (again / name).stat().st_mode & 0o777 == 0o666 & ~umask, name
        assert not name.name.endswith(".tmp") and not name.name.startswith("."), name
    record = (again / "cases" / POLICY / SCENARIO / "records-000003.jsonl.gz").read_bytes()
    assert record[3] & 0x08 == 0 and record[4:8] == bytes(4)  # no FNAME flag, MTIME 0


def test_a_piece_lists_every_file_it_wrote_with_its_size(compact: Path, full: Path, tmp_path: Path) -> None:
    """Rule: the tally's ``files`` names every file the piece wrote, relative to the run's folder in POSIX form,
    with its size; ``files_in_place`` holds until one is removed or changes size."""
    for out, records in ((compact, "compact"), (full, "full")):
        result = execute_cell(CellJob(POLICY, SCENARIO, SEEDS, out, part=3, records=records), cell=5)  # type: ignore[arg-type]
        on_disk = {
            p.relative_to(out).as_posix(): p.stat().st_size
            for p in out.rglob("*")
            if p.is_file() and p != out / ".parts" / "000005-000003.json"  # all but the tally itself
        }
        assert result.files == on_disk
        assert result.summary_part == summary_part_path(out, CellJob(POLICY, SCENARIO, SEEDS, out, part=3), 5)
        assert result.summary_part == out / ".parts" / "000005-000003.csv"
        assert files_in_place(out, result.files)
    copied = tmp_path / "copy"
    shutil.copytree(full, copied)
    result = execute_cell(CellJob(POLICY, SCENARIO, SEEDS, copied, part=3), cell=5)
    first = next(name for name in result.files if name.endswith("recovery.json"))
    path = copied / first
    path.write_bytes(path.read_bytes() + b" ")
    assert not files_in_place(copied, result.files)
    path.unlink()
    assert not files_in_place(copied, result.files)


def test_a_pieces_summary_rows_are_its_cases_rows_in_seed_order(full: Path, reports: dict[int, CaseReport]) -> None:
    """Rule: a piece's summary part holds ``summary_row`` of each case, in the order of its seeds, as CSV."""
    part = full / ".parts" / "000005-000003.csv"
    rows = io.StringIO()
    csv.writer(rows, lineterminator="\n").writerows(summary_row(reports[s]) for s in SEEDS)
    assert part.read_bytes() == rows.getvalue().encode()  # each row ends as the header does, in "\n"
    assert len(SUMMARY_COLUMNS) == len(summary_row(reports[1]))


def test_every_case_of_a_run_folder_is_read_back_once(
    compact: Path, full: Path, reports: dict[int, CaseReport]
) -> None:
    """Rule: ``read_reports`` gives every case a run folder holds by (policy, scenario, seed), from its
    recovery.json files and its compact records alike, each equal to the report written."""
    expected = {(POLICY, SCENARIO, s): r for s, r in reports.items()}
    assert read_reports(compact) == expected
    assert read_reports(full) == expected


RAISING = """
class Raising:
    name, revision = "raising", "1"

    def decide(self, situation):
        raise RuntimeError("cannot decide\\n" + "why " * 60)


POLICY = Raising()
"""


def test_a_summary_row_holds_the_case_column_by_column(
    reports: dict[int, CaseReport], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rule: a row has a cell per ``SUMMARY_COLUMNS``: the case's names, seed, outcome and verdict, each metric (an
    unknown one empty), the unknown reasons as ``metric: reason`` joined by ``; ``, and ``error``: why the harness
    could not judge the case, or else what the policy raised, on one line and whole; else empty."""
    (tmp_path / "raisingpol.py").write_text(RAISING, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    (raised_case,) = load_grid(["raisingpol:POLICY"], [SCENARIO], [1]).cases
    raised = run_case(raised_case)[0]
    assert raised.policy_error is not None and len(raised.policy_error) > 200 and "\n" in raised.policy_error
    failed = failed_report(raised_case, "OSError: the disk\nis full " + "x" * 300)
    two_unknown = reports[1].model_copy(update={"unknown": {"dispatches": "no record", "effects": "lost: the log"}})
    cases = [*reports.values(), raised, failed, two_unknown]
    assert any(v is None for r in cases for v in r.metrics.values()) and any(r.unknown for r in cases)
    for report in cases:
        row = dict(zip(SUMMARY_COLUMNS, summary_row(report), strict=True))
        for name in ("policy", "policy_revision", "scenario", "scenario_revision", "seed", "outcome", "verdict"):
            assert row[name] == getattr(report, name), name
        assert row["reproduce"] == report.reproduce
        for name in METRIC_NAMES:
            value = report.metrics.get(name)
            assert row[name] == ("" if value is None else value), name
        assert row["unknown"] == "; ".join(f"{k}: {v}" for k, v in report.unknown.items())
        error = report.error if report.outcome == "harness_error" else report.policy_error
        assert row["error"] == ("" if error is None else " ".join(error.split())), report.seed
    assert str(dict(zip(SUMMARY_COLUMNS, summary_row(failed), strict=True))["error"]).endswith("x" * 300)
    assert dict(zip(SUMMARY_COLUMNS, summary_row(two_unknown), strict=True))["unknown"] == (
        "dispatches: no record; effects: lost: the log"
    )
    raised_error = str(dict(zip(SUMMARY_COLUMNS, summary_row(raised), strict=True))["error"])
    assert raised_error.startswith("RuntimeError: cannot decide why why")


def test_a_file_written_atomically_is_whole_or_not_there(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rule: ``write_atomic`` makes the folders it needs and writes the text exactly (no newline translated), as
    an ordinary file the umask allows; when the rename fails, the file is as it was and no temporary file is left;
    ``write_summary`` writes the header then each part's rows in the order given, the same way."""
    path = tmp_path / "a" / "b" / "file.csv"
    write_atomic(path, "one\r\ntwo\n")
    assert path.read_bytes() == b"one\r\ntwo\n"
    umask = os.umask(0)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask
    parts = [tmp_path / "p1.csv", tmp_path / "p2.csv"]
    parts[0].write_text("r1\r\n", encoding="utf-8", newline="")
    parts[1].write_text("r2\nr3\n", encoding="utf-8", newline="")
    out = tmp_path / "out"
    out.mkdir()
    summary = write_summary(out, parts[::-1])
    assert summary == out / "summary.csv"
    assert summary.read_bytes() == (",".join(SUMMARY_COLUMNS) + "\nr2\nr3\nr1\r\n").encode()
    assert summary.stat().st_mode & 0o777 == 0o666 & ~umask

    def refused(*_: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr("harness.run.files.os.replace", refused)
    with pytest.raises(KeyboardInterrupt):
        write_atomic(path, "new")
    with pytest.raises(KeyboardInterrupt):
        write_summary(out, parts)
    assert path.read_bytes() == b"one\r\ntwo\n"
    assert summary.read_bytes().endswith(b"r1\r\n")
    assert sorted(p.name for p in path.parent.iterdir()) == ["file.csv"]
    assert sorted(p.name for p in out.iterdir()) == ["summary.csv"]


#: lost_response with a second fault at the first's site: where the first fires, the second is only reached, and
#: a policy that sends once (stop_on_timeout) never gives it an occurrence of its own. No shipped case reaches a
#: declared fault without firing it, so a tally that took the reached count from the fired count passed them all.
OVERLAPPING = "overlapping_faults"


def _overlapping(folder: Path) -> str:
    text = (SCENARIO_DIR / "lost_response.yaml").read_text(encoding="utf-8")
    lost = "  - {boundary: response_lost, nth: 1}\n"
    assert text.count(lost) == 1
    text = text.replace("name: lost_response", f"name: {OVERLAPPING}").replace(
        lost, lost + "  - {boundary: response_lost, nth: 1, count: 2}\n"
    )
    path = folder / f"{OVERLAPPING}.yaml"
    path.write_text(text, encoding="utf-8")
    return str(path)


@pytest.mark.parametrize(
    ("policy", "scenario"),
    [(POLICY, SCENARIO), ("follow_and_inspect", "newer_write_held"), ("stop_on_timeout", OVERLAPPING)],
)
def test_a_pieces_tally_is_what_its_cases_add_up_to(policy: str, scenario: str, tmp_path: Path) -> None:
    """Rule: a piece's tally counts its cases by outcome; names the lowest seed of each failing outcome (seeds
    given in any order) and every harness error; counts, for each declared fault and then each operator event,
    the cases that reached it and those it fired in (a case not run counts in neither); sums each logged metric over
    the cases that know it; and says the revisions and identities of what ran. A case the supervisor gave up on is
    written as its ``harness_error`` case, its reproduce command naming the budget."""
    seeds = list(reversed(SEEDS))
    failed = ((2, "its worker died"), (5, "the case ran longer than its wall-clock budget of 3 s"))
    name = scenario
    if scenario == OVERLAPPING:
        scenario = _overlapping(tmp_path)
    job = CellJob(policy, scenario, seeds, tmp_path / "run", failed=failed, case_timeout_s=3.0)
    result = execute_cell(job)
    grid = load_grid([policy], [scenario], seeds)
    ran = []
    for position, case in enumerate(grid.cases):
        reason = dict(failed).get(position)
        ran.append((failed_report(case, reason, 3.0), None) if reason else run_case(case))
    reports_ = [r for r, _ in ran]
    assert result.counts == {(policy, name): Counter(r.outcome for r in reports_)}
    assert result.errors == len(failed)
    assert all(case_path(job.out, r).read_text(encoding="utf-8") == recovery_json(r) for r in reports_)
    expected_notable = [
        CaseLine(r.policy, r.scenario, r.seed, r.outcome, r.reproduce, r.error) for r in reports_ if r.error
    ] + [
        CaseLine(r.policy, r.scenario, r.seed, r.outcome, r.reproduce, policy_error=r.policy_error)
        for outcome in FAILING
        for r in [min((r for r in reports_ if r.outcome == outcome), key=lambda r: r.seed, default=None)]
        if r is not None
    ]
    assert sorted(result.notable, key=repr) == sorted(expected_notable, key=repr)
    assert any(line.error and "--case-timeout 3" in line.reproduce for line in result.notable)
    scenario_ = grid.cases[0].scenario
    declared = [(describe(f), "fault") for f in scenario_.faults]
    declared += [(describe_event(e), "operator") for e in scenario_.operator]
    expected_coverage = []
    for i, (what, kind) in enumerate(declared):
        counts = [
            (sim.coverage if kind == "fault" else sim.operator_coverage)[
                i if kind == "fault" else i - len(scenario_.faults)
            ]
            for _, sim in ran
            if sim is not None
        ]
        reached = sum(1 for r, _ in counts if r > 0)
        fired = sum(1 for _, f in counts if f > 0)
        expected_coverage.append(FaultCoverage(scenario_.name, i, what, reached, fired, kind))  # type: ignore[arg-type]
    assert result.coverage == tuple(expected_coverage)
    if name == OVERLAPPING:  # the case this scenario is for: a fault reached in every case, fired in none
        assert [(c.reached, c.fired) for c in result.coverage] == [
            (len(seeds) - 2, len(seeds) - 2),
            (len(seeds) - 2, 0),
        ]
    for metric in METRICS:
        known = [float(v) for r in reports_ if (v := r.metrics.get(metric.name)) is not None]
        if metric.logged:
            assert result.metrics[metric.name] == MetricTally(sum(known), len(known)), metric.name
        else:
            assert metric.name not in result.metrics
    first = reports_[0]
    assert result.identity == {
        "policy_revision": first.policy_revision,
        "scenario_revision": first.scenario_revision,
        "task_id": first.task_id,
        "action_id": first.action_id,
    }
    # The tally is written beside the summary rows, and reads back as itself.
    assert result.summary_part is not None
    assert CellResult.from_json(result.summary_part.with_suffix(".json").read_text(encoding="utf-8")) == result


def test_a_piece_names_at_most_the_cap_of_harness_errors(tmp_path: Path) -> None:
    """Rule: a piece counts every harness error and names the first ``NOTABLE_MAX``."""
    seeds = range(1, NOTABLE_MAX + 4)
    failed = tuple((i, "its worker died") for i in range(len(seeds)))
    result = execute_cell(CellJob(POLICY, SCENARIO, seeds, tmp_path / "run", failed=failed))
    assert result.errors == len(seeds)
    assert [line.seed for line in result.notable] == list(seeds)[:NOTABLE_MAX]


def test_a_file_is_renamed_into_place_from_a_hidden_temporary_file_beside_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rule: ``write_atomic`` and ``write_summary`` write a temporary file in the folder of the file they make (a
    rename is atomic only within one file system), named ``.<name>.<random>.tmp`` so that no reader's pattern
    (``recovery.json``, ``records-*.jsonl.gz``, ``*.csv``) sees it, then rename it into place."""
    renamed: list[tuple[Path, Path]] = []
    real = os.replace

    def replace(source: str, target: str | Path) -> None:
        renamed.append((Path(source), Path(target)))
        real(source, target)

    monkeypatch.setattr("harness.run.files.os.replace", replace)
    path = tmp_path / "a" / "recovery.json"
    write_atomic(path, "{}")
    (tmp_path / "p.csv").write_text("r\n", encoding="utf-8")
    summary = write_summary(tmp_path, [tmp_path / "p.csv"])
    assert [target for _, target in renamed] == [path, summary]
    for source, target in renamed:
        assert source.parent == target.parent
        assert source.name.startswith(f".{target.name}.") and source.name.endswith(".tmp"), source.name


# --- re-creating a case -----------------------------------------------------------------------------------------


def test_a_record_and_a_recovery_json_replay_byte_for_byte(compact: Path, reports: dict[int, CaseReport]) -> None:
    """Rule: a case re-created from its record line, or from its recovery.json, is the same report, and the
    replay says so; seed-007 names seed 7."""
    records = compact / "cases" / POLICY / SCENARIO / "records-000003.jsonl.gz"
    for seed in (3, 7):
        for name in (f"{records}#seed-{seed}", f"{records}#seed-{seed:03d}"):
            again = replay(Path(name), supervised=False)
            assert (again.same, again.differences) == (True, ())
            assert again.report == reports[seed]
    failing = next(r for r in reports.values() if r.outcome != "correct")
    again = replay(case_path(compact, failing), supervised=False)
    assert (again.same, again.differences, again.report) == (True, (), failing)


def test_a_replay_names_what_differs_from_the_record(compact: Path, reports: dict[int, CaseReport]) -> None:
    """Rule: a record whose values are not what the case gives now is not the same, each difference named at its
    place; a recovery.json holding the same values written otherwise (indented by four) differs in its bytes
    alone, and says so."""
    records = compact / "cases" / POLICY / SCENARIO / "records-000003.jsonl.gz"
    lines = _lines(records)
    changed = json.loads(lines[4])
    seed, task = changed["seed"], changed["task_id"]
    changed["task_id"] = task + "-edited"
    tampered = records.with_name("records-000099.jsonl.gz")
    with gzip.open(tampered, "wt", encoding="utf-8") as handle:
        handle.writelines([*lines[:4], json.dumps(changed, separators=(",", ":")) + "\n", *lines[5:]])
    again = replay(Path(f"{tampered}#seed-{seed}"), supervised=False)
    assert again.same is False and again.report == reports[seed]
    assert again.differences == (f"task_id: recorded {json.dumps(task + '-edited')}, now {json.dumps(task)}",)
    tampered.unlink()
    failing = next(r for r in reports.values() if r.outcome != "correct")
    path = case_path(compact, failing)
    text = path.read_text(encoding="utf-8")
    try:
        path.write_text(json.dumps(json.loads(text), indent=4), encoding="utf-8")
        again = replay(path, supervised=False)
        assert not again.same
        assert again.differences == ("the bytes differ (formatting, or keys in another order)",)
    finally:
        path.write_text(text, encoding="utf-8")


def test_a_recovery_json_in_a_folder_named_with_seed_replays(reports: dict[int, CaseReport], tmp_path: Path) -> None:
    """Rule: only ``<record file>#seed-<n>`` names a record; a recovery.json is a recovery.json whatever its folders
    are called (``harness run --out 'run#seed-1'`` writes one there). replay() and read_case() took any path with
    '#seed-' in it for a record, and refused this one as a missing record file (found by this pass)."""
    from harness.present.analysis import load, read_case

    path = case_path(tmp_path / "run#seed-1", reports[1])
    path.parent.mkdir(parents=True)
    path.write_text(recovery_json(reports[1]), encoding="utf-8")
    assert replay(path, supervised=False).same
    assert read_case(path)["seed"] == reports[1].seed
    assert list(load(tmp_path / "run#seed-1")["seed"]) == [reports[1].seed]


def test_a_record_file_is_read_only_for_lines_written_as_records(compact: Path, tmp_path: Path) -> None:
    """Rule: a line of a record file is a case only when it begins as the harness writes one (with its schema
    version); a line holding the same case with its keys in another order is none, so that seed is not found."""
    records = compact / "cases" / POLICY / SCENARIO / "records-000003.jsonl.gz"
    lines = _lines(records)
    reordered = json.loads(lines[0])
    seed = reordered["seed"]
    file = tmp_path / "records-000000.jsonl.gz"
    with gzip.open(file, "wt", encoding="utf-8") as handle:
        handle.writelines([json.dumps(reordered, sort_keys=True, separators=(",", ":")) + "\n", *lines[1:]])
    with pytest.raises(InputError, match=f"no case with seed {seed} \\(it holds seeds {seed + 1} to {SEEDS[-1]}\\)"):
        replay(Path(f"{file}#seed-{seed}"), supervised=False)


def test_a_record_that_cannot_be_read_is_refused_naming_it(tmp_path: Path) -> None:
    """Rule: a record file that is not there, or not gzip, and a seed that is no number are refused in a line
    that names the file (and the seed as given, cut to 40 characters)."""
    missing = tmp_path / "records-000000.jsonl.gz"
    with pytest.raises(InputError) as raised:
        replay(Path(f"{missing}#seed-1"), supervised=False)
    assert str(raised.value).startswith(f"{missing}: no such file; fix: give a records-*.jsonl.gz")
    missing.write_text("plain text\n", encoding="utf-8")
    with pytest.raises(InputError) as raised:
        replay(Path(f"{missing}#seed-1"), supervised=False)
    assert str(raised.value).startswith(f"{missing}: not a compact record file (")
    seed = "x" * 50
    with pytest.raises(InputError) as raised:
        replay(Path(f"{missing}#seed-{seed}"), supervised=False)
    assert f": '{seed[:40]}' is not a seed; fix: name a case as #seed-<n>" in str(raised.value)
    # A line that begins as a record and is cut short is a record that is not JSON.
    with gzip.open(missing, "wt", encoding="utf-8") as handle:
        handle.write('{"schema_version":1,"seed":4,"timeline":[\n')
    with pytest.raises(InputError) as raised:
        replay(Path(f"{missing}#seed-4"), supervised=False)
    assert str(raised.value).startswith(f"{missing}#seed-4: the record is not JSON; fix:")


@pytest.fixture
def supervised(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The budgets ``replay`` supervises its runs under; each run done here, at once."""
    seen: list[float] = []

    def supervise(jobs: list[Any], concurrency: int, timeout_s: float, on_result: Callable[..., None]) -> None:
        seen.append(timeout_s)
        for index, job in enumerate(jobs):
            on_result(index, job.execute(lambda _: None))

    monkeypatch.setattr("harness.run.replay.supervise", supervise)
    return seen


def test_a_replay_runs_supervised_under_the_budget_its_case_names(
    compact: Path, reports: dict[int, CaseReport], tmp_path: Path, supervised: list[float]
) -> None:
    """Rule: ``replay`` (supervised, as ``harness replay`` runs it) runs a record's case and a recovery.json's in a
    supervised worker, under the ``--case-timeout`` its reproduce command names, else the default budget."""
    records = compact / "cases" / POLICY / SCENARIO / "records-000003.jsonl.gz"
    assert replay(Path(f"{records}#seed-2")).same
    assert replay(case_path(compact, reports[1])).same
    (case,) = load_grid([POLICY], [SCENARIO], [3]).cases
    scenario_file = tmp_path / f"{SCENARIO}.yaml"
    scenario_file.write_text(repro_yaml(case.scenario, reports[3], case.policy_spec), encoding="utf-8")
    assert replay(scenario_file).same
    assert supervised == [DEFAULT_CASE_TIMEOUT_S] * 3
    (case,) = load_grid([POLICY], [SCENARIO], [5]).cases
    timed = failed_report(case, "the case ran longer than its wall-clock budget of 7.5 s", 7.5)
    path = tmp_path / "recovery.json"
    path.write_text(recovery_json(timed), encoding="utf-8")
    again = replay(path)
    assert supervised[-1] == 7.5
    assert not again.same and again.report == run_case(case)[0]  # run again within its budget, it is judged


@pytest.mark.parametrize(
    ("given", "budget"),
    [("0", None), ("0.5", 0.5), ("7.5", 7.5), (f"{CASE_TIMEOUT_MAX_S:g}", CASE_TIMEOUT_MAX_S)],
)
def test_a_reproduce_commands_budget_is_any_seconds_up_to_the_cap(given: str, budget: float | None) -> None:
    """Rule: ``--case-timeout`` is seconds from 0 (none) to ``CASE_TIMEOUT_MAX_S``, both ends included."""
    assert _budget(Path("x"), ["run", "--case-timeout", given, "--seed", "1"]) == budget
    assert _budget(Path("x"), ["run", "--seed", "1"]) is None


@pytest.mark.parametrize("given", ["-0.5", f"{CASE_TIMEOUT_MAX_S + 0.5:g}", "nan", "soon", None])
def test_a_budget_out_of_bounds_or_no_number_is_refused(given: str | None) -> None:
    """Rule: any other ``--case-timeout`` (or none after the flag) is refused, naming the file, the value as given
    and the bounds, with the fix."""
    args = ["run", "--case-timeout"] if given is None else ["run", "--case-timeout", given]
    with pytest.raises(InputError) as raised:
        _budget(Path("the/recovery.json"), args)
    assert str(raised.value) == (
        f"the/recovery.json: field 'reproduce': --case-timeout {(given or '')!r} is not seconds in "
        f"0..{CASE_TIMEOUT_MAX_S:g}; fix: give a case file"
    )


def test_text_is_made_printable_character_by_character() -> None:
    """Rule: a character a terminal would act on is written as in a string literal; every other one, a backslash
    and a quote included, stays as it is."""
    assert printable("C:\\dir 'a' \"b\" é") == "C:\\dir 'a' \"b\" é"
    assert printable("C:\\dir 'a'\n\x1b[31m\r\u200b") == "C:\\dir 'a'\\n\\x1b[31m\\r\\u200b"


def test_a_timeline_marks_faults_and_witnesses_and_shows_each_entrys_data(reports: dict[int, CaseReport]) -> None:
    """Rule: one line per entry; ``!`` marks an injector's entry (a fault), ``*`` one an anomaly names as witness,
    a space any other; the entry's data follows as ``key=value`` for each value that is not None, one space
    apart."""
    report = next(r for r in reports.values() if r.anomalies and any(e.actor == "injector" for e in r.timeline))
    witnesses = {i for a in report.anomalies for i in a.witnesses}
    assert witnesses - {e.index for e in report.timeline if e.actor == "injector"}
    lines = timeline_text(report).split("\n")
    assert len(lines) == len(report.timeline)
    for entry, line in zip(report.timeline, lines, strict=True):
        mark = "!" if entry.actor == "injector" else "*" if entry.index in witnesses else " "
        assert line.startswith(f"{mark} {entry.index:>4} "), line
        data = [f"{k}={v}" for k, v in entry.data.items() if v is not None]
        assert line.endswith(" " + " ".join(data)), line
    assert any(len([v for v in e.data.values() if v is not None]) > 1 for e in report.timeline)
    assert any(None in e.data.values() for e in report.timeline)


def test_a_case_without_a_timeline_says_why_in_one_line(reports: dict[int, CaseReport]) -> None:
    """Rule: a case the harness could not judge has no timeline; one line says why instead. A case with a timeline
    shows it alone."""
    (case,) = load_grid([POLICY], [SCENARIO], [1]).cases
    failed = failed_report(case, "OSError: disk\nfull")
    assert timeline_text(failed) == "no timeline: the harness failed: OSError: disk\\nfull"
    with_error = reports[1].model_copy(update={"error": "also this"})
    assert timeline_text(with_error) == timeline_text(reports[1])
    assert "no timeline" not in timeline_text(reports[1])
    assert timeline_text(failed.model_copy(update={"error": None})) == ""


def _with_reproduce(report: CaseReport, reproduce: str, path: Path) -> Path:
    """The case's recovery.json, its reproduce command replaced (as a user's edit would)."""
    path.write_text(recovery_json(report.model_copy(update={"reproduce": reproduce})), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "dropped",
    [("--policy",), ("--scenario",), ("--seed",), ("--policy", "--scenario"), ("--scenario", "--seed")],
)
def test_a_reproduce_command_without_policy_scenario_or_seed_is_refused(
    reports: dict[int, CaseReport], tmp_path: Path, dropped: tuple[str, ...]
) -> None:
    """Rule: replay runs the case a reproduce command names by its ``--policy``, ``--scenario`` and ``--seed``; one
    that lacks any of them names no case, and is refused before anything runs."""
    given = {"--policy": POLICY, "--scenario": SCENARIO, "--seed": "2"}
    words = [w for flag, value in given.items() if flag not in dropped for w in (flag, value)]
    path = _with_reproduce(reports[2], "python -m harness run " + " ".join(words), tmp_path / "recovery.json")
    with pytest.raises(InputError) as raised:
        replay(path, supervised=False)
    assert str(raised.value) == (
        f"{path}: field 'reproduce': no --policy, --scenario and --seed; fix: give a case file"
    )


@pytest.mark.parametrize("seed", ["x2", "2a", "\uff12", "-2"])
def test_a_reproduce_commands_seed_that_is_no_plain_number_is_refused(
    reports: dict[int, CaseReport], tmp_path: Path, seed: str
) -> None:
    """Rule: the seed of a reproduce command is ASCII digits (a full-width digit is a digit, not a seed)."""
    path = _with_reproduce(
        reports[2], f"python -m harness run --policy {POLICY} --scenario {SCENARIO} --seed {seed}", tmp_path / "r.json"
    )
    with pytest.raises(InputError, match="no --policy, --scenario and --seed"):
        replay(path, supervised=False)


def test_a_reproduce_commands_seed_goes_up_to_the_largest_seed(reports: dict[int, CaseReport], tmp_path: Path) -> None:
    """Rule: a seed up to ``SEED_MAX`` is run (here it is another case than recorded, so it differs); one above is
    refused naming the bound; a command that cannot be split, or a budget that is none, is refused naming the
    file."""
    command = f"python -m harness run --policy {POLICY} --scenario {SCENARIO} --seed"
    path = _with_reproduce(reports[2], f"{command} {SEED_MAX}", tmp_path / "recovery.json")
    again = replay(path, supervised=False)
    assert again.report.seed == SEED_MAX and not again.same
    assert f"seed: recorded 2, now {SEED_MAX}" in again.differences
    _with_reproduce(reports[2], f"{command} {SEED_MAX + 1}", path)
    with pytest.raises(InputError) as raised:
        replay(path, supervised=False)
    assert str(raised.value) == (
        f"{path}: field 'reproduce': seed {SEED_MAX + 1} is over {SEED_MAX}; fix: give a case file"
    )
    _with_reproduce(reports[2], f"{command} 2 --case-timeout 'soon", path)
    with pytest.raises(InputError) as raised:
        replay(path, supervised=False)
    assert str(raised.value) == f"{path}: field 'reproduce': No closing quotation; fix: give a case file"
    _with_reproduce(reports[2], f"{command} 2 --case-timeout soon", path)
    with pytest.raises(InputError) as raised:
        replay(path, supervised=False)
    assert str(raised.value).startswith(f"{path}: field 'reproduce': --case-timeout 'soon' is not seconds")


def test_a_case_that_ran_over_its_budget_replays_the_same_when_it_does_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rule: a replayed run that fails under supervision (over its budget) is the ``harness_error`` case
    ``harness run`` writes for it, its reproduce command naming that budget: so a recorded case that ran over its
    budget replays the same when it runs over again."""
    reason = "the case ran longer than its wall-clock budget of 7.5 s"
    seen: list[float] = []

    def over_budget(jobs: list[Any], concurrency: int, timeout_s: float, on_result: Callable[..., None]) -> None:
        seen.append(timeout_s)
        for index, job in enumerate(jobs):
            on_result(index, job.without(0, reason).execute(lambda _: None))

    monkeypatch.setattr("harness.run.replay.supervise", over_budget)
    (case,) = load_grid([POLICY], [SCENARIO], [5]).cases
    path = tmp_path / "recovery.json"
    path.write_text(recovery_json(failed_report(case, reason, 7.5)), encoding="utf-8")
    again = replay(path)
    assert seen == [7.5]
    assert (again.same, again.differences) == (True, ())


def test_a_case_its_worker_cannot_load_is_refused_with_the_workers_reason(
    reports: dict[int, CaseReport], compact: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rule: when the worker cannot load the case this process loaded (a file changed or removed meanwhile), the
    replay is refused with the worker's reason."""

    def cannot_load(jobs: list[Any], concurrency: int, timeout_s: float, on_result: Callable[..., None]) -> None:
        on_result(0, "scenario 'x': no such file")

    monkeypatch.setattr("harness.run.replay.supervise", cannot_load)
    with pytest.raises(InputError) as raised:
        replay(case_path(compact, next(r for r in reports.values() if r.outcome != "correct")))
    assert str(raised.value) == "scenario 'x': no such file"


PRINTING = """
from harness.run.plan import load_grid

_SAFE = load_grid(["retry_same_key"], ["lost_response"], [1]).cases[0].policy


class Printing:
    name, revision = "printing", "1"

    def decide(self, situation):
        print("printed by the policy")
        return _SAFE.decide(situation)


POLICY = Printing()
"""


def test_what_a_policy_prints_in_an_unsupervised_replay_goes_to_standard_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Rule: standard output is the harness's own; a policy's prints in a replay run here go to standard error, as
    from a worker process."""
    (tmp_path / "printingpol.py").write_text(PRINTING, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    (case,) = load_grid(["printingpol:POLICY"], [SCENARIO], [1]).cases
    with monkeypatch.context() as quiet:
        quiet.setattr("sys.stdout", io.StringIO())
        report = run_case(case)[0]
    path = tmp_path / "recovery.json"
    path.write_text(recovery_json(report), encoding="utf-8")
    capsys.readouterr()
    assert replay(path, supervised=False).same
    out, err = capsys.readouterr()
    assert out == "" and "printed by the policy" in err


def test_what_replay_is_given_decides_how_it_is_read(
    compact: Path, reports: dict[int, CaseReport], tmp_path: Path
) -> None:
    """Rule: ``<file>#seed-<n>`` is one record of a record file (the last ``#seed-`` of the path marks it, so a
    folder may have one in its name); a record file without it, a folder, a missing file and a file that is not
    JSON are refused, each saying which; a ``.yaml`` or ``.yml`` file is a scenario file that names its case."""
    records = compact / "cases" / POLICY / SCENARIO / "records-000003.jsonl.gz"
    odd = tmp_path / "a#seed-9"
    odd.mkdir()
    (odd / records.name).write_bytes(records.read_bytes())
    assert replay(Path(f"{odd / records.name}#seed-2"), supervised=False).same
    with pytest.raises(InputError) as raised:
        replay(records, supervised=False)
    assert str(raised.value) == f"{records}: a file of compact records; fix: name one case, as {records}#seed-<n>"
    for path, what in ((tmp_path, "a folder, not a file"), (tmp_path / "none.json", "no such file")):
        with pytest.raises(InputError) as raised:
            replay(path, supervised=False)
        assert str(raised.value) == f"{path}: {what}; fix: give a recovery.json or a scenario file written by explore"
    garbage = tmp_path / "recovery.json"
    garbage.write_text("{not json", encoding="utf-8")
    try:
        json.loads("{not json")
    except ValueError as exc:
        reason = str(exc)
    with pytest.raises(InputError) as raised:
        replay(garbage, supervised=False)
    assert str(raised.value) == f"{garbage}: not a recovery.json ({reason}); fix: give a case file"
    garbage.write_text("[" * 100_000, encoding="utf-8")
    with pytest.raises(InputError) as raised:
        replay(garbage, supervised=False)
    assert str(raised.value) == f"{garbage}: not a recovery.json (nested too deeply); fix: give a case file"
    (case,) = load_grid([POLICY], [SCENARIO], [3]).cases
    text = repro_yaml(case.scenario, reports[3], case.policy_spec)
    for suffix in (".yaml", ".yml"):
        path = tmp_path / suffix[1:] / f"{SCENARIO}{suffix}"
        path.parent.mkdir()
        path.write_text(text, encoding="utf-8")
        again = replay(path, supervised=False)
        assert (again.same, again.differences) == (True, ())
        assert (again.report.outcome, again.report.timeline) == (reports[3].outcome, reports[3].timeline)


# --- one case's report ------------------------------------------------------------------------------------------


def test_a_judged_case_names_its_case_and_holds_what_the_worker_last_claimed() -> None:
    """Rule: a judged report names its case (the harness version, the scenario's and policy's names and revisions,
    the seed, the task and action, the reproduce command), holds the simulation's attempts and timeline, and
    ``claimed`` is the data of the worker's last report (a case where the worker reported twice, differently)."""
    (case,) = load_grid(["follow_and_inspect"], ["newer_write_held"], [1]).cases
    report, result = run_case(case)
    assert result is not None
    said = [event_data(e) for e in result.evidence.history if isinstance(e, WorkerReported)]
    assert len(said) > 1 and said[0] != said[-1]
    assert report.claimed == said[-1]
    assert (report.schema_version, report.harness_version, report.seed) == (SCHEMA_VERSION, __version__, 1)
    assert (report.scenario, report.scenario_revision) == (case.scenario.name, case.scenario.revision)
    assert (report.policy, report.policy_revision) == (case.policy.name, case.policy.revision)
    assert (report.task_id, report.action_id) == (case.scenario.task.task_id, case.scenario.action_id)
    assert report.reproduce == reproduce_command(case) and "--case-timeout" not in report.reproduce
    assert report.attempts == result.attempts and report.timeline == entries(result.evidence.history)
    assert report.error is None
    # Built without validation, it is what validation makes of it, field for field.
    assert report == CaseReport.model_validate_json(recovery_json(report))


def test_a_case_whose_worker_never_reported_claims_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rule: ``claimed`` is the worker's last report; a history without one (the evidence of a worker that never
    got to report) claims nothing, and is judged like any other."""

    def unreported(*args: Any) -> Any:
        result = simulate(*args)
        history = tuple(e for e in result.evidence.history if not isinstance(e, WorkerReported))
        return dataclasses.replace(result, evidence=dataclasses.replace(result.evidence, history=history))

    monkeypatch.setattr("harness.run.case.simulate", unreported)
    (case,) = load_grid([POLICY], [SCENARIO], [1]).cases
    report, result = run_case(case)
    assert result is not None and report.error is None
    assert report.claimed == {} and report.timeline == entries(result.evidence.history)


def test_a_case_the_harness_cannot_run_is_reported_with_why(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rule: a failure of the harness while simulating or judging a case is that case's ``harness_error`` report,
    ``<exception type>: <message>`` its error and its unknown reason; the case is still named as a judged one is."""
    (case,) = load_grid([POLICY], [SCENARIO], [4]).cases
    judged, _ = run_case(case)

    def broken(*_: object) -> object:
        raise LookupError("no such thing")

    monkeypatch.setattr("harness.run.case.simulate", broken)
    report, result = run_case(case)
    assert result is None
    assert report == failed_report(case, "LookupError: no such thing")
    assert (report.outcome, report.verdict, report.error) == ("harness_error", "unknown", "LookupError: no such thing")
    assert report.unknown == {"*": "the harness failed: LookupError: no such thing"}
    assert (report.metrics, report.checks, report.claimed) == ({}, {}, {})
    assert (report.attempts, report.anomalies, report.timeline) == ((), (), ())
    for field in ("harness_version", "scenario", "scenario_revision", "policy", "policy_revision", "seed"):
        assert getattr(report, field) == getattr(judged, field), field
    assert (report.task_id, report.action_id, report.reproduce) == (judged.task_id, judged.action_id, judged.reproduce)
    # Under a wall-clock budget, its reproduce command runs it under the same budget.
    timed = failed_report(case, "over its budget", 7.5)
    assert timed.reproduce == reproduce_command(case, 7.5) and timed.reproduce.endswith(" --case-timeout 7.5")


# --- the twenty-ninth pass: a new run's folder, the supervisor's view of a piece, a seed not in its record file, ---
# --- and a scenario file replayed ---------------------------------------------------------------------------------


def test_a_runs_folder_must_be_new_or_empty(tmp_path: Path) -> None:
    """Rule: a run writes into a folder that does not exist yet or is empty; a file, or a folder holding anything
    (even a hidden file), is refused in a line naming the option as given and the path."""
    check_new_or_empty(tmp_path / "new")
    check_new_or_empty(tmp_path / "new", "--harness-out")
    empty = tmp_path / "empty"
    empty.mkdir()
    check_new_or_empty(empty)
    assert not (tmp_path / "new").exists() and list(empty.iterdir()) == []  # a check writes nothing
    file = tmp_path / "file"
    file.write_text("x", encoding="utf-8")
    for option, given in (("--out", ()), ("--harness-out", ("--harness-out",))):
        with pytest.raises(UsageError) as raised:
            check_new_or_empty(file, *given)
        assert str(raised.value) == f"{option} {file}: is a file; fix: give a folder"
    (empty / ".hidden").write_text("", encoding="utf-8")
    for option, given in (("--out", ()), ("--harness-out", ("--harness-out",))):
        with pytest.raises(UsageError) as raised:
            check_new_or_empty(empty, *given)
        assert str(raised.value) == f"{option} {empty}: is not empty; fix: give a new or empty folder"


def test_a_piece_tells_its_supervisor_which_case_runs(tmp_path: Path) -> None:
    """Rule: before each case it runs, a piece calls ``on_case`` with the case's position in the piece, and with -1
    once it is done (so a supervisor knows which case a stuck or dead worker was running); a case written as given
    up on is not run, and ``on_case`` is not called for it."""
    calls: list[int] = []
    job = CellJob(POLICY, SCENARIO, [1, 2, 3, 4], tmp_path / "run", failed=((1, "its worker died"),))
    result = execute_cell(job, on_case=calls.append)
    assert calls == [0, -1, 2, -1, 3, -1]
    assert result.errors == 1 and sum(result.counts[POLICY, SCENARIO].values()) == 4


def _records(path: Path, lines: list[str]) -> Path:
    """A record file holding ``lines`` (each as ``harness run`` wrote it), as a piece would write it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        handle.writelines(lines)
    return path


def _refusal(path: Path) -> str:
    with pytest.raises(InputError) as raised:
        replay(path, supervised=False)
    return str(raised.value)


def test_a_seed_its_record_file_lacks_is_refused_saying_which_seeds_it_holds(compact: Path, tmp_path: Path) -> None:
    """Rule: a seed a record file does not hold is refused in a line that says what it holds: no case; one seed;
    seeds a to b when they run without a gap; else how many. With no other piece beside it, the fix is to use a
    seed of that file."""
    by_seed = {json.loads(line)["seed"]: line for line in _lines(compact / "cases" / POLICY / SCENARIO / _PIECE)}
    fix = "fix: use a seed of that file (load() lists them)"
    for name, seeds, held in (
        ("none", [], " (it holds no case)"),
        ("one", [4], " (it holds seed 4)"),
        ("two", [4, 5], " (it holds seeds 4 to 5)"),
        ("three", [4, 5, 6], " (it holds seeds 4 to 6)"),
        ("gap", [4, 6], " (it holds 2 other seeds)"),
        ("unordered", [5, 4], " (it holds 2 other seeds)"),
    ):
        # A line that is not a record (written first, so it is also what is read first) holds no case.
        file = _records(tmp_path / name / _PIECE, ["not a record, seed 9\n", *(by_seed[s] for s in seeds)])
        assert _refusal(Path(f"{file}#seed-9")) == f"{file}: no case with seed 9{held}; {fix}", name


_PIECE = "records-000003.jsonl.gz"


@pytest.fixture(scope="module")
def cell(compact: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[int, Path]:
    """One cell's records in three pieces, as ``harness run`` slices its seeds: 1 to 4, 5 to 8 and 9 to 12, each
    first seed to its record file."""
    lines = _lines(compact / "cases" / POLICY / SCENARIO / _PIECE)
    assert [json.loads(line)["seed"] for line in lines] == list(SEEDS)
    folder = tmp_path_factory.mktemp("cell") / "cases" / POLICY / SCENARIO
    return {
        first: _records(folder / f"records-{part:06d}.jsonl.gz", lines[first - 1 : first + 3])
        for part, first in enumerate((1, 5, 9))
    }


def test_a_seed_in_another_piece_of_the_cell_is_refused_naming_that_piece(cell: dict[int, Path]) -> None:
    """Rule: a seed that is in another piece of the cell is refused with the record to replay instead: the piece
    whose first seed is the last not above it (a cell's pieces are slices of its seeds in order); that record
    replays."""
    held = {1: " (it holds seeds 1 to 4)", 5: " (it holds seeds 5 to 8)", 9: " (it holds seeds 9 to 12)"}
    for asked, seed, found in (
        (1, 6, 5),
        (1, 5, 5),
        (1, 8, 5),
        (1, 9, 9),
        (1, 12, 9),
        (9, 3, 1),
        (9, 1, 1),
        (5, 11, 9),
    ):
        expected = (
            f"{cell[asked]}: no case with seed {seed}{held[asked]}; fix: the case is in another piece of the cell: "
            f"{cell[found]}#seed-{seed}"
        )
        assert _refusal(Path(f"{cell[asked]}#seed-{seed}")) == expected, (asked, seed)
    assert replay(Path(f"{cell[5]}#seed-6"), supervised=False).same


def test_another_piece_is_named_only_when_it_holds_the_seed(cell: dict[int, Path], tmp_path: Path) -> None:
    """Rule: files beside the record that are empty, not gzip, or do not begin with a record are passed over; the
    piece whose first seed is the last not above the seed is named only if it holds that seed (a piece cut short,
    a seed above every piece's): else the fix is to use a seed of the file."""
    folder = tmp_path / "cases"
    for first, path in cell.items():
        lines = _lines(path)
        _records(folder / path.name, lines[:2] if first == 5 else lines)  # the second piece holds 5 and 6 only
    # Sorted before the pieces, so they are read first.
    _records(folder / "records-000000-empty.jsonl.gz", [])
    _records(folder / "records-000000-other.jsonl.gz", ["not a record\n"])
    (folder / "records-000000-text.jsonl.gz").write_text("plain text\n", encoding="utf-8")
    first, second, third = (folder / cell[first].name for first in (1, 5, 9))
    fix = "fix: use a seed of that file (load() lists them)"
    assert _refusal(Path(f"{first}#seed-7")) == f"{first}: no case with seed 7 (it holds seeds 1 to 4); {fix}"
    assert _refusal(Path(f"{third}#seed-13")) == f"{third}: no case with seed 13 (it holds seeds 9 to 12); {fix}"
    found = f"fix: the case is in another piece of the cell: {second}#seed-6"
    assert _refusal(Path(f"{third}#seed-6")) == f"{third}: no case with seed 6 (it holds seeds 9 to 12); {found}"


def test_a_piece_of_seeds_given_out_of_order_is_found_all_the_same(cell: dict[int, Path], tmp_path: Path) -> None:
    """Rule: a cell whose seeds were given out of order (``--seed 12 --seed 11 ...``) has pieces whose first seeds
    say nothing of where a seed is: when the likeliest piece does not hold it, every other is read, and the one
    that holds it is named; a seed no piece holds is still "use a seed of that file"."""
    lines = {json.loads(line)["seed"]: line for path in cell.values() for line in _lines(path)}
    folder = tmp_path / "cases"
    pieces = [
        _records(folder / f"records-{part:06d}.jsonl.gz", [lines[s] for s in seeds])
        for part, seeds in enumerate(((12, 11, 10, 9), (8, 7, 6, 5), (4, 3, 2, 1)))
    ]
    named = "fix: the case is in another piece of the cell"
    # Seed 10: the last piece whose first seed is not above it begins at 8, and does not hold it.
    assert _refusal(Path(f"{pieces[2]}#seed-10")).endswith(f"{named}: {pieces[0]}#seed-10")
    # Seed 3: no piece begins at or below it.
    assert _refusal(Path(f"{pieces[0]}#seed-3")).endswith(f"{named}: {pieces[2]}#seed-3")
    assert _refusal(Path(f"{pieces[1]}#seed-13")).endswith("fix: use a seed of that file (load() lists them)")
    assert replay(Path(f"{pieces[0]}#seed-10"), supervised=False).same


def _scenario_file(folder: Path, case_seed: int, **reproduces: object) -> Path:
    """The case at ``case_seed`` as a scenario file written for replay (``repro_yaml``), what it reproduces changed as
    given (a key given None is removed; ``reproduces=None`` removes them all)."""
    (case,) = load_grid([POLICY], [SCENARIO], [case_seed]).cases
    data = yaml.safe_load(repro_yaml(case.scenario, run_case(case)[0], case.policy_spec))
    if "reproduces" in reproduces and reproduces["reproduces"] is None:
        del data["reproduces"]
    else:
        data["reproduces"] |= reproduces
        data["reproduces"] = {k: v for k, v in data["reproduces"].items() if v is not None}
    path = folder / f"{SCENARIO}.yaml"
    folder.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


_MEND = "fix: write it as the finding or repro file had it, or run the scenario with 'harness run --scenario'"


def _scenario_refusal(path: Path) -> str:
    with pytest.raises(ScenarioError) as raised:
        replay(path, supervised=False)
    return str(raised.value)


def test_a_scenario_file_that_cannot_name_its_case_is_refused_naming_the_field(tmp_path: Path) -> None:
    """Rule: a scenario file replays only when its ``reproduces`` names a case replay can run: without it, with a
    seed over ``SEED_MAX``, a property the checker does not judge (the first named), or a policy that does not load,
    it is refused in a line naming the field and how to mend it."""
    path = _scenario_file(tmp_path / "none", 3, reproduces=None)
    assert _scenario_refusal(path) == (
        f"{path}: field 'reproduces': missing, so which policy and seed to run is unknown; fix: add 'reproduces: "
        "{policy: ..., policy_revision: ..., seed: ..., outcome: ..., properties: [...]}' (the properties it "
        "violates; [] for none), or run it with 'harness run --scenario'"
    )
    path = _scenario_file(tmp_path / "over", 3, seed=SEED_MAX + 1)
    assert _scenario_refusal(path) == (f"{path}: field 'reproduces.seed': {SEED_MAX + 1} is over {SEED_MAX}; {_MEND}")
    path = _scenario_file(tmp_path / "odd", 1, properties=["duplicate_effects", "made_up", "also_made_up"])
    assert _scenario_refusal(path) == (
        f"{path}: field 'reproduces.properties': 'made_up' is no property the checker judges (it judges "
        f"{', '.join(PROPERTY_NAMES)}); {_MEND}"
    )
    path = _scenario_file(tmp_path / "policy", 3, policy="no_such_policy")
    with pytest.raises(PolicyError) as loading:
        load_grid(["no_such_policy"], [SCENARIO], [3])
    assert _scenario_refusal(path) == f"{path}: field 'reproduces.policy': {loading.value}"


def test_a_scenario_file_replays_at_the_largest_seed(tmp_path: Path) -> None:
    """Rule: ``SEED_MAX`` is a seed a scenario file may name; a case that violates properties replays the same when
    they are the ones it names."""
    for seed in (SEED_MAX, 1):
        path = _scenario_file(tmp_path / str(seed), seed)
        again = replay(path, supervised=False)
        assert (again.same, again.differences) == (True, ()), seed
        assert again.report.seed == seed
    assert again.report.outcome != "correct" and yaml.safe_load(path.read_text(encoding="utf-8"))["reproduces"][
        "properties"
    ] == ["duplicate_effects", "abandoned_actions"]


_KEPT = (
    "the policy's revision is the one recorded, yet it decided otherwise: unless its code, the harness or this "
    "file's scenario changed since, it kept something from the cases run before this one (on its object or in a "
    "global), or used randomness or a clock of its own (it must decide from the Situation alone)"
)


def test_a_scenario_file_that_ends_otherwise_names_each_difference(tmp_path: Path) -> None:
    """Rule: a scenario file's case must end as it records: the policy's revision, the outcome and the set of
    violated properties are compared, each difference a line. When the case ends the same twice here, under the
    revision recorded and without a harness error, a last line says what usually causes it."""
    cases = {
        "revision": ({"policy_revision": "other"}, ["policy revision: recorded other, now 1"]),
        "outcome": ({"outcome": "incorrect"}, ["outcome: recorded incorrect, now correct", _KEPT]),
        "properties": (
            {"properties": ["duplicate_effects"]},
            ["violated properties: recorded ['duplicate_effects'], now []", _KEPT],
        ),
        "all": (
            {"policy_revision": "other", "outcome": "incorrect", "properties": ["false_records"]},
            [
                "policy revision: recorded other, now 1",
                "outcome: recorded incorrect, now correct",
                "violated properties: recorded ['false_records'], now []",
            ],
        ),
    }
    for name, (changed, differences) in cases.items():
        again = replay(_scenario_file(tmp_path / name, 3, **changed), supervised=False)
        assert (again.same, list(again.differences)) == (False, differences), name
        assert again.report.outcome == "correct"
    # The violated properties are compared as a set: the same names in another order are the same.
    again = replay(
        _scenario_file(tmp_path / "order", 1, properties=["abandoned_actions", "duplicate_effects"]), supervised=False
    )
    assert (again.same, again.differences) == (True, ())


def test_a_scenario_files_case_the_harness_fails_names_the_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rule: when the case cannot be run to its end here (its worker died, or it ran over its budget), the replay
    names the outcome and the harness's error; the case is not run a second time, and nothing is said of what the
    policy kept."""
    runs: list[int] = []

    def dies(jobs: list[Any], concurrency: int, timeout_s: float, on_result: Callable[..., None]) -> None:
        for index, job in enumerate(jobs):
            on_result(index, job.without(0, "its worker died").execute(runs.append))

    monkeypatch.setattr("harness.run.replay.supervise", dies)
    again = replay(_scenario_file(tmp_path, 3))
    assert (again.same, again.report.outcome, again.report.error) == (False, "harness_error", "its worker died")
    assert again.differences == ("outcome: recorded correct, now harness_error", "harness error: its worker died")
    assert runs == []


def test_a_scenario_file_replays_under_the_budget_it_names(tmp_path: Path, supervised: list[float]) -> None:
    """Rule: a scenario file whose ``reproduces`` names ``case_timeout_s`` replays supervised under that budget."""
    again = replay(_scenario_file(tmp_path, 3, case_timeout_s=7.5))
    assert supervised == [7.5] and (again.same, again.differences) == (True, ())


FLIPPING = """
from harness.run.plan import load_grid

_SAFE, _OTHER = (load_grid([name], ["lost_response"], [1]).cases[0].policy for name in ("retry_same_key", "stop_on_timeout"))
SEEN = set()
DECIDED = []


class Flipping:
    '''Decides as retry_same_key, but as stop_on_timeout in a situation it saw before: a policy that keeps
    something between cases.'''

    name, revision = "retry_same_key", "1"

    def decide(self, situation):
        seen = repr(situation)
        DECIDED.append(seen)
        if seen in SEEN:
            return _OTHER.decide(situation)
        SEEN.add(seen)
        return _SAFE.decide(situation)


POLICY = Flipping()
"""


def test_a_scenario_files_case_run_twice_here_must_decide_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rule: the case is run twice here; when the two runs differ, the policy did not decide from the Situation
    alone, and that is said (and nothing of what it kept from cases run before this one). It is not run a third
    time."""
    (tmp_path / "flippingpol.py").write_text(FLIPPING, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "flippingpol", raising=False)  # what it saw in an earlier session is gone
    path = _scenario_file(tmp_path / "file", 3, policy="flippingpol:POLICY")
    again = replay(path, supervised=False)
    import flippingpol  # type: ignore[import-not-found]

    assert again.differences == (
        "two runs of the case gave different evidence: the policy did not decide the same way twice (it must decide "
        "from the Situation alone: nothing kept between calls, no randomness or clock of its own)",
    )
    assert not again.same and again.report.outcome == "correct"  # the first run decided as retry_same_key
    first = len(flippingpol.SEEN)
    # The second run decided as stop_on_timeout in its first situation, one seen before, and so ended there; a
    # third run would have decided once more.
    assert first > 1 and len(flippingpol.DECIDED) == first + 1
