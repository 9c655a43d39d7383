"""An exploration from its call to its files (harness/explore/__init__.py): the summary it sums up, the findings it
numbers and writes as runnable scenarios, explore.json, the cases it could not run, and what it leaves when it is
stopped or cannot write. Written for the thirty-sixth mutation pass (tests/MUTANTS.md); every exploration here
runs in process (``isolate=False``), at depth 1 with no swarm, in well under a second."""

from __future__ import annotations

import errno
import json
import os
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

import harness.explore as exploration
from harness.errors import NotWritten
from harness.explore import Exploration, ExploreOptions, ExploreSummary, explore, explore_json, finding_yaml
from harness.explore.schedule import Schedule, element, elements_of
from harness.explore.search import Finding, JobResult, shape
from harness.run.folder import LOCK_FILE
from harness.run.plan import UsageError
from harness.run.replay import replay
from harness.scenario import Scenario, list_scenarios, scenario_cases

SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"
POLICIES = ["retry_new_key", "reconcile_and_reauthorize"]


def _template() -> Scenario:
    return scenario_cases("lost_response")[0][1]


def _options(out: Path, **changes: Any) -> ExploreOptions:
    values: dict[str, Any] = {"out": out, "depth": 1, "swarm": 0, "tracking": "none", "isolate": False}
    return ExploreOptions(**{**values, **changes})


# Per test, not per module (an exploration takes a fifth of a second): mutmut runs for a mutant only the tests it
# saw reach the mutated function, and a module's fixture reaches it inside the first test alone.
@pytest.fixture
def explored(tmp_path: Path) -> tuple[ExploreSummary, dict[str, Any]]:
    out = tmp_path / "out"
    summary = explore(POLICIES, ["lost_response"], _options(out))
    return summary, json.loads((out / "explore.json").read_text(encoding="utf-8"))


# -- the summary and explore.json ---------------------------------------------------------------------------------


def test_each_policy_meets_the_same_schedules_and_the_summary_sums_them(
    explored: tuple[ExploreSummary, dict[str, Any]],
) -> None:
    summary, _ = explored
    retry, reconcile = summary.explorations
    assert (retry.policy, reconcile.policy) == ("retry_new_key", "reconcile_and_reauthorize")
    assert (retry.policy_spec, retry.scenario_spec, retry.scenario_name) == (
        "retry_new_key",
        "lost_response",
        "lost_response",
    )
    assert retry.scenario_revision == _template().revision
    assert retry.schedules == reconcile.schedules > 10
    assert summary.schedules == retry.schedules  # per policy, not summed over them
    assert retry.cases == reconcile.cases >= retry.schedules
    assert summary.cases == retry.cases + reconcile.cases
    assert summary.simulated == retry.simulated + reconcile.simulated and retry.simulated > 0 < reconcile.simulated
    assert reconcile.violating == 0 and not reconcile.findings and not reconcile.violations
    assert retry.violating > 0 and summary.violating == retry.violating
    assert summary.violations == retry.violations and sum(retry.violations.values()) >= retry.violating
    assert summary.findings == retry.findings and retry.errors == reconcile.errors == 0
    assert summary.coverage and all(reached >= fired for reached, fired in summary.coverage.values())
    assert summary.out.is_dir() and summary.elapsed_s > 0
    assert summary.tracking.ok and summary.tracking.message is None and summary.polyaxon_runs == {}


