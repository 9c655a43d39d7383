"""The heatmap, the timelines, report.html as a person sees it in Chromium, and the notebook run top to bottom."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from conftest import run_into
from matplotlib.image import imread
from matplotlib.patches import Rectangle

from harness.cli import main
from harness.present.analysis import load
from harness.present.html_report import TIMELINE_OUTCOMES
from harness.present.pictures import COLOURS, heatmap, timeline

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run with correct, escalated, abandoned and incorrect cases, an unknown duplicate count, and its report."""
    out = tmp_path_factory.mktemp("presentation") / "run"
    assert (
        run_into(
            out,
            "--tracking",
            "none",
            "--seed-count",
            "2",
            "--policy",
            "retry_same_key",
            "--policy",
            "reconcile_and_reauthorize",
            "--scenario",
            "changed_task",
            "--scenario",
            "uncertain_lookup",
        )
        == 0
    )
    return out


def texts(fig) -> list[str]:  # type: ignore[no-untyped-def]
    return [t.get_text() for ax in fig.axes for t in ax.texts]


def test_heatmap_colours_outcomes_and_shows_unknown(run_dir: Path) -> None:
    """Each cell has its outcome's colour and count; a cell whose cases are undecided says unknown."""
    fig = heatmap(load(run_dir))
    labels = texts(fig)
    assert "incorrect 2" in labels and "correct 2" in labels
    assert "abandoned 2\nunknown x2" in labels  # retry_same_key x uncertain_lookup: duplicates unknown
    colours = {tuple(round(c, 3) for c in p.get_facecolor()[:3]) for p in fig.axes[0].patches}
    from matplotlib.colors import to_rgb

    assert {tuple(round(c, 3) for c in to_rgb(COLOURS[o])) for o in ("correct", "incorrect", "abandoned")} <= colours


def test_the_heatmap_puts_the_scenarios_down_the_side_when_they_are_more(run_dir: Path) -> None:
    """As the printed table: with more scenarios than policies, a row per scenario, so the picture grows downwards
    (the default grid's seventy scenario columns made a heatmap 14,000 pixels wide, shrunk on the page to a strip
    no one could read)."""
    one = load(run_dir)
    one = one[one["policy"] == "retry_same_key"]
    fig = heatmap(one)
    (ax,) = fig.axes
    assert [t.get_text() for t in ax.get_yticklabels()] == ["changed_task", "uncertain_lookup"]
    (tick,) = ax.xaxis.majorTicks
    # Named above the rows as well as below, unturned: a tall picture's top needs no scrolling to its bottom.
    assert [tick.label1.get_text(), tick.label2.get_text()] == ["retry_same_key", "retry_same_key"]
    assert tick.label2.get_visible() and tick.label1.get_rotation() == 0
    # retry_same_key x uncertain_lookup is the second row's only cell.
    (cell,) = [t for t in ax.texts if t.get_position() == (0.5, 1.5)]
    assert cell.get_text() == "abandoned 2\nunknown x2"
    many = pd.concat([one.assign(scenario=one["scenario"] + f"_{i}") for i in range(30)], ignore_index=True)
    width, height = heatmap(many).get_size_inches()
    assert width == fig.get_size_inches()[0] and height > 30 * 0.5
    both = heatmap(load(run_dir))  # two policies, two scenarios: a row per policy, named below only
    assert sorted(t.get_text() for t in both.axes[0].get_yticklabels()) == [
        "reconcile_and_reauthorize",
        "retry_same_key",
    ]
    assert not both.axes[0].xaxis.majorTicks[0].label2.get_visible()
    plt.close("all")


def test_timeline_has_lanes_faults_and_highlighted_witnesses(run_dir: Path) -> None:
    """One lane per actor, the injected fault marked, and one highlight per witnessing entry."""
    path = run_dir / "cases/retry_same_key/changed_task/seed-1/recovery.json"
    report = json.loads(path.read_text())
    fig = timeline(report)
    labels = texts(fig)
    for lane in ("operator", "controller", "worker", "transport", "destination"):
        assert lane in labels
    assert any(label.startswith("FAULT response_lost") for label in labels)
    witnesses = {i for a in report["anomalies"] for i in a["witnesses"]}
    highlights = [p for p in fig.axes[0].patches if isinstance(p, Rectangle)]
    assert witnesses and len(highlights) == len(witnesses)


