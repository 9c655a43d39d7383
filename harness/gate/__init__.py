"""Gating a policy in CI: ``harness check``, JUnit XML, repro files, a pytest plugin and ``assert_recovers``.

A case passes the gate when its outcome is ``correct`` or ``escalated`` (no violation, and every action either
accounted for or handed to its owner in time); any other outcome fails it, ``unresolved`` included: a case
whose safety the evidence cannot decide has not been shown safe. Every failing case gets a repro file that
``harness replay`` runs to exactly that failure.

Names are imported on first use, so that the pytest plugin (``harness.gate.pytest_plugin``, loaded by every
pytest run where the harness is installed) costs nothing unless ``--harness-policy`` is given.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness.gate.cases import PASSING, GateCase, PolicyDoesNotRecover
    from harness.gate.junit import Suite, junit_xml, write_junit
    from harness.gate.runner import CheckOptions, CheckSummary, assert_recovers, check_policy

__all__ = [
    "PASSING",
    "CheckOptions",
    "CheckSummary",
    "GateCase",
    "PolicyDoesNotRecover",
    "Suite",
    "assert_recovers",
    "check_policy",
    "junit_xml",
    "write_junit",
]

#: Where each public name lives; imported when first asked for.
_LAZY = {
    "PASSING": "harness.gate.cases",
    "GateCase": "harness.gate.cases",
    "PolicyDoesNotRecover": "harness.gate.cases",
    "Suite": "harness.gate.junit",
    "junit_xml": "harness.gate.junit",
    "write_junit": "harness.gate.junit",
    "CheckOptions": "harness.gate.runner",
    "CheckSummary": "harness.gate.runner",
    "assert_recovers": "harness.gate.runner",
    "check_policy": "harness.gate.runner",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'harness.gate' has no attribute '{name}'")
    return getattr(importlib.import_module(module), name)
