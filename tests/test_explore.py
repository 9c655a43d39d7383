"""Exploration finds what no one wrote down, shrinks it to a minimal runnable file, and covers every fault site."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import Background, shipped
from pydantic import BaseModel

from harness.check import check
from harness.cli import main
from harness.explore import ExploreOptions, explore
from harness.explore.schedule import (
    Observed,
    Schedule,
    apply,
    contract_variants,
    declared,
    element,
    elements_of,
    fault_elements,
    operator_elements,
    pairs,
    singles,
    worker_variants,
)
from harness.explore.search import ExploreJob, _Judge, explore_job, observe, shape, shrink
from harness.policy import load_policy
from harness.scenario import BOUNDARIES, RequestCancel, ScenarioError, list_scenarios, load_scenario, scenario_cases
from harness.scenario.faults import ResponseLost
from harness.sim import simulate

SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"


def test_singles_cover_every_reachable_site_kind_and_contract_field() -> None:
    """Every boundary the path allows, at every occurrence reached (up to 3); every operator event after every kind
    of entry seen; every other value of each contract field."""
    template = shipped("lost_response")
    seen = Observed(dispatches=2, reads=5, kinds=(("worker", "timeout"), ("destination", "applied")))
    faults = {(e.data[0][1], dict(e.data).get("nth", 1)) for e in fault_elements(template, seen)}
    reachable = {b for b, cls in BOUNDARIES.items() if cls.needs is None}
    assert {b for b, _ in faults} == reachable
    assert ("lookup_unavailable", 3) in faults and ("request_lost", 2) in faults and ("request_lost", 3) not in faults
    operators = operator_elements(seen)
    assert len(operators) == 2 * 3
    # Nothing is inserted after what the end of a case records (what it cut off): no event could act then.
    ended = Observed(2, 5, (*seen.kinds, ("transport", "still_in_flight"), ("destination", "still_pending")))
    assert operator_elements(ended) == operators
    fields = {next(iter(dict(e.data))) for e in contract_variants(template)}
    assert fields == {
        "dedupe",
        "on_conflict",
        "on_in_flight",
        "fencing",
        "request_validity_s",
        "lookup_lag_s",
        "dedupe_window_s",
    }


def test_operator_events_are_inserted_after_each_occurrence_one_run_recorded_up_to_three() -> None:
    """After the first, second and third command where one run recorded four; after the one timeout where it
    recorded one; after the first of each kind where the counts are not given."""
    counted = Observed(1, 1, (("worker", "command"), ("worker", "timeout")), (4, 1))
    after = [dict(e.data)["when"] for e in operator_elements(counted)]
    nths = sorted({(w[0][1][0][1], w[0][1][1][1], dict(w[0][1]).get("nth", 1)) for w in after})
    assert nths == [
        ("worker", "command", 1),
        ("worker", "command", 2),
        ("worker", "command", 3),
        ("worker", "timeout", 1),
    ]
    assert len(after) == 4 * 3
    assert len(operator_elements(Observed(1, 1, counted.kinds))) == 2 * 3
    assert (counted.most(("worker", "command")), counted.most(("transport", "send"))) == (4, 0)


def test_the_most_records_of_a_kind_are_counted_in_one_run_not_summed() -> None:
    """request_lost's runs: reconcile_and_reauthorize gives four commands and three sends at each seed,
    retry_new_key three and two. Explored together over two seeds, each kind counts as often as the one run
    that recorded it most did, not the runs added up (an event inserted after a later entry would never act)."""
    template = shipped("request_lost")
    both = [load_policy("reconcile_and_reauthorize"), load_policy("retry_new_key")]
    for policies, commands, sends in ((both[:1], 4, 3), (both[1:], 3, 2), (both, 4, 3), (both[::-1], 4, 3)):
        seen, _ = observe(template, policies, (1, 2))
        assert (seen.most(("worker", "command")), seen.most(("transport", "send"))) == (commands, sends)
        assert len(seen.times) == len(seen.kinds) and seen.kinds == tuple(sorted(seen.kinds))
        assert seen.most(("operator", "cancel_requested")) == 0


def test_singles_open_each_worker_delay_a_template_lacks_and_close_one_it_declares() -> None:
    """A decision and its act are one instant unless the worker's timing says otherwise: exploration opens a
    second between deciding a retry and sending it, and between deciding a ledger write and its landing; where a
    template declares one, it closes it instead. It adds a second recovering worker to one, or leaves one alone
    of several. Applied, each changes that field of the worker and nothing else."""
    for name, expected in (
        ("request_lost", [{"retry_send_s": 1.0}, {"ledger_write_s": 1.0}, {"recoverers": 2}]),
        ("cancel_while_retry_leaves", [{"retry_send_s": 0.0}, {"ledger_write_s": 1.0}, {"recoverers": 2}]),
        ("racing_recoverers_retry_leaves", [{"retry_send_s": 0.0}, {"ledger_write_s": 0.0}, {"recoverers": 1}]),
    ):
        template = shipped(name)
        variants = worker_variants(template)
        assert [dict(e.data) for e in variants] == expected, name
        seen = Observed(1, 1, ())
        assert {e.key for e in variants} <= {e.key for e in singles(template, seen)}, name
        for e in variants:
            scenario = apply(template, Schedule.of([*elements_of(template), e]))
            assert scenario.worker == template.worker.model_copy(update=dict(e.data)), (name, e.key)
            assert scenario.model_copy(update={"worker": template.worker}) == template, (name, e.key)
    with pytest.raises(ValueError, match="retry_send_s"):
        apply(shipped("request_lost"), Schedule.of([element("worker", {"retry_send_s": -1.0})]))


def test_a_schedule_applied_is_a_valid_scenario_with_exactly_its_elements() -> None:
    """apply() replaces the template's faults and operator events by the schedule's and changes its contract."""
    template = shipped("request_lost")
    schedule = Schedule.of(
        [
            element("fault", {"boundary": "response_lost", "nth": 2}),
            element("operator", {"do": "request_cancel", "when": {"after": {"actor": "worker", "event": "timeout"}}}),
            element("contract", {"dedupe": "none"}),
        ]
    )
    scenario = apply(template, schedule)
    assert [f.boundary for f in scenario.faults] == ["response_lost"] and scenario.faults[0].nth == 2
    assert [e.do for e in scenario.operator] == ["request_cancel"] and scenario.destination.dedupe == "none"
    assert apply(template, Schedule.of(elements_of(template))).faults == template.faults


def test_an_element_met_for_the_first_time_is_validated_as_what_its_kind_declares() -> None:
    """Elements are validated once and kept by key; one no earlier call has met (an occurrence no test uses)
    is validated as a fault or an operator event by its kind, whether ``declared`` or ``apply`` meets it first,
    and a setting is not an event."""
    fault = element("fault", {"boundary": "response_lost", "nth": 97})
    event = element(
        "operator", {"do": "request_cancel", "when": {"after": {"actor": "worker", "event": "start", "nth": 97}}}
    )
    assert isinstance(declared(fault), ResponseLost) and declared(fault).nth == 97
    assert isinstance(declared(event), RequestCancel) and declared(event).when.after.nth == 97  # type: ignore[union-attr]
    first_fault = element("fault", {"boundary": "response_lost", "nth": 98})
    first_event = element(
        "operator", {"do": "request_cancel", "when": {"after": {"actor": "worker", "event": "start", "nth": 98}}}
    )
    scenario = apply(shipped("request_lost"), Schedule.of([first_fault, first_event]))
    assert [f.nth for f in scenario.faults] == [98] and [e.when.after.nth for e in scenario.operator] == [98]  # type: ignore[union-attr]
    for setting in (element("contract", {"fencing": True}), element("worker", {"retry_send_s": 1.0})):
        with pytest.raises(ValueError, match=f"a {setting.kind} change declares no fault or event"):
            declared(setting)


def test_every_template_applied_to_its_own_elements_is_itself() -> None:
    """apply() validates each element once and serves it from then on: every shipped template, rebuilt from its
    own faults and operator events (one after another, so earlier elements are already served), is the template,
    and a schedule that changes no contract field keeps the template's contract."""
    for name in list_scenarios():
        template = shipped(name)
        for _ in range(2):
            rebuilt = apply(template, Schedule.of(elements_of(template)))  # elements in the schedule's order
            for part in ("faults", "operator"):
                assert _texts(getattr(rebuilt, part)) == _texts(getattr(template, part)), (name, part)
            assert rebuilt.destination == template.destination, name
            same_order = {"faults": template.faults, "operator": template.operator}
            assert rebuilt.model_copy(update=same_order) == template, name


