"""The report page (harness/present/html_report.py), checked in process on small run folders.

Written against the mutants mutmut 3.8.1 made of html_report.py (tests/MUTANTS.md, thirty-ninth pass). A tiny grid
runs here (``Supervised`` from test_grid_mutants stands in for ``supervise``, and the grid writes no page), into a
folder of its own for each test; cases are edited by hand where a harness error or an undrawable timeline is the
point. The pictures are not: matplotlib's drawing is replaced by stand-ins that note what they were given and
return bytes that name it, so that a page is written in milliseconds and says which case each picture is of.
"""

from __future__ import annotations

import base64
import html
import json
import re
import shutil
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import harness.present.html_report as html_report
import harness.run.pool as pool
from harness.errors import InputError
from harness.limits import REPORT_LISTED_MAX
from harness.present.analysis import Skipped
from harness.run import plan_cells, run_grid
from tests.test_grid_mutants import NONE, Supervised

POLICIES = ("retry_same_key", "stop_on_timeout")
SCENARIOS = ("connector_no_record_yet", "lost_response")


class Drawn:
    """Stands in for the drawing functions html_report imported: notes each picture asked for."""

    def __init__(self) -> None:
        self.heatmaps: list[pd.DataFrame] = []
        self.timelines: list[tuple[str, str, int]] = []
        self.saved: list[Path] = []

    def heatmap(self, frame: pd.DataFrame) -> tuple[str, int]:
        self.heatmaps.append(frame)
        return ("heatmap", len(frame))

    def timeline(self, report: dict[str, Any]) -> tuple[str, str]:
        key = (report["policy"], report["scenario"], report["seed"])
        self.timelines.append(key)
        return ("timeline", f"{key[0]}/{key[1]}/{key[2]}")

    def png_bytes(self, fig: tuple[str, Any]) -> bytes:
        return f"{fig[0]}:{fig[1]}".encode()

    def save_png(self, fig: tuple[str, Any], path: Path) -> Path:
        self.saved.append(path)
        return html_report.write_replacing(path, self.png_bytes(fig))


@pytest.fixture(autouse=True)
def drawn(monkeypatch: pytest.MonkeyPatch) -> Drawn:
    fake = Drawn()
    monkeypatch.setattr(pool, "supervise", Supervised())
    for name in ("heatmap", "timeline", "png_bytes", "save_png"):
        monkeypatch.setattr(html_report, name, getattr(fake, name))
    return fake


def _grid(out: Path, policies: Sequence[str] = POLICIES, scenarios: Sequence[str] = SCENARIOS,
          seeds: Sequence[int] = (1, 2, 3)) -> Path:  # fmt: skip
    run_grid(plan_cells(list(policies), list(scenarios), list(seeds), None, 1), replace(NONE, out=out))
    return out


@pytest.fixture
def run(tmp_path: Path) -> Path:
    """retry_same_key: incorrect at connector_no_record_yet seeds 1 and 2, correct elsewhere; stop_on_timeout:
    abandoned everywhere."""
    return _grid(tmp_path / "run")


def _case(run: Path, policy: str, scenario: str, seed: int) -> Path:
    return run / "cases" / policy / scenario / f"seed-{seed}" / "recovery.json"


def _edit(path: Path, **changes: Any) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    data.update(changes)
    path.write_text(json.dumps(data), encoding="utf-8")


def _as_error(path: Path, error: str) -> None:
    _edit(path, outcome="harness_error", verdict="unknown", metrics={}, unknown={"*": f"the harness failed: {error}"},
          checks={}, anomalies=[], claimed={}, timeline=[], error=error)  # fmt: skip


def _page(run: Path, **kw: Any) -> str:
    return html_report.write_report(run, **kw).read_text(encoding="utf-8")


def _rows(page: str, table_id: str) -> list[list[str]]:
    """The cells of a table's body rows, as text."""
    table = page.split(f'id="{table_id}"', 1)[1].split("</table>", 1)[0]
    body = table.split("<tbody>", 1)[1]
    return [re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row, re.S) for row in body.split("</tr>")[:-1]]


def _images(page: str) -> list[tuple[str, bytes]]:
    return [
        (alt, base64.b64decode(data))
        for alt, data in re.findall(r'<img alt="([^"]*)" src="data:image/png;base64,([^"]*)">', page)
    ]


FIRST = "connector_no_record_yet seed 1"


# --- the page as a whole ----------------------------------------------------------------------------------------


def test_the_page_names_its_cases_folder_policies_scenarios_and_seeds(run: Path) -> None:
    page = _page(run)
    assert page.startswith(
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>Recovery harness report'
    )
    assert page.endswith("</body></html>\n")
    assert "<h1>Recovery harness report</h1>" in page
    assert f"<p>12 cases from <code>{run}</code>: 2 policies x 2 scenarios, seeds 1, 2, 3.</p>" in page


def test_a_crash_point_scenario_counts_once_and_its_columns_are_said(tmp_path: Path) -> None:
    """connector_crash_points is four cases a seed, a column each: the header counted them as four scenarios, so
    the default grid's page said 105 scenarios of the 102 shipped."""
    out = _grid(tmp_path / "run", ("retry_same_key",), ("connector_crash_points", "lost_response"), (1,))
    assert "1 policy x 2 scenarios (5 columns: a crash point is a column), seed 1.</p>" in _page(out)
    one = _grid(tmp_path / "one", ("retry_same_key",), ("connector_crash_points@after_effect",), (1,))
    assert "1 policy x 1 scenario, seed 1.</p>" in _page(one)


def test_one_case_is_said_in_the_singular(tmp_path: Path) -> None:
    out = _grid(tmp_path / "run", ("retry_same_key",), ("lost_response",), (4,))
    page = _page(out)
    assert f"<p>1 case from <code>{out}</code>: 1 policy x 1 scenario, seed 4.</p>" in page


def test_the_verdicts_give_each_policys_counts_and_links_its_first_failure(run: Path) -> None:
    page = _page(run)
    head = page.split('<table id="verdicts">', 1)[1].split("</thead>", 1)[0]
    assert re.findall(r"<th>(.*?)</th>", head) == [
        "policy", "verdict", "violated properties", "correct", "escalated", "abandoned", "incorrect", "unresolved",
        "harness errors", "cases", "first failure"]  # fmt: skip
    assert _rows(page, "verdicts") == [
        ["retry_same_key", '<span class="unsafe">unsafe</span>', "duplicate_effects, abandoned_actions", "4", "0", "0",
         "2", "0", "0", "6", f'<a href="#case-0">{FIRST}: incorrect</a>'],
        ["stop_on_timeout", '<span class="unsafe">unsafe</span>', "abandoned_actions", "0", "0", "6", "0", "0", "0",
         "6", f'<a href="#case-1">{FIRST}: abandoned</a>'],
    ]  # fmt: skip
    assert page.count('<tr class="policy">') == 2
    assert page.index("<h2>Verdict per policy</h2>") < page.index('<table id="verdicts">') < page.index("<h2>Outcomes")
    assert "<strong>safe</strong>: every case correct" in page


def test_a_safe_policy_has_no_first_failure_and_no_link(tmp_path: Path) -> None:
    out = _grid(tmp_path / "run", ("retry_same_key",), ("lost_response",), (1, 2))
    page = _page(out)
    assert _rows(page, "verdicts") == [
        ["retry_same_key", '<span class="safe">safe</span>', "-", "2", "0", "0", "0", "0", "0", "2", "-"]
    ]
    assert "<h2>Timelines of the 0 incorrect, abandoned or unresolved cases</h2>" in page
    assert "One per policy, scenario and outcome (0)" in page
    assert 'class="case"' not in page and "Harness errors" not in page


