"""Against a real Polyaxon server (haupt's sqlite sandbox on 127.0.0.1, started and stopped here).

Offline runs are pushed with `polyaxon ops push` and read back with the Polyaxon client; the harness's own
server mode pushes too; the grid operation is submitted and the server compiles one child run per cell
(nothing executes them: the sandbox has no Kubernetes). The viewer serves a run's offline runs.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from conftest import SMALL_GRID

from harness.model import CaseReport
from harness.plx.plxfile import default_grid_file, load_grid_file
from harness.plx.viewer import haupt_command

#: Every test here starts a Polyaxon server or its viewer: `pytest -m "not server"` skips them locally.
pytestmark = pytest.mark.server

ROOT = Path(__file__).resolve().parent.parent
CELLS = SMALL_GRID


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_healthy(url: str, process: subprocess.Popen[bytes], timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            time.sleep(0.25)
    raise TimeoutError(f"{url} not healthy after {timeout_s} s")


def stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """A haupt sandbox with its own HOME; yields the environment for the CLI and clients, stops it by PID."""
    base = tmp_path_factory.mktemp("sandbox")
    home = base / "home"
    home.mkdir()
    port = free_port()
    env = {**os.environ, "HOME": str(home), "POLYAXON_HOST": f"http://127.0.0.1:{port}"}
    env.pop("POLYAXON_IS_OFFLINE", None)
    log = (base / "server.log").open("wb")
    process = subprocess.Popen(
        [
            haupt_command(),
            "sandbox",
            "start",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            "1",
            "--path",
            str(base / "data"),
        ],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        wait_healthy(f"http://127.0.0.1:{port}/healthz", process)
        yield env
    finally:
        stop(process)
        log.close()


def run(args: list[str], env: dict[str, str], timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)


def polyaxon(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return run([str(Path(sys.executable).parent / "polyaxon"), *args], env)


def create_project(name: str, env: dict[str, str], command: Sequence[str] | None = None) -> None:
    """``polyaxon project create`` (or ``command``, such a command as the run printed it), tried again while the
    sandbox answers 405 (it allows one writer at a time)."""
    for attempt in range(8):
        proc = polyaxon(*(command or ("project", "create", "--name", name)), env=env)
        if proc.returncode == 0 or "405" not in proc.stdout + proc.stderr:
            break
        time.sleep(0.2 * (attempt + 1))
    assert proc.returncode == 0, proc.stdout + proc.stderr


def read(kind: str, *args: str, env: dict[str, str]) -> list[dict[str, Any]]:
    proc = run([sys.executable, str(ROOT / "tests" / "plx_read.py"), kind, *args], env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def assert_arrived(out: Path, runs: list[dict[str, Any]]) -> None:
    """Every cell arrived with its inputs, its batch of metrics, its outcome and the path of its case files, and
    those agree with the recovery.json files written locally."""
    assert len(runs) == 4
    for r in runs:
        assert r["inputs"]["seeds"] == [1, 2, 3] and r["status"] == "succeeded"
        folder = Path(r["outputs"]["cases_path"]) / r["inputs"]["scenario"]
        assert folder.is_relative_to(out.resolve())
        reports = [
            CaseReport.model_validate_json((folder / f"seed-{seed}" / "recovery.json").read_text())
            for seed in (1, 2, 3)
        ]
        assert r["outputs"]["recovery_outcome"] in {rep.outcome for rep in reports}
        mean = sum(float(rep.metrics["dispatches"] or 0) for rep in reports) / 3
        assert [v for _, v in r["metrics"]["dispatches"]] == [pytest.approx(mean)]
        if r["inputs"]["policy"] == "retry_same_key" and r["inputs"]["scenario"] == "uncertain_lookup":
            assert "duplicate_effects" not in r["metrics"]


def test_offline_runs_pushed_by_the_harness_arrive_whole_and_a_second_push_sends_nothing_again(
    server: dict[str, str], tmp_path: Path
) -> None:
    """A grid tracked offline, sent with the `harness push` command the run prints, reads back whole; the project is
    made by the push. Given again (as after a push that failed part way), it skips every run the server has: a
    demanding user's review saw `polyaxon ops push` send them again, each answered 400, and exit 0."""
    out = tmp_path / "run"
    proc = run(
        [sys.executable, "-m", "harness", "run", "--out", str(out), "--quiet", "--project", "default/pushed", *CELLS],
        server,
    )
    assert proc.returncode == 0, proc.stderr
    hint = shlex.split(proc.stdout.split("send to a server: ", 1)[1].splitlines()[0])
    assert hint == ["python", "-m", "harness", "push", str(out), "--project", "default/pushed"]
    first = run([sys.executable, *hint[1:]], server)
    assert (first.returncode, first.stdout) == (0, "Polyaxon: 4 of 4 runs sent to project default/pushed\n"), (
        first.stderr
    )
    again = run([sys.executable, "-m", "harness", "push", str(out)], server)  # the project from the run's manifest
    assert (again.returncode, again.stdout) == (
        0,
        "Polyaxon: 0 of 4 runs sent to project default/pushed (4 the server had already)\n",
    ), again.stderr
    assert_arrived(out, read("server", "default/pushed", str(tmp_path / "dl"), env=server))


