"""The embedded store: SQLite in WAL mode under FLIGHTLOG_HOME. Implements both store protocols
with the queries shared with the PostgreSQL store (``store/sql/store.py``)."""

from __future__ import annotations

from pathlib import Path

from flightlog.store.sql.store import SqlStore
from flightlog.store.sqlite.connection import Database
from flightlog.store.sqlite.dialect import SqliteDialect

__all__ = ["SqliteStore"]


class SqliteStore(SqlStore):
    backend = "sqlite"
    db: Database
    dialect = SqliteDialect()

    def __init__(self, path: str | Path, *, fork_safe: bool = False, read_only: bool = False) -> None:
        super().__init__()
        self.db = Database(path, fork_safe=fork_safe, read_only=read_only)
        self.path = self.db.path

    def leadership(self, name: str) -> SoleLeader:
        """One machine's file: whoever serves it leads (several evaluators agree by compare-and-set)."""
        return SoleLeader()

    def reclaim_space(self) -> None:
        """After deletions: give the space back to the file system (outside a transaction)."""
        with self.db.read() as conn:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


class SoleLeader:
    def held(self) -> bool:
        return True

    def release(self) -> None:
        pass
