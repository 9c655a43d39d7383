"""The policy x scenario table of outcomes that ``harness run`` prints (plain text, no pandas)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from harness.model import OUTCOMES

__all__ = ["outcome_table", "scenarios_down"]


def scenarios_down(policies: int, scenarios: int) -> bool:
    """Whether a policy x scenario table or picture puts the scenarios down its side, a row each: when there are
    more of them than policies, so that it grows downwards with the scenarios, not sideways (the default grid's
    seventy scenario columns made lines of 1,700 characters in a CI log and a heatmap 14,000 pixels wide)."""
    return scenarios > policies


def outcome_table(
    counts: Mapping[tuple[str, str], Mapping[str, int]], policies: Sequence[str], scenarios: Sequence[str]
) -> str:
    """A table of outcomes with a row per policy and a column per scenario, or a row per scenario and a column
    per policy where ``scenarios_down`` says. A cell whose seeds disagree shows each outcome's count (in the order
    of ``OUTCOMES``, best first)."""

    def cell(p: str, s: str) -> str:
        found = {o: n for o, n in (counts.get((p, s)) or {}).items() if n}
        if not found:
            return "-"
        if len(found) == 1:
            return next(iter(found))
        return " ".join(f"{o}:{found[o]}" for o in OUTCOMES if o in found)

    if scenarios_down(len(policies), len(scenarios)):
        header = ["scenario \\ policy", *policies]
        rows = [[s, *(cell(p, s) for p in policies)] for s in scenarios]
    else:
        header = ["policy \\ scenario", *scenarios]
        rows = [[p, *(cell(p, s) for s in scenarios)] for p in policies]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip() for row in [header, *rows]]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
