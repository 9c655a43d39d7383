"""The pictures (harness.present.pictures), checked in process by what the figures hold.

Written against the mutants mutmut 3.8.1 made of pictures.py (tests/MUTANTS.md, fortieth pass). The inputs are
real: a small grid runs in each test's own folder (``Supervised`` from test_grid_mutants stands in for
``supervise``, as in test_report_page_mutants) and is read back by the loader, and timelines are of cases run here
with ``run_case``. A test reads a figure's artists (its texts, patches, lines, ticks, limits, size and margins), not
its pixels, except where what is asked is how the pixels are made (``png_bytes``) or that nothing is cut off.
"""

from __future__ import annotations

import io
import json
import os
import struct
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import matplotlib
import matplotlib.pyplot as plt
import pandas as pd
import pytest
from matplotlib.colors import to_hex, to_rgba
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Rectangle
from matplotlib.text import Annotation, Text

import harness.present.pictures as pictures
import harness.run.pool as pool
from harness.errors import InputError
from harness.model.events import (
    ClaimDecided,
    FaultInjected,
    PolicyFailed,
    WaitCapped,
    WorkerReported,
)
from harness.model.report import events
from harness.present.analysis import load
from harness.present.pictures import (
    COLOURS,
    LANES,
    PNG_SOFTWARE,
    drawn_here,
    heatmap,
    png_bytes,
    refuse_folder,
    save_png,
    timeline,
)
from harness.run import load_grid, plan_cells, run_case, run_grid
from harness.run.case import failed_report
from harness.run.files import recovery_json
from harness.scenario import BOUNDARIES
from tests.test_grid_mutants import NONE, Supervised

#: Inches between two lanes and per character of a 7-point label, as the picture is laid out.
LANE_IN = 11 * 0.98 / 8.1
CHAR_IN = 0.058
X = {lane: i for i, lane in enumerate(LANES)}


@pytest.fixture(autouse=True)
def closed() -> Iterator[None]:
    yield
    plt.close("all")


def _grid(out: Path, policies: Sequence[str], scenarios: Sequence[str], seeds: Sequence[int] = (1, 2)) -> Path:
    pool_supervise = pool.supervise
    pool.supervise = Supervised()
    try:
        run_grid(plan_cells(list(policies), list(scenarios), list(seeds), None, 1), replace(NONE, out=out))
    finally:
        pool.supervise = pool_supervise
    return out


def _case_path(run: Path, policy: str, scenario: str, seed: int) -> Path:
    return run / "cases" / policy / scenario / f"seed-{seed}" / "recovery.json"


def report(policy: str, scenario: str, seed: int = 1) -> dict[str, Any]:
    """The recovery.json of one case, run here."""
    (case,) = load_grid([policy], [scenario], [seed]).cases
    return json.loads(recovery_json(run_case(case)[0]))  # type: ignore[no-any-return]


def cells(fig: Figure) -> dict[tuple[float, float], tuple[str, str]]:
    """Each cell of a heatmap by its centre: its text and its colour."""
    (ax,) = fig.axes
    colours = {(p.get_x() + 0.5, p.get_y() + 0.5): to_hex(p.get_facecolor()) for p in ax.patches}
    texts = {t.get_position(): t.get_text() for t in ax.texts}
    assert set(colours) == set(texts)
    return {key: (texts[key], colours[key]) for key in sorted(texts, key=lambda k: (k[1], k[0]))}


def ticks(axis: Any) -> list[tuple[float, str]]:
    return [(float(t.get_loc()), t.label1.get_text()) for t in axis.get_major_ticks()]


# --- the heatmap ------------------------------------------------------------------------------------------------


@pytest.fixture
def three_by_two(tmp_path: Path) -> Path:
    """reconcile_and_reauthorize: correct, escalated; retry_same_key: incorrect, abandoned with duplicates unknown;
    stop_on_timeout: abandoned twice. Seeds 1 and 2 agree in every cell."""
    return _grid(
        tmp_path / "run",
        ("retry_same_key", "reconcile_and_reauthorize", "stop_on_timeout"),
        ("changed_task", "uncertain_lookup"),
    )


def test_a_heatmap_has_a_row_per_policy_when_they_are_as_many_as_the_scenarios(three_by_two: Path) -> None:
    """Rule: with no more scenarios than policies, a row per policy (in the frame's order) and a column per
    scenario; each cell coloured by its outcome and saying it with its count, duplicates unknown said below."""
    fig = heatmap(load(three_by_two))
    (ax,) = fig.axes
    assert cells(fig) == {
        (0.5, 0.5): ("correct 2", COLOURS["correct"]),
        (1.5, 0.5): ("escalated 2", COLOURS["escalated"]),
        (0.5, 1.5): ("incorrect 2", COLOURS["incorrect"]),
        (1.5, 1.5): ("abandoned 2\nunknown x2", COLOURS["abandoned"]),
        (0.5, 2.5): ("abandoned 2", COLOURS["abandoned"]),
        (1.5, 2.5): ("abandoned 2", COLOURS["abandoned"]),
    }
    for patch in ax.patches:
        assert isinstance(patch, Rectangle)
        assert (patch.get_width(), patch.get_height()) == (1, 1)
        assert patch.get_edgecolor() == to_rgba("white") and patch.get_linewidth() == 2
    for text in ax.texts:
        assert (text.get_ha(), text.get_va(), text.get_fontsize()) == ("center", "center", 8)
    assert ticks(ax.xaxis) == [(0.5, "changed_task"), (1.5, "uncertain_lookup")]
    assert ticks(ax.yaxis) == [(0.5, "reconcile_and_reauthorize"), (1.5, "retry_same_key"), (2.5, "stop_on_timeout")]
    # The scenarios' names, turned so that long ones do not run into each other, end under their column.
    for tick in ax.xaxis.get_major_ticks():
        assert (tick.label1.get_rotation(), tick.label1.get_ha(), tick.label1.get_fontsize()) == (30, "right", 8)
        assert not tick.label2.get_visible()
    for tick in ax.yaxis.get_major_ticks():
        assert tick.label1.get_fontsize() == 8
    assert (ax.get_xlim(), ax.get_ylim()) == ((0, 2), (3, 0))  # the first row on top
    assert (fig.get_size_inches().tolist(), fig.dpi) == ([1.9 * 2 + 2.6, 0.9 * 3 + 1.6], 100)
    assert (ax.title.get_text(), ax.title.get_fontsize()) == ("Outcome per policy x scenario", 10)


