"""What one checker function returns: its value, the anomalies that witness a violation, or why it is unknown."""

from __future__ import annotations

from typing import NamedTuple

from harness.model import Anomaly, MetricValue

__all__ = ["HIDDEN", "NOTHING_FOUND", "Finding", "counted"]

#: The reason a value that only the destination's ledger could establish is unknown.
HIDDEN = "the destination's ledger is unavailable to the checker"


class Finding(NamedTuple):
    """``value`` is ``None`` exactly when the evidence cannot establish it; ``reason`` then says why. A named
    tuple, as ``CheckResult`` is: every checker function returns one for every case."""

    value: MetricValue
    anomalies: tuple[Anomaly, ...] = ()
    reason: str | None = None


#: A count with nothing found, what most checkers find in most cases: one record serves them all (a named tuple is
#: immutable), as building one costs about as much as a small checker's own work.
NOTHING_FOUND = Finding(0)


def counted(anomalies: list[Anomaly]) -> Finding:
    """A count whose value is the number of anomalies found."""
    return Finding(len(anomalies), tuple(anomalies)) if anomalies else NOTHING_FOUND
