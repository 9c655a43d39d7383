"""``python -m harness view RUN_DIR``: the Polyaxon UI (``haupt viewer``) over a run's offline Polyaxon runs."""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from harness.errors import InputError
from harness.plx.tracking import DEFAULT_PROJECT, offline_root, split_project

__all__ = ["ViewError", "haupt_command", "view"]


class ViewError(InputError):
    """The viewer cannot start; one line with the fix."""


def haupt_command() -> str:
    """The ``haupt`` executable beside this interpreter, or on PATH."""
    beside = Path(sys.executable).parent / "haupt"
    found = str(beside) if beside.exists() else shutil.which("haupt")
    if not found:
        raise ViewError(
            "the Polyaxon viewer (haupt) is not installed; fix: pip install 'haupt[sandbox]==2.18.0' (in the "
            "harness's source folder: pip install -e '.[server]')"
        )
    return found


def view(run_dir: Path, port: int) -> int:
    """Serve ``RUN_DIR/polyaxon`` on 127.0.0.1:``port`` until interrupted."""
    if not run_dir.is_dir():
        raise ViewError(f"{run_dir}: no such folder; fix: give the folder of a run (reports/runs/<id>)")
    root = offline_root(run_dir)
    if (run_dir / "runs").is_dir() and not (root / "runs").is_dir():
        # The run's polyaxon/ folder itself, as 'polyaxon ops push --path' takes it: its run is the folder above.
        root, run_dir = run_dir, run_dir.absolute().parent
    if not (root / "runs").is_dir():
        raise ViewError(
            f"{run_dir}: no Polyaxon runs in {root} (a run with --tracking none has none); fix: give the folder of "
            "a run tracked offline, the default of 'harness run'"
        )
    _check_port_free(port)
    command = [
        haupt_command(),
        "viewer",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workers",
        "1",
        "--path",
        str(root.resolve()),
    ]
    home = tempfile.mkdtemp(prefix="harness-viewer-home-")  # the viewer writes ~/.polyaxon: keep the user's clean
    process = subprocess.Popen(command, env={**os.environ, "HOME": home}, stdout=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/"
    print(f"starting the Polyaxon viewer for {root} at {url} (Ctrl-C to stop)", flush=True)
    # Ctrl-C or a plain kill both stop the viewer too, so no haupt process is left behind.
    previous = {sig: signal.signal(sig, _interrupt) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        for _ in range(120):
            if process.poll() is not None:
                raise ViewError(f"the viewer exited with status {process.returncode}; fix: try another --port")
            try:
                with urllib.request.urlopen(f"{url}healthz", timeout=1):
                    break
            except OSError:
                time.sleep(0.25)
        owner, name = split_project(_project(run_dir))
        print(f"ready: {url}  (runs: {url}api/v1/{owner}/{name}/runs/)", flush=True)
        process.wait()
    except KeyboardInterrupt:
        pass
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if process.poll() is None:
            process.terminate()
            process.wait(timeout=10)
        shutil.rmtree(home, ignore_errors=True)
    return 0


def _check_port_free(port: int) -> None:
    """Refuse a port something already listens on: the viewer would fail to bind it, and the page at that
    address, served by the other program (another viewer, say, over another run), would pass for this one."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        # As the viewer's server binds: a port whose last connections are closing is free, one listened on is not.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise ViewError(
                    f"--port {port}: 127.0.0.1:{port} is in use ({exc.strerror}); fix: give another --port, or "
                    "stop what listens there"
                ) from None
            fix = "give a port of 1024 or more" if exc.errno == errno.EACCES else "give another --port"
            raise ViewError(f"--port {port}: cannot listen on it ({exc.strerror or exc}); fix: {fix}") from None


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _project(run_dir: Path) -> str:
    """The Polyaxon project the run was tracked under, from its run.json (the default if it cannot be read)."""
    try:
        project = json.loads((run_dir / "run.json").read_text(encoding="utf-8")).get("project")
    except (OSError, ValueError, AttributeError):
        return DEFAULT_PROJECT
    return project if isinstance(project, str) and project else DEFAULT_PROJECT
