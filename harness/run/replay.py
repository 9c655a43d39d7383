"""``harness replay CASE``: run one recorded case again and prove it is the same.

CASE is a ``recovery.json`` (its ``reproduce`` command says which policy, scenario and seed), one compact record
(``records-<piece>.jsonl.gz#seed-<n>``, the path ``load()`` gives the case), or a scenario file written for one
case (a finding, a repro file: its ``reproduces`` says which policy and seed). The case is re-run; a
recovery.json or a record must come out byte-identical, and a scenario file must end as it records. Either way
the timeline is printed as text, faults and the entries that witness an anomaly marked. A recovery.json or a
record that ``load()`` would skip (another schema version, a missing key, a value of the wrong type: the check
in ``harness.present.shape``) is refused as bad input, in the loader's words, before anything runs.

The case runs in a worker process supervised as ``harness run`` supervises its cases (``harness.run.pool``): a
policy that never returns is stopped after the case's wall-clock budget (the ``--case-timeout`` its reproduce
command names, or a scenario file's ``reproduces: case_timeout_s``, else ``DEFAULT_CASE_TIMEOUT_S``), and one
that ends its process (``sys.exit``, ``os._exit``, a signal) is noticed. Either way the replayed case is a
``harness_error`` case with the reason, compared with what was recorded like any other. What is printed of a case
is made printable (``printable``): a policy's text cannot move the cursor, colour the terminal or start a line of
its own.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import math
import shlex
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from harness.check.registry import PROPERTIES
from harness.errors import InputError
from harness.limits import CASE_TIMEOUT_MAX_S, DEFAULT_CASE_TIMEOUT_S
from harness.model import REQUEST, CaseReport, record_ref
from harness.policy import PolicyError, look_in
from harness.present.shape import MalformedCase, checked_case
from harness.run.case import failed_report, run_case
from harness.run.files import record_line, recovery_json
from harness.run.folder import Request
from harness.run.plan import Case, load_grid
from harness.run.pool import supervise
from harness.scenario import ScenarioError, load_scenario
from harness.seeds import SEED_MAX

__all__ = ["Replay", "printable", "replay", "timeline_text"]


@dataclass(frozen=True, slots=True)
class Replay:
    report: CaseReport
    #: Whether the replay matched what was recorded (bytes of a recovery.json; outcome and properties of a file).
    same: bool
    #: What differs, in one line each, when it does not match.
    differences: tuple[str, ...]


def replay(path: Path, *, supervised: bool = True) -> Replay:
    """Re-run the case recorded at ``path``; raise ``InputError`` when it names no runnable case.

    ``supervised`` (the default, as ``harness replay`` runs it): the case runs in a worker process under its
    wall-clock budget, so a policy that never returns or ends its process gives a ``harness_error`` case with the
    reason instead of a hang or the policy's own exit status. ``False``: it runs in this process (the gate
    replays a repro file so, once its policy has run to the end of that very case).
    """
    record = record_ref(path)
    if record is not None:
        return _replay_record(Path(record[0]), record[1], supervised)
    if path.name.endswith(".jsonl.gz"):
        raise InputError(f"{path}: a file of compact records; fix: name one case, as {path}#seed-<n>")
    if not path.is_file():
        what = "a folder, not a file" if path.is_dir() else "no such file"
        raise InputError(f"{path}: {what}; fix: give a recovery.json or a scenario file written by explore")
    if path.suffix in (".yaml", ".yml"):
        return _replay_scenario(path, supervised)
    try:
        text = path.read_text(encoding="utf-8")
        recorded = json.loads(text)
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)[:200]
        raise InputError(f"{path}: not a recovery.json ({reason}); fix: give a case file") from None
    return _replay_report(path, text, recorded, recovery_json, supervised)


def _replay_record(path: Path, seed: str, supervised: bool) -> Replay:
    """Re-run one case of a compact record file and compare its line byte for byte."""
    if not path.is_file():
        raise InputError(f"{path}: no such file; fix: give a records-*.jsonl.gz written by 'harness run'")
    if not seed.isdecimal() or not seed.isascii():
        raise InputError(f"{path}#seed-{seed}: '{printable(seed)[:40]}' is not a seed; fix: name a case as #seed-<n>")
    seed = str(int(seed))  # seed-017 is seed 17
    seeds: list[str] = []
    try:
        with gzip.open(path, "rt", encoding="utf-8") as lines:
            for text in lines:
                found = _seed_of(text) if text.startswith(_SCHEMA) else None
                if found == seed:
                    line = text
                    break
                if found is not None:
                    seeds.append(found)
            else:
                line = None
    except (OSError, UnicodeDecodeError, EOFError) as exc:
        raise InputError(f"{path}: not a compact record file ({exc}); fix: give one written by 'harness run'") from None
    if line is None:
        raise InputError(f"{path}: no case with seed {seed}{_held(seeds)}; fix: {_elsewhere(path, int(seed))}")
    try:
        recorded = json.loads(line)
    except (ValueError, RecursionError):
        raise InputError(
            f"{path}#seed-{seed}: the record is not JSON; fix: give a file written by 'harness run'"
        ) from None
    return _replay_report(Path(f"{path}#seed-{seed}"), line, recorded, record_line, supervised)


_SCHEMA = '{"schema_version":'


def _held(seeds: list[str]) -> str:
    """What seeds a record file holds, said briefly."""
    if not seeds:
        return " (it holds no case)"
    numbers = [int(s) for s in seeds if s.isdecimal()]
    if len(numbers) == len(seeds) and numbers == list(range(numbers[0], numbers[0] + len(numbers))):
        return (
            f" (it holds seeds {numbers[0]} to {numbers[-1]})" if len(numbers) > 1 else f" (it holds seed {seeds[0]})"
        )
    return f" (it holds {len(seeds):,} other seeds)"


def _elsewhere(path: Path, seed: int) -> str:
    """Where the seed's case is, if a sibling record file of the cell holds it. The pieces of a cell are slices of
    its seeds as given, mostly in increasing order: the piece whose first seed is the last not above it is read
    first, then every other in turn (seeds given out of order, ``--seed 9 --seed 2``)."""
    firsts: list[tuple[int, Path]] = []
    for sibling in sorted(path.parent.glob("records-*.jsonl.gz")):
        if sibling == path:
            continue
        try:
            with gzip.open(sibling, "rt", encoding="utf-8") as lines:
                first = _seed_of(next(lines, ""))
        except (OSError, UnicodeDecodeError, EOFError):
            continue
        if first is not None and first.isdecimal():
            firsts.append((int(first), sibling))
    below = [entry for entry in firsts if entry[0] <= seed]
    likeliest = [max(below, key=lambda entry: entry[0])] if below else []
    for _, piece in likeliest + [entry for entry in firsts if entry not in likeliest]:
        try:
            with gzip.open(piece, "rt", encoding="utf-8") as lines:
                if any(_seed_of(text) == str(seed) for text in lines if text.startswith(_SCHEMA)):
                    return f"the case is in another piece of the cell: {piece}#seed-{seed}"
        except (OSError, UnicodeDecodeError, EOFError):
            continue
    return "use a seed of that file (load() lists them)"


def _seed_of(line: str) -> str | None:
    """A record's seed, read without parsing the whole line (the key order of a record is fixed)."""
    start = line.find('"seed":')
    if start < 0:
        return None
    end = line.find(",", start)
    return line[start + len('"seed":') : end].strip()


