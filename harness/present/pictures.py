"""Pictures: a policy x scenario heatmap of outcomes, and a per-case timeline drawn as a sequence diagram.

Both return matplotlib figures (the Agg backend: no screen needed); ``save_png`` writes one to a file.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import matplotlib

# Headless by default; inside a Jupyter kernel keep its inline backend, so figures show in the notebook.
if "ipykernel" not in sys.modules:
    matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from harness.errors import InputError, one_line
from harness.limits import TIMELINE_DRAWN_MAX
from harness.model import events
from harness.model.events import (
    CommandGiven,
    DispatchSent,
    Event,
    FaultInjected,
    LookupSent,
    ReplyReceived,
    ReplyUndeliverable,
    WaitCapped,
    event_data,
)
from harness.present.analysis import undecided_cases
from harness.present.table import scenarios_down
from harness.scenario import BOUNDARIES, Side

__all__ = ["COLOURS", "LANES", "heatmap", "png_bytes", "refuse_folder", "save_png", "timeline", "write_replacing"]

COLOURS = {
    "correct": "#4caf50",
    "escalated": "#64b5f6",
    "unresolved": "#ffb300",
    "abandoned": "#fb8c00",
    "incorrect": "#e53935",
    "harness_error": "#757575",
    "mixed": "#8e7cc3",
}
#: One lane per actor, left to right in the order a request travels.
LANES = ("operator", "controller", "worker", "transport", "bridge", "connector", "destination")


def heatmap(frame: pd.DataFrame, title: str = "Outcome per policy x scenario") -> Figure:
    """Each cell: the outcome over its seeds (one colour when they agree, violet when mixed), the count per
    outcome, and how many cases left a safety property unknown. Scenarios run down the side where
    ``scenarios_down`` says, as in the run's printed table."""
    policies = list(dict.fromkeys(frame["policy"]))
    scenarios = list(dict.fromkeys(frame["scenario"]))
    down = scenarios_down(len(policies), len(scenarios))
    rows, columns = (scenarios, policies) if down else (policies, scenarios)
    fig, ax = plt.subplots(figsize=(1.9 * len(columns) + 2.6, (0.7 if down else 0.9) * len(rows) + 1.6), dpi=100)
    cells = {key: group for key, group in frame.groupby(["policy", "scenario"], sort=False, observed=True)}
    for i, row in enumerate(rows):
        for j, column in enumerate(columns):
            cases = cells.get((column, row) if down else (row, column), frame.iloc[:0])
            outcomes = list(cases["outcome"])
            kinds = sorted(set(outcomes), key=outcomes.index)
            colour = COLOURS["mixed"] if len(kinds) > 1 else COLOURS.get(kinds[0], "#ffffff") if kinds else "#ffffff"
            ax.add_patch(Rectangle((j, i), 1, 1, facecolor=colour, edgecolor="white", linewidth=2))
            lines = [f"{o} {outcomes.count(o)}" for o in kinds] or ["-"]
            unknown = undecided_cases(cases)
            if unknown:
                lines.append(f"unknown x{unknown}")
            ax.text(j + 0.5, i + 0.5, "\n".join(lines), ha="center", va="center", fontsize=8)
    ax.set_xlim(0, len(columns))
    ax.set_ylim(len(rows), 0)
    ticks = [j + 0.5 for j in range(len(columns))]
    if down:
        ax.set_xticks(ticks, columns, fontsize=8)
    else:
        ax.set_xticks(ticks, columns, rotation=30, ha="right", fontsize=8)
    ax.set_yticks([i + 0.5 for i in range(len(rows))], rows, fontsize=8)
    # A tall picture names its columns (the policies, whose names fit a column unturned) above and below.
    ax.tick_params(length=0, labeltop=down)
    for side in ax.spines.values():
        side.set_visible(False)
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig


#: Inches between two lanes, and the average width of a character of a 7-point label.
_LANE_IN = 11 * 0.98 / (len(LANES) + 1.1)
_CHAR_IN = 0.058