def test_the_tables_and_the_heatmap_are_of_every_case(run: Path, drawn: Drawn) -> None:
    page = _page(run)
    assert [len(f) for f in drawn.heatmaps] == [12]
    assert drawn.saved == [run / "heatmap.png"]
    assert (run / "heatmap.png").read_bytes() == b"heatmap:12"
    assert _images(page)[0] == ("heatmap of outcomes per policy and scenario", b"heatmap:12")
    outcomes = page.split('id="outcomes"', 1)[1].split("</table>", 1)[0]
    assert "correct 1, incorrect 2" in outcomes and "abandoned 3" in outcomes
    rates = page.split('id="rates"', 1)[1].split("</table>", 1)[0]
    assert "1/3" in rates
    for metric in html_report.TABLE_METRICS:
        assert f'<h3>{metric}</h3>\n<table border="0" class="dataframe" id="metric-{metric}">' in page or (
            f'<h3>{metric}</h3>\n<table class="dataframe" id="metric-{metric}">' in page
        )
    order = [page.index(s) for s in ("<h2>Outcomes</h2>", 'id="outcomes"', "<h2>Correct rate over seeds</h2>",
                                     "From 20 cases in a cell", 'id="rates"', "<h2>Metrics</h2>", "Mean over seeds",
                                     'id="metric-', "<h2>Timelines")]  # fmt: skip
    assert order == sorted(order)


def test_the_shown_metrics_are_the_registrys_properties_first() -> None:
    from harness.check.registry import METRICS

    shown_metrics = [m for m in METRICS if m.shown]
    assert (
        tuple(
            [m.name for m in shown_metrics if m.kind == "property"]
            + [m.name for m in shown_metrics if m.kind != "property"]
        )
        == html_report.TABLE_METRICS
    )
    assert html_report.TABLE_METRICS[0] == "unauthorized_dispatches" and "refusals" in html_report.TABLE_METRICS
    assert all(m.name not in html_report.TABLE_METRICS for m in METRICS if not m.shown)


def test_a_table_puts_scenarios_down_when_there_are_more_of_them() -> None:
    wide = pd.DataFrame([[1, 2, 3]], index=["p"], columns=["s1", "s2", "s3"])
    turned = html_report._table(wide, "t<1>")
    assert 'id="t&lt;1&gt;"' in turned or 'id="t<1>"' in turned
    assert re.findall(r"<th>(\w+)</th>", turned) == ["p", "s1", "s2", "s3"]
    square = pd.DataFrame([[1, 2], [3, 4]], index=["p", "q"], columns=["s1", "s2"])
    kept = html_report._table(square, "k")
    assert re.findall(r"<th>(\w+)</th>", kept) == ["s1", "s2", "p", "q"]
    assert 'border="0"' not in kept and 'border="1"' not in kept
    escaped = html_report._table(pd.DataFrame([["<b>"]], index=["p"], columns=["s"]), "e")
    assert "&lt;b&gt;" in escaped and "<b>" not in escaped


# --- the grid's order ---------------------------------------------------------------------------------------


def _policy_order(page: str) -> list[str]:
    return [r[0] for r in _rows(page, "verdicts")]


def test_the_page_keeps_the_order_the_run_recorded(run: Path) -> None:
    record = json.loads((run / "run.json").read_text())
    record["policies"], record["scenarios"] = POLICIES[::-1], SCENARIOS[::-1]
    (run / "run.json").write_text(json.dumps(record))
    page = _page(run)
    assert _policy_order(page) == ["stop_on_timeout", "retry_same_key"]
    # Within a policy, the scenarios in the run's order: lost_response's group comes first.
    assert re.findall(r'id="case-\d"><h3>(\w+) x (\w+)', page) == [
        ("stop_on_timeout", "lost_response"), ("stop_on_timeout", "connector_no_record_yet"),
        ("retry_same_key", "connector_no_record_yet")]  # fmt: skip
    assert _rows(page, "verdicts")[0][-1] == '<a href="#case-0">lost_response seed 1: abandoned</a>'


def test_a_given_order_overrides_the_runs(run: Path) -> None:
    assert _policy_order(_page(run, order=POLICIES[::-1])) == ["stop_on_timeout", "retry_same_key"]
    assert _policy_order(_page(run, order=[])) == list(POLICIES)


@pytest.mark.parametrize(
    "text",
    [None, "not json", "[1, 2]", '{"policies": "stop_on_timeout", "scenarios": 3}',
     '{"policies": [1, "stop_on_timeout"], "scenarios": [null, "lost_response"]}'],
)  # fmt: skip
def test_a_run_record_missing_or_out_of_shape_leaves_the_order_as_read(run: Path, text: str | None) -> None:
    if text is None:
        (run / "run.json").unlink()
        (run / "manifest.json").unlink(missing_ok=True)
    else:
        (run / "run.json").write_text(text)
    order = html_report._grid_order(run)
    if text is not None and text.startswith('{"policies": [1'):
        assert order == (["stop_on_timeout"], ["lost_response"])
    else:
        assert order == ([], [])


def test_the_grid_order_is_read_from_the_run_record(run: Path) -> None:
    assert html_report._grid_order(run) == (list(POLICIES), list(SCENARIOS))
    (run / "run.json").write_text('{"scenarios": ["lost_response"]}')
    assert html_report._grid_order(run) == ([], ["lost_response"])
    (run / "run.json").write_bytes('{"policies": ["é"]}'.encode())
    assert html_report._grid_order(run) == (["é"], [])


# --- the failing cases ----------------------------------------------------------------------------------------


def test_each_failing_group_shows_its_lowest_seed_and_lists_the_others(run: Path, drawn: Drawn) -> None:
    page = _page(run)
    assert drawn.timelines == [
        ("retry_same_key", "connector_no_record_yet", 1),
        ("stop_on_timeout", "connector_no_record_yet", 1),
        ("stop_on_timeout", "lost_response", 1),
    ]
    assert "<h2>Timelines of the 8 incorrect, abandoned or unresolved cases</h2>" in page
    assert ("<p>One per policy, scenario and outcome (3): the case with the lowest seed, the group's other cases "
            "listed under it (the first 20).</p>") in page  # fmt: skip
    sections = page.split('<div class="case" id="case-')[1:]
    assert len(sections) == 3
    first = sections[0]
    assert first.startswith(
        '0"><h3>retry_same_key x connector_no_record_yet seed 1: incorrect (verdict false), and 1 more incorrect '
        "(other seeds)</h3>\n<pre>python -m harness run --policy retry_same_key --scenario connector_no_record_yet "
        "--seed 1</pre>\n"
    )
    assert ('<div class="anomaly">duplicate_effect: a73 took effect 2 times (receipts r1, r2) (entries 31, 38)</div>'
            in first)  # fmt: skip
    assert '<div class="unknown">unknown time_to_account_s: the effect of a73 was never recorded</div>' in first
    assert _images(first) == [
        ("timeline of retry_same_key x connector_no_record_yet seed 1: incorrect (verdict false)",
         b"timeline:retry_same_key/connector_no_record_yet/1")]  # fmt: skip
    assert first.rstrip().endswith("</table>\n</div>")
    assert _rows(first, "x") if False else True
    others = first.split('<table class="others">', 1)[1]
    assert others.startswith(
        "<thead><tr><th>seed</th><th>anomalies</th><th>unknown</th><th>reproduce</th></tr></thead>"
    )
    assert re.findall(r"<tr><td>(.*?)</td><td>(.*?)</td><td>(.*?)</td><td>(.*?)</td></tr>", others) == [
        ("2", "3", "time_to_account_s: the effect of a73 was never recorded",
         "python -m harness run --policy retry_same_key --scenario connector_no_record_yet --seed 2")]  # fmt: skip
    assert "more:" not in first
    assert sections[1].startswith("1\"><h3>stop_on_timeout x connector_no_record_yet seed 1: abandoned (verdict false), "
                                  "and 2 more abandoned (other seeds)</h3>")  # fmt: skip
    assert sections[1].count("<tr><td>") == 2
    assert sections[2].startswith('2"><h3>stop_on_timeout x lost_response seed 1: abandoned')