def test_offline_runs_pushed_with_the_cli_arrive_whole(server: dict[str, str], tmp_path: Path) -> None:
    """A grid tracked offline, sent with Polyaxon's own `polyaxon ops push` (as the README shows), reads back whole.

    The sandbox server answers 405 to a write that comes while it makes another (sqlite: one writer at a time),
    and Polyaxon's own CLI does not retry; a run it then leaves half-sent cannot be pushed again under its uuid.
    So a push that met a 405 is tried again with runs the server has not seen: the grid is run again into a new
    folder (new run uuids) for a new project, and its printed command sent (pushing the same runs again into
    another project met "a run with uuid ... already exists"); the harness's own push (--tracking server)
    retries each write instead.
    """
    for attempt in range(3):
        out = tmp_path / f"run-{attempt}"
        project = "default/recovery-harness" if attempt == 0 else f"default/recovery-harness-{attempt + 1}"
        given = [] if attempt == 0 else ["--project", project]
        proc = run([sys.executable, "-m", "harness", "run", "--out", str(out), "--quiet", *given, *CELLS], server)
        assert proc.returncode == 0, proc.stderr
        # The project the run was given, owner included (the CLI would otherwise use its own default owner's), as
        # the README says it; the server must have the project first.
        hint = ["polyaxon", "ops", "push", "-p", project, "--path", str(out / "polyaxon"), "-a"]
        create_project(project, server, ["project", "create", f"--name={project}"])
        push = polyaxon(*hint[1:], env=server)
        if "Status: 405" not in push.stdout:
            break
    assert push.returncode == 0 and push.stdout.count("Finished pushing") >= 4, push.stdout + push.stderr
    assert_arrived(out, read("server", project, str(tmp_path / "dl"), env=server))


def test_server_mode_pushes_every_cell(server: dict[str, str], tmp_path: Path) -> None:
    """`--tracking server` creates the project and sends each cell's run, one request at a time."""
    out = tmp_path / "run"
    proc = run(
        [
            sys.executable,
            "-m",
            "harness",
            "run",
            "--out",
            str(out),
            "--quiet",
            "--tracking",
            "server",
            "--project",
            "default/direct",
            *CELLS,
        ],
        server,
    )
    assert proc.returncode == 0, proc.stderr
    assert "4 runs sent to project default/direct" in proc.stdout
    assert_arrived(out, read("server", "default/direct", str(tmp_path / "dl"), env=server))


def test_grid_operation_compiles_one_child_per_cell(server: dict[str, str]) -> None:
    """Submitting polyaxonfiles/grid.yaml makes the server compile one child run per matrix cell."""
    create_project("grid", server)
    cells = load_grid_file(default_grid_file()).cells
    children = read("submit", "default/grid", str(default_grid_file()), str(len(cells)), env=server)
    assert len(children) == len(cells)
    got = sorted((c["inputs"]["policy"], c["inputs"]["scenario"], c["inputs"]["seed_count"]) for c in children)
    assert got == sorted((c["policy"], c["scenario"], c["seed_count"]) for c in cells)


