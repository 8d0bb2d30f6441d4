"""Progress on stderr for long scans, drawn only when stderr is a terminal.

Why so careful: pipelines parse stdout and keep stderr in logs; a progress bar there would be
noise. ``enabled=None`` means "only when a person is watching".
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["task", "Task"]


class Task:
    """A handle to advance: ``update(position, rows)`` or ``advance(n)``."""

    def __init__(self, progress: Any = None, task_id: Any = None) -> None:
        self._progress, self._id = progress, task_id
        self.rows = 0

    def update(self, position: int | None, rows: int = 0) -> None:
        self.rows += rows
        if self._progress is None:
            return
        if position is not None:
            self._progress.update(self._id, completed=position, rows=self.rows)
        else:
            self._progress.update(self._id, rows=self.rows)

    def advance(self, n: int = 1) -> None:
        if self._progress is not None:
            self._progress.advance(self._id, n)


@contextmanager
def task(description: str, total: int | float | None = None, *, enabled: bool | None = None) -> Iterator[Task]:
    """A progress bar on stderr for the duration of the block (a no-op handle when off)."""
    if enabled is None:
        enabled = sys.stderr.isatty()
    if not enabled:
        yield Task()
        return
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    columns = [
        TextColumn("{task.description}", markup=False),  # a file name is not markup
        BarColumn(),
        TextColumn("{task.percentage:>3.0f}%" if total else ""),
        TextColumn("{task.fields[rows]:,} rows" if description.startswith("profil") else ""),
        TimeElapsedColumn(),
    ]
    with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
        tid = bar.add_task(description, total=total, rows=0)
        yield Task(bar, tid)
