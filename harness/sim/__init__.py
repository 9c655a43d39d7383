"""The simulator: simpy actors in virtual time that produce evidence and, separately, ground truth."""

from harness.sim.world import GroundTruth, Reach, SimResult, simulate

__all__ = ["GroundTruth", "Reach", "SimResult", "simulate"]