def _texts(records: tuple[BaseModel, ...]) -> list[str]:
    return sorted(r.model_dump_json() for r in records)


def test_pairs_never_change_one_contract_field_twice() -> None:
    """Two values of the same field cannot stand together; everything else combines, once."""
    a, b = element("contract", {"dedupe": "none"}), element("contract", {"dedupe": "process"})
    c = element("fault", {"boundary": "request_lost"})
    combos = list(pairs([a, b, c], 2))
    assert (a, b) not in combos and (a, c) in combos and (b, c) in combos and len(combos) == 5
    # The same for the worker's fields; a worker field and a contract field of the same name would both stand.
    d, e = element("worker", {"retry_send_s": 1.0}), element("worker", {"retry_send_s": 0.0})
    f = element("worker", {"ledger_write_s": 1.0})
    combos = list(pairs([d, e, f, a], 2))
    assert (d, e) not in combos and {(d, f), (e, f), (d, a), (f, a)} <= set(combos) and len(combos) == 9
    # Events combine with events of their own kind: two faults, two operator events.
    g = element("fault", {"boundary": "response_lost", "nth": 2})
    h = element("operator", {"do": "request_cancel", "when": {"after": {"actor": "worker", "event": "timeout"}}})
    i = element("operator", {"do": "expire_approval", "when": {"after": {"actor": "worker", "event": "timeout"}}})
    assert {(c, g), (h, i)} <= set(pairs([c, g, h, i], 2))


def test_shrinking_keeps_a_violation_and_removes_everything_it_can() -> None:
    """A violating schedule padded with irrelevant elements shrinks to a 1-minimal core that still violates."""
    template = shipped("request_lost")
    policy = load_policy("retry_new_key")
    judge = _Judge(template)
    padded = Schedule.of(
        [
            element("fault", {"boundary": "request_lost"}),
            element("fault", {"boundary": "response_lost", "nth": 2}),
            element("contract", {"fencing": True}),
            element(
                "operator", {"do": "expire_approval", "when": {"after": {"actor": "transport", "event": "receive"}}}
            ),
        ]
    )
    assert judge(policy, padded, 1)[1]
    minimal = shrink(judge, policy, padded, 1)
    assert judge(policy, minimal, 1)[1]
    for e in minimal.elements:
        assert not judge(policy, minimal.without(e), 1)[1], e.key
    assert len(minimal.elements) < len(padded.elements)


