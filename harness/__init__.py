"""Recovery harness: simulates lost replies to side-effecting requests and judges recovery policies.

Public surface: load a scenario, load a policy, simulate a case, check its evidence. Names are imported on
first use, so that ``import harness.model`` (which runs this file first) loads nothing of a higher layer.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from harness.version import __version__

if TYPE_CHECKING:
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

#: Where each public name lives; imported when first asked for.
_LAZY = {
    "check": "harness.check",
    "CaseReport": "harness.model",
    "Evidence": "harness.model",
    "Verdict": "harness.model",
    "Policy": "harness.policy",
    "Situation": "harness.policy",
    "load_policy": "harness.policy",
    "Scenario": "harness.scenario",
    "load_scenario": "harness.scenario",
    "simulate": "harness.sim",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'harness' has no attribute '{name}'")
    return getattr(importlib.import_module(module), name)
