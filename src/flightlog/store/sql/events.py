"""The SQL store's reads of a run's events: metric series, logs, stages, resource samples, ranks.

Apart from ``details.py`` because these are the run's long records, stored as chunks (columnar
series, log chunks, one row per sample or span) and read with what that takes: one rank's
chunks of a distributed run (``rankview.py``), logs filtered chunk by chunk under the query
deadline, stage statistics merged over writers. The live stream of the same chunks, by cursor,
is ``streams.py``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from flightlog.errors import NotFound
from flightlog.models import (
    TERMINAL_STATUSES,
    LogEvent,
    LogQuery,
    MetricHistory,
    MetricSummary,
    RankInfo,
    Span,
    StageSummary,
)
from flightlog.schema.values import decode_log_chunk
from flightlog.store.sql.core import SqlCore
from flightlog.store.sql.logmatch import event_time, matching
from flightlog.store.sql.rankview import RANK_COLUMNS, hung_ranks, rank_infos, rank_writers
from flightlog.store.sql.rows import metric_summary

__all__ = ["SqlEvents", "merge_stages"]


class SqlEvents(SqlCore):
    def metric_summaries(self, run_id: str) -> dict[str, MetricSummary]:
        with self.db.read() as conn:
            rows = conn.execute(
                "SELECT name, count, nonfinite, min, max, last_value, last_step, first_step, first_time, last_time "
                f"FROM metric_series WHERE run_id=? ORDER BY name{self.dialect.collate}",
                (run_id,),
            ).fetchall()
        return {r[0]: metric_summary(r) for r in rows}

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
        pattern = None
        if query.grep:
            # cost: the query language (and re2) is imported by a grep, not by every store's opening
            from flightlog.query.regex import compile_grep

            pattern = compile_grep(query.grep)
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
                    events.sort(key=event_time)
                    if backwards and last_time < events[-limit].time:
                        break
                    if not backwards and first_time > events[limit - 1].time:
                        break
                chunk = list(matching(decode_log_chunk(data), query, pattern, ranks.get(writer)))
                if backwards:
                    chunks.append(chunk)
                events.extend(chunk)
        # events of one time keep the order they were written in (a traceback's lines and the
        # exception line after them often share one read's time): a stable sort by time over the
        # chunks in write order. A forward read met them in that order already (a sort while
        # reading is stable too); a backward read met the newest chunk first
        if backwards:
            events = [e for chunk in reversed(chunks) for e in chunk]
        events.sort(key=event_time)
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
