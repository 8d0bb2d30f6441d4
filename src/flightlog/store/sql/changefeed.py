"""The SQL store's change feed (``store/changes.py``): what the alert feed reads each cycle.

Apart from ``streams.py`` because it reads every run at once, not one: the rows committed between
two cursors, the runs changed since a time, and a position that moves whenever anything a report
reads changes. It reads through the dialect's ``feed_cursor`` and ``feed_window`` (ids in SQLite,
writing transactions in PostgreSQL, where the rows of different runs commit out of id order).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from flightlog.models import RunInfo
from flightlog.schema.values import param_value
from flightlog.statuses import ACTIVE_STATUSES, sql_list
from flightlog.store.changes import Changes, Cursor
from flightlog.store.sql.core import SqlCore, parts
from flightlog.store.sql.rows import RUN_COLUMNS, run_row

__all__ = ["SqlChangeFeed"]


class SqlChangeFeed(SqlCore):
    def change_cursor(self) -> dict[str, int]:
        with self.db.read() as conn:
            return self.dialect.feed_cursor(conn)

    def change_horizon(self) -> dict[str, int]:
        with self.db.read() as conn:
            return self.dialect.feed_horizon(conn)

    def change_position(self) -> str:
        """A text that changes whenever anything a report reads changes: how many runs there are
        and the latest time one changed (every ingest and edit sets it), and the feed tables'
        marks (new metric, log and sample rows; the dialect's ``feed_marks``: only this store's
        writes move them). A reader caches what it derived from the store under it."""
        with self.db.read() as conn:  # one connection: one snapshot
            count, latest = conn.execute("SELECT COUNT(*), MAX(updated) FROM runs").fetchone()
            marks = self.dialect.feed_marks(conn)
        return f"{int(count)}:{float(latest or 0.0)!r}:{marks}"

    def changes(
        self,
        after: Cursor,
        upto: Cursor | None = None,
        *,
        run_id: str | None = None,
        metrics: bool = True,
        samples: bool = True,
        activity: bool = True,
        samples_since: float | None = None,
    ) -> Changes:
        with self.db.read() as conn:  # one connection: the cursor and the rows agree
            hi = dict(upto) if upto is not None else self.dialect.feed_cursor(conn)

            def where(table: str) -> tuple[str, list[Any]]:
                sql, args = self.dialect.feed_window(after[table], hi[table])
                if run_id is not None:
                    sql, args = "run_id = ? AND " + sql, [run_id, *args]
                return sql, args

            out = Changes(hi)
            if metrics:
                w, a = where("metric_chunks")
                out.metric_chunks = conn.execute(
                    f"SELECT run_id, name, steps, times, vals FROM metric_chunks WHERE {w} ORDER BY id", a
                ).fetchall()
            w, a = where("resource_samples")
            if samples_since is not None:
                w, a = w + " AND time >= ?", [*a, samples_since]
            if samples:
                out.samples = conn.execute(f"SELECT run_id, id, data FROM resource_samples WHERE {w}", a).fetchall()
            if activity:
                out.fresh = dict(
                    conn.execute(
                        f"SELECT run_id, MAX(time) FROM resource_samples WHERE {w} GROUP BY run_id", a
                    ).fetchall()
                )
                w, a = where("log_chunks")
                out.last_log = dict(
                    conn.execute(
                        f"SELECT run_id, MAX(last_time) FROM log_chunks WHERE {w} GROUP BY run_id", a
                    ).fetchall()
                )
        return out

    def feed_runs(self, *, run_id: str | None = None, updated_since: float | None = None) -> list[RunInfo]:
        with self.db.read() as conn:
            if run_id is not None:
                rows = conn.execute(f"SELECT {RUN_COLUMNS} FROM runs WHERE id = ?", (run_id,)).fetchall()
            elif updated_since is None:
                rows = conn.execute(f"SELECT {RUN_COLUMNS} FROM runs").fetchall()
            else:
                rows = conn.execute(
                    f"SELECT {RUN_COLUMNS} FROM runs WHERE status IN {sql_list(ACTIVE_STATUSES)} OR updated >= ?",
                    (updated_since,),
                ).fetchall()
        return [run_row(r) for r in rows]

    def run_labels(self, run_ids: Sequence[str]) -> dict[str, tuple[dict[str, Any], dict[str, str]]]:
        out: dict[str, tuple[dict[str, Any], dict[str, str]]] = {rid: ({}, {}) for rid in run_ids}
        with self.db.read() as conn:
            for part in parts(list(out)):
                where, args = self.dialect.any_of("run_id", part)
                for rid, key, value, kind in conn.execute(
                    f"SELECT run_id, key, value, kind FROM params WHERE {where}", args
                ):
                    out[rid][0][key] = param_value(value, kind)
                for rid, key, value in conn.execute(f"SELECT run_id, key, value FROM tags WHERE {where}", args):
                    out[rid][1][key] = value
        return out