def test_a_heatmap_has_no_tick_marks_and_no_frame(three_by_two: Path) -> None:
    (ax,) = heatmap(load(three_by_two)).axes
    for tick in [*ax.xaxis.get_major_ticks(), *ax.yaxis.get_major_ticks()]:
        assert tick.tick1line.get_markersize() == 0 and tick.tick2line.get_markersize() == 0
    assert [s.get_visible() for s in ax.spines.values()] == [False] * 4


def test_a_heatmap_keeps_every_name_inside_the_picture(three_by_two: Path) -> None:
    """Rule: the layout is fitted to the names (policies' names are long): nothing drawn falls off an edge."""
    fig = heatmap(load(three_by_two), title="a title of my own")
    (ax,) = fig.axes
    assert ax.title.get_text() == "a title of my own"
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    whole = fig.bbox
    labels = [t.label1 for t in [*ax.xaxis.get_major_ticks(), *ax.yaxis.get_major_ticks()]]
    for text in [*labels, ax.title]:
        box = text.get_window_extent(renderer)
        assert whole.x0 <= box.x0 and box.x1 <= whole.x1 and whole.y0 <= box.y0 and box.y1 <= whole.y1, text


def test_a_heatmap_puts_the_scenarios_down_the_side_when_they_are_more(three_by_two: Path) -> None:
    """Rule: more scenarios than policies: a row per scenario, a column per policy named above and below,
    unturned; rows 0.7 inch high. The order is the frame's, not sorted."""
    frame = load(three_by_two)
    one = frame[frame["policy"] == "retry_same_key"].iloc[::-1]  # uncertain_lookup first
    fig = heatmap(one)
    (ax,) = fig.axes
    assert cells(fig) == {
        (0.5, 0.5): ("abandoned 2\nunknown x2", COLOURS["abandoned"]),
        (0.5, 1.5): ("incorrect 2", COLOURS["incorrect"]),
    }
    assert ticks(ax.yaxis) == [(0.5, "uncertain_lookup"), (1.5, "changed_task")]
    assert ticks(ax.xaxis) == [(0.5, "retry_same_key")]
    (tick,) = ax.xaxis.get_major_ticks()
    assert (tick.label1.get_rotation(), tick.label1.get_ha(), tick.label1.get_fontsize()) == (0, "center", 8)
    assert tick.label2.get_visible() and tick.label2.get_text() == "retry_same_key"
    assert tick.tick1line.get_markersize() == 0
    assert (ax.get_xlim(), ax.get_ylim()) == ((0, 1), (2, 0))
    assert fig.get_size_inches().tolist() == [1.9 * 1 + 2.6, 0.7 * 2 + 1.6]


def test_a_heatmap_reads_a_cell_by_its_policy_and_scenario_both_ways_round(three_by_two: Path) -> None:
    """Two policies by three scenarios (down) and three by two (across), with each cell different from its mirror."""
    frame = load(three_by_two)
    two = frame[frame["policy"] != "stop_on_timeout"]
    extra = two[two["scenario"] == "changed_task"].assign(scenario="changed_task_again")
    extra = extra.assign(outcome=extra["outcome"].map({"correct": "escalated", "incorrect": "unresolved"}))
    down = pd.concat([two, extra], ignore_index=True)  # 2 policies, 3 scenarios
    fig = heatmap(down)
    (ax,) = fig.axes
    assert ticks(ax.xaxis) == [(0.5, "reconcile_and_reauthorize"), (1.5, "retry_same_key")]
    assert ticks(ax.yaxis) == [(0.5, "changed_task"), (1.5, "uncertain_lookup"), (2.5, "changed_task_again")]
    assert [text for text, _ in cells(fig).values()] == [
        "correct 2", "incorrect 2",
        "escalated 2", "abandoned 2\nunknown x2",
        "escalated 2", "unresolved 2",
    ]  # fmt: skip
    assert cells(fig)[(1.5, 2.5)] == ("unresolved 2", COLOURS["unresolved"])
    assert fig.get_size_inches().tolist() == [1.9 * 2 + 2.6, 0.7 * 3 + 1.6]


