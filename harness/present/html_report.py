"""``report.html``: one self-contained page per run, for people who would rather look than read JSON.

Tables (outcomes, correct rates with Wilson intervals and pass^k, the safety metrics), the heatmap, and the
failing cases: for each policy, scenario and outcome that is incorrect, abandoned or unresolved, the timeline
of its first case (the lowest seed) with its anomalies, unknowns and reproduce command, and the group's other
cases listed under it. Pictures are embedded as base64 PNG, so the file can be mailed or attached as it is;
there is one per group, so the page grows with the grid's cells, not with its seeds.
"""

from __future__ import annotations

import base64
import html
import json
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from harness.check.registry import METRICS
from harness.limits import REPORT_LISTED_MAX
from harness.model import FAILING, MANIFEST, REPORT_HTML, RUN_RECORD
from harness.present.analysis import (
    RATE_MIN_CASES,
    Reading,
    load,
    metric_table,
    order_policies,
    outcome_counts,
    policy_verdicts,
    rate_table,
    read_case,
)
from harness.present.pictures import (
    drawn_here,
    heatmap,
    png_bytes,
    refuse_folder,
    save_png,
    timeline,
    write_replacing,
)
from harness.present.table import scenarios_down
from harness.scenario import VARIANT

__all__ = ["TIMELINE_OUTCOMES", "UNDRAWABLE", "Shown", "render_timeline", "shown", "timelines_to_draw", "write_report"]

#: The cases the report shows: the outcomes a policy fails by (a violation, or a case the evidence cannot decide).
TIMELINE_OUTCOMES = FAILING
#: What drawing a case's timeline raises when its recovery.json parses but its timeline was edited, or written by
#: something else: an entry of no known event or with other keys (``EventError``, a ValueError), a missing field,
#: a value of another type. The page says so in the picture's place; the rest of the report is drawn.
UNDRAWABLE: tuple[type[Exception], ...] = (ValueError, KeyError, TypeError, AttributeError)
#: The metrics the registry marks as shown: the safety properties first, then the measures.
TABLE_METRICS = tuple(m.name for m in sorted(METRICS, key=lambda m: m.kind != "property") if m.shown)

#: The page's title: what tells a report page from another file of its name (``_refuse_others``).
_TITLE = "<title>Recovery harness report</title>"
_STYLE = """
body { font-family: system-ui, sans-serif; margin: 24px; color: #263238; }
h1 { font-size: 22px; } h2 { font-size: 18px; margin-top: 32px; } h3 { font-size: 15px; margin-bottom: 4px; }
table { border-collapse: collapse; font-size: 12px; margin: 8px 0 16px; }
th, td { border: 1px solid #cfd8dc; padding: 4px 8px; text-align: left; }
th { background: #eceff1; }
pre { background: #f5f5f5; padding: 6px 8px; font-size: 12px; overflow-x: auto; }
.case { border-top: 1px solid #cfd8dc; padding-top: 8px; margin-top: 16px; }
.unknown { color: #8d6e00; } .anomaly { color: #b71c1c; }
.safe { color: #1b5e20; font-weight: bold; } .unsafe { color: #b71c1c; font-weight: bold; }
.undecided { color: #8d6e00; font-weight: bold; } .warning { background: #fff8e1; padding: 6px 8px; }
img { max-width: 100%; }
"""


def render_timeline(recovery_path: Path) -> Path | None:
    """Write ``timeline.png`` beside a case's ``recovery.json``; None for a case without a history."""
    report = json.loads(recovery_path.read_text(encoding="utf-8"))
    if not report.get("timeline"):
        return None
    return save_png(timeline(report), recovery_path.with_name("timeline.png"))


def _img(data: bytes, alt: str) -> str:
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{base64.b64encode(data).decode()}">'


def _table(frame: pd.DataFrame, table_id: str) -> str:
    """A policy x scenario table (a row per policy), turned where ``scenarios_down`` says, as the heatmap is."""
    if scenarios_down(len(frame.index), len(frame.columns)):
        frame = frame.T
    return str(frame.to_html(table_id=table_id, escape=True, border=0))


@dataclass(frozen=True, slots=True)
class Shown:
    """A policy's failing cases in one scenario with one outcome: the first (the lowest seed) is drawn, the
    others are listed under it."""

    first: pd.Series
    others: pd.DataFrame


