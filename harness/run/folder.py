"""A run folder: claimed by one run at a time, and described by a manifest written before any case runs.

The manifest says what the run was asked to do (its cells, seeds and options) and fingerprints everything
it depends on (each scenario as loaded, each policy's revision and source), so ``harness run --resume DIR``
can complete a run that was stopped, and refuse to when an input changed since it began: the same lesson
as an idempotency key reused with other arguments. A piece of a cell that finished left its summary rows
and its tally in ``.parts/``; a cell whose Polyaxon run was recorded left a note there too.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import inspect
import json
import os
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Annotated, Any, NotRequired

from pydantic import ConfigDict, Field, TypeAdapter, ValidationError, with_config
from typing_extensions import TypedDict

from harness.errors import wrong_field
from harness.limits import SEED_COUNT_MAX
from harness.model import EXPLORE_REQUEST, MANIFEST, REQUEST, RUN_RECORD
from harness.model.lock import LOCK_FILE, held, take
from harness.run.plan import Cell, Grid, UsageError, absolute
from harness.seeds import SEED_MAX
from harness.version import __version__

__all__ = [
    "HARNESS_CODE",
    "LOCK_FILE",
    "REQUEST",
    "Claim",
    "Manifest",
    "Request",
    "changed_since",
    "claim",
    "code_digest",
    "fingerprints",
    "harness_code_digest",
    "in_use",
    "not_empty",
    "stray_temporaries",
]


@dataclass(slots=True)
class Claim:
    """This process's hold on a run folder (an advisory lock the kernel releases if the process dies)."""

    out: Path
    handle: IO[str]

    def release(self) -> None:
        with contextlib.suppress(OSError, ValueError):  # ValueError: released before (its handle closed)
            fcntl.flock(self.handle, fcntl.LOCK_UN)
            self.handle.close()


def claim(out: Path, fresh: bool) -> Claim:
    """Take the run folder for this run, or raise ``UsageError``: another run holds it, or (``fresh``) it is
    not empty. Taking the lock first makes two runs started together on one folder safe: one gets it."""
    try:
        handle = open(out / LOCK_FILE, "a", encoding="utf-8")  # noqa: SIM115 (held for the whole run)
    except OSError as exc:
        raise UsageError(f"--out {out}: cannot write in it ({exc.strerror}); fix: give a writable folder") from None
    if not take(handle, fcntl.LOCK_EX):
        handle.close()
        raise UsageError(
            f"output folder {out} is in use by another harness run; fix: wait for it to end, "
            + ("or pass another --out" if fresh else "then resume it only if it stopped short (one that ends is whole)")
        ) from None
    if fresh and any(p.name != LOCK_FILE for p in out.iterdir()):
        handle.close()
        raise UsageError(not_empty(out))
    return Claim(out, handle)


def not_empty(out: Path) -> str:
    """Why ``--out`` cannot take a folder that holds anything, and what to do: a run's folder stopped before its
    end is resumed, not started again; one another run is writing is waited for."""
    quoted = shlex.quote(str(out.absolute()))
    if (out / LOCK_FILE).is_file() and in_use(out):
        return f"output folder {out} is in use by another harness run; fix: wait for it to end, or pass another --out"
    if is_check(out):
        return checked_here(out)
    if (out / RUN_RECORD).is_file() and not (out / ".parts").exists():
        return f"--out {out}: holds a complete run; fix: give a new or empty folder"
    if (out / MANIFEST).is_file() or (out / REQUEST).is_file():
        return (
            f"--out {out}: holds a run that was stopped before its end; fix: complete it with "
            f"python -m harness run --resume {quoted}, or give a new or empty folder"
        )
    if (out / EXPLORE_REQUEST).is_file() and not (out / "explore.json").is_file():  # (killed as it ended: whole)
        return (
            f"--out {out}: holds an exploration that was stopped before its end; fix: complete it with "
            f"python -m harness explore --resume {quoted}, or give a new or empty folder"
        )
    return f"--out {out}: is not empty; fix: give a new or empty folder"


def is_check(out: Path) -> bool:
    """Whether ``out`` holds the cases of a gate (``harness check``, the pytest plugin), as its manifest says."""
    try:
        options = json.loads((out / MANIFEST).read_text(encoding="utf-8")).get("options")
    except (OSError, ValueError, AttributeError):
        return False
    return isinstance(options, dict) and options.get("check") is True


def checked_here(out: Path) -> str:
    """Why a folder a check wrote is not taken, and what to do (not ``run --resume``: completed as a plain run, a
    check's cases would end without its verdict, repro files or JUnit file, and exit 0 over incorrect cases)."""
    whole = (out / RUN_RECORD).is_file() and not (out / ".parts").exists()
    held = "the cases of a check" + ("" if whole else " that was stopped before its end")
    return (
        f"--out {out}: holds {held}, and a check is not resumable; fix: run the check again with a new or empty --out"
    )


