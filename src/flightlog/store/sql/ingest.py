"""Applying journal records to the SQL stores' schema, one small function per record kind.

Called inside one write transaction, for one batch or for several writers' batches at once
(:func:`apply_batches`: a server applies its concurrent requests together). Idempotency: a
record whose sequence number is not above the (run, writer) high-water mark in ``ingested`` was
applied before and is skipped; writers ship their records in order, so a replay (``flightlog
sync``, an HTTP retry) changes nothing. On PostgreSQL the transaction holds a lock on each run it
writes (``postgres/connection.py``), so two servers given the same batch at once apply it once:
the second sees the first's high-water mark.

A record of an unknown kind, or a broken one, is skipped and reported, never fatal, so that one
bad record cannot block the ones after it. The transaction is first applied whole, the append
kinds together (``appends.py``), inside one savepoint; only if a record breaks is it rolled back
and applied again one record at a time, each in its own savepoint. A healthy batch thus costs no
savepoint per record (on PostgreSQL, two round trips each). On PostgreSQL the transaction runs in
pipeline mode (statements sent without waiting for their answers, ``postgres/connection.py``):
its savepoints are psycopg's nested transactions, which wait for what was sent inside them
before they end, so a record's error is still raised where its savepoint rolls it back.

NaN is stored as NULL in the summary columns (``params.num``, ``metric_series.last_value``), as
SQLite does by itself, so a filter such as ``metric.loss > 1`` answers the same on both stores.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Sequence
from typing import Any

from flightlog.schema.kinds import KINDS, Record, Run
from flightlog.schema.values import escape_surrogates, param_columns
from flightlog.store.base import IngestResult
from flightlog.store.sql.appends import APPEND_KINDS, Appends, metric_rows
from flightlog.store.sql.dialect import Dialect
from flightlog.store.sql.ranks import (
    apply_peer_run,
    apply_writer,
    apply_writer_end,
    apply_writer_lost,
    note_first_errors,
    note_heartbeats,
    note_last_step,
)
from flightlog.store.sql.timelines import merged, remembered

__all__ = ["apply_records", "apply_batches", "finite_or_none"]

Apply = Callable[[Any, dict[str, Any], Dialect], None]

#: The run row's columns a ``run`` record sets: its Struct's fields, less the envelope and the
#: two stored as JSON (failure, timeline).
_RUN_FIELDS = tuple(
    f for f in Run.__struct_fields__ if f not in (*Record.__struct_fields__, "failure", "timeline", "peer")
)


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), default=repr, allow_nan=True)


def finite_or_none(value: float | None) -> float | None:
    """NaN → NULL (see the module doc)."""
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else value


def _ensure_run(conn: Any, run_id: str, rec: dict[str, Any], d: Dialect) -> None:
    conn.execute(
        d.or_ignore("INSERT INTO runs(id, project, status, created, updated) VALUES(?, ?, 'created', ?, ?)"),
        (run_id, rec.get("project") or "default", rec.get("t"), rec.get("t")),
    )


def _apply_run(conn: Any, rec: dict[str, Any], d: Dialect) -> None:
    if rec.get("peer"):  # a rank joining its job's run (store/sql/ranks.py)
        apply_peer_run(conn, rec, d, _merge_timeline)
        return
    fields = {k: rec[k] for k in _RUN_FIELDS if k in rec}
    if "project" in fields:
        conn.execute(d.or_ignore("INSERT INTO projects(name, created) VALUES(?, ?)"), (fields["project"], rec["t"]))
    if "failure" in rec:
        fields["failure"] = _dumps(rec["failure"]) if rec["failure"] is not None else None
    if rec.get("timeline"):  # written with the other columns: one statement
        fields["timeline"] = merged(conn, rec["r"], rec["timeline"])
    if fields:
        sets = ", ".join(f"{k}=?" for k in fields)
        conn.execute(f"UPDATE runs SET {sets} WHERE id=?", (*fields.values(), rec["r"]))


def _merge_timeline(conn: Any, run_id: str, instants: dict[str, float]) -> None:
    conn.execute("UPDATE runs SET timeline=? WHERE id=?", (merged(conn, run_id, instants), run_id))


def _apply_timeline(conn: Any, rec: dict[str, Any], d: Dialect) -> None:
    _merge_timeline(conn, rec["r"], rec["data"])


def _apply_params(conn: Any, rec: dict[str, Any], d: Dialect) -> None:
    rows = []
    for key, value in rec["data"].items():
        text, num, kind = param_columns(value)
        rows.append((rec["r"], key, text, finite_or_none(num), kind))
    conn.cursor().executemany(
        "INSERT INTO params(run_id, key, value, num, kind) VALUES(?, ?, ?, ?, ?) "
        "ON CONFLICT(run_id, key) DO UPDATE SET value=excluded.value, num=excluded.num, kind=excluded.kind",
        rows,
    )


def _apply_tags(conn: Any, rec: dict[str, Any], d: Dialect) -> None:
    upserts = [(rec["r"], key, str(value)) for key, value in rec["data"].items() if value is not None]
    removals = [(rec["r"], key) for key, value in rec["data"].items() if value is None]
    if upserts:
        conn.cursor().executemany(
            "INSERT INTO tags(run_id, key, value) VALUES(?, ?, ?) "
            "ON CONFLICT(run_id, key) DO UPDATE SET value=excluded.value",
            upserts,
        )
    if removals:  # a tag set to null is removed (``flightlog runs edit --untag``, ``run.remove_tags``)
        conn.cursor().executemany("DELETE FROM tags WHERE run_id=? AND key=?", removals)


def _apply_note(conn: Any, rec: dict[str, Any], d: Dialect) -> None:
    conn.execute(
        "INSERT INTO notes(run_id, time, author, text) VALUES(?, ?, ?, ?)",
        (rec["r"], rec["t"], rec.get("author"), rec["text"]),
    )


def _apply_context(conn: Any, rec: dict[str, Any], d: Dialect) -> None:
    conn.execute(
        "INSERT INTO context(run_id, writer, data) VALUES(?, ?, ?) "
        "ON CONFLICT(run_id, writer) DO UPDATE SET data=excluded.data",
        (rec["r"], rec["w"], _context_json(rec["data"])),
    )


def _context_json(data: Any) -> str:
    """A process's context as stored. In the SDK's own store every run a process starts carries
    the same dict, redacted once (``sdk/context.py``, ``redaction/userstrings.py``), so a
    sweep's thousand runs encode its ~4 KB once; a context decoded from a request is a new
    dict each time and is encoded as it comes."""
    global _last_context
    last = _last_context
    if last is not None and last[0] is data:
        return last[1]
    text = _dumps(data)
    _last_context = (data, text)
    return text


_last_context: tuple[Any, str] | None = None  # (the context dict, its JSON) last stored


def _apply_metrics(conn: Any, rec: dict[str, Any], d: Dialect) -> None:
    run_id, writer = rec["r"], rec["w"]
    # a rank's points: on a tie at the last step the lowest rank's value is the run's `last`
    ranked = conn.execute("SELECT rank FROM run_writers WHERE run_id=? AND writer=?", (run_id, writer)).fetchone()
    chunks, summaries, first_time, last_time = metric_rows(rec, ranked[0] if ranked else None)
    cur = conn.cursor()
    cur.executemany(
        "INSERT INTO metric_chunks(run_id, name, writer, attempt, n, first_step, last_step, steps, times, vals) "
        "VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        chunks,
    )
    cur.executemany(d.series_upsert, summaries)
    if first_time is not None and last_time is not None:
        _merge_timeline(conn, run_id, {"first_metric": first_time, "last_metric": last_time})
    if summaries:  # the writer's (its rank's) last step
        note_last_step(conn, run_id, writer, max(int(s["last_step"]) for s in summaries), float(last_time or rec["t"]))


def _apply_logs(conn: Any, rec: dict[str, Any], d: Dialect) -> None:
    conn.execute(
        "INSERT INTO log_chunks(run_id, writer, n, first_time, last_time, max_level, attempts, data) "
        "VALUES(?, ?, ?, ?, ?, ?, ?, ?)",
        (rec["r"], rec["w"], rec["n"], rec["t0"], rec["t1"], rec["maxlvl"], rec["attempts"], bytes(rec["data"])),
    )
    note_first_errors(conn, rec)  # a chunk with an error event: its rank's first error


def _apply_spans(conn: Any, rec: dict[str, Any], d: Dialect) -> None:
    conn.cursor().executemany(
        'INSERT INTO spans(run_id, name, start, "end", attempt, writer, sampled, attrs) VALUES(?, ?, ?, ?, ?, ?, ?, ?)',
        [(rec["r"], s[0], s[1], s[2], s[3], rec["w"], int(s[4]), _dumps(s[5]) if s[5] else None) for s in rec["spans"]],
    )


def _apply_stage_stats(conn: Any, rec: dict[str, Any], d: Dialect) -> None:
    # cumulative per writer: the newest record replaces the previous totals
    conn.cursor().executemany(
        "INSERT INTO stage_stats(run_id, name, writer, count, total, min, max, first_start, last_end, hist) "
        "VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT(run_id, name, writer) DO UPDATE SET count=excluded.count, total=excluded.total, "
        "min=excluded.min, max=excluded.max, first_start=excluded.first_start, "
        "last_end=excluded.last_end, hist=excluded.hist",
        [
            (
                rec["r"],
                name,
                rec["w"],
                st["count"],
                st["total"],
                st["min"],
                st["max"],
                st["first_start"],
                st["last_end"],
                _dumps(st["hist"]),
            )
            for name, st in rec["stats"].items()
        ],
    )


def _apply_resources(conn: Any, rec: dict[str, Any], d: Dialect) -> None:
    conn.cursor().executemany(
        "INSERT INTO resource_samples(run_id, writer, time, data) VALUES(?, ?, ?, ?)",
        [(rec["r"], rec["w"], s.get("time", rec["t"]), _dumps(s)) for s in rec["samples"]],
    )


def _apply_artifact(conn: Any, rec: dict[str, Any], d: Dialect) -> None:
    conn.execute(
        "INSERT INTO artifacts(run_id, role, kind, path, source, size, sha256, uri, step, time, attempt, meta) "
        "VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            rec["r"],
            rec["role"],
            rec.get("kind"),
            rec["path"],
            rec.get("source"),
            rec.get("size"),
            rec.get("sha256"),
            rec.get("uri"),
            rec.get("step"),
            rec["t"],
            rec.get("attempt", 1),
            _dumps(rec["meta"]) if rec.get("meta") is not None else None,
        ),
    )


def _apply_counters(conn: Any, rec: dict[str, Any], d: Dialect) -> None:
    conn.cursor().executemany(
        "INSERT INTO counters AS c (run_id, name, value) VALUES(?, ?, ?) "
        "ON CONFLICT(run_id, name) DO UPDATE SET value = c.value + excluded.value",
        [(rec["r"], name, value) for name, value in rec["data"].items()],
    )


def _apply_evidence(conn: Any, rec: dict[str, Any], d: Dialect) -> None:
    conn.execute(
        "INSERT INTO evidence(run_id, kind, name, time, data) VALUES(?, ?, ?, ?, ?)",
        (rec["r"], rec["kind"], rec["name"], rec["t"], _dumps(rec["data"])),
    )


def _apply_nothing(conn: Any, rec: dict[str, Any], d: Dialect) -> None:
    """A heartbeat only says the writer lives: ``apply_records`` notes every writer's newest record."""