def _replay_report(
    path: Path, text: str, recorded: object, encode: Callable[[CaseReport], str], supervised: bool
) -> Replay:
    try:  # the loader's own check (load(), harness report): a case it would skip is not run, but refused
        checked_case(recorded)
    except MalformedCase as exc:
        raise InputError(
            f"{path}: not a case record ({printable(str(exc))[:300]}); fix: give the case file as 'harness run' "
            "wrote it (its reproduce command writes it again)"
        ) from None
    reproduce = recorded.get("reproduce") if isinstance(recorded, dict) else None
    if not isinstance(recorded, dict) or not isinstance(reproduce, str):
        raise InputError(f"{path}: field 'reproduce': missing or not text; fix: give a case file")
    try:
        args = shlex.split(reproduce)
    except ValueError as exc:
        raise InputError(f"{path}: field 'reproduce': {exc}; fix: give a case file") from None
    policy, scenario, seed = _flag(args, "--policy"), _flag(args, "--scenario"), _flag(args, "--seed")
    if policy is None or scenario is None or seed is None or not (seed.isascii() and seed.isdecimal()):
        raise InputError(f"{path}: field 'reproduce': no --policy, --scenario and --seed; fix: give a case file")
    if int(seed) > SEED_MAX:
        raise InputError(f"{path}: field 'reproduce': seed {seed} is over {SEED_MAX}; fix: give a case file")
    budget_s = _budget(path, args)
    if ":" in policy:
        _look_where_run_began(path)
    (case,) = load_grid([policy], [scenario], [int(seed)]).cases
    (report,) = _run(case, 1, budget_s, supervised)
    again = encode(report)
    if again == text:
        return Replay(report, True, ())
    found = _listed(list(_differences(recorded, json.loads(again), "")))
    differences = tuple(printable(d) for d in found) or ("the bytes differ (formatting, or keys in another order)",)
    return Replay(report, False, differences)


