"""Recovery harness: simulates lost replies to side-effecting requests and judges recovery policies.

Public surface: load a scenario, load a policy, simulate a case, check its evidence.
"""

__version__ = "0.1.0"

from harness.check import check  # noqa: E402
from harness.model import CaseReport, Evidence, Verdict  # noqa: E402
from harness.policy import Policy, Situation, load_policy  # noqa: E402
from harness.scenario import Scenario, load_scenario  # noqa: E402
from harness.sim import simulate  # noqa: E402

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
