"""Compare the recovery.json files of two runs, case by case: which are byte-identical, and where the others differ.

    python tools/compare_cases.py BEFORE_RUN AFTER_RUN

Prints how many cases are byte-identical, then every differing path (timeline entries named by their event)
with how many cases differ there: "added", "removed", a changed value, or a changed key order. The copies a
run keeps under ``polyaxon/`` are left out.

Exit statuses, as ``cmp`` gives them: 0 the runs hold the same cases, byte for byte; 1 they differ (different
sets of cases, or a case whose content differs, so a CI step that compares two commits' runs fails on it); 2 bad
usage (not two arguments: this text is printed) or bad input, said in one line on stderr: no such folder, a
file, a folder that holds no recovery.json (a run whose cases are all compact records has none: run it with
``--records full``), or a recovery.json that cannot be read or is not JSON.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any


def differences(before: Any, after: Any, path: str, found: Counter[str]) -> None:
    """Count, into ``found``, every place where ``after`` differs from ``before``."""
    if type(before) is not type(after):
        found[f"{path} changed type"] += 1
    elif isinstance(before, dict):
        for key in before.keys() | after.keys():
            if key not in after:
                found[f"{path}.{key} removed"] += 1
            elif key not in before:
                found[f"{path}.{key} added"] += 1
            else:
                differences(before[key], after[key], f"{path}.{key}", found)
        shared = [k for k in before if k in after]
        if shared != [k for k in after if k in before]:
            found[f"{path} key order"] += 1
    elif isinstance(before, list):
        if len(before) != len(after):
            found[f"{path} length"] += 1
            return
        for old, new in zip(before, after, strict=True):
            event = old.get("event") if isinstance(old, dict) else None
            differences(old, new, f"{path}[{event or '*'}]", found)
    elif before != after:
        found[f"{path} value"] += 1


class BadInput(Exception):
    """Input this tool cannot compare; the message is one line naming the path and the fix."""


def cases_in(run: Path) -> list[Path]:
    """The recovery.json files of a run folder, relative to it (its ``polyaxon/`` copies left out); raise
    ``BadInput`` for a path that is not a folder holding at least one."""
    if not run.exists():
        raise BadInput(f"{run}: no such folder; fix: give a run folder written by 'harness run'")
    if not run.is_dir():
        raise BadInput(f"{run}: a file, not a folder; fix: give a run folder written by 'harness run'")
    found = sorted(p.relative_to(run) for p in run.rglob("recovery.json"))
    found = [rel for rel in found if "polyaxon" not in rel.parts]
    if not found:
        compact = next(run.rglob("records-*.jsonl.gz"), None) is not None
        why = (
            "its cases are compact records only; fix: run it again with --records full"
            if compact
            else "fix: give a run folder written by 'harness run' (its cases/<policy>/<scenario>/seed-<n>/)"
        )
        raise BadInput(f"{run}: holds no recovery.json; {why}")
    return found


def read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise BadInput(f"{path}: cannot be read ({exc.strerror or exc}); fix: make it readable") from None


def parsed(path: Path, text: bytes) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        reason = "nested too deeply" if isinstance(exc, RecursionError) else " ".join(str(exc).split())[:120]
        raise BadInput(f"{path}: not JSON ({reason}); fix: give the recovery.json 'harness run' wrote") from None


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    before, after = Path(argv[0]), Path(argv[1])
    try:
        return compare(before, after)
    except BadInput as exc:
        print(f"compare_cases: {exc}", file=sys.stderr)
        return 2


def compare(before: Path, after: Path) -> int:
    cases, other = cases_in(before), cases_in(after)
    if cases != other:
        print(f"the runs hold different cases: {len(cases)} before, {len(other)} after")
        return 1
    found: Counter[str] = Counter()
    same = 0
    for rel in cases:
        old, new = read(before / rel), read(after / rel)
        if old == new:
            same += 1
        else:
            differences(parsed(before / rel, old), parsed(after / rel, new), "", found)
    print(f"{same}/{len(cases)} recovery.json byte-identical")
    for where, count in sorted(found.items()):
        print(f"  {count:5d} cases  {where}")
    return 0 if same == len(cases) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
