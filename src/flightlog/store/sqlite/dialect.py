"""The SQLite spellings of the shared SQL (see ``store/sql/dialect.py``)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

__all__ = ["SqliteDialect"]


class SqliteDialect:
    placeholder = "?"
    collate = ""  # BINARY: code point order
    record_errors: tuple[type[Exception], ...] = (sqlite3.IntegrityError,)
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
