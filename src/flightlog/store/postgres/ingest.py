"""Applying journal records to the PostgreSQL schema, one small function per record kind.

The same rules as ``store/sqlite/ingest.py``: one transaction per batch, a (run, writer)
high-water mark in ``ingested`` that makes a replay change nothing, an unknown or broken record
skipped and reported (rolled back to a savepoint) without blocking the ones after it. The
batch runs under the ingest lock (``connection.INGEST_LOCK``), so two servers given the same
batch at once apply it once: the second sees the first's high-water mark.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Sequence
from typing import Any

from flightlog.records import decode_series, param_columns, series_summary
from flightlog.store.base import IngestResult

__all__ = ["apply_records", "dumps", "finite_or_none"]

Apply = Callable[[Any, dict[str, Any]], None]

_RUN_FIELDS = ("project", "name", "parent_id", "status", "end_reason", "created", "queued", "started", "ended",
               "exit_code", "signal", "attempt", "host", "pid", "owner")


def dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), default=repr, allow_nan=True)


def finite_or_none(value: float | None) -> float | None:
    """NaN → NULL, as SQLite stores it (see migrations.py)."""
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else value


def _ensure_run(conn: Any, run_id: str, rec: dict[str, Any]) -> None:
    conn.execute(
        "INSERT INTO runs(id, project, status, created, updated) VALUES(%s, %s, 'created', %s, %s) "
        "ON CONFLICT (id) DO NOTHING",
        (run_id, rec.get("project") or "default", rec.get("t"), rec.get("t")),
    )


def _apply_run(conn: Any, rec: dict[str, Any]) -> None:
    fields = {k: rec[k] for k in _RUN_FIELDS if k in rec}
    if "project" in fields:
        conn.execute("INSERT INTO projects(name, created) VALUES(%s, %s) ON CONFLICT (name) DO NOTHING",
                     (fields["project"], rec["t"]))
    if "failure" in rec:
        fields["failure"] = dumps(rec["failure"]) if rec["failure"] is not None else None
    if fields:
        sets = ", ".join(f"{k}=%s" for k in fields)
        conn.execute(f"UPDATE runs SET {sets} WHERE id=%s", (*fields.values(), rec["r"]))
    if rec.get("timeline"):
        merge_timeline(conn, rec["r"], rec["timeline"])


def merge_timeline(conn: Any, run_id: str, instants: dict[str, float]) -> None:
    row = conn.execute("SELECT timeline FROM runs WHERE id=%s", (run_id,)).fetchone()
    current: dict[str, float] = json.loads(row[0]) if row and row[0] else {}
    for key, value in instants.items():
        old = current.get(key)
        if old is None:
            current[key] = value
        elif key.startswith("first_"):
            current[key] = min(old, value)
        elif key.startswith("last_"):
            current[key] = max(old, value)
        else:
            current[key] = value
    conn.execute("UPDATE runs SET timeline=%s WHERE id=%s", (dumps(current), run_id))


def _apply_timeline(conn: Any, rec: dict[str, Any]) -> None:
    merge_timeline(conn, rec["r"], rec["data"])


def _apply_params(conn: Any, rec: dict[str, Any]) -> None:
    rows = []
    for key, value in rec["data"].items():
        text, num, kind = param_columns(value)
        rows.append((rec["r"], key, text, finite_or_none(num), kind))
    conn.cursor().executemany(
        "INSERT INTO params(run_id, key, value, num, kind) VALUES(%s, %s, %s, %s, %s) "
        "ON CONFLICT(run_id, key) DO UPDATE SET value=excluded.value, num=excluded.num, kind=excluded.kind",
        rows,
    )


def _apply_tags(conn: Any, rec: dict[str, Any]) -> None:
    upserts = [(rec["r"], key, str(value)) for key, value in rec["data"].items() if value is not None]
    removals = [(rec["r"], key) for key, value in rec["data"].items() if value is None]
    if upserts:
        conn.cursor().executemany(
            "INSERT INTO tags(run_id, key, value) VALUES(%s, %s, %s) "
            "ON CONFLICT(run_id, key) DO UPDATE SET value=excluded.value",
            upserts,
        )
    if removals:  # a tag set to null is removed (``flightlog runs edit --untag``, ``run.remove_tags``)
        conn.cursor().executemany("DELETE FROM tags WHERE run_id=%s AND key=%s", removals)


def _apply_note(conn: Any, rec: dict[str, Any]) -> None:
    conn.execute("INSERT INTO notes(run_id, time, author, text) VALUES(%s, %s, %s, %s)",
                 (rec["r"], rec["t"], rec.get("author"), rec["text"]))


def _apply_context(conn: Any, rec: dict[str, Any]) -> None:
    conn.execute(
        "INSERT INTO context(run_id, writer, data) VALUES(%s, %s, %s) "
        "ON CONFLICT(run_id, writer) DO UPDATE SET data=excluded.data",
        (rec["r"], rec["w"], dumps(rec["data"])),
    )


_SERIES_UPSERT = """
INSERT INTO metric_series AS m (run_id, name, count, nonfinite, min, max, first_step, last_step,
                                last_value, first_time, last_time)
