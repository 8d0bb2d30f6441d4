"""The SQLite spellings of the shared SQL (see ``store/sql/dialect.py``)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any

from flightlog.store.sql.dialect import newest_feed_ids, sql_savepoint

__all__ = ["SqliteDialect"]


class SqliteDialect:
    placeholder = "?"
    collate = ""  # BINARY: code point order
    record_errors: tuple[type[Exception], ...] = (sqlite3.IntegrityError,)
    unique_violation: tuple[type[Exception], ...] = (sqlite3.IntegrityError,)
    series_upsert = """
INSERT INTO metric_series(run_id, name, count, nonfinite, min, max, first_step, last_step,
                          last_value, first_time, last_time, last_rank)
VALUES(:run, :name, :count, :nonfinite, :min, :max, :first_step, :last_step, :last_value,
       :first_time, :last_time, :last_rank)
ON CONFLICT(run_id, name) DO UPDATE SET
  count = count + excluded.count,
  nonfinite = nonfinite + excluded.nonfinite,
  min = CASE WHEN min IS NULL THEN excluded.min WHEN excluded.min IS NULL THEN min
             ELSE MIN(min, excluded.min) END,
  max = CASE WHEN max IS NULL THEN excluded.max WHEN excluded.max IS NULL THEN max
             ELSE MAX(max, excluded.max) END,
  first_step = MIN(first_step, excluded.first_step),
  last_value = CASE WHEN excluded.last_step > last_step OR (excluded.last_step = last_step
                    AND COALESCE(excluded.last_rank, -1) <= COALESCE(last_rank, -1))
                    THEN excluded.last_value ELSE last_value END,
  last_rank = CASE WHEN excluded.last_step > last_step OR (excluded.last_step = last_step
                   AND COALESCE(excluded.last_rank, -1) <= COALESCE(last_rank, -1))
                   THEN excluded.last_rank ELSE last_rank END,
  last_step = MAX(last_step, excluded.last_step),
  first_time = MIN(first_time, excluded.first_time),
  last_time = MAX(last_time, excluded.last_time)
"""

    def any_of(self, column: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
        return f"{column} IN ({','.join('?' * len(values))})", list(values)

    def prefix(self, column: str, text: str) -> tuple[str, list[Any]]:
        return f"{column} >= ? AND {column} < ?", [text, text + "\uffff"]

    def insert_id(self, conn: Any, sql: str, args: Sequence[Any]) -> int:
        return int(conn.execute(sql, args).lastrowid or 0)

    def or_ignore(self, sql: str) -> str:
        return sql.replace("INSERT INTO", "INSERT OR IGNORE INTO", 1)

    def filter_cursor(self, conn: Any) -> Any:
        return conn

    def ingest_marks(self, conn: Any, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], int]:
        out: dict[tuple[str, str], int] = {}
        for key in keys:  # in-process calls: one indexed lookup each costs a few microseconds
            row = conn.execute("SELECT last_seq FROM ingested WHERE run_id=? AND writer=?", key).fetchone()
            if row is not None:
                out[key] = int(row[0])
        return out

    def feed_cursor(self, conn: Any) -> dict[str, int]:
        """The newest id of every feed table, in one statement (one snapshot): with one writer at
        a time, ids commit in order."""
        return newest_feed_ids(conn)

    def feed_horizon(self, conn: Any) -> dict[str, int]:
        """The feed cursor itself: with one writer at a time, what is committed is below it."""
        return newest_feed_ids(conn)

    def feed_marks(self, conn: Any) -> str:
        """The feed cursor itself: with one writer at a time it moves with every new row."""
        return ":".join(str(v) for v in self.feed_cursor(conn).values())

    def feed_window(self, after: int, upto: int) -> tuple[str, list[Any]]:
        return "id > ? AND id <= ?", [after, upto]

    def append_rows(self, conn: Any, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        conn.cursor().executemany(
            f"INSERT INTO {table}({', '.join(columns)}) VALUES({', '.join('?' * len(columns))})", rows
        )

    def savepoint(self, conn: Any, name: str) -> AbstractContextManager[Any]:
        return sql_savepoint(conn, name)