def test_run_writes_report_heatmap_and_timelines(run_dir: Path) -> None:
    """`harness run` ends with report.html, heatmap.png, and a timeline.png beside the first failing case (the
    lowest seed) of each policy, scenario and outcome, and beside no other case."""
    assert (run_dir / "report.html").exists() and (run_dir / "heatmap.png").exists()
    first: dict[tuple[str, str, str], int] = {}
    cases = [(path, json.loads(path.read_text())) for path in (run_dir / "cases").rglob("recovery.json")]
    for _, case in cases:
        if case["outcome"] in TIMELINE_OUTCOMES:
            group = (case["policy"], case["scenario"], case["outcome"])
            first[group] = min(first.get(group, case["seed"]), case["seed"])
    drawn = {path for path, _ in cases if path.with_name("timeline.png").exists()}
    assert drawn == {p for p, c in cases if first.get((c["policy"], c["scenario"], c["outcome"])) == c["seed"]}
    assert 0 < len(drawn) < sum(1 for _, c in cases if c["outcome"] in TIMELINE_OUTCOMES)  # groups of several


def test_report_command_rebuilds_from_downloaded_files(
    run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`harness report` on bare recovery.json files draws the missing timelines and prints the page's path."""
    copy = tmp_path / "downloaded"
    for path in (run_dir / "cases").rglob("recovery.json"):
        target = copy / path.relative_to(run_dir)
        target.parent.mkdir(parents=True)
        shutil.copy(path, target)
    assert main(["report", str(copy)]) == 0
    assert capsys.readouterr().out.strip() == str(copy / "report.html")
    assert len(list(copy.rglob("timeline.png"))) == len(list(run_dir.rglob("timeline.png")))
    assert main(["report", str(tmp_path / "empty-nothing")]) == 2


#: The one command that installs the browser the rendering test needs (tests/run.sh runs it when it can).
INSTALL_CHROMIUM = "sudo apt-get install -y chromium"


def chromium() -> str:
    """The Chromium binary; without one the test is skipped with the command to install it, except in CI (``CI``
    set), where a missing browser is a failure: CI runs everything."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        why = f"Chromium is not installed; install it with: {INSTALL_CHROMIUM}"
        if os.environ.get("CI"):
            pytest.fail(f"{why} (tests/run.sh does, as root or with passwordless sudo)")
        pytest.skip(why)
    return found


@pytest.mark.browser
def test_report_renders_in_chromium(run_dir: Path, tmp_path: Path) -> None:
    """Headless Chromium renders report.html: the screenshot is not blank and the tables are in the page."""
    page = (run_dir / "report.html").resolve().as_uri()
    profile = tmp_path / "profile"
    shot = tmp_path / "shot.png"
    subprocess.run(
        [
            chromium(),
            *CHROMIUM_FLAGS,
            f"--user-data-dir={profile}",
            "--window-size=1280,1600",
            f"--screenshot={shot}",
            page,
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    pixels = imread(shot)[..., :3]
    assert pixels.shape[:2] == (1600, 1280)
    # The top of the page, where the verdict rows are: drawn text and the two verdict colours in it.
    top = pixels[:450]
    assert (top < 0.95).any(axis=2).mean() > 0.01
    red = ((top[..., 0] > 0.55) & (top[..., 1] < 0.25) & (top[..., 2] < 0.25)).sum()
    green = ((top[..., 1] > 0.3) & (top[..., 0] < 0.2) & (top[..., 2] < 0.2)).sum()
    assert red > 20 and green > 20, (red, green)
    not_white = (pixels < 0.95).any(axis=2).mean()
    assert 0.05 < not_white < 0.95, not_white  # something drawn, not a solid block
    assert np.unique(pixels.reshape(-1, 3), axis=0).shape[0] > 50  # a picture, not a flat page
    dom = subprocess.run(
        [chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--dump-dom", page],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    assert 'id="outcomes"' in dom and 'id="rates"' in dom and 'id="metric-duplicate_effects"' in dom
    assert "unknown x2" in dom  # the unknown duplicate count, as a reader sees it
    frame = load(run_dir)
    failing = frame[frame["outcome"].isin(TIMELINE_OUTCOMES)]
    groups = failing.groupby(["policy", "scenario", "outcome"]).ngroups
    # A section per policy, scenario and failing outcome; every failing case's reproduce command in the page.
    assert 0 < groups < len(failing) and dom.count('<div class="case" id="case-') == groups
    assert all(html.escape(command, quote=False) in dom for command in failing["reproduce"])
    # Verdict first: the policy rows come before every other table, in the grid's order, each linked to its
    # first failure's timeline.
    assert dom.index('id="verdicts"') < dom.index('id="outcomes"')
    rows = dom[dom.index('id="verdicts"') : dom.index("</table>", dom.index('id="verdicts"'))]
    assert rows.index(">retry_same_key<") < rows.index(">reconcile_and_reauthorize<")
    assert '<span class="unsafe">unsafe</span>' in rows and '<span class="safe">safe</span>' in rows
    assert '<a href="#case-' in rows
    assert "escalations" in dom and "dispatches" in dom
    assert "python -m harness run --policy retry_same_key --scenario changed_task --seed 1" in dom


def test_notebook_runs_top_to_bottom_and_compares_two_runs(run_dir: Path, tmp_path: Path) -> None:
    """The comparison notebook executes on fresh runs, shows unknown as unknown, and finds the changed cases."""
    import nbformat
    from nbclient import NotebookClient

    (tmp_path / "changedpolicy.py").write_text(
        "from harness.policy import RetrySameAction\n"
        "from policies._retrying import BlindRetry\n"
        "POLICY = BlindRetry('reconcile_and_reauthorize', '2-blind-retry', RetrySameAction(claim=False))\n"
    )
    after = tmp_path / "after"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "harness",
            "run",
            "--out",
            str(after),
            "--quiet",
            "--tracking",
            "none",
            "--no-report",
            "--seed-count",
            "2",
            "--policy",
            "retry_same_key",
            "--policy",
            "changedpolicy:POLICY",
            "--scenario",
            "changed_task",
            "--scenario",
            "uncertain_lookup",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
        timeout=300,
    )
    # Neither policy ever looks up, so uncertain_lookup's lookup fault fires in no case: exit 4, everything written.
    assert proc.returncode == 4 and "lookup_unavailable" in proc.stderr, proc.stderr
    # As if stopped after its last case (run.json is written last): the notebook says the run is incomplete.
    (after / "run.json").unlink()
    notebook = nbformat.read(ROOT / "reports" / "compare_policies.ipynb", as_version=4)
    os.environ["HARNESS_RUN"], os.environ["HARNESS_BASELINE"] = str(after), str(run_dir)
    try:
        NotebookClient(
            notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}
        ).execute()
    finally:
        del os.environ["HARNESS_RUN"], os.environ["HARNESS_BASELINE"]

    def output(tag: str) -> str:
        cell = next(c for c in notebook.cells if tag in c.get("metadata", {}).get("tags", []))
        parts = []
        for out in cell.outputs:
            parts.append(out.get("text", ""))
            parts += [str(v) for v in out.get("data", {}).values()]
        return "\n".join(parts)

    assert "8 cases from" in output("load")
    assert f"INCOMPLETE: {after} was stopped; resume it: python -m harness run --resume {after}" in output("load")
    assert "unknown x2" in output("duplicates")
    assert "ledger is unavailable to the checker" in output("unknown")
    heat = next(c for c in notebook.cells if "heatmap" in c.metadata.get("tags", []))
    assert "image/png" in json.dumps(heat.outputs)  # the figure is shown, not only built
    compared = output("compare")
    assert "2-blind-retry" in compared and "incorrect" in compared
    counts = re.search(
        r"(\d+) of the (\d+) cases in both runs changed outcome; (\d+) only in this run, (\d+) only", compared
    )
    assert counts is not None, compared
    changed, both, new = (int(counts[i]) for i in (1, 2, 3))
    assert 0 < changed <= both and both + new == 8  # the 8 cases of this run: each in both runs, or new in it


def test_no_timeline_label_is_cut_at_the_edge(tmp_path: Path) -> None:
    """Every label of a long timeline (a connector crashed at every phase) ends inside the picture."""
    out = tmp_path / "run"
    assert run_into(out, "--tracking", "none", "--no-report", "--policy", "follow_and_inspect",
                    "--scenario", "connector_crash_points", "--seed", "1") == 0  # fmt: skip
    for path in sorted((out / "cases").rglob("recovery.json")):
        fig = timeline(json.loads(path.read_text()))
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
        edge = fig.bbox.x1
        for text in fig.axes[0].texts:
            assert text.get_window_extent(renderer).x1 <= edge + 1, (path.parent.name, text.get_text())


def test_rates_are_counts_below_enough_cases_and_say_when_seeds_change_nothing(run_dir: Path) -> None:
    from harness.present.analysis import RATE_MIN_CASES, rate_table

    frame = load(run_dir)
    table = rate_table(frame)
    cell = table.loc["reconcile_and_reauthorize", "changed_task"]
    assert cell.startswith("2/2") and "[" not in cell  # no interval from two cases
    assert "same at every seed" in cell
    many = pd_concat_seeds(frame, RATE_MIN_CASES)
    assert "[" in rate_table(many).loc["reconcile_and_reauthorize", "changed_task"]


def pd_concat_seeds(frame, n):  # type: ignore[no-untyped-def]
    """The frame's cases repeated under other seeds until each cell has ``n`` cases."""
    import pandas as pd

    copies = []
    for k in range(n // 2 + 1):
        copy = frame.copy()
        copy["seed"] = copy["seed"] + 1000 * k
        copies.append(copy)
    return pd.concat(copies, ignore_index=True)


def test_the_outcome_table_puts_the_longer_list_down_the_side() -> None:
    """Policies are rows while they are at least as many as the scenarios; with more scenarios than policies (the
    default grid has sixty scenario cases), scenarios are rows and no line grows with their number."""
    from harness.present.table import outcome_table

    counts = {
        ("p1", "s1"): {"correct": 3},
        ("p1", "s2"): {"correct": 2, "incorrect": 1},
        ("p2", "s1"): {"incorrect": 3},
    }
    wide = outcome_table(counts, ["p1", "p2"], ["s1"]).splitlines()
    assert wide[0].split() == ["policy", "\\", "scenario", "s1"]
    assert [line.split() for line in wide[2:]] == [["p1", "correct"], ["p2", "incorrect"]]
    tall = outcome_table(counts, ["p1", "p2"], ["s1", "s2", "s3"]).splitlines()
    assert tall[0].split() == ["scenario", "\\", "policy", "p1", "p2"]
    assert [line.split() for line in tall[2:]] == [
        ["s1", "correct", "incorrect"],
        ["s2", "correct:2", "incorrect:1", "-"],
        ["s3", "-", "-"],
    ]
    many = [f"scenario_{i:02d}" for i in range(60)]
    assert max(len(line) for line in outcome_table({}, ["p1", "p2"], many).splitlines()) < 40


def test_the_notebook_finds_the_newest_run_from_its_own_folder(run_dir: Path, tmp_path: Path) -> None:
    """Jupyter starts the kernel in the notebook's folder (reports/): without HARNESS_RUN the notebook still finds
    the project's newest run in reports/runs (it looked for reports/runs under reports/, found none, and failed)."""
    import nbformat
    from nbclient import NotebookClient

    project = tmp_path / "project"
    shutil.copytree(run_dir / "cases", project / "reports" / "runs" / "20260101T000000Z" / "cases")
    # An exploration written later into the same folder (explore's default) holds no case: not the newest run.
    explored = project / "reports" / "runs" / "20260102T000000Z"
    explored.mkdir()
    (explored / "explore.json").write_text("{}")
    notebook = nbformat.read(ROOT / "reports" / "compare_policies.ipynb", as_version=4)
    notebook.cells = notebook.cells[:2]  # the introduction and the cell that loads the run
    saved = os.environ.pop("HARNESS_RUN", None)
    try:
        NotebookClient(
            notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(project / "reports")}}
        ).execute()
    finally:
        if saved is not None:
            os.environ["HARNESS_RUN"] = saved
    printed = "".join(o.get("text", "") for o in notebook.cells[1].outputs)
    cases = len(list(run_dir.rglob("recovery.json")))
    assert cases and printed.startswith(f"{cases} cases from {project / 'reports' / 'runs' / '20260101T000000Z'};")