def test_explore_json_says_what_was_explored_and_found(explored: tuple[ExploreSummary, dict[str, Any]]) -> None:
    summary, data = explored
    assert (data["policies"], data["scenarios"]) == (POLICIES, ["lost_response"])
    assert (data["depth"], data["swarm"], data["seeds"], data["shard"], data["shards"]) == (1, 0, [1], 0, 1)
    assert (data["schedules"], data["cases"], data["simulated"]) == (
        summary.schedules,
        summary.cases,
        summary.simulated,
    )
    assert data["violating_cases"] == summary.violating
    assert data["violations_by_property"] == dict(sorted(summary.violations.items()))
    assert list(data["violations_by_property"]) == sorted(data["violations_by_property"])
    rows = data["explorations"]
    assert [(r["policy"], r["policy_spec"], r["scenario"]) for r in rows] == [(p, p, "lost_response") for p in POLICIES]
    for row, e in zip(rows, summary.explorations, strict=True):
        assert row == {
            "policy": e.policy,
            "policy_spec": e.policy_spec,
            "policy_revision": e.policy_revision,
            "scenario": e.scenario_spec,
            "scenario_revision": e.scenario_revision,
            "schedules": e.schedules,
            "cases": e.cases,
            "simulated": e.simulated,
            "violating_cases": e.violating,
            "violations_by_property": dict(sorted(e.violations.items())),
            "findings": len(e.findings),
        }
    assert len(data["findings"]) == len(summary.findings) > 0
    for shown, (finding, path) in zip(data["findings"], summary.findings, strict=True):
        assert shown["file"] == str(path.relative_to(summary.out)) and (summary.out / shown["file"]).is_file()
        assert (shown["policy"], shown["scenario"], shown["template"]) == (
            "retry_new_key",
            "lost_response",
            "lost_response",
        )
        assert shown["shape"] == shape(finding.schedule) and shown["properties"] == list(finding.properties)
        assert (shown["outcome"], shown["seed"], shown["first_seen"], shown["kept"]) == (
            finding.outcome,
            finding.seed,
            finding.first_seen,
            finding.kept,
        )
        assert shown["schedule"] and all(isinstance(s, str) for s in shown["schedule"])
    assert data["coverage"] == {b: {"reached": r, "fired": f} for b, (r, f) in sorted(summary.coverage.items())}
    assert list(data["coverage"]) == sorted(data["coverage"])
    assert (data["unfired"], data["errors"], data["tracking"], data["polyaxon_runs"]) == ([], [], "none", {})
    assert data["elapsed_s"] == summary.elapsed_s
    assert (summary.out / "explore.json").read_text(encoding="utf-8").endswith("}\n")


# -- findings as scenario files -----------------------------------------------------------------------------------


def test_findings_are_numbered_per_policy_and_each_replays_as_found(
    explored: tuple[ExploreSummary, dict[str, Any]],
) -> None:
    summary, _ = explored
    paths = [path for _, path in summary.findings]
    assert paths == [
        summary.out / "findings" / "retry_new_key" / f"lost_response-{n}.yaml" for n in range(1, len(paths) + 1)
    ]
    for n, (finding, path) in enumerate(summary.findings, start=1):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        assert list(data)[:4] == ["name", "revision", "description", "reproduces"]
        assert data["name"] == f"lost_response-{n}"
        assert data["revision"] == f"{_template().revision}+explore"
        assert data["reproduces"] == {
            "policy": "retry_new_key",
            "policy_revision": finding.policy_revision,
            "seed": finding.seed,
            "outcome": finding.outcome,
            "properties": list(finding.properties),
        }
        assert data["description"].startswith(
            f"Found by harness explore from lost_response: retry_new_key (revision {finding.policy_revision}) at "
            f"seed {finding.seed} is {finding.outcome}, violating {', '.join(finding.properties)}. Minimal schedule: "
        )
        assert "token" not in data["approval"] and data["approval"]["approval_id"]
        assert replay(path).differences == (), path  # the file is the case: it replays as it was found


def test_a_findings_file_holds_exactly_its_schedule_and_says_it_in_words() -> None:
    template = _template()
    fault = element("fault", {"boundary": "request_lost", "nth": 2})
    late = element("operator", {"do": "request_cancel", "when": {"at_s": 5.0}, "reason": "stop"})
    finding = _finding(Schedule((fault,)), error=None)
    text = finding_yaml(template, finding, 7)
    assert any(95 < len(line) <= 112 for line in text.splitlines())  # wrapped at 110, not at YAML's default 80
    data = yaml.safe_load(text)
    assert data["name"] == "lost_response-7"
    assert data["faults"] == [{"boundary": "request_lost", "nth": 2}] and data["operator"] == []
    assert data["description"].endswith(
        f"Minimal schedule: request_lost nth=2. Template: {template.description.strip()}"
    )
    both = yaml.safe_load(finding_yaml(template, _finding(Schedule((fault, late))), 1))
    assert both["faults"] == [{"boundary": "request_lost", "nth": 2}]
    assert both["operator"] == [{"do": "request_cancel", "when": {"at_s": 5.0}, "reason": "stop"}]
    shown = "Minimal schedule: request_lost nth=2; request_cancel when={'at_s': 5.0} reason=stop."
    assert shown in both["description"]
    bare = yaml.safe_load(finding_yaml(template, _finding(Schedule(())), 1))
    assert "Minimal schedule: (the template's own schedule)." in bare["description"]
    assert bare["faults"] == [] and bare["operator"] == []


