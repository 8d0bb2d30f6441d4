"""The PostgreSQL spellings of the shared SQL (see ``store/sql/dialect.py``); its connections
take the shared SQL's ``?`` placeholders as ``%s`` (see connection.py)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from flightlog.store.changes import FEED_TABLES
from flightlog.store.sql.dialect import newest_feed_ids

__all__ = ["PgDialect"]


class PgDialect:
    placeholder = "%s"
    collate = ' COLLATE "C"'  # the database's collation may not be code point order
    series_upsert = """
INSERT INTO metric_series AS m (run_id, name, count, nonfinite, min, max, first_step, last_step,
                                last_value, first_time, last_time, last_rank)
VALUES(%(run)s, %(name)s, %(count)s, %(nonfinite)s, %(min)s, %(max)s, %(first_step)s, %(last_step)s,
       %(last_value)s, %(first_time)s, %(last_time)s, %(last_rank)s)
ON CONFLICT(run_id, name) DO UPDATE SET
  count = m.count + excluded.count,
  nonfinite = m.nonfinite + excluded.nonfinite,
  min = LEAST(m.min, excluded.min),
  max = GREATEST(m.max, excluded.max),
  first_step = LEAST(m.first_step, excluded.first_step),
  last_value = CASE WHEN excluded.last_step > m.last_step OR (excluded.last_step = m.last_step
                    AND COALESCE(excluded.last_rank, -1) <= COALESCE(m.last_rank, -1))
                    THEN excluded.last_value ELSE m.last_value END,
  last_rank = CASE WHEN excluded.last_step > m.last_step OR (excluded.last_step = m.last_step
                   AND COALESCE(excluded.last_rank, -1) <= COALESCE(m.last_rank, -1))
                   THEN excluded.last_rank ELSE m.last_rank END,
  last_step = GREATEST(m.last_step, excluded.last_step),
  first_time = LEAST(m.first_time, excluded.first_time),
  last_time = GREATEST(m.last_time, excluded.last_time)
