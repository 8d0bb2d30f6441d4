"""Where journals live and how a writer appends to one.

    FLIGHTLOG_HOME/journal/<run id>+<writer id>.journal   the records
    FLIGHTLOG_HOME/journal/<run id>+<writer id>.shipped   byte offset shipped to the store

One flat directory ('+' never occurs in ids): creating and removing a directory per run costs
more than the run's whole ingest on some filesystems.

Each process that writes a run has its own writer (and file), so several processes never
interleave bytes in one file. Appends go straight to the OS (no user-space buffer): a process
killed with SIGKILL loses nothing it had appended.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from flightlog.filemodes import PRIVATE_FILE, private_dirs
from flightlog.journal.format import MAGIC

__all__ = ["JournalWriter", "JournalFile", "journal_root", "list_journals"]


def journal_root(home: Path) -> Path:
    return home / "journal"


class JournalWriter:
    def __init__(self, home: Path, run_id: str, writer_id: str) -> None:
        directory = journal_root(home)
        private_dirs(directory)  # owner-only, whatever the umask (filemodes.py)
        self.file = JournalFile(run_id, writer_id, directory / f"{run_id}+{writer_id}.journal")
        self.path = self.file.path
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, PRIVATE_FILE)
        size = os.fstat(self._fd).st_size
        if size == 0:
            os.write(self._fd, MAGIC)
            size = len(MAGIC)
        self.size = size

    def append(self, data: bytes) -> int:
        """Append framed records; returns the file size after them. Raises OSError (disk full)."""
        view = memoryview(data)
        while view:
            written = os.write(self._fd, view)
            view = view[written:]
        self.size += len(data)
        return self.size

    def mark_shipped(self, offset: int) -> None:
        self.file.mark_shipped(offset)

    def close(self, *, remove: bool = False) -> None:
        try:
            os.close(self._fd)
        except OSError:
            pass
        if remove:
            self.file.remove()


@dataclass(frozen=True)
class JournalFile:
    run_id: str
    writer_id: str
    path: Path

    @property
    def shipped_path(self) -> Path:
        return self.path.with_suffix(".shipped")

    def shipped_offset(self) -> int:
        try:
            return int(self.shipped_path.read_text().strip() or 0)
        except (FileNotFoundError, ValueError):
            return 0

    def mark_shipped(self, offset: int) -> None:
        tmp = self.path.with_suffix(".shipped.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, PRIVATE_FILE)
        with os.fdopen(fd, "w") as out:
            out.write(str(offset))
        os.replace(tmp, self.shipped_path)

    def remove(self) -> None:
        for p in (self.path, self.shipped_path):
            try:
                p.unlink()
            except FileNotFoundError:
                pass


def list_journals(home: Path, run_id: str | None = None) -> list[JournalFile]:
    root = journal_root(home)
    if not root.is_dir():
        return []
    pattern = f"{run_id}+*.journal" if run_id else "*+*.journal"
    found = []
    for f in sorted(root.glob(pattern)):
        run, _, writer = f.stem.partition("+")
        found.append(JournalFile(run_id=run, writer_id=writer, path=f))
    return found