VALUES(%(run)s, %(name)s, %(count)s, %(nonfinite)s, %(min)s, %(max)s, %(first_step)s, %(last_step)s,
       %(last_value)s, %(first_time)s, %(last_time)s)
ON CONFLICT(run_id, name) DO UPDATE SET
  count = m.count + excluded.count,
  nonfinite = m.nonfinite + excluded.nonfinite,
  min = LEAST(m.min, excluded.min),
  max = GREATEST(m.max, excluded.max),
  first_step = LEAST(m.first_step, excluded.first_step),
  last_value = CASE WHEN excluded.last_step >= m.last_step THEN excluded.last_value ELSE m.last_value END,
  last_step = GREATEST(m.last_step, excluded.last_step),
  first_time = LEAST(m.first_time, excluded.first_time),
  last_time = GREATEST(m.last_time, excluded.last_time)
"""


def _apply_metrics(conn: Any, rec: dict[str, Any]) -> None:
    run_id, writer, attempt = rec["r"], rec["w"], rec.get("attempt", 1)
    chunks, summaries = [], []
    first_time = last_time = None
    for name, encoded in rec["series"].items():
        steps, times, values = decode_series(encoded)
        if not len(steps):
            continue
        summary = series_summary(steps, times, values)
        summary["last_value"] = finite_or_none(summary["last_value"])
        chunks.append((run_id, name, writer, attempt, len(steps), summary["first_step"], summary["last_step"],
                       *(bytes(part) for part in encoded)))
        summaries.append({"run": run_id, "name": name, **summary})
        first_time = summary["first_time"] if first_time is None else min(first_time, summary["first_time"])
        last_time = summary["last_time"] if last_time is None else max(last_time, summary["last_time"])
    cur = conn.cursor()
    cur.executemany(
        "INSERT INTO metric_chunks(run_id, name, writer, attempt, n, first_step, last_step, steps, times, vals) "
        "VALUES(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
        chunks,
    )
    cur.executemany(_SERIES_UPSERT, summaries)
    if first_time is not None and last_time is not None:
        merge_timeline(conn, run_id, {"first_metric": first_time, "last_metric": last_time})


def _apply_logs(conn: Any, rec: dict[str, Any]) -> None:
    conn.execute(
        "INSERT INTO log_chunks(run_id, writer, n, first_time, last_time, max_level, attempts, data) "
        "VALUES(%s, %s, %s, %s, %s, %s, %s, %s)",
        (rec["r"], rec["w"], rec["n"], rec["t0"], rec["t1"], rec["maxlvl"], rec["attempts"], bytes(rec["data"])),
    )


def _apply_spans(conn: Any, rec: dict[str, Any]) -> None:
    conn.cursor().executemany(
        'INSERT INTO spans(run_id, name, start, "end", attempt, writer, sampled, attrs) '
        "VALUES(%s, %s, %s, %s, %s, %s, %s, %s)",
        [(rec["r"], s[0], s[1], s[2], s[3], rec["w"], int(s[4]), dumps(s[5]) if s[5] else None) for s in rec["spans"]],
    )


def _apply_stage_stats(conn: Any, rec: dict[str, Any]) -> None:
    conn.cursor().executemany(
        "INSERT INTO stage_stats(run_id, name, writer, count, total, min, max, first_start, last_end, hist) "
        "VALUES(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
        "ON CONFLICT(run_id, name, writer) DO UPDATE SET count=excluded.count, total=excluded.total, "
        "min=excluded.min, max=excluded.max, first_start=excluded.first_start, "
        "last_end=excluded.last_end, hist=excluded.hist",
        [(rec["r"], name, rec["w"], st["count"], st["total"], st["min"], st["max"], st["first_start"],
          st["last_end"], dumps(st["hist"])) for name, st in rec["stats"].items()],
    )


def _apply_resources(conn: Any, rec: dict[str, Any]) -> None:
    conn.cursor().executemany(
        "INSERT INTO resource_samples(run_id, writer, time, data) VALUES(%s, %s, %s, %s)",
        [(rec["r"], rec["w"], s.get("time", rec["t"]), dumps(s)) for s in rec["samples"]],
    )


def _apply_artifact(conn: Any, rec: dict[str, Any]) -> None:
    conn.execute(
        "INSERT INTO artifacts(run_id, role, kind, path, source, size, sha256, uri, step, time, attempt, meta) "
        "VALUES(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
        (rec["r"], rec["role"], rec.get("kind"), rec["path"], rec.get("source"), rec.get("size"), rec.get("sha256"),
         rec.get("uri"), rec.get("step"), rec["t"], rec.get("attempt", 1),
         dumps(rec["meta"]) if rec.get("meta") is not None else None),
    )


def _apply_counters(conn: Any, rec: dict[str, Any]) -> None:
    conn.cursor().executemany(
        "INSERT INTO counters AS c (run_id, name, value) VALUES(%s, %s, %s) "
        "ON CONFLICT(run_id, name) DO UPDATE SET value = c.value + excluded.value",
        [(rec["r"], name, value) for name, value in rec["data"].items()],
    )


def _apply_evidence(conn: Any, rec: dict[str, Any]) -> None:
    conn.execute("INSERT INTO evidence(run_id, kind, name, time, data) VALUES(%s, %s, %s, %s, %s)",
                 (rec["r"], rec["kind"], rec["name"], rec["t"], dumps(rec["data"])))


def _apply_nothing(conn: Any, rec: dict[str, Any]) -> None:
    """writer / writer_end records matter to the journal (crash detection), not to the store."""


_APPLY: dict[str, Apply] = {
    "writer": _apply_nothing, "writer_end": _apply_nothing, "run": _apply_run, "timeline": _apply_timeline,
    "params": _apply_params, "tags": _apply_tags, "note": _apply_note, "context": _apply_context,
    "metrics": _apply_metrics, "logs": _apply_logs, "spans": _apply_spans, "stage_stats": _apply_stage_stats,
    "resources": _apply_resources, "artifact": _apply_artifact, "counters": _apply_counters,
    "evidence": _apply_evidence,
}


def apply_records(conn: Any, records: Sequence[dict[str, Any]]) -> IngestResult:
    """Apply a batch inside the caller's transaction (which holds the ingest lock)."""
    import psycopg

    result = IngestResult()
    marks: dict[tuple[str, str], int] = {}
    touched: set[str] = set()
    for rec in records:
        try:
            run_id, writer, seq = str(rec["r"]), str(rec["w"]), int(rec["s"])
        except (KeyError, TypeError, ValueError):
            result.skipped.append(f"record without run, writer and sequence: {str(rec)[:200]}")
            continue
        key = (run_id, writer)
        if key not in marks:
            row = conn.execute("SELECT last_seq FROM ingested WHERE run_id=%s AND writer=%s", key).fetchone()
            marks[key] = row[0] if row else 0
        if seq <= marks[key]:
            result.duplicates += 1
            continue
        apply = _APPLY.get(rec.get("k", ""))
        marks[key] = seq
        if apply is None:
            result.skipped.append(f"unknown record kind {rec.get('k')!r} (run {run_id}, seq {seq})")
            continue
        if run_id not in touched:
            _ensure_run(conn, run_id, rec)
            touched.add(run_id)
        try:
            with conn.transaction():  # a savepoint: one bad record rolls back alone
                apply(conn, rec)
        except (KeyError, TypeError, ValueError, IndexError, psycopg.DataError, psycopg.IntegrityError,
                psycopg.ProgrammingError) as exc:
            result.skipped.append(f"bad {rec.get('k')} record (run {run_id}, seq {seq}): {exc!r}")
        else:
            result.applied += 1
    now = time.time()
    conn.cursor().executemany(
        "INSERT INTO ingested AS i (run_id, writer, last_seq, updated) VALUES(%s, %s, %s, %s) "
        "ON CONFLICT(run_id, writer) DO UPDATE SET last_seq=GREATEST(i.last_seq, excluded.last_seq), "
        "updated=excluded.updated",
        [(r, w, s, now) for (r, w), s in marks.items()],
    )
    conn.cursor().executemany("UPDATE runs SET updated=%s WHERE id=%s", [(now, r) for r in touched])
    return result
