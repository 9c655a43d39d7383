"""A run folder, function by function (harness/run/folder.py): its claim, why a folder is refused, the request a
run was started with, the manifest a resume reads, the fingerprints that tell a changed input, and the
temporaries a killed run leaves. Written for the thirty-sixth mutation pass (tests/MUTANTS.md): together they kill
every mutant of the module mutmut makes but 17 equivalent ones. All in process; no run is started."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import sys
import types
import uuid
from pathlib import Path

import pytest

import harness
from harness.model import MANIFEST, REQUEST, RUN_RECORD
from harness.run.folder import (
    HARNESS_CODE,
    LOCK_FILE,
    Claim,
    Manifest,
    Request,
    claim,
    code_digest,
    fingerprints,
    harness_code_digest,
    in_use,
    not_empty,
    stray_temporaries,
)
from harness.run.plan import Cell, UsageError, load_grid
from harness.version import __version__

FIX_ANEW = "fix: start the run anew with another --out (the manifest was edited or damaged)"


def _refusal(work: object, *args: object) -> str:
    with pytest.raises(UsageError) as caught:
        work(*args)  # type: ignore[operator]
    return str(caught.value)


def _fresh_module_name(stem: str) -> str:
    """A module name no earlier session imported: mutmut runs sessions one after another in one process, and a
    module imported by the first stays in ``sys.modules``, its file gone with that session's tmp_path."""
    return f"{stem}_{uuid.uuid4().hex}"


def _hold(out: Path) -> Claim:
    """A hold on ``out`` as another run's would be: its own open file, locked exclusively."""
    handle = open(out / LOCK_FILE, "a", encoding="utf-8")  # noqa: SIM115 (released by the caller)
    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return Claim(out, handle)


# -- the claim -------------------------------------------------------------------------------------------------


def test_a_claim_holds_the_folder_until_released_and_a_second_release_is_harmless(tmp_path: Path) -> None:
    held = claim(tmp_path, fresh=True)
    assert held.out == tmp_path  # what a run's end lets go of and removes
    assert (tmp_path / LOCK_FILE).is_file() and in_use(tmp_path)
    held.release()
    assert not in_use(tmp_path) and held.handle.closed
    held.release()  # closed already: nothing raised
    again = claim(tmp_path, fresh=True)  # only the lock file is there: the folder is still empty
    again.release()


def test_a_claim_on_a_held_folder_says_what_to_do_for_a_new_run_and_for_a_resume(tmp_path: Path) -> None:
    other = _hold(tmp_path)
    try:
        start = f"output folder {tmp_path} is in use by another harness run; fix: wait for it to end, "
        assert _refusal(claim, tmp_path, True) == start + "or pass another --out"
        assert (
            _refusal(claim, tmp_path, False)
            == start + "then resume it only if it stopped short (one that ends is whole)"
        )
    finally:
        other.release()


