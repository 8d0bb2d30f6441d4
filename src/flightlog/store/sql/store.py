"""The queries of the SQL stores (SQLite, PostgreSQL), written once: both stores hold the same
data model (migration N of one is migration N of the other) and answer every question alike.

A backend gives its :class:`SqlDatabase` (``read``, ``write``, ``budgeted_read``), its
:class:`~flightlog.store.sql.dialect.Dialect`, and what only it does: ``leadership`` and
``reclaim_space``. A run's live stream reads ``id > cursor``: a run's chunk ids grow in commit
order on both stores (one writer at a time in SQLite, a lock per run in PostgreSQL), so a
reader that keeps its cursor sees every chunk exactly once. The alert feed, over every run at
once, reads through the dialect's ``feed_cursor`` and ``feed_window`` (ids in SQLite, writing
transactions in PostgreSQL).

Why blob grants (``has_digest``, ``grant_blob``): content is addressed by its SHA-256, which is
not a secret (it is in every artifact listing). A token limited to a project may only see, or
point an artifact at, content that its project has shown it holds: by uploading it (the server
checks the hash), or through an artifact of the project that points at uploaded content.
"""

from __future__ import annotations

import json
import math
import re
import secrets
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol, TypeVar

from flightlog.errors import AmbiguousId, InvalidInput, NotFound
from flightlog.models import (
    KIND_TAG,
    SERVING_KIND,
    TERMINAL_STATUSES,
    Artifact,
    LogEvent,
    LogQuery,
    MetricHistory,
    MetricSummary,
    Note,
    RankInfo,
    RunInfo,
    Span,
    StageSummary,
)
from flightlog.query.regex import GrepPattern, compile_grep
from flightlog.schema.values import decode_log_chunk, param_value
from flightlog.statuses import ACTIVE_STATUSES, FAILED_STATUSES, sql_list
from flightlog.store.base import IngestResult
from flightlog.store.budget import Deadline, query_timeout_from_env
from flightlog.store.changes import Changes, Cursor
from flightlog.store.sql.dialect import Dialect
from flightlog.store.sql.ingest import apply_batches
from flightlog.store.sql.rankview import RANK_COLUMNS, hung_ranks, rank_infos, rank_writers

__all__ = ["SqlDatabase", "SqlStore"]

T = TypeVar("T")

_RUN_COLUMNS = (
    "id, project, name, parent_id, status, end_reason, created, queued, started, ended, "
    "exit_code, signal, attempt, host, pid, failure, timeline, updated"
)
_TOKEN_COLUMNS = ("id", "role", "project", "name", "created", "last_used", "revoked")
_RUN_TABLES = (
    "params",
    "tags",
    "notes",
    "context",
    "metric_series",
    "metric_chunks",
    "log_chunks",
    "spans",
    "stage_stats",
    "resource_samples",
    "artifacts",
    "counters",
    "evidence",
    "ingested",
    "run_writers",
)
_PART = 500  # ids per ``IN (…)``: well under SQLite's limit of bound variables


class SqlDatabase(Protocol):
    def read(self) -> AbstractContextManager[Any]: ...
    def write(self, *, append: bool = False) -> AbstractContextManager[Any]:
        """One transaction; ``append=True`` for one that deletes chunk rows (or copies a store)."""
        ...

    def ingest_transaction(self, run_ids: Sequence[str], work: Callable[[Any], T]) -> T:
        """``work(conn)`` in one transaction that appends to these runs (ingest): each run's
        appends commit in the order of their ids, whatever else commits meanwhile (see the
        backends)."""
        ...

    def budgeted_read(self, deadline: Deadline) -> AbstractContextManager[Any]: ...
    def close(self) -> None: ...