def _label(event: Event) -> str:
    match event:
        case FaultInjected():
            return f"FAULT {event.boundary} (#{event.occurrence})"
        case CommandGiven():
            return f"policy: {event.command.kind}"
        case WaitCapped():
            return f"wait capped: {event.waited_s:g} s of {event.asked_s:g} s asked"
        case DispatchSent():
            return f"dispatch #{event.n} {event.execution_id}"
        case LookupSent():
            return f"lookup #{event.n}"
        case ReplyReceived() | ReplyUndeliverable():
            return f"reply {event.kind} #{event.n}: {event.status}"
    data = event_data(event)
    keys = ("revision", "model", "ok", "receipt_id", "effect", "reason", "claimed", "error")
    # A policy's text (a reason, an error) on one line, whatever it holds, and every character of it one the fonts
    # draw: a control character (an escape sequence a policy's error held, say) is shown escaped, as the reproduce
    # line shows it, and not left for matplotlib to warn of a glyph it lacks.
    detail = " ".join(f"{k}={_printable(one_line(data[k], LABEL_MAX))}" for k in keys if data.get(k) is not None)
    said = f"{event.event} {detail}"
    return said if len(said) <= LABEL_MAX else said[: LABEL_MAX - 3] + "..."


#: The longest label an entry gets; a longer one is cut, ``...`` marking the cut (the recovery.json keeps it all).
LABEL_MAX = 70