def shown(frame: pd.DataFrame) -> list[Shown]:
    """The groups of incorrect, abandoned and unresolved cases, in the frame's order of first appearance."""
    failing = frame[frame["outcome"].isin(TIMELINE_OUTCOMES)]
    out = []
    for _, group in failing.groupby(["policy", "scenario", "outcome"], sort=False):
        ordered = group.sort_values("seed", kind="stable")
        out.append(Shown(ordered.iloc[0], ordered.iloc[1:]))
    return out


def timelines_to_draw(frame: pd.DataFrame) -> list[Path]:
    """The recovery.json files of the cases the page draws that have no ``timeline.png`` beside them yet (a case
    known only as a compact record is drawn into the page alone)."""
    paths = (Path(str(g.first["path"])) for g in shown(frame))
    return [p for p in paths if p.name == "recovery.json" and not p.with_name("timeline.png").exists()]


def _group(group: Shown, anchor: str, undrawn: list[str]) -> str:
    """The section of one group of failing cases; a timeline that cannot be drawn is said so, and added to
    ``undrawn`` (one line each)."""
    row = group.first
    path = Path(str(row["path"]))
    report: dict[str, Any] = read_case(path)
    cases = len(group.others) + 1
    title = f"{row['policy']} x {row['scenario']} seed {row['seed']}: {row['outcome']} (verdict {row['verdict']})"
    heading = title if cases == 1 else f"{title}, and {cases - 1} more {row['outcome']} (other seeds)"
    parts = [
        f'<div class="case" id="{anchor}"><h3>{html.escape(heading)}</h3>',
        f"<pre>{html.escape(str(report.get('reproduce', '')))}</pre>",
    ]
    for anomaly in report.get("anomalies", ()):
        witnesses = ", ".join(str(w) for w in anomaly["witnesses"])
        parts.append(
            f'<div class="anomaly">{html.escape(anomaly["kind"])}: {html.escape(anomaly["detail"])} '
            f"(entries {witnesses})</div>"
        )
    for metric, reason in report.get("unknown", {}).items():
        parts.append(f'<div class="unknown">unknown {html.escape(metric)}: {html.escape(reason)}</div>')
    if report.get("timeline"):
        picture = path.with_name("timeline.png")
        try:
            data = picture.read_bytes() if picture.exists() else png_bytes(timeline(report))
        except UNDRAWABLE as exc:
            why = f"{path}: {type(exc).__name__}: {exc}"
            undrawn.append(why)
            parts.append(
                f'<p class="warning">Timeline not drawn: {html.escape(why)}. The figures above come from its '
                "recovery.json; the command above runs the case again.</p>"
            )
        else:
            parts.append(_img(data, f"timeline of {title}"))
    if cases > 1:
        parts.append(_others(group.others))
    parts.append("</div>")
    return "\n".join(parts)


def _others(others: pd.DataFrame) -> str:
    """The group's other cases, the first ``REPORT_LISTED_MAX`` of them: seed, anomalies, unknowns, reproduce."""
    listed = others.iloc[:REPORT_LISTED_MAX]
    rows = [
        "<tr>"
        + "".join(
            f"<td>{html.escape(str(v))}</td>" for v in (r["seed"], r["anomalies"], r["unknown"] or "-", r["reproduce"])
        )
        + "</tr>"
        for _, r in listed.iterrows()
    ]
    more = len(others) - len(listed)
    tail = f"<p>and {more:,} more: summary.csv lists every case with its reproduce command.</p>" if more else ""
    return (
        '<table class="others"><thead><tr><th>seed</th><th>anomalies</th><th>unknown</th><th>reproduce</th></tr>'
        f"</thead><tbody>{''.join(rows)}</tbody></table>{tail}"
    )