def test_a_fresh_claim_refuses_a_folder_with_anything_but_its_lock_and_lets_go_of_it(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    assert _refusal(claim, tmp_path, True) == f"--out {tmp_path}: is not empty; fix: give a new or empty folder"
    assert not in_use(tmp_path), "a refused claim kept its lock"
    resumed = claim(tmp_path, fresh=False)  # a resume takes a folder that holds things
    assert in_use(tmp_path)
    resumed.release()


def test_a_claim_on_a_folder_it_cannot_write_in_says_so(tmp_path: Path) -> None:
    missing = tmp_path / "gone"
    said = _refusal(claim, missing, True)
    assert said == f"--out {missing}: cannot write in it (No such file or directory); fix: give a writable folder"


# -- why a folder is refused -----------------------------------------------------------------------------------


def test_not_empty_tells_a_held_folder_a_complete_run_a_stopped_one_and_anything_else_apart(tmp_path: Path) -> None:
    out = tmp_path / "run dir"
    out.mkdir()
    (out / "x").write_text("")
    assert not_empty(out) == f"--out {out}: is not empty; fix: give a new or empty folder"
    (out / LOCK_FILE).write_text("")  # a lock file no run holds: not in use
    assert not_empty(out) == f"--out {out}: is not empty; fix: give a new or empty folder"
    (out / REQUEST).write_text("{}")
    stopped = (
        f"--out {out}: holds a run that was stopped before its end; fix: complete it with "
        f"python -m harness run --resume '{out.absolute()}', or give a new or empty folder"
    )
    assert not_empty(out) == stopped
    (out / REQUEST).unlink()
    (out / MANIFEST).write_text("{}")
    assert not_empty(out) == stopped
    (out / RUN_RECORD).write_text("{}")  # the run record is written last, and .parts/ then removed
    assert not_empty(out) == f"--out {out}: holds a complete run; fix: give a new or empty folder"
    (out / ".parts").mkdir()  # pieces left: not complete after all
    assert not_empty(out) == stopped
    other = _hold(out)
    try:
        assert not_empty(out) == (
            f"output folder {out} is in use by another harness run; fix: wait for it to end, or pass another --out"
        )
    finally:
        other.release()


def test_in_use_of_a_lock_file_it_cannot_read_is_a_one_line_refusal(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        (tmp_path / LOCK_FILE).mkdir()  # root reads any file: a folder where the lock file goes cannot be opened
        reason = "Is a directory"
    else:
        (tmp_path / LOCK_FILE).write_text("")
        (tmp_path / LOCK_FILE).chmod(0)
        reason = "Permission denied"
    assert _refusal(in_use, tmp_path) == (
        f"{tmp_path / LOCK_FILE}: cannot be read ({reason}), so whether a run is writing {tmp_path} cannot be "
        "told; fix: run this as the user who ran it"
    )


# -- the request -----------------------------------------------------------------------------------------------


def test_a_request_is_written_as_indented_json_and_read_back(tmp_path: Path) -> None:
    asked = Request(("run", "--seed", "3"), "/somewhere")
    asked.write(tmp_path)
    text = (tmp_path / REQUEST).read_text(encoding="utf-8")
    assert text == json.dumps({"argv": ["run", "--seed", "3"], "cwd": "/somewhere"}, indent=2) + "\n"
    assert Request.read(tmp_path) == asked
    assert Request.folder(tmp_path) == "/somewhere"


@pytest.mark.parametrize(
    ("text", "folder"),
    [
        ('{"argv": [], "cwd": "/here"}', "/here"),
        ('{"argv": [], "cwd": 7}', None),
        ('{"argv": []}', None),
        ("[1]", None),
        ("{", None),
        (None, None),
    ],
)
def test_request_folder_is_the_cwd_it_names_or_none(tmp_path: Path, text: str | None, folder: str | None) -> None:
    if text is not None:
        (tmp_path / REQUEST).write_text(text)
    assert Request.folder(tmp_path) == folder


def test_a_request_is_read_only_where_there_is_no_manifest(tmp_path: Path) -> None:
    assert Request.read(tmp_path) is None  # neither
    Request(("run",), "/c").write(tmp_path)
    (tmp_path / LOCK_FILE).write_text("")
    (tmp_path / ".summary.csv.1.tmp").write_text("")  # a temporary a killed run left is not a result
    assert Request.read(tmp_path) == Request(("run",), "/c")
    (tmp_path / MANIFEST).write_text("{}")
    assert Request.read(tmp_path) is None  # planned: the manifest says what the run is


def test_argv_and_cwd_of_a_request_are_read_as_text(tmp_path: Path) -> None:
    (tmp_path / REQUEST).write_text('{"argv": ["run", 3], "cwd": 5}')
    assert Request.read(tmp_path) == Request(("run", "3"), "5")


@pytest.mark.parametrize("names", [["a"], ["a", "b", "c"], ["a", "b", "c", "d"], [".parts"], ["summary.csv.tmp"]])
def test_results_beside_a_request_without_a_manifest_are_refused_naming_three(tmp_path: Path, names: list[str]) -> None:
    Request(("run",), "/c").write(tmp_path)
    for name in names:
        (tmp_path / name).write_text("")
    shown = ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")
    assert _refusal(Request.read, tmp_path) == (
        f"{tmp_path / MANIFEST}: missing, though the run has results ({shown}), so what they were run from cannot "
        "be checked; fix: start the run anew with another --out (the folder was edited or damaged)"
    )


@pytest.mark.parametrize("text", ["{", '{"argv": ["run"]}', '{"cwd": "/c"}', "[]", '{"argv": 3, "cwd": "/c"}'])
def test_an_unreadable_request_is_refused_naming_it(tmp_path: Path, text: str) -> None:
    (tmp_path / REQUEST).write_text(text)
    said = _refusal(Request.read, tmp_path)
    assert said.startswith(f"{tmp_path / REQUEST}: unreadable (")
    assert said.endswith("); fix: start the run anew with another --out")


# -- the manifest ----------------------------------------------------------------------------------------------


def _manifest(*cells: Cell) -> Manifest:
    return Manifest(
        cells or (Cell("retry_new_key", "lost_response", range(1, 4)),),
        2,
        {"tracking": "none"},
        {"policy retry_new_key": "abc"},
    )


def _written(out: Path, manifest: Manifest) -> dict[str, object]:
    (out / MANIFEST).write_text(manifest.to_json())
    data: dict[str, object] = json.loads((out / MANIFEST).read_text())
    return data


def test_a_manifest_is_written_with_its_version_its_seeds_as_ranges_or_lists_and_a_digest(tmp_path: Path) -> None:
    manifest = _manifest(
        Cell("p", "s", range(1, 4)),
        Cell("p", "t", (5, 9)),
        Cell("q", "s", range(0, 10, 2)),  # a range that steps is a list
    )
    text = manifest.to_json()
    assert text.endswith("}\n") and text.startswith('{\n  "harness_version": ')
    data = json.loads(text)
    assert data["harness_version"] == __version__
    assert data["cells"] == [
        {"policy": "p", "scenario": "s", "seeds": {"first": 1, "last": 3}},
        {"policy": "p", "scenario": "t", "seeds": [5, 9]},
        {"policy": "q", "scenario": "s", "seeds": [0, 2, 4, 6, 8]},
    ]
    assert (data["concurrency"], data["options"], data["fingerprints"]) == (
        2,
        {"tracking": "none"},
        {"policy retry_new_key": "abc"},
    )
    assert isinstance(data["digest"], str) and len(data["digest"]) == 16


def test_a_manifest_reads_back_as_written_unedited_and_digested(tmp_path: Path) -> None:
    manifest = _manifest(Cell("p", "s", range(1, 4)), Cell("p", "t", (5, 9)))
    _written(tmp_path, manifest)
    read = Manifest.read(tmp_path)
    assert read == manifest
    assert read.cells[0].seeds == range(1, 4) and read.cells[1].seeds == (5, 9)
    assert read.unedited and read.digested
    read.check_unedited(tmp_path, kept_by_now=True)  # nothing raised


def test_an_edit_that_keeps_every_field_well_typed_is_refused_by_the_digest(tmp_path: Path) -> None:
    data = _written(tmp_path, _manifest())
    data["concurrency"] = 1
    (tmp_path / MANIFEST).write_text(json.dumps(data))
    read = Manifest.read(tmp_path)
    assert not read.unedited and read.digested
    assert _refusal(read.check_unedited, tmp_path, False) == (
        f"{tmp_path / MANIFEST}: field 'digest': does not match the rest of the file, so the cells, seeds or "
        f"options are not the ones the run began with; {FIX_ANEW}"
    )


def test_a_manifest_without_a_digest_is_taken_as_older_unless_the_run_keeps_digests(tmp_path: Path) -> None:
    data = _written(tmp_path, _manifest())
    del data["digest"]
    data["concurrency"] = 1  # no digest to tell it
    (tmp_path / MANIFEST).write_text(json.dumps(data))
    read = Manifest.read(tmp_path)
    assert read.unedited and not read.digested and read.concurrency == 1
    read.check_unedited(tmp_path, kept_by_now=False)  # an older run's: resumed
    assert _refusal(read.check_unedited, tmp_path, True) == (
        f"{tmp_path / MANIFEST}: field 'digest': missing, though the run's finished pieces were written by a "
        f"harness that keeps one, so the cells, seeds or options may not be the ones the run began with; {FIX_ANEW}"
    )


def test_the_digest_covers_every_field_but_itself_whatever_their_order(tmp_path: Path) -> None:
    data = _written(tmp_path, _manifest())
    reordered = {k: data[k] for k in reversed(list(data))}
    (tmp_path / MANIFEST).write_text(json.dumps(reordered))
    assert Manifest.read(tmp_path).unedited
    for field, value in (("harness_version", "0.0.0"), ("options", {}), ("fingerprints", {"x": "y"})):
        (tmp_path / MANIFEST).write_text(json.dumps({**data, field: value}))
        assert not Manifest.read(tmp_path).unedited, field


def test_manifest_read_of_what_is_not_a_run_folder_says_what_it_is(tmp_path: Path) -> None:
    fix = "fix: give a folder written by 'harness run'"
    assert _refusal(Manifest.read, tmp_path / "none") == f"{tmp_path / 'none'}: no such folder; {fix}"
    (tmp_path / "f").write_text("")
    assert _refusal(Manifest.read, tmp_path / "f") == f"{tmp_path / 'f'}: a file, not a folder; {fix}"
    assert _refusal(Manifest.read, tmp_path) == f"{tmp_path}: no {MANIFEST}, so not a run folder; {fix}"
    (tmp_path / MANIFEST).mkdir()  # not a file
    assert _refusal(Manifest.read, tmp_path) == f"{tmp_path}: no {MANIFEST}, so not a run folder; {fix}"


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"concurrency": 0}, "concurrency"),
        ({"concurrency": "2"}, "concurrency"),
        ({"cells": []}, "cells"),
        ({"options": []}, "options"),
        ({"fingerprints": {"a": 1}}, "fingerprints.a"),
        ({"cells": [{"policy": "p", "scenario": "s", "seeds": []}]}, "cells.0.seeds"),
        ({"cells": [{"policy": "p", "scenario": "s", "seeds": [-1]}]}, "cells.0.seeds"),
        ({"cells": [{"policy": "p", "scenario": "s", "seeds": {"first": 1}}]}, "cells.0.seeds"),
        ({"cells": [{"policy": "p", "seeds": [1]}]}, "cells.0.scenario"),
    ],
)
def test_a_manifest_field_out_of_shape_is_refused_naming_it(
    tmp_path: Path, change: dict[str, object], field: str
) -> None:
    data = _written(tmp_path, _manifest())
    (tmp_path / MANIFEST).write_text(json.dumps({**data, **change}))
    said = _refusal(Manifest.read, tmp_path)
    assert said.startswith(f"{tmp_path / MANIFEST}: field '{field}")
    assert said.endswith(f"; {FIX_ANEW}")