def _printable(text: str) -> str:
    """``text`` with each character that does not print (``\x1b``, say) written as its escape."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


#: The lane of a fault: the side of the wire its boundary is on.
_FAULT_LANE: dict[Side, str] = {"caller": "worker", "wire": "transport", "destination": "destination"}


def _lane(event: Event) -> str:
    if isinstance(event, FaultInjected):
        boundary = BOUNDARIES.get(event.boundary)
        return _FAULT_LANE[boundary.side] if boundary else "transport"
    return event.actor if event.actor in LANES else "transport"


def timeline(report: dict[str, Any]) -> Figure:
    """The case's history as a sequence diagram: one lane per actor, time running down, requests and replies
    as arrows between worker and destination, faults in red, anomaly witnesses highlighted in yellow."""
    everything = events(report["timeline"])
    witnesses = {i for a in report.get("anomalies", ()) for i in a["witnesses"]}
    # A bounded picture: the first entries, and every witness and fault after them (the rest are counted).
    entries = [
        e
        for n, e in enumerate(everything)
        if n < TIMELINE_DRAWN_MAX or e.index in witnesses or isinstance(e, FaultInjected)
    ][: 2 * TIMELINE_DRAWN_MAX]
    left_out = len(everything) - len(entries)
    rows = max(len(entries), 1)
    x = {lane: i for i, lane in enumerate(LANES)}
    title = (
        f"{report['policy']} x {report['scenario']} seed {report['seed']}: {report['outcome']} "
        f"(verdict {report['verdict']})"
    )
    if left_out:
        title += f"; {left_out} of {len(everything)} entries not drawn (recovery.json has them all)"
    # Lanes keep their spacing; the picture widens until the longest label, and the title (10-point, from the left
    # edge), ends inside it (nothing is cut).
    left, right = -1.3, len(LANES) - 0.2
    ends = [x[_lane(e)] + 0.08 + len(_label(e)) * _CHAR_IN / _LANE_IN for e in entries]
    ends.append(left + len(title) * _CHAR_IN * 10 / 7 / _LANE_IN)
    right = max([right, *ends]) + 0.1
    fig, ax = plt.subplots(figsize=((right - left) * _LANE_IN / 0.98, 0.26 * rows + 1.6), dpi=80)
    for lane, i in x.items():
        ax.plot([i, i], [-0.5, rows - 0.5], color="#cfd8dc", linewidth=1, zorder=0)
        ax.text(i, -0.8, lane, ha="center", va="bottom", fontsize=9, fontweight="bold")
    for row, entry in enumerate(entries):
        lane = _lane(entry)
        y = row
        if entry.index in witnesses:
            ax.add_patch(
                Rectangle((-0.6, y - 0.45), len(LANES) + 0.2, 0.9, facecolor="#fff59d", edgecolor="none", zorder=0)
            )
        ax.text(-0.65, y, f"{entry.at_s:.3f}s", ha="right", va="center", fontsize=7, color="#546e7a")
        if isinstance(entry, DispatchSent | LookupSent | ReplyReceived | ReplyUndeliverable):
            sent = isinstance(entry, DispatchSent | LookupSent)
            start, end = (x["worker"], x["destination"]) if sent else (x["destination"], x["worker"])
            colour = "#90a4ae" if isinstance(entry, ReplyUndeliverable) else "#1e88e5"
            ax.annotate(
                "", xy=(end, y), xytext=(start, y), arrowprops={"arrowstyle": "->", "color": colour, "linewidth": 1.2}
            )
            ax.text(
                (start + end) / 2,
                y - 0.12,
                _label(entry),
                ha="center",
                va="bottom",
                fontsize=7,
                color=colour,
                parse_math=False,
            )
            continue
        if isinstance(entry, FaultInjected):
            ax.plot(x[lane], y, marker="X", markersize=10, color="#d50000", zorder=3)
            ax.text(
                x[lane] + 0.08,
                y,
                _label(entry),
                va="center",
                fontsize=7,
                color="#d50000",
                fontweight="bold",
                parse_math=False,
            )
            continue
        ax.plot(x[lane], y, marker="o", markersize=4, color="#37474f", zorder=3)
        ax.text(x[lane] + 0.08, y, _label(entry), va="center", fontsize=7, parse_math=False)
    ax.set_xlim(left, right)
    ax.set_ylim(rows - 0.3, -1.6)
    ax.axis("off")
    ax.set_title(title, fontsize=10, loc="left")
    # Fixed margins: tight_layout would draw the whole figure twice.
    top = 1 - 0.45 / fig.get_figheight()
    fig.subplots_adjust(left=0.01, right=0.99, top=top, bottom=0.01)
    return fig


#: What every PNG the harness draws says it was made by (its ``Software`` text): a picture of its own can be told
#: from a user's file of the same name before it is written over (``drawn_here``).
PNG_SOFTWARE = f"recovery harness (Matplotlib {matplotlib.__version__})"


def png_bytes(fig: Figure) -> bytes:
    import io

    buffer = io.BytesIO()
    # Glyphs drawn unhinted: a sixth less time for a timeline (most of it goes into drawing its text), the
    # text as legible at this size.
    with matplotlib.rc_context({"text.hinting": "none"}):
        fig.savefig(buffer, format="png", metadata={"Software": PNG_SOFTWARE})
    plt.close(fig)
    return buffer.getvalue()


def drawn_here(path: Path) -> bool:
    """Whether ``path`` is a PNG the harness drew: its ``Software`` text, which matplotlib writes before the
    pixels, says so."""
    try:
        with path.open("rb") as file:
            head = file.read(512)
    except OSError:
        return False
    return head.startswith(b"\x89PNG") and b"Software\x00recovery harness " in head


def save_png(fig: Figure, path: Path) -> Path:
    """Write the picture through a temporary file and a rename: a picture that exists is never drawn again, so a
    worker stopped while writing one must not leave half of it (a resumed run removes the ``.*.tmp`` left)."""
    return write_replacing(path, png_bytes(fig))


def refuse_folder(path: Path) -> None:
    """Refuse, one line, a folder where a file is to be written."""
    if path.is_dir() and not path.is_symlink():
        raise InputError(f"{path}: is a folder, where this writes a file; fix: move it away, then run this again")


def write_replacing(path: Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` through a temporary file and a rename: no reader sees half of it, and a link at
    ``path`` is replaced, never followed to write somewhere else. A folder in the way is refused, one line."""
    refuse_folder(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError) and exc.filename is None:
            exc.filename = str(path)  # a full disk says so on a write, with no file's name: the one being written
        raise
    return path