def test_the_notebook_takes_the_run_begun_last_not_the_last_name(run_dir: Path, tmp_path: Path) -> None:
    """A run given a name (--out reports/runs/baseline) sorts after every timestamp: the newest run is the one
    whose manifest was written last, not the last name."""
    import nbformat
    from nbclient import NotebookClient

    runs = tmp_path / "project" / "reports" / "runs"
    named, stamped = runs / "baseline", runs / "20260101T000000Z"
    for folder, when in ((named, 1_000_000_000), (stamped, 2_000_000_000)):
        shutil.copytree(run_dir / "cases", folder / "cases")
        (folder / "manifest.json").write_text("{}")
        os.utime(folder / "manifest.json", (when, when))
    notebook = nbformat.read(ROOT / "reports" / "compare_policies.ipynb", as_version=4)
    notebook.cells = notebook.cells[:2]
    saved = os.environ.pop("HARNESS_RUN", None)
    try:
        NotebookClient(
            notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(runs.parent)}}
        ).execute()
    finally:
        if saved is not None:
            os.environ["HARNESS_RUN"] = saved
    printed = "".join(o.get("text", "") for o in notebook.cells[1].outputs)
    assert f"cases from {stamped};" in printed


def test_the_notebook_stops_on_a_baseline_that_loads_no_case(run_dir: Path, tmp_path: Path) -> None:
    """A mistyped HARNESS_BASELINE compared the run with nothing ("0 of the 0 cases in both runs changed
    outcome"), with no word of the typo: the notebook now stops and says why nothing was loaded."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    notebook = nbformat.read(ROOT / "reports" / "compare_policies.ipynb", as_version=4)
    notebook.cells = [notebook.cells[1], next(c for c in notebook.cells if "compare" in c.metadata.get("tags", []))]
    missing = tmp_path / "no-such-run"
    saved = {name: os.environ.pop(name, None) for name in ("HARNESS_RUN", "HARNESS_BASELINE")}
    os.environ["HARNESS_RUN"], os.environ["HARNESS_BASELINE"] = str(run_dir), str(missing)
    try:
        with pytest.raises(CellExecutionError) as raised:
            NotebookClient(notebook, timeout=300, kernel_name="python3").execute()
    finally:
        for name, value in saved.items():
            os.environ.pop(name, None)
            if value is not None:
                os.environ[name] = value
    said = f"no case loaded from HARNESS_BASELINE={missing}: {missing}: no such file or folder"
    assert said in str(raised.value), str(raised.value)


def test_the_notebook_draws_the_timeline_of_an_abandoned_case(tmp_path: Path) -> None:
    """The timeline cell shows the worst failing case, abandoned ones included (it looked only at incorrect and
    unresolved ones, and said there was none in a run whose only failure was abandoned)."""
    import nbformat
    from nbclient import NotebookClient

    out = tmp_path / "run"
    assert run_into(out, "--tracking", "none", "--no-report", "--policy", "stop_on_timeout", "--policy",
                    "reconcile_and_reauthorize", "--scenario", "lost_response", "--seed", "1") == 0  # fmt: skip
    notebook = nbformat.read(ROOT / "reports" / "compare_policies.ipynb", as_version=4)
    notebook.cells = [notebook.cells[1]] + [c for c in notebook.cells if "timeline" in c.metadata.get("tags", [])]
    saved = os.environ.get("HARNESS_RUN")
    os.environ["HARNESS_RUN"] = str(out)
    try:
        NotebookClient(
            notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}
        ).execute()
    finally:
        if saved is None:
            del os.environ["HARNESS_RUN"]
        else:
            os.environ["HARNESS_RUN"] = saved
    shown = notebook.cells[-1].outputs
    printed = "".join(o.get("text", "") for o in shown)
    assert printed.startswith("abandoned python -m harness run --policy stop_on_timeout --scenario lost_response")
    assert "image/png" in json.dumps(shown)


def test_rate_table_of_nothing_loaded_is_an_empty_table() -> None:
    """As outcome_counts and metric_table: load() of a folder without cases gives a table with no cell, not an
    error from pandas."""
    from harness.present.analysis import load, rate_table

    assert rate_table(load([])).empty


def test_a_picture_stopped_while_written_leaves_no_half_of_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A picture that exists is never drawn again (a resumed run, the report): one cut off while written (its
    worker killed, a full disk) must leave nothing, not half a PNG."""
    import matplotlib.pyplot as plt

    from harness.present import pictures

    fig = plt.figure()
    real = Path.write_bytes

    def cut(self: Path, data: bytes) -> int:
        real(self, data[: len(data) // 2])
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Path, "write_bytes", cut)
    path = tmp_path / "case" / "timeline.png"
    with pytest.raises(OSError):
        pictures.save_png(fig, path)
    assert list(path.parent.iterdir()) == []
    monkeypatch.undo()
    assert pictures.save_png(fig, path).read_bytes().startswith(b"\x89PNG")
    plt.close(fig)


def test_the_report_keeps_the_runs_order_of_scenarios(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The run's printed table keeps the scenarios in the order given; the page sorted them by name. Its verdict's
    first failure is the first failing cell the run named (the worst outcome first)."""
    out = tmp_path / "run"
    args = ["--policy", "retry_same_key", "--scenario", "uncertain_lookup", "--scenario", "changed_task"]
    # Exit 4: a fault of uncertain_lookup this policy never reaches; the order is the point here.
    assert main(["run", *args, "--seed-count", "1", "--tracking", "none", "--out", str(out)]) == 4
    printed = capsys.readouterr().out
    assert printed.index("uncertain_lookup") < printed.index("changed_task")
    page = (out / "report.html").read_text()
    outcomes = page[page.index('id="outcomes"') : page.index("</table>", page.index('id="outcomes"'))]
    assert outcomes.index("uncertain_lookup") < outcomes.index("changed_task")
    # One policy, two scenarios: a row per scenario, as in the printed table and the heatmap.
    header = outcomes[outcomes.index("<thead>") : outcomes.index("</thead>")]
    assert "<th>retry_same_key</th>" in header and "uncertain_lookup" not in header, header
    rates = page[page.index('id="rates"') : page.index("</table>", page.index('id="rates"'))]
    assert "<th>retry_same_key</th>" in rates[: rates.index("</thead>")]
    verdicts = page[page.index('id="verdicts"') : page.index("</table>", page.index('id="verdicts"'))]
    named = printed.split("worst outcome first):\n", 1)[1].splitlines()
    assert named[0].split()[0] == "incorrect" and "--scenario changed_task --seed 1" in named[0]
    assert ">changed_task seed 1: incorrect</a>" in verdicts


def test_seeds_given_out_of_order_name_the_same_case_in_the_run_and_the_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--seed 2 --seed 1`: the run named seed 2 (the first it ran) and the page seed 1 (the lowest). Both name
    the lowest seed of the worst outcome."""
    out = tmp_path / "run"
    grid = ["--policy", "retry_new_key", "--scenario", "lost_response", "--seed", "2", "--seed", "1"]
    assert main(["run", *grid, "--tracking", "none", "--out", str(out)]) == 0
    named = capsys.readouterr().out.split("worst outcome first):\n", 1)[1].splitlines()
    assert named[0].split()[0] == "incorrect" and named[0].endswith("--scenario lost_response --seed 1"), named
    verdicts = (out / "report.html").read_text()
    verdicts = verdicts[verdicts.index('id="verdicts"') :]
    assert ">lost_response seed 1: incorrect</a>" in verdicts


def test_the_verdicts_first_failure_is_the_runs_and_a_harness_error_is_shown(tmp_path: Path) -> None:
    """The verdict's first failure was the first failing row as files sort (seed 10 before seed 9), and a policy
    whose cases all ended in harness_error was "undecided" with nothing on the page to act on: no case, no error,
    no command. The first failure is the worst outcome at the lowest seed, and harness errors have a section
    with why and the command, linked from the verdict."""
    from harness.present.html_report import write_report
    from harness.run.case import failed_report, run_case
    from harness.run.files import case_path, recovery_json, write_atomic
    from harness.run.plan import load_grid

    out = tmp_path / "run"
    for case in load_grid(["retry_new_key"], ["lost_response"], [9, 10]).cases:
        report, _ = run_case(case)
        write_atomic(case_path(out, report), recovery_json(report))
    (case,) = load_grid(["stop_on_timeout"], ["lost_response"], [3]).cases
    hung = failed_report(case, "the case ran longer than its wall-clock budget of 1 s (--case-timeout)", 1.0)
    write_atomic(case_path(out, hung), recovery_json(hung))
    page = write_report(out).read_text()
    assert "3 cases from" in page and "2 policies x 1 scenario, seeds 3, 9, 10." in page
    verdicts = page[page.index('id="verdicts"') : page.index("</table>", page.index('id="verdicts"'))]
    assert "lost_response seed 9: incorrect" in verdicts
    assert '<a href="#error-0">lost_response seed 3: harness_error</a>' in verdicts
    errors = page[page.index('id="errors"') :]
    assert '<tr id="error-0"><td>stop_on_timeout</td><td>lost_response</td><td>3</td>' in errors
    assert "wall-clock budget of 1 s" in errors and html.escape(hung.reproduce) in errors


def test_the_notebook_reads_a_relative_run_from_the_project_and_stops_on_no_run(run_dir: Path, tmp_path: Path) -> None:
    """`HARNESS_RUN=reports/runs/<id> jupyter nbconvert --execute reports/compare_policies.ipynb`, as the README
    writes it: the kernel starts in reports/, and the relative path read from there found no case, yet the
    notebook ran on and said the run had no failing case. It reads the path from the project's folder; with no run
    yet, or a folder that holds no case, it stops and says so (it looked in reports/reports/runs)."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    project = tmp_path / "project"
    (project / "reports").mkdir(parents=True)
    shutil.copy(ROOT / "reports" / "compare_policies.ipynb", project / "reports")
    (project / "empty").mkdir()

    def executed(run: str | None) -> tuple[str, str]:
        notebook = nbformat.read(ROOT / "reports" / "compare_policies.ipynb", as_version=4)
        notebook.cells = notebook.cells[:2]  # the introduction and the cell that loads the run
        saved = os.environ.pop("HARNESS_RUN", None)
        if run is not None:
            os.environ["HARNESS_RUN"] = run
        try:
            NotebookClient(
                notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(project / "reports")}}
            ).execute()
            error = ""
        except CellExecutionError as exc:
            error = str(exc)
        finally:
            os.environ.pop("HARNESS_RUN", None)
            if saved is not None:
                os.environ["HARNESS_RUN"] = saved
        return "".join(o.get("text", "") for o in notebook.cells[1].outputs), error

    _, error = executed(None)
    assert f"no run in {project / 'reports' / 'runs'} yet: make one with 'python -m harness run'" in error
    _, error = executed("empty")
    # Each skipped folder on its own, with its reason (not the list's repr).
    said = f"no case loaded from {project / 'empty'}: {project / 'empty'}: no recovery.json or compact records"
    assert said in error and "Skipped(" not in error, error
    shutil.copytree(run_dir / "cases", project / "reports" / "runs" / "r1" / "cases")
    printed, error = executed("reports/runs/r1")
    cases = len(list(run_dir.rglob("recovery.json")))
    assert not error and printed.startswith(f"{cases} cases from {project / 'reports' / 'runs' / 'r1'};"), error
