"""Builds one world for (scenario, policy, seed), runs it in virtual time, and returns evidence and truth.

Evidence is what the checker may see. Ground truth is the auditor's, kept beside the actors as things
happened; only tests read it, to prove the checker sound.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import simpy

from harness.model import Evidence
from harness.model.base import fast_frozen_init
from harness.model.events import CommandGiven, Event, FaultInjected
from harness.policy import Policy
from harness.scenario import BOUNDARIES, Fault, FaultBase, OperatorEvent, Scenario
from harness.seeds import rng
from harness.sim.auditor import Auditor, GroundTruth
from harness.sim.bridge import Bridge
from harness.sim.connector import Connector
from harness.sim.controller import Controller
from harness.sim.destination import Destination
from harness.sim.faults import Injector, Question, applies
from harness.sim.history import History
from harness.sim.kernel import Kernel, run_until, settle
from harness.sim.operator import Operator
from harness.sim.transport import Transport
from harness.sim.worker import READ_ONLY_BY, Worker

__all__ = ["GroundTruth", "Reach", "SimResult", "simulate"]


@dataclass(frozen=True, slots=True)
class SimResult:
    evidence: Evidence
    #: The auditor of the finished case; ``truth`` reads it (only tests do, so a sweep never pays for it).
    auditor: Auditor
    attempts: tuple[str, ...]
    #: Per declared fault, in the scenario's order: (times its site was reached, times it fired).
    coverage: tuple[tuple[int, int], ...] = ()
    #: The injector of the finished case, and every record of its history (the evidence may withhold some):
    #: what ``reach`` reads.
    injector: Injector | None = None
    recorded: Sequence[Event] = ()
    #: Per declared operator event, in the scenario's order: (its trigger came, it acted), each 0 or 1.
    operator_coverage: tuple[tuple[int, int], ...] = ()

    @property
    def truth(self) -> GroundTruth:
        """What really happened, from the auditor's ground truth: the checker never sees it."""
        return self.auditor.truth()

    @property
    def reach(self) -> Reach:
        """What this run reached, kept small (an exploration keeps it for many runs)."""
        assert self.injector is not None
        return Reach(
            tuple(self.injector.asked),
            self.injector.default_action_id,
            Counter((e.actor, e.event) for e in self.recorded),
            frozenset(e.command.kind for e in self.recorded if isinstance(e, CommandGiven)),
        )


# One per case: built as the history's records are, each slot set directly.
fast_frozen_init(SimResult)


@dataclass(frozen=True, slots=True)
class Reach:
    """What one run reached: every question its actors asked the injector, how many history records of each
    (actor, event) it made, and the kinds of the commands its workers carried out."""

    asked: tuple[Question, ...]
    default_action_id: str
    recorded: Counter[tuple[str, str]]
    commanded: frozenset[str] = frozenset()

    def reaches(self, item: Fault | OperatorEvent) -> bool:
        """Whether the run reached the point where ``item``, had the scenario declared it too, would act: a
        fault's site (its boundary, at one of its occurrences, for its action), or an operator event's trigger.

        When it did not, the scenario with ``item`` added runs exactly as this one did (the same evidence, the
        same coverage of the other faults, none of the item's own): a fault acts only through the injector's
        answer at its site, and an event after a history record only once that record is made (an event at a
        time is taken to reach: it acts whatever the run records)."""
        if isinstance(item, FaultBase):
            return any(applies(item, self.default_action_id, question) for question in self.asked)
        after = item.when.after
        if after is None:
            return True
        return self.recorded[(after.actor, after.event)] >= after.nth

    def reads(self, setting: str) -> bool:
        """Whether the run read the worker's ``setting``: one read only while carrying out some commands
        (``READ_ONLY_BY``) when the run carried out one of them; any other, always. When it did not, the
        scenario with another value of it runs exactly as this one did."""
        kinds = READ_ONLY_BY.get(setting)
        return kinds is None or not kinds.isdisjoint(self.commanded)


def simulate(scenario: Scenario, policy: Policy, seed: int) -> SimResult:
    """Run one case to its deadline, then while anything is still in flight (bounded by the scenario's
    ``settle_max_s``), so that late effects are seen. Deterministic: same inputs and seed, same result."""
    env = Kernel()
    history = History(env)
    auditor = Auditor(scenario.recovery_deadline_s)
    injector = Injector(scenario.faults, scenario.action_id, history)
    controller = Controller(env, history, scenario, auditor)
    auditor.watch(controller)
    destination = Destination(
        env, scenario.destination, history, injector, auditor, approval_in_force=controller.approval_in_force
    )
    connector = Connector(env, scenario.connector, history, injector, destination) if scenario.connector else None
    bridge = Bridge(env, scenario.bridge, history, injector, destination) if scenario.bridge else None
    transport = Transport(
        env,
        scenario.transport,
        rng(seed, "transport"),
        history,
        injector,
        destination,
        auditor,
        intermediary=connector or bridge,
    )
    workers: list[simpy.Process] = []

    def dispatch(action_id: str, start_at_s: float = 0.0) -> None:
        worker = Worker(env, scenario, policy, history, controller, transport, injector, auditor, action_id)
        workers.append(env.process(worker.run(start_at_s)))

    operator = Operator(env, scenario.operator, history, controller, dispatch, scenario.recovery_deadline_s)
    dispatch(scenario.action_id, scenario.worker.dispatch_at_s)
    run_until(env, scenario.recovery_deadline_s)
    # Then on while anything is still in flight, up to the horizon, to the end of an instant.
    settle(
        env,
        scenario.horizon_s,
        lambda: bool(
            transport.in_flight
            or destination.pending
            or (bridge is not None and bridge.landing)
            or any(w.is_alive for w in workers)
        ),
    )
    # Whatever the end cut off is said, so that the checker does not take a dispatch that never arrived, or an
    # operation never applied, for one that had no effect.
    landing = bridge.unsettled() if bridge is not None else []
    for record in (*transport.unsettled(), *landing, *destination.unsettled()):
        history.record(record)
    auditor.stop_watching()
    history.stop_listening()

    visible = scenario.destination.ledger_visible
    evidence = Evidence(
        task_id=scenario.task.task_id,
        recovery_deadline_s=scenario.recovery_deadline_s,
        destination_visible=visible,
        history=tuple(history.entries) if visible else tuple(e for e in history.entries if _caller_side(e)),
    )
    attempts = tuple(eid for action in controller.actions.values() for eid in action.execution_ids)
    coverage = tuple(zip(injector.reached, injector.fired, strict=True))
    return SimResult(
        evidence=evidence,
        auditor=auditor,
        attempts=attempts,
        coverage=coverage,
        injector=injector,
        recorded=history.entries,
        operator_coverage=operator.coverage(),
    )


def _caller_side(event: Event) -> bool:
    """What remains when the destination's ledger is withheld: its own entries and the device connector's go,
    and so do faults injected on the wire or inside it, whose timing alone would tell when it applied something."""
    if event.actor in ("destination", "connector"):
        return False
    return not isinstance(event, FaultInjected) or BOUNDARIES[event.boundary].side == "caller"
