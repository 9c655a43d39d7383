"""What lets a stopped exploration be resumed: the request it began with, and each finished part's result.

An exploration's work is split into parts before any runs (one per template, or per template and process), in an
order fixed by the request alone. Each part's result is kept under ``.parts/`` as it finishes; ``harness explore
--resume DIR`` runs only the parts that are missing and then writes what a clean exploration writes, byte for byte
(but for its wall time and Polyaxon run ids): each part is deterministic, and the merge reads the parts in order.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, TypeAdapter, ValidationError, with_config
from typing_extensions import TypedDict

from harness.errors import wrong_field
from harness.explore.search import ExploreJob, JobResult
from harness.model import EXPLORE_REQUEST
from harness.plx import TrackingMode
from harness.run.files import write_atomic
from harness.run.plan import UsageError
from harness.version import __version__

__all__ = ["PARTS", "REQUEST", "ExploreRequest", "finished_parts", "keep_part"]

#: What the exploration was asked, written before any part runs.
REQUEST = EXPLORE_REQUEST
#: One file per finished part (``<index>.part``); removed with the request once ``explore.json`` is written.
PARTS = ".parts"

_FIX = "fix: explore anew with another --out (the file was edited or damaged)"


@with_config(ConfigDict(strict=True))
class _OptionsShape(TypedDict):
    depth: Annotated[int, Field(ge=1, le=3)]
    swarm: Annotated[int, Field(ge=0)]
    seeds: Annotated[list[Annotated[int, Field(ge=0)]], Field(min_length=1)]
    concurrency: Annotated[int, Field(ge=1)]
    shard: Annotated[int, Field(ge=0)]
    shards: Annotated[int, Field(ge=1)]
    tracking: Literal["offline", "server", "none"]
    project: str
    case_timeout_s: float | None
    unfired: Literal["fail", "note"]


@with_config(ConfigDict(strict=True))
class _RequestShape(TypedDict):
    harness_version: str
    policies: Annotated[list[str], Field(min_length=1)]
    scenarios: Annotated[list[str], Field(min_length=1)]
    #: The folder it began in: a user's policy (``package.module:attr``) is imported from there again.
    cwd: str
    options: _OptionsShape
    fingerprints: dict[str, str]
    digest: str


_REQUEST_SHAPE = TypeAdapter(_RequestShape)


def _digest(data: dict[str, Any]) -> str:
    text = json.dumps({k: v for k, v in data.items() if k != "digest"}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class ExploreRequest:
    """What an exploration was asked (policies, templates, options) and the fingerprints of what it reads."""

    policies: tuple[str, ...]
    scenarios: tuple[str, ...]
    cwd: str
    depth: int
    swarm: int
    seeds: tuple[int, ...]
    #: Its parts are split for this many processes; a resume may run them in any number.
    concurrency: int
    shard: int
    shards: int
    tracking: TrackingMode
    project: str
    case_timeout_s: float | None
    unfired: Literal["fail", "note"]
    fingerprints: dict[str, str]

    def to_json(self) -> str:
        data: dict[str, Any] = {
            "harness_version": __version__,
            "policies": list(self.policies),
            "scenarios": list(self.scenarios),
            "cwd": self.cwd,
            "options": {
                "depth": self.depth,
                "swarm": self.swarm,
                "seeds": list(self.seeds),
                "concurrency": self.concurrency,
                "shard": self.shard,
                "shards": self.shards,
                "tracking": self.tracking,
                "project": self.project,
                "case_timeout_s": self.case_timeout_s,
                "unfired": self.unfired,
            },
            "fingerprints": self.fingerprints,
        }
        data["digest"] = _digest(data)
        return json.dumps(data, indent=2) + "\n"

    def write(self, out: Path) -> None:
        write_atomic(out / REQUEST, self.to_json())

    @classmethod
    def read(cls, out: Path) -> ExploreRequest:
        """The request of the exploration in ``out``; ``UsageError`` naming the file and field when it is not
        one a harness of this version wrote as it stands."""
        path = out / REQUEST
        if not out.is_dir():
            what = "a file, not a folder" if out.exists() else "no such folder"
            raise UsageError(f"--resume {out}: {what}; fix: give a folder 'harness explore' was writing")
        if (out / "explore.json").is_file():  # written last: whole, even if killed before its request went
            raise UsageError(f"nothing to resume: the exploration in {out} is complete (explore.json)")
        if not path.is_file():
            raise UsageError(
                f"--resume {out}: no {REQUEST}, so no exploration that stopped short; fix: give a folder "
                "'harness explore' was writing when it stopped (a run's folder resumes with 'harness run --resume')"
            )
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
            data = _REQUEST_SHAPE.validate_python(raw)
        except ValidationError as exc:
            raise UsageError(f"{path}: {wrong_field(exc)}; {_FIX}") from None
        except (OSError, ValueError) as exc:
            raise UsageError(f"{path}: unreadable ({exc}); {_FIX}") from None
        if data["digest"] != _digest(raw):
            raise UsageError(
                f"{path}: field 'digest': does not match the rest of the file, so the policies, templates or options "
                f"are not the ones the exploration began with; {_FIX}"
            )
        if data["harness_version"] != __version__:
            raise UsageError(
                f"{path}: field 'harness_version': {data['harness_version']}, but this harness is {__version__}, so "
                "its finished parts would mix two harnesses; fix: resume with the harness it began with, or explore "
                "anew with another --out"
            )
        options = data["options"]
        return cls(
            tuple(data["policies"]),
            tuple(data["scenarios"]),
            data["cwd"],
            options["depth"],
            options["swarm"],
            tuple(options["seeds"]),
            options["concurrency"],
            options["shard"],
            options["shards"],
            options["tracking"],
            options["project"],
            options["case_timeout_s"],
            options["unfired"],
            data["fingerprints"],
        )


def _part_path(out: Path, index: int) -> Path:
    return out / PARTS / f"{index}.part"


def keep_part(out: Path, index: int, job: ExploreJob, result: JobResult) -> None:
    """Keep a finished part's result, with the job it answers (a resume takes it only for the same job)."""
    write_atomic(_part_path(out, index), base64.b64encode(pickle.dumps((job, result))).decode("ascii") + "\n")


def finished_parts(out: Path, jobs: list[ExploreJob]) -> dict[int, JobResult]:
    """The results kept for ``jobs`` (by index). A part file that cannot be read back, or that answers another
    job, is left out: its part runs again, to the same result."""
    kept: dict[int, JobResult] = {}
    for index, job in enumerate(jobs):
        path = _part_path(out, index)
        if not path.is_file():
            continue
        try:
            answered, result = pickle.loads(base64.b64decode(path.read_text(encoding="ascii").strip(), validate=True))
        except (OSError, ValueError, binascii.Error, pickle.UnpicklingError, EOFError, TypeError, AttributeError):
            continue
        if answered == job and isinstance(result, JobResult):
            kept[index] = result
    return kept
