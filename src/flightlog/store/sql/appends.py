"""The append kinds of a write transaction (metric chunks, log chunks, resource samples), written
together: one statement per table for every record of those kinds in the transaction.

Why: a store takes batches from many writers at once (a server's concurrent requests are applied
in one transaction, ``server/ingestqueue.py``), and each batch holds a metrics record, a logs
record and maybe resource samples. Applied one record at a time that is a statement per row and,
on PostgreSQL, a round trip per statement; written together it is one ``COPY`` (or one
``executemany``, which psycopg pipelines) per table, and the per-run bookkeeping (series
summaries, the run's first and last metric, each writer's last step) one pipelined statement
each. The results are the same as applying the records one by one in order: the summaries and
last steps are applied in record order, and a run's timeline merge takes the earliest first and
the latest last of its records, which is what applying them in turn would leave.

``store/sql/ingest.py`` decides what comes here: the records of these kinds between two records
of other kinds, flushed before the next of those, so the order of a writer's batch holds (a run's
end after its last points). A broken record fails the whole flush; the caller then applies the
transaction again one record at a time, each in its own savepoint (see ingest.py).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from flightlog.schema.values import decode_series, series_summary
from flightlog.store.sql.dialect import Dialect
from flightlog.store.sql.ranks import note_first_errors
from flightlog.store.sql.timelines import known, merge_instants, note

__all__ = [
    "APPEND_KINDS",
    "Appends",
    "metric_rows",
    "METRIC_CHUNK_COLUMNS",
    "LOG_CHUNK_COLUMNS",
    "SAMPLE_COLUMNS",
    "LAST_STEP_SQL",
]

APPEND_KINDS = frozenset({"metrics", "logs", "resources"})
METRIC_CHUNK_COLUMNS = ("run_id", "name", "writer", "attempt", "n", "first_step", "last_step", "steps", "times", "vals")
LOG_CHUNK_COLUMNS = ("run_id", "writer", "n", "first_time", "last_time", "max_level", "attempts", "data")
SAMPLE_COLUMNS = ("run_id", "writer", "time", "data")
LAST_STEP_SQL = (
    "UPDATE run_writers SET last_step=?, last_step_time=? WHERE run_id=? AND writer=? "
    "AND (last_step IS NULL OR last_step <= ?)"
)


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), default=repr, allow_nan=True)


def _finite_or_none(value: float | None) -> float | None:
    return None if value is None or (isinstance(value, float) and value != value) else value


def metric_rows(
    rec: dict[str, Any], rank: int | None
) -> tuple[list[tuple[Any, ...]], list[dict[str, Any]], float | None, float | None]:
    """A metrics record's chunk rows, its series summaries, and its first and last point times."""
    run_id, writer, attempt = rec["r"], rec["w"], rec.get("attempt", 1)
    chunks: list[tuple[Any, ...]] = []
    summaries: list[dict[str, Any]] = []
    first_time = last_time = None
    for name, encoded in rec["series"].items():
        steps, times, values = decode_series(encoded)
        if not len(steps):
            continue
        summary = series_summary(steps, times, values)
        summary["last_value"] = _finite_or_none(summary["last_value"])
        chunks.append(
            (
                run_id,
                name,
                writer,
                attempt,
                len(steps),
                summary["first_step"],
                summary["last_step"],
                *(bytes(part) for part in encoded),
            )
        )
        summaries.append({"run": run_id, "name": name, **summary, "last_rank": rank})
        first_time = summary["first_time"] if first_time is None else min(first_time, summary["first_time"])
        last_time = summary["last_time"] if last_time is None else max(last_time, summary["last_time"])
    return chunks, summaries, first_time, last_time


_PART = 500  # values per ``IN (…)``: well under SQLite's limit of bound variables


def _parts(values: list[str]) -> list[list[str]]:
    return [values[i : i + _PART] for i in range(0, len(values), _PART)]