def _look_where_run_began(path: Path) -> None:
    """A user's policy (``package.module:attr``) imports as it did when the run that wrote the case began, as
    ``--resume`` imports it: the folder that run was started in (its request file, in the run's folder, a few
    levels above the case's) goes on the import path, after every other place, so that it shadows nothing."""
    for folder in path.absolute().parents[:RUN_DEPTH]:
        if (folder / REQUEST).is_file():
            look_in(Request.folder(folder))
            return


#: How far above a case's file its run's folder may be: ``<run>/cases/<policy>/<scenario>/seed-<n>/recovery.json``.
RUN_DEPTH = 5

#: At most this many differences are listed, then how many more there are.
DIFFERENCES_SHOWN = 10


def _listed(found: list[str]) -> list[str]:
    if len(found) <= DIFFERENCES_SHOWN:
        return found
    return [*found[:DIFFERENCES_SHOWN], f"and {len(found) - DIFFERENCES_SHOWN} more differences"]


def _differences(recorded: object, now: object, where: str) -> Iterator[str]:
    """One line per value that differs, at the deepest place it differs (``timeline[20].data.receipt_id``), so
    that the line shows the difference itself, not the first 120 characters of a long value both share. An
    empty side is shown whole (a timeline that is now empty is one line, not one per entry)."""
    if isinstance(recorded, dict) and isinstance(now, dict) and recorded and now:
        for key in [*now, *(k for k in recorded if k not in now)]:
            inner = f"{where}.{key}" if where else str(key)
            yield from _differences(recorded.get(key, _MISSING), now.get(key, _MISSING), inner)
    elif isinstance(recorded, list) and isinstance(now, list) and recorded and now:
        for i in range(min(len(recorded), len(now))):
            yield from _differences(recorded[i], now[i], f"{where}[{i}]")
        if len(recorded) != len(now):
            yield f"{where}: recorded {len(recorded)} entries, now {len(now)}"
    elif recorded != now or type(recorded) is not type(now):
        yield f"{where}: recorded {_shown(recorded)}, now {_shown(now)}"


_MISSING = object()


def _shown(value: object) -> str:
    return "nothing" if value is _MISSING else json.dumps(value)[:120]


def _flag(args: list[str], name: str) -> str | None:
    return args[args.index(name) + 1] if name in args and args.index(name) + 1 < len(args) else None


def _budget(path: Path, args: list[str]) -> float | None:
    """The wall-clock budget a reproduce command names (``--case-timeout``, as ``harness run`` takes it); None
    when it names none (or 0: none)."""
    if "--case-timeout" not in args:
        return None
    text = _flag(args, "--case-timeout") or ""
    try:
        budget_s = float(text)
    except ValueError:
        budget_s = math.nan
    if not 0 <= budget_s <= CASE_TIMEOUT_MAX_S:  # NaN is refused here too
        raise InputError(
            f"{path}: field 'reproduce': --case-timeout {text!r} is not seconds in 0..{CASE_TIMEOUT_MAX_S:g}; "
            "fix: give a case file"
        )
    return budget_s or None


@dataclass(frozen=True, slots=True)
class _ReplayJob:
    """One case run ``runs`` times in a row, as a job a supervised worker process runs (``harness.run.pool``)."""

    policy_spec: str
    scenario_spec: str
    seed: int
    runs: int
    #: The budget the case's reproduce command names, named again in that of a run that fails (as ``run`` does).
    case_timeout_s: float | None
    #: Runs not to do again, by position, each with why it failed (over the budget, or its worker died).
    failed: tuple[tuple[int, str], ...] = ()

    def execute(self, on_case: Callable[[int], None]) -> tuple[CaseReport, ...] | str:
        """The reports of the runs, up to the first that failed; or, when the case cannot be loaded here, why."""
        try:
            (case,) = load_grid([self.policy_spec], [self.scenario_spec], [self.seed]).cases
        except InputError as exc:
            return str(exc)
        failed = dict(self.failed)
        reports = []
        for position in range(self.runs):
            if position in failed:  # the runs after a failed one would fail the same way: none is done
                reports.append(failed_report(case, failed[position], self.case_timeout_s))
                break
            on_case(position)
            reports.append(run_case(case)[0])
            on_case(-1)
        return tuple(reports)

    def without(self, position: int, reason: str) -> _ReplayJob:
        return replace(self, failed=(*self.failed, (position, reason)))


def _run(case: Case, runs: int, budget_s: float | None, supervised: bool) -> tuple[CaseReport, ...]:
    """Run ``case`` ``runs`` times: in a worker process under ``budget_s`` (else the default budget) when
    ``supervised``; the reports up to the first run that failed (a ``harness_error`` report with the reason)."""
    if not supervised:
        # What the policy prints goes to standard error, as from a worker process: standard output is the
        # harness's own (a gate replays its failing cases here, between the lines it prints).
        with contextlib.redirect_stdout(sys.stderr):
            return tuple(run_case(case)[0] for _ in range(runs))
    job = _ReplayJob(case.policy_spec, case.scenario_spec, case.seed, runs, budget_s)
    results: list[object] = []
    supervise([job], 1, budget_s or DEFAULT_CASE_TIMEOUT_S, lambda _, result: results.append(result))
    (reports,) = results
    if isinstance(reports, str):  # loaded here, but not in the worker (a file changed or removed meanwhile)
        raise InputError(reports)
    assert isinstance(reports, tuple)
    return reports


