"""Builds one world for (scenario, policy, seed), runs it in virtual time, and returns evidence and truth.

Evidence is what the checker may see. Ground truth is what really happened, taken from the actors' live
state as things happened; only tests read it, to prove the checker sound.
"""

from __future__ import annotations

from dataclasses import dataclass

import simpy

from harness.model import Entry, Evidence
from harness.policy import Policy
from harness.scenario import Scenario
from harness.seeds import rng
from harness.sim.controller import Controller
from harness.sim.destination import Destination
from harness.sim.faults import Injector
from harness.sim.history import History
from harness.sim.operator import Operator
from harness.sim.transport import Transport
from harness.sim.worker import Worker

__all__ = ["GroundTruth", "SimResult", "simulate"]


@dataclass(frozen=True, slots=True)
class GroundTruth:
    """What really happened in one case, from the simulator's own bookkeeping (never from the history)."""

    dispatches: int
    lookups: int
    effects: int
    duplicate_effects: int
    unauthorized_dispatches: int
    effects_after_cancel: int
    duplicate_records: int
    wrong_revision_completions: int
    false_records: int
    unresolved_actions: int
    escalations: int
    task_completed: bool
    time_to_account_s: float | None


@dataclass(frozen=True, slots=True)
class SimResult:
    evidence: Evidence
    truth: GroundTruth
    attempts: tuple[str, ...]


def simulate(scenario: Scenario, policy: Policy, seed: int) -> SimResult:
    """Run one case to the scenario's horizon. Deterministic: same inputs and seed, same result."""
    env = simpy.Environment()
    history = History(env)
    injector = Injector(scenario.faults, scenario.action_id, history)
    controller = Controller(env, history, scenario)
    destination = Destination(env, scenario.destination, history, injector)
    transport = Transport(env, scenario.transport, rng(seed, "transport"), history, injector, destination)
    Operator(env, scenario.operator, history, controller)
    worker = Worker(env, scenario, policy, history, controller, transport, injector)
    env.process(worker.run())
    env.run(until=scenario.horizon_s)

    visible = scenario.destination.ledger_visible
    entries = tuple(e for e in history.entries if visible or _caller_side(e))
    evidence = Evidence(
        task_id=scenario.task.task_id,
        action_ids=(scenario.action_id,),
        recovery_deadline_s=scenario.recovery_deadline_s,
        destination_visible=visible,
        history=entries,
    )
    action = controller.actions.get(scenario.action_id)
    return SimResult(
        evidence=evidence,
        truth=_truth(scenario, controller, destination, worker),
        attempts=tuple(action.execution_ids) if action else (),
    )


#: Faults the caller itself experiences; the others happen on the transport's or the destination's side.
_CALLER_FAULTS = frozenset({"crash_before_send", "crash_awaiting_reply"})


def _caller_side(entry: Entry) -> bool:
    """What remains when the destination's ledger is withheld: its own entries go, and so do faults injected
    on its side of the wire, whose timing alone would tell when it applied something."""
    if entry.actor == "destination":
        return False
    return entry.actor != "injector" or entry.data.get("boundary") in _CALLER_FAULTS


def _truth(scenario: Scenario, controller: Controller, destination: Destination, worker: Worker) -> GroundTruth:
    effects_per_action: dict[str, int] = {}
    for effect in destination.effects:
        effects_per_action[effect.action_id] = effects_per_action.get(effect.action_id, 0) + 1
    sent_after_cancel = {(d.action_id, d.n) for d in worker.dispatches if d.after_cancel}
    deadline = scenario.recovery_deadline_s
    unresolved = sum(1 for a in controller.actions.values() if a.recorded_at_s is None or a.recorded_at_s > deadline)
    action = controller.actions.get(scenario.action_id)
    first_effect = next((e for e in destination.effects if e.action_id == scenario.action_id), None)
    time_to_account = None
    if action and first_effect and action.effect_recorded_at_s is not None:
        time_to_account = round(action.effect_recorded_at_s - first_effect.at_s, 6)
    applied = {(e.action_id, e.receipt_id) for e in destination.effects}
    applied_actions = {e.action_id for e in destination.effects}
    false_records = sum(
        1
        for action_id, status, receipt_id in controller.ledger_writes
        if (status == "applied" and (action_id, receipt_id) not in applied)
        or (status != "applied" and action_id in applied_actions)
    )
    task = controller.task
    receipt = task.completed_receipt
    task_completed = (
        task.completed_revision == task.revision
        and task.completed_before_cancel
        and receipt is not None
        and (receipt.model, receipt.digest, receipt.target) == (task.model, task.digest, task.target)
        and any(e.receipt_id == receipt.receipt_id for e in destination.effects)
    )
    return GroundTruth(
        dispatches=len(worker.dispatches),
        lookups=worker.lookup_count,
        effects=len(destination.effects),
        duplicate_effects=sum(max(0, n - 1) for n in effects_per_action.values()),
        unauthorized_dispatches=sum(1 for d in worker.dispatches if not d.authorized),
        effects_after_cancel=sum(1 for e in destination.effects if (e.action_id, e.dispatch_n) in sent_after_cancel),
        duplicate_records=sum(n - 1 for n in controller.record_counts.values()),
        wrong_revision_completions=controller.wrong_revision_completions,
        false_records=false_records,
        unresolved_actions=unresolved,
        escalations=controller.escalation_count,
        task_completed=task_completed,
        time_to_account_s=time_to_account,
    )
