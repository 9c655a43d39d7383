"""The comparison statistics and tables people read to compare recovery policies (harness.present.analysis), the
outcome table ``harness run`` prints (harness.present.table) and the loader's check of one case
(harness.present.shape): what the thirty-eighth mutation pass found untested (tests/MUTANTS.md). Frames are built
by hand, a case a row, through the loader's own ``_frame`` (so the dtypes are the loader's); each test states the
rule and checks whole values, in order."""

from __future__ import annotations

import functools
import json
import math
import tracemalloc
from pathlib import Path
from typing import Any

import jsonschema
import pandas as pd
import pytest

from harness.check.registry import METRICS, PROPERTIES
from harness.model import OUTCOMES, SCHEMA_VERSION
from harness.model.events import EntryShape
from harness.present.analysis import (
    PASSING,
    RATE_MIN_CASES,
    _apart,
    _columns,
    _frame,
    _keep_revisions_apart,
    _pivot,
    compare_runs,
    metric_table,
    order_policies,
    outcome_counts,
    pass_k,
    percent,
    policy_verdicts,
    rate_table,
    rates,
    undecided,
    undecided_cases,
    wilson_interval,
)
from harness.present.shape import MalformedCase, _data_shape, checked_case, recovery_schema
from harness.present.table import outcome_table, scenarios_down

ROOT = Path(__file__).resolve().parent.parent
_DEFAULTS = {"flag": False, "count": 0, "duration": 1.0}


def case(policy: str = "p", scenario: str = "s", seed: int = 1, outcome: str = "correct", **fields: Any) -> dict:
    """One row as the loader makes it: every metric known (0, False, 1.0 s) unless ``fields`` says otherwise."""
    row: dict[str, Any] = {
        "source": "run",
        "path": f"cases/{policy}/{scenario}/seed-{seed}/recovery.json",
        "polyaxon_run": None,
        "policy": policy,
        "policy_revision": "r1",
        "scenario": scenario,
        "scenario_revision": "r1",
        "seed": seed,
        "task_id": "task",
        "action_id": "action",
        "outcome": outcome,
        "verdict": "v",
        **{m.name: _DEFAULTS[m.value] for m in METRICS},
        "violated": "",
        "unknown_metrics": "",
        "unknown": "",
        "anomalies": 0,
        "attempts": 1,
        "reproduce": "harness replay",
        "error": None,
    }
    assert set(fields) <= set(row), set(fields) - set(row)
    row.update(fields)
    return row


def frame(*rows: dict) -> pd.DataFrame:
    return _frame({column: [row[column] for row in rows] for column in _columns()})