def test_a_group_of_one_case_lists_no_others(tmp_path: Path, drawn: Drawn) -> None:
    out = _grid(tmp_path / "run", ("retry_same_key",), ("connector_no_record_yet",), (2, 3))
    page = _page(out)
    section = page.split('<div class="case" id="case-0">', 1)[1].split("</div>\n</body>", 1)[0]
    assert section.startswith("<h3>retry_same_key x connector_no_record_yet seed 2: incorrect (verdict false)</h3>")
    assert "more" not in section.split("</h3>")[0]
    assert 'class="others"' not in page
    assert drawn.timelines == [("retry_same_key", "connector_no_record_yet", 2)]


def test_a_picture_drawn_already_is_taken_as_it_is(run: Path, drawn: Drawn) -> None:
    _case(run, *POLICIES[:1], SCENARIOS[0], 1).with_name("timeline.png").write_bytes(b"drawn before")
    page = _page(run)
    assert ("timeline of retry_same_key x connector_no_record_yet seed 1: incorrect (verdict false)",
            b"drawn before") in _images(page)  # fmt: skip
    assert ("retry_same_key", "connector_no_record_yet", 1) not in drawn.timelines
    assert len(drawn.timelines) == 2


def test_a_case_without_a_history_has_no_picture_and_no_warning(run: Path, drawn: Drawn) -> None:
    _edit(_case(run, "retry_same_key", SCENARIOS[0], 1), timeline=[])
    told: list[str] = []
    page = _page(run, tell=told.append)
    section = page.split('id="case-0">', 1)[1].split('id="case-1">', 1)[0]
    assert "<img" not in section and "Timeline not drawn" not in section
    assert ("retry_same_key", "connector_no_record_yet", 1) not in drawn.timelines
    assert told == []


def test_a_case_without_reproduce_anomalies_or_unknowns_shows_an_empty_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    frame = pd.DataFrame([{"policy": "p", "scenario": "s", "seed": 1, "outcome": "incorrect", "verdict": "false",
                           "path": "/none/recovery.json"}])  # fmt: skip
    monkeypatch.setattr(html_report, "read_case", lambda _: {})
    undrawn: list[str] = []
    text = html_report._group(html_report.shown(frame)[0], "case-3", undrawn)
    assert text == '<div class="case" id="case-3"><h3>p x s seed 1: incorrect (verdict false)</h3>\n<pre></pre>\n</div>'
    assert undrawn == []


def test_names_and_texts_from_the_cases_are_escaped(tmp_path: Path) -> None:
    out = _grid(tmp_path / "r<&>", ("retry_same_key",), ("connector_no_record_yet",), (1, 2))
    for seed in (1, 2):
        path = _case(out, "retry_same_key", "connector_no_record_yet", seed)
        _edit(path, reproduce=f"run <{seed}> & 'x'", anomalies=[{"kind": "k<", "detail": "d&", "witnesses": [3, 2]}],
              unknown={"m<": "why>"})  # fmt: skip
    page = _page(out)
    assert f"<code>{str(out).replace('&', '&amp;').replace('<', '&lt;').replace('>', '&gt;')}</code>" in page
    assert "<pre>run &lt;1&gt; &amp; &#x27;x&#x27;</pre>" in page
    assert '<div class="anomaly">k&lt;: d&amp; (entries 3, 2)</div>' in page
    assert '<div class="unknown">unknown m&lt;: why&gt;</div>' in page
    assert "<td>run &lt;2&gt; &amp; &#x27;x&#x27;</td>" in page
    assert "<td>m&lt;: why&gt;</td>" in page
    assert 'alt="timeline of retry_same_key x connector_no_record_yet seed 1: incorrect (verdict false)"' in page
    assert "r<&>" not in page


def test_a_group_heading_and_picture_name_are_escaped() -> None:
    frame = pd.DataFrame(
        [
            {
                "policy": "p<",
                "scenario": "s&",
                "seed": 1,
                "outcome": "incorrect",
                "verdict": "v>",
                "path": "/none/x.jsonl",
            }
        ]
    )
    group = html_report.shown(frame)[0]
    undrawn: list[str] = []
    import harness.present.html_report as module

    original = module.read_case
    try:
        module.read_case = lambda _: {"timeline": [{"a": 1}], "policy": "p", "scenario": "s", "seed": 1}
        text = module._group(group, "case-<9>", undrawn)
    finally:
        module.read_case = original
    assert text.startswith('<div class="case" id="case-<9>"><h3>p&lt; x s&amp; seed 1: incorrect (verdict v&gt;)</h3>')
    assert 'alt="timeline of p&lt; x s&amp; seed 1: incorrect (verdict v&gt;)"' in text


def test_the_others_listed_are_cut_at_the_most_listed_with_the_count_of_the_rest() -> None:
    many = REPORT_LISTED_MAX + 1_234
    others = pd.DataFrame(
        {"seed": range(many), "anomalies": 1, "unknown": ["", *["u"] * (many - 1)], "reproduce": "r<"}
    )
    text = html_report._others(others)
    assert text.count("<tr><td>") == REPORT_LISTED_MAX
    assert "<tr><td>0</td><td>1</td><td>-</td><td>r&lt;</td></tr>" in text
    assert f"<tr><td>{REPORT_LISTED_MAX - 1}</td><td>1</td><td>u</td><td>r&lt;</td></tr>" in text
    assert f"<td>{REPORT_LISTED_MAX}</td>" not in text
    assert text.endswith(
        "</tbody></table><p>and 1,234 more: summary.csv lists every case with its reproduce command.</p>"
    )
    assert text.startswith('<table class="others"><thead>')
    exact = html_report._others(others.iloc[:REPORT_LISTED_MAX])
    assert exact.endswith("</tbody></table>") and exact.count("<tr><td>") == REPORT_LISTED_MAX


def test_a_group_longer_than_the_most_listed_says_how_many_more(tmp_path: Path) -> None:
    seeds = range(1, REPORT_LISTED_MAX + 4)
    out = _grid(tmp_path / "run", ("stop_on_timeout",), ("lost_response",), seeds)
    page = _page(out)
    assert f"seeds 1..{REPORT_LISTED_MAX + 3} ({REPORT_LISTED_MAX + 3} seeds)" in page
    assert f"and {REPORT_LISTED_MAX + 2} more abandoned (other seeds)" in page
    assert page.count("<tr><td>") == REPORT_LISTED_MAX
    assert "<p>and 2 more: summary.csv lists every case with its reproduce command.</p>" in page
    assert f"Timelines of the {REPORT_LISTED_MAX + 3} incorrect" in page