def in_use(out: Path) -> bool:
    """Whether a harness run holds the folder now (without taking it for long, and without writing in it)."""
    try:
        return held(out)
    except OSError as exc:
        raise UsageError(
            f"{out / LOCK_FILE}: cannot be read ({exc.strerror}), so whether a run is writing {out} cannot be told; "
            "fix: run this as the user who ran it"
        ) from None


@dataclass(frozen=True, slots=True)
class Request:
    """What ``harness run`` was asked, word for word, and where."""

    argv: tuple[str, ...]
    cwd: str

    def write(self, out: Path) -> None:
        from harness.run.files import write_atomic

        write_atomic(out / REQUEST, json.dumps({"argv": list(self.argv), "cwd": self.cwd}, indent=2) + "\n")

    @staticmethod
    def folder(out: Path) -> str | None:
        """The folder the run in ``out`` was started from, if its request says (whether or not it was planned)."""
        try:
            cwd = json.loads((out / REQUEST).read_text(encoding="utf-8"))["cwd"]
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return cwd if isinstance(cwd, str) else None

    @classmethod
    def read(cls, out: Path) -> Request | None:
        """The request of a run folder that has no manifest yet (it was stopped before its grid was planned)."""
        if (out / MANIFEST).is_file() or not (out / REQUEST).is_file():
            return None
        # The manifest is written before any case runs: results beside a request and no manifest mean it was
        # deleted, and planning the run again from its words would mix the cases of two inputs in one run.
        results = sorted(p.name for p in out.iterdir() if p.name not in (REQUEST, LOCK_FILE) and not _temporary(p))
        if results:
            raise UsageError(
                f"{out / MANIFEST}: missing, though the run has results ({', '.join(results[:3])}"
                f"{', ...' if len(results) > 3 else ''}), so what they were run from cannot be checked; fix: start "
                "the run anew with another --out (the folder was edited or damaged)"
            )
        try:
            data = json.loads((out / REQUEST).read_text(encoding="utf-8"))
            return cls(tuple(str(a) for a in data["argv"]), str(data["cwd"]))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise UsageError(
                f"{out / REQUEST}: unreadable ({exc}); fix: start the run anew with another --out"
            ) from None


_Seed = Annotated[int, Field(ge=0, le=SEED_MAX)]


@with_config(ConfigDict(strict=True))
class _SeedRange(TypedDict):
    first: _Seed
    last: _Seed


@with_config(ConfigDict(strict=True))
class _CellShape(TypedDict):
    policy: str
    scenario: str
    seeds: Annotated[list[_Seed], Field(min_length=1)] | _SeedRange


@with_config(ConfigDict(strict=True))
class _ManifestShape(TypedDict):
    """What a manifest holds, typed: one edited or damaged by hand is refused naming the field, not read into a
    run that fails later with a traceback (the options are checked where they are read, ``harness.run.grid``)."""

    cells: Annotated[list[_CellShape], Field(min_length=1)]
    concurrency: Annotated[int, Field(ge=1)]
    options: dict[str, Any]
    fingerprints: dict[str, str]
    #: A digest of everything else in the file: an edit that keeps every field well-typed (another concurrency,
    #: more seeds) would make a resume mix two runs. A run begun before it was kept has none, and is not checked.
    digest: NotRequired[str]


_MANIFEST_SHAPE = TypeAdapter(_ManifestShape)


def _manifest_digest(data: dict[str, Any]) -> str:
    return _digest(json.dumps({k: v for k, v in data.items() if k != "digest"}, sort_keys=True))


def _seeds_json(seeds: Sequence[int]) -> Any:
    if isinstance(seeds, range) and seeds.step == 1:
        return {"first": seeds.start, "last": seeds.stop - 1}
    return list(seeds)


def _seeds_of(data: list[int] | _SeedRange) -> Sequence[int]:
    if isinstance(data, dict):
        return range(data["first"], data["last"] + 1)
    return tuple(data)


