"""``harness report --out`` on a disk that fills up as the page is written: one line naming the page, exit 1, and
nothing of it left behind (a demanding user's review: the heatmap stayed beside no page, and the line named no
file)."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from harness.cli import main


def fill_disk_at(page: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """From now on, writing ``page`` (through its temporary file) finds the disk full; every other file writes."""
    real = Path.write_bytes

    def write_bytes(self: Path, data: bytes) -> int:
        if self.name.startswith(f".{page.name}."):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(self, data)

    monkeypatch.setattr(Path, "write_bytes", write_bytes)


def test_a_page_that_cannot_be_written_leaves_no_heatmap_and_names_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    args = ["--policy", "retry_new_key", "--scenario", "lost_response", "--seed", "1", "--tracking", "none"]
    assert main(["run", *args, "--no-report", "--quiet", "--out", str(run)]) == 0
    page = tmp_path / "pages" / "p.html"
    fill_disk_at(page, monkeypatch)
    capsys.readouterr()
    assert main(["report", str(run), "--out", str(page)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"harness: cannot write a file ({page}): No space left on device; fix:"), err
    assert list(page.parent.iterdir()) == []
