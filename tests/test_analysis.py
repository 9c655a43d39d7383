"""recovery.json files into pandas, and the comparison tables: unknown stays unknown everywhere."""

from __future__ import annotations

import html
import json
import math
import shutil
from pathlib import Path

import pandas as pd
import pytest
from conftest import SCENARIO_DIR, SMALL_GRID, run_into

from harness.model import SCHEMA_VERSION
from harness.present.analysis import (
    Reading,
    compare_runs,
    load,
    metric_table,
    outcome_counts,
    pass_k,
    percent,
    rate_table,
    rates,
    wilson_interval,
)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small tracked run: two policies x two scenarios x three seeds, with Polyaxon copies of each case."""
    out = tmp_path_factory.mktemp("analysis") / "run"
    assert run_into(out, "--no-report", *SMALL_GRID) == 0
    return out


def test_one_row_per_case_with_every_input_metric_outcome_and_verdict(run_dir: Path) -> None:
    """A run folder holds each case once, as a recovery.json; the frame has a row for each."""
    df = load(run_dir)
    assert len(df) == 12 and len(list(run_dir.rglob("recovery.json"))) == 12
    for column in (
        "policy",
        "policy_revision",
        "scenario",
        "scenario_revision",
        "seed",
        "task_id",
        "action_id",
        "outcome",
        "verdict",
        "duplicate_effects",
        "time_to_account_s",
        "unknown",
        "reproduce",
    ):
        assert column in df.columns, column
    assert not df.duplicated(["policy", "scenario", "seed"]).any()
    assert df.attrs["skipped"] == []


def test_a_load_that_finds_no_case_has_the_columns_and_dtypes_of_one_that_does(run_dir: Path, tmp_path: Path) -> None:
    """A notebook concatenates or compares frames of runs that may be empty: every column of an empty frame
    has the dtype it has when cases are found (its text and counts read as float64 before the frame was
    built column by column)."""
    full, empty = load(run_dir), load(tmp_path)
    assert len(empty) == 0 and list(empty.columns) == list(full.columns)
    assert dict(empty.dtypes) == dict(full.dtypes)
    assert str(full["attempts"].dtype) == "int64" and str(full["policy"].dtype) == "object"


def test_a_folder_that_holds_no_case_is_said_to_be_no_run_folder(run_dir: Path, tmp_path: Path) -> None:
    """An empty folder, or the scenarios' folder, loaded as a run: no row, and attrs["skipped"] says why (it
    was empty, and the notebook read that as a run with no failing case); beside a run folder, that run loads."""
    from harness.present.analysis import Skipped

    (tmp_path / "empty").mkdir()
    reason = "no recovery.json or compact records under it: not a run folder"
    df = load([tmp_path / "empty", run_dir])
    assert len(df) == 12 and df.attrs["skipped"] == [Skipped(str(tmp_path / "empty"), reason)]
    assert load(SCENARIO_DIR).attrs["skipped"] == [Skipped(str(SCENARIO_DIR), reason)]
    # A Polyaxon run harness run tracked holds no case: the reason says which folder holds them.
    tracked = tmp_path / "polyaxon" / "runs" / "0123abcd"
    (tracked / "outputs").mkdir(parents=True)
    (tracked / "run.plx.json").write_text("{}")
    [skipped] = load(tracked).attrs["skipped"]
    assert skipped.reason.startswith("a Polyaxon run tracked by harness run, which holds no case file: load the ")
    assert skipped.reason.endswith("outputs.cases_path names (the run folder's cases/<policy>)")
    # A run stopped before its first case is a run folder: incomplete, with no case yet.
    (tmp_path / "early").mkdir()
    shutil.copy(run_dir / "manifest.json", tmp_path / "early" / "manifest.json")
    df = load(tmp_path / "early")
    assert df.empty and df.attrs["incomplete"] == [str(tmp_path / "early")]
    stopped = "no case written yet: the run was stopped before its first case (listed as incomplete)"
    assert df.attrs["skipped"] == [Skipped(str(tmp_path / "early"), stopped)]
    # So is one stopped before it planned its grid: only its request (``harness run --resume`` plans it again).
    (tmp_path / "earlier").mkdir()
    (tmp_path / "earlier" / "request.json").write_text(json.dumps({"argv": ["run"], "cwd": str(tmp_path)}))
    df = load(tmp_path / "earlier")
    assert df.attrs["incomplete"] == [str(tmp_path / "earlier")]
    assert df.attrs["skipped"] == [Skipped(str(tmp_path / "earlier"), stopped)]
    assert load(tmp_path).attrs["incomplete"] == [str(tmp_path / "earlier"), str(tmp_path / "early")]


def test_unknown_metric_is_missing_with_its_reason_never_zero(run_dir: Path) -> None:
    """retry_same_key in uncertain_lookup: duplicate_effects is <NA> with the reason beside it, not 0."""
    df = load(run_dir)
    blind = df[(df["policy"] == "retry_same_key") & (df["scenario"] == "uncertain_lookup")]
    assert blind["duplicate_effects"].isna().all()
    assert blind["unknown"].str.contains("duplicate_effects: the destination's ledger is unavailable").all()
    assert blind["duplicate_effects"].fillna(-1).eq(-1).all()  # not a hidden zero
    honest = df[(df["policy"] == "reconcile_and_reauthorize") & (df["scenario"] == "uncertain_lookup")]
    assert honest["duplicate_effects"].eq(0).all()


def test_mixed_sources_run_folder_and_downloaded_polyaxon_outputs(run_dir: Path, tmp_path: Path) -> None:
    """A folder of files downloaded from Polyaxon runs loads beside a run folder, each as a source, with the run
    each file came from; a Polyaxon offline root holds no case (its runs point to the case files)."""
    downloaded = tmp_path / "downloaded"
    for i, path in enumerate(sorted((run_dir / "cases").rglob("recovery.json"))[:3]):
        target = downloaded / "runs" / f"uuid{i}" / "outputs" / "recovery.json"
        target.parent.mkdir(parents=True)
        shutil.copy(path, target)
    alone = load(downloaded)
    assert len(alone) == 3 and sorted(alone["polyaxon_run"]) == ["uuid0", "uuid1", "uuid2"]
    df = load([run_dir, downloaded, run_dir / "polyaxon"])
    # The downloaded files are exact copies of cases the run folder holds: counted once, and said so.
    assert len(df) == 12 and df.attrs["duplicates"] == 3 and set(df["source"]) == {str(run_dir)}
    assert df["polyaxon_run"].isna().all()


def test_progress_counts_every_file_and_the_cases_kept(run_dir: Path, tmp_path: Path) -> None:
    """``progress`` hears of each file as it is read, up to every file of every given path; the cases it counts
    are the rows kept (exact copies from another path, and unreadable files, add none)."""
    broken = tmp_path / "broken" / "recovery.json"
    broken.parent.mkdir()
    broken.write_text("{not json")
    heard: list[Reading] = []
    df = load([run_dir, run_dir / "polyaxon", broken.parent, run_dir], progress=heard.append)
    files = 2 * len(list((run_dir / "cases").rglob("recovery.json"))) + 1
    assert [r.files_read for r in heard] == list(range(1, files + 1))
    assert {r.files for r in heard} == {files}
    cases = [r.cases for r in heard]
    assert cases == sorted(cases) and cases[-1] == len(df) == 12 and df.attrs["duplicates"] == 12
    # The broken file, read after the run folder's own files, keeps no case.
    own = files // 2
    assert heard[own - 1].cases == heard[own].cases == 12
    times = [r.elapsed_s for r in heard]
    assert times == sorted(times)
    silent: list[Reading] = []
    assert load(tmp_path / "nowhere", progress=silent.append).empty and silent == []


def test_loading_pauses_the_cycle_collector_and_gives_it_back_as_it_was(
    run_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The collector is off while the cases are read, then as it was before, also when loading fails."""
    import gc

    import harness.present.analysis as analysis

    during: list[bool] = []
    assert gc.isenabled()
    load(run_dir, progress=lambda _: during.append(gc.isenabled()))
    assert during and not any(during) and gc.isenabled()
    gc.disable()
    try:
        load(run_dir)
        assert not gc.isenabled()
    finally:
        gc.enable()

    def broken(_: object) -> list[str]:
        raise RuntimeError("walk failed")

    monkeypatch.setattr(analysis, "_files", broken)
    with pytest.raises(RuntimeError, match="walk failed"):
        load(run_dir)
    assert gc.isenabled()


