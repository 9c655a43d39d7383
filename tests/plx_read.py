"""Reads runs back through the Polyaxon client and prints them as JSON (run in a subprocess by the tests).

python tests/plx_read.py offline ROOT                 runs under an offline root
python tests/plx_read.py server OWNER/PROJECT DIR     runs in a project on POLYAXON_HOST; artifacts into DIR
python tests/plx_read.py submit OWNER/PROJECT FILE N  submit a grid operation; print its compiled children
"""

from __future__ import annotations

import json
import logging
import sys
import warnings
from pathlib import Path

warnings.simplefilter("ignore")
logging.disable(logging.CRITICAL)

from polyaxon.client import RunClient  # noqa: E402
from traceml.events import V1Events  # noqa: E402


def offline(root: Path) -> list[dict[str, object]]:
    runs = []
    for path in sorted((root / "runs").iterdir()):
        client = RunClient.load_offline_run(
            path=str(path), run_client=RunClient(is_offline=True, project="x"), raise_if_not_found=True
        )
        metrics = {}
        for event_file in sorted((path / "events" / "metric").glob("*.plx")):
            frame = V1Events.read(kind="metric", name=event_file.stem, data=str(event_file)).df
            metrics[event_file.stem] = [[int(s), float(v)] for s, v in zip(frame["step"], frame["metric"], strict=True)]
        outputs = path / "outputs"
        files = {str(p.relative_to(outputs)): p.read_text() for p in sorted(outputs.rglob("*")) if p.is_file()}
        runs.append(
            {
                "uuid": path.name,
                "status": str(client.status),
                "name": client.run_data.name,
                "inputs": client.get_inputs(),
                "outputs": client.get_outputs(),
                "metrics": metrics,
                "files": files,
            }
        )
    return runs


def server(project: str, download: Path) -> list[dict[str, object]]:
    owner, name = project.split("/")
    runs = []
    for run in RunClient(owner=owner, project=name).list(limit=200).results:
        client = RunClient(owner=owner, project=name, run_uuid=run.uuid)
        client.refresh_data()
        metric_names = [k for k, v in (run.outputs or {}).items() if isinstance(v, float)]
        metrics = {}
        if metric_names:
            for key, value in client.get_metrics(names=metric_names).items():
                data = value["data"]
                metrics[key] = [[int(s), float(m)] for s, m in zip(data["step"], data["metric"], strict=True)]
        files: dict[str, str] = {}  # a cell's run points to its case files (outputs.cases_path); it holds no copy
        runs.append(
            {
                "uuid": run.uuid,
                "status": str(run.status),
                "name": run.name,
                "inputs": run.inputs,
                "outputs": run.outputs,
                "metrics": metrics,
                "files": files,
                "pipeline": str(run.pipeline or ""),
            }
        )
    return runs


def children(project: str, parent: str) -> list[dict[str, object]]:
    owner, name = project.split("/")
    client = RunClient(owner=owner, project=name, run_uuid=parent)
    found: list[dict[str, object]] = []
    while True:  # the server answers at most a page of children at a time
        page = client.list_children(limit=100, offset=len(found)).results or []
        found += [{"uuid": r.uuid, "status": str(r.status), "inputs": r.inputs} for r in page]
        if len(page) < 100:
            return found


def submit(project: str, polyaxonfile: str, expected: int) -> list[dict[str, object]]:
    """Submit a grid operation and wait (bounded) until the server has compiled ``expected`` children."""
    import time

    from harness.plx.tracking import _one_at_a_time

    owner, name = project.split("/")
    # The server may still be writing what an earlier test sent (it allows one writer at a time: 405 meanwhile).
    client = RunClient(owner=owner, project=name)
    parent = _one_at_a_time(lambda: client.create_from_polyaxonfile(polyaxonfile=polyaxonfile))
    deadline = time.monotonic() + 120
    found: list[dict[str, object]] = []
    while time.monotonic() < deadline:
        found = children(project, parent.uuid)
        if len(found) >= expected:
            break
        time.sleep(0.5)
    return found


if __name__ == "__main__":
    kind = sys.argv[1]
    if kind == "offline":
        result = offline(Path(sys.argv[2]))
    elif kind == "server":
        result = server(sys.argv[2], Path(sys.argv[3]))
    elif kind == "submit":
        result = submit(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    else:
        result = children(sys.argv[2], sys.argv[3])
    print(json.dumps(result))
