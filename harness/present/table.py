"""The policy x scenario table of outcomes that ``harness run`` prints (plain text, no pandas)."""

from __future__ import annotations

from collections.abc import Sequence

from harness.model import CaseReport

__all__ = ["outcome_table"]


def outcome_table(reports: Sequence[CaseReport], policies: Sequence[str], scenarios: Sequence[str]) -> str:
    """A policy x scenario table of outcomes; a cell whose seeds disagree shows each outcome's count."""
    cells: dict[tuple[str, str], list[str]] = {}
    for r in reports:
        cells.setdefault((r.policy, r.scenario), []).append(r.outcome)

    def cell(p: str, s: str) -> str:
        outcomes = cells.get((p, s), [])
        if not outcomes:
            return "-"
        distinct = sorted(set(outcomes), key=outcomes.index)
        if len(distinct) == 1:
            return distinct[0]
        return " ".join(f"{o}:{outcomes.count(o)}" for o in distinct)

    header = ["policy \\ scenario", *scenarios]
    rows = [[p, *(cell(p, s) for s in scenarios)] for p in policies]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip() for row in [header, *rows]]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