def test_bad_files_are_skipped_with_reasons(run_dir: Path, tmp_path: Path) -> None:
    """Malformed JSON, another schema version and missing keys are skipped and listed, not fatal."""
    folder = tmp_path / "mixed"
    good = next((run_dir / "cases").rglob("recovery.json"))
    for name, text in {
        "good": good.read_text(),
        "broken": "{not json",
        "future": json.dumps({**json.loads(good.read_text()), "schema_version": 99}),
        "partial": json.dumps({"schema_version": SCHEMA_VERSION, "policy": "x"}),
    }.items():
        (folder / name).mkdir(parents=True)
        (folder / name / "recovery.json").write_text(text)
    df = load([folder, tmp_path / "nowhere"])
    assert len(df) == 1
    reasons = {Path(s.path).parent.name: s.reason for s in df.attrs["skipped"] if s.path.endswith(".json")}
    assert reasons["broken"].startswith("malformed") and "schema_version 99" in reasons["future"]
    assert "missing keys" in reasons["partial"]
    assert any(s.path.endswith("nowhere") and "no such file" in s.reason for s in df.attrs["skipped"])


@pytest.mark.parametrize(
    ("where", "value", "said"),
    [
        (("scenario",), None, "field 'scenario': Input should be a valid string"),
        (("seed",), "x", "field 'seed': Input should be a valid integer"),
        (("outcome",), "fine", "field 'outcome': Input should be 'correct', 'escalated'"),
        (("metrics",), [], "field 'metrics': Input should be a valid dictionary"),
        (("metrics", "duplicate_effects"), 1.5, "field 'metrics.duplicate_effects': Input should be a valid integer"),
        (("metrics", "task_completed"), "maybe", "field 'metrics.task_completed': Input should be a valid boolean"),
        (("metrics", "time_to_account_s"), "soon", "field 'metrics.time_to_account_s': Input should be a valid number"),
        (("unknown",), {"reads": 1}, "field 'unknown.reads': Input should be a valid string"),
        (("anomalies", 0, "witnesses"), "1", "field 'anomalies.0.witnesses': Input should be a valid tuple"),
        (("attempts",), 3, "field 'attempts': Input should be a valid tuple"),
        (("error",), ["x"], "field 'error': Input should be a valid string"),
    ],
)
def test_a_case_with_a_field_of_the_wrong_type_is_skipped_naming_the_field(
    where: tuple[str | int, ...], value: object, said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A recovery.json that parses but holds a value of the wrong type where a row reads one (a hand-edited
    file, another tool's) is skipped with the field and what it should be, as a file that does not parse is;
    `harness report` of the folder draws the rest and lists it. Each ended the report with a traceback (a
    TypeError, an AttributeError, pandas refusing a column)."""
    from harness.cli import main
    from harness.run.files import recovery_json

    good = json.loads(recovery_json(_reports()[0]))  # type: ignore[arg-type]
    assert good["outcome"] == "incorrect" and good["anomalies"]  # every field tampered with is there
    bad = json.loads(json.dumps(good))
    target = bad
    for key in where[:-1]:
        target = target[key]
    target[where[-1]] = value
    for name, doc in (("good", {**good, "seed": 2}), ("bad", bad)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "recovery.json").write_text(json.dumps(doc))
    frame = load(tmp_path)
    assert list(frame["seed"]) == [2]
    (skipped,) = frame.attrs["skipped"]
    assert skipped.path == str(tmp_path / "bad" / "recovery.json") and skipped.reason.startswith(f"malformed: {said}")
    assert main(["report", str(tmp_path)]) == 0
    assert f"{skipped.path}: malformed: {said}" in capsys.readouterr().err
    assert html.escape(skipped.reason) in (tmp_path / "report.html").read_text()


def test_wilson_interval_matches_known_values() -> None:
    """Wilson 95% bounds for 0/3, 3/3 and 8/10 (reference values to three decimals)."""
    low, high = wilson_interval(0, 3)
    assert (round(low, 3), round(high, 3)) == (0.0, 0.561)
    low, high = wilson_interval(3, 3)
    assert (round(low, 3), round(high, 3)) == (0.439, 1.0)
    low, high = wilson_interval(8, 10)
    assert (round(low, 3), round(high, 3)) == (0.490, 0.943)
    assert all(math.isnan(v) for v in wilson_interval(0, 0))
    # All or none of many: the bound on that side is exactly 1 or 0, and reads so (it printed >99.999%).
    for n in (3, 1000, 100_000, 1_000_000):
        assert wilson_interval(n, n)[1] == 1.0 and wilson_interval(0, n)[0] == 0.0
    assert percent(wilson_interval(100_000, 100_000)[1]) == "100%"


def test_pass_k_is_the_all_of_k_estimate() -> None:
    """pass^k = C(c, k) / C(n, k): all of k runs correct; nan with fewer than k runs."""
    assert pass_k(3, 3, 3) == 1.0 and pass_k(2, 3, 3) == 0.0
    assert pass_k(8, 10, 2) == pytest.approx(28 / 45)
    assert math.isnan(pass_k(1, 2, 3))


def test_tables_show_unknown_cells(run_dir: Path) -> None:
    """The metric table says 'unknown' where no seed established the value; rates count unknown verdicts."""
    df = load(run_dir)
    table = metric_table(df, "duplicate_effects")
    assert table.loc["retry_same_key", "uncertain_lookup"] == "unknown x3"
    assert table.loc["reconcile_and_reauthorize", "uncertain_lookup"] == "0"
    r = rates(df).set_index(["policy", "scenario"])
    assert r.loc[("retry_same_key", "uncertain_lookup"), "unknown"] == 3
    assert r.loc[("reconcile_and_reauthorize", "lost_response"), "correct"] == 3
    assert "3 unknown" in rate_table(df).loc["retry_same_key", "uncertain_lookup"]
    assert outcome_counts(df).loc["reconcile_and_reauthorize", "lost_response"] == "correct 3"
    with pytest.raises(KeyError, match="unknown metric"):
        metric_table(df, "speed")


def test_a_metric_range_reads_as_two_numbers(run_dir: Path) -> None:
    """Seeds that give 14.77, 14.76 and 14.76: the range shows as many digits as tell its ends apart (it read
    14.8 (14.8-14.8)); equal values show no range."""
    df = load(run_dir)
    cell = (df["policy"] == "reconcile_and_reauthorize") & (df["scenario"] == "lost_response")
    df.loc[cell, "time_to_account_s"] = [14.7712, 14.7644, 14.7644]
    assert metric_table(df, "time_to_account_s").loc["reconcile_and_reauthorize", "lost_response"] == (
        "14.8 (14.76-14.77)"
    )
    for same in ([2.0, 2.0, 2.0], [0.3, 0.30000000000000004, 0.3]):  # equal, or apart by a rounding error
        df.loc[cell, "time_to_account_s"] = same
        assert metric_table(df, "time_to_account_s").loc["reconcile_and_reauthorize", "lost_response"] == f"{same[0]:g}"


def test_compare_runs_flags_changed_outcomes(run_dir: Path) -> None:
    """Comparing a run with an edited copy shows exactly the case whose outcome changed."""
    before = load(run_dir)
    after = before.copy()
    row = after.index[
        (after["policy"] == "retry_same_key") & (after["scenario"] == "lost_response") & (after["seed"] == 2)
    ][0]
    after.loc[row, "outcome"] = "incorrect"
    after.loc[row, "policy_revision"] = "2"
    changes = compare_runs(before, after)
    changed = changes[changes["changed"]]
    assert len(changed) == 1 and changed.iloc[0]["outcome_before"] == "correct"
    assert changed.iloc[0]["policy_revision_after"] == "2"
    assert isinstance(changes, pd.DataFrame) and len(changes) == 12
    assert set(changes["present"]) == {"both"}


def test_compare_runs_does_not_count_a_case_one_run_lacks_as_changed(run_dir: Path) -> None:
    """A case only the baseline has is gone, one only the new run has is new: neither changed its outcome."""
    before = load(run_dir)
    after = before[before["seed"] != 3]
    baseline = before[before["seed"] != 1]
    changes = compare_runs(baseline, after)
    assert len(changes) == 12 and not changes["changed"].any()
    present = changes.groupby("seed")["present"].agg(set).to_dict()
    assert present == {1: {"after"}, 2: {"both"}, 3: {"before"}}


def _reports() -> list[object]:
    """Two cases' reports, the second with text that spells the loader's timeline markers in its values."""
    from harness.run.case import run_case
    from harness.run.plan import load_grid

    cases = load_grid(["retry_new_key"], ["lost_response", "changed_task"], [1]).cases
    first, second = (run_case(c)[0] for c in cases)
    tricky = '"timeline":[ ],"reproduce": ],\n  "reproduce": "timeline": ['
    return [first, second.model_copy(update={"claimed": {"claimed": tricky}, "reproduce": f"x {tricky}"})]


def test_a_compact_record_is_read_without_its_timeline_as_if_parsed_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """The loader parses a compact record without its timeline's bytes (one parse, of the rest); what it gets
    is the whole case less its timeline, even when values spell the markers it cuts at."""
    from harness.present import analysis
    from harness.run.files import record_line

    parsed: list[bytes] = []
    real = analysis.from_json

    def recorded(text: bytes) -> object:
        parsed.append(text)
        return real(text)

    monkeypatch.setattr(analysis, "from_json", recorded)
    for report in _reports():
        line = record_line(report).encode()
        whole = json.loads(line)
        assert whole["timeline"], "a case with a timeline"
        del whole["timeline"]
        parsed.clear()
        assert analysis._without_timeline(line) == whole
        assert len(parsed) == 1 and b'"timeline"' not in parsed[0] and len(parsed[0]) < len(line) / 2


def test_a_case_of_another_shape_is_parsed_whole_less_its_timeline() -> None:
    from harness.present.analysis import _without_timeline

    reordered = b'{"reproduce":"r","timeline":[{"index":0}],"seed":3}'
    assert _without_timeline(reordered) == {"reproduce": "r", "seed": 3}
    assert _without_timeline(b'{"timeline":[],"reproduce":"r"}') == {"reproduce": "r"}
    assert _without_timeline(b"[1, 2]") == [1, 2]
    assert _without_timeline(b'\xef\xbb\xbf{"seed": 3}') == {"seed": 3}  # a byte-order mark: the standard parser
    with pytest.raises(json.JSONDecodeError):
        _without_timeline(b'{"broken": ')


def test_a_recovery_json_damaged_inside_its_timeline_is_skipped(tmp_path: Path) -> None:
    """A recovery.json is parsed whole: bytes damaged in the middle of its timeline make it unreadable (skipped,
    with why), not a row whose timeline cannot be drawn; one saved with a byte-order mark still loads."""
    from harness.run.files import recovery_json

    good, other = _reports()
    damaged = recovery_json(good).encode()
    at = damaged.index(b'"timeline": [') + 40
    (tmp_path / "damaged").mkdir()
    (tmp_path / "damaged" / "recovery.json").write_bytes(damaged[:at] + b"\x00GARBAGE{{{" + damaged[at + 11 :])
    (tmp_path / "bom").mkdir()
    (tmp_path / "bom" / "recovery.json").write_bytes(b"\xef\xbb\xbf" + recovery_json(other).encode())
    frame = load(tmp_path)
    assert list(frame["path"]) == [str(tmp_path / "bom" / "recovery.json")]
    (skipped,) = frame.attrs["skipped"]
    assert skipped.path == str(tmp_path / "damaged" / "recovery.json") and "JSONDecodeError" in skipped.reason


def test_a_compact_record_file_zlib_refuses_is_skipped(tmp_path: Path) -> None:
    """A records file whose deflate stream is damaged so that zlib itself refuses it is skipped with why (zlib's
    error is neither an OSError nor a ValueError: it escaped the loader and ended `harness report`)."""
    import gzip
    import zlib

    raw = gzip.compress(b'{"seed": 1}\n' * 1000, compresslevel=1, mtime=0)
    damaged = next(
        bytes(raw[:i]) + bytes([raw[i] ^ flip]) + bytes(raw[i + 1 :])
        for i in range(12, len(raw) - 8)
        for flip in (0xFF, 0x80, 0x01)
        if _zlib_refuses(bytes(raw[:i]) + bytes([raw[i] ^ flip]) + bytes(raw[i + 1 :]))
    )
    with pytest.raises(zlib.error):
        gzip.decompress(damaged)
    path = tmp_path / "cases" / "p" / "s" / "records-000000.jsonl.gz"
    path.parent.mkdir(parents=True)
    path.write_bytes(damaged)
    frame = load(tmp_path)
    assert frame.empty
    (skipped,) = frame.attrs["skipped"]
    assert skipped.path == str(path) and "while decompressing data" in skipped.reason


def _zlib_refuses(data: bytes) -> bool:
    import gzip
    import zlib

    try:
        gzip.decompress(data)
    except zlib.error:
        return True
    except Exception:
        return False
    return False


def test_a_percentage_that_is_neither_none_nor_all_never_reads_as_either() -> None:
    """3,000 correct cases of 3,000 showed `100% [100%-100%]`: the interval's lower end (99.87%) rounded up
    to a certainty the cases do not give. Whole percentages stay whole; one near an end gets the decimals it
    needs."""
    from harness.present.analysis import percent

    assert [percent(x) for x in (0.0, 1.0, 0.5, 0.674, 0.99873, 0.004, 0.99996, 1e-9, 1 - 1e-9)] == [
        "0%",
        "100%",
        "50%",
        "67%",
        "99.9%",
        "0.4%",
        "99.996%",
        "<0.001%",
        ">99.999%",
    ]


def test_rows_come_in_seed_order_within_a_cell(tmp_path: Path) -> None:
    """Seeds are numbers: a cell's rows read seed 9 before seed 10, not in the order of their folder names."""
    out = tmp_path / "run"
    grid = ("--policy", "retry_new_key", "--scenario", "lost_response", "--seed-count", "11")
    assert run_into(out, "--no-report", "--tracking", "none", *grid) == 0
    assert load(out)["seed"].tolist() == list(range(1, 12))


def test_two_runs_of_one_cell_in_one_folder_are_both_kept_and_named(tmp_path: Path) -> None:
    """Two different cases under one name (the same policy, scenario, revisions and seed) in one folder: the
    loader kept the first and dropped the second unsaid, so a folder with a re-run in it lost one run. Both are
    kept, and named in attrs["clashes"]; loaded as two paths, they compare, with no clash."""
    lost = (SCENARIO_DIR / "lost_response.yaml").read_text()
    kinds = {"lost": lost, "quiet": lost.replace("- {boundary: response_lost, nth: 1}", "[]")}
    assert kinds["quiet"] != lost
    folder = tmp_path / "runs"
    for kind, text in kinds.items():
        scenario = tmp_path / kind / "lost_response.yaml"
        scenario.parent.mkdir()
        scenario.write_text(text)
        args = ("--policy", "retry_new_key", "--scenario", str(scenario), "--seed-count", "3", "--tracking", "none")
        assert run_into(folder / kind, "--no-report", *args) == 0
    both = load(folder)
    apart = load([folder / "lost", folder / "quiet"])
    assert len(both) == len(apart) == 6 and apart.attrs["clashes"] == [] and apart.attrs["duplicates"] == 0
    assert sorted(both["outcome"]) == sorted(apart["outcome"]) and both["outcome"].nunique() == 2
    assert sorted(c.path for c in both.attrs["clashes"]) == sorted(
        str(p) for p in (folder / "quiet").rglob("recovery.json")
    )
    reason = f"retry_new_key (revision 1) x lost_response (revision 1) seed 1 is also another case under {folder}"
    assert any(c.reason.startswith(reason) for c in both.attrs["clashes"])
    from harness.present.html_report import write_report

    told: list[str] = []
    text = write_report(folder, tell=told.append).read_text()
    assert "Two cases under one name" in text and html.escape(both.attrs["clashes"][0].path) in text
    assert [line for line in told if "3 cases share their names with another case" in line]


def test_a_run_loaded_from_its_records_and_its_recovery_files_counts_once(tmp_path: Path) -> None:
    """The same cases written once as recovery.json files and once as compact records: the exact-copy check
    compared bytes, a compact line never has the bytes of its recovery.json, and every correct case counted
    twice. Copies are matched by content now, in either kind of file."""
    args = ("--policy", "reconcile_and_reauthorize", "--policy", "retry_new_key", "--scenario", "lost_response",
            "--seed-count", "4", "--tracking", "none", "--no-report")  # fmt: skip
    assert run_into(tmp_path / "full", *args, "--records", "full") == 0
    assert run_into(tmp_path / "compact", *args, "--records", "compact") == 0
    assert list((tmp_path / "compact").rglob("records-*.jsonl.gz"))
    one = load(tmp_path / "full")
    both = load([tmp_path / "full", tmp_path / "compact"])
    assert len(one) == len(both) == 8 and both.attrs["duplicates"] == 8 and both.attrs["clashes"] == []
    assert set(both["source"]) == {str(tmp_path / "full")}


def test_two_copies_of_a_run_under_one_folder_count_as_duplicates(tmp_path: Path) -> None:
    """Two copies of one run under a folder loaded as one path: the second copy was dropped as the case's other
    file in its run, unsaid (attrs["duplicates"] 0), so loading reports/runs/ hid that whole runs were merged.
    They count as duplicates, as two paths do; a compact run's recovery.json beside its record is still one case."""
    args = ("--policy", "retry_new_key", "--scenario", "lost_response", "--seed-count", "3", "--tracking", "none",
            "--no-report", "--records", "compact")  # fmt: skip
    assert run_into(tmp_path / "runs" / "a", *args) == 0
    assert list((tmp_path / "runs" / "a").rglob("recovery.json"))  # retry_new_key is incorrect: both files
    shutil.copytree(tmp_path / "runs" / "a", tmp_path / "runs" / "b")
    one = load(tmp_path / "runs" / "a")
    assert len(one) == 3 and one.attrs["duplicates"] == 0
    both = load(tmp_path / "runs")
    assert len(both) == 3 and both.attrs["duplicates"] == 3 and both.attrs["clashes"] == []
    apart = load([tmp_path / "runs" / "a", tmp_path / "runs" / "b"])
    assert len(apart) == 3 and apart.attrs["duplicates"] == 3


@pytest.mark.parametrize("records", ["full", "compact"])
def test_one_cell_asked_for_by_name_and_by_path_loads_as_one_run_not_a_conflict(tmp_path: Path, records: str) -> None:
    """A Polyaxon user's review: a cell run once as ``--scenario lost_response`` and once by the file's path
    differed only in the reproduce command, and the loader called them a conflict and counted each case twice.
    A case's reproduce command says how the run was asked for, not what it showed: they are duplicates. Another
    result under the same identity is still a conflict."""
    common = (
        "--policy",
        "retry_new_key",
        "--seed-count",
        "3",
        "--tracking",
        "none",
        "--no-report",
        "--records",
        records,
    )
    path = str(SCENARIO_DIR / "lost_response.yaml")
    assert run_into(tmp_path / "by_name", "--scenario", "lost_response", *common) == 0
    assert run_into(tmp_path / "by_path", "--scenario", path, *common) == 0
    both = load([tmp_path / "by_name", tmp_path / "by_path"])
    assert (len(both), both.attrs["duplicates"], both.attrs["conflicts"]) == (3, 3, [])
    assert set(both["reproduce"]) == {
        f"python -m harness run --policy retry_new_key --scenario lost_response --seed {n}" for n in (1, 2, 3)
    }
    changed = next((tmp_path / "by_path").rglob("recovery.json"))
    text = changed.read_text()
    changed.write_text(text.replace('"dispatches": 2', '"dispatches": 3', 1))
    assert '"dispatches": 3' in changed.read_text()
    again = load([tmp_path / "by_name", tmp_path / "by_path"])
    assert len(again.attrs["conflicts"]) == 1 and "other results" in again.attrs["conflicts"][0].reason


def test_a_case_with_text_the_json_writer_refuses_still_loads(tmp_path: Path) -> None:
    """A recovery.json holding a lone surrogate (valid JSON, which pydantic's parser refuses and the standard
    library reads) is a case all the same: its copy is known by its bytes."""
    run = tmp_path / "run"
    assert run_into(run, "--no-report", "--policy", "retry_new_key", "--scenario", "lost_response", "--seed", "1",
                    "--tracking", "none") == 0  # fmt: skip
    (case,) = run.rglob("recovery.json")
    data = json.loads(case.read_text())
    data["reproduce"] = "\ud800"
    case.write_text(json.dumps(data))
    assert "\\ud800" in case.read_text()
    df = load([run, run])
    assert len(df) == 1 and df.attrs["skipped"] == [] and df.attrs["duplicates"] == 1


def test_a_run_still_writing_is_said_to_be_running_not_stopped(tmp_path: Path) -> None:
    """load() of a folder a run is writing now said the run "was stopped before its first case" (and its print
    gave a resume command, which the run's lock would refuse); it says a run is writing it."""
    from harness.run.folder import claim

    early = tmp_path / "early"
    early.mkdir()
    (early / "request.json").write_text(json.dumps({"argv": ["run"], "cwd": str(tmp_path)}))
    started = tmp_path / "started"
    assert run_into(started, "--no-report", "--policy", "retry_new_key", "--scenario", "lost_response", "--seed", "1",
                    "--tracking", "none") == 0  # fmt: skip
    (started / "run.json").unlink()  # as it is before its end
    holds = [claim(early, fresh=False), claim(started, fresh=False)]
    try:
        df = load([early, started])
        assert df.attrs["running"] == df.attrs["incomplete"] == [str(early), str(started)]
        assert [s.reason for s in df.attrs["skipped"]] == [
            "no case written yet: a harness run is writing it now (listed as incomplete)"
        ]
        assert len(df) == 1
    finally:
        for hold in holds:
            hold.release()
    df = load([early, started])
    assert df.attrs["running"] == [] and df.attrs["incomplete"] == [str(early), str(started)]
    assert [s.reason for s in df.attrs["skipped"]] == [
        "no case written yet: the run was stopped before its first case (listed as incomplete)"
    ]


def test_a_run_still_writing_gets_no_resume_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from harness.run.folder import claim

    out = tmp_path / "run"
    out.mkdir()
    (out / "request.json").write_text(json.dumps({"argv": ["run"], "cwd": str(tmp_path)}))
    hold = claim(out, fresh=False)
    try:
        load(out, quiet=False)
    finally:
        hold.release()
    assert f"{out}: incomplete (a harness run is still writing it)\n" in capsys.readouterr().out
    load(out, quiet=False)
    assert f"{out}: incomplete (the run was stopped); resume: python -m harness run --resume {out}" in (
        capsys.readouterr().out
    )


def test_a_stopped_run_loaded_by_a_relative_path_is_resumed_by_an_absolute_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A notebook that loads ``runs/x`` is told the resume command by a path that holds from any folder."""
    out = tmp_path / "my runs" / "run"
    out.mkdir(parents=True)
    (out / "request.json").write_text(json.dumps({"argv": ["run"], "cwd": str(tmp_path)}))
    monkeypatch.chdir(tmp_path)
    load("my runs/run", quiet=False)
    assert f"my runs/run: incomplete (the run was stopped); resume: python -m harness run --resume '{out}'\n" in (
        capsys.readouterr().out
    )


def test_an_exploration_is_named_as_one_by_report_and_load(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`harness report` of an exploration's folder said "not a run folder; give a folder written by this version
    of 'harness run'", and load() the same: both say it is an exploration, and what reads it."""
    from harness.cli import main

    out = tmp_path / "explored"
    assert main(["explore", "--policy", "retry_new_key", "--scenario", "lost_response", "--depth", "1", "--swarm",
                 "0", "--tracking", "none", "--quiet", "--out", str(out)]) == 1  # fmt: skip
    capsys.readouterr()
    assert main(["report", str(out)]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"harness: {out}: an exploration (explore.json), not a run: it holds findings, not cases")
    assert "load_explorations" in line
    df = load(out)
    assert [s.reason for s in df.attrs["skipped"]] == [
        "an exploration (explore.json), not a run: load its findings with load_explorations"
    ]


def test_an_empty_path_is_skipped_not_read_as_the_current_folder(
    run_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """load("") (an unset variable) would be Path("."): every case under wherever Python started."""
    monkeypatch.chdir(run_dir)
    frame = load("")
    assert frame.empty
    assert [s.reason for s in frame.attrs["skipped"]] == ["an empty path (not the current folder): give a run folder"]


def test_a_runs_own_file_given_to_load_is_said_to_be_one(tmp_path: Path) -> None:
    """`load('run/summary.csv')` skipped the file as "malformed: JSONDecodeError", as if the run's own summary were
    a damaged case; each of a run's files beside its cases is now said to be that, with the folder to load."""
    from harness.cli import main

    run = tmp_path / "run"
    args = ["--policy", "retry_same_key", "--scenario", "lost_response", "--seed-count", "1"]
    assert main(["run", *args, "--tracking", "none", "--quiet", "--out", str(run)]) == 0
    for name in ("summary.csv", "coverage.json", "manifest.json", "run.json", "request.json", "report.html"):
        assert (run / name).is_file(), name
        frame = load(run / name)
        assert frame.empty
        assert [(s.path, s.reason) for s in frame.attrs["skipped"]] == [
            (str(run / name), f"the run's {name}, not a case: load its run folder, {run}")
        ]
    assert len(load(run)) == 1