def _write_timelines(conn: Any, updates: dict[str, dict[str, float]], stored: dict[str, str | None]) -> None:
    """The runs' stored timelines (``stored``, as read or remembered in this transaction) merged
    with their new instants, written in one pipelined statement (and remembered: timelines.py)."""
    if not updates:
        return
    rows = []
    for run_id, instants in updates.items():
        text = stored.get(run_id)
        current: dict[str, float] = json.loads(text) if text else {}
        merge_instants(current, instants)
        merged = _dumps(current)
        note(run_id, merged)
        rows.append((merged, run_id))
    conn.cursor().executemany("UPDATE runs SET timeline=? WHERE id=?", rows)


class Appends:
    """Records of the append kinds, held until :meth:`flush` writes them together."""

    def __init__(self) -> None:
        self.metrics: list[dict[str, Any]] = []
        self.logs: list[dict[str, Any]] = []
        self.samples: list[dict[str, Any]] = []

    def __bool__(self) -> bool:
        return bool(self.metrics or self.logs or self.samples)

    def add(self, rec: dict[str, Any]) -> None:
        kind = rec["k"]
        (self.metrics if kind == "metrics" else self.logs if kind == "logs" else self.samples).append(rec)

    def flush(self, conn: Any, d: Dialect) -> None:
        if self.metrics:
            _write_metrics(conn, self.metrics, d)
        if self.logs:
            d.append_rows(
                conn,
                "log_chunks",
                LOG_CHUNK_COLUMNS,
                [
                    (r["r"], r["w"], r["n"], r["t0"], r["t1"], r["maxlvl"], r["attempts"], bytes(r["data"]))
                    for r in self.logs
                ],
            )
            for rec in self.logs:
                note_first_errors(conn, rec)  # a no-op without an error event (the chunk says its level)
        if self.samples:
            d.append_rows(
                conn,
                "resource_samples",
                SAMPLE_COLUMNS,
                [(r["r"], r["w"], s.get("time", r["t"]), _dumps(s)) for r in self.samples for s in r["samples"]],
            )
        self.metrics, self.logs, self.samples = [], [], []


def _write_metrics(conn: Any, records: Sequence[dict[str, Any]], d: Dialect) -> None:
    run_ids = sorted({rec["r"] for rec in records})
    # both reads sent before either is waited for: one round trip in PostgreSQL's pipeline mode
    rank_reads = _read_parts(conn, "SELECT run_id, writer, rank FROM run_writers", "run_id", run_ids, d)
    stored = known(run_ids)  # a timeline this transaction already read or wrote is not read again
    unknown = [run_id for run_id in run_ids if run_id not in stored]
    timeline_reads = _read_parts(conn, "SELECT id, timeline FROM runs", "id", unknown, d) if unknown else []
    ranks: dict[tuple[str, str], int | None] = {(r, w): rank for cur in rank_reads for r, w, rank in cur.fetchall()}
    stored.update({run_id: text for cur in timeline_reads for run_id, text in cur.fetchall()})
    chunks: list[tuple[Any, ...]] = []
    summaries: list[dict[str, Any]] = []
    timelines: dict[str, dict[str, float]] = {}
    last_steps: list[tuple[Any, ...]] = []
    for rec in records:
        run_id, writer = rec["r"], rec["w"]
        rows, sums, first_time, last_time = metric_rows(rec, ranks.get((run_id, writer)))
        chunks += rows
        summaries += sums
        if first_time is not None and last_time is not None:
            merge_instants(timelines.setdefault(run_id, {}), {"first_metric": first_time, "last_metric": last_time})
        if sums:  # the writer's (its rank's) last step, applied in record order as one at a time would
            step = max(int(s["last_step"]) for s in sums)
            last_steps.append((step, float(last_time or rec["t"]), run_id, writer, step))
    if chunks:
        d.append_rows(conn, "metric_chunks", METRIC_CHUNK_COLUMNS, chunks)
        conn.cursor().executemany(d.series_upsert, summaries)
    _write_timelines(conn, timelines, stored)
    if last_steps:
        conn.cursor().executemany(LAST_STEP_SQL, last_steps)


def _read_parts(conn: Any, select: str, column: str, values: list[str], d: Dialect) -> list[Any]:
    """``select`` of the rows whose ``column`` is one of ``values``, sent (a cursor per part of
    ``_PART`` values) and not yet waited for."""
    cursors = []
    for part in _parts(values):
        where, args = d.any_of(column, part)
        cursors.append(conn.execute(f"{select} WHERE {where}", args))
    return cursors
