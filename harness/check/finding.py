"""What one checker function returns: its value, the anomalies that witness a violation, or why it is unknown."""

from __future__ import annotations

from dataclasses import dataclass

from harness.model import Anomaly, MetricValue

__all__ = ["HIDDEN", "Finding", "counted"]

#: The reason a value that only the destination's ledger could establish is unknown.
HIDDEN = "the destination's ledger is unavailable to the checker"


@dataclass(frozen=True, slots=True)
class Finding:
    """``value`` is ``None`` exactly when the evidence cannot establish it; ``reason`` then says why."""

    value: MetricValue
    anomalies: tuple[Anomaly, ...] = ()
    reason: str | None = None


def counted(anomalies: list[Anomaly]) -> Finding:
    """A count whose value is the number of anomalies found."""
    return Finding(len(anomalies), tuple(anomalies))