def _grid_order(run_dir: Path) -> tuple[list[str], list[str]]:
    """The policies and the scenarios in the grid's order, as the run recorded them (the order the printed table
    used); none when run.json is missing or edited out of shape (the order is a courtesy: the report is drawn
    all the same)."""
    try:
        record = json.loads((run_dir / RUN_RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return [], []
    if not isinstance(record, dict):
        return [], []

    def names(key: str) -> list[str]:
        given = record.get(key, [])
        return [n for n in given if isinstance(n, str)] if isinstance(given, list) else []

    return names("policies"), names("scenarios")


def _verdicts(frame: pd.DataFrame, anchors: dict[str, str]) -> list[str]:
    """The page's first section: one row per policy, safe, unsafe or undecided over every case run."""
    rows = policy_verdicts(frame)
    head = ["policy", "verdict", "violated properties", "correct", "escalated", "abandoned", "incorrect",
            "unresolved", "harness errors", "cases", "first failure"]  # fmt: skip
    out = [
        "<h2>Verdict per policy</h2>",
        "<p><strong>safe</strong>: every case correct, or its unresolved action escalated to its owner in time; "
        "<strong>unsafe</strong>: a safety property violated, or an action abandoned; <strong>undecided</strong>: "
        "no violation seen, but the evidence could not decide some case.</p>",
        '<table id="verdicts"><thead><tr>' + "".join(f"<th>{h}</th>" for h in head) + "</tr></thead><tbody>",
    ]
    for _, r in rows.iterrows():
        anchor = anchors.get(str(r["first_failure_path"]))
        first = html.escape(str(r["first_failure"]))
        link = f'<a href="#{anchor}">{first}</a>' if anchor else first
        cells = [
            html.escape(str(r["policy"])),
            f'<span class="{r["verdict"]}">{r["verdict"]}</span>',
            html.escape(str(r["violated"])),
            *(str(r[o]) for o in ("correct", "escalated", "abandoned", "incorrect", "unresolved", "harness_error")),
            str(r["cases"]),
            link,
        ]
        out.append('<tr class="policy">' + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    out.append("</tbody></table>")
    return out


def _seeds(seeds: list[int]) -> str:
    """``seed 1``, ``seeds 1, 2, 3``, or, when many, ``seeds 1..5000 (5,000 seeds)``."""
    if len(seeds) == 1:
        return f"seed {seeds[0]}"
    if len(seeds) <= 20:
        return "seeds " + ", ".join(str(s) for s in seeds)
    return f"seeds {seeds[0]}..{seeds[-1]} ({len(seeds):,} seeds)"


def _count(n: int, noun: str, nouns: str | None = None) -> str:
    """``1 policy``, ``2 policies``."""
    return f"{n:,} {noun if n == 1 else nouns or noun + 's'}"


def _scenarios(frame: pd.DataFrame) -> str:
    """``2 scenarios``; where a scenario of crash points stands for several columns (one a crash point, named
    ``<scenario>-<point>``, run as ``--scenario <scenario>@<point>``), the scenarios as given and the columns:
    ``2 scenarios (5 columns: a crash point is a column)``."""
    columns = frame["scenario"].nunique()
    given = frame["reproduce"].str.extract(r"--scenario (\S+)", expand=False).fillna(frame["scenario"])
    scenarios = given.map(lambda spec: spec.rpartition(VARIANT)[0] or spec).nunique()
    if scenarios == columns:
        return _count(columns, "scenario")
    return f"{_count(scenarios, 'scenario')} ({columns:,} columns: a crash point is a column)"


def _errors(errors: pd.DataFrame) -> list[str]:
    """The cases the harness could not judge (over their wall-clock budget, their worker died): why, and the
    command that runs each again, the first ``REPORT_LISTED_MAX`` of them."""
    listed = errors.iloc[:REPORT_LISTED_MAX]
    rows = [
        f'<tr id="error-{i}">'
        + "".join(
            f"<td>{html.escape(str(v))}</td>"
            for v in (r["policy"], r["scenario"], r["seed"], r["error"] or "-", r["reproduce"])
        )
        + "</tr>"
        for i, (_, r) in enumerate(listed.iterrows())
    ]
    more = len(errors) - len(listed)
    tail = f"<p>and {more:,} more: summary.csv lists every case with its error.</p>" if more else ""
    return [
        f"<h2>Harness errors: {_count(len(errors), 'case')} the harness could not judge</h2>",
        "<p>Each ran over its wall-clock budget, or its worker process died (a policy that never returns or ends "
        "its process, or a harness failure); the command runs it again under the same budget.</p>",
        '<table id="errors"><thead><tr><th>policy</th><th>scenario</th><th>seed</th><th>error</th>'
        f"<th>reproduce</th></tr></thead><tbody>{''.join(rows)}</tbody></table>{tail}",
    ]


def _refuse_others(run_dir: Path, out: Path) -> None:
    """Refuse, before anything is written, to write the page over a file that is not a report page, or its
    heatmap over a picture the harness did not draw; a run folder's own ``report.html``, and any ``heatmap.png``
    in it, are the run's to write. A page written elsewhere (``--out``) wrote over whatever had those names, and
    so did one written into a folder of the user's that only holds recovery.json files (a Polyaxon user's review:
    their own report.html and heatmap.png replaced, exit 0)."""
    ours = _a_run_folder(run_dir)
    own = run_dir / REPORT_HTML
    if out.is_file() and not out.is_symlink() and not (ours and own.is_file() and out.samefile(own)):
        with out.open("rb") as file:
            head = file.read(1024)
        if _TITLE.encode() not in head:
            raise ValueError(
                f"{out}: exists and is not a report page the harness wrote; fix: give a new file name, or remove it"
            )
    heat = out.with_name("heatmap.png")
    if (
        heat.is_file()
        and not heat.is_symlink()
        and not drawn_here(heat)
        and not (ours and heat.parent.samefile(run_dir))
    ):
        raise ValueError(
            f"{heat}: exists and is not a heatmap the harness drew (the page writes one beside it); fix: write the "
            "page in another folder, or remove it"
        )


def _a_run_folder(folder: Path) -> bool:
    """Whether ``folder`` is a run folder a harness run wrote (its manifest is there)."""
    return (folder / MANIFEST).is_file()


def write_report(
    run_dir: Path,
    out: Path | None = None,
    order: Sequence[str] | None = None,
    draw: Callable[[Sequence[Path]], object] | None = None,
    tell: Callable[[str], object] | None = None,
    progress: Callable[[Reading], object] | None = None,
) -> Path:
    """Write ``report.html`` (and ``heatmap.png``) for every case under ``run_dir``; return the page's path.

    ``draw`` is given the recovery.json files whose timeline the page shows and that have none drawn yet, to
    draw them first (``harness run`` and ``harness report`` draw them in worker processes); whatever is still
    missing then is drawn into the page alone. ``tell`` is given a line about files left out as unreadable
    (the page lists them all). ``progress`` is told how far reading the cases has got (see ``load``)."""
    frame = load(run_dir, progress=progress)
    if frame.empty:
        skipped = frame.attrs.get("skipped") or []
        if skipped:  # files were there, and none could be read: say why the first could not
            first = skipped[0]
            more = f" (and {len(skipped) - 1} more unreadable)" if len(skipped) > 1 else ""
            raise ValueError(
                f"{run_dir}: no case could be read: {first.path}: {first.reason}{more}; fix: give a folder written "
                "by this version of 'harness run'"
            )
        raise ValueError(f"{run_dir}: no recovery.json found; fix: give a folder written by 'harness run'")
    policies, scenarios = _grid_order(run_dir)
    frame = order_policies(frame, order if order is not None else policies, scenarios)
    groups = shown(frame)
    # Every failing case links to its group's section (the verdict table names the first failure).
    anchors = {str(path): f"case-{i}" for i, g in enumerate(groups) for path in (g.first["path"], *g.others["path"])}
    drawn_cases = len(anchors)  # the cases the timelines' section shows; the harness errors are listed apart
    errors = frame[frame["outcome"] == "harness_error"]
    cell = list(zip(errors["policy"], errors["scenario"], strict=True))
    rank = {key: i for i, key in enumerate(dict.fromkeys(cell))}  # the frame's order of cells, then by seed
    errors = errors.assign(_cell=[rank[key] for key in cell]).sort_values(["_cell", "seed"], kind="stable")
    anchors.update({str(path): f"error-{i}" for i, path in enumerate(errors["path"])})
    out = out or run_dir / REPORT_HTML
    refuse_folder(out)  # before the heatmap is written beside it
    _refuse_others(run_dir, out)
    if draw is not None:
        missing = timelines_to_draw(frame)
        if missing:
            draw(missing)
    had_heatmap = out.with_name("heatmap.png").exists()
    heat = save_png(heatmap(frame), out.with_name("heatmap.png"))
    skipped = frame.attrs.get("skipped", [])
    if skipped and tell is not None:
        first = skipped[0]
        more = f" (and {len(skipped) - 1} more)" if len(skipped) > 1 else ""
        tell(
            f"{len(skipped)} {'file' if len(skipped) == 1 else 'files'} left out, unreadable or of another schema "
            f"(the report lists them): {first.path}: {first.reason}{more}"
        )
    clashes = frame.attrs.get("clashes", [])
    if clashes and tell is not None:
        more = f" (and {len(clashes) - 1} more)" if len(clashes) > 1 else ""
        tell(
            f"{len(clashes)} {'case shares its name' if len(clashes) == 1 else 'cases share their names'} with "
            f"another case under {run_dir}, both kept (the report lists them): {clashes[0].path}{more}"
        )
    body = [
        "<!doctype html>",
        f'<html lang="en"><head><meta charset="utf-8">{_TITLE}',
        f"<style>{_STYLE}</style></head><body>",
        "<h1>Recovery harness report</h1>",
        f"<p>{_count(len(frame), 'case')} from <code>{html.escape(str(run_dir))}</code>: "
        f"{_count(frame['policy'].nunique(), 'policy', 'policies')} x "
        f"{_scenarios(frame)}, {_seeds(sorted(frame['seed'].dropna().unique()))}.</p>",
    ]
    for folder in frame.attrs.get("incomplete", []):
        body.append(
            f'<p class="warning"><strong>Incomplete:</strong> the run in <code>{html.escape(folder)}</code> was '
            "stopped before it ended, so this page shows only the cases it finished. Complete it with "
            f"<code>python -m harness run --resume {html.escape(shlex.quote(str(Path(folder).absolute())))}</code>.</p>"
        )
    if clashes:
        body.append(
            '<p class="warning"><strong>Two cases under one name:</strong> these cases have the policy, scenario, '
            "revisions and seed of another case in this folder, and other results (two runs of one cell, say): both "
            "are counted. Report each run's folder on its own to tell them apart.</p><ul>"
        )
        body += [f"<li>{html.escape(c.path)}: {html.escape(c.reason)}</li>" for c in clashes]
        body.append("</ul>")
    body += _verdicts(frame, anchors)
    if skipped:
        body.append("<p>Skipped files:</p><ul>")
        body += [f"<li>{html.escape(s.path)}: {html.escape(s.reason)}</li>" for s in skipped]
        body.append("</ul>")
    body += [
        "<h2>Outcomes</h2>",
        _img(heat.read_bytes(), "heatmap of outcomes per policy and scenario"),
        _table(outcome_counts(frame), "outcomes"),
        "<h2>Correct rate over seeds</h2>",
        f"<p>Correct cases over the seeds. From {RATE_MIN_CASES} cases in a cell: the rate, its Wilson 95% interval "
        "and pass^3 (the chance that 3 runs all end correct); below that, the count, and <em>same at every seed</em> "
        "when the seeds changed nothing (more seeds would say no more). Then how many cases the evidence could not "
        "decide: no evidence is not the same as no problem.</p>",
        _table(rate_table(frame), "rates"),
        "<h2>Metrics</h2>",
        "<p>Mean over seeds (range when they differ); <em>unknown</em> where the evidence could not establish it.</p>",
    ]
    for metric in TABLE_METRICS:
        body += [f"<h3>{metric}</h3>", _table(metric_table(frame, metric), f"metric-{metric}")]
    body += [
        f"<h2>Timelines of the {drawn_cases} incorrect, abandoned or unresolved cases</h2>",
        f"<p>One per policy, scenario and outcome ({len(groups)}): the case with the lowest seed, the group's other "
        f"cases listed under it (the first {REPORT_LISTED_MAX}).</p>",
    ]
    undrawn: list[str] = []
    body += [_group(g, f"case-{i}", undrawn) for i, g in enumerate(groups)]
    if not errors.empty:
        body += _errors(errors)
    body.append("</body></html>")
    try:
        write_replacing(out, ("\n".join(body) + "\n").encode("utf-8"))
    except OSError:
        if not had_heatmap:  # nothing half-written left behind: the picture is the page's
            heat.unlink(missing_ok=True)
        raise
    if undrawn and tell is not None:
        more = f" (and {len(undrawn) - 1} more)" if len(undrawn) > 1 else ""
        tell(
            f"{len(undrawn)} {'timeline' if len(undrawn) == 1 else 'timelines'} not drawn, the case's timeline "
            f"unreadable (the report says so in its place): {undrawn[0]}{more}"
        )
    return out