def test_explore_finds_what_the_shipped_schedule_does_not_show(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """retry_new_key passes request_lost as written; exploration finds a violation, writes a runnable 1-minimal
    file that `harness run` reproduces, and exits 1."""
    template_cases = simulate(shipped("request_lost"), load_policy("retry_new_key"), 1)
    assert check(template_cases.evidence).verdict != "false"
    out = tmp_path / "explore"
    assert (
        main(["explore", "--policy", "retry_new_key", "--scenario", "request_lost", "--out", str(out), "--quiet"]) == 1
    )
    summary = json.loads((out / "explore.json").read_text())
    assert summary["findings"] and summary["schedules"] > 100
    first = out / summary["findings"][0]["file"]
    doc = yaml.safe_load(first.read_text())
    assert doc["reproduces"]["policy"] == "retry_new_key" and "seed 1" in doc["description"]
    verdict = _run_file(tmp_path, first, "found")
    assert verdict == "false"
    parts = [("faults", i) for i in range(len(doc.get("faults") or []))] + [
        ("operator", i) for i in range(len(doc.get("operator") or []))
    ]
    for k, (key, i) in enumerate(parts):
        smaller = dict(doc)
        smaller[key] = [x for j, x in enumerate(doc[key]) if j != i]
        smaller["name"] = f"minus-{k}"
        path = tmp_path / f"minus-{k}.yaml"
        path.write_text(yaml.safe_dump(smaller, sort_keys=False))
        assert _run_file(tmp_path, path, f"m{k}") != "false", (key, i)
    assert main(["replay", str(first)]) == 0
    assert "replayed: the same as recorded" in capsys.readouterr().out


def _run_file(tmp_path: Path, path: Path, tag: str) -> str:
    out = tmp_path / f"run-{tag}"
    main(
        [
            "run",
            "--policy",
            "retry_new_key",
            "--scenario",
            str(path),
            "--seed",
            "1",
            "--tracking",
            "none",
            "--no-report",
            "--quiet",
            "--out",
            str(out),
        ]
    )
    (report,) = out.rglob("recovery.json")
    return str(json.loads(report.read_text())["verdict"])


def _templates_with(part: str) -> list[str]:
    """The shipped scenarios whose cases put a device connector (``connector``) or a bridge (``bridge``) in the
    path: what exploration cannot add or take away."""
    return [name for name in list_scenarios() if any(getattr(s, part) for _, s in scenario_cases(name))]


CONNECTOR_TEMPLATES = _templates_with("connector")
BRIDGE_TEMPLATES = _templates_with("bridge")
_EXPLORE = ("explore", "--quiet", "--concurrency", "2", "--tracking", "none")


def _explored(run: Background) -> dict[str, Any]:
    """What a background exploration of a safe policy wrote: not one finding, violation or harness error."""
    assert run.returncode in (0, 4), run.stderr[-3000:]
    summary: dict[str, Any] = json.loads((run.out / "explore.json").read_text())
    assert summary["findings"] == [] and summary["violating_cases"] == 0 and summary["errors"] == []
    rows = summary["explorations"]
    assert rows and all(r["cases"] == r["schedules"] > 0 for r in rows)
    # Some cases were judged without running them (tests/test_explore_skip.py: with the same answers).
    assert 0 < summary["simulated"] < summary["cases"]
    return summary


@pytest.mark.background_harness(*_EXPLORE, "--policy", "reconcile_and_reauthorize")
def test_reconcile_has_no_finding_in_any_shipped_scenario(background_harness: Background) -> None:
    """reconcile_and_reauthorize explored over every shipped scenario at the default depth and swarm: not one
    violation (each earlier finding was a bug, fixed, and kept as a scenario).

    The run exits 4 all the same, for what it never reaches: connector_no_record_yet delays a second request,
    and a safe policy never sends one there (it waits until no earlier request can still arrive, and the target
    shows the effect); process_dedupe_late_original restarts the destination at the second dispatch, which a safe
    policy never sends to a service whose deduplication a restart empties, and bridge_restart_late_original
    restarts the bridge at the second call, which a safe policy never sends. connector_new_operation_pending's
    fault at the second dispatch and its cancellation after it is accepted are for follow_and_inspect's new
    operation after the dead job: reconcile starts none, and escalates. retry_with_seconds_left loses the reply
    to a retry sent within the margin before the deadline, which a safe policy never sends, and
    retry_late_past_original_window delays a retry that would arrive after the late original's window, which a safe
    policy never sends either (the original lands, and its effect is recorded); lease_dated_by_the_read delays a
    retry whose leased claim a safe policy's worker makes too late, so it is never sent, and so do
    retry_leaves_after_margin, whose retry would leave within the margin before the deadline, and
    original_expires_while_read_returns, whose retry would leave after the window of an original landing just
    after the read; connector_new_operation_with_seconds_left loses the reply to a new operation a safe policy
    never starts (reconcile starts none; follow's would be decided within the margin, and escalates), and so does
    connector_new_operation_leaves_late (follow's claim, leased to the deadline less the margin, is refused);
    retry_reply_outlasts_margin, retry_send_outlasts_deadline and retry_leaves_inside_reply_wait lose the reply to a
    retry whose round trip could outlast the deadline (escalated instead, or its leased claim refused), and
    slow_read_answer_past_lease delays a retry a safe policy never sends (the read's answer comes back after the
    moment that retry had to leave by).

    Minutes of work on both cores: the command runs in the background from the start of the session, and this
    test runs last (tests/conftest.py, Background)."""
    run = background_harness.wait()
    assert run.returncode == 4
    summary = _explored(run)
    assert sorted(summary["unfired"], key=lambda u: (u["scenario"], u.get("fault", ""))) == [
        {"scenario": "bridge_restart_late_original", "fault": "bridge_restart nth=2"},
        {"scenario": "connector_new_operation_leaves_late", "fault": "response_lost nth=2"},
        {"scenario": "connector_new_operation_pending", "event": "request_cancel after=destination.accepted nth=1"},
        {"scenario": "connector_new_operation_pending", "fault": "accepted_not_applied nth=2"},
        {"scenario": "connector_new_operation_with_seconds_left", "fault": "response_lost nth=2"},
        {"scenario": "connector_no_record_yet", "fault": "request_delayed nth=2 delay_s=20.0"},
        {"scenario": "lease_dated_by_the_read", "fault": "request_delayed nth=2 delay_s=4.94"},
        {"scenario": "original_expires_while_read_returns", "fault": "request_delayed nth=2 delay_s=4.9"},
        {"scenario": "process_dedupe_late_original", "fault": "destination_restart nth=2"},
        {"scenario": "retry_late_past_original_window", "fault": "request_delayed nth=2 delay_s=20.0"},
        {"scenario": "retry_leaves_after_margin", "fault": "response_lost nth=2"},
        {"scenario": "retry_leaves_inside_reply_wait", "fault": "response_lost nth=2"},
        {"scenario": "retry_reply_outlasts_margin", "fault": "response_lost nth=2"},
        {"scenario": "retry_send_outlasts_deadline", "fault": "response_lost nth=2"},
        {"scenario": "retry_with_seconds_left", "fault": "response_lost nth=2"},
        {"scenario": "slow_read_answer_past_lease", "fault": "request_delayed nth=2 delay_s=4.5"},
    ]
    assert {s.partition("@")[0] for s in summary["scenarios"]} == set(list_scenarios())
    assert summary["schedules"] > 100_000


@pytest.mark.background_harness(
    *_EXPLORE,
    "--policy",
    "follow_and_inspect",
    *(a for name in CONNECTOR_TEMPLATES for a in ("--scenario", name)),
)
def test_follow_has_no_finding_where_a_connector_stands(background_harness: Background) -> None:
    """follow_and_inspect explored over every shipped scenario with a device connector, at the default depth and
    swarm: not one violation. Elsewhere it decides as reconcile_and_reauthorize does, command for command (its
    own rules act only on a connector's answers, and exploration adds no connector:
    ``test_follow_decides_as_reconcile_where_no_connector_stands``), so reconcile's exploration covers it there."""
    run = background_harness.wait()
    summary = _explored(run)
    assert {s.partition("@")[0] for s in summary["scenarios"]} == set(CONNECTOR_TEMPLATES)
    assert len(CONNECTOR_TEMPLATES) >= 10 and summary["schedules"] > 20_000


@pytest.mark.background_harness(
    *_EXPLORE,
    "--policy",
    "verify_before_mutation",
    *(a for name in BRIDGE_TEMPLATES for a in ("--scenario", name)),
)
def test_verify_has_no_finding_where_a_bridge_stands(background_harness: Background) -> None:
    """verify_before_mutation explored over every shipped scenario with a bridge, at the default depth and swarm:
    not one violation. (Over every shipped scenario at the defaults, with the other two safe policies, it had none
    either: the README's exploring section gives the command; CI keeps to where its reads pass a bridge.)"""
    run = background_harness.wait()
    summary = _explored(run)
    assert {s.partition("@")[0] for s in summary["scenarios"]} == set(BRIDGE_TEMPLATES)
    assert len(BRIDGE_TEMPLATES) >= 10 and summary["schedules"] > 20_000


def test_follow_decides_as_reconcile_where_no_connector_stands() -> None:
    """follow_and_inspect's own rules read only a connector's answers (a followed job, an unknown outcome): in
    every shipped case without a connector its history is reconcile_and_reauthorize's, record for record."""
    follow, reconcile = load_policy("follow_and_inspect"), load_policy("reconcile_and_reauthorize")
    compared = 0
    for name in list_scenarios():
        for _, scenario in scenario_cases(name):
            if scenario.connector is None:
                for seed in (1, 2):
                    ours = simulate(scenario, follow, seed).evidence.history
                    assert ours == simulate(scenario, reconcile, seed).evidence.history, name
                    compared += 1
    assert compared > 100


def test_shards_split_the_schedules_exactly(tmp_path: Path) -> None:
    """Shards 0/2 and 1/2 together run exactly the schedules of the whole, and find the same findings."""
    whole = explore_job(ExploreJob(("retry_same_key",), "lost_response", 1, 5, (1,)))
    halves = [
        explore_job(ExploreJob(("retry_same_key",), "lost_response", 1, 5, (1,), shard=i, shards=2)) for i in (0, 1)
    ]
    assert sum(h.schedules for h in halves) == whole.schedules
    # A finding is one per shape (delays' lengths aside): a shard may first meet a shape at another delay.
    shapes = {shape(f.schedule) for f in whole.findings}
    assert shapes and {shape(f.schedule) for h in halves for f in h.findings} == shapes


def test_concurrency_splits_a_shard_among_its_processes(tmp_path: Path) -> None:
    """--shard 1/2 --concurrency 2: two jobs share shard 1's schedules, and together they run exactly the ones
    --concurrency 1 runs, with the same findings (concurrency used to be dropped under --shard)."""
    from harness.explore import ExploreOptions, explore

    def shard_one(concurrency: int) -> tuple[list[int], object]:
        parts: list[int] = []
        options = ExploreOptions(
            out=tmp_path / f"c{concurrency}", depth=1, swarm=5, shard=1, shards=2, concurrency=concurrency,
            tracking="none", isolate=False,
        )  # fmt: skip
        summary = explore(["retry_same_key"], ["lost_response"], options, lambda _, __, r: parts.append(r.schedules))
        return parts, json.loads((summary.out / "explore.json").read_text())

    (alone,), one = shard_one(1)
    shared, two = shard_one(2)
    assert len(shared) == 2 and all(shared) and sum(shared) == alone
    for key in ("schedules", "cases", "violating_cases", "findings", "coverage"):
        assert two[key] == one[key], key
    assert (two["shard"], two["shards"]) == (1, 2)


def test_a_declared_fault_that_never_fires_fails_the_run_after_writing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A lookup fault at the 9th lookup, which no case reaches: everything is written, then exit 4 naming it."""
    doc = yaml.safe_load((SCENARIOS / "lost_response.yaml").read_text())
    doc["name"] = "unfired"
    doc["faults"] = [*doc["faults"], {"boundary": "lookup_unavailable", "nth": 9}]
    path = tmp_path / "unfired.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    out = tmp_path / "run"
    status = main(
        [
            "run",
            "--policy",
            "reconcile_and_reauthorize",
            "--scenario",
            str(path),
            "--tracking",
            "none",
            "--no-report",
            "--quiet",
            "--out",
            str(out),
        ]
    )
    assert status == 4
    err = capsys.readouterr().err
    assert "scenario unfired declares fault lookup_unavailable nth=9" in err
    assert len(list(out.rglob("recovery.json"))) == 3 and (out / "summary.csv").exists()
    coverage = json.loads((out / "coverage.json").read_text())
    assert [(f["fault"], f["fired"]) for f in coverage["faults"]] == [
        ("response_lost", 3),
        ("lookup_unavailable nth=9", 0),
    ]
    assert (
        main(
            [
                "explore",
                "--policy",
                "reconcile_and_reauthorize",
                "--scenario",
                str(path),
                "--depth",
                "1",
                "--swarm",
                "0",
                "--quiet",
                "--out",
                str(tmp_path / "ex"),
            ]
        )
        == 4
    )


def test_every_shipped_scenario_fires_every_fault_it_declares(tmp_path: Path) -> None:
    """Over the default grid, no declared fault of a shipped scenario goes unfired."""
    out = tmp_path / "grid"
    assert main(["run", "--tracking", "none", "--no-report", "--quiet", "--seed", "1", "--out", str(out)]) == 0
    coverage = json.loads((out / "coverage.json").read_text())
    assert coverage["unfired"] == 0 and len(coverage["faults"]) >= 45
    # And every operator event: each acted in some case.
    assert len(coverage["operator_events"]) >= 15 and all(e["fired"] for e in coverage["operator_events"])


def test_a_declared_operator_event_that_never_acts_fails_the_run_and_is_noted_by_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An operator event whose trigger never comes (a record no case makes) or that comes too late to act before
    the recovery deadline tests nothing, as an unfired fault does: it was silent, and check passed."""
    from harness.run.cell import CellResult, FaultCoverage

    doc = yaml.safe_load((SCENARIOS / "lost_response.yaml").read_text())
    doc["name"] = "quiet_operator"
    doc["operator"] = [
        {"do": "request_cancel", "when": {"after": {"actor": "worker", "event": "crashed", "nth": 1}}},
        {"do": "expire_approval", "when": {"after": {"actor": "worker", "event": "timeout"}, "delay_s": 119}},
        {"do": "request_cancel", "when": {"after": {"actor": "worker", "event": "timeout", "nth": 1}}},
    ]
    path = tmp_path / "quiet_operator.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    out = tmp_path / "run"
    args = ["--policy", "reconcile_and_reauthorize", "--scenario", str(path), "--seed", "1", "--seed", "2"]
    assert main(["run", *args, "--tracking", "none", "--no-report", "--quiet", "--out", str(out)]) == 4
    err = capsys.readouterr().err
    said = "harness: scenario quiet_operator declares operator event"
    came = "which fired in no case of this run (its trigger came in"
    assert f"{said} request_cancel after=worker.crashed nth=1, {came} 0 cases); fix: give it a trigger" in err
    assert f"{said} expire_approval after=worker.timeout nth=1 delay_s=119.0, {came} 2 cases)" in err
    assert "request_cancel after=worker.timeout" not in err
    coverage = json.loads((out / "coverage.json").read_text())
    assert [(f["fault"], f["index"], f["fired"]) for f in coverage["faults"]] == [("response_lost", 0, 2)]
    assert [(e["event"], e["index"], e["reached"], e["fired"]) for e in coverage["operator_events"]] == [
        ("request_cancel after=worker.crashed nth=1", 1, 0, 0),
        ("expire_approval after=worker.timeout nth=1 delay_s=119.0", 2, 2, 0),
        ("request_cancel after=worker.timeout nth=1", 3, 2, 2),
    ]
    assert coverage["unfired"] == 2
    # A resumed run's tally keeps which is which.
    tally = CellResult(coverage=(FaultCoverage("s", 1, "expire_approval at_s=1.0", 1, 0, "operator"),))
    assert CellResult.from_json(tally.to_json()).coverage == tally.coverage
    assert main(["check", *args[:4], "--seed-count", "1", "--out", str(tmp_path / "gate")]) == 0
    printed = capsys.readouterr().err
    assert (
        "note: scenario quiet_operator declares operator event request_cancel after=worker.crashed nth=1, which "
        "fired in no case of reconcile_and_reauthorize (its trigger came in 0 cases)" in printed
    )
    # Exploration judges the template as written the same way: exit 4, each event named, explore.json keying
    # them as coverage.json does. It counted faults only, and exited 0.
    ex = tmp_path / "ex"
    assert main(["explore", *args[:4], "--depth", "1", "--swarm", "0", "--quiet", "--out", str(ex)]) == 4
    err = capsys.readouterr().err
    explored = "which fired in no case of the policies explored (its trigger came in"
    assert f"{said} request_cancel after=worker.crashed nth=1, {explored} 0 cases); fix: give it a trigger" in err
    assert f"{said} expire_approval after=worker.timeout nth=1 delay_s=119.0, {explored} 1 case)" in err
    # check --explore says the same of the template as written, and says that is what it judged: its findings'
    # schedules may fire the event, and a note "in no explored case" read as false beside them.
    gate = ["check", *args[:4], "--seed-count", "1", "--explore", "--quiet", "--out", str(tmp_path / "gx")]
    main(gate)
    noted = capsys.readouterr().err
    assert (
        "request_cancel after=worker.crashed nth=1, which fired in no case of reconcile_and_reauthorize on the "
        "scenario as written (exploration's schedules may change when it fires)" in noted
    )
    assert "request_cancel after=worker.timeout" not in err
    assert json.loads((ex / "explore.json").read_text())["unfired"] == [
        {"scenario": "quiet_operator", "event": "request_cancel after=worker.crashed nth=1"},
        {"scenario": "quiet_operator", "event": "expire_approval after=worker.timeout nth=1 delay_s=119.0"},
    ]


def test_replay_of_a_recovery_json_is_byte_identical_and_a_tampered_one_is_not(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """replay re-runs the case from its reproduce command: the same bytes, exit 0; a changed file differs, exit 1."""
    out = tmp_path / "run"
    main(
        [
            "run",
            "--policy",
            "retry_same_key",
            "--scenario",
            "changed_task",
            "--seed",
            "2",
            "--tracking",
            "none",
            "--no-report",
            "--quiet",
            "--out",
            str(out),
        ]
    )
    (case,) = out.rglob("recovery.json")
    assert main(["replay", str(case)]) == 0
    printed = capsys.readouterr().out
    assert "replayed: the same as recorded" in printed
    assert "\n! " in printed and "\n* " in printed  # the fault and the anomaly's witnesses are marked
    tampered = json.loads(case.read_text())
    tampered["outcome"] = "correct"
    case.write_text(json.dumps(tampered, indent=2) + "\n")
    assert main(["replay", str(case)]) == 1
    assert "outcome: recorded" in capsys.readouterr().err


def test_replay_names_the_deepest_place_each_difference_is(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A difference deep in a long value (one field of a late timeline entry, one metric) is shown where it is,
    with both values: cutting the whole value to its first characters hid it, the two halves alike."""
    out = tmp_path / "run"
    args = ["--policy", "retry_same_key", "--scenario", "changed_task", "--seed", "2", "--tracking", "none"]
    main(["run", *args, "--no-report", "--quiet", "--out", str(out)])
    (case,) = out.rglob("recovery.json")
    tampered = json.loads(case.read_text())
    last = len(tampered["timeline"]) - 1
    tampered["timeline"][last]["data"]["planted"] = "r9"
    tampered["metrics"]["dispatches"] += 1
    tampered["attempts"].append("planted-x9")
    case.write_text(json.dumps(tampered, indent=2) + "\n")
    assert main(["replay", str(case)]) == 1
    lines = capsys.readouterr().err.splitlines()
    dispatches = tampered["metrics"]["dispatches"]
    assert lines == [
        f"harness: replay differs: attempts: recorded {len(tampered['attempts'])} entries, now {len(tampered['attempts']) - 1}",
        f"harness: replay differs: metrics.dispatches: recorded {dispatches}, now {dispatches - 1}",
        f'harness: replay differs: timeline[{last}].data.planted: recorded "r9", now nothing',
    ]


def test_replay_lists_ten_differences_then_how_many_more() -> None:
    from harness.run.replay import DIFFERENCES_SHOWN, _differences, _listed

    recorded = {"metrics": {f"m{i}": i for i in range(15)}, "timeline": [], "outcome": "correct"}
    now = {"metrics": {f"m{i}": i + 1 for i in range(15)}, "timeline": [{"index": 0}], "outcome": "correct"}
    found = list(_differences(recorded, now, ""))
    assert found[:2] == ["metrics.m0: recorded 0, now 1", "metrics.m1: recorded 1, now 2"]
    assert found[-1] == 'timeline: recorded [], now [{"index": 0}]' and len(found) == 16
    assert _listed(found) == [*found[:DIFFERENCES_SHOWN], f"and {16 - DIFFERENCES_SHOWN} more differences"]
    assert _listed(found[:DIFFERENCES_SHOWN]) == found[:DIFFERENCES_SHOWN]
    assert list(_differences({"a": 1}, {"a": True}, "")) == ["a: recorded 1, now true"]


def test_replay_refuses_a_file_that_names_no_case(tmp_path: Path) -> None:
    """A scenario without `reproduces`, or a file that is not a case, is one line and exit 2."""
    assert main(["replay", str(SCENARIOS / "lost_response.yaml")]) == 2
    junk = tmp_path / "recovery.json"
    junk.write_text("{}")
    assert main(["replay", str(junk)]) == 2


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [
        ("outcome", "bogus", "field 'reproduces.outcome': Input should be 'correct', 'escalated'"),
        ("properties", ["made_up_property"], "field 'reproduces.properties': 'made_up_property' is no property"),
        ("seed", 99999999999999999999999, "field 'reproduces.seed': 99999999999999999999999 is over"),
        ("policy", "nosuch", "field 'reproduces.policy': unknown policy 'nosuch'; fix: use one of"),
    ],
)
def test_replay_refuses_an_edited_reproduces_naming_its_field(
    tmp_path: Path, field: str, value: object, said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A finding file whose `reproduces:` was edited into something no case could be (an outcome or a property
    that does not exist, a seed --seed refuses, a policy that does not load): one line naming the file and the
    field, exit 2. They were replayed, and the difference blamed on the policy; the seed replayed as a seed."""
    doc = yaml.safe_load((SCENARIOS / "lost_response.yaml").read_text())
    doc["name"] = "edited"
    doc["reproduces"] = {"policy": "retry_new_key", "policy_revision": "1", "seed": 1, "outcome": "incorrect",
                         "properties": ["duplicate_effects"], field: value}  # fmt: skip
    path = tmp_path / "edited.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    assert main(["replay", str(path)]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"harness: {path}: {said}"), line


def test_findings_files_are_loadable_scenarios(tmp_path: Path) -> None:
    """The `reproduces` block is part of the scenario format; a wrong field in it is refused like any other."""
    doc = yaml.safe_load((SCENARIOS / "lost_response.yaml").read_text())
    doc["name"] = "with_reproduces"
    doc["reproduces"] = {"policy": "retry_new_key", "policy_revision": "1", "seed": 1, "outcome": "incorrect"}
    path = tmp_path / "with_reproduces.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    scenario = load_scenario(path)
    assert scenario.reproduces is not None and scenario.reproduces.seed == 1
    doc["reproduces"]["sed"] = 2
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    with pytest.raises(ScenarioError, match=r"reproduces\.sed"):
        load_scenario(path)


def test_a_case_counts_once_per_boundary_in_explorations_coverage(tmp_path: Path) -> None:
    """Two faults of a template at one boundary counted a case twice: 'lookup_unavailable' was reached in 83 cases
    of an exploration that judged 82. A case reaches a boundary, or fires it, once."""
    doc = yaml.safe_load((SCENARIOS / "lost_response.yaml").read_text())
    doc["name"] = "twice"
    doc["faults"] += [{"boundary": "lookup_unavailable", "nth": 1}, {"boundary": "lookup_unavailable", "nth": 2}]
    path = tmp_path / "twice.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    out = tmp_path / "ex"
    args = ["--policy", "reconcile_and_reauthorize", "--scenario", str(path), "--depth", "1", "--swarm", "0"]
    assert main(["explore", *args, "--quiet", "--tracking", "none", "--out", str(out)]) == 0
    explored = json.loads((out / "explore.json").read_text())
    site = explored["coverage"]["lookup_unavailable"]
    assert site["reached"] == site["fired"] == explored["cases"] > 0
    assert all(c["fired"] <= c["reached"] <= explored["cases"] for c in explored["coverage"].values())


def test_every_property_an_exploration_counts_has_a_finding_that_shows_it() -> None:
    """Shrinking kept any violation, and findings of one shape are one: lost_response's exploration counted
    thousands of unauthorized dispatches and effects after a cancellation with no finding showing either (its one
    finding was a duplicate effect). A property a violating case shows that no finding of its policy shows yet is
    shrunk for on its own; each finding still replays to the properties it names."""
    found = explore_job(ExploreJob(("retry_new_key",), "lost_response", 1, 0, (1,)))
    counted = set(found.violations["retry_new_key"])
    assert {"duplicate_effects", "unauthorized_dispatches", "effects_after_cancel"} <= counted
    assert counted <= {p for f in found.findings for p in f.properties}
    template, policy = shipped("lost_response"), load_policy("retry_new_key")

    def violated(schedule: Schedule, seed: int) -> set[str]:
        judged = check(simulate(apply(template, schedule), policy, seed).evidence)
        return {n for n, v in judged.checks.items() if v == "false"}

    for f in found.findings:
        assert violated(f.schedule, f.seed) == set(f.properties)
        # 1-minimal for what it was shrunk for: without any one element, some property it shows is gone.
        for e in f.schedule.elements:
            assert not set(f.properties) <= violated(f.schedule.without(e), f.seed), (f.properties, e.key)


BRIDGE_TEMPLATE = """\
name: deploy_bridge
revision: "1"
description: A bridge in front of a deploy tool that deduplicates nothing; the connection breaks after forwarding.
task: {task_id: deploy-9, revision: 3, target: prod/api, model: v42, digest: "sha256:abab"}
approval: {approval_id: apr-3, expires_at_s: 90}
action_id: d1
recovery_deadline_s: 100
bridge: {block_after_uncertain: true}
destination: {dedupe: none}
faults:
  - {boundary: bridge_connection_error, nth: 1, forwarded: true}
"""
RETRY_ONCE = """\
from harness.policy import Escalate, LookUp, RecordEffect, RetrySameAction, Stop

class RetryOnce:
    name, revision = "retry_once", "1"

    def decide(self, situation):
        if situation.recorded is not None or situation.escalated:
            return Stop()
        for r in situation.observed_receipts():
            if r.status == "applied":
                return RecordEffect(receipt_id=r.receipt_id)
        if len(situation.attempts) < 2:
            return RetrySameAction(claim=False)
        if len(situation.lookups) < 2:
            return LookUp()
        return Escalate(reason="gave up")

POLICY = RetryOnce()
"""


def test_findings_do_not_depend_on_how_the_schedules_are_split(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """One process, two, and two shards merged by load_explorations: the same findings, file for file. Shrinking
    again for a property no finding of the job showed yet made each part choose its own (5 findings in one
    process, 7 in two, 7 from the shards), so check --explore passed or failed with --concurrency."""
    from harness.present.analysis import load_explorations

    (tmp_path / "deploy_bridge.yaml").write_text(BRIDGE_TEMPLATE)
    (tmp_path / "retry_once_policy.py").write_text(RETRY_ONCE)
    monkeypatch.syspath_prepend(str(tmp_path))
    base = ["explore", "--policy", "verify_before_mutation", "--policy", "retry_once_policy:POLICY",
            "--scenario", str(tmp_path / "deploy_bridge.yaml"), "--tracking", "none", "--quiet"]  # fmt: skip
    runs = {
        "one": ["--concurrency", "1"],
        "two": ["--concurrency", "2"],
        "shard0": ["--shard", "0/2"],
        "shard1": ["--shard", "1/2"],
    }
    said = {}
    for name, extra in runs.items():
        assert main([*base, *extra, "--out", str(tmp_path / name)]) == 1
        said[name] = capsys.readouterr().out
    assert "these are candidates" in said["shard0"] and "these are candidates" not in said["one"]

    def files(out: Path) -> dict[str, str]:
        return {p.relative_to(out).as_posix(): p.read_text() for p in sorted((out / "findings").rglob("*.yaml"))}

    assert files(tmp_path / "one") and files(tmp_path / "one") == files(tmp_path / "two")
    whole = load_explorations(tmp_path / "one").findings
    merged = load_explorations([tmp_path / "shard0", tmp_path / "shard1"]).findings
    columns = ["policy", "template", "shape", "properties", "seed"]
    assert sorted(map(tuple, whole[columns].values)) == sorted(map(tuple, merged[columns].values))
    # Every property a policy's exploration counts has a finding that shows it.
    summary = json.loads((tmp_path / "one" / "explore.json").read_text())
    for row in summary["explorations"]:
        shown = {p for f in summary["findings"] if f["policy"] == row["policy"] for p in f["properties"]}
        assert set(row["violations_by_property"]) <= shown, row["policy"]


def test_an_exploration_loads_as_the_findings_it_wrote(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """load_explorations of one exploration gives every finding it wrote, file for file. explore.json kept the
    ``kept`` of each finding's first copy, so one written because another copy was reached shrinking for any
    violation read back as kept for a property already shown, and was left out (10 of 30 here)."""
    from harness.present.analysis import load_explorations

    out = tmp_path / "x"
    args = ["explore", "--policy", "retry_same_key", "--scenario", "connector_no_record_yet", "--seed-count", "3",
            "--depth", "1", "--tracking", "none", "--quiet", "--out", str(out)]  # fmt: skip
    assert main(args) == 1
    capsys.readouterr()
    written = sorted(str(p) for p in (out / "findings").rglob("*.yaml"))
    assert len(written) > 10
    assert sorted(load_explorations(out).findings["file"]) == written


def test_a_shape_reached_keeping_two_properties_shows_both_where_needed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """retry_new_key against absent_then_late_original violates effects_after_cancel in 24 cases. Shrinking
    keeping that property reaches a shape that shrinking keeping unauthorized_dispatches had reached first; a job
    kept only the first copy of a shape shrunk for one property, so no finding showed effects_after_cancel."""
    out = tmp_path / "x"
    args = ["explore", "--policy", "retry_new_key", "--scenario", "absent_then_late_original", "--seed-count", "3",
            "--depth", "1", "--tracking", "none", "--quiet", "--out", str(out)]  # fmt: skip
    assert main(args) == 1
    capsys.readouterr()
    summary = json.loads((out / "explore.json").read_text())
    (row,) = summary["explorations"]
    shown = {p for f in summary["findings"] for p in f["properties"]}
    assert "effects_after_cancel" in row["violations_by_property"]
    assert set(row["violations_by_property"]) <= shown, set(row["violations_by_property"]) - shown


def test_the_needed_findings_are_chosen_over_every_copy() -> None:
    """Copies of one finding from two parts, or shrunk keeping two properties: it is written once, at its first
    copy, when any copy was reached by shrinking for any violation (even if its first copy shrank keeping one
    property), and what that first copy shows counts as shown (not what another copy shows); a later finding
    kept only for a property shown before it is left out, one kept for a property no finding of its policy and
    template shows is written, at its first copy that keeps such a property. Choosing again over what was
    chosen, each reached for any violation marked so, gives the same."""
    from harness.model import needed_findings

    def f(name: str, key: str, kept: str | None, props: str, group: str = "g1") -> dict[str, Any]:
        return {"name": name, "key": key, "kept": kept, "props": props.split(), "group": group}

    findings = [
        f("a-kept-P", "a", "P", "P R"),  # first seen; its part shrank it keeping P
        f("b-kept-Q", "b", "Q", "Q"),  # Q is shown by no finding reached for any violation: written
        f("a-any", "a", None, "P S"),  # another part reached the same shape shrinking for any violation
        f("c-kept-R", "c", "R", "R"),  # R is shown already, by a's first copy
        f("d-kept-Q", "d", "Q", "Q"),  # Q is shown already, by b
        f("e-kept-S", "e", "S", "S"),  # S is shown only by a copy of a that is not written: e is
        f("g-kept-R", "g", "R", "R T"),  # R is shown: not this copy...
        f("g-kept-T", "g", "T", "R T"),  # ...but this one, which kept T, shown by nothing before it
        f("x-kept-P", "x", "P", "P", group="g2"),  # another policy or template: P is not shown there
        f("y-kept-P", "y", "P", "P", group="g2"),  # shown by x
    ]

    def choose(given: list[dict[str, Any]]) -> list[str]:
        chosen = needed_findings(
            given,
            key=lambda x: x["key"],
            group=lambda x: x["group"],
            kept=lambda x: x["kept"],
            properties=lambda x: x["props"],
        )
        return [x["name"] for x in chosen]

    assert choose(findings) == ["a-kept-P", "b-kept-Q", "e-kept-S", "g-kept-T", "x-kept-P"]
    written = [{**x, "kept": None} if x["key"] == "a" else x for x in findings if x["name"] in choose(findings)]
    assert choose(written) == choose(findings)


def test_a_finding_that_does_not_replay_is_said_under_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A policy that counts its calls across cases gives findings that do not replay; explore printed their
    replay commands with no word of it (`check --explore` warns). Each finding shown is replayed: one that
    differs is said under its line, and the cause once after the list; a policy that decides from the Situation
    alone gets no warning."""
    module = f"flipping_{tmp_path.name}"
    (tmp_path / f"{module}.py").write_text(
        "from harness.policy import RetryNewKey, Stop\n"
        "class Flipping:\n"
        "    name, revision, calls = 'flipping', '1', 0\n"
        "    def decide(self, situation):\n"
        "        type(self).calls += 1\n"
        "        return RetryNewKey() if type(self).calls % 3 == 0 else Stop()\n"
        "POLICY = Flipping()\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    args = ["--scenario", "lost_response", "--depth", "1", "--swarm", "0", "--tracking", "none", "--quiet"]
    assert main(["explore", "--policy", f"{module}:POLICY", *args, "--out", str(tmp_path / "flip")]) == 1
    lines = capsys.readouterr().out.splitlines()
    shown = [i for i, line in enumerate(lines) if ": python -m harness replay " in line]
    warned = [i - 1 for i, line in enumerate(lines) if line.startswith("    warning: it does not replay: ")]
    assert shown and warned and set(warned) <= set(shown), lines
    assert lines[-1].startswith("  warning: a finding above does not replay: the policy's revision is the one")
    assert main(["explore", "--policy", "retry_new_key", *args, "--out", str(tmp_path / "steady")]) == 1
    said = capsys.readouterr().out
    assert ": python -m harness replay " in said and "warning" not in said


def test_a_finding_of_a_users_policy_replays_from_any_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A finding's file is its repro file, yet for a user's policy it did not say where the policy's module was
    imported from, as check's repro files do: ``harness replay`` of it from another folder failed ("No module
    named ..."). It now names that folder, ``reproduces: policy_path``, and replays from anywhere."""
    home = tmp_path / "user project"
    (home / "mine_explored").mkdir(parents=True)
    (home / "mine_explored" / "__init__.py").write_text(
        "from policies.retry_new_key import POLICY as _RETRY\n\n"
        "class Blind:\n    name, revision = 'blind_explored', '1'\n\n"
        "    def decide(self, situation):\n        return _RETRY.decide(situation)\n\n"
        "BLIND = Blind()\n"
    )
    monkeypatch.syspath_prepend(str(home))
    monkeypatch.setitem(sys.modules, "mine_explored", None)  # undone after the test: the module is let go
    del sys.modules["mine_explored"]
    options = ExploreOptions(out=tmp_path / "out", depth=1, swarm=0, tracking="none", isolate=False)
    summary = explore(["mine_explored:BLIND"], ["lost_response"], options)
    assert summary.findings
    _, path = summary.findings[0]
    assert yaml.safe_load(path.read_text())["reproduces"]["policy_path"] == str(home)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    again = subprocess.run(
        [sys.executable, "-m", "harness", "replay", str(path)],
        cwd=elsewhere,
        capture_output=True,
        text=True,
        timeout=120,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
    )
    assert again.returncode == 0, again.stderr + shlex.join(again.args)
    assert "the same as recorded" in again.stdout + again.stderr
