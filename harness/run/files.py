"""The files a run writes: a sanitized ``recovery.json`` per case and ``summary.csv``, each written atomically."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from harness.check.registry import METRIC_NAMES
from harness.model import CaseReport

__all__ = [
    "SECRET_KEY",
    "case_path",
    "recovery_json",
    "sanitize",
    "write_atomic",
    "write_summary",
]

#: Keys whose values are never written, whatever they hold.
SECRET_KEY = re.compile(r"(token|secret|password|authorization|credential)", re.IGNORECASE)
REDACTED = "[redacted]"


def sanitize(value: Any, secrets: Iterable[str] = ()) -> Any:
    """Return ``value`` with secret-named keys dropped and any known secret string redacted."""
    secrets = tuple(s for s in secrets if s)
    if isinstance(value, dict):
        return {k: sanitize(v, secrets) for k, v in value.items() if not SECRET_KEY.search(str(k))}
    if isinstance(value, list | tuple):
        return [sanitize(v, secrets) for v in value]
    if isinstance(value, str):
        for secret in secrets:
            if secret in value:
                value = value.replace(secret, REDACTED)
        return value
    return value


def recovery_json(report: CaseReport, secrets: Iterable[str] = ()) -> str:
    """The exact bytes of one ``recovery.json``: sanitized, key order fixed, no wall-clock time in it."""
    data = sanitize(report.model_dump(mode="json"), secrets)
    return json.dumps(data, ensure_ascii=False, indent=2) + "\n"


_UMASK = os.umask(0)
os.umask(_UMASK)


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file and a rename, so no reader sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
        os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp makes it private; outputs are ordinary files
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def case_path(out: Path, report: CaseReport) -> Path:
    """Where a case's ``recovery.json`` lives: ``<out>/cases/<policy>/<scenario>/seed-<n>/recovery.json``."""
    return out / "cases" / report.policy / report.scenario / f"seed-{report.seed}" / "recovery.json"


SUMMARY_COLUMNS = (
    "policy",
    "policy_revision",
    "scenario",
    "scenario_revision",
    "seed",
    "outcome",
    "verdict",
    *METRIC_NAMES,
    "unknown",
    "reproduce",
)


def write_summary(out: Path, reports: Sequence[CaseReport]) -> Path:
    """``summary.csv``: one row per case; an unknown metric is an empty cell, its reason in ``unknown``."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(SUMMARY_COLUMNS)
    for r in reports:
        metrics = [("" if r.metrics.get(m) is None else r.metrics[m]) for m in METRIC_NAMES]
        unknown = "; ".join(f"{k}: {v}" for k, v in r.unknown.items())
        writer.writerow(
            [
                r.policy,
                r.policy_revision,
                r.scenario,
                r.scenario_revision,
                r.seed,
                r.outcome,
                r.verdict,
                *metrics,
                unknown,
                r.reproduce,
            ]
        )
    path = out / "summary.csv"
    write_atomic(path, buffer.getvalue())
    return path