class SqlStore:
    db: SqlDatabase
    dialect: Dialect

    def __init__(self) -> None:
        self._query_timeout: float | None = None
        self._query_timeout_read = False
        self._secrets: dict[str, bytes] = {}
        self.auth_changes = 0  # tokens revoked through this store object (server/auth.py's cache)

    @property
    def query_timeout(self) -> float | None:
        """Seconds a search (runs by filter, logs by grep) may take; None: no limit.

        FLIGHTLOG_QUERY_TIMEOUT by default (read on the first search, so a writer never fails
        over a reader's setting); the server sets it from ``--query-timeout``.
        """
        if not self._query_timeout_read:
            self._query_timeout, self._query_timeout_read = query_timeout_from_env(), True
        return self._query_timeout

    @query_timeout.setter
    def query_timeout(self, seconds: float | None) -> None:
        self._query_timeout, self._query_timeout_read = seconds or None, True

    def _deadline(self) -> Deadline:
        return Deadline(self.query_timeout)

    # ── writes ──────────────────────────────────────────────────────────────
    def ingest(self, records: Sequence[dict[str, Any]]) -> IngestResult:
        if not records:
            return IngestResult()
        return self.ingest_batches([records])[0]

    def ingest_batches(self, batches: Sequence[Sequence[dict[str, Any]]]) -> list[IngestResult]:
        """Several batches (a server's concurrent requests) in one transaction, one result each:
        the commit, the run locks and the statements of the append kinds are shared by all."""
        if not any(batches):
            return [IngestResult() for _ in batches]
        runs = sorted({str(rec.get("r")) for batch in batches for rec in batch if isinstance(rec, dict)})
        return self.db.ingest_transaction(runs, lambda conn: apply_batches(conn, batches, self.dialect))

    def update_run(self, run_id: str, **fields: Any) -> None:
        allowed = {"status", "end_reason", "ended", "exit_code", "signal", "failure"}
        bad = set(fields) - allowed
        if bad:
            raise InvalidInput(f"cannot update run fields {sorted(bad)}; allowed: {sorted(allowed)}")
        if "failure" in fields and fields["failure"] is not None:
            fields["failure"] = json.dumps(fields["failure"])
        sets = ", ".join(f"{k}=?" for k in fields)
        with self.db.write() as conn:
            conn.execute(f"UPDATE runs SET {sets}, updated=? WHERE id=?", (*fields.values(), time.time(), run_id))

    def claim_attempt(self, run_id: str, seen: int, *, host: str, pid: int, started: float) -> int | None:
        """A compare-and-set on (attempt, ended status): of several processes resuming one run at
        once, one gets the next attempt and the others None. The row is marked running by the
        claimer at once, so a resumer that reads it after the claim sees a live owner."""
        ended = sorted(TERMINAL_STATUSES)
        with self.db.write() as conn:
            cur = conn.execute(
                "UPDATE runs SET attempt=?, status='running', started=?, ended=NULL, end_reason=NULL, exit_code=NULL, "
                f"signal=NULL, host=?, pid=?, updated=? WHERE id=? AND attempt=? AND status IN ({', '.join('?' for _ in ended)})",
                (seen + 1, started, host, pid, time.time(), run_id, seen, *ended),
            )
            return seen + 1 if int(cur.rowcount) == 1 else None

    def add_note(self, run_id: str, text: str, author: str | None = None) -> Note:
        now = time.time()
        with self.db.write() as conn:
            note_id = self.dialect.insert_id(
                conn, "INSERT INTO notes(run_id, time, author, text) VALUES(?, ?, ?, ?)", (run_id, now, author, text)
            )
        return Note(note_id, run_id, now, author, text)

    def delete_runs(self, run_ids: Sequence[str]) -> int:
        ids = list(run_ids)
        if not ids:
            return 0
        deleted = 0
        with self.db.write(append=True) as conn:
            for part in _parts(ids):
                where, args = self.dialect.any_of("run_id", part)
                for table in _RUN_TABLES:
                    conn.execute(f"DELETE FROM {table} WHERE {where}", args)
                where, args = self.dialect.any_of("id", part)
                deleted += conn.execute(f"DELETE FROM runs WHERE {where}", args).rowcount
        return deleted

    def close(self) -> None:
        self.db.close()

    # ── runs ────────────────────────────────────────────────────────────────
    def resolve(self, ref: str, project: str | None = None) -> str:
        """A run id or unique prefix; with ``project``, among that project's runs only (a run
        of another project is then not found, exactly as one that does not exist)."""
        ref = ref.strip()
        if not ref or not re.fullmatch(r"[0-9A-Za-z_.-]+", ref):
            raise InvalidInput(f"{ref!r} is not a run id: use an id or a unique prefix (hex characters)")
        where, args = self.dialect.prefix("id", ref)
        if project is not None:
            where, args = f"{where} AND project=?", [*args, project]
        with self.db.read() as conn:
            rows = conn.execute(
                f"SELECT id FROM runs WHERE {where} ORDER BY id{self.dialect.collate} LIMIT 6", args
            ).fetchall()
        if not rows:
            within = "" if project is None else f" in project {project!r}"
            raise NotFound(f"no run with id or prefix {ref!r}{within}: list runs with `flightlog runs ls`")
        exact = [r[0] for r in rows if r[0] == ref]
        if exact:
            return str(exact[0])
        if len(rows) > 1:
            shown = ", ".join(r[0][:12] for r in rows[:5])
            raise AmbiguousId(
                f"run prefix {ref!r} matches several runs ({shown}{', …' if len(rows) > 5 else ''}): "
                "type more characters",
                details={"matches": [r[0] for r in rows]},
            )
        return str(rows[0][0])

    def get_run(self, ref: str) -> RunInfo:
        run_id = self.resolve(ref)
        with self.db.read() as conn:
            row = conn.execute(f"SELECT {_RUN_COLUMNS} FROM runs WHERE id=?", (run_id,)).fetchone()
            return self._hydrate(conn, [row])[0]

    def search_runs(
        self,
        *,
        project: str | None = None,
        filter: str | None = None,
        order_by: str | None = None,
        limit: int | None = None,
        offset: int = 0,
    ) -> list[RunInfo]:
        from flightlog.query import compile_runs_query

        sql, args = compile_runs_query(
            project=project,
            filter=filter,
            order_by=order_by,
            limit=limit,
            offset=offset,
            now=time.time(),
            placeholder=self.dialect.placeholder,
        )
        return self.query_runs(sql, args)

    def query_runs(self, sql: str, args: Sequence[Any]) -> list[RunInfo]:
        """The runs a compiled ``SELECT r.* FROM runs r …`` (the filter compiler's output) selects."""
        sql = sql.replace("SELECT r.*", "SELECT " + ", ".join(f"r.{c.strip()}" for c in _RUN_COLUMNS.split(",")), 1)
        with self.db.budgeted_read(self._deadline()) as conn:
            rows = self.dialect.filter_cursor(conn).execute(sql, list(args)).fetchall()
        with self.db.read() as conn:
            return self._hydrate(conn, rows)

    def _hydrate(self, conn: Any, rows: list[Any]) -> list[RunInfo]:
        """Runs with their params, tags, metric summaries and counters, each in key order.

        Ordered by (run, key), SQLite reads the rows in its primary key's order and sorts
        nothing (sorting by key alone cost a fifth of a 1,000-run search)."""
        runs = [run_row(r) for r in rows]
        if not runs:
            return runs
        by_id = {r.id: r for r in runs}
        where, ids = self.dialect.any_of("run_id", list(by_id))
        c = self.dialect.collate
        for run_id, key, value, kind in conn.execute(
            f"SELECT run_id, key, value, kind FROM params WHERE {where} ORDER BY run_id{c}, key{c}", ids
        ):
            by_id[run_id].params[key] = param_value(value, kind)
        for run_id, key, value in conn.execute(
            f"SELECT run_id, key, value FROM tags WHERE {where} ORDER BY run_id{c}, key{c}", ids
        ):
            by_id[run_id].tags[key] = value
        for row in conn.execute(
            f"SELECT run_id, name, count, nonfinite, min, max, last_value, last_step, first_step, "
            f"first_time, last_time FROM metric_series WHERE {where} ORDER BY run_id{c}, name{c}",
            ids,
        ):
            by_id[row[0]].metrics[row[1]] = _summary(row[1:])
        for run_id, name, value in conn.execute(
            f"SELECT run_id, name, value FROM counters WHERE {where} ORDER BY run_id{c}, name{c}", ids
        ):
            by_id[run_id].counters[name] = value
        return runs

    def projects(self) -> list[dict[str, Any]]:
        with self.db.read() as conn:
            rows = conn.execute(
                "SELECT project, COUNT(*), MAX(created), "
                "SUM(CASE WHEN status='running' THEN 1 ELSE 0 END), "
                f"SUM(CASE WHEN status IN {sql_list(FAILED_STATUSES)} THEN 1 ELSE 0 END) "
                f"FROM runs GROUP BY project ORDER BY project{self.dialect.collate}"
            ).fetchall()
            # the serving replicas among them (models.KIND_TAG): the runs table counts them apart
            serving = dict(
                conn.execute(
                    "SELECT r.project, COUNT(*) FROM tags t JOIN runs r ON r.id = t.run_id "
                    "WHERE t.key = ? AND t.value = ? GROUP BY r.project",
                    (KIND_TAG, SERVING_KIND),
                ).fetchall()
            )
        return [
            {
                "name": r[0],
                "runs": r[1],
                "serving_runs": int(serving.get(r[0], 0)),
                "last_created": r[2],
                "running": int(r[3]),
                "failed": int(r[4]),
            }
            for r in rows
        ]

    def run_sizes(self) -> list[tuple[str, float, int]]:
        """(run id, end time, bytes it holds in the store and artifacts), oldest first, finished runs only."""
        with self.db.read() as conn:
            rows = conn.execute(
                f"""
                SELECT r.id, COALESCE(r.ended, r.updated, r.created),
                  COALESCE((SELECT SUM(LENGTH(steps)+LENGTH(times)+LENGTH(vals)) FROM metric_chunks m WHERE m.run_id=r.id),0)
                + COALESCE((SELECT SUM(LENGTH(data)) FROM log_chunks l WHERE l.run_id=r.id),0)
                + COALESCE((SELECT SUM(LENGTH(data)) FROM resource_samples s WHERE s.run_id=r.id),0)
                + COALESCE((SELECT SUM(size) FROM artifacts a WHERE a.run_id=r.id AND a.uri LIKE 'cas:%'),0)
                FROM runs r WHERE r.status NOT IN {sql_list(ACTIVE_STATUSES)}
                ORDER BY 2
                """
            ).fetchall()
        return [(r[0], r[1], int(r[2])) for r in rows]

    def children(self, run_id: str) -> list[str]:
        with self.db.read() as conn:
            return [r[0] for r in conn.execute("SELECT id FROM runs WHERE parent_id=? ORDER BY created, id", (run_id,))]

    # ── run details ─────────────────────────────────────────────────────────
    def notes(self, run_id: str) -> list[Note]:
        with self.db.read() as conn:
            rows = conn.execute(
                "SELECT id, run_id, time, author, text FROM notes WHERE run_id=? ORDER BY time, id", (run_id,)
            ).fetchall()
        return [Note(*r) for r in rows]

    def context(self, run_id: str) -> dict[str, Any]:
        """The runtime context; several writers (runner, ranks) are merged, the first writer first."""
        merged: dict[str, Any] = {}
        with self.db.read() as conn:
            for (data,) in conn.execute(
                f"SELECT data FROM context WHERE run_id=? ORDER BY writer{self.dialect.collate}", (run_id,)
            ):
                for key, value in json.loads(data).items():
                    merged.setdefault(key, value)
        return merged

    def artifacts(self, run_id: str) -> list[Artifact]:
        return self._artifacts("run_id=?", [run_id])

    def artifacts_by_digest(self, sha256s: Sequence[str]) -> list[Artifact]:
        if not sha256s:
            return []
        return self._artifacts(*self.dialect.any_of("sha256", list(sha256s)))

    def _artifacts(self, where: str, args: list[Any]) -> list[Artifact]:
        with self.db.read() as conn:
            rows = conn.execute(
                "SELECT id, run_id, role, kind, path, source, size, sha256, uri, step, time, attempt, meta "
                f"FROM artifacts WHERE {where} ORDER BY time, id",
                args,
            ).fetchall()
        return [
            Artifact(
                id=r[0],
                run_id=r[1],
                role=r[2],
                kind=r[3],
                path=r[4],
                source=r[5],
                size=r[6],
                sha256=r[7],
                uri=r[8],
                step=r[9],
                time=r[10],
                attempt=r[11],
                meta=json.loads(r[12]) if r[12] else None,
            )
            for r in rows
        ]

    def referenced_digests(self) -> set[str]:
        with self.db.read() as conn:
            return {r[0] for r in conn.execute("SELECT DISTINCT sha256 FROM artifacts WHERE uri LIKE 'cas:%'")}

    def kept_digests(self) -> list[tuple[str, str]]:
        """(run id, sha256) of every artifact whose content the store keeps (for gc)."""
        with self.db.read() as conn:
            return [(r[0], r[1]) for r in conn.execute("SELECT run_id, sha256 FROM artifacts WHERE uri LIKE 'cas:%'")]

    def evidence(self, run_id: str, kind: str | None = None, name: str | None = None) -> list[dict[str, Any]]:
        sql, args = "SELECT kind, name, time, data FROM evidence WHERE run_id=?", [run_id]
        for column, value in (("kind", kind), ("name", name)):
            if value is not None:
                sql += f" AND {column}=?"
                args.append(value)
        with self.db.read() as conn:
            rows = conn.execute(sql + " ORDER BY time, id", args).fetchall()
        return [{"kind": r[0], "name": r[1], "time": r[2], "data": json.loads(r[3])} for r in rows]

    # ── events ──────────────────────────────────────────────────────────────
    def metric_summaries(self, run_id: str) -> dict[str, MetricSummary]:
        with self.db.read() as conn:
            rows = conn.execute(
                "SELECT name, count, nonfinite, min, max, last_value, last_step, first_step, first_time, last_time "
                f"FROM metric_series WHERE run_id=? ORDER BY name{self.dialect.collate}",
                (run_id,),
            ).fetchall()
        return {r[0]: _summary(r) for r in rows}

    def metric_history(self, run_id: str, name: str, rank: int | None = None) -> MetricHistory:
        """One metric's points. In a distributed run, one rank's: ``rank``, else the lowest rank
        that logged the metric (every rank logging ``loss`` must not read as one zigzag series);
        points of writers without a rank (a runner's) when no rank logged it."""
        import numpy as np

        with self.db.read() as conn:
            writers = rank_writers(conn, run_id)
            if not writers and rank is None:
                rows = conn.execute(
                    "SELECT steps, times, vals FROM metric_chunks WHERE run_id=? AND name=? ORDER BY first_step, id",
                    (run_id, name),
                ).fetchall()
            else:
                chunks = conn.execute(
                    "SELECT writer, steps, times, vals FROM metric_chunks WHERE run_id=? AND name=? ORDER BY first_step, id",
                    (run_id, name),
                ).fetchall()
                rows = _rank_chunks(chunks, writers, rank, run_id, name)
        if not rows:
            known = self.metric_summaries(run_id)
            if name not in known:
                names = ", ".join(sorted(known)[:20]) or "none"
                raise NotFound(f"run {run_id[:12]} has no metric {name!r}; its metrics: {names}")
        steps = np.frombuffer(b"".join(r[0] for r in rows), dtype="<i8")
        times = np.frombuffer(b"".join(r[1] for r in rows), dtype="<f8")
        values = np.frombuffer(b"".join(r[2] for r in rows), dtype="<f8")
        if len(steps) > 1 and not bool(np.all(steps[1:] >= steps[:-1])):
            order = np.argsort(steps, kind="stable")
            steps, times, values = steps[order], times[order], values[order]
        return MetricHistory(name, steps, values, times)

    def logs(self, run_id: str, query: LogQuery) -> list[LogEvent]:
        sql = "SELECT first_time, last_time, data, writer FROM log_chunks WHERE run_id=?"
        args: list[Any] = [run_id]
        if query.min_level is not None:
            sql += " AND max_level >= ?"
            args.append(query.min_level)
        if query.since is not None:
            sql += " AND last_time >= ?"
            args.append(query.since)
        if query.until is not None:
            sql += " AND first_time <= ?"
            args.append(query.until)
        if query.attempt is not None:
            sql += " AND (',' || attempts || ',') LIKE ?"
            args.append(f"%,{query.attempt},%")
        limit = query.limit
        backwards = bool(query.tail and limit)
        sql += " ORDER BY last_time DESC, id DESC" if backwards else " ORDER BY first_time, id"
        pattern = compile_grep(query.grep) if query.grep else None
        events: list[LogEvent] = []
        chunks: list[list[LogEvent]] = []
        deadline = self._deadline()
        with self.db.budgeted_read(deadline) as conn:
            ranks = rank_writers(conn, run_id)  # an event without a rank is its writer's rank's
            for first_time, last_time, data, writer in conn.execute(sql, args):
                deadline.check()
                if limit and len(events) >= limit:
                    # chunks of several writers overlap in time: stop once no later chunk can
                    # hold an event that belongs in the first (or last) `limit` events
                    events.sort(key=_event_time)
                    if backwards and last_time < events[-limit].time:
                        break
                    if not backwards and first_time > events[limit - 1].time:
                        break
                chunk = list(_matching(decode_log_chunk(data), query, pattern, ranks.get(writer)))
                chunks.append(chunk)
                events.extend(chunk)
        # events of one time keep the order they were written in (a traceback's lines and the
        # exception line after them often share one read's time): chunks in write order, then a
        # stable sort by time
        events = [e for chunk in (reversed(chunks) if backwards else chunks) for e in chunk]
        events.sort(key=_event_time)
        if limit:
            events = events[-limit:] if backwards else events[:limit]
        return events

    def stages(self, run_id: str, rank: int | None = None) -> list[StageSummary]:
        """The run's stages, merged over its writers; with ``rank``, that rank's writers' only."""
        with self.db.read() as conn:
            mine, args = "", [run_id]
            if rank is not None:
                writers = [w for w, r in rank_writers(conn, run_id).items() if r == rank]
                if not writers:
                    return []
                where, more = self.dialect.any_of("writer", writers)
                mine, args = f" AND {where}", [run_id, *more]
            stats = conn.execute(
                "SELECT name, count, total, min, max, first_start, last_end, hist FROM stage_stats "
                f"WHERE run_id=?{mine} ORDER BY writer{self.dialect.collate}",
                args,
            ).fetchall()
            spans = conn.execute(
                f'SELECT name, start, "end", attempt, sampled, attrs FROM spans WHERE run_id=?{mine} ORDER BY start, id',
                args,
            ).fetchall()
        return merge_stages(stats, spans)

    def resource_samples(
        self, run_id: str, since: float | None = None, rank: int | None = None
    ) -> list[dict[str, Any]]:
        """Every process's samples, or with ``rank`` those of that rank's processes only."""
        sql = "SELECT data FROM resource_samples WHERE run_id=?"
        args: list[Any] = [run_id]
        if since is not None:
            sql += " AND time >= ?"
            args.append(since)
        with self.db.read() as conn:
            if rank is not None:
                writers = [w for w, r in rank_writers(conn, run_id).items() if r == rank]
                if not writers:
                    return []
                where, more = self.dialect.any_of("writer", writers)
                sql, args = f"{sql} AND {where}", [*args, *more]
            rows = conn.execute(sql + " ORDER BY time, id", args).fetchall()
        return [json.loads(r[0]) for r in rows]

    def ranks(self, run_id: str, *, all_attempts: bool = False) -> list[RankInfo]:
        """The ranks of a distributed run (empty for a run of one process): see store/sql/rankview.py."""
        with self.db.read() as conn:
            run = conn.execute("SELECT status, attempt FROM runs WHERE id=?", (run_id,)).fetchone()
            if run is None:
                raise NotFound(f"no run with id {run_id!r}: list runs with `flightlog runs ls`")
            rows = conn.execute(
                f"SELECT {RANK_COLUMNS} FROM run_writers WHERE run_id=? AND rank IS NOT NULL AND forked=0 "
                "ORDER BY attempt, rank, restart, started",
                (run_id,),
            ).fetchall()
            finished = run[0] in TERMINAL_STATUSES
            stalls = (
                conn.execute(
                    "SELECT data FROM evidence WHERE run_id=? AND kind='stall' ORDER BY time, id", (run_id,)
                ).fetchall()
                if rows and not finished
                else []
            )
        return rank_infos(
            rows,
            run_status=run[0],
            run_attempt=run[1] or 1,
            finished=finished,
            all_attempts=all_attempts,
            hung=hung_ranks(json.loads(r[0]) for r in stalls),
        )

    # ── for the server: change feeds, scope checks, API tokens ───────────────
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
        pattern = compile_grep(query.grep) if query.grep else None
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
                events.extend(_matching(decode_log_chunk(data), query, pattern, ranks.get(writer)))
        events.sort(key=_event_time)
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

    def run_projects(self, run_ids: Sequence[str]) -> dict[str, str]:
        """The project of each existing run among ``run_ids``."""
        out: dict[str, str] = {}
        with self.db.read() as conn:
            for part in _parts(list(dict.fromkeys(run_ids))):
                where, args = self.dialect.any_of("id", part)
                out.update(conn.execute(f"SELECT id, project FROM runs WHERE {where}", args).fetchall())
        return out

    # ── blobs by project (see the module doc), web UI sessions ───────────────
    def has_digest(self, sha256: str, project: str | None = None) -> bool:
        """Whether content with this digest is recorded (in ``project``, when given: an artifact
        of the project whose content is that uploaded blob, or an upload made for the project)."""
        with self.db.read() as conn:
            if project is None:
                return conn.execute("SELECT 1 FROM artifacts WHERE sha256=? LIMIT 1", (sha256,)).fetchone() is not None
            if conn.execute("SELECT 1 FROM blob_projects WHERE sha256=? AND project=?", (sha256, project)).fetchone():
                return True
            row = conn.execute(
                "SELECT 1 FROM artifacts a JOIN runs r ON r.id = a.run_id "
                "WHERE a.sha256=? AND a.uri=? AND r.project=? LIMIT 1",
                (sha256, f"cas:sha256/{sha256}", project),
            ).fetchone()
        return row is not None

    def grant_blob(self, sha256: str, project: str) -> None:
        """Record that ``project`` holds this content (its token uploaded it, hash checked)."""
        with self.db.write() as conn:
            conn.execute(
                self.dialect.or_ignore("INSERT INTO blob_projects(sha256, project) VALUES(?, ?)"), (sha256, project)
            )

    def create_session(self, digest: str, token_id: str, expires: float) -> None:
        """Keep a web UI session (by the SHA-256 of its id); expired sessions are swept on the way."""
        now = time.time()
        with self.db.write() as conn:
            conn.execute("DELETE FROM sessions WHERE expires < ?", (now,))
            conn.execute(
                "INSERT INTO sessions(hash, token_id, created, expires) VALUES(?, ?, ?, ?)",
                (digest, token_id, now, expires),
            )

    def session_by_hash(self, digest: str) -> dict[str, Any] | None:
        """The token behind a live session (its row, plus the session's ``expires``), or None."""
        with self.db.read() as conn:
            row = conn.execute(
                f"SELECT {', '.join('t.' + c for c in _TOKEN_COLUMNS)}, s.expires FROM sessions s "
                "JOIN tokens t ON t.id = s.token_id WHERE s.hash=?",
                (digest,),
            ).fetchone()
        if row is None:
            return None
        return {**_token_row(row[:-1]), "expires": row[-1]}

    def delete_session(self, digest: str) -> bool:
        with self.db.write() as conn:
            return int(conn.execute("DELETE FROM sessions WHERE hash=?", (digest,)).rowcount) > 0

    def shared_secret(self, name: str) -> bytes:
        """32 random bytes kept in this store under ``name``, made on first use: every process
        that opens the store (server replicas) gets the same key, so what one signs (pagination
        cursors) another verifies. Never shown; a new store means new keys."""
        cached = self._secrets.get(name)
        if cached is not None:
            return cached
        key = f"secret:{name}"
        with self.db.read() as conn:
            row = conn.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        if row is None:
            with self.db.write() as conn:  # the first replica to get here makes it; the others keep theirs unused
                conn.execute(
                    "INSERT INTO meta(key, value) VALUES(?, ?) ON CONFLICT(key) DO NOTHING",
                    (key, secrets.token_hex(32)),
                )
                row = conn.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        self._secrets[name] = value = bytes.fromhex(str(row[0]))
        return value

    # ── API tokens ────────────────────────────────────────────────────────────
    def create_token(self, token_id: str, digest: str, role: str, project: str | None, name: str | None) -> None:
        with self.db.write() as conn:
            conn.execute(
                "INSERT INTO tokens(id, hash, role, project, name, created) VALUES(?, ?, ?, ?, ?, ?)",
                (token_id, digest, role, project, name, time.time()),
            )

    def token_by_hash(self, digest: str) -> dict[str, Any] | None:
        with self.db.read() as conn:
            row = conn.execute(f"SELECT {', '.join(_TOKEN_COLUMNS)} FROM tokens WHERE hash=?", (digest,)).fetchone()
        return None if row is None else _token_row(row)

    def tokens(self) -> list[dict[str, Any]]:
        with self.db.read() as conn:
            rows = conn.execute(f"SELECT {', '.join(_TOKEN_COLUMNS)} FROM tokens ORDER BY created, id").fetchall()
        return [_token_row(r) for r in rows]

    def revoke_token(self, token_id: str) -> bool:
        """Revoke a token; False when no token has that id (revoking twice is fine)."""
        with self.db.write() as conn:
            cur = conn.execute("UPDATE tokens SET revoked=COALESCE(revoked, ?) WHERE id=?", (time.time(), token_id))
            found = int(cur.rowcount) > 0
        self.auth_changes += 1  # a server's remembered token rows are stale (server/auth.py)
        return found

    def touch_token(self, token_id: str, when: float) -> None:
        with self.db.write() as conn:
            conn.execute("UPDATE tokens SET last_used=? WHERE id=?", (when, token_id))

    # ── changes since a cursor (store/changes.py): the alert feed ─────────────
    def change_cursor(self) -> dict[str, int]:
        with self.db.read() as conn:
            return self.dialect.feed_cursor(conn)

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
                rows = conn.execute(f"SELECT {_RUN_COLUMNS} FROM runs WHERE id = ?", (run_id,)).fetchall()
            elif updated_since is None:
                rows = conn.execute(f"SELECT {_RUN_COLUMNS} FROM runs").fetchall()
            else:
                rows = conn.execute(
                    f"SELECT {_RUN_COLUMNS} FROM runs WHERE status IN {sql_list(ACTIVE_STATUSES)} OR updated >= ?",
                    (updated_since,),
                ).fetchall()
        return [run_row(r) for r in rows]

    def run_labels(self, run_ids: Sequence[str]) -> dict[str, tuple[dict[str, Any], dict[str, str]]]:
        out: dict[str, tuple[dict[str, Any], dict[str, str]]] = {rid: ({}, {}) for rid in run_ids}
        with self.db.read() as conn:
            for part in _parts(list(out)):
                where, args = self.dialect.any_of("run_id", part)
                for rid, key, value, kind in conn.execute(
                    f"SELECT run_id, key, value, kind FROM params WHERE {where}", args
                ):
                    out[rid][0][key] = param_value(value, kind)
                for rid, key, value in conn.execute(f"SELECT run_id, key, value FROM tags WHERE {where}", args):
                    out[rid][1][key] = value
        return out


