"""The simulator: simpy actors in virtual time that produce evidence and, separately, ground truth."""

from harness.sim.world import GroundTruth, SimResult, simulate

__all__ = ["GroundTruth", "SimResult", "simulate"]