_APPLY: dict[str, Apply] = {
    "writer": apply_writer,
    "writer_end": apply_writer_end,
    "heartbeat": _apply_nothing,
    "writer_lost": apply_writer_lost,
    "run": _apply_run,
    "timeline": _apply_timeline,
    "params": _apply_params,
    "tags": _apply_tags,
    "note": _apply_note,
    "context": _apply_context,
    "metrics": _apply_metrics,
    "logs": _apply_logs,
    "spans": _apply_spans,
    "stage_stats": _apply_stage_stats,
    "resources": _apply_resources,
    "artifact": _apply_artifact,
    "counters": _apply_counters,
    "evidence": _apply_evidence,
}
assert set(_APPLY) == KINDS, "every core record kind needs its apply"  # a programming error, at import


def apply_records(conn: Any, records: Sequence[dict[str, Any]], d: Dialect) -> IngestResult:
    """Apply a batch inside the caller's write transaction."""
    return apply_batches(conn, [records], d)[0]


def apply_batches(conn: Any, batches: Sequence[Sequence[dict[str, Any]]], d: Dialect) -> list[IngestResult]:
    """Apply several batches (of one writer each, or of any) inside the caller's one write
    transaction, in order; one result per batch, as if each had been applied alone in turn."""
    plan = _plan(conn, batches, d)
    _ensure_runs(conn, plan, d)
    try:
        with d.savepoint(conn, "batch"), remembered():  # timelines.py: rolled back whole, or kept
            results = _apply_whole(conn, plan, d)
    except _bad_record_errors(d):  # rolled back: again, one record at a time
        results = _apply_one_by_one(conn, plan, d)
    # after the records, just before the commit: the alert feed reads the runs `updated` since
    # its last look (less 2 s), and a batch that takes long to apply must not be stamped early
    now = time.time()
    note_heartbeats(conn, plan.newest, now)
    conn.cursor().executemany(
        "INSERT INTO ingested AS i (run_id, writer, last_seq, updated) VALUES(?, ?, ?, ?) "
        "ON CONFLICT(run_id, writer) DO UPDATE SET updated=excluded.updated, "
        "last_seq=CASE WHEN excluded.last_seq > i.last_seq THEN excluded.last_seq ELSE i.last_seq END",
        [(r, w, s, now) for (r, w), s in plan.marks.items()],
    )
    conn.cursor().executemany("UPDATE runs SET updated=? WHERE id=?", [(now, r) for r in plan.first_records])
    return results


