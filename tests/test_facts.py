"""The checker's views of a history answer their questions as a plain scan of it would, however they are built."""

from __future__ import annotations


def test_the_checkers_indexed_questions_answer_as_a_scan_of_the_history_would() -> None:
    """Facts answers "the latest claim before entry i", "the first record before i", ... with indexes built once
    (a scan per dispatch made a long recovery quadratic); for every entry of every shipped case, and for every
    action and approval, each answer is the one the plain scan gives."""
    from harness.check.facts import facts
    from harness.policy import builtin_policy_names
    from harness.run.plan import load_grid
    from harness.scenario import list_scenarios
    from harness.sim import simulate

    def latest(records: list, index: int, match=lambda _: True):  # type: ignore[no-untyped-def]
        found = [r for r in records if r.index < index and match(r)]
        return found[-1] if found else None

    def first(records: list, index: int, match=lambda _: True):  # type: ignore[no-untyped-def]
        return next((r for r in records if r.index < index and match(r)), None)

    asked = 0
    for case in load_grid(builtin_policy_names(), list_scenarios(), [1]).cases:
        evidence = simulate(case.scenario, case.policy, case.seed).evidence
        # Each index is built on first use, whichever question comes first: a change asked before anything else.
        fresh, end = facts(evidence), len(evidence.history) + 1
        fresh_changes = [c for c in [*fresh.revisions, *fresh.cancels] if c.index < end]
        assert fresh.change_between(-1, end) == (fresh_changes[0] if fresh_changes else None)
        f = facts(evidence)
        actions = {*f.actions, *(d.action_id for d in f.dispatches), "nobody"}
        approvals = {a.approval_id for a in f.approvals} | {"none"}
        for i in range(len(f.evidence.history) + 1):
            assert f.revision_at(i) == latest(f.revisions, i)
            assert f.cancel_before(i) == first(f.cancels, i)
            for a in actions:
                assert f.claim_before(a, i) == latest(f.claims, i, lambda c, a=a: c.action_id == a and c.ok)
                assert f.record_before(a, i) == first(f.records, i, lambda r, a=a: r.action_id == a)
                assert f.hold_before(a, i) == first(f.holds, i, lambda h, a=a: h.action_id == a)
                asked += 3
            for p in approvals:
                assert f.approval_before(p, i) == latest(f.approvals, i, lambda g, p=p: g.approval_id == p)
            for j in range(i):
                changes = [c for c in [*f.revisions, *f.cancels] if j < c.index < i]
                assert f.change_between(j, i) == (changes[0] if changes else None)
        for a in actions:
            assert f.dispatches_of(a) == [d for d in f.dispatches if d.action_id == a]
    assert asked > 10_000
