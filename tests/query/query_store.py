"""Helpers for the query tests: a real SQLite store from the real migrations, filled with
sqlite3 row by row. A module with a unique name, so ``from query_store import …`` never meets
another directory's conftest."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from flightlog.query import compile_runs_query
from flightlog.query.evaluate import flatten_params
from flightlog.schema.values import param_columns
from flightlog.store.sqlite.migrations import MIGRATIONS

RUN_COLUMNS = ("id", "project", "name", "parent_id", "status", "end_reason", "created",
               "queued", "started", "ended", "exit_code", "signal", "attempt", "host")  # fmt: skip


def create_store(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("BEGIN")
    for migration in MIGRATIONS:
        for statement in migration:
            conn.execute(statement)
    conn.execute("COMMIT")
    return conn


def insert_runs(conn: sqlite3.Connection, runs: Iterable[Mapping[str, Any]]) -> None:
    """Insert runs shaped like ``matches`` expects: columns plus params, tags, metrics."""
    conn.execute("BEGIN")
    for run in runs:
        row = {c: run.get(c) for c in RUN_COLUMNS}
        row["project"] = row["project"] or "p"
        row["status"] = row["status"] or "created"
        row["attempt"] = row["attempt"] or 1
        conn.execute(
            f"INSERT INTO runs ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",
            list(row.values()),
        )
        for key, value in flatten_params(run.get("params") or {}).items():
            conn.execute("INSERT INTO params VALUES (?, ?, ?, ?, ?)", (run["id"], key, *param_columns(value)))
        for key, value in (run.get("tags") or {}).items():
            conn.execute("INSERT INTO tags VALUES (?, ?, ?)", (run["id"], key, value))
        for name, value in (run.get("metrics") or {}).items():
            conn.execute(
                "INSERT INTO metric_series (run_id, name, count, last_value) VALUES (?, ?, 1, ?)",
                (run["id"], name, value),
            )
    conn.execute("COMMIT")


def select_ids(conn: sqlite3.Connection, **kwargs: Any) -> list[str]:
    kwargs.setdefault("project", None)
    kwargs.setdefault("filter", None)
    kwargs.setdefault("order_by", None)
    kwargs.setdefault("limit", None)
    sql, params = compile_runs_query(**kwargs)
    return [row[0] for row in conn.execute(sql, params)]