def test_a_manifest_that_is_not_json_is_unreadable(tmp_path: Path) -> None:
    (tmp_path / MANIFEST).write_text("{")
    said = _refusal(Manifest.read, tmp_path)
    assert said.startswith(f"{tmp_path / MANIFEST}: unreadable (Expecting")
    assert said.endswith("); fix: start the run anew with another --out")


@pytest.mark.parametrize(("first", "last", "count"), [(1, 0, 0), (5, 4, 0), (1, 1_000_001, 1_000_001)])
def test_a_manifest_seed_range_outside_the_counts_a_run_takes_is_refused(
    tmp_path: Path, first: int, last: int, count: int
) -> None:
    data = _written(tmp_path, _manifest())
    cells = [
        {"policy": "p", "scenario": "s", "seeds": [1]},
        {"policy": "p", "scenario": "s", "seeds": {"first": first, "last": last}},
    ]
    (tmp_path / MANIFEST).write_text(json.dumps({**data, "cells": cells}))
    assert _refusal(Manifest.read, tmp_path) == (
        f"{tmp_path / MANIFEST}: field 'cells.1.seeds': {count:,} seeds, outside 1..1,000,000; {FIX_ANEW}"
    )


def test_a_manifest_of_a_million_seeds_is_read_as_a_range(tmp_path: Path) -> None:
    _written(tmp_path, _manifest(Cell("p", "s", range(1, 1_000_001))))
    assert Manifest.read(tmp_path).cells[0].seeds == range(1, 1_000_001)