def test_a_case_that_could_not_be_judged_is_written_without_reproduces_saying_what_happened() -> None:
    template = _template()
    finding = _finding(Schedule(()), error="over its 2 s budget")
    data = yaml.safe_load(finding_yaml(template, finding, 1))
    assert "reproduces" not in data
    assert list(data)[:3] == ["name", "revision", "description"]
    assert data["description"] == (
        "Found by harness explore from lost_response: retry_new_key (revision 3) at seed 5 could not be judged: over "
        f"its 2 s budget. Schedule: (the template's own schedule). Template: {template.description.strip()}"
    )


def _finding(schedule: Schedule, error: str | None = None, **changes: Any) -> Finding:
    values: dict[str, Any] = {
        "policy": "retry_new_key",
        "policy_spec": "retry_new_key",
        "policy_revision": "3",
        "scenario": "lost_response",
        "scenario_spec": "lost_response",
        "properties": ("no_duplicate_effect",),
        "outcome": "incorrect",
        "seed": 5,
        "schedule": schedule,
        "first_seen": 0,
        "error": error,
    }
    return Finding(**{**values, **changes})


# -- cases the harness could not run ----------------------------------------------------------------------------


def test_each_case_over_its_budget_is_written_once_with_the_command_that_reruns_it(tmp_path: Path) -> None:
    template = _template()
    stuck = _finding(Schedule(()), error="over its 2 s budget", outcome="harness_error")
    other = replace(stuck, policy="retry_same_key", policy_spec="pkg.mod:P b", seed=9)
    lines = exploration._write_stuck(
        tmp_path, [stuck, other, stuck], {"lost_response": template}, _options(tmp_path, case_timeout_s=2.0)
    )
    first = tmp_path / "errors" / "retry_new_key" / "lost_response-1.yaml"
    second = tmp_path / "errors" / "retry_same_key" / "lost_response-1.yaml"
    assert [command for _, command in lines] == [
        f"python -m harness run --policy retry_new_key --scenario {first} --seed 5 --case-timeout 2",
        f"python -m harness run --policy 'pkg.mod:P b' --scenario {second} --seed 9 --case-timeout 2",
    ]
    assert lines[0][0] == (
        "lost_response: retry_new_key seed 5: over its 2 s budget; this policy's other schedules of lost_response "
        f"were not explored in this part of the exploration; reproduce: {lines[0][1]}"
    )
    assert yaml.safe_load(first.read_text())["name"] == "lost_response-1" and second.is_file()
    again = replace(stuck, schedule=Schedule((element("fault", {"boundary": "request_lost"}),)))
    lines = exploration._write_stuck(tmp_path, [stuck, again], {"lost_response": template}, _options(tmp_path))
    assert [command.split("--scenario ")[1].split(" ")[0] for _, command in lines] == [
        str(tmp_path / "errors" / "retry_new_key" / f"lost_response-{n}.yaml") for n in (1, 2)
    ]
    assert all(command.endswith("--seed 5 --case-timeout 60") for _, command in lines)


# -- templates of several cases, shards, concurrency, unfired faults ---------------------------------------------


