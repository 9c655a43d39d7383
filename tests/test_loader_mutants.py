"""read_case() and load_explorations() (harness.present.analysis), in process, over files written here: what the
thirtieth mutation pass found untested (tests/MUTANTS.md). Each test states the rule and derives what it checks
from it. The explore.json files are written by hand, in the shape ``harness explore`` writes, so no exploration
runs."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from harness.check.registry import PROPERTIES
from harness.model import MANIFEST
from harness.present.analysis import Skipped, load, load_explorations, read_case

# --- read_case -----------------------------------------------------------------------------------------------


def write_records(path: Path, lines: list[Any]) -> Path:
    """A compact record file: one JSON value a line (a ``str`` is written as it is)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        for line in lines:
            handle.write((line if isinstance(line, str) else json.dumps(line, separators=(",", ":"))) + "\n")
    return path


def test_a_recovery_json_is_read_whole_given_as_a_path_or_as_text(tmp_path: Path) -> None:
    """Rule: a path that does not name a record is a recovery.json, returned as the dict it holds, every key kept
    (a byte-order mark is allowed, as ``json.loads`` of bytes allows it)."""
    case = {"seed": 3, "policy": "p", "timeline": [{"at": 0}], "é": "ü"}
    path = tmp_path / "run" / "recovery.json"
    path.parent.mkdir()
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(case, ensure_ascii=False).encode())
    assert read_case(path) == case
    assert read_case(str(path)) == case


def test_a_recovery_json_that_is_not_an_object_is_no_case(tmp_path: Path) -> None:
    """Rule: a file holding JSON other than an object is refused with ``<path>: no such case``, a ValueError."""
    for name, value in (("list", [{"seed": 1}]), ("null", None), ("number", 7)):
        path = tmp_path / name / "recovery.json"
        path.parent.mkdir()
        path.write_text(json.dumps(value), encoding="utf-8")
        with pytest.raises(ValueError, match="no such case") as raised:
            read_case(path)
        assert str(raised.value) == f"{path}: no such case"


