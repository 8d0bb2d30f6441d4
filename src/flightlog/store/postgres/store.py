"""The PostgreSQL store (``FLIGHTLOG_STORE=postgresql://…``): the data model of the embedded
store on a shared server, for several flightlog servers and many writers at once.

It answers every question the SQLite store answers, with the same results: the queries are
shared with the SQLite store (``store/sql/store.py``), the run filter is the same compiler's SQL
(``%s`` placeholders), series are the same columnar chunks. A run's live stream reads ``id >
cursor`` safely because one run's appends commit in id order (a lock per run, see connection.py);
the alert feed reads by writing transaction (the dialect's ``feed_window``, migration 6).
"""

from __future__ import annotations

from flightlog.store.postgres.connection import PgDatabase, PgLeadership
from flightlog.store.postgres.dialect import PgDialect
from flightlog.store.sql.store import SqlStore

__all__ = ["PostgresStore"]


class PostgresStore(SqlStore):
    backend = "postgresql"
    db: PgDatabase

    def __init__(self, uri: str) -> None:
        super().__init__()
        self.db = PgDatabase(uri)
        self.uri = self.db.safe_uri
        self.dialect = PgDialect()

    def leadership(self, name: str) -> PgLeadership:
        """The lead of a job that one server of several runs at a time (see PgLeadership)."""
        return PgLeadership(self.db, name)

    def reclaim_space(self) -> None:
        """Nothing to do: PostgreSQL's autovacuum reuses the space of deleted rows."""
