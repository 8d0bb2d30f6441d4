"""The SQL store's live streams of a run: new log events and metric points after a cursor.

Apart from ``events.py`` because a stream reads by cursor, not by question: what the server's
live views (SSE) poll. A run's stream reads ``id > cursor``: a run's chunk ids grow in commit
order on both stores (one writer at a time in SQLite, a lock per run in PostgreSQL), so a reader
that keeps its cursor sees every chunk exactly once.
"""

from __future__ import annotations

from collections.abc import Sequence

from flightlog.models import LogEvent, LogQuery
from flightlog.schema.values import decode_log_chunk
from flightlog.store.sql.core import SqlCore
from flightlog.store.sql.logmatch import event_time, matching
from flightlog.store.sql.rankview import rank_writers

__all__ = ["SqlStreams"]


class SqlStreams(SqlCore):
    def log_events_after(self, run_id: str, after: int, query: LogQuery) -> tuple[list[LogEvent], int]:
        """Events of the log chunks stored after chunk ``after`` (a cursor), and the new cursor.

        What live streams (SSE) are built on. One statement reads every new chunk id (the data
        only of chunks the filters may match), so the cursor never skips a chunk committed meanwhile.
        """
        conds, args = ["TRUE"], []
        if query.since is not None:
            conds.append("last_time >= ?")
            args.append(query.since)
        if query.min_level is not None:
            conds.append("max_level >= ?")
            args.append(query.min_level)
        sql = (
            f"SELECT id, CASE WHEN {' AND '.join(conds)} THEN data END, writer FROM log_chunks "
            "WHERE run_id=? AND id > ? ORDER BY id"
        )
        pattern = None
        if query.grep:
            # cost: the query language (and re2) is imported by a grep, not by every store's opening
            from flightlog.query.regex import compile_grep

            pattern = compile_grep(query.grep)
        deadline = self._deadline()
        with self.db.budgeted_read(deadline) as conn:
            rows = conn.execute(sql, [*args, run_id, after]).fetchall()
            ranks = rank_writers(conn, run_id) if rows else {}
        events: list[LogEvent] = []
        last = after
        for chunk_id, data, writer in rows:
            deadline.check()
            last = chunk_id
            if data is not None:
                events.extend(matching(decode_log_chunk(data), query, pattern, ranks.get(writer)))
        events.sort(key=event_time)
        return events, last

    def metric_points_after(
        self, run_id: str, after: int, names: Sequence[str] | None = None
    ) -> tuple[dict[str, tuple[bytes, bytes, bytes]], int]:
        """New points per metric (little-endian steps, times, values) since chunk ``after``, and the new cursor."""
        with self.db.read() as conn:
            rows = conn.execute(
                "SELECT id, name, steps, times, vals FROM metric_chunks WHERE run_id=? AND id > ? ORDER BY id",
                (run_id, after),
            ).fetchall()
        wanted = set(names) if names else None
        parts: dict[str, list[tuple[bytes, bytes, bytes]]] = {}
        last = after
        for chunk_id, name, steps, times, vals in rows:
            last = chunk_id
            if wanted is None or name in wanted:
                parts.setdefault(name, []).append((steps, times, vals))
        joined = {
            name: (b"".join(p[0] for p in ps), b"".join(p[1] for p in ps), b"".join(p[2] for p in ps))
            for name, ps in parts.items()
        }
        return joined, last

    def feed_cursors(self, run_id: str) -> tuple[int, int]:
        """The newest (log chunk, metric chunk) ids of a run: where a live stream starts."""
        with self.db.read() as conn:
            logs = conn.execute("SELECT MAX(id) FROM log_chunks WHERE run_id=?", (run_id,)).fetchone()[0]
            metrics = conn.execute("SELECT MAX(id) FROM metric_chunks WHERE run_id=?", (run_id,)).fetchone()[0]
        return int(logs or 0), int(metrics or 0)