"""

    def __init__(self) -> None:
        import psycopg

        self.record_errors: tuple[type[Exception], ...] = (
            psycopg.DataError,
            psycopg.IntegrityError,
            psycopg.ProgrammingError,
        )
        self.unique_violation: tuple[type[Exception], ...] = (psycopg.errors.UniqueViolation,)
        self._untyped = _untyped_adapters()

    def any_of(self, column: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
        return f"{column} = ANY(?)", [list(values)]

    def prefix(self, column: str, text: str) -> tuple[str, list[Any]]:
        return f"{column} LIKE ?", [text.replace("_", "\\_") + "%"]

    def insert_id(self, conn: Any, sql: str, args: Sequence[Any]) -> int:
        return int(conn.execute(sql + " RETURNING id", args).fetchone()[0])

    def or_ignore(self, sql: str) -> str:
        return sql + " ON CONFLICT DO NOTHING"

    def ingest_marks(self, conn: Any, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], int]:
        """Every writer's mark in one round trip (a server's transaction holds many writers' batches)."""
        if not keys:
            return {}
        rows = conn.execute(
            "SELECT i.run_id, i.writer, i.last_seq FROM ingested i "
            "JOIN unnest(%s::text[], %s::text[]) AS k(run_id, writer) USING (run_id, writer)",
            ([k[0] for k in keys], [k[1] for k in keys]),
        ).fetchall()
        return {(r, w): int(seq) for r, w, seq in rows}

    def append_rows(self, conn: Any, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        """One ``COPY`` for all the rows: no statement to parse or plan per row, one round trip.
        In pipeline mode (an ingest transaction), where ``COPY`` cannot run, one pipelined
        ``executemany``: sent with the statements around it, no round trip of its own."""
        if not rows:
            return
        if conn.pgconn.pipeline_status:
            conn.cursor().executemany(
                f"INSERT INTO {table} ({', '.join(columns)}) VALUES({', '.join(['%s'] * len(columns))})", rows
            )
            return
        with conn.cursor().copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)

    @contextmanager
    def savepoint(self, conn: Any, name: str) -> Iterator[None]:
        """A savepoint that, in pipeline mode, waits for the statements sent inside it as it ends
        (a nested psycopg pipeline: its end syncs and reads every answer back, the failed
        statement's error raised, the ones it aborted drained), so the error is raised here and
        the pipeline goes on once the savepoint is rolled back. psycopg's own nested transaction
        does the same with two more waits for the server; a SAVEPOINT with a bare ``sync()``
        would leave the aborted answers queued, each raising ``PipelineAborted`` later."""
        if not conn.pgconn.pipeline_status:
            with conn.transaction(savepoint_name=name):
                yield
            return
        try:
            with conn.pipeline():  # nested: waits once as it begins if statements are still queued
                conn.execute(f"SAVEPOINT {name}")
                yield
        except BaseException:
            conn.execute(f"ROLLBACK TO SAVEPOINT {name}")
            conn.execute(f"RELEASE SAVEPOINT {name}")
            raise
        conn.execute(f"RELEASE SAVEPOINT {name}")

    def feed_cursor(self, conn: Any) -> dict[str, int]:
        """The oldest transaction still running (its xid; the next one when none): every row of
        an older transaction is committed or rolled back for good, whatever order they ended in
        (migration 6). The same for every feed table."""
        xmin = int(conn.execute("SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint").fetchone()[0])
        return dict.fromkeys(FEED_TABLES, xmin)

    def feed_horizon(self, conn: Any) -> dict[str, int]:
        """The first transaction id not handed out yet: every transaction committed by now has a
        smaller one, so once the feed cursor (the oldest one still running) has passed it, each of
        them is inside a window read. Not the cursor itself: a transaction that committed while an
        older one still runs is above the cursor until the older one ends."""
        xmax = int(conn.execute("SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint").fetchone()[0])
        return dict.fromkeys(FEED_TABLES, xmax)

    def feed_marks(self, conn: Any) -> str:
        """The newest id of each feed table (its primary key's end: no scan). Not the feed cursor:
        the oldest running transaction is the whole cluster's, so it moves with any database's
        work and a cache keyed on it was never reused. The price: rows of a transaction that
        commits after a younger one's move no mark, so they are seen with the next write (or a
        run's ``updated``), at the latest when the cache's own age runs out (a triage report's:
        a minute)."""
        return ":".join(str(v) for v in newest_feed_ids(conn).values())

    def feed_window(self, after: int, upto: int) -> tuple[str, list[Any]]:
        """Rows of the transactions that ended between two cursors; rows from before migration 6
        have no xid and count as the oldest."""
        if after <= 0:
            return "(xid < ? OR xid IS NULL)", [upto]
        return "xid >= ? AND xid < ?", [after, upto]

    def filter_cursor(self, conn: Any) -> Any:
        """A cursor that sends numbers without a type, so PostgreSQL infers it from the column
        they meet, as SQLite does: ``tag.x > 3`` compares text, ``param.lr > 3`` a double."""
        cur = conn.cursor()
        cur.adapters.register_dumper(int, self._untyped.get_dumper(int, "s"))
        cur.adapters.register_dumper(float, self._untyped.get_dumper(float, "s"))
        return cur


def _untyped_adapters() -> Any:
    """Numbers sent without a type (``LIMIT`` then reads a bigint)."""
    from psycopg.adapt import AdaptersMap, Dumper
    from psycopg.postgres import adapters

    class Untyped(Dumper):
        oid = 0

        def dump(self, obj: Any) -> bytes:
            return repr(obj).encode() if isinstance(obj, float) else str(obj).encode()

    amap = AdaptersMap(adapters)
    amap.register_dumper(int, Untyped)
    amap.register_dumper(float, Untyped)
    return amap