def test_a_cell_whose_seeds_disagree_is_violet_and_counts_each_outcome_in_the_order_met(tmp_path: Path) -> None:
    """Rule: outcomes listed as first met among the cell's cases (here not by name), violet; a harness error leaves
    every property unknown; a cell with no case is white and says '-'; an outcome this version does not know
    is drawn white, not guessed."""
    run = _grid(tmp_path / "run", ("retry_same_key", "stop_on_timeout"), ("changed_task", "lost_response"), (1, 2, 3))
    (case,) = load_grid(["retry_same_key"], ["changed_task"], [2]).cases
    _case_path(run, "retry_same_key", "changed_task", 2).write_text(
        failed_report(case, "its worker died").model_dump_json(), encoding="utf-8"
    )
    for seed in (1, 2, 3):
        _case_path(run, "stop_on_timeout", "lost_response", seed).unlink()
    frame = load(run)
    assert list(frame["seed"][frame["policy"] == "retry_same_key"][:3]) == [1, 2, 3]
    fig = heatmap(frame)
    assert cells(fig) == {
        (0.5, 0.5): ("incorrect 2\nharness_error 1\nunknown x1", COLOURS["mixed"]),
        (1.5, 0.5): ("correct 3", COLOURS["correct"]),
        (0.5, 1.5): ("abandoned 3", COLOURS["abandoned"]),
        (1.5, 1.5): ("-", "#ffffff"),
    }
    only_errors = frame[frame["outcome"] == "harness_error"]
    assert cells(heatmap(only_errors)) == {(0.5, 0.5): ("harness_error 1\nunknown x1", COLOURS["harness_error"])}
    unknown = frame[frame["scenario"] == "lost_response"].assign(outcome="vanished")
    assert cells(heatmap(unknown)) == {(0.5, 0.5): ("vanished 3", "#ffffff")}


# --- the timeline -----------------------------------------------------------------------------------------------


def _texts(fig: Figure) -> list[Text]:
    (ax,) = fig.axes
    return list(ax.texts)


def _at(fig: Figure, x: float, y: float) -> Text:
    (found,) = [t for t in _texts(fig) if t.get_position() == pytest.approx((x, y)) and not isinstance(t, Annotation)]
    return found


def _lines(fig: Figure) -> list[Line2D]:
    (ax,) = fig.axes
    return list(ax.lines)


def _expected_right(rep: dict[str, Any], title: str, drawn: Sequence[int] | None = None) -> float:
    """The right end of the picture: the last lane and a fifth, or further where a label (7-point, beside its
    lane) or the title (10-point, from the left edge at -1.3) ends further; and a tenth of a lane more."""
    entries = [e for e in events(rep["timeline"]) if drawn is None or e.index in drawn]
    ends = [X[pictures._lane(e)] + 0.08 + len(pictures._label(e)) * CHAR_IN / LANE_IN for e in entries]
    return max([len(LANES) - 0.2, *ends, -1.3 + len(title) * CHAR_IN * 10 / 7 / LANE_IN]) + 0.1


def test_a_timeline_draws_a_lane_per_actor_and_a_row_per_entry() -> None:
    """Rule: seven lanes, named above in bold, drawn from the first row to the last; each entry's time on the left,
    to the millisecond; the picture 0.26 inch a row, and as wide as its lanes and its longest label need."""
    rep = report("retry_same_key", "connector_no_record_yet")
    assert len(rep["timeline"]) == 41
    fig = timeline(rep)
    (ax,) = fig.axes
    lanes = [line for line in _lines(fig) if line.get_marker() in ("None", None, "")]
    assert [(line.get_xdata().tolist(), line.get_ydata().tolist()) for line in lanes] == [
        ([i, i], [-0.5, 40.5]) for i in range(7)
    ]
    for line in lanes:
        assert (to_hex(line.get_color()), line.get_linewidth(), line.get_zorder()) == ("#cfd8dc", 1, 0)
    for i, lane in enumerate(LANES):
        name = _at(fig, i, -0.8)
        assert (name.get_text(), name.get_ha(), name.get_va()) == (lane, "center", "bottom")
        assert (name.get_fontsize(), name.get_fontweight()) == (9, "bold")
    times = [t for t in _texts(fig) if t.get_position()[0] == -0.65]
    assert [(t.get_position()[1], t.get_text()) for t in times] == [
        (row, f"{entry['at_s']:.3f}s") for row, entry in enumerate(rep["timeline"])
    ]
    assert times[18].get_text() == "20.058s"
    for t in times:
        assert (t.get_ha(), t.get_va(), t.get_fontsize(), to_hex(t.get_color())) == ("right", "center", 7, "#546e7a")
    right = _expected_right(rep, ax.get_title(loc="left"))
    assert right == pytest.approx(6 + 0.08 + len("applied model=m7 receipt_id=r1") * CHAR_IN / LANE_IN + 0.1)
    assert ax.get_xlim() == pytest.approx((-1.3, right)) and ax.get_ylim() == pytest.approx((40.7, -1.6))
    assert fig.get_size_inches().tolist() == pytest.approx([(right + 1.3) * LANE_IN / 0.98, 0.26 * 41 + 1.6])
    assert fig.dpi == 80 and not ax.axison
    height = 0.26 * 41 + 1.6
    pars = fig.subplotpars
    assert (pars.left, pars.right, pars.bottom) == (0.01, 0.99, 0.01)
    assert pars.top == pytest.approx(1 - 0.45 / height)