# --- shown and timelines_to_draw ------------------------------------------------------------------------------


def _frame(rows: list[tuple[str, str, int, str, str]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["policy", "scenario", "seed", "outcome", "path"])


def test_the_shown_groups_are_the_failing_ones_in_order_of_first_appearance_by_seed() -> None:
    frame = _frame([
        ("p", "s", 3, "incorrect", "a"), ("p", "s", 1, "correct", "b"), ("q", "s", 2, "abandoned", "c"),
        ("p", "s", 1, "incorrect", "d"), ("p", "t", 5, "unresolved", "e"), ("p", "s", 2, "incorrect", "f"),
        ("p", "t", 4, "escalated", "g"), ("p", "t", 6, "harness_error", "h"), ("p", "s", 0, "abandoned", "i"),
    ])  # fmt: skip
    groups = html_report.shown(frame)
    assert [(g.first["path"], list(g.others["path"])) for g in groups] == [
        ("d", ["f", "a"]), ("c", []), ("e", []), ("i", [])]  # fmt: skip
    assert html_report.TIMELINE_OUTCOMES == ("incorrect", "abandoned", "unresolved") or set(
        html_report.TIMELINE_OUTCOMES
    ) == {"incorrect", "abandoned", "unresolved"}


def test_equal_seeds_in_a_group_keep_the_frames_order() -> None:
    frame = _frame([("p", "s", 1, "incorrect", "a"), ("p", "s", 1, "incorrect", "b"), ("p", "s", 0, "incorrect", "c"),
                    ("p", "s", 1, "incorrect", "d")])  # fmt: skip
    (group,) = html_report.shown(frame)
    assert (group.first["path"], list(group.others["path"])) == ("c", ["a", "b", "d"])


def test_the_timelines_to_draw_are_the_shown_recovery_files_not_drawn_yet(tmp_path: Path) -> None:
    drawn_one = tmp_path / "a" / "recovery.json"
    drawn_one.parent.mkdir()
    drawn_one.with_name("timeline.png").write_bytes(b"")
    frame = _frame([
        ("p", "s", 1, "incorrect", str(drawn_one)), ("p", "t", 1, "incorrect", str(tmp_path / "b" / "recovery.json")),
        ("p", "t", 2, "incorrect", str(tmp_path / "c" / "recovery.json")),
        ("q", "s", 1, "abandoned", str(tmp_path / "cases.jsonl")), ("q", "t", 1, "correct", str(tmp_path / "d" / "recovery.json")),
    ])  # fmt: skip
    assert html_report.timelines_to_draw(frame) == [tmp_path / "b" / "recovery.json"]


def test_draw_is_given_the_missing_timelines_first_and_not_called_when_none_are(run: Path, drawn: Drawn) -> None:
    given: list[list[Path]] = []

    def draw(paths: Sequence[Path]) -> None:
        given.append(list(paths))
        for path in paths:
            path.with_name("timeline.png").write_bytes(b"by draw " + path.parent.name.encode())

    page = _page(run, draw=draw)
    assert given == [[_case(run, "retry_same_key", SCENARIOS[0], 1), _case(run, "stop_on_timeout", SCENARIOS[0], 1),
                      _case(run, "stop_on_timeout", SCENARIOS[1], 1)]]  # fmt: skip
    assert drawn.timelines == []
    assert [data for _, data in _images(page)[1:]] == [b"by draw seed-1"] * 3
    _page(run, draw=draw)
    assert len(given) == 1


def test_render_timeline_writes_beside_the_case_or_nothing_without_a_history(run: Path, drawn: Drawn) -> None:
    path = _case(run, "retry_same_key", SCENARIOS[0], 2)
    assert html_report.render_timeline(path) == path.with_name("timeline.png")
    assert path.with_name("timeline.png").read_bytes() == b"timeline:retry_same_key/connector_no_record_yet/2"
    _edit(path, timeline=[])
    path.with_name("timeline.png").unlink()
    assert html_report.render_timeline(path) is None
    assert not path.with_name("timeline.png").exists()
    data = json.loads(path.read_text())
    data.pop("timeline")
    path.write_text(json.dumps(data))
    assert html_report.render_timeline(path) is None


# --- what cannot be drawn ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("error", [ValueError("no event x"), KeyError("at_s"), TypeError("t"), AttributeError("a")])
def test_an_undrawable_timeline_is_said_in_its_place_and_told(
    run: Path, monkeypatch: pytest.MonkeyPatch, drawn: Drawn, error: Exception
) -> None:
    def timeline(report: dict[str, Any]) -> Any:
        if report["policy"] == "retry_same_key":
            raise error
        return drawn.timeline(report)

    monkeypatch.setattr(html_report, "timeline", timeline)
    told: list[str] = []
    page = _page(run, tell=told.append)
    path = _case(run, "retry_same_key", SCENARIOS[0], 1)
    why = f"{path}: {type(error).__name__}: {error}"
    section = page.split('id="case-0">', 1)[1].split('id="case-1">', 1)[0]
    assert (f'<p class="warning">Timeline not drawn: {why.replace(chr(39), "&#x27;")}. The figures above come from its '
            "recovery.json; the command above runs the case again.</p>") in section  # fmt: skip
    assert "<img" not in section
    assert 'class="others"' in section
    assert told == [f"1 timeline not drawn, the case's timeline unreadable (the report says so in its place): {why}"]
    assert len(_images(page)) == 3  # the heatmap, and the two others


def test_two_undrawable_timelines_are_told_in_one_line(run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def timeline(report: dict[str, Any]) -> Any:
        raise ValueError(f"bad {report['scenario']}")

    monkeypatch.setattr(html_report, "timeline", timeline)
    told: list[str] = []
    page = _page(run, tell=told.append)
    assert page.count("Timeline not drawn") == 3
    why = f"{_case(run, 'retry_same_key', SCENARIOS[0], 1)}: ValueError: bad {SCENARIOS[0]}"
    assert told == [f"3 timelines not drawn, the case's timeline unreadable (the report says so in its place): {why} "
                    "(and 2 more)"]  # fmt: skip
    assert _page(run) == page


def test_another_failure_of_drawing_is_not_hidden(run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def timeline(report: dict[str, Any]) -> Any:
        raise RuntimeError("drawing broke")

    monkeypatch.setattr(html_report, "timeline", timeline)
    with pytest.raises(RuntimeError, match="drawing broke"):
        html_report.write_report(run)
    assert not (run / "report.html").exists()
    assert (ValueError, KeyError, TypeError, AttributeError) == html_report.UNDRAWABLE


# --- harness errors -----------------------------------------------------------------------------------------------


def test_harness_errors_are_listed_by_cell_then_seed_and_linked_from_the_verdicts(tmp_path: Path) -> None:
    out = _grid(tmp_path / "run", ("retry_same_key",), ("lost_response", "connector_no_record_yet"), (1, 2, 3))
    _as_error(_case(out, "retry_same_key", "lost_response", 3), "over <budget>")
    _as_error(_case(out, "retry_same_key", "lost_response", 2), "")
    _as_error(_case(out, "retry_same_key", "connector_no_record_yet", 3), "died")
    page = _page(out)
    assert "<h2>Harness errors: 3 cases the harness could not judge</h2>" in page
    assert "<p>Each ran over its wall-clock budget, or its worker process died" in page
    head = page.split('<table id="errors">', 1)[1].split("</thead>", 1)[0]
    assert re.findall(r"<th>(.*?)</th>", head) == ["policy", "scenario", "seed", "error", "reproduce"]
    rows = re.findall(
        r'<tr id="(error-\d)"><td>(.*?)</td><td>(.*?)</td><td>(.*?)</td><td>(.*?)</td><td>(.*?)</td></tr>', page
    )
    reproduce = "python -m harness run --policy retry_same_key --scenario {} --seed {}"
    assert rows == [
        ("error-0", "retry_same_key", "lost_response", "2", "-", reproduce.format("lost_response", 2)),
        ("error-1", "retry_same_key", "lost_response", "3", "over &lt;budget&gt;", reproduce.format("lost_response", 3)),
        ("error-2", "retry_same_key", "connector_no_record_yet", "3", "died",
         reproduce.format("connector_no_record_yet", 3)),
    ]  # fmt: skip
    assert "more: summary.csv lists every case with its error" not in page
    verdict = _rows(page, "verdicts")[0]
    assert verdict[1] == '<span class="unsafe">unsafe</span>' and verdict[8] == "3"
    assert verdict[-1] == '<a href="#case-0">connector_no_record_yet seed 1: incorrect</a>'
    assert page.index("<h2>Harness errors") > page.index('id="case-0"')


def test_a_policys_only_failure_a_harness_error_links_to_its_row(tmp_path: Path) -> None:
    out = _grid(tmp_path / "run", ("retry_same_key",), ("lost_response",), (1, 2))
    _as_error(_case(out, "retry_same_key", "lost_response", 2), "died")
    page = _page(out)
    assert _rows(page, "verdicts")[0][-1] == '<a href="#error-0">lost_response seed 2: harness_error</a>'
    assert _rows(page, "verdicts")[0][1] == '<span class="undecided">undecided</span>'
    assert "<h2>Harness errors: 1 case the harness could not judge</h2>" in page


def test_the_timelines_heading_counts_only_the_cases_it_shows(tmp_path: Path) -> None:
    """Harness errors are linked from the verdicts, and listed apart: the timelines' heading counted them too."""
    out = _grid(tmp_path / "run", ("retry_same_key",), ("connector_no_record_yet", "lost_response"), (1, 2))
    _as_error(_case(out, "retry_same_key", "lost_response", 2), "died")
    page = _page(out)
    assert "<h2>Timelines of the 2 incorrect, abandoned or unresolved cases</h2>" in page
    assert "One per policy, scenario and outcome (1)" in page


def test_the_errors_listed_are_cut_at_the_most_listed_with_the_count_of_the_rest() -> None:
    many = REPORT_LISTED_MAX + 1_500
    errors = pd.DataFrame({"policy": "p", "scenario": "s<", "seed": range(many), "error": ["e", *[None] * (many - 1)],
                           "reproduce": "r"})  # fmt: skip
    lines = html_report._errors(errors)
    assert lines[0] == "<h2>Harness errors: 1,520 cases the harness could not judge</h2>"
    table = lines[2]
    assert table.count("<tr id=") == REPORT_LISTED_MAX
    assert '<tr id="error-0"><td>p</td><td>s&lt;</td><td>0</td><td>e</td><td>r</td></tr>' in table
    assert (
        f'<tr id="error-{REPORT_LISTED_MAX - 1}"><td>p</td><td>s&lt;</td><td>{REPORT_LISTED_MAX - 1}</td><td>-</td>'
        in table
    )
    assert table.endswith("</tbody></table><p>and 1,500 more: summary.csv lists every case with its error.</p>")
    assert len(lines) == 3
    exact = html_report._errors(errors.iloc[:1])
    assert exact[0] == "<h2>Harness errors: 1 case the harness could not judge</h2>"
    assert exact[2].endswith("</tbody></table>")


# --- small words --------------------------------------------------------------------------------------------------


def test_seeds_are_named_one_listed_or_as_a_range() -> None:
    assert html_report._seeds([7]) == "seed 7"
    assert html_report._seeds([1, 2]) == "seeds 1, 2"
    assert html_report._seeds(list(range(1, 21))) == "seeds " + ", ".join(str(s) for s in range(1, 21))
    assert html_report._seeds(list(range(3, 24))) == "seeds 3..23 (21 seeds)"
    assert html_report._seeds(list(range(5000))) == "seeds 0..4999 (5,000 seeds)"


def test_counts_are_said_in_the_singular_or_the_plural() -> None:
    assert html_report._count(1, "policy", "policies") == "1 policy"
    assert html_report._count(2, "policy", "policies") == "2 policies"
    assert html_report._count(0, "case") == "0 cases"
    assert html_report._count(1, "case") == "1 case"
    assert html_report._count(1234, "case") == "1,234 cases"


def test_a_picture_is_embedded_as_base64_with_its_name_escaped() -> None:
    assert (
        html_report._img(b"\x89PNG", 'a "b" <c>')
        == '<img alt="a &quot;b&quot; &lt;c&gt;" src="data:image/png;base64,iVBORw==">'
    )


# --- files left out, clashes, incomplete runs -------------------------------------------------------------------


def test_files_left_out_are_listed_on_the_page_and_told(run: Path) -> None:
    bad = run / "cases" / "x" / "recovery.json"
    bad.parent.mkdir()
    bad.write_text("{not json")
    told: list[str] = []
    page = _page(run, tell=told.append)
    assert len(told) == 1
    assert told[0].startswith(f"1 file left out, unreadable or of another schema (the report lists them): {bad}: ")
    assert "more" not in told[0]
    items = page.split("<p>Skipped files:</p><ul>\n", 1)[1].split("\n</ul>", 1)[0]
    assert items.startswith(f"<li>{bad}: ") and items.count("<li>") == 1
    assert page.index('id="verdicts"') < page.index("Skipped files") < page.index("<h2>Outcomes")
    other = run / "cases" / "y" / "recovery.json"
    other.parent.mkdir()
    other.write_text("[]")
    told.clear()
    page = _page(run, tell=told.append)
    assert told[0].startswith("2 files left out, unreadable or of another schema (the report lists them): ")
    assert told[0].endswith(" (and 1 more)")
    assert page.count("<li>") == 2
    assert html_report.write_report(run).exists()  # without tell, nothing is said and the page is written


def test_a_folder_with_no_case_is_refused_with_its_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with monkeypatch.context() as patched:
        patched.setattr(html_report, "load", lambda run_dir, progress=None: pd.DataFrame())
        with pytest.raises(ValueError) as caught:
            html_report.write_report(tmp_path)
    assert str(caught.value) == f"{tmp_path}: no recovery.json found; fix: give a folder written by 'harness run'"
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "recovery.json").write_text("{")
    with pytest.raises(ValueError) as caught:
        html_report.write_report(tmp_path)
    message = str(caught.value)
    assert message.startswith(f"{tmp_path}: no case could be read: {tmp_path / 'a' / 'recovery.json'}: ")
    assert message.endswith("; fix: give a folder written by this version of 'harness run'")
    assert "more unreadable" not in message
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "recovery.json").write_text("{")
    with pytest.raises(ValueError, match=r" \(and 1 more unreadable\); fix: "):
        html_report.write_report(tmp_path)
    assert not (tmp_path / "report.html").exists() and not (tmp_path / "heatmap.png").exists()


def _with_attrs(monkeypatch: pytest.MonkeyPatch, **attrs: Any) -> None:
    real = html_report.load

    def load(run_dir: Path, progress: Any = None) -> pd.DataFrame:
        frame = real(run_dir, progress=progress)
        frame.attrs.update(attrs)
        return frame

    monkeypatch.setattr(html_report, "load", load)


def test_cases_under_one_name_are_warned_of_listed_and_told(run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _with_attrs(monkeypatch, clashes=[Skipped("a<1>", "other <results>"), Skipped("b", "c")])
    told: list[str] = []
    page = _page(run, tell=told.append)
    assert told == [f"2 cases share their names with another case under {run}, both kept (the report lists them): "
                    "a<1> (and 1 more)"]  # fmt: skip
    assert ('<p class="warning"><strong>Two cases under one name:</strong> these cases have the policy, scenario, '
            "revisions and seed of another case in this folder") in page  # fmt: skip
    assert "</p><ul>\n<li>a&lt;1&gt;: other &lt;results&gt;</li>\n<li>b: c</li>\n</ul>" in page
    assert page.index("Two cases under one name") < page.index('id="verdicts"')
    _with_attrs(monkeypatch, clashes=[Skipped("a", "r")])
    told.clear()
    _page(run, tell=told.append)
    assert told == [f"1 case shares its name with another case under {run}, both kept (the report lists them): a"]


def test_a_page_without_tell_says_nothing_and_warns_all_the_same(run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _with_attrs(monkeypatch, clashes=[Skipped("a", "r")], skipped=[Skipped("s", "why")])
    page = _page(run)
    assert "Two cases under one name" in page and "<li>s: why</li>" in page


def test_an_incomplete_run_is_warned_of_with_the_command_that_completes_it(
    run: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The command names the folder by an absolute path, quoted for a shell: it was the path as loaded (relative
    to wherever the page was made), which runs from nowhere else."""
    monkeypatch.chdir(run.parent)
    _with_attrs(monkeypatch, incomplete=["f<1>", "g"])
    page = _page(run)
    assert ('<p class="warning"><strong>Incomplete:</strong> the run in <code>f&lt;1&gt;</code> was stopped before '
            "it ended, so this page shows only the cases it finished. Complete it with <code>python -m harness run "
            f"--resume &#x27;{html.escape(str(run.parent))}/f&lt;1&gt;&#x27;</code>.</p>") in page  # fmt: skip
    assert f"--resume {html.escape(str(run.parent))}/g</code>" in page
    assert page.count("<strong>Incomplete:</strong>") == 2
    assert page.index("<strong>Incomplete:</strong>") < page.index('id="verdicts"')


def test_a_run_stopped_before_its_end_is_found_incomplete(run: Path) -> None:
    (run / "run.json").unlink()
    page = _page(run)
    assert f"<code>python -m harness run --resume {run}</code>" in page


def test_no_warning_on_a_whole_run(run: Path) -> None:
    page = _page(run)
    assert 'class="warning"' not in page.split("</style>", 1)[1]
    assert "Skipped files" not in page and "Two cases" not in page


# --- where the page goes ----------------------------------------------------------------------------------------


def test_the_page_and_heatmap_go_where_asked_whole(run: Path, tmp_path: Path) -> None:
    out = tmp_path / "else" / "page.html"
    out.parent.mkdir()
    assert html_report.write_report(run, out) == out
    assert out.read_text(encoding="utf-8").endswith("</body></html>\n")
    assert (out.parent / "heatmap.png").read_bytes() == b"heatmap:12"
    assert not (run / "report.html").exists() and not (run / "heatmap.png").exists()
    assert sorted(p.name for p in out.parent.iterdir()) == ["heatmap.png", "page.html"]
    assert html_report.write_report(run) == run / "report.html"


def test_a_folder_in_the_pages_place_is_refused_before_the_heatmap_is_written(run: Path) -> None:
    (run / "report.html").mkdir()
    with pytest.raises(InputError, match="is a folder, where this writes a file"):
        html_report.write_report(run)
    assert not (run / "heatmap.png").exists()


def test_a_page_written_again_replaces_the_old_one(run: Path) -> None:
    (run / "report.html").write_text("old")
    page = _page(run)
    assert page != "old" and page.startswith("<!doctype html>")
    assert [p.name for p in run.iterdir() if p.name.endswith(".tmp")] == []


def _marked_png() -> bytes:
    """A PNG as the harness draws one (its Software text says so)."""
    import matplotlib.pyplot as plt

    from harness.present.pictures import png_bytes

    return png_bytes(plt.figure(figsize=(1, 1)))


def test_a_page_elsewhere_is_not_written_over_a_file_that_is_not_a_report_page(
    run: Path, tmp_path: Path, drawn: Drawn
) -> None:
    """``harness report RUN --out mine.html`` wrote over a user's own mine.html, and over the heatmap.png beside
    it, without a word; as ``schema --out`` and ``check --junit`` do, it now refuses, before it writes anything."""
    elsewhere = tmp_path / "mine"
    elsewhere.mkdir()
    mine = elsewhere / "mine.html"
    mine.write_text("<html>my precious page</html>")
    with pytest.raises(ValueError) as refused:
        html_report.write_report(run, mine)
    assert str(refused.value) == (
        f"{mine}: exists and is not a report page the harness wrote; fix: give a new file name, or remove it"
    )
    assert mine.read_text() == "<html>my precious page</html>" and sorted(elsewhere.iterdir()) == [mine]
    assert drawn.saved == [] and drawn.timelines == []  # nothing drawn either

    mine.unlink()
    heat = elsewhere / "heatmap.png"
    heat.write_bytes(b"precious png")
    with pytest.raises(ValueError) as refused:
        html_report.write_report(run, mine)
    assert str(refused.value) == (
        f"{heat}: exists and is not a heatmap the harness drew (the page writes one beside it); fix: write the "
        "page in another folder, or remove it"
    )
    assert heat.read_bytes() == b"precious png" and sorted(elsewhere.iterdir()) == [heat]
    heat.write_bytes(_marked_png().replace(b"Software\x00recovery harness", b"Software\x00another program."))
    with pytest.raises(ValueError, match="is not a heatmap the harness drew"):  # a PNG, by other software
        html_report.write_report(run, mine)

    heat.write_bytes(_marked_png())  # the harness's own: both written over
    mine.write_text(_page(run).replace("</body>", "<p>earlier</p></body>"))
    assert html_report.write_report(run, mine) == mine
    assert "<p>earlier</p>" not in mine.read_text() and heat.read_bytes() == b"heatmap:12"


def test_the_runs_own_page_and_heatmap_are_the_runs_to_write_whatever_they_hold(run: Path, drawn: Drawn) -> None:
    (run / "report.html").write_text("old")
    (run / "heatmap.png").write_bytes(b"not drawn here")
    assert html_report.write_report(run) == run / "report.html"
    assert (run / "heatmap.png").read_bytes() == b"heatmap:12"
    other = run / "second.html"  # another page in the run's folder: the heatmap beside it is the run's
    other.write_text("<html>someone's</html>")
    with pytest.raises(ValueError, match=r"second\.html: exists and is not a report page"):
        html_report.write_report(run, other)
    other.unlink()
    (run / "heatmap.png").write_bytes(b"not drawn here")
    assert html_report.write_report(run, other) == other and (run / "heatmap.png").read_bytes() == b"heatmap:12"


def test_a_folder_of_the_users_keeps_its_own_page_and_heatmap(run: Path, tmp_path: Path, drawn: Drawn) -> None:
    """A Polyaxon user's review: ``harness report`` of a folder of theirs holding recovery.json files (no run
    folder) wrote over their own report.html and heatmap.png, exit 0. Only a run folder's own are the run's to
    write; elsewhere both are refused as anywhere else, and a page and a heatmap the harness made are written over."""
    loose = tmp_path / "loose"
    shutil.copytree(run / "cases", loose / "cases")
    (loose / "report.html").write_text("<html>my own notes</html>")
    with pytest.raises(ValueError, match=r"report\.html: exists and is not a report page the harness wrote"):
        html_report.write_report(loose)
    assert (loose / "report.html").read_text() == "<html>my own notes</html>"
    (loose / "report.html").unlink()
    (loose / "heatmap.png").write_bytes(b"my own picture")
    with pytest.raises(ValueError, match="is not a heatmap the harness drew"):
        html_report.write_report(loose)
    assert (loose / "heatmap.png").read_bytes() == b"my own picture" and not (loose / "report.html").exists()
    (loose / "heatmap.png").write_bytes(_marked_png())
    assert html_report.write_report(loose) == loose / "report.html"
    (loose / "heatmap.png").write_bytes(_marked_png())  # (the fixture's stand-in heatmap is not marked)
    assert html_report.write_report(loose) == loose / "report.html"  # its own page, written again


def test_reading_the_cases_reports_its_progress(run: Path) -> None:
    seen: list[Any] = []
    _page(run, progress=seen.append)
    assert seen and seen[-1].cases == 12


# --- the sections' exact text -------------------------------------------------------------------------------------


def test_the_verdict_section_is_written_exactly(run: Path) -> None:
    page = _page(run)
    start = page.index("<h2>Verdict per policy</h2>")
    section = page[start : page.index("</tbody></table>", start) + len("</tbody></table>")]
    link = '<a href="#case-{}">connector_no_record_yet seed 1: {}</a>'
    assert section == "\n".join([
        "<h2>Verdict per policy</h2>",
        "<p><strong>safe</strong>: every case correct, or its unresolved action escalated to its owner in time; "
        "<strong>unsafe</strong>: a safety property violated, or an action abandoned; <strong>undecided</strong>: "
        "no violation seen, but the evidence could not decide some case.</p>",
        '<table id="verdicts"><thead><tr><th>policy</th><th>verdict</th><th>violated properties</th><th>correct</th>'
        "<th>escalated</th><th>abandoned</th><th>incorrect</th><th>unresolved</th><th>harness errors</th>"
        "<th>cases</th><th>first failure</th></tr></thead><tbody>",
        '<tr class="policy"><td>retry_same_key</td><td><span class="unsafe">unsafe</span></td>'
        "<td>duplicate_effects, abandoned_actions</td><td>4</td><td>0</td><td>0</td><td>2</td><td>0</td><td>0</td>"
        f"<td>6</td><td>{link.format(0, 'incorrect')}</td></tr>",
        '<tr class="policy"><td>stop_on_timeout</td><td><span class="unsafe">unsafe</span></td>'
        "<td>abandoned_actions</td><td>0</td><td>0</td><td>6</td><td>0</td><td>0</td><td>0</td>"
        f"<td>6</td><td>{link.format(1, 'abandoned')}</td></tr>",
        "</tbody></table>",
    ])  # fmt: skip


def test_the_errors_section_is_written_exactly() -> None:
    errors = pd.DataFrame({"policy": ["p", "q"], "scenario": ["s", "t"], "seed": [1, 2], "error": ["e", ""],
                           "reproduce": ["r1", "r2"]})  # fmt: skip
    assert html_report._errors(errors) == [
        "<h2>Harness errors: 2 cases the harness could not judge</h2>",
        "<p>Each ran over its wall-clock budget, or its worker process died (a policy that never returns or ends "
        "its process, or a harness failure); the command runs it again under the same budget.</p>",
        '<table id="errors"><thead><tr><th>policy</th><th>scenario</th><th>seed</th><th>error</th>'
        '<th>reproduce</th></tr></thead><tbody><tr id="error-0"><td>p</td><td>s</td><td>1</td><td>e</td><td>r1</td>'
        '</tr><tr id="error-1"><td>q</td><td>t</td><td>2</td><td>-</td><td>r2</td></tr></tbody></table>',
    ]


def test_the_others_table_is_written_exactly() -> None:
    others = pd.DataFrame({"seed": [2, 3], "anomalies": [1, 0], "unknown": ["u", ""], "reproduce": ["r2", "r3"]})
    assert html_report._others(others) == (
        '<table class="others"><thead><tr><th>seed</th><th>anomalies</th><th>unknown</th><th>reproduce</th></tr>'
        "</thead><tbody><tr><td>2</td><td>1</td><td>u</td><td>r2</td></tr><tr><td>3</td><td>0</td><td>-</td>"
        "<td>r3</td></tr></tbody></table>"
    )


def test_harness_errors_of_two_policies_keep_the_frames_cells_before_their_seeds(tmp_path: Path) -> None:
    out = _grid(tmp_path / "run", POLICIES, ("lost_response", "connector_no_record_yet"), (1, 2, 3))
    _as_error(_case(out, "retry_same_key", "lost_response", 3), "a")
    _as_error(_case(out, "retry_same_key", "connector_no_record_yet", 1), "b")
    _as_error(_case(out, "stop_on_timeout", "lost_response", 2), "c")
    page = _page(out)
    rows = re.findall(r'<tr id="error-(\d)"><td>(\w+)</td><td>(\w+)</td><td>(\d)</td><td>(\w)</td>', page)
    assert rows == [("0", "retry_same_key", "lost_response", "3", "a"),
                    ("1", "retry_same_key", "connector_no_record_yet", "1", "b"),
                    ("2", "stop_on_timeout", "lost_response", "2", "c")]  # fmt: skip


def test_the_unreadable_files_are_named_with_their_reasons_exactly(tmp_path: Path) -> None:
    from harness.present.analysis import load

    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "recovery.json").write_text("{")
    (first,) = load(tmp_path).attrs["skipped"]
    with pytest.raises(ValueError) as caught:
        html_report.write_report(tmp_path)
    assert str(caught.value) == (f"{tmp_path}: no case could be read: {first.path}: {first.reason}; fix: give a folder "
                                 "written by this version of 'harness run'")  # fmt: skip
    run = _grid(tmp_path / "run", ("retry_same_key",), ("lost_response",), (1,))
    bad = run / "cases" / "x" / "recovery.json"
    bad.parent.mkdir()
    bad.write_text("{")
    (skipped,) = load(run).attrs["skipped"]
    told: list[str] = []
    page = _page(run, tell=told.append)
    assert told == [
        f"1 file left out, unreadable or of another schema (the report lists them): {bad}: {skipped.reason}"
    ]
    assert f"<p>Skipped files:</p><ul>\n<li>{bad}: {html.escape(skipped.reason)}</li>\n</ul>" in page


def test_many_cases_of_one_seed_keep_the_frames_order_in_their_group() -> None:
    frame = _frame([("p", "s", i % 3, "incorrect", f"c{i}") for i in range(200)])
    (group,) = html_report.shown(frame)
    expected = [f"c{i}" for seed in range(3) for i in range(200) if i % 3 == seed]
    assert [group.first["path"], *group.others["path"]] == expected


def test_two_undrawable_timelines_say_one_more(run: Path, monkeypatch: pytest.MonkeyPatch, drawn: Drawn) -> None:
    def timeline(report: dict[str, Any]) -> Any:
        if report["policy"] == "stop_on_timeout":
            raise ValueError("bad")
        return drawn.timeline(report)

    monkeypatch.setattr(html_report, "timeline", timeline)
    told: list[str] = []
    _page(run, tell=told.append)
    why = f"{_case(run, 'stop_on_timeout', SCENARIOS[0], 1)}: ValueError: bad"
    assert told == [f"2 timelines not drawn, the case's timeline unreadable (the report says so in its place): {why} "
                    "(and 1 more)"]  # fmt: skip


def test_the_pages_fixed_lines_are_whole_lines(run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _with_attrs(monkeypatch, clashes=[Skipped("a", "r")])
    lines = _page(run).split("\n")
    for line in [
        "<h1>Recovery harness report</h1>",
        "<h2>Outcomes</h2>",
        "<h2>Correct rate over seeds</h2>",
        "<p>Correct cases over the seeds. From 20 cases in a cell: the rate, its Wilson 95% interval and pass^3 (the "
        "chance that 3 runs all end correct); below that, the count, and <em>same at every seed</em> when the seeds "
        "changed nothing (more seeds would say no more). Then how many cases the evidence could not decide: no "
        "evidence is not the same as no problem.</p>",
        "<h2>Metrics</h2>",
        "<p>Mean over seeds (range when they differ); <em>unknown</em> where the evidence could not establish it.</p>",
        '<p class="warning"><strong>Two cases under one name:</strong> these cases have the policy, scenario, '
        "revisions and seed of another case in this folder, and other results (two runs of one cell, say): both are "
        "counted. Report each run's folder on its own to tell them apart.</p><ul>",
        "<li>a: r</li>",
        "</ul>",
    ]:
        assert line in lines, line


def test_a_frame_read_without_notes_is_a_page_all_the_same(run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = html_report.load

    def load(run_dir: Path, progress: Any = None) -> pd.DataFrame:
        frame = real(run_dir, progress=progress)
        frame.attrs.clear()
        return frame

    monkeypatch.setattr(html_report, "load", load)
    page = _page(run, tell=pytest.fail)
    assert 'class="warning"' not in page.split("</style>", 1)[1]


# --- the timelines drawn before the page: harness/run/pictures.py ------------------------------------------------


class _Rendered:
    """Stands in for ``render_timeline``: notes each path, and raises for the paths given an error."""

    def __init__(self, errors: dict[str, BaseException] | None = None) -> None:
        self.paths: list[str] = []
        self.errors = errors or {}

    def __call__(self, path: Path) -> Path | None:
        self.paths.append(path.parent.name)
        if path.parent.name in self.errors:
            raise self.errors[path.parent.name]
        return None


def _recoveries(root: Path, names: Sequence[str]) -> list[Path]:
    for name in names:
        (root / name).mkdir(parents=True)
    return [root / name / "recovery.json" for name in names]


def test_a_drawing_job_draws_each_picture_not_there_yet_and_says_which(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.run.pictures import _Drawing

    rendered = _Rendered()
    monkeypatch.setattr(html_report, "render_timeline", rendered)
    paths = _recoveries(tmp_path, ["a", "b", "c"])
    paths[1].with_name("timeline.png").write_bytes(b"")
    said: list[int] = []
    assert _Drawing(tuple(paths)).execute(said.append) == 3
    assert rendered.paths == ["a", "c"]
    assert said == [0, -1, 2, -1]


@pytest.mark.parametrize(
    "error", [OSError("disk"), ValueError("v"), KeyError("k"), TypeError("t"), AttributeError("a")]
)
def test_a_picture_that_cannot_be_drawn_is_left_to_the_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, error: Exception
) -> None:
    from harness.run.pictures import _Drawing

    rendered = _Rendered({"a": error})
    monkeypatch.setattr(html_report, "render_timeline", rendered)
    said: list[int] = []
    assert _Drawing(tuple(_recoveries(tmp_path, ["a", "b"]))).execute(said.append) == 2
    assert rendered.paths == ["a", "b"] and said == [0, -1, 1, -1]


def test_another_failure_of_a_drawing_job_is_not_hidden(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.run.pictures import _Drawing

    monkeypatch.setattr(html_report, "render_timeline", _Rendered({"a": RuntimeError("r")}))
    with pytest.raises(RuntimeError):
        _Drawing(tuple(_recoveries(tmp_path, ["a"]))).execute(lambda _: None)


def test_a_drawing_job_without_one_picture_keeps_the_others_in_order() -> None:
    from harness.run.pictures import _Drawing

    job = _Drawing((Path("a"), Path("b"), Path("c")))
    assert job.without(0, "r").paths == (Path("b"), Path("c"))
    assert job.without(1, "r").paths == (Path("a"), Path("c"))
    assert job.without(2, "r").paths == (Path("a"), Path("b"))


class _Pool:
    """Stands in for ``supervise``: notes the jobs and how they were to run, and runs them here."""

    def __init__(self) -> None:
        self.calls: list[tuple[list[tuple[str, ...]], int, float | None]] = []

    def __call__(self, jobs: Sequence[Any], concurrency: int, budget: float | None, finished: Any) -> None:
        self.calls.append(([tuple(p.parent.name for p in job.paths) for job in jobs], concurrency, budget))
        for k, job in enumerate(jobs):
            assert finished(k, job.execute(lambda _: None)) is None


@pytest.mark.parametrize(("count", "concurrency"), [(3, 1), (15, 4), (40, 1), (40, 0)])
def test_few_pictures_or_one_process_are_drawn_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, count: int, concurrency: int
) -> None:
    from harness.run.pictures import PARALLEL_FROM, draw_timelines

    assert PARALLEL_FROM == 16
    rendered, workers = _Rendered(), _Pool()
    monkeypatch.setattr(html_report, "render_timeline", rendered)
    monkeypatch.setattr(pool, "supervise", workers)
    names = [f"c{i}" for i in range(count)]
    draw_timelines(_recoveries(tmp_path, names), concurrency)
    assert rendered.paths == names and workers.calls == []


@pytest.mark.parametrize(("count", "concurrency", "sizes"), [(16, 2, [2] * 8), (100, 3, [9] * 11 + [1]),
                                                               (16, 8, [1] * 16), (17, 2, [3] * 5 + [2])])  # fmt: skip
def test_many_pictures_are_spread_over_the_processes_several_jobs_each(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, count: int, concurrency: int, sizes: list[int]
) -> None:
    from harness.run.pictures import draw_timelines

    rendered, workers = _Rendered(), _Pool()
    monkeypatch.setattr(html_report, "render_timeline", rendered)
    monkeypatch.setattr(pool, "supervise", workers)
    names = [f"c{i}" for i in range(count)]
    draw_timelines(_recoveries(tmp_path, names), concurrency)
    ((jobs, used, budget),) = workers.calls
    assert [len(j) for j in jobs] == sizes
    assert [n for j in jobs for n in j] == names == rendered.paths
    assert (used, budget) == (concurrency, None)


def test_a_page_is_known_by_its_title_in_its_first_1024_bytes(run: Path, tmp_path: Path, drawn: Drawn) -> None:
    title = b"<title>Recovery harness report</title>"
    page = tmp_path / "page.html"
    page.write_bytes(b"x" * (1024 - len(title)) + title)  # ends at the 1024th byte: a report page
    assert html_report.write_report(run, page) == page
    page.write_bytes(b"x" * (1025 - len(title)) + title)  # one byte further: not
    with pytest.raises(ValueError, match=r"page\.html: exists and is not a report page the harness wrote"):
        html_report.write_report(run, page)
