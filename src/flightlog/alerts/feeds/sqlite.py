"""The live feed over the embedded SQLite store: new points since the last cycle, by row id.

Why row ids: chunk, sample and log rows get increasing ids in commit order (one writer at a
time), so ``lo < id <= hi`` (``hi`` read first) is exactly what was committed since the last
cycle — a cycle costs in proportion to what is new, never to a run's history. Data rows are
read before the runs table, so every row read belongs to a run this cycle knows about.
Resource samples are not decoded in Python: SQLite's JSON functions hand over only the fields
the rules watch (``json_each`` for the GPUs).

Two modes: one run (the runner watching its own run; cursors start at 0) or every run (the
server, ``flightlog alerts watch``; cursors start at the newest rows, and what a run first seen
had written before is read once: its metric history and its last ``lookback`` of samples).
"""

from __future__ import annotations

import json
import sys
import time
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from flightlog.alerts.delta import ColumnBuilder, Cycle, Needs, RunDelta
from flightlog.alerts.feeds.base import NeedsFor
from flightlog.alerts.feeds.samples import SampleDecoder
from flightlog.alerts.series import SampleTable, fields_of, resource_columns
from flightlog.models import TERMINAL_STATUSES, RunInfo
from flightlog.records import param_value

__all__ = ["SqliteFeed"]

_RUN_COLUMNS = ("id, project, name, parent_id, status, end_reason, created, queued, started, ended, exit_code, "
                "signal, attempt, host, pid, timeline, updated")
_ACTIVE = "('created','queued','running')"
_TABLES = ("metric_chunks", "resource_samples", "log_chunks")
assert sys.byteorder in ("little", "big")


def _run(r: Any) -> RunInfo:
    return RunInfo(id=r[0], project=r[1], name=r[2], parent_id=r[3], status=r[4], end_reason=r[5], created=r[6],
                   queued=r[7], started=r[8], ended=r[9], exit_code=r[10], signal=r[11], attempt=r[12], host=r[13],
                   pid=r[14], updated=r[16])


