"""``harness view`` (harness/plx/viewer.py), checked in process: the viewer's process, its health page and the
clock are stand-ins, so that what is started, what is said and what is left behind are seen without Polyaxon.

Written against the mutants mutmut 3.8.1 made of viewer.py (tests/MUTANTS.md, thirty-ninth pass).
"""

from __future__ import annotations

import errno
import json
import os
import signal
import socket
import sys
from pathlib import Path
from typing import Any

import pytest

import harness.plx.viewer as viewer
from harness.plx.tracking import DEFAULT_PROJECT
from harness.plx.viewer import ViewError


def test_haupt_beside_the_interpreter_comes_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    (tmp_path / "haupt").write_text("")
    monkeypatch.setattr(viewer.shutil, "which", lambda name: f"/on/path/{name}")
    assert viewer.haupt_command() == str(tmp_path / "haupt")
    (tmp_path / "haupt").unlink()
    assert viewer.haupt_command() == "/on/path/haupt"
    monkeypatch.setattr(viewer.shutil, "which", lambda name: None)
    with pytest.raises(ViewError) as caught:
        viewer.haupt_command()
    assert str(caught.value) == (
        "the Polyaxon viewer (haupt) is not installed; fix: pip install 'haupt[sandbox]==2.18.0' (in the harness's "
        "source folder: pip install -e '.[server]')"
    )
    assert issubclass(ViewError, viewer.InputError)


def test_a_run_without_polyaxon_runs_is_refused_with_its_fix(tmp_path: Path) -> None:
    (tmp_path / "polyaxon").mkdir()
    with pytest.raises(ViewError) as caught:
        viewer.view(tmp_path, 1)
    assert str(caught.value) == (
        f"{tmp_path}: no Polyaxon runs in {tmp_path / 'polyaxon'} (a run with --tracking none has none); fix: give "
        "the folder of a run tracked offline, the default of 'harness run'"
    )


def test_a_folder_that_does_not_exist_is_said_not_to(tmp_path: Path) -> None:
    """A Polyaxon user's review: a mistyped folder was told it had no Polyaxon runs, as a --tracking none run is."""
    with pytest.raises(ViewError) as caught:
        viewer.view(tmp_path / "nope", 1)
    assert (
        str(caught.value) == f"{tmp_path / 'nope'}: no such folder; fix: give the folder of a run (reports/runs/<id>)"
    )


@pytest.mark.parametrize(
    ("text", "project"),
    [(None, DEFAULT_PROJECT), ("{", DEFAULT_PROJECT), ("[]", DEFAULT_PROJECT), ('{"project": ""}', DEFAULT_PROJECT),
     ('{"project": 3}', DEFAULT_PROJECT), ("{}", DEFAULT_PROJECT), ('{"project": "o/n"}', "o/n"),
     ('{"project": "é"}', "é")],
)  # fmt: skip
def test_the_project_is_the_runs_or_the_default(tmp_path: Path, text: str | None, project: str) -> None:
    if text is not None:
        (tmp_path / "run.json").write_bytes(text.encode("utf-8"))
    assert viewer._project(tmp_path) == project


def test_a_port_listened_on_is_refused_and_a_free_one_taken() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        with pytest.raises(ViewError) as caught:
            viewer._check_port_free(port)
        assert str(caught.value) == (
            f"--port {port}: 127.0.0.1:{port} is in use ({os.strerror(errno.EADDRINUSE)}); fix: give another --port, "
            "or stop what listens there"
        )
    viewer._check_port_free(port)  # free again


def test_a_port_whose_connection_is_closing_is_free() -> None:
    with socket.socket() as listener:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        client = socket.create_connection(("127.0.0.1", port))
        accepted, _ = listener.accept()
        accepted.close()  # the server side closes first: its end waits in TIME_WAIT
        client.close()
    viewer._check_port_free(port)


class _Probe:
    """Stands in for ``socket.socket``: binding fails with the given error, and the options set are noted."""

    options: list[tuple[int, int, int]] = []

    def __init__(self, error: OSError | None) -> None:
        self.error = error

    def __call__(self, family: int, kind: int) -> _Probe:
        assert (family, kind) == (socket.AF_INET, socket.SOCK_STREAM)
        return self

    def __enter__(self) -> _Probe:
        return self

    def __exit__(self, *_: object) -> None:
        return None

    def setsockopt(self, level: int, option: int, value: int) -> None:
        self.options.append((level, option, value))

    def bind(self, address: tuple[str, int]) -> None:
        assert address[0] == "127.0.0.1"
        if self.error is not None:
            raise self.error