def test_explore_operation_compiles_one_child_per_shard(server: dict[str, str], tmp_path: Path) -> None:
    """Submitting polyaxonfiles/explore.yaml makes the server compile one child per policy x scenario x shard.

    Its matrix cut to three scenarios (every policy, both shards): the sandbox compiles every child inside the one
    request, and the whole file's 1,476 children took it 104 s in a run of the suite beside other work (720 took
    56 s on a quiet machine). The grid operation above is compiled whole; ``tests/test_explore_plx.py`` expands this file whole
    and checks every cell against its component without a server."""
    create_project("explore", server)
    shipped = default_grid_file().parent
    text = (shipped / "explore.yaml").read_text()
    head, rest = text.split("    scenario:\n      kind: choice\n      value: [", 1)
    cut = f"{head}    scenario:\n      kind: choice\n      value: [lost_response, bridge_user_stop, connector_wait_expires]"
    path = tmp_path / "explore.yaml"
    path.write_text(cut + rest[rest.index("]") + 1 :])
    shutil.copy(shipped / "explore-component.yaml", tmp_path)
    cells = load_grid_file(path).cells
    assert len(cells) == 6 * 3 * 2 and {c["scenario"] for c in cells} == {
        "lost_response", "bridge_user_stop", "connector_wait_expires"
    }  # fmt: skip
    children = read("submit", "default/explore", str(path), str(len(cells)), env={**server, "POLYAXON_TIMEOUT": "300"})
    assert len(children) == len(cells)
    keys = ("policy", "scenario", "shard", "shards", "depth")
    got = sorted(tuple(c["inputs"][k] for k in keys) for c in children)
    assert got == sorted(tuple(c[k] for k in keys) for c in cells)


@pytest.mark.parametrize("stop_signal", [signal.SIGINT, signal.SIGTERM])
def test_view_stops_with_its_viewer(tmp_path: Path, stop_signal: int) -> None:
    """Ctrl-C (SIGINT) or a kill (SIGTERM) of `harness view` stops the haupt viewer it started, too."""
    out = tmp_path / "run"
    proc = run(
        [
            sys.executable,
            "-m",
            "harness",
            "run",
            "--out",
            str(out),
            "--quiet",
            "--no-report",
            "--policy",
            "stop_on_timeout",
            "--scenario",
            "lost_response",
        ],
        dict(os.environ),
    )
    assert proc.returncode == 0, proc.stderr
    port = free_port()
    viewer = subprocess.Popen(
        [sys.executable, "-m", "harness", "view", str(out), "--port", str(port)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # as in a terminal, not ignored
    )
    try:
        wait_healthy(f"http://127.0.0.1:{port}/healthz", viewer)
        viewer.send_signal(stop_signal)
        assert viewer.wait(timeout=30) == 0
        time.sleep(1)
        with pytest.raises(OSError):
            urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2)
    finally:
        stop(viewer)


def test_view_serves_the_runs(tmp_path: Path) -> None:
    """`harness view RUN_DIR` starts the Polyaxon viewer on 127.0.0.1 and its API lists the run's cells."""
    out = tmp_path / "run"
    proc = run([sys.executable, "-m", "harness", "run", "--out", str(out), "--quiet", *CELLS], dict(os.environ))
    assert proc.returncode == 0, proc.stderr
    port = free_port()
    viewer = subprocess.Popen(
        [sys.executable, "-m", "harness", "view", str(out), "--port", str(port)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        wait_healthy(f"http://127.0.0.1:{port}/healthz", viewer)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/default/recovery-harness/runs/", timeout=10) as r:
            listed = json.loads(r.read())
        assert listed["count"] == 4
        assert {run["name"] for run in listed["results"]} == {
            f"{p}-{s}"
            for p in ("retry_same_key", "reconcile_and_reauthorize")
            for s in ("lost_response", "uncertain_lookup")
        }
    finally:
        stop(viewer)
    assert viewer.stdout is not None
    assert f"http://127.0.0.1:{port}/" in viewer.stdout.read().decode()