def _parts(ids: list[str]) -> Iterator[list[str]]:
    for start in range(0, len(ids), _PART):
        yield ids[start : start + _PART]


def merge_stages(stats: Sequence[Any], spans: Sequence[Any]) -> list[StageSummary]:
    """Stage statistics of every writer merged per stage, with their sampled spans."""
    merged: dict[str, StageSummary] = {}
    for name, count, total, mn, mx, first, last, hist in stats:
        h = json.loads(hist)
        cur = merged.get(name)
        if cur is None:
            merged[name] = StageSummary(name, count, total, mn, mx, first, last, h)
            continue
        cur.count += count
        cur.total += total
        cur.min, cur.max = min(cur.min, mn), max(cur.max, mx)
        cur.first_start = _min_opt(cur.first_start, first)
        cur.last_end = _max_opt(cur.last_end, last)
        cur.hist = [a + b for a, b in zip(cur.hist, h, strict=False)]
    for name, start, end, attempt, sampled, attrs in spans:
        span = Span(name, start, end, attempt, bool(sampled), json.loads(attrs) if attrs else None)
        if name not in merged:  # a span logged without stats (e.g. by the runner)
            d = end - start
            merged[name] = StageSummary(name, 1, d, d, d, start, end, [])
        merged[name].spans.append(span)
    return sorted(merged.values(), key=lambda s: (s.first_start or 0.0, s.name))