@dataclass(frozen=True, slots=True)
class Manifest:
    """What a run was asked to do, and the fingerprints of what it depends on."""

    cells: tuple[Cell, ...]
    concurrency: int
    options: dict[str, Any]
    fingerprints: dict[str, str]
    #: Read back as written (its digest matches): what ``check_unedited`` asks.
    unedited: bool = True
    #: Whether it keeps a digest: one that does not was written before digests were kept, or edited.
    digested: bool = True

    def to_json(self) -> str:
        data: dict[str, Any] = {
            "harness_version": __version__,
            "cells": [
                {"policy": c.policy_spec, "scenario": c.scenario_spec, "seeds": _seeds_json(c.seeds)}
                for c in self.cells
            ],
            "concurrency": self.concurrency,
            "options": self.options,
            "fingerprints": self.fingerprints,
        }
        data["digest"] = _manifest_digest(data)
        return json.dumps(data, indent=2) + "\n"

    @classmethod
    def read(cls, out: Path) -> Manifest:
        path = out / MANIFEST
        if not out.is_dir():
            what = "a file, not a folder" if out.exists() else "no such folder"
            raise UsageError(f"{out}: {what}; fix: give a folder written by 'harness run'")
        if not path.is_file():
            if (out / EXPLORE_REQUEST).is_file():
                raise UsageError(
                    f"{out}: an exploration that was stopped, not a run; fix: complete it with python -m harness "
                    f"explore --resume {shlex.quote(str(out.absolute()))}"
                )
            raise UsageError(f"{out}: no {MANIFEST}, so not a run folder; fix: give a folder written by 'harness run'")
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
            data = _MANIFEST_SHAPE.validate_python(raw)
        except ValidationError as exc:
            raise UsageError(
                f"{path}: {wrong_field(exc)}; fix: start the run anew with another --out (the manifest was edited "
                "or damaged)"
            ) from None
        except (OSError, ValueError) as exc:
            raise UsageError(f"{path}: unreadable ({exc}); fix: start the run anew with another --out") from None
        cells = tuple(Cell(c["policy"], c["scenario"], _seeds_of(c["seeds"])) for c in data["cells"])
        for i, cell in enumerate(cells):
            if not 1 <= len(cell.seeds) <= SEED_COUNT_MAX:
                raise UsageError(
                    f"{path}: field 'cells.{i}.seeds': {len(cell.seeds):,} seeds, outside 1..{SEED_COUNT_MAX:,}; fix: "
                    "start the run anew with another --out (the manifest was edited or damaged)"
                )
        return cls(
            cells,
            data["concurrency"],
            data["options"],
            data["fingerprints"],
            data.get("digest", _manifest_digest(raw)) == _manifest_digest(raw),
            "digest" in data,
        )

    def check_unedited(self, out: Path, kept_by_now: bool) -> None:
        """Refuse a manifest whose fields are each well-formed (checked first, each naming its field) but not as
        the run wrote them: a resume would mix two runs (another concurrency counted pieces twice). A manifest
        without a digest is taken for one written before digests were kept unless ``kept_by_now`` (the run has
        pieces that only a harness keeping digests writes): then its digest was deleted."""
        fix = "fix: start the run anew with another --out (the manifest was edited or damaged)"
        if not self.unedited:
            raise UsageError(
                f"{out / MANIFEST}: field 'digest': does not match the rest of the file, so the cells, seeds or "
                f"options are not the ones the run began with; {fix}"
            )
        if not self.digested and kept_by_now:
            raise UsageError(
                f"{out / MANIFEST}: field 'digest': missing, though the run's finished pieces were written by a "
                f"harness that keeps one, so the cells, seeds or options may not be the ones the run began with; {fix}"
            )


def changed_since(grid: Grid, kept: dict[str, str]) -> str | None:
    """The first input (a scenario or a policy, by name) whose fingerprint is not the one ``kept`` when the work
    began; ``None`` when none changed."""
    now = fingerprints(grid)
    return next((name for name in sorted(set(now) | set(kept)) if now.get(name) != kept.get(name)), None)


#: The key of the harness's own code among the fingerprints: cases judged by two versions of the simulator or
#: the checker would be no one run, whatever its version number says.
HARNESS_CODE = "the harness's code"


def fingerprints(grid: Grid) -> dict[str, str]:
    """A digest of the harness's own code, of every scenario as loaded (its secret left out) and of every policy's
    revision and source."""
    out: dict[str, str] = {HARNESS_CODE: harness_code_digest()}
    for case in grid.cases:
        scenario = case.scenario.model_dump_json(exclude={"approval": {"token"}})
        # By its absolute path, as a resume names it whatever folder it runs from (a shipped name stays a name).
        out[f"scenario {absolute(case.scenario_spec)} ({case.scenario.name})"] = _digest(scenario)
        policy = case.policy
        source = ""
        with contextlib.suppress(OSError, TypeError):
            source = Path(inspect.getfile(type(policy))).read_text(encoding="utf-8")
        out[f"policy {case.policy_spec}"] = _digest(f"{policy.name}\n{policy.revision}\n{source}")
    return out


@functools.cache
def harness_code_digest() -> str:
    """``code_digest`` of the harness package this process runs (read once)."""
    return code_digest(Path(__file__).resolve().parents[1])


def code_digest(package: Path) -> str:
    """A digest of every module under ``package``, by its path inside it and its text."""
    return _digest(
        "".join(
            f"{path.relative_to(package).as_posix()}\0{hashlib.sha256(path.read_bytes()).hexdigest()}\n"
            for path in sorted(package.rglob("*.py"))
        )
    )


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _temporary(path: Path) -> bool:
    """A temporary file of ``write_atomic`` (a run killed while it wrote one leaves it behind)."""
    return path.name.startswith(".") and path.name.endswith(".tmp")


def stray_temporaries(out: Path) -> None:
    """Remove the half-written temporary files a killed run left (every file is written through one)."""
    for path in out.rglob(".*.tmp"):
        with contextlib.suppress(OSError):
            os.unlink(path)
