"""Records only, shared by every stage: the vocabulary, the artifact a request names, actions and receipts,
commands, one type per history event, evidence, findings and the case report.

This package imports nothing of ours beyond itself. Everything downstream (simulator, checker, report,
tracking) speaks in these types, so the arrows between stages stay one-way.
"""

from harness.model.base import OUTCOMES, Actor, Frozen, MetricValue, Outcome, Scalar, Verdict
from harness.model.commands import (
    COMMAND_TYPES,
    Command,
    Escalate,
    Hold,
    LookUp,
    RecordAbsent,
    RecordEffect,
    RecordRejection,
    ResendCurrentArguments,
    RetryNewKey,
    RetrySameAction,
    Stop,
    Wait,
    validated,
)
from harness.model.records import Action, Artifact, Receipt
from harness.model.report import (
    SCHEMA_VERSION,
    Anomaly,
    CaseReport,
    CheckResult,
    Entry,
    Evidence,
    entries,
    events,
)

__all__ = [
    "COMMAND_TYPES",
    "OUTCOMES",
    "SCHEMA_VERSION",
    "Action",
    "Actor",
    "Anomaly",
    "Artifact",
    "CaseReport",
    "CheckResult",
    "Command",
    "Entry",
    "Escalate",
    "Evidence",
    "Frozen",
    "Hold",
    "LookUp",
    "MetricValue",
    "Outcome",
    "Receipt",
    "RecordAbsent",
    "RecordEffect",
    "RecordRejection",
    "ResendCurrentArguments",
    "RetryNewKey",
    "RetrySameAction",
    "Scalar",
    "Stop",
    "Verdict",
    "Wait",
    "entries",
    "events",
    "validated",
]
