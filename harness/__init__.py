"""Recovery harness: simulates lost replies to side-effecting requests and judges recovery policies.

Public surface: load a scenario, load a policy, simulate a case, check its evidence.
"""

__version__ = "0.1.0"

from harness.check import check
from harness.model import CaseReport, Evidence, Verdict
from harness.policy import Policy, Situation, load_policy
from harness.scenario import Scenario, load_scenario
from harness.sim import simulate

__all__ = [
    "CaseReport",
    "Evidence",
    "Policy",
    "Scenario",
    "Situation",
    "Verdict",
    "__version__",
    "check",
    "load_policy",
    "load_scenario",
    "simulate",
]