def test_a_template_of_several_cases_is_named_by_its_own_name(tmp_path: Path) -> None:
    summary = explore(["retry_new_key"], ["connector_crash_points"], _options(tmp_path / "out"))
    (row,) = summary.explorations
    cases = [case for case, _ in scenario_cases("connector_crash_points")]
    assert (row.scenario_spec, row.scenario_name) == ("connector_crash_points", "connector_crash_points")
    data = json.loads((tmp_path / "out" / "explore.json").read_text())
    assert data["scenarios"] == cases and len(cases) == 4
    assert row.schedules == data["schedules"] > 0 and row.cases == data["cases"]
    assert exploration._case_name("connector_crash_points") == "connector_crash_points"
    assert exploration._case_name("lost_response") == "lost_response"
    assert exploration._case_names("connector_crash_points") == {
        s.name for _, s in scenario_cases("connector_crash_points")
    }
    assert exploration._shown_name(tuple(scenario_cases("lost_response"))) == "lost_response"
    assert exploration._shown_name(tuple(scenario_cases("connector_crash_points"))) == "connector_crash_points"


def test_a_scenario_asked_twice_is_explored_once(tmp_path: Path) -> None:
    summary = explore(["retry_new_key"], ["lost_response", "lost_response"], _options(tmp_path / "out"))
    assert len(summary.explorations) == 1


def test_shards_and_processes_split_the_schedules_and_say_which_part_ran(tmp_path: Path) -> None:
    whole = explore(["retry_new_key"], ["lost_response"], _options(tmp_path / "w"))
    parts: list[tuple[int, int, int, int]] = []
    halves = [
        explore(
            ["retry_new_key"],
            ["lost_response"],
            _options(tmp_path / f"h{i}", shard=i, shards=2, concurrency=2),
            lambda done, total, r: parts.append((done, total, r.shard, r.shards)),
        )
        for i in (0, 1)
    ]
    assert sum(h.schedules for h in halves) == whole.schedules
    assert parts == [(1, 2, 0, 4), (2, 2, 2, 4), (1, 2, 1, 4), (2, 2, 3, 4)]
    data = json.loads((tmp_path / "h1" / "explore.json").read_text())
    assert (data["shard"], data["shards"]) == (1, 2)


def _unfired(tmp_path: Path) -> Path:
    """lost_response with a lookup fault at the 9th lookup, which no case reaches."""
    doc = yaml.safe_load((SCENARIOS / "lost_response.yaml").read_text())
    doc["name"] = "unfired"
    doc["faults"] = [*doc["faults"], {"boundary": "lookup_unavailable", "nth": 9}]
    path = tmp_path / "unfired.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_a_declared_fault_that_never_fires_is_listed_as_unfired(tmp_path: Path) -> None:
    path = _unfired(tmp_path)
    summary = explore(["reconcile_and_reauthorize"], [str(path)], _options(tmp_path / "out"))
    assert [(u.scenario, u.fault) for u in summary.unfired] == [("unfired", "lookup_unavailable nth=9")]
    data = json.loads((tmp_path / "out" / "explore.json").read_text())
    assert data["unfired"] == [{"scenario": "unfired", "fault": "lookup_unavailable nth=9"}]


# -- refusals, interruptions, a full disk -----------------------------------------------------------------------


def test_more_than_one_cell_inside_a_polyaxon_job_is_refused_before_anything_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(exploration, "is_managed", lambda: True)
    with pytest.raises(UsageError) as caught:
        explore(POLICIES, ["lost_response"], _options(tmp_path / "out", tracking="offline"))
    assert str(caught.value) == (
        "inside a Polyaxon job the harness logs into that job's one run, but 2 policies x 1 scenarios were asked "
        "for; fix: pass one --policy and one --scenario (as polyaxonfiles/explore-component.yaml does)"
    )
    assert not (tmp_path / "out").exists()
    with pytest.raises(UsageError):
        explore(["retry_new_key"], ["lost_response", "uncertain_lookup"], _options(tmp_path / "o", tracking="offline"))
    summary = explore(POLICIES, ["lost_response"], _options(tmp_path / "none"))  # untracked: any number of cells
    assert len(summary.explorations) == 2


def test_an_interrupted_exploration_removes_what_it_wrote_and_a_folder_it_made(tmp_path: Path) -> None:
    def stop(*_: object) -> None:
        raise KeyboardInterrupt

    out = tmp_path / "made"
    with pytest.raises(KeyboardInterrupt) as caught:
        explore(["retry_new_key"], ["lost_response"], _options(out), stop)
    assert str(caught.value) == (
        f"interrupted; an exploration is not resumable, and what it wrote in {out} is removed: run the same command "
        "again"
    )
    assert not out.exists()