def test_a_missing_or_unparsable_recovery_json_raises_what_reading_it_raised(tmp_path: Path) -> None:
    """Rule: a recovery.json that is not there raises OSError; one that is not JSON raises ValueError."""
    with pytest.raises(FileNotFoundError):
        read_case(tmp_path / "recovery.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(json.JSONDecodeError):
        read_case(bad)


def test_a_record_is_the_first_line_of_its_file_whose_seed_is_the_one_named(tmp_path: Path) -> None:
    """Rule: ``<file>.jsonl.gz#seed-<n>`` is the first line of the file that is an object whose ``seed`` reads as
    ``n``; lines that are not objects, and objects of other seeds, are passed over, and the lines after the one
    found are not read (a damaged last line does not matter)."""
    first = {"seed": 7, "n": "first", "timeline": [1, 2]}
    file = write_records(
        tmp_path / "records-000000.jsonl.gz",
        [{"seed": 6, "n": "six"}, [{"seed": 7}], 7, "null", '"seed 7"', first, {"seed": 7, "n": "second"}, "{bad"],
    )
    assert read_case(f"{file}#seed-7") == first
    assert read_case(Path(f"{file}#seed-7")) == first
    assert read_case(f"{file}#seed-6") == {"seed": 6, "n": "six"}


def test_a_seed_is_matched_as_written(tmp_path: Path) -> None:
    """Rule: the seed in the path is compared as text with ``str`` of the line's seed: ``#seed-07`` is not seed 7,
    and a line whose seed is the string ``"8"`` is ``#seed-8``."""
    file = write_records(tmp_path / "r.jsonl.gz", [{"seed": 7}, {"seed": "8", "n": 1}])
    with pytest.raises(ValueError, match="no such case"):
        read_case(f"{file}#seed-07")
    assert read_case(f"{file}#seed-8") == {"seed": "8", "n": 1}


def test_a_seed_its_record_file_lacks_is_no_case(tmp_path: Path) -> None:
    """Rule: a seed no line of the file has, or an empty file, is ``<path>: no such case`` (ValueError), the path
    as given; a record file that is not there raises OSError."""
    file = write_records(tmp_path / "r.jsonl.gz", [{"seed": 1}, [{"seed": 2}]])
    for ref in (f"{file}#seed-2", f"{file}#seed-3"):
        with pytest.raises(ValueError, match="no such case") as raised:
            read_case(ref)
        assert str(raised.value) == f"{ref}: no such case"
    empty = write_records(tmp_path / "e.jsonl.gz", [])
    with pytest.raises(ValueError, match="no such case"):
        read_case(f"{empty}#seed-1")
    with pytest.raises(FileNotFoundError):
        read_case(f"{tmp_path / 'missing.jsonl.gz'}#seed-1")


def test_a_damaged_line_of_a_record_file_is_passed_over(tmp_path: Path) -> None:
    """Rule: a line of a record file is JSON bytes (UTF-8, whatever the locale); a line that is not JSON is no case
    and is passed over, as load() passes over it, so the cases after it are read. It raised JSONDecodeError, and
    ``harness report`` of a run holding such a file failed on the first failing case after that line (found by
    this pass)."""
    file = tmp_path / "r.jsonl.gz"
    with gzip.open(file, "wb") as handle:
        handle.write(b"{damaged\n\xff\xfe\n")
        handle.write(json.dumps({"seed": 1, "é": "ü"}, ensure_ascii=False).encode() + b"\n")
        handle.write(b"{damaged\n")
        handle.write(json.dumps({"seed": 2}).encode() + b"\n")
    assert read_case(f"{file}#seed-1") == {"seed": 1, "é": "ü"}
    assert read_case(f"{file}#seed-2") == {"seed": 2}
    with pytest.raises(ValueError, match="no such case"):
        read_case(f"{file}#seed-3")


def test_every_case_load_names_in_a_record_file_with_a_damaged_line_is_read(tmp_path: Path) -> None:
    """Rule: read_case reads every path a frame row of load() names, a record file with a damaged line included."""
    from harness.run.case import run_case
    from harness.run.files import record_line
    from harness.run.plan import load_grid

    file = tmp_path / "run" / "cases" / "retry_new_key" / "lost_response" / "records-000000.jsonl.gz"
    file.parent.mkdir(parents=True)
    with gzip.open(file, "wb") as handle:
        handle.write(b"{damaged\n")
        for grid_case in load_grid(["retry_new_key"], ["lost_response"], [1, 2]).cases:
            handle.write(record_line(run_case(grid_case)[0]).encode())
    frame = load(tmp_path / "run")
    assert list(frame["seed"]) == [1, 2] and [s.path for s in frame.attrs["skipped"]] == [f"{file} line 1"]
    assert [read_case(p)["seed"] for p in frame["path"]] == [1, 2]


# --- load_explorations -----------------------------------------------------------------------------------------


NAMES = [m.name for m in PROPERTIES]
COUNTS = ["schedules", "cases", "violating_cases"]
EXPLORED = ["policy", "policy_revision", "scenario", "scenario_revision", "depth", "swarm", "seeds", "shards"]
FINDING_COLUMNS = ["policy", "scenario", "template", "outcome", "properties", "seed", "schedule", "shape", "file"]


def explored(policy: str, scenario: str, schedules: int, violations: dict[str, int], **extra: Any) -> dict[str, Any]:
    """One row of an explore.json's ``explorations``: ``cases`` is twice ``schedules``, ``violating_cases`` the
    sum of the violations."""
    return {
        "policy": policy,
        "policy_revision": "1",
        "scenario": scenario,
        "scenario_revision": "2",
        "schedules": schedules,
        "cases": 2 * schedules,
        "violating_cases": sum(violations.values()),
        "violations_by_property": violations,
        **extra,
    }


def finding(policy: str, shape: str, seed: int, properties: list[str], **extra: Any) -> dict[str, Any]:
    """One of an explore.json's ``findings``, of template ``t`` (its scenario is ``s``)."""
    return {
        "policy": policy,
        "scenario": "s",
        "template": "t",
        "outcome": "incorrect",
        "seed": seed,
        "shape": shape,
        "properties": properties,
        "schedule": [f"fault {shape}", "event cancel"],
        "file": f"findings/{policy}/{shape}.yaml",
        **extra,
    }


def explore_json(
    folder: Path,
    explorations: list[dict[str, Any]],
    findings: Iterable[dict[str, Any]] = (),
    *,
    shard: int = 0,
    shards: int = 1,
    **settings: Any,
) -> Path:
    data = {
        "depth": 2,
        "swarm": 3,
        "seeds": [1, 2],
        "shard": shard,
        "shards": shards,
        "explorations": explorations,
        "findings": list(findings),
        **settings,
    }
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "explore.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def row(loaded: pd.DataFrame, i: int) -> dict[str, Any]:
    return {k: (v.item() if hasattr(v, "item") else v) for k, v in loaded.iloc[i].to_dict().items()}


def violations(**counts: int) -> dict[str, int]:
    return {f"violations_{n}": counts.get(n, 0) for n in NAMES}


def test_one_exploration_is_one_row_with_every_column_in_order(tmp_path: Path) -> None:
    """Rule: a row per (policy, scenario) explored: what was explored (the settings from the file, its seeds a
    list), ``shards_seen`` then ``complete``, the three counts, then a ``violations_<property>`` column for every
    property (0 when none), and the file's row keys other than these are not columns."""
    path = explore_json(
        tmp_path / "x",
        [explored("p", "s", 5, {"duplicate_effects": 3}, findings=9, depth=7, shards=4)],
        depth=4,
        swarm=6,
        seeds=[3, 1],
    )
    loaded = load_explorations(path)
    frame = loaded.explorations
    assert list(frame.columns) == [*EXPLORED, "shards_seen", "complete", *COUNTS, *(f"violations_{n}" for n in NAMES)]
    assert list(frame.index) == [0]
    assert row(frame, 0) == {
        "policy": "p",
        "policy_revision": "1",
        "scenario": "s",
        "scenario_revision": "2",
        "depth": 4,
        "swarm": 6,
        "seeds": [3, 1],
        "shards": 1,
        "shards_seen": 1,
        "complete": True,
        "schedules": 5,
        "cases": 10,
        "violating_cases": 3,
        **violations(duplicate_effects=3),
    }
    assert loaded.findings.empty and loaded.skipped == ()


def test_shards_are_summed_and_counted_once_each(tmp_path: Path) -> None:
    """Rule: the shards of one exploration (same policy, scenario, revisions and settings) are one row: counts and
    violations summed, ``shards_seen`` the number of distinct shards found, ``complete`` when that is ``shards``.
    A second copy of a shard (a Polyaxon run's) counts once; a property no column names gets its own column."""
    a = explore_json(tmp_path / "a", [explored("p", "s", 5, {"duplicate_effects": 2, "new_one": 1})], shard=0, shards=3)
    b = explore_json(
        tmp_path / "b", [explored("p", "s", 7, {"duplicate_effects": 1, "false_records": 4})], shard=2, shards=3
    )
    copy_of_b = tmp_path / "c" / "explore.json"
    copy_of_b.parent.mkdir()
    copy_of_b.write_bytes(b.read_bytes())
    loaded = load_explorations([a, tmp_path / "b", tmp_path / "c"])
    frame = loaded.explorations
    assert list(frame.columns)[-1] == "violations_new_one"
    assert row(frame, 0) == {
        "policy": "p",
        "policy_revision": "1",
        "scenario": "s",
        "scenario_revision": "2",
        "depth": 2,
        "swarm": 3,
        "seeds": [1, 2],
        "shards": 3,
        "shards_seen": 2,
        "complete": False,
        "schedules": 12,
        "cases": 24,
        "violating_cases": 8,
        **violations(duplicate_effects=3, false_records=4),
        "violations_new_one": 1,
    }
    middle = explore_json(tmp_path / "m", [explored("p", "s", 1, {})], shard=1, shards=3)
    whole = load_explorations([a, b, middle]).explorations
    assert list(whole["shards_seen"]) == [3] and list(whole["complete"]) == [True]
    assert list(whole["schedules"]) == [13] and list(whole["violations_new_one"]) == [1]


def test_explorations_that_differ_in_anything_explored_are_rows_apart(tmp_path: Path) -> None:
    """Rule: parts are one exploration only when every explored field is the same: a part at another revision,
    depth, swarm, seeds or number of shards is a row of its own. Rows are sorted by policy then scenario, the
    order read kept among equals, and numbered from 0."""
    base = [explored("p", "s", 1, {})]
    explore_json(tmp_path / "0", base)
    explore_json(tmp_path / "1", [explored("p", "s", 2, {}, policy_revision="9")])
    explore_json(tmp_path / "2", [explored("p", "s", 3, {}, scenario_revision="9")])
    explore_json(tmp_path / "3", base, depth=5)
    explore_json(tmp_path / "4", base, swarm=5)
    explore_json(tmp_path / "5", base, seeds=[1])
    explore_json(tmp_path / "6", base, shards=2)
    explore_json(tmp_path / "7", [explored("b", "z", 8, {}), explored("b", "a", 9, {}), explored("a", "s", 10, {})])
    frame = load_explorations(tmp_path).explorations
    assert list(frame.index) == list(range(10))
    assert list(zip(frame["policy"], frame["scenario"], frame["schedules"], strict=True)) == [
        ("a", "s", 10),
        ("b", "a", 9),
        ("b", "z", 8),
        *(("p", "s", n) for n in (1, 2, 3, 1, 1, 1, 1)),
    ]
    assert list(frame["shards_seen"]) == [1] * 10
    assert list(frame["complete"]) == [True] * 9 + [False]


def test_findings_are_one_row_each_with_their_file_beside_the_explore_json(tmp_path: Path) -> None:
    """Rule: a finding is a row of the columns a reader needs, in order: properties joined by ``, ``, the
    schedule by ``; ``, and ``file`` the finding's file under the explore.json's folder. Rows are sorted by
    policy then scenario, first seen first among equals, and numbered from 0."""
    one = finding("q", "b", 4, ["duplicate_effects", "false_records"], first_seen=1, kept=None)
    two = finding("q", "a", 9, ["false_records"], first_seen=0, kept=None)
    three = finding("p", "c", 2, ["x"], scenario="z", extra="dropped")
    four = finding("p", "d", 1, ["x"], scenario="y", template="u")
    path = explore_json(tmp_path / "x", [explored("p", "s", 1, {})], [one, two, three, four])
    frame = load_explorations(tmp_path / "x").findings
    assert list(frame.columns) == FINDING_COLUMNS
    assert list(frame.index) == [0, 1, 2, 3]
    folder = path.parent
    assert [row(frame, i) for i in range(4)] == [
        {"policy": "p", "scenario": "y", "template": "u", "outcome": "incorrect", "properties": "x", "seed": 1,
         "schedule": "fault d; event cancel", "shape": "d", "file": str(folder / "findings/p/d.yaml")},
        {"policy": "p", "scenario": "z", "template": "t", "outcome": "incorrect", "properties": "x", "seed": 2,
         "schedule": "fault c; event cancel", "shape": "c", "file": str(folder / "findings/p/c.yaml")},
        {"policy": "q", "scenario": "s", "template": "t", "outcome": "incorrect", "properties": "false_records",
         "seed": 9, "schedule": "fault a; event cancel", "shape": "a", "file": str(folder / "findings/q/a.yaml")},
        {"policy": "q", "scenario": "s", "template": "t", "outcome": "incorrect",
         "properties": "duplicate_effects, false_records", "seed": 4, "schedule": "fault b; event cancel",
         "shape": "b", "file": str(folder / "findings/q/b.yaml")},
    ]  # fmt: skip


def test_no_finding_gives_the_finding_columns(tmp_path: Path) -> None:
    """Rule: with no finding (or nothing loaded), the findings frame still has its columns; with no exploration,
    the explorations frame has the explored columns, ``shards_seen``, ``complete`` and the counts."""
    loaded = load_explorations(explore_json(tmp_path / "x", []))
    assert loaded.explorations.empty and loaded.findings.empty and loaded.skipped == ()
    assert list(loaded.findings.columns) == FINDING_COLUMNS
    assert list(loaded.explorations.columns) == [*EXPLORED, "shards_seen", "complete", *COUNTS]
    nothing = load_explorations([])
    assert list(nothing.findings.columns) == FINDING_COLUMNS and nothing.skipped == ()


def test_a_finding_met_by_several_shards_is_kept_once_at_its_first_seen_copy(tmp_path: Path) -> None:
    """Rule: copies of one finding (policy, template, shape) are one row: the copy first seen (``first_seen``,
    then seed), whichever shard holds it; a finding without ``first_seen`` was seen at 0."""
    early = finding("p", "a", 5, ["false_records"], first_seen=2)
    late = finding("p", "a", 3, ["false_records"], first_seen=7)
    older = finding("p", "b", 8, ["false_records"])
    copy_of_older = finding("p", "b", 6, ["false_records"], first_seen=1)
    explore_json(tmp_path / "0", [explored("p", "s", 1, {})], [late, copy_of_older], shard=0, shards=2)
    explore_json(tmp_path / "1", [explored("p", "s", 1, {})], [early, older], shard=1, shards=2)
    frame = load_explorations(tmp_path).findings
    assert list(zip(frame["shape"], frame["seed"], strict=True)) == [("b", 8), ("a", 5)]
    assert list(frame["file"]) == [str(tmp_path / "1" / "findings/p/b.yaml"), str(tmp_path / "1" / "findings/p/a.yaml")]


def test_a_copy_seen_at_the_same_time_is_chosen_by_seed(tmp_path: Path) -> None:
    """Rule: of two copies first seen together, the one of the lower seed is kept."""
    explore_json(tmp_path / "0", [], [finding("p", "a", 9, ["x"], first_seen=3)], shard=0, shards=2)
    explore_json(tmp_path / "1", [], [finding("p", "a", 4, ["x"], first_seen=3)], shard=1, shards=2)
    frame = load_explorations(tmp_path).findings
    assert list(frame["seed"]) == [4] and list(frame["file"]) == [str(tmp_path / "1" / "findings/p/a.yaml")]


def test_a_finding_kept_for_a_property_already_shown_is_left_out(tmp_path: Path) -> None:
    """Rule: a finding written because shrinking kept one property (``kept``) is left out when a finding of the same
    policy and template shown before it shows that property (each of its properties, read back from the ``, ``
    the row joins them with); a finding of another template, or kept for a property not shown yet, is kept. A
    finding without ``kept`` is always shown."""
    shown = finding("p", "a", 1, ["duplicate_effects", "false_records", "effects_after_cancel"], first_seen=0)
    first = finding("p", "b", 2, ["duplicate_effects"], first_seen=1, kept="duplicate_effects")
    middle = finding("p", "f", 2, ["effects_after_cancel"], first_seen=1, kept="effects_after_cancel")
    last = finding("p", "g", 2, ["false_records"], first_seen=1, kept="false_records")
    new = finding("p", "c", 3, ["changed_arguments"], first_seen=2, kept="changed_arguments")
    elsewhere = finding("p", "d", 4, ["false_records"], first_seen=3, kept="false_records", template="u")
    unmarked = finding("p", "e", 5, ["abandoned_actions"], first_seen=4)
    explore_json(tmp_path / "x", [], [shown, first, middle, last, new, elsewhere, unmarked])
    frame = load_explorations(tmp_path).findings
    assert list(frame["shape"]) == ["a", "c", "e", "d"]  # template t, then u
    assert frame["properties"].iloc[0] == "duplicate_effects, false_records, effects_after_cancel"


def test_the_same_shape_under_two_policies_or_templates_is_two_findings(tmp_path: Path) -> None:
    """Rule: a finding is one (policy, template, shape): the same shape under another policy or template is kept
    too, and the same shape twice under one policy and template is kept once."""
    findings = [
        finding("p", "a", 1, ["x"], first_seen=0),
        finding("q", "a", 2, ["x"], first_seen=0),
        finding("p", "a", 3, ["x"], first_seen=0, template="u"),
        finding("p", "a", 4, ["x"], first_seen=1),
    ]
    explore_json(tmp_path / "x", [], findings)
    frame = load_explorations(tmp_path).findings
    assert sorted(zip(frame["policy"], frame["template"], frame["seed"], strict=True)) == [
        ("p", "t", 1),
        ("p", "u", 3),
        ("q", "t", 2),
    ]


def test_a_local_explore_json_is_read_before_a_polyaxon_copy_of_it(tmp_path: Path) -> None:
    """Rule: files under one path are read local ones first, then Polyaxon runs' copies
    (``runs/<uuid>/outputs/...``), each kind in path order; so a finding in both is named by the local file, and
    a shard in both is the local copy's row, however the paths sort."""
    local = explore_json(tmp_path / "z" / "x", [explored("p", "s", 1, {})], [finding("p", "a", 1, ["x"])])
    remote = explore_json(
        tmp_path / "a" / "runs" / "u1" / "outputs", [explored("p", "s", 1, {})], [finding("p", "a", 1, ["x"])]
    )
    assert str(remote) < str(local)
    loaded = load_explorations(tmp_path)
    assert list(loaded.findings["file"]) == [str(local.parent / "findings/p/a.yaml")]
    assert list(loaded.explorations["shards_seen"]) == [1]
    # Two Polyaxon copies alone: the first in path order.
    other = tmp_path / "b" / "runs" / "u2" / "outputs" / "explore.json"
    other.parent.mkdir(parents=True)
    other.write_bytes(remote.read_bytes())
    local.unlink()
    assert list(load_explorations(tmp_path).findings["file"]) == [str(remote.parent / "findings/p/a.yaml")]


def test_the_files_under_one_path_are_read_in_the_order_of_their_paths_as_text(tmp_path: Path) -> None:
    """Rule: of the local explore.json files under one path, the first read is the first of their paths as text, so
    ``a-c/explore.json`` (``-`` sorts before ``/``) is read before ``a/explore.json`` (which pathlib, comparing
    part by part, puts first), and a finding in both is named by the first."""
    for folder in ("a", "a-c"):
        explore_json(tmp_path / folder, [explored("p", "s", 1, {})], [finding("p", "a", 1, ["x"])])
    assert sorted(tmp_path.rglob("explore.json"))[0].parent.name == "a"
    loaded = load_explorations(tmp_path)
    assert list(loaded.findings["file"]) == [str(tmp_path / "a-c" / "findings/p/a.yaml")]
    assert list(loaded.explorations["shards_seen"]) == [1]


def test_one_path_text_or_path_and_a_list_of_them(tmp_path: Path) -> None:
    """Rule: ``paths`` is one path (text or ``Path``, an explore.json or a folder) or any iterable of them."""
    path = explore_json(tmp_path / "x", [explored("p", "s", 1, {})])
    for given in (str(path), path, str(path.parent), path.parent, (p for p in [path]), [str(path.parent)]):
        loaded = load_explorations(given)
        assert list(loaded.explorations["policy"]) == ["p"] and loaded.skipped == (), given


def test_what_is_skipped_is_named_each_in_its_own_words_and_the_rest_loads(tmp_path: Path) -> None:
    """Rule: each given path is judged alone and the paths after it load. A missing path, a run folder (one with a
    manifest, or with a recovery.json anywhere under it), and a folder with no explore.json are each named, as
    given, with their reason."""
    good = explore_json(tmp_path / "good", [explored("p", "s", 1, {})])
    manifest = tmp_path / "manifest"
    manifest.mkdir()
    (manifest / MANIFEST).write_text("{}", encoding="utf-8")
    cases = tmp_path / "cases"
    (cases / "a" / "b").mkdir(parents=True)
    (cases / "a" / "b" / "recovery.json").write_text("{}", encoding="utf-8")
    empty = tmp_path / "empty"
    (empty / "sub").mkdir(parents=True)
    (empty / MANIFEST).mkdir()  # a folder named as the manifest is no manifest
    (empty / "sub" / "other.json").write_text("{}", encoding="utf-8")
    missing = tmp_path / "missing"
    loaded = load_explorations([missing, manifest, cases, empty, good.parent])
    assert loaded.skipped == (
        Skipped(str(missing), "no such file or folder"),
        Skipped(str(manifest), "a run, not an exploration: load its cases with load()"),
        Skipped(str(cases), "a run, not an exploration: load its cases with load()"),
        Skipped(str(empty), "no explore.json under it"),
    )
    assert list(loaded.explorations["policy"]) == ["p"]


def test_an_unreadable_explore_json_is_skipped_with_the_error_cut_short(tmp_path: Path) -> None:
    """Rule: an explore.json that cannot be read or parsed is skipped as ``malformed: <error type>: <message>``, the
    message cut at 120 characters, and the other files under the path still load."""
    folder = tmp_path / ("long-" * 30)
    (folder / "explore.json").mkdir(parents=True)  # a folder of that name: read_bytes raises IsADirectoryError
    bad = tmp_path / "bad" / "explore.json"
    bad.parent.mkdir()
    bad.write_text("{not json", encoding="utf-8")
    explore_json(tmp_path / "good", [explored("p", "s", 1, {})])
    loaded = load_explorations(tmp_path)
    try:
        (folder / "explore.json").read_bytes()
    except OSError as exc:
        error = str(exc)
    assert len(error) > 120
    assert loaded.skipped == (
        Skipped(str(bad), "malformed: JSONDecodeError: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"),
        Skipped(str(folder / "explore.json"), f"malformed: IsADirectoryError: {error[:120]}"),
    )  # fmt: skip
    assert list(loaded.explorations["policy"]) == ["p"]


def test_an_explore_json_without_every_key_names_the_keys_it_lacks(tmp_path: Path) -> None:
    """Rule: a JSON file lacking any key the loader reads is ``not an explore.json: missing keys: `` and those keys
    in the loader's order; one that is not an object lacks them all. The files after it still load."""
    path = explore_json(tmp_path / "a", [])
    data = json.loads(path.read_text())
    for key in ("findings", "depth", "shards"):
        del data[key]
    path.write_text(json.dumps(data), encoding="utf-8")
    listed = tmp_path / "b" / "explore.json"
    listed.parent.mkdir()
    listed.write_text("[]", encoding="utf-8")
    explore_json(tmp_path / "c", [explored("p", "s", 1, {})])
    loaded = load_explorations(tmp_path)
    assert loaded.skipped == (
        Skipped(str(path), "not an explore.json: missing keys: findings, depth, shards"),
        Skipped(str(listed), "not an explore.json: missing keys: explorations, findings, depth, swarm, seeds, shard, shards"),
    )  # fmt: skip
    assert list(loaded.explorations["policy"]) == ["p"]  # the file after them, under the same path, loads


def test_an_explore_json_of_the_wrong_shape_is_skipped_naming_the_field(tmp_path: Path) -> None:
    """Rule: a value of the wrong type is ``malformed: field '<field>': ...`` and nothing of that file is loaded."""
    path = explore_json(tmp_path / "a", [explored("p", "s", 1, {})], [finding("p", "a", 1, ["x"])], shard="0")
    loaded = load_explorations(path)
    (skipped,) = loaded.skipped
    assert skipped.path == str(path) and skipped.reason.startswith("malformed: field 'shard': Input should be")
    assert loaded.explorations.empty and loaded.findings.empty