# -- fingerprints and temporaries ------------------------------------------------------------------------------


def test_the_code_digest_changes_with_any_module_its_path_or_a_new_one_and_nothing_else(tmp_path: Path) -> None:
    """What tells a resume that the harness changed since the run began: every module's text and path, in every
    subpackage; not its compiled files or anything that is not a module."""
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "a.py").write_text("A = 1\n")
    (package / "sub" / "b.py").write_text("B = 2\n")
    first = code_digest(package)
    assert len(first) == 16 and code_digest(package) == first
    (package / "notes.txt").write_text("not code")
    (package / "sub" / "b.cpython-311.pyc").write_bytes(b"\0")
    assert code_digest(package) == first
    seen = {first}
    for change in (
        lambda: (package / "sub" / "b.py").write_text("B = 3\n"),
        lambda: (package / "sub" / "b.py").rename(package / "sub" / "c.py"),
        lambda: (package / "sub" / "c.py").rename(package / "c.py"),
        lambda: (package / "d.py").write_text(""),
    ):
        change()
        seen.add(code_digest(package))
    assert len(seen) == 5
    # Two files' texts are not one file's: the separator keeps each path with its own text.
    other = tmp_path / "other"
    other.mkdir()
    (other / "a.py").write_text("A = 1\n")
    joined = tmp_path / "joined"
    joined.mkdir()
    (joined / "a.py").write_text("A = 1\n\0b.py\0B = 2\n")
    (other / "b.py").write_text("B = 2\n")
    assert code_digest(other) != code_digest(joined)