class _Plan:
    """What a transaction will apply: per batch, its new records (with their apply) in order."""

    def __init__(self, n: int) -> None:
        self.results = [IngestResult() for _ in range(n)]
        self.todo: list[tuple[int, dict[str, Any], Apply]] = []  # (batch index, record, apply)
        self.marks: dict[tuple[str, str], int] = {}
        self.newest: dict[tuple[str, str], float] = {}  # each writer's newest record: its heartbeat (ranks.py)
        self.first_records: dict[str, dict[str, Any]] = {}  # run → its first record applied here
        self.projects: dict[str, str] = {}  # run → the project its first `run` record here names


def _plan(conn: Any, batches: Sequence[Sequence[dict[str, Any]]], d: Dialect) -> _Plan:
    """Records checked, and the ones applied before (at or under their writer's high-water mark,
    or earlier in this transaction) counted as duplicates."""
    plan = _Plan(len(batches))
    keyed: list[tuple[int, dict[str, Any], tuple[str, str], int]] = []
    for i, batch in enumerate(batches):
        for rec in batch:
            try:
                run_id, writer, seq = str(rec["r"]), str(rec["w"]), int(rec["s"])
            except (KeyError, TypeError, ValueError):
                plan.results[i].skipped.append(f"record without run, writer and sequence: {str(rec)[:200]}")
                continue
            keyed.append((i, rec, (run_id, writer), seq))
    marks = d.ingest_marks(conn, list(dict.fromkeys(key for _, _, key, _ in keyed)))
    for i, rec, key, seq in keyed:
        result = plan.results[i]
        mark = marks.get(key, 0)
        plan.marks.setdefault(key, mark)
        if seq <= mark:
            result.duplicates += 1
            continue
        marks[key] = plan.marks[key] = seq
        t = rec.get("t")
        if type(t) is float and t > plan.newest.get(key, 0.0):
            plan.newest[key] = t
        apply = _APPLY.get(rec.get("k", ""))
        if apply is None:
            result.skipped.append(f"unknown record kind {rec.get('k')!r} (run {key[0]}, seq {seq})")
            continue
        plan.first_records.setdefault(key[0], rec)
        if rec.get("k") == "run" and key[0] not in plan.projects:
            project = rec.get("project")
            if isinstance(project, str) and project:
                plan.projects[key[0]] = project
        plan.todo.append((i, rec, apply))
    return plan


