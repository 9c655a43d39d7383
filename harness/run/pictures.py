"""The timelines report.html shows, drawn in worker processes under the same supervision as the cases.

A picture costs about 0.2 s (matplotlib's glyph rendering); the page draws one per policy, scenario and failing
outcome, so a grid's pictures are spread over its processes. A picture that cannot be drawn in a worker (the
worker dies, or the drawing raises) is left to the page, which draws whatever is still missing itself.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["draw_timelines"]

#: Below this many pictures, starting worker processes (each imports matplotlib and pandas, about a second)
#: costs more than it saves: they are drawn in this process.
PARALLEL_FROM = 16


@dataclass(frozen=True, slots=True)
class _Drawing:
    """Some of the pictures, as a job for ``harness.run.pool.supervise``."""

    paths: tuple[Path, ...]

    def execute(self, on_case: Callable[[int], None]) -> int:
        from harness.present.html_report import UNDRAWABLE, render_timeline

        for position, path in enumerate(self.paths):
            if path.with_name("timeline.png").exists():  # drawn before this job was restarted
                continue
            on_case(position)
            with contextlib.suppress(OSError, *UNDRAWABLE):  # left to the page, which draws it or says why not
                render_timeline(path)
            on_case(-1)
        return len(self.paths)

    def without(self, position: int, reason: str) -> _Drawing:
        return _Drawing(self.paths[:position] + self.paths[position + 1 :])


def draw_timelines(paths: Sequence[Path], concurrency: int) -> None:
    """Draw ``timeline.png`` beside each of ``paths`` (recovery.json files), over ``concurrency`` processes."""
    if concurrency <= 1 or len(paths) < PARALLEL_FROM:
        _Drawing(tuple(paths)).execute(lambda _: None)
        return
    from harness.run.pool import supervise

    # Several jobs per process, so that one slow picture does not leave the other processes idle at the end.
    size = max(1, -(-len(paths) // (4 * concurrency)))
    jobs = [_Drawing(tuple(paths[i : i + size])) for i in range(0, len(paths), size)]
    supervise(jobs, concurrency, None, lambda _index, _drawn: None)