def test_fingerprints_name_each_scenario_and_policy_and_change_with_their_revision() -> None:
    grid = load_grid(["retry_new_key", "reconcile_and_reauthorize"], ["lost_response"], [1, 2])
    prints = fingerprints(grid)
    assert sorted(prints) == [
        "policy reconcile_and_reauthorize",
        "policy retry_new_key",
        "scenario lost_response (lost_response)",
        HARNESS_CODE,
    ]
    assert prints[HARNESS_CODE] == harness_code_digest() == code_digest(Path(harness.__file__).parent)
    assert all(len(v) == 16 and int(v, 16) >= 0 for v in prints.values())
    assert prints["policy retry_new_key"] != prints["policy reconcile_and_reauthorize"]
    again = fingerprints(load_grid(["retry_new_key"], ["lost_response"], [7]))
    assert again["policy retry_new_key"] == prints["policy retry_new_key"]
    assert again["scenario lost_response (lost_response)"] == prints["scenario lost_response (lost_response)"]


def test_a_policy_revision_changes_its_fingerprint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = (
        "from harness.policy import Stop\n\n"
        "class P:\n    name = 'mine'\n    revision = '{rev}'\n\n"
        "    def decide(self, situation):\n        return Stop()\n\n"
        "POLICY = P()\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    seen = set()
    for rev in ("1", "2"):
        module = _fresh_module_name("folder_fp")
        (tmp_path / f"{module}.py").write_text(source.format(rev=rev))
        spec = f"{module}:POLICY"
        seen.add(fingerprints(load_grid([spec], ["lost_response"], [1]))[f"policy {spec}"])
    assert len(seen) == 2


def test_the_scenarios_secret_changes_no_fingerprint(tmp_path: Path) -> None:
    text = (Path(__file__).resolve().parent.parent / "scenarios" / "lost_response.yaml").read_text()
    prints = []
    for i, token in enumerate(("first-secret-token", "other-secret-token")):
        path = tmp_path / f"s{i}" / "lost_response.yaml"
        path.parent.mkdir()
        assert "tok-17-secret-do-not-log" in text
        path.write_text(text.replace("tok-17-secret-do-not-log", token))
        grid = load_grid(["retry_new_key"], [str(path)], [1])
        prints.append(next(v for k, v in fingerprints(grid).items() if k.startswith("scenario ")))
    assert prints[0] == prints[1]


def test_a_policys_source_alone_changes_its_fingerprint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Edited without a new revision, a policy is still another policy: a resume refuses to mix the two."""
    monkeypatch.syspath_prepend(str(tmp_path))
    seen = set()
    for answer in ("Stop()", "Escalate(reason='x')"):
        module = _fresh_module_name("folder_src")
        (tmp_path / f"{module}.py").write_text(
            "from harness.policy import Escalate, Stop\n\n"
            "class P:\n    name = 'mine'\n    revision = '1'\n\n"
            f"    def decide(self, situation):\n        return {answer}\n\n"
            "POLICY = P()\n"
        )
        spec = f"{module}:POLICY"
        seen.add(fingerprints(load_grid([spec], ["lost_response"], [1]))[f"policy {spec}"])
    assert len(seen) == 2


@pytest.mark.parametrize("file", [None, "/nonexistent/folder_fp_gone.py"])
def test_a_policy_whose_source_cannot_be_read_is_fingerprinted_by_its_name_and_revision(
    monkeypatch: pytest.MonkeyPatch, file: str | None
) -> None:
    """A policy class made at run time (its module has no file: ``inspect`` cannot name one), or whose file is
    gone: the fingerprint is then of the name and the revision alone, and the run goes on."""
    name = _fresh_module_name("folder_fp_nofile")
    module = types.ModuleType(name)
    if file is not None:
        module.__file__ = file
    exec(
        "from harness.policy import Stop\n"
        "class P:\n    name = 'fileless'\n    revision = 'r9'\n"
        "    def decide(self, situation):\n        return Stop()\n"
        "POLICY = P()\n",
        module.__dict__,
    )
    monkeypatch.setitem(sys.modules, name, module)
    prints = fingerprints(load_grid([f"{name}:POLICY"], ["lost_response"], [1]))
    assert prints[f"policy {name}:POLICY"] == hashlib.sha256(b"fileless\nr9\n").hexdigest()[:16]


def test_stray_temporaries_removes_only_write_atomics_temporaries_at_any_depth(tmp_path: Path) -> None:
    kept = [tmp_path / "a.tmp", tmp_path / ".a.json", tmp_path / "sub" / "b.tmp.json"]
    gone = [tmp_path / ".a.json.1.tmp", tmp_path / "sub" / "deeper" / ".x.tmp"]
    for path in kept + gone:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")
    (tmp_path / ".folder.tmp").mkdir()  # named as a temporary, but not a file: left, and nothing raised
    stray_temporaries(tmp_path)
    assert all(p.exists() for p in kept) and not any(p.exists() for p in gone)
    assert (tmp_path / ".folder.tmp").is_dir()