def _ensure_runs(conn: Any, plan: _Plan, d: Dialect) -> None:
    """A row for every run written here (a record may come before its run's `run` record), in
    the project its `run` record here names, when one does: a new run's row is then written in
    its project's part of ``runs_project_created`` once, not first under ``default`` and moved
    (a page of that index fewer at each short run's commit)."""
    if plan.first_records:
        conn.cursor().executemany(
            d.or_ignore("INSERT INTO runs(id, project, status, created, updated) VALUES(?, ?, 'created', ?, ?)"),
            [
                (run_id, plan.projects.get(run_id) or rec.get("project") or "default", rec.get("t"), rec.get("t"))
                for run_id, rec in plan.first_records.items()
            ],
        )


def _apply_whole(conn: Any, plan: _Plan, d: Dialect) -> list[IngestResult]:
    """Every record in order, the append kinds between two other records written together."""
    results = [IngestResult(duplicates=r.duplicates, skipped=list(r.skipped)) for r in plan.results]
    appends = Appends()
    for i, rec, apply in plan.todo:
        if rec["k"] in APPEND_KINDS:
            appends.add(rec)
        else:
            if appends:
                appends.flush(conn, d)
            apply(conn, rec, d)
        results[i].applied += 1
    if appends:
        appends.flush(conn, d)
    return results


def _apply_one_by_one(conn: Any, plan: _Plan, d: Dialect) -> list[IngestResult]:
    """Every record in its own savepoint: a broken one is rolled back and reported alone."""
    results = [IngestResult(duplicates=r.duplicates, skipped=list(r.skipped)) for r in plan.results]
    bad_record = _bad_record_errors(d)
    for i, rec, apply in plan.todo:
        try:  # one bad record rolls back alone
            try:
                with d.savepoint(conn, "rec"):
                    apply(conn, rec, d)
            except UnicodeEncodeError:  # a lone surrogate (a CLI argument, a decoded file name)
                with d.savepoint(conn, "rec"):
                    apply(conn, escape_surrogates(rec), d)  # stored escaped (records.storable_text)
        except bad_record as exc:
            results[i].skipped.append(f"bad {rec.get('k')} record (run {rec['r']}, seq {rec['s']}): {exc!r}")
        else:
            results[i].applied += 1
    return results


def _bad_record_errors(d: Dialect) -> tuple[type[Exception], ...]:
    """What one broken record raises (a lone surrogate is a UnicodeEncodeError, a ValueError)."""
    return (KeyError, TypeError, ValueError, IndexError, *d.record_errors)