def test_an_interrupted_exploration_into_a_folder_the_user_made_leaves_it_empty(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "given"
    out.mkdir()
    real = exploration.write_atomic

    def written_then_stopped(path: Path, text: str) -> None:
        real(path, text)
        if path.name == "explore.json":
            raise KeyboardInterrupt

    monkeypatch.setattr(exploration, "write_atomic", written_then_stopped)
    with pytest.raises(KeyboardInterrupt):
        explore(["retry_new_key"], ["lost_response"], _options(out))
    assert out.is_dir() and list(out.iterdir()) == []  # the findings, explore.json and the lock all gone


def test_an_exploration_that_cannot_write_says_so_and_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(path: Path, text: str) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(exploration, "write_atomic", full)
    out = tmp_path / "out"
    with pytest.raises(NotWritten) as caught:
        explore(["retry_new_key"], ["lost_response"], _options(out))
    assert (caught.value.folder, caught.value.reason) == (out, "No space left on device")
    assert str(caught.value) == (
        f"cannot write the exploration's files in {out} (No space left on device); fix: make room or give a "
        "writable folder, then explore again"
    )
    assert not out.exists()

    def broken(path: Path, text: str) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(exploration, "write_atomic", broken)
    with pytest.raises(OSError, match="Input/output error"):  # not a want of room: the harness's own failure
        explore(["retry_new_key"], ["lost_response"], _options(tmp_path / "other"))


def test_a_finished_exploration_leaves_no_lock_and_its_folder_can_be_claimed_again(tmp_path: Path) -> None:
    out = tmp_path / "out"
    explore(["reconcile_and_reauthorize"], ["lost_response"], _options(out))
    assert not (out / LOCK_FILE).exists() and (out / "explore.json").is_file()


def test_discard_empties_a_given_folder_without_following_links(tmp_path: Path) -> None:
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    (out / "findings" / "p").mkdir(parents=True)
    (out / "findings" / "p" / "a.yaml").write_text("")
    (out / "explore.json").write_text("")
    (out / LOCK_FILE).write_text("")
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_text("")
    os.symlink(elsewhere, out / "link")
    exploration._discard(out, keep_folder=True)
    assert sorted(p.name for p in out.iterdir()) == [LOCK_FILE]  # the hold stays until it is released
    assert (elsewhere / "keep.txt").is_file()
    exploration._discard(out, keep_folder=False)
    assert not out.exists() and elsewhere.is_dir()


def test_coverage_adds_up_site_by_site() -> None:
    total: dict[str, list[int]] = {"a": [1, 2]}
    exploration._add_coverage(total, {"a": [2, 1], "b": [3, 3]})
    exploration._add_coverage(total, {})
    assert total == {"a": [3, 3], "b": [3, 3]}


def test_explore_json_of_a_summary_keys_an_unfired_operator_event_as_event(tmp_path: Path) -> None:
    from harness.run.cell import FaultCoverage

    summary = ExploreSummary(
        tmp_path,
        explorations=[
            Exploration("p", "p", "1", "s", "1", schedules=4),
            Exploration("q", "q", "1", "s", "1", schedules=4),
            Exploration("p", "p", "1", "t", "1", schedules=3),
        ],
        unfired=[FaultCoverage("s", 1, "revise_task at 5", 0, 0, kind="operator")],
        errors=["s: boom"],
        polyaxon_runs={"p x s": "abc"},
    )
    assert summary.schedules == 7  # p met 4 + 3, q met 4: per policy, the most
    data = json.loads(explore_json(summary, _options(tmp_path, shard=1, shards=3), ["p", "q"], ["s", "t"]))
    assert data["unfired"] == [{"scenario": "s", "event": "revise_task at 5"}]
    assert (data["errors"], data["polyaxon_runs"], data["shard"], data["shards"]) == (
        ["s: boom"],
        {"p x s": "abc"},
        1,
        3,
    )
    assert data["findings"] == [] and data["schedules"] == 7
    assert ExploreSummary(tmp_path).schedules == 0 and Counter() == ExploreSummary(tmp_path).violations


# -- tracked: one Polyaxon run per (policy, scenario) ----------------------------------------------------------


def test_each_policy_and_scenario_explored_is_one_offline_run_with_its_own_explore_json(tmp_path: Path) -> None:
    from test_tracking import read_offline

    out = tmp_path / "out"
    summary = explore(POLICIES, ["lost_response"], _options(out, tracking="offline", seeds=(2,)))
    runs = {r["name"]: r for r in read_offline(out / "polyaxon")}
    assert sorted(runs) == ["explore-reconcile_and_reauthorize-lost_response", "explore-retry_new_key-lost_response"]
    assert summary.polyaxon_runs == {
        f"{p} x lost_response": runs[f"explore-{p}-lost_response"]["uuid"] for p in POLICIES
    }
    assert summary.tracking.ok and summary.tracking.message is not None and str(out) in summary.tracking.message
    assert summary.tracking.message.endswith(f"send to a server: python -m harness push {out}")  # its own project
    for e in summary.explorations:
        run = runs[f"explore-{e.policy}-lost_response"]
        assert run["status"] == "succeeded"
        inputs = {k: v for k, v in run["inputs"].items() if k != "harness_version"}
        assert inputs == {
            "policy": e.policy,
            "policy_revision": e.policy_revision,
            "scenario": "lost_response",
            "scenario_revision": e.scenario_revision,
            "depth": 1,
            "swarm": 0,
            "seeds": [2],
            "shard": 0,
            "shards": 1,
        }
        outputs = run["outputs"]
        assert (outputs["schedules"], outputs["cases"]) == (e.schedules, e.cases)
        assert (outputs["violating_cases"], outputs["findings"]) == (e.violating, len(e.findings))
        files = ["explore.json", *(str(path.relative_to(out)) for _, path in e.findings)]
        assert list(run["files"]) == files
        for _, path in e.findings:
            assert run["files"][str(path.relative_to(out))] == path.read_text()
        own = json.loads((out / "polyaxon" / "runs" / run["uuid"] / "outputs" / "explore.json").read_text())
        assert own["policies"] == [e.policy_spec] and own["scenarios"] == ["lost_response"]
        assert [r["policy"] for r in own["explorations"]] == [e.policy]
        assert own["coverage"] == {b: {"reached": r, "fired": f} for b, (r, f) in sorted(e.coverage.items())}
        assert (own["schedules"], own["cases"], own["findings"]) == (
            e.schedules,
            e.cases,
            [f for f in json.loads((out / "explore.json").read_text())["findings"] if f["policy"] == e.policy],
        )
        assert own["elapsed_s"] == summary.elapsed_s


def test_an_unfired_fault_goes_to_the_run_of_its_own_template_only(tmp_path: Path) -> None:
    path = _unfired(tmp_path)
    out = tmp_path / "out"
    summary = explore(["reconcile_and_reauthorize"], [str(path), "lost_response"], _options(out, tracking="offline"))
    by_scenario = {
        e.scenario_spec: summary.polyaxon_runs[f"reconcile_and_reauthorize x {e.scenario_spec}"]
        for e in summary.explorations
    }
    own = {
        spec: json.loads((out / "polyaxon" / "runs" / uuid / "outputs" / "explore.json").read_text())
        for spec, uuid in by_scenario.items()
    }
    assert own[str(path)]["unfired"] == [{"scenario": "unfired", "fault": "lookup_unavailable nth=9"}]
    assert own["lost_response"]["unfired"] == []


def test_the_name_of_a_template_with_a_dash_and_its_variants_is_its_own(tmp_path: Path) -> None:
    """A run is named for the template, not one of its variants (``<name>-<phase>``), whatever its name holds."""
    doc = yaml.safe_load((SCENARIOS / "connector_crash_points.yaml").read_text())
    doc["name"] = "crash-points"
    path = tmp_path / "crash-points.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    assert exploration._case_name(str(path)) == "crash-points"
    assert exploration._shown_name(tuple(scenario_cases(str(path)))) == "crash-points"
    single = yaml.safe_load((SCENARIOS / "lost_response.yaml").read_text())
    single["name"] = "lost-reply"
    one = tmp_path / "lost-reply.yaml"
    one.write_text(yaml.safe_dump(single, sort_keys=False))
    assert exploration._case_name(str(one)) == "lost-reply"


def test_shards_write_every_finding_the_whole_could_need_and_load_as_the_whole(tmp_path: Path) -> None:
    """A finding is kept per shape, for the property shrinking kept; a shard writes every copy the choice over
    all shards may need, and the loader merging them chooses what one exploration chose."""
    from harness.present.analysis import load_explorations

    def explored(name: str, **changes: Any) -> ExploreSummary:
        options = _options(tmp_path / name, seeds=(1, 2, 3), **changes)
        return explore(["retry_new_key"], ["absent_then_late_original"], options)

    whole = explored("whole")
    shown = {p for f, _ in whole.findings for p in f.properties}
    assert set(whole.violations) <= shown and len(whole.violations) == 3  # each property shown by some finding
    assert [f.kept for f, _ in whole.findings] == [None, "unauthorized_dispatches", "effects_after_cancel"]
    parts = [explored(f"part{i}", shard=i, shards=2) for i in (0, 1)]
    assert all(len(p.findings) > len(whole.findings) for p in parts)
    loaded = load_explorations(tmp_path / "whole").findings
    merged = load_explorations([tmp_path / "part0", tmp_path / "part1"]).findings
    columns = ["policy", "template", "shape", "properties", "seed"]
    assert sorted(map(tuple, loaded[columns].values)) == sorted(map(tuple, merged[columns].values))
    assert len(loaded) == len(whole.findings)


# -- what the jobs found, added up (jobs made by hand) ------------------------------------------------------------


def _made_job(job: Any) -> JobResult:
    """What a job found, made up from which part of the template it ran: every count differs by part, so a sum
    that keeps only one part's shows."""
    part = job.shard + 1
    stuck = _finding(Schedule(()), error=f"over its budget in part {part}", outcome="harness_error", seed=part)
    return JobResult(
        job.scenario_spec,
        shard=job.shard,
        shards=job.shards,
        schedules=10 * part,
        cases=Counter({"retry_new_key": 11 * part}),
        simulated=Counter({"retry_new_key": 3 * part}),
        violating=Counter({"retry_new_key": part}),
        violations={"retry_new_key": Counter({"no_duplicate_effect": part})},
        coverage={"retry_new_key": {"request_lost": [part, 1]}},
        errors=[f"failure {part}"],
        stuck=[stuck],
        findings=[_finding(Schedule((element("fault", {"boundary": "request_lost", "nth": part}),)), seed=part)],
    )


def test_the_parts_of_a_template_add_up_and_their_failures_are_each_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(exploration, "explore_job", _made_job)
    out = tmp_path / "out"
    began = time.perf_counter()
    summary = explore(["retry_new_key"], ["lost_response"], _options(out, concurrency=2, case_timeout_s=5.0))
    wall_s = time.perf_counter() - began
    (row,) = summary.explorations
    assert (row.schedules, row.cases, row.simulated, row.violating) == (30, 33, 9, 3)
    assert row.violations == Counter({"no_duplicate_effect": 3}) and row.coverage == {"request_lost": [3, 2]}
    assert summary.coverage == {"request_lost": [3, 2]}
    assert row.errors == 2 + 2  # each part's failure, and each case it could not run
    errors = [tmp_path / "out" / "errors" / "retry_new_key" / f"lost_response-{n}.yaml" for n in (1, 2)]
    assert summary.reproduce == [
        f"python -m harness run --policy retry_new_key --scenario {errors[0]} --seed 1 --case-timeout 5",
        f"python -m harness run --policy retry_new_key --scenario {errors[1]} --seed 2 --case-timeout 5",
    ]
    assert all(path.is_file() for path in errors) and summary.stopped_in == {"lost_response"}
    assert summary.errors[2:] == ["lost_response: failure 1", "lost_response: failure 2"]
    assert [line.split(":")[2].strip() for line in summary.errors[:2]] == [
        "over its budget in part 1; this policy's other schedules of lost_response were not explored in this part "
        "of the exploration; reproduce",
        "over its budget in part 2; this policy's other schedules of lost_response were not explored in this part "
        "of the exploration; reproduce",
    ]
    data = json.loads((out / "explore.json").read_text())
    assert data["errors"] == summary.errors
    assert [f["schedule"] for f in data["findings"]] == [["request_lost"], ["request_lost nth=2"]]  # both parts'
    assert 0 < summary.elapsed_s <= wall_s + 0.001 and summary.elapsed_s == round(summary.elapsed_s, 3)


def test_one_process_runs_each_template_as_one_job(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(exploration, "explore_job", _made_job)
    seen: list[tuple[int, int]] = []
    summary = explore(
        ["retry_new_key"], ["lost_response"], _options(tmp_path / "out"), lambda d, t, _: seen.append((d, t))
    )
    assert seen == [(1, 1)] and summary.explorations[0].schedules == 10


def test_explore_json_is_indented_by_two(explored: tuple[ExploreSummary, dict[str, Any]]) -> None:
    text = (explored[0].out / "explore.json").read_text()
    assert text.startswith('{\n  "policies": [\n    "retry_new_key",\n')


def test_a_full_quota_with_no_words_from_the_system_is_said_in_the_errors_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def quota(path: Path, text: str) -> None:
        raise OSError(errno.EDQUOT, None)  # no text from the system: the error's own words

    monkeypatch.setattr(exploration, "write_atomic", quota)
    with pytest.raises(NotWritten) as caught:
        explore(["retry_new_key"], ["lost_response"], _options(tmp_path / "q"))
    assert caught.value.reason == str(OSError(errno.EDQUOT, None)) != "None"


@pytest.mark.parametrize("name", list_scenarios())
def test_every_shipped_scenario_written_as_a_finding_loads_as_itself(tmp_path: Path, name: str) -> None:
    """The template's own schedule, written as a finding and read back: the same scenario but for its name,
    revision, description and what it reproduces; its secret is not written."""
    from harness.scenario import load_scenario

    for spec, template in scenario_cases(name):
        own = Schedule.of(elements_of(template))
        text = finding_yaml(template, _finding(own, scenario=template.name, scenario_spec=spec), 4)
        assert "secret" not in text and template.approval.token.get_secret_value() not in text
        path = tmp_path / f"{template.name}-4.yaml"
        path.write_text(text)
        loaded = load_scenario(path)
        changed = {"name", "revision", "description", "reproduces", "approval", "faults", "operator"}
        assert loaded.model_dump(exclude=changed) == template.model_dump(exclude=changed), spec
        for listed in ("faults", "operator"):  # the schedule's order, not the file's: the same set
            key = lambda item: json.dumps(item, sort_keys=True)  # noqa: E731
            mine, theirs = loaded.model_dump(mode="json")[listed], template.model_dump(mode="json")[listed]
            assert sorted(mine, key=key) == sorted(theirs, key=key), (spec, listed)
        assert loaded.approval.model_dump(exclude={"token"}) == template.approval.model_dump(exclude={"token"})


def test_a_finding_any_copy_of_which_shrank_for_any_violation_is_written_as_such() -> None:
    """Two copies of one finding, the first reached keeping one property, the second shrinking for any violation:
    one is written, its ``kept`` None (what a loader choosing again over several parts needs)."""
    shape_a = Schedule((element("fault", {"boundary": "request_lost"}),))
    kept_one = _finding(shape_a, kept="no_duplicate_effect", first_seen=0)
    any_one = _finding(shape_a, first_seen=1, seed=2)
    (written,) = exploration._needed([kept_one, any_one])
    assert written.kept is None and written.first_seen == 0


def test_a_property_one_policy_shows_does_not_hide_another_policys_finding_for_it() -> None:
    """Findings are chosen per policy and template: a property shown by one policy's finding is not shown for
    another policy, whose finding reached keeping that property is written too."""
    shown = _finding(Schedule((element("fault", {"boundary": "request_lost"}),)))
    other = _finding(
        Schedule((element("fault", {"boundary": "response_lost"}),)),
        policy="retry_same_key",
        policy_spec="retry_same_key",
        kept="no_duplicate_effect",
        first_seen=3,
    )
    assert exploration._needed([other, shown]) == [shown, other]  # by policy, then as first seen
