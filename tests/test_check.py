"""Verdict composition: false beats unknown beats true, and a crashing checker is unknown."""

from __future__ import annotations

from conftest import OPENING, history

from harness.check import check, compose
from harness.check.finding import Finding


def test_compose_orders_false_unknown_true() -> None:
    """false > unknown > true, and nothing to judge is true."""
    assert compose(["true", "unknown", "false"]) == "false"
    assert compose(["true", "unknown"]) == "unknown"
    assert compose(["true", "true"]) == "true"
    assert compose([]) == "true"


def test_crashing_checker_yields_unknown_not_true() -> None:
    """A checker that raises makes the case unknown and unresolved, never correct."""

    def broken(_facts: object) -> Finding:
        raise RuntimeError("boom")

    judgement = check(history(OPENING), properties={"broken": broken})
    assert judgement.verdict == "unknown"
    assert judgement.outcome == "unresolved"
    assert "boom" in judgement.unknown["broken"]


def test_violation_beats_crash() -> None:
    """A witnessed violation makes the verdict false even when another checker crashed."""

    def broken(_facts: object) -> Finding:
        raise RuntimeError("boom")

    def violated(_facts: object) -> Finding:
        return Finding(1)

    judgement = check(history(OPENING), properties={"broken": broken, "violated": violated})
    assert (judgement.verdict, judgement.outcome) == ("false", "incorrect")