def test_a_timeline_draws_requests_and_replies_as_arrows_between_worker_and_destination() -> None:
    """Rule: a request is an arrow from the worker's lane to the destination's, a reply one back, blue; a reply
    that could not be delivered grey; each labelled above its middle."""
    rep = report("retry_same_key", "connector_no_record_yet")
    fig = timeline(rep)
    arrows = [t for t in _texts(fig) if isinstance(t, Annotation)]
    worker, destination = X["worker"], X["destination"]
    expected = {
        6: ("dispatch #1 a73-x1", True, "#1e88e5"),
        12: ("dispatch #2 a73-x2", True, "#1e88e5"),
        17: ("dispatch #3 a73-x3", True, "#1e88e5"),
        23: ("reply dispatch #3: running", False, "#1e88e5"),
        26: ("dispatch #4 a73-x4", True, "#1e88e5"),
        28: ("reply dispatch #4: running", False, "#1e88e5"),
        40: ("reply dispatch #2: applied", False, "#90a4ae"),
    }
    assert [a.xy[1] for a in arrows] == list(expected)
    for arrow, (row, (label, sent, colour)) in zip(arrows, expected.items(), strict=True):
        start, end = (worker, destination) if sent else (destination, worker)
        assert (arrow.get_text(), arrow.xy, arrow.xyann) == ("", (end, row), (start, row))
        patch = arrow.arrow_patch
        assert patch is not None
        assert (to_hex(patch.get_edgecolor()), patch.get_linewidth()) == (colour, 1.2)
        assert type(patch.get_arrowstyle()).__name__ == "CurveB"  # "->"
        text = _at(fig, (start + end) / 2, row - 0.12)
        assert (text.get_text(), text.get_ha(), text.get_va()) == (label, "center", "bottom")
        assert (text.get_fontsize(), to_hex(text.get_color()), text.get_parse_math()) == (7, colour, False)


def test_a_timeline_marks_faults_in_red_and_other_entries_on_their_actors_lane() -> None:
    rep = report("retry_same_key", "connector_no_record_yet")
    fig = timeline(rep)
    marks = [line for line in _lines(fig) if line.get_marker() not in ("None", None, "")]
    arrows = {6, 12, 17, 23, 26, 28, 40}
    faults = {7: "transport", 13: "transport", 18: "destination", 32: "destination"}
    assert [line.get_ydata().tolist() for line in marks] == [[row] for row in range(41) if row not in arrows]
    for entry in rep["timeline"]:
        row = entry["index"]
        if row in arrows:
            continue
        (mark,) = [line for line in marks if line.get_ydata().tolist() == [row]]
        text = _at(fig, mark.get_xdata()[0] + 0.08, row)
        assert (text.get_va(), text.get_ha(), text.get_fontsize(), text.get_parse_math()) == (
            "center", "left", 7, False)  # fmt: skip
        if row in faults:
            assert mark.get_xdata().tolist() == [X[faults[row]]]
            assert (mark.get_marker(), mark.get_markersize(), mark.get_zorder()) == ("X", 10, 3)
            assert to_hex(mark.get_color()) == "#d50000" and to_hex(text.get_color()) == "#d50000"
            assert text.get_fontweight() == "bold" and text.get_text().startswith("FAULT ")
        else:
            assert mark.get_xdata().tolist() == [X[entry["actor"]]]
            assert (mark.get_marker(), mark.get_markersize(), mark.get_zorder()) == ("o", 4, 3)
            assert to_hex(mark.get_color()) == "#37474f" and to_hex(text.get_color()) == "#000000"
            assert text.get_fontweight() == "normal"
    assert _at(fig, X["destination"] + 0.08, 18).get_text() == "FAULT started_not_durable (#1)"
    assert _at(fig, X["connector"] + 0.08, 33).get_text() == "crashed "
    assert _at(fig, X["controller"] + 0.08, 4).get_text() == "claim revision=17 ok=True"


def test_a_timeline_highlights_each_witness_row() -> None:
    """Rule: a row is highlighted in yellow, behind everything and across every lane, once per entry that an
    anomaly names (entries named twice once); no other row is."""
    rep = report("retry_same_key", "connector_no_record_yet")
    assert [a["witnesses"] for a in rep["anomalies"]] == [[31, 38], [3], [3]]
    (ax,) = timeline(rep).axes
    assert [(p.get_xy(), p.get_width(), p.get_height()) for p in ax.patches] == [
        ((-0.6, row - 0.45), 7.2, 0.9) for row in (3, 31, 38)
    ]
    for patch in ax.patches:
        assert to_hex(patch.get_facecolor()) == "#fff59d" and patch.get_edgecolor() == (0, 0, 0, 0)
        assert patch.get_zorder() == 0
    del rep["anomalies"]  # a report of another shape: nothing highlighted, still drawn
    (ax,) = timeline(rep).axes
    assert list(ax.patches) == []


def test_a_timeline_title_names_the_case_on_the_left() -> None:
    rep = report("retry_same_key", "connector_no_record_yet")
    (ax,) = timeline(rep).axes
    assert ax.get_title(loc="left") == ("retry_same_key x connector_no_record_yet seed 1: incorrect (verdict false)")
    assert ax.get_title(loc="center") == "" and ax.get_title(loc="right") == ""
    assert ax._left_title.get_fontsize() == 10  # type: ignore[attr-defined]