@pytest.mark.parametrize(
    ("error", "said"),
    [
        (OSError(errno.EACCES, "Permission denied"), "cannot listen on it (Permission denied); fix: give a port of 1024 or more"),
        (OSError(errno.EADDRNOTAVAIL, "Cannot assign"), "cannot listen on it (Cannot assign); fix: give another --port"),
        (OSError("no errno"), "cannot listen on it (no errno); fix: give another --port"),
    ],
)  # fmt: skip
def test_a_port_that_cannot_be_listened_on_says_why(monkeypatch: pytest.MonkeyPatch, error: OSError, said: str) -> None:
    probe = _Probe(error)
    probe.options = []
    monkeypatch.setattr(viewer.socket, "socket", probe)
    with pytest.raises(ViewError) as caught:
        viewer._check_port_free(80)
    assert str(caught.value) == f"--port 80: {said}"
    assert caught.value.__cause__ is None and caught.value.__suppress_context__
    assert probe.options == [(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)]


def test_a_port_in_use_is_refused_without_its_cause(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(viewer.socket, "socket", _Probe(OSError(errno.EADDRINUSE, "in use")))
    with pytest.raises(ViewError) as caught:
        viewer._check_port_free(9)
    assert str(caught.value).startswith("--port 9: 127.0.0.1:9 is in use (in use); fix:")
    assert caught.value.__suppress_context__


class _Viewer:
    """Stands in for ``subprocess.Popen``: the viewer's process, exiting when told, or when terminated."""

    def __init__(self, exits_at: int | None = None, status: int = 3) -> None:
        self.exits_at, self.status = exits_at, status
        self.command: list[str] = []
        self.env: dict[str, str] = {}
        self.stdout: Any = None
        self.polls = 0
        self.returncode: int | None = None
        self.terminated = False
        self.waits: list[float | None] = []

    def __call__(self, command: list[str], env: dict[str, str], stdout: Any) -> _Viewer:
        self.command, self.env, self.stdout = command, env, stdout
        return self

    def poll(self) -> int | None:
        self.polls += 1
        if self.exits_at is not None and self.polls >= self.exits_at:
            self.returncode = self.status
        return self.returncode

    def terminate(self) -> None:
        self.terminated = True
        self.returncode = -15

    def wait(self, timeout: float | None = None) -> int:
        self.waits.append(timeout)
        if self.returncode is None:
            raise KeyboardInterrupt  # Ctrl-C while the viewer serves
        return self.returncode


class _Health:
    """Stands in for ``urllib.request.urlopen``: refuses the first ``refusals`` calls."""

    def __init__(self, refusals: int) -> None:
        self.refusals = refusals
        self.calls: list[tuple[str, float]] = []

    def __call__(self, url: str, timeout: float) -> _Health:
        self.calls.append((url, timeout))
        if len(self.calls) <= self.refusals:
            raise OSError("refused")
        return self

    def __enter__(self) -> _Health:
        return self

    def __exit__(self, *_: object) -> None:
        return None


@pytest.fixture
def tracked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    run = tmp_path / "run"
    (run / "polyaxon" / "runs").mkdir(parents=True)
    (run / "run.json").write_text(json.dumps({"project": "acme/fraud"}))
    monkeypatch.setattr(viewer, "haupt_command", lambda: "/bin/haupt")
    monkeypatch.setattr(viewer, "_check_port_free", lambda port: None)
    monkeypatch.setattr(viewer.tempfile, "mkdtemp", lambda prefix: str(tmp_path / f"{prefix}x"))
    (tmp_path / "harness-viewer-home-x").mkdir()
    return run


def test_the_viewer_serves_the_runs_until_interrupted_and_leaves_nothing(
    tracked: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    process, health, sleeps = _Viewer(), _Health(2), []
    monkeypatch.setattr(viewer.subprocess, "Popen", process)
    monkeypatch.setattr(viewer.urllib.request, "urlopen", health)
    monkeypatch.setattr(viewer.time, "sleep", sleeps.append)
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    assert viewer.view(tracked, 8123) == 0
    root = tracked / "polyaxon"
    assert process.command == ["/bin/haupt", "viewer", "--host", "127.0.0.1", "--port", "8123", "--workers", "1",
                               "--path", str(root.resolve())]  # fmt: skip
    home = tracked.parent / "harness-viewer-home-x"
    assert process.env == {**os.environ, "HOME": str(home)}
    assert process.stdout is viewer.subprocess.DEVNULL
    assert health.calls == [("http://127.0.0.1:8123/healthz", 1)] * 3
    assert sleeps == [0.25, 0.25]
    assert capsys.readouterr().out == (
        f"starting the Polyaxon viewer for {root} at http://127.0.0.1:8123/ (Ctrl-C to stop)\n"
        "ready: http://127.0.0.1:8123/  (runs: http://127.0.0.1:8123/api/v1/acme/fraud/runs/)\n"
    )
    assert process.terminated and process.waits == [None, 10]
    assert not home.exists()
    assert {sig: signal.getsignal(sig) for sig in before} == before


def test_the_runs_polyaxon_folder_itself_is_served_as_its_run_is(
    tracked: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Given ``RUN/polyaxon`` (the folder ``polyaxon ops push --path`` takes), the viewer looked in
    ``RUN/polyaxon/polyaxon`` and said there were no runs: it serves that folder, under the run's project."""
    process = _Viewer()
    monkeypatch.setattr(viewer.subprocess, "Popen", process)
    monkeypatch.setattr(viewer.urllib.request, "urlopen", _Health(0))
    assert viewer.view(tracked / "polyaxon", 8123) == 0
    assert process.command[-1] == str((tracked / "polyaxon").resolve())
    assert "api/v1/acme/fraud/runs/" in capsys.readouterr().out


def test_the_viewer_stops_on_a_signal_as_on_ctrl_c(tracked: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    handlers: dict[int, Any] = {}

    class Serving(_Viewer):
        def wait(self, timeout: float | None = None) -> int:
            self.waits.append(timeout)
            if self.returncode is None:
                handlers[signal.SIGTERM](signal.SIGTERM, None)
            return self.returncode or 0

    process = Serving()
    monkeypatch.setattr(viewer.subprocess, "Popen", process)
    monkeypatch.setattr(viewer.urllib.request, "urlopen", _Health(0))
    real = signal.signal

    def noting(sig: int, handler: Any) -> Any:
        handlers[sig] = handler
        return real(sig, handler)

    monkeypatch.setattr(viewer.signal, "signal", noting)
    assert viewer.view(tracked, 8124) == 0
    assert process.terminated
    with pytest.raises(KeyboardInterrupt):
        viewer._interrupt(signal.SIGINT, None)


def test_a_viewer_that_exits_is_said_with_its_status_and_its_fix(
    tracked: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    process = _Viewer(exits_at=2, status=3)
    monkeypatch.setattr(viewer.subprocess, "Popen", process)
    monkeypatch.setattr(viewer.urllib.request, "urlopen", _Health(10))
    monkeypatch.setattr(viewer.time, "sleep", lambda _: None)
    with pytest.raises(ViewError) as caught:
        viewer.view(tracked, 8125)
    assert str(caught.value) == "the viewer exited with status 3; fix: try another --port"
    assert not process.terminated and process.waits == []
    assert not (tracked.parent / "harness-viewer-home-x").exists()


def test_a_viewer_never_healthy_is_waited_for_thirty_seconds_then_served(
    tracked: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    process, health, sleeps = _Viewer(), _Health(1000), []
    monkeypatch.setattr(viewer.subprocess, "Popen", process)
    monkeypatch.setattr(viewer.urllib.request, "urlopen", health)
    monkeypatch.setattr(viewer.time, "sleep", sleeps.append)
    assert viewer.view(tracked, 8126) == 0
    assert len(health.calls) == 120 and len(sleeps) == 120 and process.polls == 121
    assert "ready: http://127.0.0.1:8126/" in capsys.readouterr().out


def test_a_home_already_gone_is_no_error(tracked: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tracked.parent / "harness-viewer-home-x").rmdir()
    monkeypatch.setattr(viewer.subprocess, "Popen", _Viewer())
    monkeypatch.setattr(viewer.urllib.request, "urlopen", _Health(0))
    assert viewer.view(tracked, 8127) == 0


def test_the_port_is_checked_before_the_viewer_starts(tracked: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(port: int) -> None:
        raise ViewError(f"no {port}")

    process = _Viewer()
    monkeypatch.setattr(viewer, "_check_port_free", refuse)
    monkeypatch.setattr(viewer.subprocess, "Popen", process)
    with pytest.raises(ViewError, match="no 8128"):
        viewer.view(tracked, 8128)
    assert process.command == []


class _Stdout:
    """Stands in for ``sys.stdout``: notes what is written and when it is flushed."""

    def __init__(self) -> None:
        self.events: list[str] = []

    def write(self, text: str) -> int:
        self.events.append(text)
        return len(text)

    def flush(self) -> None:
        self.events.append("<flush>")


def test_each_line_is_flushed_as_it_is_said(tracked: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A viewer started under another program (a CI log, a pipe) shows its address at once, not when it ends."""
    out = _Stdout()
    monkeypatch.setattr(viewer.subprocess, "Popen", _Viewer())
    monkeypatch.setattr(viewer.urllib.request, "urlopen", _Health(0))
    monkeypatch.setattr(sys, "stdout", out)
    assert viewer.view(tracked, 8129) == 0
    lines = "".join(e for e in out.events if e != "<flush>").splitlines()
    assert [line.split()[0] for line in lines] == ["starting", "ready:"]
    starting = next(i for i, e in enumerate(out.events) if e.startswith("starting"))
    ready = next(i for i, e in enumerate(out.events) if e.startswith("ready"))
    assert "<flush>" in out.events[starting:ready] and out.events[-1] == "<flush>"