def wilson_reference(successes: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """The Wilson bounds as the roots of (p̂ - p)² = z² p (1 - p) / n, solved for p (another derivation)."""
    a, b, c = n + z * z, -(2 * successes + z * z), successes * successes / n
    root = math.sqrt(b * b - 4 * a * c)
    return ((-b - root) / (2 * a), (-b + root) / (2 * a))


# --- wilson_interval, pass_k, undecided, percent ----------------------------------------------------------------


def test_the_wilson_bounds_are_the_roots_of_the_score_equation() -> None:
    """Rule: Wilson's 95% bounds (z = 1.959964) for s of n are the two roots of the score equation; at 0 of n the
    low bound is exactly 0, at n of n the high one exactly 1; nan for no case."""
    for successes, n in ((8, 10), (1, 4), (19, 20), (5, 40), (1, 2), (2, 3)):
        assert wilson_interval(successes, n) == pytest.approx(wilson_reference(successes, n), rel=1e-12, abs=1e-15)
    assert wilson_interval(8, 10) == pytest.approx((0.4901624691221323, 0.9433178490622331), rel=1e-12)
    assert wilson_interval(8, 10, z=1.0) == pytest.approx(wilson_reference(8, 10, 1.0), rel=1e-12)
    assert wilson_interval(8, 10, z=1.0) == pytest.approx((0.649077540829678, 0.8963770046248676), rel=1e-12)
    low, high = wilson_interval(0, 3)
    assert low == 0.0 and high == pytest.approx(wilson_reference(0, 3)[1], rel=1e-12)
    low, high = wilson_interval(3, 3)
    assert high == 1.0 and low == pytest.approx(wilson_reference(3, 3)[0], rel=1e-12)
    low, high = wilson_interval(1, 1)
    assert high == 1.0 and low == pytest.approx(0.2065493117918027, rel=1e-12)
    low, high = wilson_interval(0, 1)
    assert low == 0.0 and high == pytest.approx(0.7934506882081973, rel=1e-12)
    assert all(math.isnan(v) for v in wilson_interval(0, 0))
    assert all(math.isnan(v) for v in wilson_interval(0, 0, z=1.0))


def test_pass_k_is_the_chance_that_k_of_the_runs_drawn_all_pass() -> None:
    """Rule: pass^k = C(s, k) / C(n, k); nan when k < 1 or fewer than k runs."""
    assert pass_k(3, 4, 3) == 0.25
    assert pass_k(19, 20, 3) == 969 / 1140
    assert pass_k(3, 3, 1) == 1.0 and pass_k(2, 4, 1) == 0.5
    assert pass_k(3, 3, 3) == 1.0 and pass_k(2, 3, 3) == 0.0
    assert pass_k(5, 6, 2) == 10 / 15
    assert math.isnan(pass_k(1, 2, 3)) and math.isnan(pass_k(3, 3, 0)) and math.isnan(pass_k(0, 0, 0))
    assert math.isnan(pass_k(2, 2, -1))


def test_a_case_is_undecided_when_its_unknown_metrics_name_a_safety_property() -> None:
    """Rule: ``unknown_metrics`` is the names joined by ``, ``; any one of them a property makes the case undecided,
    whatever its place; names of other metrics, or none, do not."""
    first, last = PROPERTIES[0].name, PROPERTIES[-1].name
    assert undecided(first) and undecided(last)
    assert undecided(f"{first}, reads") and undecided(f"reads, {last}") and undecided(f"dispatches, {first}, reads")
    assert not undecided("") and not undecided("reads") and not undecided("reads, dispatches, time_to_account_s")
    assert not undecided(f"{first}s") and not undecided(f"x{first}")


def test_a_percentage_gets_the_decimals_it_takes_not_to_read_as_none_or_all() -> None:
    """Rule: whole when that reads neither 0% nor 100% (or it is 0, 1 or outside them); else up to 3 decimals;
    else ``<0.001%`` below a half and ``>99.999%`` above."""
    assert [percent(x) for x in (0.0, 1.0, 0.5, 0.764, 0.991, 1.5, -0.25)] == [
        "0%",
        "100%",
        "50%",
        "76%",
        "99%",
        "150%",
        "-25%",
    ]
    assert [percent(x) for x in (0.004, 0.0004, 0.00004, 0.000004, 0.996, 0.9996, 0.99996, 0.999996)] == [
        "0.4%",
        "0.04%",
        "0.004%",
        "<0.001%",
        "99.6%",
        "99.96%",
        "99.996%",
        ">99.999%",
    ]


# --- rates and rate_table ------------------------------------------------------------------------------------------


def test_rates_count_each_cell_with_its_interval_pass_k_and_undecided_cases() -> None:
    """Rule: a row per (policy, scenario) in the frame's order, with its cases, the count and rate of the outcome
    asked for, the Wilson bounds, pass^k and how many cases left a safety property unknown."""
    prop = PROPERTIES[1].name
    cases = frame(
        case("p1", "s1", 1),
        case("p1", "s1", 2, unknown_metrics=f"reads, {prop}"),
        case("p1", "s2", 1, "incorrect"),
        case("p1", "s1", 3, "escalated", unknown_metrics="reads"),
        case("p0", "s1", 1),
        case("p1", "s1", 4, unknown_metrics=prop),
    )
    r = rates(cases)
    assert list(r.columns) == [
        "policy",
        "scenario",
        "cases",
        "correct",
        "rate",
        "wilson_low",
        "wilson_high",
        "pass^3",
        "unknown",
    ]
    assert r[["policy", "scenario", "cases", "correct", "unknown"]].values.tolist() == [
        ["p1", "s1", 4, 3, 2],
        ["p1", "s2", 1, 0, 0],
        ["p0", "s1", 1, 1, 0],
    ]
    assert list(r["rate"]) == [0.75, 0.0, 1.0]
    assert list(r["wilson_low"]) == pytest.approx([wilson_reference(3, 4)[0], 0.0, wilson_reference(1, 1)[0]])
    assert list(r["wilson_high"]) == pytest.approx([wilson_reference(3, 4)[1], wilson_reference(0, 1)[1], 1.0])
    assert r["pass^3"][0] == 0.25 and r["pass^3"][1:].isna().all()
    escalated = rates(cases, "escalated", k=2)
    assert list(escalated.columns) == [
        "policy",
        "scenario",
        "cases",
        "escalated",
        "rate",
        "wilson_low",
        "wilson_high",
        "pass^2",
        "unknown",
    ]
    assert list(escalated["escalated"]) == [1, 0, 0] and list(escalated["rate"]) == [0.25, 0.0, 0.0]
    assert list(escalated["pass^2"][:1]) == [0.0]
    assert list(rates(cases, k=1)["pass^1"]) == [0.75, 0.0, 1.0]
    assert rates(frame()).empty


def test_a_cell_of_few_cases_is_a_count_with_same_at_every_seed_and_its_undecided_cases() -> None:
    """Rule: below RATE_MIN_CASES a cell is ``hits/cases``, then ``· same at every seed`` when there are several
    cases and their outcome and counts and flags agree (durations may differ; an unknown value is a value of its
    own), then ``· n unknown`` for the cases that left a safety property unknown."""
    prop = PROPERTIES[0].name
    flag = next(m.name for m in METRICS if m.value == "flag")
    count = next(m.name for m in METRICS if m.value == "count")
    cases = frame(
        case("a", "steady", 1, time_to_account_s=1.0),
        case("a", "steady", 2, time_to_account_s=2.5),
        case("a", "steady", 3, time_to_account_s=None),
        case("a", "one", 1),
        case("a", "outcomes", 1),
        case("a", "outcomes", 2, "escalated"),
        case("a", "counts", 1, **{count: 1}),
        case("a", "counts", 2, **{count: 2}),
        case("a", "flags", 1, **{flag: True}),
        case("a", "flags", 2, **{flag: False}),
        case("a", "unknown", 1, **{prop: 0}),
        case("a", "unknown", 2, **{prop: None}, unknown_metrics=prop),
        case("b", "steady", 1, "escalated", unknown_metrics=prop),
        case("b", "steady", 2, "escalated", unknown_metrics=prop),
    )
    table = rate_table(cases)
    assert list(table.index) == ["a", "b"]
    assert list(table.columns) == ["steady", "one", "outcomes", "counts", "flags", "unknown"]
    assert table.loc["a"].tolist() == [
        "3/3 · same at every seed",
        "1/1",
        "1/2",
        "2/2",
        "2/2",
        "2/2 · 1 unknown",
    ]
    assert table.loc["b"].tolist() == ["0/2 · same at every seed · 2 unknown", "-", "-", "-", "-", "-"]
    assert rate_table(cases, "escalated").loc["b", "steady"] == "2/2 · same at every seed · 2 unknown"
    assert rate_table(cases, "escalated").loc["a", "outcomes"] == "1/2"


def test_a_cell_of_enough_cases_is_a_rate_with_its_interval_and_pass_k() -> None:
    """Rule: from RATE_MIN_CASES cases a cell is ``rate [low-high] pass^k x.xx``, ``pass^k n<k`` when k is more
    than the cases, then ``· n unknown``; never ``same at every seed``."""
    assert RATE_MIN_CASES == 20
    prop = PROPERTIES[0].name
    twenty = [case("p", "s", seed, "correct" if seed > 1 else "incorrect") for seed in range(1, 21)]
    twenty[4]["unknown_metrics"] = twenty[5]["unknown_metrics"] = prop
    nineteen = [case("p", "t", seed) for seed in range(1, 20)]
    same = [case("q", "s", seed) for seed in range(1, 21)]
    cases = frame(*twenty, *nineteen, *same)
    table = rate_table(cases)
    assert table.loc["p", "s"] == "95% [76%-99%] pass^3 0.85 · 2 unknown"
    assert table.loc["p", "t"] == "19/19 · same at every seed"
    assert table.loc["q", "s"] == "100% [84%-100%] pass^3 1.00"
    assert table.loc["q", "t"] == "-"
    assert rate_table(cases, k=30).loc["p", "s"] == "95% [76%-99%] pass^30 n<30 · 2 unknown"
    assert rate_table(cases, k=2).loc["q", "s"] == "100% [84%-100%] pass^2 1.00"
    assert rate_table(cases, "incorrect", k=1).loc["p", "s"] == "5% [1%-24%] pass^1 0.05 · 2 unknown"


def test_a_rate_table_of_no_case_is_empty() -> None:
    assert rate_table(frame()).shape == (0, 0)
    assert outcome_counts(frame()).shape == (0, 0)
    assert metric_table(frame(), "dispatches").shape == (0, 0)


# --- policy_verdicts and order_policies ----------------------------------------------------------------------------


def test_each_policy_gets_a_verdict_its_violations_counts_and_first_failure() -> None:
    """Rule: unsafe if any case is incorrect or abandoned; else undecided if any is unresolved or a harness error;
    else safe. Violated: the properties (in the registry's order) some case counts above 0 (unknown is not a
    violation). First failure: the worst outcome, then the first scenario in the frame's order, then the lowest
    seed."""
    abandoned, duplicate, false = "abandoned_actions", "duplicate_effects", "false_records"
    cases = frame(
        case("unsafe", "s2", 1, "abandoned", **{abandoned: 1}),
        case("safe", "s1", 1),
        case("unsafe", "s1", 2, "incorrect", **{duplicate: 1}),
        case("unsafe", "s2", 3, "incorrect"),
        case("unsafe", "s2", 2, "incorrect", **{false: None}),
        case("unsafe", "s1", 1, "unresolved"),
        case("unsafe", "s1", 3, "correct"),
        case("safe", "s2", 1, "escalated"),
        case("safe", "s1", 2),
        case("undecided", "s1", 1),
        case("undecided", "s1", 2, "harness_error"),
        case("undecided", "s2", 1, "unresolved"),
        case("abandons", "s1", 4, "abandoned"),
        case("abandons", "s1", 3, "abandoned"),
        case("errs", "s3", 1, "harness_error", **{false: 0}),
    )
    verdicts = policy_verdicts(cases)
    assert list(verdicts.columns) == [
        "policy",
        "verdict",
        "scenarios",
        "cases",
        *OUTCOMES,
        "violated",
        "first_failure",
        "first_failure_path",
    ]
    assert OUTCOMES == ("correct", "escalated", "unresolved", "abandoned", "incorrect", "harness_error")
    rows = verdicts.to_dict("records")
    assert rows == [
        {
            "policy": "unsafe",
            "verdict": "unsafe",
            "scenarios": 2,
            "cases": 6,
            "correct": 1,
            "escalated": 0,
            "unresolved": 1,
            "abandoned": 1,
            "incorrect": 3,
            "harness_error": 0,
            "violated": "duplicate_effects, abandoned_actions",
            "first_failure": "s2 seed 2: incorrect",
            "first_failure_path": "cases/unsafe/s2/seed-2/recovery.json",
        },
        {
            "policy": "safe",
            "verdict": "safe",
            "scenarios": 2,
            "cases": 3,
            "correct": 2,
            "escalated": 1,
            "unresolved": 0,
            "abandoned": 0,
            "incorrect": 0,
            "harness_error": 0,
            "violated": "-",
            "first_failure": "-",
            "first_failure_path": None,
        },
        {
            "policy": "undecided",
            "verdict": "undecided",
            "scenarios": 2,
            "cases": 3,
            "correct": 1,
            "escalated": 0,
            "unresolved": 1,
            "abandoned": 0,
            "incorrect": 0,
            "harness_error": 1,
            "violated": "-",
            "first_failure": "s2 seed 1: unresolved",
            "first_failure_path": "cases/undecided/s2/seed-1/recovery.json",
        },
        {
            "policy": "abandons",
            "verdict": "unsafe",
            "scenarios": 1,
            "cases": 2,
            "correct": 0,
            "escalated": 0,
            "unresolved": 0,
            "abandoned": 2,
            "incorrect": 0,
            "harness_error": 0,
            "violated": "-",
            "first_failure": "s1 seed 3: abandoned",
            "first_failure_path": "cases/abandons/s1/seed-3/recovery.json",
        },
        {
            "policy": "errs",
            "verdict": "undecided",
            "scenarios": 1,
            "cases": 1,
            "correct": 0,
            "escalated": 0,
            "unresolved": 0,
            "abandoned": 0,
            "incorrect": 0,
            "harness_error": 1,
            "violated": "-",
            "first_failure": "s3 seed 1: harness_error",
            "first_failure_path": "cases/errs/s3/seed-1/recovery.json",
        },
    ]


def test_the_first_failure_is_the_worst_outcome_before_the_first_scenario() -> None:
    """Rule: an incorrect case in a later scenario comes before an abandoned one in the first; an abandoned one
    before an unresolved one; among equals, the frame's first scenario, not the first by name."""
    cases = frame(
        case("p", "zeta", 1, "abandoned"),
        case("p", "alpha", 5, "incorrect"),
        case("q", "zeta", 1, "unresolved"),
        case("q", "alpha", 1, "abandoned"),
        case("r", "zeta", 9, "incorrect"),
        case("r", "alpha", 1, "incorrect"),
        case("s", "zeta", 1, "harness_error"),
        case("s", "alpha", 1, "unresolved"),
    )
    assert list(policy_verdicts(cases)["first_failure"]) == [
        "alpha seed 5: incorrect",
        "alpha seed 1: abandoned",
        "zeta seed 9: incorrect",
        "alpha seed 1: unresolved",
    ]


def test_one_incorrect_case_makes_a_policy_unsafe_and_one_unresolved_case_undecided() -> None:
    """Rule: each of the outcomes alone, beside correct and escalated cases, gives its policy's verdict."""
    verdicts = {}
    for outcome in OUTCOMES:
        cases = frame(case("p", "s", 1), case("p", "s", 2, "escalated"), case("p", "s", 3, outcome))
        (row,) = policy_verdicts(cases).to_dict("records")
        verdicts[outcome] = row["verdict"]
    assert verdicts == {
        "correct": "safe",
        "escalated": "safe",
        "unresolved": "undecided",
        "abandoned": "unsafe",
        "incorrect": "unsafe",
        "harness_error": "undecided",
    }


def test_policies_and_scenarios_are_put_in_the_order_given_then_their_own() -> None:
    """Rule: the policies in ``order``, those not in it after them in the frame's order; within each, the
    scenarios in ``scenarios``, the others after them in the order the whole frame first has them (not the
    policy's own); equal rows keep their order; the index is 0 to n."""
    cases = frame(
        case("b", "s1", 1),
        case("a", "s3", 1),
        case("c", "s1", 2),
        case("c", "s2", 1),
        case("a", "s1", 2),
        case("c", "s1", 1),
        case("d", "s2", 1),
        case("a", "s2", 1),
    )
    ordered = order_policies(cases, ["c", "x", "a"], ["s2", "s9"])
    assert list(zip(ordered["policy"], ordered["scenario"], ordered["seed"], strict=True)) == [
        ("c", "s2", 1),
        ("c", "s1", 2),
        ("c", "s1", 1),
        ("a", "s2", 1),
        ("a", "s1", 2),
        ("a", "s3", 1),
        ("b", "s1", 1),
        ("d", "s2", 1),
    ]
    assert list(ordered.index) == list(range(8)) and list(ordered.columns) == _columns()
    plain = order_policies(cases, [])
    assert list(zip(plain["policy"], plain["scenario"], strict=True)) == [
        ("b", "s1"),
        ("a", "s1"),
        ("a", "s3"),
        ("a", "s2"),
        ("c", "s1"),
        ("c", "s1"),
        ("c", "s2"),
        ("d", "s2"),
    ]


# --- metric_table, _apart, outcome_counts, _pivot -------------------------------------------------------------------


def test_a_metric_cell_is_its_mean_its_range_and_its_unknown_cases() -> None:
    """Rule: the mean to three significant digits, ``(low-high)`` when they read apart, ``· n unknown`` for the
    cases without a value; ``unknown xn`` when no case has one; ``-`` for a cell not run."""
    count = "dispatches"
    cases = frame(
        case("p", "same", 1, **{count: 2}),
        case("p", "same", 2, **{count: 2}),
        case("p", "range", 1, **{count: 1}),
        case("p", "range", 2, **{count: 3}),
        case("p", "range", 3, **{count: None}),
        case("p", "none", 1, **{count: None}),
        case("p", "none", 2, **{count: None}),
        case("q", "big", 1, **{count: 1234}),
        case("q", "big", 2, **{count: 1236}),
        case("q", "same", 1, **{count: 7}),
        case("q", "same", 2, **{count: None}),
    )
    table = metric_table(cases, count)
    assert list(table.columns) == ["same", "range", "none", "big"] and list(table.index) == ["p", "q"]
    assert table.loc["p"].tolist() == ["2", "2 (1-3) · 1 unknown", "unknown x2", "-"]
    assert table.loc["q"].tolist() == ["7 · 1 unknown", "-", "-", "1.24e+03 (1.23e+03-1.24e+03)"]
    assert table.index.name is None and table.columns.name is None
    flags = frame(case("p", "s", 1, task_completed=True), case("p", "s", 2, task_completed=False))
    assert metric_table(flags, "task_completed").loc["p", "s"] == "0.5 (0-1)"
    durations = frame(case("p", "s", 1, time_to_account_s=0.123456), case("p", "s", 2, time_to_account_s=0.123456))
    assert metric_table(durations, "time_to_account_s").loc["p", "s"] == "0.123"
    with pytest.raises(KeyError, match="unknown metric"):
        metric_table(cases, "speed")


def test_a_property_violated_with_its_count_unknown_reads_violated_not_unknown() -> None:
    """A duplicate the replies witness under a hidden ledger: ``duplicate_effects`` is <NA> and judged false. Its
    metric cell says so apart from the merely unknown, the policy's verdict lists it, and the case leaves no
    property undecided on its account (a user comparing policies in pandas read "unknown x3" there)."""
    name = "duplicate_effects"
    witnessed = {name: None, "violated": name, "unknown_metrics": name, "outcome": "incorrect"}
    cases = frame(
        case("p", "s", 1, **witnessed),
        case("p", "s", 2, **witnessed),
        case("p", "s", 3, **{name: None, "unknown_metrics": name, "outcome": "unresolved"}),
        case("p", "t", 1, **{name: 1, "violated": name, "outcome": "incorrect"}),
        case("p", "t", 2, **witnessed),
        case("q", "s", 1, **{name: None, "unknown_metrics": name, "outcome": "unresolved"}),
    )
    table = metric_table(cases, name)
    assert table.loc["p"].tolist() == ["violated x2, count unknown · unknown x1", "1 · 1 violated, count unknown"]
    assert table.loc["q"].tolist() == ["unknown x1", "-"]
    assert metric_table(cases, "dispatches").loc["p", "s"] == "0"  # not a property: nothing violated to count
    assert policy_verdicts(cases)["violated"].tolist() == [name, "-"]
    assert undecided(name) and not undecided(name, name) and undecided(f"{name}, false_records", name)
    assert undecided_cases(cases) == 2 and rates(cases)["unknown"].tolist() == [1, 0, 1]
    only = frame(case("p", "s", 1, **witnessed))
    assert policy_verdicts(only)["violated"].tolist() == [name]


def test_a_rate_of_the_cases_the_gate_passes_counts_escalated_as_correct() -> None:
    """``rate_table(frame, PASSING)``: correct or escalated, as the gate passes; by default only correct, where
    a safe escalation and an unsafe case both miss (a user comparing policies read the two as alike). An outcome
    no case can have is refused, naming the outcomes."""
    cases = frame(
        case("p", "s", 1, outcome="escalated"),
        case("p", "s", 2, outcome="correct"),
        case("p", "s", 3, outcome="incorrect"),
    )
    assert rate_table(cases).loc["p", "s"] == "1/3"
    assert rate_table(cases, PASSING).loc["p", "s"] == "2/3"
    assert rates(cases, PASSING)["correct or escalated"].tolist() == [2]
    assert rates(cases, ["escalated", "correct"]).columns[3] == "correct or escalated"
    assert rate_table(cases, "escalated").loc["p", "s"] == "1/3"
    for wrong in ("corect", ["correct", "safe"], []):
        with pytest.raises(ValueError, match="is not an outcome; the outcomes: correct, escalated"):
            rate_table(cases, wrong)


def test_a_range_shows_the_fewest_digits_from_three_to_nine_that_tell_its_ends_apart() -> None:
    assert _apart(1.234, 1.456) == "1.23-1.46"
    assert _apart(1.234, 1.2356) == "1.23-1.24"
    assert _apart(14.7644, 14.7712) == "14.76-14.77"
    assert _apart(1.0000001, 1.0000002) == "1.0000001-1.0000002"
    assert _apart(1.00000001, 1.00000002) == "1.00000001-1.00000002"
    assert _apart(1.000000001, 1.000000002) is None
    assert _apart(2.0, 2.0) is None and _apart(0.3, 0.30000000000000004) is None


def test_an_outcome_cell_counts_each_outcome_in_the_order_of_outcomes() -> None:
    """Rule: ``outcome n`` for each outcome the cell's cases had, best first (OUTCOMES), joined by ``, ``."""
    cases = frame(
        case("p", "s", 1, "incorrect"),
        case("p", "s", 2, "harness_error"),
        case("p", "s", 3, "incorrect"),
        case("p", "s", 4, "correct"),
        case("q", "t", 1, "escalated"),
        case("q", "s", 1, "unresolved"),
        case("p", "u", 1, "abandoned"),
    )
    table = outcome_counts(cases)
    assert list(table.index) == ["p", "q"] and list(table.columns) == ["s", "t", "u"]
    assert table.loc["p"].tolist() == ["correct 1, incorrect 2, harness_error 1", "-", "abandoned 1"]
    assert table.loc["q"].tolist() == ["unresolved 1", "escalated 1", "-"]


def test_a_table_has_the_frames_policies_down_and_scenarios_across_in_its_order() -> None:
    """Rule: rows are the frame's policies and columns its scenarios, each first seen first (not sorted), a cell
    not given is ``-``, with no axis names; no records give an empty table."""
    cases = frame(case("z", "s2"), case("a", "s1"), case("m", "s3"))
    records = pd.DataFrame.from_records(
        [{"policy": "a", "scenario": "s1", "cell": "x"}, {"policy": "z", "scenario": "s3", "cell": "y"}]
    )
    table = _pivot(records, cases)
    assert list(table.index) == ["z", "a", "m"] and list(table.columns) == ["s2", "s1", "s3"]
    assert table.values.tolist() == [["-", "-", "y"], ["-", "x", "-"], ["-", "-", "-"]]
    assert table.index.name is None and table.columns.name is None
    assert _pivot(pd.DataFrame(), cases).shape == (0, 0)


# --- compare_runs -----------------------------------------------------------------------------------------------


def test_compare_runs_pairs_cases_by_policy_scenario_and_seed_and_flags_a_changed_outcome() -> None:
    """Rule: one row per (policy, scenario, seed) of either run, sorted by them; the revisions, outcome, verdict
    and properties before and after; ``present`` both, before or after; ``changed`` only for a case of both runs
    whose outcome differs (a new revision or verdict alone is no change)."""
    prop = PROPERTIES[0].name
    before = frame(
        case("p", "s", 2, "correct"),
        case("p", "s", 1, "correct"),
        case("a", "s", 1, "incorrect", verdict="bad", **{prop: 1}),
        case("p", "t", 1, "escalated"),
        case("gone", "s", 1, "correct"),
    )
    after = frame(
        case("p", "s", 1, "incorrect", policy_revision="r2", **{prop: 2}),
        case("p", "s", 2, "correct", policy_revision="r2", scenario_revision="r3", verdict="other"),
        case("new", "s", 1, "incorrect"),
        case("a", "s", 1, "incorrect", verdict="bad", **{prop: 1}),
        case("p", "t", 1, "correct"),
    )
    changes = compare_runs(before, after)
    compared = ["policy_revision", "scenario_revision", "outcome", "verdict", *(m.name for m in PROPERTIES)]
    assert list(changes.columns) == [
        "policy",
        "scenario",
        "seed",
        *(f"{c}_before" for c in compared),
        *(f"{c}_after" for c in compared),
        "present",
        "changed",
    ]
    assert list(changes.index) == list(range(6))
    assert changes[["policy", "scenario", "seed", "present", "changed"]].values.tolist() == [
        ["a", "s", 1, "both", False],
        ["gone", "s", 1, "before", False],
        ["new", "s", 1, "after", False],
        ["p", "s", 1, "both", True],
        ["p", "s", 2, "both", False],
        ["p", "t", 1, "both", True],
    ]
    assert changes["changed"].dtype == bool
    assert changes[["outcome_before", "outcome_after"]].fillna("-").values.tolist() == [
        ["incorrect", "incorrect"],
        ["correct", "-"],
        ["-", "incorrect"],
        ["correct", "incorrect"],
        ["correct", "correct"],
        ["escalated", "correct"],
    ]
    assert changes.loc[3, [f"{prop}_before", f"{prop}_after", "policy_revision_after"]].tolist() == [0, 2, "r2"]
    assert changes.loc[4, ["scenario_revision_before", "scenario_revision_after", "verdict_after"]].tolist() == [
        "r1",
        "r3",
        "other",
    ]


# --- the frame the loader builds -----------------------------------------------------------------------------------


def test_the_frames_columns_are_in_order_each_in_its_nullable_dtype() -> None:
    """Rule: the columns in the loader's order; a metric in its kind's nullable dtype (so unknown is <NA>), seed
    Int64, outcome and verdict string, the counts of anomalies and attempts int64; each list let go once built."""
    assert _columns() == [
        "source",
        "path",
        "polyaxon_run",
        "policy",
        "policy_revision",
        "scenario",
        "scenario_revision",
        "seed",
        "task_id",
        "action_id",
        "outcome",
        "verdict",
        *(m.name for m in METRICS),
        "violated",
        "unknown_metrics",
        "unknown",
        "anomalies",
        "attempts",
        "reproduce",
        "error",
    ]
    rows = [case("p", "s", 1), case("p", "s", 2, dispatches=None, task_completed=None, time_to_account_s=None)]
    columns = {column: [row[column] for row in rows] for column in _columns()}
    built = _frame(columns)
    assert columns == {}
    assert list(built.columns) == _columns()
    kinds = {"flag": "boolean", "count": "Int64", "duration": "Float64"}
    expected = {m.name: kinds[m.value] for m in METRICS}
    expected.update(seed="Int64", outcome="string", verdict="string", anomalies="int64", attempts="int64")
    assert {c: str(t) for c, t in built.dtypes.items()} == {c: expected.get(c, "object") for c in _columns()}
    assert built.loc[1, ["dispatches", "task_completed", "time_to_account_s"]].isna().all()


def test_the_frame_is_built_without_a_second_copy_of_its_columns() -> None:
    """Rule (the reason ``_frame`` exists): each column is built once, in its final dtype, and the frame takes it
    as it is; a frame that copied its columns would hold loading's peak at twice the frame (measured: 1.2 times
    as built, 2.7 times with a copy)."""
    rows = [case("p", "s", seed) for seed in range(10_000)]
    columns = {column: [row[column] for row in rows] for column in _columns()}
    tracemalloc.start()
    try:
        built = _frame(columns)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    size = int(built.memory_usage(deep=False).sum())
    assert size > 2_000_000 and peak < 1.5 * size, (peak, size)


def test_names_at_several_revisions_are_labelled_with_their_revision() -> None:
    """Rule: a name seen at two revisions or more becomes ``name@revision`` on each of its rows; a name at one
    revision keeps its name; the names relabelled are returned sorted."""
    columns: dict[str, list[Any]] = {
        "policy": ["b", "a", "c", "a", "b", "c"],
        "policy_revision": ["1", "1", "1", "2", "2", "1"],
    }
    assert _keep_revisions_apart(columns, "policy") == ["a", "b"]
    assert columns["policy"] == ["b@1", "a@1", "c", "a@2", "b@2", "c"]
    assert columns["policy_revision"] == ["1", "1", "1", "2", "2", "1"]
    single: dict[str, list[Any]] = {"scenario": ["s", "s"], "scenario_revision": ["x", "x"]}
    assert _keep_revisions_apart(single, "scenario") == []
    assert single == {"scenario": ["s", "s"], "scenario_revision": ["x", "x"]}


# --- harness/present/table.py --------------------------------------------------------------------------------------


def test_the_scenarios_go_down_the_side_only_when_they_outnumber_the_policies() -> None:
    assert scenarios_down(1, 2) and not scenarios_down(2, 2) and not scenarios_down(3, 2)


def test_the_outcome_table_is_aligned_text_with_a_rule_under_its_header() -> None:
    """Rule: columns two spaces apart, each as wide as its widest value, lines stripped on the right, a rule of
    dashes under the header; a cell is its outcome, ``-`` when none was counted, or each outcome's count in the
    order of OUTCOMES when the seeds disagree."""
    counts = {
        ("p1", "s1"): {"correct": 3},
        ("p1", "s2"): {"incorrect": 1, "correct": 2},
        ("p2", "s1"): {"correct": 0, "escalated": 2},
        ("p2", "s2"): {"correct": 0},
    }
    assert outcome_table(counts, ["p1", "p2"], ["s1", "s2"]).split("\n") == [
        "policy \\ scenario  s1         s2",
        "-----------------  ---------  ---------------------",
        "p1                 correct    correct:2 incorrect:1",
        "p2                 escalated  -",
    ]
    assert outcome_table(counts, ["p1"], ["s2", "s1", "s3"]).split("\n") == [
        "scenario \\ policy  p1",
        "-----------------  ---------------------",
        "s2                 correct:2 incorrect:1",
        "s1                 correct",
        "s3                 -",
    ]
    assert outcome_table({}, [], []) == "policy \\ scenario\n-----------------"


# --- harness/present/shape.py --------------------------------------------------------------------------------------


@functools.cache
def _good_case_json() -> str:
    """A real case, as recovery.json holds it (harness/run is not what this file tests, so it is run once)."""
    from harness.run.case import run_case
    from harness.run.plan import load_grid

    (one,) = load_grid(["reconcile_and_reauthorize"], ["lost_response"], [1]).cases
    return run_case(one)[0].model_dump_json()


@pytest.fixture
def good() -> dict[str, Any]:
    return json.loads(_good_case_json())


def test_a_case_is_read_as_the_keys_a_row_reads_typed(good: dict[str, Any]) -> None:
    """Rule: the keys a row reads, as they are, and nothing else (the timeline, say)."""
    kept = checked_case(good)
    read = ["policy", "policy_revision", "scenario", "scenario_revision", "seed", "task_id", "action_id"]
    read += ["outcome", "verdict", "checks", "unknown", "anomalies", "attempts", "reproduce", "error", "metrics"]
    assert sorted(kept) == sorted(read)
    assert {k: v for k, v in kept.items() if k not in ("anomalies", "attempts")} == {
        k: good[k] for k in read if k not in ("anomalies", "attempts")
    }
    assert len(kept["anomalies"]) == len(good["anomalies"]) and len(kept["attempts"]) == len(good["attempts"])


def test_a_case_of_another_version_or_not_an_object_is_refused_naming_its_version(good: dict[str, Any]) -> None:
    for data, version in (
        ([good], "None"),
        (None, "None"),
        ({**good, "schema_version": 1}, "1"),
        ({**good, "schema_version": str(SCHEMA_VERSION)}, repr(str(SCHEMA_VERSION))),
    ):
        with pytest.raises(MalformedCase) as raised:
            checked_case(data)
        assert str(raised.value) == f"schema_version {version}, expected {SCHEMA_VERSION}"
    del good["schema_version"]
    with pytest.raises(MalformedCase, match=f"^schema_version None, expected {SCHEMA_VERSION}$"):
        checked_case(good)


def test_a_case_missing_keys_is_refused_naming_them_in_order(good: dict[str, Any]) -> None:
    for key in ("unknown", "seed", "metrics", "policy"):
        del good[key]
    with pytest.raises(MalformedCase) as raised:
        checked_case(good)
    assert str(raised.value) == "missing keys: policy, seed, metrics, unknown"


def test_a_case_with_a_value_of_the_wrong_type_is_refused_naming_the_field(good: dict[str, Any]) -> None:
    good["metrics"]["dispatches"] = "two"
    with pytest.raises(MalformedCase) as raised:
        checked_case(good)
    assert str(raised.value).startswith("malformed: field 'metrics.dispatches': Input should be a valid integer")
    assert raised.value.__cause__ is None and raised.value.__suppress_context__


def test_the_schema_is_the_one_committed_and_accepts_a_case_and_refuses_a_wrong_one(good: dict[str, Any]) -> None:
    """Rule: reports/recovery.schema.json is what recovery_schema() gives; a case the harness wrote validates,
    and one with a metric of the wrong type, an unknown metric or a key missing does not."""
    schema = recovery_schema()
    assert schema == json.loads((ROOT / "reports" / "recovery.schema.json").read_text())
    assert schema["required"] == list(schema["properties"])
    validator = jsonschema.Draft202012Validator(schema)
    assert not list(validator.iter_errors(good))
    for change in ({"metrics": {**good["metrics"], "dispatches": True}}, {"metrics": {"speed": 1}}):
        assert list(validator.iter_errors({**good, **change}))
    assert list(validator.iter_errors({k: v for k, v in good.items() if k != "error"}))


def test_an_entrys_data_is_its_keys_exactly_or_any_keys_and_its_kind_where_an_event_has_several() -> None:
    """Rule: data with these keys exactly (required and the only names); a shape of any keys (a command's) has no
    such bound; where several record types share the event, each says its ``kind``, as branches of ``anyOf``."""
    keyed = EntryShape("a", "e", frozenset({"b", "a"}), None)
    assert _data_shape([keyed]) == {"required": ["a", "b"], "propertyNames": {"enum": ["a", "b"]}}
    assert _data_shape([EntryShape("a", "e", None, None)]) == {}
    one, other = EntryShape("a", "e", frozenset({"x"}), "one"), EntryShape("a", "e", None, "other")
    anything = EntryShape("a", "e", None, None)
    assert _data_shape([one, other, anything]) == {
        "anyOf": [
            {"required": ["x"], "propertyNames": {"enum": ["x"]}, "properties": {"kind": {"const": "one"}}},
            {"properties": {"kind": {"const": "other"}}},
            {},
        ]
    }


def test_a_case_the_harness_could_not_judge_left_every_safety_property_unknown() -> None:
    """Rule: a harness_error case's ``unknown`` holds one reason under ``*``, for every metric at once, so its
    ``unknown_metrics`` is ``*``: it left every safety property unknown, and its cell says so (it read ``0/3``
    beside the metric tables' ``unknown x3`` and the policy's ``undecided``)."""
    from harness.present.analysis import _row
    from harness.run.case import failed_report
    from harness.run.plan import load_grid

    (one,) = load_grid(["retry_new_key"], ["lost_response"], [1]).cases
    row = _row(checked_case(json.loads(failed_report(one, "boom").model_dump_json())), "run", "x/recovery.json")
    assert row["unknown_metrics"] == "*" and row["outcome"] == "harness_error"
    assert undecided("*") and undecided("reads, *")
    cases = frame(*(case("p", "s", seed, "harness_error", unknown_metrics="*") for seed in (1, 2, 3)))
    assert rates(cases)["unknown"].tolist() == [3]
    assert rate_table(cases).loc["p", "s"] == "0/3 · same at every seed · 3 unknown"