def run_row(r: Any) -> RunInfo:
    """A row of ``_RUN_COLUMNS`` → RunInfo without params, tags or metrics."""
    return RunInfo(
        id=r[0],
        project=r[1],
        name=r[2],
        parent_id=r[3],
        status=r[4],
        end_reason=r[5],
        created=r[6],
        queued=r[7],
        started=r[8],
        ended=r[9],
        exit_code=r[10],
        signal=r[11],
        attempt=r[12],
        host=r[13],
        pid=r[14],
        failure=json.loads(r[15]) if r[15] else None,
        timeline=json.loads(r[16]) if r[16] else {},
        updated=r[17],
    )


def _token_row(row: Any) -> dict[str, Any]:
    return dict(zip(_TOKEN_COLUMNS, row, strict=True))


def _summary(row: Any) -> MetricSummary:
    """Both stores keep NaN as NULL: a series with points whose last value reads NULL ended on NaN."""
    summary = MetricSummary(*row)
    if summary.last is None and summary.count:
        summary.last = math.nan
    return summary


def _event_time(event: LogEvent) -> float:
    return event.time


def _matching(batch: Any, query: LogQuery, pattern: GrepPattern | None, rank: int | None = None) -> list[LogEvent]:
    """The chunk's events that pass ``query``; ``rank``: its writer's rank, the rank of an event
    that names none (everything a rank's writer records belongs to that rank)."""
    out = []
    cols = batch
    if rank is not None:
        cols.rank = [rank if r is None else r for r in cols.rank]
    for i in range(len(cols.time)):
        if query.min_level is not None and cols.level[i] < query.min_level:
            continue
        t = cols.time[i]
        if query.since is not None and t < query.since:
            continue
        if query.until is not None and t > query.until:
            continue
        if query.streams is not None and cols.stream[i] not in query.streams:
            continue
        if query.component is not None and cols.component[i] != query.component:
            continue
        if query.attempt is not None and cols.attempt[i] != query.attempt:
            continue
        if query.stage is not None and cols.stage[i] != query.stage:
            continue
        if query.rank is not None and cols.rank[i] != query.rank:
            continue
        if pattern is not None and not pattern.search(cols.message[i]):
            continue
        out.append(
            LogEvent(
                t,
                cols.stream[i],
                cols.level[i],
                cols.message[i],
                cols.component[i],
                cols.fields[i],
                cols.rank[i],
                cols.attempt[i],
                cols.stage[i],
            )
        )
    return out


def _rank_chunks(
    chunks: list[Any], writers: dict[str, int], rank: int | None, run_id: str, name: str
) -> list[tuple[bytes, bytes, bytes]]:
    """The chunks (writer, steps, times, values) of one rank: ``rank``, else the lowest rank
    that has any (else every chunk: the metric comes from writers that are not ranks)."""
    present = sorted({writers[c[0]] for c in chunks if c[0] in writers})
    if rank is None:
        if not present:
            return [c[1:] for c in chunks]
        rank = present[0]
    elif not writers:
        raise NotFound(f"run {run_id[:12]} has no ranks (it is not a distributed run): leave rank out")
    elif chunks and rank not in present:
        known = ", ".join(map(str, present)) or "none (only writers without a rank logged it)"
        raise NotFound(f"rank {rank} of run {run_id[:12]} logged no points of {name!r}; ranks that did: {known}")
    return [c[1:] for c in chunks if writers.get(c[0]) == rank]


def _min_opt(a: float | None, b: float | None) -> float | None:
    return b if a is None else a if b is None else min(a, b)


def _max_opt(a: float | None, b: float | None) -> float | None:
    return b if a is None else a if b is None else max(a, b)