class SqliteFeed:
    def __init__(self, store: Any, *, run_id: str | None = None, lookback: float = 600.0,
                 started: float | None = None, refresh: float = 60.0) -> None:
        self.db = store.db
        self.run_id = run_id
        self.lookback = lookback
        self.started = time.time() if started is None else started
        self.refresh = refresh
        self.active: dict[str, RunInfo] = {}
        self._done: OrderedDict[str, None] = OrderedDict()
        self._meta_at: dict[str, float] = {}
        self._lo: dict[str, int] | None = None
        self._initial: dict[str, int] = {}
        self._runs_since: float | None = None
        self._seen: set[str] = set()
        self._heartbeat: dict[str, float] = {}
        self._decoder: tuple[Any, SampleDecoder] | None = None

    def close(self) -> None:
        pass

    # ── one cycle ───────────────────────────────────────────────────────────
    def poll(self, now: float, needs_for: NeedsFor, wanted: Needs | None = None) -> Cycle:
        wanted = wanted or Needs(all_metrics=True, activity=True)
        host_fields, gpu_fields = fields_of(sorted(wanted.resources))
        with self.db.read() as conn:
            hi = {t: int(conn.execute(f"SELECT COALESCE(MAX(id), 0) FROM {t}").fetchone()[0]) for t in _TABLES}
            if self._lo is None:
                self._lo = {t: 0 for t in _TABLES} if self.run_id is not None else dict(hi)
                self._initial = dict(self._lo)
            lo = self._lo
            where, args = self._range("metric_chunks", lo, hi)
            chunks = conn.execute(f"SELECT run_id, name, steps, times, vals FROM metric_chunks WHERE {where} ORDER BY id",
                                  args).fetchall() if wanted.metrics or wanted.all_metrics else []
            samples = self._samples(conn, *self._range("resource_samples", lo, hi, "s."), host_fields, gpu_fields)
            logs = self._logs(conn, *self._range("log_chunks", lo, hi)) if wanted.activity else {}
            fresh = self._fresh(conn, *self._range("resource_samples", lo, hi)) if wanted.activity else {}
            self._lo = hi
            runs, finished, late = self._runs(conn, now)
            self._load_meta(conn, [r for r in runs if now - self._meta_at.get(r.id, -1e18) >= self.refresh
                                   or r.id in finished], now)
            first_seen = [r.id for r in runs if r.id not in self._seen] if self.run_id is None else []
            if first_seen:
                old = self._catch_up(conn, first_seen, wanted, host_fields, gpu_fields)
                chunks = old[0] + chunks
                old[1].extend(samples)
                samples = old[1]
                for rid, t in old[2].items():
                    logs[rid] = max(t, logs.get(rid, t))
        runs.sort(key=lambda r: (r.id in finished, r.ended or 0.0))  # runs that ended: in the order they ended
        cycle = Cycle()
        for r in runs:
            d = cycle.runs[r.id] = RunDelta(r, frozenset(), finished=r.id in finished, late=r.id in late)
            d.last_log = logs.get(r.id)
            d.heartbeat = self._heartbeat.get(r.id)
            d.fresh = fresh.get(r.id)
        self._metric_columns(cycle, chunks, needs_for)
        if len(samples):
            cycle.resources = resource_columns(sorted(wanted.resources), samples.keep_runs(cycle.runs))
        for rid in finished:
            self.active.pop(rid, None)
            self._meta_at.pop(rid, None)
            self._heartbeat.pop(rid, None)
            self._seen.discard(rid)
            self._done[rid] = None
        self._seen.update(r.id for r in runs if r.id not in finished)
        while len(self._done) > 100_000:
            self._done.popitem(last=False)
        return cycle

    # ── reading ─────────────────────────────────────────────────────────────
    def _range(self, table: str, lo: dict[str, int], hi: dict[str, int], alias: str = "") -> tuple[str, list[Any]]:
        where = f"{alias}id > ? AND {alias}id <= ?"
        args: list[Any] = [lo[table], hi[table]]
        if self.run_id is not None:
            where = f"{alias}run_id = ? AND " + where
            args.insert(0, self.run_id)
        return where, args

    def _samples(self, conn: Any, where: str, args: list[Any], host_fields: Sequence[str],
                 gpu_fields: Sequence[str]) -> SampleTable:
        if not host_fields and not gpu_fields:
            return SampleTable([], [])
        key = (tuple(host_fields), tuple(gpu_fields))
        if self._decoder is None or self._decoder[0] != key:
            self._decoder = (key, SampleDecoder(host_fields, gpu_fields))
        records = conn.execute(f"SELECT s.run_id, s.id, s.data FROM resource_samples s WHERE {where}", args).fetchall()
        return self._decoder[1].table(records)

    def _logs(self, conn: Any, where: str, args: list[Any]) -> dict[str, float]:
        rows = conn.execute(f"SELECT run_id, MAX(last_time) FROM log_chunks WHERE {where} GROUP BY run_id", args)
        return {r[0]: r[1] for r in rows}

    def _fresh(self, conn: Any, where: str, args: list[Any]) -> dict[str, float]:
        rows = conn.execute(f"SELECT run_id, MAX(time) FROM resource_samples WHERE {where} GROUP BY run_id", args)
        return {r[0]: r[1] for r in rows}

    def _runs(self, conn: Any, now: float) -> tuple[list[RunInfo], set[str], set[str]]:
        if self.run_id is not None:
            rows = conn.execute(f"SELECT {_RUN_COLUMNS} FROM runs WHERE id = ?", (self.run_id,)).fetchall()
        else:
            since = (self._runs_since if self._runs_since is not None else self.started - self.lookback) - 2.0
            rows = conn.execute(f"SELECT {_RUN_COLUMNS} FROM runs WHERE status IN {_ACTIVE} OR updated >= ?",
                                (since,)).fetchall()
            self._runs_since = time.time()  # `updated` is the store's wall clock, whatever `now` says
        out: list[RunInfo] = []
        finished: set[str] = set()
        late: set[str] = set()
        for r in rows:
            rid = r[0]
            if rid in self._done:
                continue
            known = self.active.get(rid)
            info = _run(r)
            if r[15] and "heartbeat" in r[15]:
                self._note_heartbeat(rid, r[15])
            if known is not None:
                info.params, info.tags = known.params, known.tags
            if info.status in TERMINAL_STATUSES:
                if known is None:
                    if info.ended is None or info.ended < self.started - self.lookback:
                        self._done[rid] = None
                        continue
                    late.add(rid)
                finished.add(rid)
            else:
                self.active[rid] = info
            out.append(info)
        return out, finished, late

    def _note_heartbeat(self, run_id: str, timeline: str) -> None:
        try:
            value = json.loads(timeline).get("heartbeat")
        except ValueError:
            return
        if isinstance(value, (int, float)):
            self._heartbeat[run_id] = float(value)

    def _load_meta(self, conn: Any, runs: list[RunInfo], now: float) -> None:
        by_id = {r.id: r for r in runs}
        ids = list(by_id)
        for start in range(0, len(ids), 500):
            part = ids[start : start + 500]
            marks = ",".join("?" * len(part))
            params: dict[str, dict[str, Any]] = {rid: {} for rid in part}
            tags: dict[str, dict[str, str]] = {rid: {} for rid in part}
            for rid, key, value, kind in conn.execute(
                    f"SELECT run_id, key, value, kind FROM params WHERE run_id IN ({marks})", part):
                params[rid][key] = param_value(value, kind)
            for rid, key, value in conn.execute(f"SELECT run_id, key, value FROM tags WHERE run_id IN ({marks})", part):
                tags[rid][key] = value
            for rid in part:
                by_id[rid].params, by_id[rid].tags = params[rid], tags[rid]
                if rid in self.active:
                    self.active[rid].params, self.active[rid].tags = params[rid], tags[rid]
                self._meta_at[rid] = now

    def _catch_up(self, conn: Any, run_ids: list[str], wanted: Needs, host_fields: Sequence[str],
                  gpu_fields: Sequence[str]) -> tuple[list[Any], SampleTable, dict[str, float]]:
        """What runs first seen now wrote before this feed's first cycle: read once."""
        chunks: list[Any] = []
        samples = SampleTable(list(host_fields), list(gpu_fields))
        logs: dict[str, float] = {}
        first = self._initial
        for rid in run_ids:
            if wanted.metrics or wanted.all_metrics:
                chunks += conn.execute("SELECT run_id, name, steps, times, vals FROM metric_chunks "
                                       "WHERE run_id = ? AND id <= ? ORDER BY id", (rid, first["metric_chunks"])).fetchall()
            if host_fields or gpu_fields:
                samples.extend(self._samples(conn, "s.run_id = ? AND s.time >= ? AND s.id <= ?",
                                             [rid, self.started - self.lookback, first["resource_samples"]],
                                             host_fields, gpu_fields))
            if wanted.activity:
                newest = conn.execute("SELECT MAX(last_time) FROM log_chunks WHERE run_id = ? AND id <= ?",
                                      (rid, first["log_chunks"])).fetchone()[0]
                if newest is not None:
                    logs[rid] = newest
        return chunks, samples, logs

    # ── turning rows into columns ───────────────────────────────────────────
    def _metric_columns(self, cycle: Cycle, rows: list[Any], needs_for: NeedsFor) -> None:
        builders: dict[str, ColumnBuilder] = {}
        wants: dict[str, Needs] = {}
        for rid, name, steps, times, vals in rows:
            d = cycle.runs.get(rid)
            if d is None:
                continue
            n = wants.get(rid)
            if n is None:
                n = wants[rid] = needs_for(d.run)
            if not n.wants_metric(name):
                continue
            b = builders.get(name)
            if b is None:
                b = builders[name] = ColumnBuilder()
            b.add((rid, ()), times, vals, steps)
        cycle.metrics = {name: b.build(with_steps=True) for name, b in builders.items()}