#: The safety properties a finding may say it violates.
PROPERTY_NAMES = tuple(m.name for m in PROPERTIES)


def _replay_scenario(path: Path, supervised: bool) -> Replay:
    scenario = load_scenario(path)
    if scenario.reproduces is None:
        raise ScenarioError(
            f"{path}: field 'reproduces': missing, so which policy and seed to run is unknown; "
            "fix: add 'reproduces: {policy: ..., policy_revision: ..., seed: ..., outcome: ..., properties: [...]}' "
            "(the properties it violates; [] for none), or run it with 'harness run --scenario'"
        )
    wanted = scenario.reproduces
    # What it says it reproduces is read as the scenario is: each field named when it cannot be what replay needs.
    mend = "fix: write it as the finding or repro file had it, or run the scenario with 'harness run --scenario'"
    if wanted.seed > SEED_MAX:
        raise ScenarioError(f"{path}: field 'reproduces.seed': {wanted.seed} is over {SEED_MAX}; {mend}")
    unknown = [p for p in wanted.properties if p not in PROPERTY_NAMES]
    if unknown:
        raise ScenarioError(
            f"{path}: field 'reproduces.properties': '{unknown[0]}' is no property the checker judges (it judges "
            f"{', '.join(PROPERTY_NAMES)}); {mend}"
        )
    look_in(wanted.policy_path)  # where the case ran, its policy was imported from there (a test file's folder)
    try:
        (case,) = load_grid([wanted.policy], [str(path)], [wanted.seed]).cases
    except PolicyError as exc:
        raise ScenarioError(f"{path}: field 'reproduces.policy': {exc}") from None
    report, *again = _run(case, 2, wanted.case_timeout_s, supervised)
    violated = tuple(name for name, verdict in report.checks.items() if verdict == "false")
    differences = []
    if report.policy_revision != wanted.policy_revision:
        differences.append(f"policy revision: recorded {wanted.policy_revision}, now {report.policy_revision}")
    if report.outcome != wanted.outcome:
        differences.append(f"outcome: recorded {wanted.outcome}, now {report.outcome}")
        if report.error is not None:
            differences.append(f"harness error: {report.error}")
    if set(violated) != set(wanted.properties):
        differences.append(f"violated properties: recorded {list(wanted.properties)}, now {list(violated)}")
    if again and recovery_json(report) != recovery_json(again[0]):
        differences.append(
            "two runs of the case gave different evidence: the policy did not decide the same way twice (it must "
            "decide from the Situation alone: nothing kept between calls, no randomness or clock of its own)"
        )
    elif differences and report.error is None and report.policy_revision == wanted.policy_revision:
        # Twice the same here, and not as recorded: what the policy kept from the cases before the recorded one
        # (a count on its object, a module's global) is the usual cause, when nothing else changed.
        differences.append(
            "the policy's revision is the one recorded, yet it decided otherwise: unless its code, the harness or "
            "this file's scenario changed since, it kept something from the cases run before this one (on its "
            "object or in a global), or used randomness or a clock of its own (it must decide from the Situation "
            "alone)"
        )
    return Replay(report, not differences, tuple(printable(d) for d in differences))


def timeline_text(report: CaseReport) -> str:
    """The case's history, one line per entry: index, time, actor, event, its data; ``!`` marks a fault and
    ``*`` an entry that witnesses an anomaly. A case the harness could not judge has no history: one line says
    why instead. Every line is ``printable``, whatever text a policy gave."""
    witnesses = {i for a in report.anomalies for i in a.witnesses}
    lines = []
    for entry in report.timeline:
        mark = "!" if entry.actor == "injector" else "*" if entry.index in witnesses else " "
        data = " ".join(f"{k}={v}" for k, v in entry.data.items() if v is not None)
        line = f"{mark} {entry.index:>4} {entry.at_s:>10.3f}s  {entry.actor:<11} {entry.event:<20} {data}"
        lines.append(printable(line))
    if not lines and report.error is not None:
        lines.append(printable(f"no timeline: the harness failed: {report.error}"))
    return "\n".join(lines)


def printable(text: str) -> str:
    """``text`` with every character a terminal would act on instead of show (a line break, a carriage return,
    an escape sequence's ESC, any other control or format character) written as Python writes it in a string
    literal (``\\n``, ``\\r``, ``\\x1b``), so that it shows on the line it is part of."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
