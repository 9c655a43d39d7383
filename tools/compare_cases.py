"""Compare the recovery.json files of two runs, case by case: which are byte-identical, and where the others differ.

    python tools/compare_cases.py BEFORE_RUN AFTER_RUN

Prints how many cases are byte-identical, then every differing path (timeline entries named by their event)
with how many cases differ there: "added", "removed", a changed value, or a changed key order. Exits 1 when
the two runs hold different sets of cases.
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


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    before, after = Path(argv[0]), Path(argv[1])
    cases = sorted(p.relative_to(before) for p in before.rglob("recovery.json") if "polyaxon" not in p.parts)
    other = sorted(p.relative_to(after) for p in after.rglob("recovery.json") if "polyaxon" not in p.parts)
    if cases != other:
        print(f"the runs hold different cases: {len(cases)} before, {len(other)} after")
        return 1
    found: Counter[str] = Counter()
    same = 0
    for rel in cases:
        old, new = (before / rel).read_bytes(), (after / rel).read_bytes()
        if old == new:
            same += 1
        else:
            differences(json.loads(old), json.loads(new), "", found)
    print(f"{same}/{len(cases)} recovery.json byte-identical")
    for where, count in sorted(found.items()):
        print(f"  {count:5d} cases  {where}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
