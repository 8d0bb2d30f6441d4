"""The live feed over a store: new points since the last cycle, by a cursor of row ids.

It reads only "changes since a cursor" (``store/changes.py``), which every SQL store
implements, so the same feed watches the embedded SQLite store and a shared PostgreSQL one.
A cycle costs in proportion to what is new, never to a run's history. Data rows are read
before the runs, so every row read belongs to a run this cycle knows about.

Two modes: one run (the runner watching its own run; cursors start at 0) or every run (the
server, ``flightlog alerts watch``; cursors start at the newest rows, and what a run first seen
had written before is read once: its metric history and its last ``lookback`` of samples).

A run's end is taken only once its last rows can have been read (every run): on PostgreSQL the
window ends at the oldest transaction still running, so a run whose end committed while an
older transaction of any writer was open shows its end in the runs table a cycle or more
before its last points come in the window. Ended at once, it was done with, and those points
were dropped as a finished run's (a NaN never alerted on). Its end waits for the store's
``change_horizon`` as it was when the end was seen.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from flightlog.alerts.delta import ColumnBuilder, Cycle, Needs, RunDelta
from flightlog.alerts.feeds.base import NeedsFor
from flightlog.alerts.feeds.samples import SampleDecoder
from flightlog.alerts.series import SampleTable, fields_of, resource_columns
from flightlog.errors import InvalidInput
from flightlog.models import TERMINAL_STATUSES, RunInfo
from flightlog.store.changes import FEED_TABLES, ChangeFeedStore

__all__ = ["StoreFeed", "feeds_changes"]


def feeds_changes(store: Any) -> bool:
    """Whether ``store`` can tell what changed since a cursor (every SQL store can; a server's
    HTTP API cannot: the server evaluates the runs that report to it)."""
    return all(callable(getattr(store, m, None)) for m in ("change_cursor", "changes", "feed_runs", "run_labels"))


class StoreFeed:
    def __init__(
        self,
        store: Any,
        *,
        run_id: str | None = None,
        lookback: float = 600.0,
        started: float | None = None,
        refresh: float = 60.0,
    ) -> None:
        if not feeds_changes(store):
            raise InvalidInput(
                f"live alert evaluation needs a store that reports its changes; {type(store).__name__} "
                "does not (a flightlog server evaluates the runs that report to it)"
            )
        self.store: ChangeFeedStore = store
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
        #: runs seen ended whose last rows may not be in a window read yet: the horizon to wait for
        self._ending: dict[str, dict[str, int]] = {}

    def close(self) -> None:
        pass

    @property
    def settling(self) -> bool:
        """Whether a run seen ended waits for its last rows (``flightlog run``'s last evaluation
        goes on a few cycles while it does)."""
        return bool(self._ending)

    # ── one cycle ───────────────────────────────────────────────────────────
    def poll(self, now: float, needs_for: NeedsFor, wanted: Needs | None = None) -> Cycle:
        wanted = wanted or Needs(all_metrics=True, activity=True)
        host_fields, gpu_fields = fields_of(sorted(wanted.resources))
        if self._lo is None:
            self._lo = {t: 0 for t in FEED_TABLES} if self.run_id is not None else self.store.change_cursor()
            self._initial = dict(self._lo)
        new = self.store.changes(
            self._lo,
            run_id=self.run_id,
            metrics=bool(wanted.metrics or wanted.all_metrics),
            samples=bool(host_fields or gpu_fields),
            activity=wanted.activity,
        )
        self._lo = new.cursor
        chunks = list(new.metric_chunks)
        samples = self._table(new.samples, host_fields, gpu_fields)
        logs, fresh = dict(new.last_log), new.fresh
        runs, finished, late = self._runs(now)
        self._load_meta(
            [r for r in runs if now - self._meta_at.get(r.id, -1e18) >= self.refresh or r.id in finished], now
        )
        first_seen = [r.id for r in runs if r.id not in self._seen] if self.run_id is None else []
        if first_seen:
            old = self._catch_up(first_seen, wanted, host_fields, gpu_fields)
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
    def _table(
        self, records: Sequence[tuple[str, int, Any]], host_fields: Sequence[str], gpu_fields: Sequence[str]
    ) -> SampleTable:
        if not host_fields and not gpu_fields:
            return SampleTable([], [])
        key = (tuple(host_fields), tuple(gpu_fields))
        if self._decoder is None or self._decoder[0] != key:
            self._decoder = (key, SampleDecoder(host_fields, gpu_fields))
        return self._decoder[1].table(records)

    def _runs(self, now: float) -> tuple[list[RunInfo], set[str], set[str]]:
        if self.run_id is not None:
            found = self.store.feed_runs(run_id=self.run_id)
        else:
            since = (self._runs_since if self._runs_since is not None else self.started - self.lookback) - 2.0
            found = self.store.feed_runs(updated_since=since)
            self._runs_since = time.time()  # `updated` is the store's wall clock, whatever `now` says
            listed = {info.id for info in found}
            for rid in [r for r in self._ending if r not in listed]:  # ended longer ago than `since`
                again = self.store.feed_runs(run_id=rid)
                if not again:  # deleted meanwhile
                    del self._ending[rid]
                found += again
        out: list[RunInfo] = []
        finished: set[str] = set()
        late: set[str] = set()
        horizon: dict[str, int] | None = None
        for info in found:
            rid = info.id
            if rid in self._done:
                continue
            known = self.active.get(rid)
            beat = info.timeline.get("heartbeat") if info.timeline else None
            if isinstance(beat, (int, float)):
                self._heartbeat[rid] = float(beat)
            if known is not None:
                info.params, info.tags = known.params, known.tags
            if info.status in TERMINAL_STATUSES:
                if known is None:
                    if rid not in self._ending and (info.ended is None or info.ended < self.started - self.lookback):
                        self._done[rid] = None
                        continue
                    late.add(rid)
                if rid not in self._ending:
                    horizon = horizon if horizon is not None else self._horizon()
                    self._ending[rid] = horizon
                if self._read_up_to(self._ending[rid]):
                    del self._ending[rid]
                    finished.add(rid)
                # else: judged as it stands, not yet as ended (its last rows are still to come)
            else:
                self.active[rid] = info
            out.append(info)
        return out, finished, late

    def _horizon(self) -> dict[str, int]:
        """What the window must reach before a run seen ended now is taken as ended: the store's
        horizon (nothing where the store cannot say: ended at once, as before)."""
        read = getattr(self.store, "change_horizon", None)
        return {} if read is None else dict(read())

    def _read_up_to(self, horizon: dict[str, int]) -> bool:
        assert self._lo is not None
        return all(self._lo.get(table, 0) >= mark for table, mark in horizon.items())

    def _load_meta(self, runs: list[RunInfo], now: float) -> None:
        if not runs:
            return
        labels = self.store.run_labels([r.id for r in runs])
        for r in runs:
            r.params, r.tags = labels.get(r.id, ({}, {}))
            if r.id in self.active:
                self.active[r.id].params, self.active[r.id].tags = r.params, r.tags
            self._meta_at[r.id] = now

    def _catch_up(
        self, run_ids: list[str], wanted: Needs, host_fields: Sequence[str], gpu_fields: Sequence[str]
    ) -> tuple[list[Any], SampleTable, dict[str, float]]:
        """What runs first seen now wrote before this feed's first cycle: read once."""
        chunks: list[Any] = []
        samples = SampleTable(list(host_fields), list(gpu_fields))
        logs: dict[str, float] = {}
        start = {t: 0 for t in FEED_TABLES}
        for rid in run_ids:
            old = self.store.changes(
                start,
                self._initial,
                run_id=rid,
                metrics=bool(wanted.metrics or wanted.all_metrics),
                samples=bool(host_fields or gpu_fields),
                activity=wanted.activity,
                samples_since=self.started - self.lookback,
            )
            chunks += old.metric_chunks
            if host_fields or gpu_fields:
                samples.extend(self._table(old.samples, host_fields, gpu_fields))
            if rid in old.last_log:
                logs[rid] = old.last_log[rid]
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