def test_a_long_timeline_draws_its_first_entries_and_every_later_witness_and_fault(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Rule: the first TIMELINE_DRAWN_MAX entries, then only witnesses and faults, at most twice as many in all;
    the title says how many were left out. The limit is made 5 here, for a case of 41 entries."""
    monkeypatch.setattr(pictures, "TIMELINE_DRAWN_MAX", 5)
    rep = report("retry_same_key", "connector_no_record_yet")
    fig = timeline(rep)
    (ax,) = fig.axes
    drawn = [0, 1, 2, 3, 4, 7, 13, 18, 31, 32]  # 38, a witness, is the eleventh: over 2 x 5
    times = [t.get_text() for t in _texts(fig) if t.get_position()[0] == -0.65]
    assert times == [f"{rep['timeline'][i]['at_s']:.3f}s" for i in drawn]
    assert [p.get_y() + 0.45 for p in ax.patches] == pytest.approx([3, 8])  # witnesses 3 and 31, in rows 3 and 8
    assert ax.get_title(loc="left") == (
        "retry_same_key x connector_no_record_yet seed 1: incorrect (verdict false); "
        "31 of 41 entries not drawn (recovery.json has them all)"
    )
    assert ax.get_ylim() == pytest.approx((9.7, -1.6))
    assert fig.get_size_inches()[1] == pytest.approx(0.26 * 10 + 1.6)
    assert ax.get_xlim()[1] == pytest.approx(_expected_right(rep, ax.get_title(loc="left"), drawn))
    monkeypatch.setattr(pictures, "TIMELINE_DRAWN_MAX", 7)
    fig = timeline(rep)  # 0 to 6, then 7, 13, 18, 31, 32, 38: 13 of 14 allowed
    assert len([t for t in _texts(fig) if t.get_position()[0] == -0.65]) == 13
    assert fig.axes[0].get_title(loc="left").endswith("; 28 of 41 entries not drawn (recovery.json has them all)")


def test_a_timeline_of_no_entries_is_one_empty_row() -> None:
    """A case the harness could not judge has no timeline: its lanes and title, one row high."""
    (case,) = load_grid(["retry_same_key"], ["lost_response"], [3]).cases
    rep = json.loads(failed_report(case, "its worker died").model_dump_json())
    fig = timeline(rep)
    (ax,) = fig.axes
    assert [t.get_text() for t in ax.texts] == list(LANES)
    assert [(line.get_ydata().tolist()) for line in ax.lines] == [[-0.5, 0.5]] * 7
    assert ax.get_xlim() == pytest.approx((-1.3, 6.9)) and ax.get_ylim() == pytest.approx((0.7, -1.6))
    assert fig.get_size_inches().tolist() == pytest.approx([8.2 * LANE_IN / 0.98, 0.26 + 1.6])
    assert ax.get_title(loc="left") == "retry_same_key x lost_response seed 3: harness_error (verdict unknown)"
    assert fig.subplotpars.top == pytest.approx(1 - 0.45 / 1.86)


def test_a_timeline_widens_until_its_longest_label_ends_inside_it() -> None:
    """Rule: lanes keep their spacing; the picture widens so that the longest label (a read's answer, on the
    destination's lane) ends inside it, and no text is cut at either edge."""
    rep = report("reconcile_and_reauthorize", "lost_response")
    fig = timeline(rep)
    (ax,) = fig.axes
    longest = "lookup_answered receipt_id=r1 effect=applied"
    assert _at(fig, X["destination"] + 0.08, 15).get_text() == longest
    right = 6 + 0.08 + len(longest) * CHAR_IN / LANE_IN + 0.1
    assert ax.get_xlim() == pytest.approx((-1.3, right))
    assert fig.get_size_inches()[0] == pytest.approx((right + 1.3) * LANE_IN / 0.98)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    for text in [*ax.texts, ax._left_title]:  # type: ignore[attr-defined]
        box = text.get_window_extent(renderer)
        assert box.x0 >= 0 and box.x1 <= fig.bbox.x1, text


def test_the_lane_of_a_fault_is_the_side_of_its_boundary() -> None:
    """Rule: a caller-side fault on the worker's lane, a wire fault on the transport's, a destination fault on the
    destination's; a boundary this version does not know on the transport's."""
    side_lane = {"caller": "worker", "wire": "transport", "destination": "destination"}
    for boundary, cls in BOUNDARIES.items():
        fault = FaultInjected(boundary=boundary, action_id="a73", occurrence=1)
        assert pictures._lane(fault) == side_lane[cls.side], boundary
    assert {cls.side for cls in BOUNDARIES.values()} == set(side_lane)
    assert pictures._lane(FaultInjected(boundary="meteor_strike", action_id="a73", occurrence=1)) == "transport"
    for rep in (report("retry_same_key", "crash_awaiting_reply"), report("retry_same_key", "changed_task")):
        for entry in events(rep["timeline"]):
            if not isinstance(entry, FaultInjected):
                assert pictures._lane(entry) == entry.actor
    crash = [e for e in events(report("retry_same_key", "crash_awaiting_reply")["timeline"]) if e.actor == "injector"]
    assert [pictures._lane(e) for e in crash] == ["worker"]


def test_each_entry_is_labelled_by_what_it_says() -> None:
    """Rule: faults, commands, capped waits, requests and replies in words of their own; any other entry by its
    name and those of its fields a reader needs, the ones not set left out, cut to 70 characters with ``...``
    marking the cut (a scenario author's review read a label cut mid-word, with nothing to say so)."""
    label = pictures._label
    said = {e.index: label(e) for e in events(report("retry_same_key", "changed_task")["timeline"])}
    assert said == {
        0: "task_revision revision=17 model=m7",
        1: "approval_granted revision=17",
        2: "start ",
        3: "action_recorded revision=17 model=m7",
        4: "claim revision=17 ok=True",
        5: "attempt_recorded ",
        6: "dispatch #1 a73-x1",
        7: "received ",
        8: "accepted ",
        9: "applied model=m7 receipt_id=r1",
        10: "FAULT response_lost (#1)",
        11: "timeout ",
        12: "change_task ",
        13: "approval_revoked reason=task changed to revision 18",
        14: "task_revision revision=18 model=m8",
        15: "request_cancel ",
        16: "cancel_requested revision=18 reason=superseded by revision 18",
        17: "start ",
        18: "policy: retry_same_action",
        19: "attempt_recorded ",
        20: "dispatch #2 a73-x2",
        21: "received ",
        22: "replayed receipt_id=r1",
        23: "reply dispatch #2: applied",
        24: "policy: record_effect",
        25: "effect_recorded model=m7 receipt_id=r1",
        26: "task_not_completed revision=18 reason=historical effect: the receip...",
        27: "policy: stop",
        28: "report claimed=completed",
    }
    assert len(said[26]) == 70
    lookups = {e.index: label(e) for e in events(report("reconcile_and_reauthorize", "lost_response")["timeline"])}
    assert (lookups[14], lookups[15], lookups[16]) == (
        "lookup #1", "lookup_answered receipt_id=r1 effect=applied", "reply lookup #1: applied")  # fmt: skip
    assert label(ClaimDecided(action_id="a73", revision=17, ok=False, reason=None)) == "claim revision=17 ok=False"
    assert (
        label(WorkerReported(action_id="a73", finished=False, claimed="gave up", incarnation=2))
        == "report claimed=gave up"
    )
    assert label(WaitCapped(action_id="a73", asked_s=30.0, waited_s=10.0)) == "wait capped: 10 s of 30 s asked"
    assert label(WaitCapped(action_id="a73", asked_s=10.25, waited_s=0.5)) == "wait capped: 0.5 s of 10.25 s asked"
    error = "ValueError: a reason\n  over   two lines " + "x" * 80
    assert label(PolicyFailed(action_id="a73", error=error)) == (
        "policy_error error=ValueError: a reason over two lines " + "x" * 12 + "..."
    )
    fits = "policy_error error=" + "y" * 51
    assert label(PolicyFailed(action_id="a73", error="y" * 51)) == fits and len(fits) == 70


def test_a_control_character_in_a_policys_text_is_drawn_escaped_not_warned_of() -> None:
    """A policy that raised ``RuntimeError("bad\\x1b[2J news")`` had its timeline drawn with matplotlib's warning
    "Glyph 27 (^[) missing from font(s) DejaVu Sans" on the run's stderr; the text is now shown escaped, as the
    reproduce line shows it."""
    label = pictures._label
    failed = PolicyFailed(action_id="a73", error="RuntimeError: bad\x1b[2J\x07 news, \u00e9t\u00e9")
    assert label(failed) == "policy_error error=RuntimeError: bad\\x1b[2J\\x07 news, \u00e9t\u00e9"
    rep = report("stop_on_timeout", "lost_response")
    rep["timeline"].append({**rep["timeline"][-1], "event": "policy_error", "index": len(rep["timeline"]),
                            "data": {"action_id": "a73", "error": "bad\x1b[2J news"}})  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a glyph missing is a UserWarning
        fig = timeline(rep)
        png_bytes(fig)
    assert "policy_error error=bad\\x1b[2J news" in [t.get_text() for t in fig.axes[0].texts]


# --- writing a picture ------------------------------------------------------------------------------------------


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def test_png_bytes_draws_the_figure_unhinted_at_its_size_and_closes_it() -> None:
    """Rule: a PNG of the figure's size at its dpi, its glyphs unhinted, and the figure closed (a grid draws
    hundreds); matplotlib's settings as they were."""
    rep = report("retry_same_key", "changed_task")
    fig = timeline(rep)
    width, height = fig.get_size_inches() * fig.dpi
    hinting = matplotlib.rcParams["text.hinting"]
    data = png_bytes(fig)
    assert _png_size(data) == (int(width), int(height))  # matplotlib's canvas: whole pixels, rounded down
    assert not plt.fignum_exists(fig.number)
    assert matplotlib.rcParams["text.hinting"] == hinting
    import io

    def drawn(hint: str) -> bytes:
        buffer = io.BytesIO()
        with matplotlib.rc_context({"text.hinting": hint}):
            timeline(rep).savefig(buffer, format="png", metadata={"Software": PNG_SOFTWARE})
        return buffer.getvalue()

    assert data == drawn("none") != drawn("force_autohint")


def test_a_png_the_harness_drew_says_so_and_is_told_from_others(tmp_path: Path) -> None:
    """Rule: every PNG names the harness as its Software (a report refuses to write over a picture that does
    not); ``drawn_here`` reads it, and nothing else, from the file's head."""
    data = png_bytes(plt.figure(figsize=(1, 1)))
    software = f"Software\x00recovery harness (Matplotlib {matplotlib.__version__})".encode()
    assert data.index(software) < data.index(b"IDAT") and PNG_SOFTWARE.startswith("recovery harness (Matplotlib ")
    ours, plain, other, text, gone = (tmp_path / n for n in ("ours.png", "plain.png", "o.png", "t.png", "gone.png"))
    ours.write_bytes(data)
    buffer = io.BytesIO()
    figure = plt.figure(figsize=(1, 1))
    figure.savefig(buffer, format="png")  # matplotlib's own Software text
    plt.close(figure)
    plain.write_bytes(buffer.getvalue())
    other.write_bytes(b"\x89PNG" + b"\x00" * 600 + software)  # the words, but past the head
    text.write_bytes(software)  # the words, in what is not a PNG
    assert [drawn_here(p) for p in (ours, plain, other, text, gone, tmp_path)] == [
        True,
        False,
        False,
        False,
        False,
        False,
    ]


def test_save_png_writes_the_picture_and_returns_where(tmp_path: Path) -> None:
    fig = timeline(report("stop_on_timeout", "lost_response"))
    expected = png_bytes(timeline(report("stop_on_timeout", "lost_response")))
    path = tmp_path / "new" / "folders" / "timeline.png"
    assert save_png(fig, path) == path
    assert path.read_bytes() == expected
    assert sorted(p.name for p in path.parent.iterdir()) == ["timeline.png"]
    assert not plt.fignum_exists(fig.number)


def test_a_folder_where_a_picture_goes_is_refused_in_one_line(tmp_path: Path) -> None:
    folder = tmp_path / "heatmap.png"
    (folder / "inside").mkdir(parents=True)
    with pytest.raises(InputError) as raised:
        refuse_folder(folder)
    assert (
        str(raised.value) == f"{folder}: is a folder, where this writes a file; fix: move it away, then run this again"
    )
    with pytest.raises(InputError):
        pictures.write_replacing(folder, b"data")
    assert [p.name for p in folder.iterdir()] == ["inside"] and sorted(p.name for p in tmp_path.iterdir()) == [
        "heatmap.png"
    ]
    refuse_folder(tmp_path / "absent.png")
    (tmp_path / "file.png").write_bytes(b"old")
    refuse_folder(tmp_path / "file.png")


def test_a_link_where_a_picture_goes_is_replaced_not_followed(tmp_path: Path) -> None:
    """A link to a folder is not refused (it is not the folder); a link to a file is replaced, its target kept."""
    target_folder, target_file = tmp_path / "elsewhere", tmp_path / "kept.png"
    target_folder.mkdir()
    target_file.write_bytes(b"kept")
    for link, target in ((tmp_path / "a.png", target_folder), (tmp_path / "b.png", target_file)):
        link.symlink_to(target)
        refuse_folder(link)
        assert pictures.write_replacing(link, b"new") == link
        assert not link.is_symlink() and link.read_bytes() == b"new"
    assert list(target_folder.iterdir()) == [] and target_file.read_bytes() == b"kept"


def test_a_picture_is_written_through_a_temporary_file_beside_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rule: written to ``.NAME.PID.tmp`` in the same folder, then renamed over the picture (an old one
    replaced), in a folder made where there is none."""
    renamed: list[tuple[Path, Path, bytes]] = []
    real = os.replace

    def noting(src: Path, dst: Path) -> None:
        renamed.append((Path(src), Path(dst), Path(src).read_bytes()))
        real(src, dst)

    monkeypatch.setattr(os, "replace", noting)
    path = tmp_path / "run" / "cases" / "timeline.png"
    assert pictures.write_replacing(path, b"first") == path
    assert pictures.write_replacing(path, b"second") == path  # the folder there already, the picture replaced
    tmp = path.with_name(f".timeline.png.{os.getpid()}.tmp")
    assert renamed == [(tmp, path, b"first"), (tmp, path, b"second")]
    assert path.read_bytes() == b"second" and [p.name for p in path.parent.iterdir()] == ["timeline.png"]


def test_a_picture_stopped_while_written_leaves_nothing_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rule: whatever stops the writing (a full disk, Ctrl-C, a failed rename) the temporary file goes and the
    error goes on unchanged; an old picture stays as it was. A write that failed before making the temporary file
    says its own error, not that there was nothing to remove."""
    path = tmp_path / "timeline.png"
    path.write_bytes(b"old")
    real_write = Path.write_bytes

    def half(stop: BaseException) -> Any:
        def write(self: Path, data: bytes) -> int:
            real_write(self, data[:2])
            raise stop

        return write

    for stop in (OSError(28, "No space left on device"), KeyboardInterrupt()):
        monkeypatch.setattr(Path, "write_bytes", half(stop))
        with pytest.raises(type(stop)) as raised:
            pictures.write_replacing(path, b"new picture")
        assert raised.value is stop
        assert [p.name for p in tmp_path.iterdir()] == ["timeline.png"] and path.read_bytes() == b"old"

    def refused(self: Path, data: bytes) -> int:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(Path, "write_bytes", refused)
    with pytest.raises(PermissionError):
        pictures.write_replacing(path, b"new picture")
    monkeypatch.undo()

    def no_rename(src: Path, dst: Path) -> None:
        raise OSError(18, "Invalid cross-device link")

    monkeypatch.setattr(os, "replace", no_rename)
    with pytest.raises(OSError, match="cross-device"):
        pictures.write_replacing(path, b"new picture")
    assert [p.name for p in tmp_path.iterdir()] == ["timeline.png"] and path.read_bytes() == b"old"


def test_the_pictures_are_the_same_whatever_the_readers_matplotlib_settings(three_by_two: Path) -> None:
    """Rule: the pictures set what they show themselves, so a notebook's or a user's settings (here matplotlib's
    'classic' style and a few more: 72 dpi, 14-point text, edges on every patch, SVG as the format saved) do not
    change them: the heatmap at 100 dpi, the titles at 10 points, a witness's highlight without an edge, and
    ``png_bytes`` a PNG."""
    rep = report("retry_same_key", "connector_no_record_yet")
    user = {"figure.dpi": 72, "font.size": 14, "patch.force_edgecolor": True, "savefig.format": "svg"}
    with plt.style.context("classic"), matplotlib.rc_context(user):
        fig = heatmap(load(three_by_two))
        assert fig.dpi == 100 and fig.axes[0].title.get_fontsize() == 10
        drawn = timeline(rep)
        (ax,) = drawn.axes
        assert drawn.dpi == 80 and ax._left_title.get_fontsize() == 10  # type: ignore[attr-defined]
        assert [patch.get_edgecolor() for patch in ax.patches] == [(0, 0, 0, 0)] * 3
        assert _png_size(png_bytes(fig)) == (640, 430)


def test_png_bytes_closes_the_figure_it_drew_and_no_other() -> None:
    """The report draws the heatmap, then timelines: drawing one must close that one, not the last one made."""
    first = timeline(report("stop_on_timeout", "lost_response"))
    second = timeline(report("retry_same_key", "lost_response"))
    png_bytes(first)
    assert not plt.fignum_exists(first.number) and plt.fignum_exists(second.number)


def test_a_frame_with_categorical_names_draws_the_same_cells_without_a_warning(three_by_two: Path) -> None:
    """A notebook may make the policy and scenario columns categorical (to order them): the same cells, and no
    FutureWarning from pandas about unobserved categories (the default it deprecates is not used)."""
    frame = load(three_by_two)
    frame = frame[~((frame["policy"] == "stop_on_timeout") & (frame["scenario"] == "uncertain_lookup"))]
    named = frame.assign(policy=frame["policy"].astype("category"), scenario=frame["scenario"].astype("category"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        drawn = cells(heatmap(named))
    assert drawn == cells(heatmap(frame))
    assert drawn[(1.5, 2.5)] == ("-", "#ffffff") and drawn[(0.5, 2.5)] == ("abandoned 2", COLOURS["abandoned"])


class _Polls:
    """Reads the destination, waits a tenth of a second, and again, until its commands or its time run out."""

    name, revision = "polls_until_told_otherwise", "1"

    def decide(self, situation: Any) -> object:
        from harness.policy import LookUp, Wait

        return LookUp() if situation.last is None or situation.last.kind == "wait" else Wait(duration_s=0.1)


def test_a_long_timelines_title_is_not_cut_off() -> None:
    """A case of more entries than are drawn says in its title how many were left out; with a long scenario name
    that title ran past the picture's right edge, and '(recovery.json has them all)' was cut off (the picture
    widened for its labels only). A scenario may allow up to 10,000 commands: here 90, 243 entries."""
    from harness.run.plan import Case

    (shipped,) = load_grid(["stop_on_timeout"], ["connector_cancel_while_new_operation_leaves"], [1]).cases
    worker = shipped.scenario.worker.model_copy(update={"command_count_max": 90})
    scenario = shipped.scenario.model_copy(update={"worker": worker})
    rep = json.loads(recovery_json(run_case(Case("x:POLLS", shipped.scenario_spec, 12, _Polls(), scenario))[0]))
    assert len(rep["timeline"]) == 243
    fig = timeline(rep)
    (ax,) = fig.axes
    assert ax.get_title(loc="left") == (
        "polls_until_told_otherwise x connector_cancel_while_new_operation_leaves seed 12: abandoned "
        "(verdict false); 43 of 243 entries not drawn (recovery.json has them all)"
    )
    right = -1.3 + len(ax.get_title(loc="left")) * CHAR_IN * 10 / 7 / LANE_IN + 0.1
    assert right > 8 and right == pytest.approx(_expected_right(rep, ax.get_title(loc="left"), range(243)))
    assert ax.get_xlim() == pytest.approx((-1.3, right))
    assert fig.get_size_inches()[0] == pytest.approx((right + 1.3) * LANE_IN / 0.98)
    fig.canvas.draw()
    box = ax._left_title.get_window_extent(fig.canvas.get_renderer())  # type: ignore[attr-defined]
    assert fig.bbox.x0 <= box.x0 and box.x1 <= fig.bbox.x1


def test_printable_escapes_only_what_does_not_print() -> None:
    """A backslash or a quote prints: kept as it is, beside an escaped control character."""
    from harness.present.pictures import _printable

    assert _printable("C:\\d 'q' \"q\"\x1b") == "C:\\d 'q' \"q\"\\x1b"
    assert _printable("plain \\ text") == "plain \\ text"


def test_drawn_here_reads_the_first_512_bytes_only(tmp_path: Path) -> None:
    mark = b"Software\x00recovery harness "
    inside = tmp_path / "inside.png"
    inside.write_bytes(b"\x89PNG" + b"x" * (512 - 4 - len(mark)) + mark + b"rest")
    assert drawn_here(inside) is True
    past = tmp_path / "past.png"
    past.write_bytes(b"\x89PNG" + b"x" * (513 - 4 - len(mark)) + mark + b"rest")
    assert drawn_here(past) is False
