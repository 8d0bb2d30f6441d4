"""The PostgreSQL store (``FLIGHTLOG_STORE=postgresql://…``): the data model of the embedded
store on a shared server, for several flightlog servers and many writers at once.

It answers every question the SQLite store answers, with the same results: the run filter is
the same compiler's SQL (``%s`` placeholders), series are the same columnar chunks, and the
row-decoding helpers are shared with the SQLite store. Change feeds (live streams, the alert
feed) read ``id > cursor`` safely because appends commit in id order (see connection.py).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Sequence
from typing import Any

from flightlog.errors import AmbiguousId, InvalidInput, NotFound
from flightlog.models import (
    Artifact,
    LogEvent,
    LogQuery,
    MetricHistory,
    MetricSummary,
    Note,
    RunInfo,
    StageSummary,
)
from flightlog.query.regex import compile_grep
from flightlog.records import decode_log_chunk, param_value
from flightlog.store.base import IngestResult
from flightlog.store.budget import Deadline, query_timeout_from_env
from flightlog.store.changes import FEED_TABLES, Changes, Cursor
from flightlog.store.postgres.connection import PgDatabase, PgLeadership
from flightlog.store.postgres.ingest import apply_records
from flightlog.store.sqlite.store import (
    _event_time,
    _matching,
    _summary,
    _token_row,
    merge_stages,
    run_row,
)

__all__ = ["PostgresStore"]

_RUN_COLUMNS = ("id, project, name, parent_id, status, end_reason, created, queued, started, ended, "
                "exit_code, signal, attempt, host, pid, failure, timeline, updated")
_TOKEN_KEYS = ("id", "role", "project", "name", "created", "last_used", "revoked")
_RUN_TABLES = ("params", "tags", "notes", "context", "metric_series", "metric_chunks", "log_chunks", "spans",
               "stage_stats", "resource_samples", "artifacts", "counters", "evidence", "ingested")


def _untyped_adapters() -> Any:
    """Numbers sent without a type, so PostgreSQL infers it from the column they meet, as
    SQLite does: ``tag.x > 3`` compares text, ``param.lr > 3`` a double, ``LIMIT`` a bigint."""
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


class PostgresStore:
    def __init__(self, uri: str) -> None:
        self.db = PgDatabase(uri)
        self.uri = self.db.safe_uri
        self._filter_adapters = _untyped_adapters()
        self._query_timeout: float | None = None
        self._query_timeout_read = False

    @property
    def query_timeout(self) -> float | None:
        """Seconds a search (runs by filter, logs by grep) may take; None: no limit
        (FLIGHTLOG_QUERY_TIMEOUT by default, read on the first search; the server sets it)."""
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
        with self.db.write(append=True) as conn:
            return apply_records(conn, records)

    def update_run(self, run_id: str, **fields: Any) -> None:
        allowed = {"status", "end_reason", "ended", "exit_code", "signal", "failure"}
        bad = set(fields) - allowed
        if bad:
            raise InvalidInput(f"cannot update run fields {sorted(bad)}; allowed: {sorted(allowed)}")
        if "failure" in fields and fields["failure"] is not None:
            fields["failure"] = json.dumps(fields["failure"])
        sets = ", ".join(f"{k}=%s" for k in fields)
        with self.db.write() as conn:
            conn.execute(f"UPDATE runs SET {sets}, updated=%s WHERE id=%s", (*fields.values(), time.time(), run_id))

    def add_note(self, run_id: str, text: str, author: str | None = None) -> Note:
        now = time.time()
        with self.db.write() as conn:
            note_id = conn.execute("INSERT INTO notes(run_id, time, author, text) VALUES(%s, %s, %s, %s) RETURNING id",
                                   (run_id, now, author, text)).fetchone()[0]
        return Note(note_id, run_id, now, author, text)

    def delete_runs(self, run_ids: Sequence[str]) -> int:
        ids = list(run_ids)
        if not ids:
            return 0
        with self.db.write(append=True) as conn:
            for table in _RUN_TABLES:
                conn.execute(f"DELETE FROM {table} WHERE run_id = ANY(%s)", (ids,))
            return int(conn.execute("DELETE FROM runs WHERE id = ANY(%s)", (ids,)).rowcount)

    def close(self) -> None:
        self.db.close()

    def leadership(self, name: str) -> PgLeadership:
        """The lead of a job that one server of several runs at a time (see PgLeadership)."""
        return PgLeadership(self.db, name)

    # ── runs ────────────────────────────────────────────────────────────────
    def resolve(self, ref: str) -> str:
        ref = ref.strip()
        if not ref or not re.fullmatch(r"[0-9A-Za-z_.-]+", ref):
            raise InvalidInput(f"{ref!r} is not a run id: use an id or a unique prefix (hex characters)")
        pattern = ref.replace("_", "\\_") + "%"
        with self.db.read() as conn:
            rows = conn.execute('SELECT id FROM runs WHERE id LIKE %s ORDER BY id COLLATE "C" LIMIT 6',
                                (pattern,)).fetchall()
        if not rows:
            raise NotFound(f"no run with id or prefix {ref!r}: list runs with `flightlog runs ls`")
        exact = [r[0] for r in rows if r[0] == ref]
        if exact:
            return str(exact[0])
        if len(rows) > 1:
            shown = ", ".join(r[0][:12] for r in rows[:5])
            raise AmbiguousId(
                f"run prefix {ref!r} matches several runs ({shown}{', …' if len(rows) > 5 else ''}): type more characters",
                details={"matches": [r[0] for r in rows]},
            )
        return str(rows[0][0])

    def get_run(self, ref: str) -> RunInfo:
        run_id = self.resolve(ref)
        with self.db.read() as conn:
            row = conn.execute(f"SELECT {_RUN_COLUMNS} FROM runs WHERE id=%s", (run_id,)).fetchone()
            return self._hydrate(conn, [row])[0]

    def search_runs(self, *, project: str | None = None, filter: str | None = None, order_by: str | None = None,
                    limit: int | None = None, offset: int = 0) -> list[RunInfo]:
        from flightlog.query import compile_runs_query

        sql, args = compile_runs_query(project=project, filter=filter, order_by=order_by, limit=limit, offset=offset,
                                       now=time.time(), placeholder="%s")
        return self.query_runs(sql, args)

    def query_runs(self, sql: str, args: Sequence[Any]) -> list[RunInfo]:
        """The runs a compiled ``SELECT r.* FROM runs r …`` (the filter compiler's output) selects."""
        sql = sql.replace("SELECT r.*", "SELECT " + ", ".join(f"r.{c.strip()}" for c in _RUN_COLUMNS.split(",")), 1)
        with self.db.budgeted_read(self._deadline()) as conn:
            cur = conn.cursor()
            cur.adapters.register_dumper(int, self._filter_adapters.get_dumper(int, "s"))
            cur.adapters.register_dumper(float, self._filter_adapters.get_dumper(float, "s"))
            rows = cur.execute(sql, list(args)).fetchall()
        with self.db.read() as conn:
            return self._hydrate(conn, rows)

    def _hydrate(self, conn: Any, rows: list[Any]) -> list[RunInfo]:
        runs = [run_row(r) for r in rows]
        if not runs:
            return runs
        by_id = {r.id: r for r in runs}
        ids = list(by_id)
        for run_id, key, value, kind in conn.execute(
                'SELECT run_id, key, value, kind FROM params WHERE run_id = ANY(%s) ORDER BY key COLLATE "C"', (ids,)):
            by_id[run_id].params[key] = param_value(value, kind)
        for run_id, key, value in conn.execute(
                'SELECT run_id, key, value FROM tags WHERE run_id = ANY(%s) ORDER BY key COLLATE "C"', (ids,)):
            by_id[run_id].tags[key] = value
        for row in conn.execute(
                "SELECT run_id, name, count, nonfinite, min, max, last_value, last_step, first_step, first_time, "
                'last_time FROM metric_series WHERE run_id = ANY(%s) ORDER BY name COLLATE "C"', (ids,)):
            by_id[row[0]].metrics[row[1]] = _summary(row[1:])
        for run_id, name, value in conn.execute(
                'SELECT run_id, name, value FROM counters WHERE run_id = ANY(%s) ORDER BY name COLLATE "C"', (ids,)):
            by_id[run_id].counters[name] = value
        return runs

    def projects(self) -> list[dict[str, Any]]:
        with self.db.read() as conn:
            rows = conn.execute(
                "SELECT project, COUNT(*), MAX(created), "
                "SUM(CASE WHEN status='running' THEN 1 ELSE 0 END), "
                "SUM(CASE WHEN status IN ('failed','crashed','killed') THEN 1 ELSE 0 END) "
                'FROM runs GROUP BY project ORDER BY project COLLATE "C"'
            ).fetchall()
        return [{"name": r[0], "runs": r[1], "last_created": r[2], "running": int(r[3]), "failed": int(r[4])}
                for r in rows]

    def run_sizes(self) -> list[tuple[str, float, int]]:
        """(run id, end time, bytes it holds in the store and artifacts), oldest first, finished runs only."""
        with self.db.read() as conn:
            rows = conn.execute(
                """
                SELECT r.id, COALESCE(r.ended, r.updated, r.created),
                  COALESCE((SELECT SUM(LENGTH(steps)+LENGTH(times)+LENGTH(vals)) FROM metric_chunks m
                            WHERE m.run_id=r.id),0)
                + COALESCE((SELECT SUM(LENGTH(data)) FROM log_chunks l WHERE l.run_id=r.id),0)
                + COALESCE((SELECT SUM(LENGTH(data)) FROM resource_samples s WHERE s.run_id=r.id),0)
                + COALESCE((SELECT SUM(size) FROM artifacts a WHERE a.run_id=r.id AND a.uri LIKE 'cas:%%'),0)
                FROM runs r WHERE r.status NOT IN ('created','queued','running')
                ORDER BY 2
                """
            ).fetchall()
        return [(r[0], r[1], int(r[2])) for r in rows]

    def children(self, run_id: str) -> list[str]:
        with self.db.read() as conn:
            return [r[0] for r in conn.execute("SELECT id FROM runs WHERE parent_id=%s ORDER BY created, id",
                                               (run_id,))]

    # ── run details ─────────────────────────────────────────────────────────
    def notes(self, run_id: str) -> list[Note]:
        with self.db.read() as conn:
            rows = conn.execute("SELECT id, run_id, time, author, text FROM notes WHERE run_id=%s ORDER BY time, id",
                                (run_id,)).fetchall()
        return [Note(*r) for r in rows]

    def context(self, run_id: str) -> dict[str, Any]:
        """The runtime context; several writers (runner, ranks) are merged, the first writer first."""
        merged: dict[str, Any] = {}
        with self.db.read() as conn:
            for (data,) in conn.execute('SELECT data FROM context WHERE run_id=%s ORDER BY writer COLLATE "C"',
                                        (run_id,)):
                for key, value in json.loads(data).items():
                    merged.setdefault(key, value)
        return merged

    def artifacts(self, run_id: str) -> list[Artifact]:
        return self._artifacts("WHERE run_id=%s ORDER BY time, id", (run_id,))

    def artifacts_by_digest(self, sha256s: Sequence[str]) -> list[Artifact]:
        if not sha256s:
            return []
        return self._artifacts("WHERE sha256 = ANY(%s) ORDER BY time, id", (list(sha256s),))

    def _artifacts(self, where: str, args: tuple[Any, ...]) -> list[Artifact]:
        with self.db.read() as conn:
            rows = conn.execute("SELECT id, run_id, role, kind, path, source, size, sha256, uri, step, time, attempt, "
                                f"meta FROM artifacts {where}", args).fetchall()
        return [Artifact(id=r[0], run_id=r[1], role=r[2], kind=r[3], path=r[4], source=r[5], size=r[6], sha256=r[7],
                         uri=r[8], step=r[9], time=r[10], attempt=r[11], meta=json.loads(r[12]) if r[12] else None)
                for r in rows]

    def referenced_digests(self) -> set[str]:
        with self.db.read() as conn:
            return {r[0] for r in conn.execute("SELECT DISTINCT sha256 FROM artifacts WHERE uri LIKE 'cas:%'")}

    def kept_digests(self) -> list[tuple[str, str]]:
        """(run id, sha256) of every artifact whose content the store keeps (for gc)."""
        with self.db.read() as conn:
            return [(r[0], r[1]) for r in conn.execute("SELECT run_id, sha256 FROM artifacts WHERE uri LIKE 'cas:%'")]

    def reclaim_space(self) -> None:
        """Nothing to do: PostgreSQL's autovacuum reuses the space of deleted rows."""

    def evidence(self, run_id: str, kind: str | None = None, name: str | None = None) -> list[dict[str, Any]]:
        sql, args = "SELECT kind, name, time, data FROM evidence WHERE run_id=%s", [run_id]
        for column, value in (("kind", kind), ("name", name)):
            if value is not None:
                sql += f" AND {column}=%s"
                args.append(value)
        with self.db.read() as conn:
            rows = conn.execute(sql + " ORDER BY time, id", args).fetchall()
        return [{"kind": r[0], "name": r[1], "time": r[2], "data": json.loads(r[3])} for r in rows]

    # ── events ──────────────────────────────────────────────────────────────
    def metric_summaries(self, run_id: str) -> dict[str, MetricSummary]:
        with self.db.read() as conn:
            rows = conn.execute(
                "SELECT name, count, nonfinite, min, max, last_value, last_step, first_step, first_time, last_time "
                'FROM metric_series WHERE run_id=%s ORDER BY name COLLATE "C"', (run_id,)).fetchall()
        return {r[0]: _summary(r) for r in rows}

    def metric_history(self, run_id: str, name: str) -> MetricHistory:
        import numpy as np

        with self.db.read() as conn:
            rows = conn.execute("SELECT steps, times, vals FROM metric_chunks WHERE run_id=%s AND name=%s "
                                "ORDER BY first_step, id", (run_id, name)).fetchall()
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
        sql = "SELECT first_time, last_time, data FROM log_chunks WHERE run_id=%s"
        args: list[Any] = [run_id]
        if query.min_level is not None:
            sql += " AND max_level >= %s"
            args.append(query.min_level)
        if query.since is not None:
            sql += " AND last_time >= %s"
            args.append(query.since)
        if query.until is not None:
            sql += " AND first_time <= %s"
            args.append(query.until)
        if query.attempt is not None:
            sql += " AND (',' || attempts || ',') LIKE %s"
            args.append(f"%,{query.attempt},%")
        limit = query.limit
        backwards = bool(query.tail and limit)
        sql += " ORDER BY last_time DESC, id DESC" if backwards else " ORDER BY first_time, id"
        pattern = compile_grep(query.grep) if query.grep else None
        events: list[LogEvent] = []
        deadline = self._deadline()
        with self.db.budgeted_read(deadline) as conn:
            for first_time, last_time, data in conn.execute(sql, args):
                deadline.check()
                if limit and len(events) >= limit:
                    events.sort(key=_event_time)
                    if backwards and last_time < events[-limit].time:
                        break
                    if not backwards and first_time > events[limit - 1].time:
                        break
                events.extend(_matching(decode_log_chunk(data), query, pattern))
        events.sort(key=_event_time)
        if limit:
            events = events[-limit:] if backwards else events[:limit]
        return events

    def stages(self, run_id: str) -> list[StageSummary]:
        with self.db.read() as conn:
            stats = conn.execute("SELECT name, count, total, min, max, first_start, last_end, hist FROM stage_stats "
                                 'WHERE run_id=%s ORDER BY writer COLLATE "C"', (run_id,)).fetchall()
            spans = conn.execute('SELECT name, start, "end", attempt, sampled, attrs FROM spans WHERE run_id=%s '
                                 "ORDER BY start, id", (run_id,)).fetchall()
        return merge_stages(stats, spans)

    def resource_samples(self, run_id: str, since: float | None = None) -> list[dict[str, Any]]:
        sql = "SELECT data FROM resource_samples WHERE run_id=%s"
        args: list[Any] = [run_id]
        if since is not None:
            sql += " AND time >= %s"
            args.append(since)
        with self.db.read() as conn:
            rows = conn.execute(sql + " ORDER BY time, id", args).fetchall()
        return [json.loads(r[0]) for r in rows]

    # ── for the server: change feeds, scope checks, API tokens ───────────────
    def log_events_after(self, run_id: str, after: int, query: LogQuery) -> tuple[list[LogEvent], int]:
        """Events of the log chunks stored after chunk ``after`` (a cursor), and the new cursor."""
        conds, args = ["TRUE"], []
        if query.since is not None:
            conds.append("last_time >= %s")
            args.append(query.since)
        if query.min_level is not None:
            conds.append("max_level >= %s")
            args.append(query.min_level)
        sql = (f"SELECT id, CASE WHEN {' AND '.join(conds)} THEN data END FROM log_chunks "
               "WHERE run_id=%s AND id > %s ORDER BY id")
        pattern = compile_grep(query.grep) if query.grep else None
        deadline = self._deadline()
        with self.db.budgeted_read(deadline) as conn:
            rows = conn.execute(sql, [*args, run_id, after]).fetchall()
        events: list[LogEvent] = []
        last = after
        for chunk_id, data in rows:
            deadline.check()
            last = chunk_id
            if data is not None:
                events.extend(_matching(decode_log_chunk(data), query, pattern))
        events.sort(key=_event_time)
        return events, last

    def metric_points_after(self, run_id: str, after: int, names: Sequence[str] | None = None
                            ) -> tuple[dict[str, tuple[bytes, bytes, bytes]], int]:
        """New points per metric (little-endian steps, times, values) since chunk ``after``, and the new cursor."""
        with self.db.read() as conn:
            rows = conn.execute("SELECT id, name, steps, times, vals FROM metric_chunks WHERE run_id=%s AND id > %s "
                                "ORDER BY id", (run_id, after)).fetchall()
        wanted = set(names) if names else None
        parts: dict[str, list[tuple[bytes, bytes, bytes]]] = {}
        last = after
        for chunk_id, name, steps, times, vals in rows:
            last = chunk_id
            if wanted is None or name in wanted:
                parts.setdefault(name, []).append((steps, times, vals))
        return {name: (b"".join(p[0] for p in ps), b"".join(p[1] for p in ps), b"".join(p[2] for p in ps))
                for name, ps in parts.items()}, last

    def feed_cursors(self, run_id: str) -> tuple[int, int]:
        with self.db.read() as conn:
            logs = conn.execute("SELECT MAX(id) FROM log_chunks WHERE run_id=%s", (run_id,)).fetchone()[0]
            metrics = conn.execute("SELECT MAX(id) FROM metric_chunks WHERE run_id=%s", (run_id,)).fetchone()[0]
        return int(logs or 0), int(metrics or 0)

    def run_projects(self, run_ids: Sequence[str]) -> dict[str, str]:
        ids = list(dict.fromkeys(run_ids))
        if not ids:
            return {}
        with self.db.read() as conn:
            return dict(conn.execute("SELECT id, project FROM runs WHERE id = ANY(%s)", (ids,)).fetchall())

    def has_digest(self, sha256: str, project: str | None = None) -> bool:
        """Whether content with this digest is recorded (in ``project``, when given: an artifact
        of the project whose content is that uploaded blob, or an upload made for the project)."""
        with self.db.read() as conn:
            if project is None:
                return conn.execute("SELECT 1 FROM artifacts WHERE sha256=%s LIMIT 1", (sha256,)).fetchone() is not None
            if conn.execute("SELECT 1 FROM blob_projects WHERE sha256=%s AND project=%s", (sha256, project)).fetchone():
                return True
            return conn.execute(
                "SELECT 1 FROM artifacts a JOIN runs r ON r.id = a.run_id WHERE a.sha256=%s AND a.uri=%s AND r.project=%s "
                "LIMIT 1", (sha256, f"cas:sha256/{sha256}", project)).fetchone() is not None

    def grant_blob(self, sha256: str, project: str) -> None:
        """Record that ``project`` holds this content (its token uploaded it, hash checked)."""
        with self.db.write() as conn:
            conn.execute("INSERT INTO blob_projects(sha256, project) VALUES(%s, %s) ON CONFLICT DO NOTHING",
                         (sha256, project))

    def create_session(self, digest: str, token_id: str, expires: float) -> None:
        """Keep a web UI session (by the SHA-256 of its id); expired sessions are swept on the way."""
        now = time.time()
        with self.db.write() as conn:
            conn.execute("DELETE FROM sessions WHERE expires < %s", (now,))
            conn.execute("INSERT INTO sessions(hash, token_id, created, expires) VALUES(%s, %s, %s, %s)",
                         (digest, token_id, now, expires))

    def session_by_hash(self, digest: str) -> dict[str, Any] | None:
        """The token behind a live session (its row, plus the session's ``expires``), or None."""
        with self.db.read() as conn:
            row = conn.execute(f"SELECT {', '.join('t.' + c for c in _TOKEN_KEYS)}, s.expires FROM sessions s "
                               "JOIN tokens t ON t.id = s.token_id WHERE s.hash=%s", (digest,)).fetchone()
        if row is None:
            return None
        return {**_token_row(row[:-1]), "expires": row[-1]}

    def delete_session(self, digest: str) -> bool:
        with self.db.write() as conn:
            return int(conn.execute("DELETE FROM sessions WHERE hash=%s", (digest,)).rowcount) > 0

    def create_token(self, token_id: str, digest: str, role: str, project: str | None, name: str | None) -> None:
        with self.db.write() as conn:
            conn.execute("INSERT INTO tokens(id, hash, role, project, name, created) VALUES(%s, %s, %s, %s, %s, %s)",
                         (token_id, digest, role, project, name, time.time()))

    def token_by_hash(self, digest: str) -> dict[str, Any] | None:
        with self.db.read() as conn:
            row = conn.execute("SELECT id, role, project, name, created, last_used, revoked FROM tokens WHERE hash=%s",
                               (digest,)).fetchone()
        return None if row is None else _token_row(row)

    def tokens(self) -> list[dict[str, Any]]:
        with self.db.read() as conn:
            rows = conn.execute("SELECT id, role, project, name, created, last_used, revoked FROM tokens "
                                "ORDER BY created, id").fetchall()
        return [_token_row(r) for r in rows]

    def revoke_token(self, token_id: str) -> bool:
        with self.db.write() as conn:
            cur = conn.execute("UPDATE tokens SET revoked=COALESCE(revoked, %s) WHERE id=%s", (time.time(), token_id))
            return cur.rowcount > 0

    def touch_token(self, token_id: str, when: float) -> None:
        with self.db.write() as conn:
            conn.execute("UPDATE tokens SET last_used=%s WHERE id=%s", (when, token_id))

    # ── changes since a cursor (store/changes.py): the alert feed ─────────────
    def change_cursor(self) -> dict[str, int]:
        with self.db.read() as conn:
            return self._cursor(conn)

    @staticmethod
    def _cursor(conn: Any) -> dict[str, int]:
        row = conn.execute("SELECT " + ", ".join(f"(SELECT COALESCE(MAX(id), 0) FROM {t})" for t in FEED_TABLES)).fetchone()  # one statement: one snapshot
        return {t: int(v) for t, v in zip(FEED_TABLES, row, strict=True)}

    def changes(self, after: Cursor, upto: Cursor | None = None, *, run_id: str | None = None,
                metrics: bool = True, samples: bool = True, activity: bool = True,
                samples_since: float | None = None) -> Changes:
        with self.db.read() as conn:
            hi = dict(upto) if upto is not None else self._cursor(conn)

            def where(table: str) -> tuple[str, list[Any]]:
                sql = "id > %s AND id <= %s"
                args: list[Any] = [after[table], hi[table]]
                if run_id is not None:
                    sql, args = "run_id = %s AND " + sql, [run_id, *args]
                return sql, args

            out = Changes(hi)
            if metrics:
                w, a = where("metric_chunks")
                out.metric_chunks = conn.execute(
                    f"SELECT run_id, name, steps, times, vals FROM metric_chunks WHERE {w} ORDER BY id", a).fetchall()
            w, a = where("resource_samples")
            if samples_since is not None:
                w, a = w + " AND time >= %s", [*a, samples_since]
            if samples:
                out.samples = conn.execute(f"SELECT run_id, id, data FROM resource_samples WHERE {w}", a).fetchall()
            if activity:
                out.fresh = dict(conn.execute(
                    f"SELECT run_id, MAX(time) FROM resource_samples WHERE {w} GROUP BY run_id", a).fetchall())
                w, a = where("log_chunks")
                out.last_log = dict(conn.execute(
                    f"SELECT run_id, MAX(last_time) FROM log_chunks WHERE {w} GROUP BY run_id", a).fetchall())
        return out

    def feed_runs(self, *, run_id: str | None = None, updated_since: float | None = None) -> list[RunInfo]:
        with self.db.read() as conn:
            if run_id is not None:
                rows = conn.execute(f"SELECT {_RUN_COLUMNS} FROM runs WHERE id = %s", (run_id,)).fetchall()
            elif updated_since is None:
                rows = conn.execute(f"SELECT {_RUN_COLUMNS} FROM runs").fetchall()
            else:
                rows = conn.execute(
                    f"SELECT {_RUN_COLUMNS} FROM runs WHERE status IN ('created','queued','running') OR updated >= %s",
                    (updated_since,)).fetchall()
        return [run_row(r) for r in rows]

    def run_labels(self, run_ids: Sequence[str]) -> dict[str, tuple[dict[str, Any], dict[str, str]]]:
        out: dict[str, tuple[dict[str, Any], dict[str, str]]] = {rid: ({}, {}) for rid in run_ids}
        ids = list(out)
        with self.db.read() as conn:
            for rid, key, value, kind in conn.execute(
                    "SELECT run_id, key, value, kind FROM params WHERE run_id = ANY(%s)", (ids,)):
                out[rid][0][key] = param_value(value, kind)
            for rid, key, value in conn.execute("SELECT run_id, key, value FROM tags WHERE run_id = ANY(%s)", (ids,)):
                out[rid][1][key] = value
        return out
