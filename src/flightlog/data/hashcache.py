"""A small on-disk cache of file content hashes keyed by (path, size, mtime_ns).

Why: hashing a 100,000-file dataset on every ``run.log_input`` would cost minutes; with the
cache a re-scan of an unchanged tree only stats the files. SQLite (WAL, one short write
transaction per scan) lets concurrent runs share one cache without corrupting it.

A file whose mtime is within :data:`RACY_SECONDS` of the scan is hashed but not cached: a
second write inside the same timestamp tick with the same size would otherwise go unnoticed
(the "racy git" problem).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterable
from pathlib import Path

__all__ = ["HashCache", "RACY_SECONDS"]

RACY_SECONDS = 2.0
_FILE = "hashes.sqlite"


class HashCache:
    """Content hashes of files seen before; every method degrades to "no cache" on I/O errors."""

    def __init__(self, cache_dir: Path) -> None:
        self.path = Path(cache_dir) / _FILE
        self._db: sqlite3.Connection | None = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(self.path, timeout=10.0, isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute(
                "CREATE TABLE IF NOT EXISTS hashes ("
                " path TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,"
                " sha256 TEXT NOT NULL) WITHOUT ROWID"
            )
            self._db = db
        except (sqlite3.Error, OSError):
            self._db = None

    def load(self, root: str, *, is_dir: bool) -> dict[str, tuple[int, int, str]]:
        """Cached entries for a file, or for every file under a directory: path → (size, mtime_ns, sha256)."""
        if self._db is None:
            return {}
        try:
            if is_dir:
                lo = root.rstrip("/") + "/"
                hi = root.rstrip("/") + "0"  # "0" sorts right after "/"
                rows = self._db.execute(
                    "SELECT path, size, mtime_ns, sha256 FROM hashes WHERE path >= ? AND path < ?",
                    (lo, hi),
                )
            else:
                rows = self._db.execute("SELECT path, size, mtime_ns, sha256 FROM hashes WHERE path = ?", (root,))
            return {p: (s, m, h) for p, s, m, h in rows}
        except sqlite3.Error:
            return {}

    def update(
        self,
        fresh: Iterable[tuple[str, int, int, str]],
        stale: Iterable[str] = (),
        *,
        scan_started: float | None = None,
    ) -> None:
        """Store new hashes (skipping racy ones) and forget paths that no longer exist."""
        if self._db is None:
            return
        limit = int(((scan_started or time.time()) - RACY_SECONDS) * 1e9)
        rows = [r for r in fresh if r[2] < limit]
        gone = [(p,) for p in stale]
        if not rows and not gone:
            return
        try:
            self._db.execute("BEGIN IMMEDIATE")
            self._db.executemany("INSERT OR REPLACE INTO hashes VALUES (?, ?, ?, ?)", rows)
            self._db.executemany("DELETE FROM hashes WHERE path = ?", gone)
            self._db.execute("COMMIT")
        except sqlite3.Error:
            try:
                self._db.execute("ROLLBACK")
            except sqlite3.Error:
                pass

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    def __enter__(self) -> HashCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
