"""load() (harness.present.analysis), in process, over files written here: what the twenty-eighth mutation pass
found untested (tests/MUTANTS.md). Each test states the rule and derives what the frame holds from it."""

from __future__ import annotations

import copy
import gzip
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from harness.check.registry import METRICS
from harness.model import SCHEMA_VERSION
from harness.present.analysis import Skipped, load


@pytest.fixture(scope="module")
def case() -> dict[str, Any]:
    """retry_new_key x lost_response seed 1, as its recovery.json holds it: incorrect, two anomalies, two attempts."""
    from harness.run.case import run_case
    from harness.run.files import recovery_json
    from harness.run.plan import load_grid

    (grid_case,) = load_grid(["retry_new_key"], ["lost_response"], [1]).cases
    data: dict[str, Any] = json.loads(recovery_json(run_case(grid_case)[0]))
    assert data["outcome"] == "incorrect" and len(data["anomalies"]) == 2 and len(data["attempts"]) == 2
    assert data["timeline"] and list(data)[-2:] == ["reproduce", "error"]
    return data


def variant(case: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """A copy of ``case`` with top-level keys changed (``metrics`` merged into the case's)."""
    data = copy.deepcopy(case)
    metrics = changes.pop("metrics", {})
    data.update(changes)
    data["metrics"].update(metrics)
    return data


def write_json(path: Path, data: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return path


def write_records(path: Path, lines: Iterable[dict[str, Any] | str]) -> Path:
    """A compact record file: each case's JSON on one line, as ``record_line`` writes it (text as given)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        for line in lines:
            handle.write((line if isinstance(line, str) else json.dumps(line, separators=(",", ":"))) + "\n")
    return path


def seed_dir(run: Path, data: dict[str, Any]) -> Path:
    return run / "cases" / data["policy"] / data["scenario"] / f"seed-{data['seed']}" / "recovery.json"


# --- What load() is given ------------------------------------------------------------------------------------


def test_a_path_that_cannot_be_loaded_is_named_as_given_and_the_paths_after_it_still_load(
    case: dict[str, Any], tmp_path: Path
) -> None:
    """Rule: each given path is judged alone; one that is empty, missing or a run's own file is skipped, named as
    given, and the paths after it load."""
    run = tmp_path / "run"
    write_json(seed_dir(run, case), case)
    summary = run / "summary.csv"
    summary.write_text("policy\n", encoding="utf-8")
    missing = tmp_path / "missing"
    frame = load(["", missing, summary, run])
    assert list(frame["seed"]) == [1] and list(frame["source"]) == [str(run)]
    assert frame.attrs["skipped"] == [
        Skipped("", "an empty path (not the current folder): give a run folder"),
        Skipped(str(missing), "no such file or folder"),
        Skipped(str(summary), f"the run's summary.csv, not a case: load its run folder, {run}"),
    ]


def test_a_case_file_given_alone_is_loaded(case: dict[str, Any], tmp_path: Path) -> None:
    """Rule: a recovery.json or a compact record file given as the path is loaded, as the folder it is in would
    be (only a run's own files, by name, are refused)."""
    single = write_json(tmp_path / "a" / "recovery.json", case)
    records = write_records(tmp_path / "b" / "records-000000.jsonl.gz", [variant(case, seed=2)])
    frame = load([single, records])
    assert list(frame["seed"]) == [1, 2]
    assert list(frame["path"]) == [str(single), f"{records}#seed-2"]
    assert list(frame["source"]) == [str(single), str(records)]
    assert frame.attrs["skipped"] == []


def test_a_file_that_cannot_be_opened_is_skipped_with_the_first_120_characters_of_why(tmp_path: Path) -> None:
    """Rule: an unreadable file is skipped as ``malformed: <exception type>: <message, cut at 120 characters>``.
    Here a recovery.json that is a dangling link, in a folder whose name makes the message long."""
    folder = tmp_path / ("a-long-folder-name-" * 8)
    folder.mkdir()
    link = folder / "recovery.json"
    link.symlink_to(folder / "nowhere.json")
    with pytest.raises(FileNotFoundError) as caught:
        link.open("rb")
    message = str(caught.value)
    assert len(message) > 121
    frame = load(tmp_path)
    assert frame.empty
    assert frame.attrs["skipped"] == [Skipped(str(link), f"malformed: FileNotFoundError: {message[:120]}")]


# --- A compact record file, line by line ---------------------------------------------------------------------


def test_a_damaged_or_malformed_line_skips_that_case_only(case: dict[str, Any], tmp_path: Path) -> None:
    """Rule: a line that is not JSON is skipped as ``<file> line <n>`` (counted from 1) with why; a line that is
    JSON but not a case of this shape as ``<file>#seed-<its seed>`` (``None`` when it has none) with the field
    or the version; the file's other cases load, those after the bad lines too."""
    broken = '{"seed": 2, "broken'
    with pytest.raises(json.JSONDecodeError) as caught:
        json.loads(broken + "\n")
    records = write_records(
        tmp_path / "cases" / "records-000000.jsonl.gz",
        [variant(case, seed=1), broken, variant(case, seed=3, outcome="fine"), "[1, 2]", variant(case, seed=5)],
    )
    frame = load(tmp_path)
    assert list(frame["seed"]) == [1, 5]
    assert list(frame["path"]) == [f"{records}#seed-1", f"{records}#seed-5"]
    damaged, malformed, listed = frame.attrs["skipped"]
    assert damaged == Skipped(f"{records} line 2", f"malformed: JSONDecodeError: {str(caught.value)[:120]}")
    assert malformed.path == f"{records}#seed-3"
    assert malformed.reason.startswith("malformed: field 'outcome': Input should be 'correct'")
    assert listed == Skipped(f"{records}#seed-None", f"schema_version None, expected {SCHEMA_VERSION}")


def test_a_compact_run_keeps_each_case_once_whether_or_not_its_recovery_json_is_beside_it(
    case: dict[str, Any], tmp_path: Path
) -> None:
    """Rule: in one run folder a case's recovery.json and its compact record are one case (not a duplicate);
    the record file's other cases, after that one, load too."""
    run = tmp_path / "run"
    cases = [variant(case, seed=seed) for seed in (1, 2, 3)]
    write_json(seed_dir(run, cases[0]), cases[0])
    records = write_records(run / "cases" / "retry_new_key" / "lost_response" / "records-000000.jsonl.gz", cases)
    frame = load(run)
    assert list(frame["seed"]) == [1, 2, 3]
    assert list(frame["path"]) == [str(seed_dir(run, cases[0])), f"{records}#seed-2", f"{records}#seed-3"]
    assert frame.attrs["duplicates"] == 0 and frame.attrs["clashes"] == []


def test_every_digest_of_a_name_in_a_run_is_kept_not_only_the_last(case: dict[str, Any], tmp_path: Path) -> None:
    """Rule: within a run folder, a case is dropped only as the other file of a case the run already holds.
    A run with case A's recovery.json and, in its records, another case A2 under A's name, then A and A2
    again: A2 is a clash (kept and named); the records of A and of A2 after it are the other files of cases the
    run holds (the first and the second digest under that name): dropped, and no duplicate of another run."""
    run = tmp_path / "run"
    a = case
    a2 = variant(case, metrics={"dispatches": 7})
    recovery = write_json(seed_dir(run, a), a)
    records = write_records(run / "cases" / "records-000000.jsonl.gz", [a2, a, a2])
    frame = load(run)
    assert list(frame["path"]) == [str(recovery), f"{records}#seed-1"]
    assert list(frame["dispatches"]) == [2, 7]
    assert frame.attrs["duplicates"] == 0
    assert frame.attrs["clashes"] == [
        Skipped(
            f"{records}#seed-1",
            f"retry_new_key (revision 1) x lost_response (revision 1) seed 1 is also another case under {run}, "
            "with other results: both kept; load the runs as separate paths to tell them apart",
        )
    ]


# --- Two given paths with other results under one name -----------------------------------------------------


def _conflict(n: int, policy: str, scenario: str, earlier: Path, later: Path) -> Skipped:
    return Skipped(
        str(later),
        f"{n} {'case' if n == 1 else 'cases'} of {policy} (revision 1) x {scenario} (revision 1) "
        f"{'has' if n == 1 else 'have'} other results than under {earlier}, under the same revisions: a policy or "
        "scenario file changed without a new revision, or the harness changed; both kept, in one cell: load the "
        "runs apart and compare them with compare_runs, or give the changed file a new revision",
    )


def test_cases_of_two_paths_with_other_results_under_one_name_are_counted_per_cell(
    case: dict[str, Any], tmp_path: Path
) -> None:
    """Rule: a case of a later path with the identity of a case an earlier path loaded, and other content, is
    kept and counted, once per cell and pair of paths, in ``attrs["conflicts"]``; a case only one path has, or
    an exact copy, is no conflict."""
    first, second = tmp_path / "first", tmp_path / "second"
    changed = {"dispatches": 9}
    for seed in (1, 2, 3):
        write_json(first / "cases" / f"seed-{seed}" / "recovery.json", variant(case, seed=seed))
    # second: seeds 1 and 2 with other results, seed 3 an exact copy, seed 4 only here; another scenario's seed 1
    # with other results (a cell of its own).
    for seed in (1, 2):
        write_json(second / "cases" / f"seed-{seed}" / "recovery.json", variant(case, seed=seed, metrics=changed))
    write_json(second / "cases" / "seed-3" / "recovery.json", variant(case, seed=3))
    write_json(second / "cases" / "seed-4" / "recovery.json", variant(case, seed=4))
    other = variant(case, scenario="changed_task")
    write_json(first / "cases" / "other" / "recovery.json", other)
    write_json(second / "cases" / "other" / "recovery.json", variant(other, metrics=changed))
    frame = load([first, second])
    assert len(frame) == 4 + 4 and frame.attrs["duplicates"] == 1
    assert frame.attrs["clashes"] == []
    assert frame.attrs["conflicts"] == [
        _conflict(1, "retry_new_key", "changed_task", first, second),
        _conflict(2, "retry_new_key", "lost_response", first, second),
    ]


def test_two_paths_with_no_case_in_common_have_no_conflict(case: dict[str, Any], tmp_path: Path) -> None:
    """Rule: a conflict needs one identity under two paths; cases each path alone holds are none."""
    first, second = tmp_path / "first", tmp_path / "second"
    write_json(first / "cases" / "seed-1" / "recovery.json", variant(case, seed=1))
    write_json(second / "cases" / "seed-2" / "recovery.json", variant(case, seed=2, metrics={"dispatches": 9}))
    write_json(second / "cases" / "seed-3" / "recovery.json", variant(case, seed=3))
    frame = load([first, second])
    assert list(frame["seed"]) == [1, 2, 3]
    assert frame.attrs["conflicts"] == [] and frame.attrs["duplicates"] == 0


# --- Revisions kept apart, and what a loud load prints -------------------------------------------------------


def test_a_policy_and_a_scenario_at_several_revisions_are_labelled_name_at_revision(
    case: dict[str, Any], tmp_path: Path
) -> None:
    """Rule: a policy (or scenario) loaded at more than one revision has every row of it labelled
    ``name@revision`` and is listed; one loaded at a single revision keeps its name."""
    first, second = tmp_path / "first", tmp_path / "second"
    other = variant(case, policy="stop_on_timeout", seed=5)
    write_json(first / "cases" / "a" / "recovery.json", case)
    write_json(first / "cases" / "b" / "recovery.json", other)
    write_json(second / "cases" / "a" / "recovery.json", variant(case, policy_revision="2", scenario_revision="3"))
    write_json(second / "cases" / "b" / "recovery.json", variant(other, seed=6))
    frame = load([first, second])
    assert list(frame["policy"]) == ["retry_new_key@1", "stop_on_timeout", "retry_new_key@2", "stop_on_timeout"]
    assert list(frame["scenario"]) == ["lost_response@1", "lost_response@1", "lost_response@3", "lost_response@1"]
    assert frame.attrs["relabelled"] == ["retry_new_key"]
    assert frame.attrs["relabelled_scenarios"] == ["lost_response"]
    assert frame.attrs["conflicts"] == [] and frame.attrs["duplicates"] == 0


def test_a_loud_load_prints_each_thing_it_lists_in_attrs(
    case: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Rule: ``quiet=False`` prints, in this order, each skipped file, each clash and conflict, the duplicates
    dropped, each policy and scenario relabelled, and each incomplete run; ``quiet=True`` (the default) prints
    nothing."""
    first, second = tmp_path / "first", tmp_path / "second"
    write_json(first / "cases" / "a" / "recovery.json", case)
    write_json(first / "cases" / "b" / "recovery.json", variant(case, seed=2))
    (first / "manifest.json").write_text("{}", encoding="utf-8")  # began, never ended: incomplete
    broken = first / "cases" / "c" / "recovery.json"
    broken.parent.mkdir(parents=True)
    broken.write_text("{", encoding="utf-8")
    write_json(second / "cases" / "a" / "recovery.json", variant(case, metrics={"dispatches": 9}))
    write_json(second / "cases" / "b" / "recovery.json", variant(case, seed=2))
    write_json(second / "cases" / "c" / "recovery.json", variant(case, seed=3, policy_revision="2"))
    write_json(
        second / "cases" / "d" / "recovery.json",
        variant(case, seed=3, policy_revision="2", scenario_revision="2", metrics={"dispatches": 8}),
    )
    write_json(
        second / "cases" / "e" / "recovery.json", variant(case, seed=3, policy_revision="2", scenario_revision="2")
    )
    load([first, second])
    assert capsys.readouterr().out == ""
    frame = load([first, second], quiet=False)
    out = capsys.readouterr().out
    (skipped,) = frame.attrs["skipped"]
    (clash,) = frame.attrs["clashes"]
    (conflict,) = frame.attrs["conflicts"]
    assert skipped.path == str(broken) and clash.path == str(second / "cases" / "e" / "recovery.json")
    assert conflict.path == str(second) and frame.attrs["duplicates"] == 1
    assert out.splitlines() == [
        f"skipped {broken}: {skipped.reason}",
        f"{clash.path}: {clash.reason}",
        f"{second}: {conflict.reason}",
        "dropped 1 cases loaded twice (exact copies from another run folder or given path)",
        "policy retry_new_key was loaded at several revisions: its rows are labelled retry_new_key@<revision>",
        "scenario lost_response was loaded at several revisions: its rows are labelled lost_response@<revision>",
        f"{first}: incomplete (the run was stopped); resume: python -m harness run --resume {first}",
    ]


def test_progress_says_the_seconds_since_load_began(case: dict[str, Any], tmp_path: Path) -> None:
    """Rule: each ``Reading`` gives the seconds since ``load`` was called, the last one (every file read)
    included: never less than 0, never more than the call took."""
    import time

    for seed in (1, 2):
        write_json(tmp_path / "cases" / f"seed-{seed}" / "recovery.json", variant(case, seed=seed))
    heard: list[Any] = []
    began = time.perf_counter()
    load(tmp_path, progress=heard.append)
    took = time.perf_counter() - began
    assert [(r.files_read, r.files, r.cases) for r in heard] == [(1, 2, 1), (2, 2, 2)]
    assert all(0 <= r.elapsed_s <= took for r in heard)


# --- A row --------------------------------------------------------------------------------------------------


def test_a_row_holds_the_cases_values_and_counts(case: dict[str, Any], tmp_path: Path) -> None:
    """Rule: a row holds the case's identity, outcome, verdict and metrics; the unknown metrics by name and
    ``name: reason``, sorted, joined by ``, `` and ``; ``; the number of anomalies and attempts; the reproduce
    command and the error as written."""
    data = variant(
        case,
        unknown={"reads": "no reader", "duplicate_effects": "the ledger is unavailable"},
        metrics={"reads": None, "duplicate_effects": None},
        anomalies=case["anomalies"][:1],
        attempts=[*case["attempts"], "a73-x3"],
        error="policy raised: ValueError: x",
    )
    path = write_json(tmp_path / "cases" / "recovery.json", data)
    frame = load(tmp_path)
    # Nullable dtypes: an unknown metric is <NA>, never 0 or a float NaN.
    dtypes = {"count": "Int64", "flag": "boolean", "duration": "Float64"}
    assert {m.name: str(frame[m.name].dtype) for m in METRICS} == {m.name: dtypes[m.value] for m in METRICS}
    assert [str(frame[c].dtype) for c in ("seed", "outcome", "verdict")] == ["Int64", "string", "string"]
    assert frame["reads"].isna().all() and frame["duplicate_effects"].isna().all()
    (row,) = frame.to_dict("records")
    assert (row["source"], row["path"], row["policy"], row["seed"], row["outcome"], row["verdict"]) == (
        str(tmp_path),
        str(path),
        "retry_new_key",
        1,
        "incorrect",
        "false",
    )
    assert row["dispatches"] == 2 and row["task_completed"] is True and row["time_to_account_s"] == 15.070726
    assert row["unknown_metrics"] == "duplicate_effects, reads"
    assert row["unknown"] == "duplicate_effects: the ledger is unavailable; reads: no reader"
    assert (row["anomalies"], row["attempts"]) == (1, 3)
    assert row["reproduce"] == case["reproduce"] and row["reproduce"].startswith("python -m harness run ")
    assert row["error"] == "policy raised: ValueError: x"


# --- The cycle collector ------------------------------------------------------------------------------------


def test_a_function_without_cycle_collection_is_called_as_given_with_the_collector_off() -> None:
    """Rule: the wrapped function gets every argument, returns its value, runs with the collector off, and
    leaves it as it was; the wrapper bears the function's name and documentation."""
    import gc

    from harness.present.analysis import _without_cycle_collection

    def f(*args: object, **kwargs: object) -> tuple[tuple[object, ...], dict[str, object], bool]:
        """f's own words."""
        return args, kwargs, gc.isenabled()

    wrapped = _without_cycle_collection(f)
    assert (wrapped.__name__, wrapped.__doc__, wrapped.__wrapped__) == ("f", "f's own words.", f)
    assert gc.isenabled()
    assert wrapped(1, 2, k=3) == ((1, 2), {"k": 3}, False)
    assert gc.isenabled()
    gc.disable()
    try:
        assert wrapped() == ((), {}, False)
        assert not gc.isenabled()
    finally:
        gc.enable()


# --- Which files, in which order, of which run ----------------------------------------------------------------


def test_a_folder_given_as_a_relative_path_or_dot_names_its_files_as_pathlib_does(
    case: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rule: rows name their files as ``str(Path)`` would (``cases/...`` for ``.``, not ``./cases/...``); the run
    of a file is the folder above its ``cases/``, the current folder included, so a compact run's recovery.json
    and its record stay one case (no duplicate)."""
    run = tmp_path / "run"
    cell = Path("cases") / "retry_new_key" / "lost_response"
    write_json(run / cell / "seed-1" / "recovery.json", case)
    write_records(run / cell / "records-000000.jsonl.gz", [case, variant(case, seed=2)])
    expected = [str(cell / "seed-1" / "recovery.json"), f"{cell / 'records-000000.jsonl.gz'}#seed-2"]
    monkeypatch.chdir(run)
    here = load(".")
    assert list(here["path"]) == expected and here.attrs["duplicates"] == 0
    monkeypatch.chdir(tmp_path)
    below = load("run")
    assert list(below["path"]) == [str(Path("run") / p) for p in expected] and below.attrs["duplicates"] == 0


def test_two_copies_of_a_case_in_two_run_folders_under_one_path_are_a_duplicate(
    case: dict[str, Any], tmp_path: Path
) -> None:
    """Rule: runs are told apart by their folders: the same case in two run folders under one given path is an
    exact copy (dropped and counted), the first folder's kept."""
    write_json(tmp_path / "runs" / "a" / "cases" / "seed-1" / "recovery.json", case)
    write_json(tmp_path / "runs" / "b" / "cases" / "seed-1" / "recovery.json", case)
    frame = load(tmp_path / "runs")
    assert list(frame["path"]) == [str(tmp_path / "runs" / "a" / "cases" / "seed-1" / "recovery.json")]
    assert frame.attrs["duplicates"] == 1 and frame.attrs["clashes"] == []
    assert frame["polyaxon_run"].isna().all()  # a folder named runs is no Polyaxon run
    # Files in no cases/ folder: each folder is a run of its own.
    write_json(tmp_path / "loose" / "x" / "recovery.json", case)
    write_json(tmp_path / "loose" / "y" / "recovery.json", case)
    loose = load(tmp_path / "loose")
    assert list(loose["path"]) == [str(tmp_path / "loose" / "x" / "recovery.json")]
    assert loose.attrs["duplicates"] == 1


def test_a_case_folder_is_kept_before_its_polyaxon_copy_and_seeds_go_by_number(
    case: dict[str, Any], tmp_path: Path
) -> None:
    """Rule: under one path, a case's own folder is read before a Polyaxon run's copy of it (the copy is the
    duplicate), and seeds sort as numbers: seed-9 before seed-10."""
    own = [write_json(tmp_path / "cases" / f"seed-{s}" / "recovery.json", variant(case, seed=s)) for s in (10, 9)]
    outputs = tmp_path / "polyaxon" / "runs" / "uuid1" / "outputs"
    write_json(outputs / "recovery.json", variant(case, seed=9))
    only_copy = write_json(outputs / "cases" / "seed-11" / "recovery.json", variant(case, seed=11))
    frame = load(tmp_path)
    assert list(frame["path"]) == [str(own[1]), str(own[0]), str(only_copy)] and list(frame["seed"]) == [9, 10, 11]
    assert list(frame["polyaxon_run"].fillna("-")) == ["-", "-", "uuid1"] and frame.attrs["duplicates"] == 1


def test_the_polyaxon_run_of_a_path_is_the_folder_between_runs_and_outputs() -> None:
    """Rule: ``.../runs/<uuid>/outputs/...`` is Polyaxon run ``<uuid>``'s, given as text or as a Path (the
    explorations' loader gives Paths); a folder named ``runs`` alone is none."""
    from harness.present.analysis import _polyaxon_run

    inside = Path("root") / "runs" / "uuid7" / "outputs" / "cases" / "recovery.json"
    assert _polyaxon_run(inside) == _polyaxon_run(str(inside)) == "uuid7"
    assert _polyaxon_run(Path("root") / "runs" / "uuid7" / "cases" / "recovery.json") is None
    assert _polyaxon_run(str(Path("runs") / "outputs" / "recovery.json")) is None


def test_a_line_nested_too_deeply_is_skipped_saying_so(case: dict[str, Any], tmp_path: Path) -> None:
    """Rule: a line nested deeper than the parser goes is skipped as ``nested too deeply`` (not the parser's
    words), and the file's other cases load."""
    records = write_records(tmp_path / "records-000000.jsonl.gz", ["[" * 10_000 + "]" * 10_000, case])
    frame = load(tmp_path)
    assert list(frame["seed"]) == [1]
    assert frame.attrs["skipped"] == [Skipped(f"{records} line 1", "malformed: RecursionError: nested too deeply")]


# --- Runs that began and did not end --------------------------------------------------------------------------


def test_a_run_whose_lock_cannot_be_read_is_said_stopped_and_one_held_is_said_running(
    case: dict[str, Any], tmp_path: Path
) -> None:
    """Rule: a folder with a manifest or a request and no run.json is incomplete; it is running when a run holds
    its lock, and said stopped when its lock cannot be read (whether it runs cannot be told)."""
    from harness.model.lock import LOCK_FILE
    from harness.run.folder import claim

    unreadable, held = tmp_path / "unreadable", tmp_path / "held"
    for folder in (unreadable, held):
        write_json(folder / "request.json", {"argv": ["run"], "cwd": str(tmp_path)})
        write_json(folder / "cases" / "seed-1" / "recovery.json", case)
    (unreadable / LOCK_FILE).mkdir()  # open() of it raises IsADirectoryError, an OSError
    hold = claim(held, fresh=False)
    try:
        frame = load(tmp_path)
    finally:
        hold.release()
    assert frame.attrs["incomplete"] == [str(held), str(unreadable)]
    assert frame.attrs["running"] == [str(held)]


# --- Markers in a record's keys -----------------------------------------------------------------------------


def test_a_record_with_a_timeline_key_of_its_own_before_the_cases_loads_as_parsed_whole(
    case: dict[str, Any], tmp_path: Path
) -> None:
    """Rule: a record is cut at its first ``"timeline":[`` and its last ``],"reproduce":``; when that cut is no
    JSON (an earlier object has a key ``timeline``, as a policy's claim may), the line is parsed whole: the case
    loads as any other."""
    odd = variant(case, seed=2, claimed={"timeline": [1], "reproduce": [2]})
    assert list(odd).index("claimed") < list(odd).index("timeline")
    records = write_records(tmp_path / "records-000000.jsonl.gz", [case, odd])
    frame = load(tmp_path)
    assert list(frame["path"]) == [f"{records}#seed-1", f"{records}#seed-2"] and frame.attrs["skipped"] == []
    plain, other = frame.drop(columns=["path", "seed"]).to_dict("records")
    assert plain == other
