"""The filter language compiled for PostgreSQL selects the same runs, in the same order, as for
SQLite: every case of test_query_sql.py against a real PostgreSQL (the session's server)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from test_query_sql import FILTER_CASES, NOW, ORDER_CASES, RUNS

from flightlog.query import compile_runs_query
from flightlog.query.evaluate import flatten_params
from flightlog.schema.values import param_columns
from flightlog.store.postgres.store import PostgresStore
from flightlog.store.sql.ingest import finite_or_none

_COLUMNS = (
    "id",
    "project",
    "name",
    "parent_id",
    "status",
    "end_reason",
    "created",
    "queued",
    "started",
    "ended",
    "exit_code",
    "signal",
    "attempt",
    "host",
)


@pytest.fixture(scope="module")
def pg(postgres_server: Any) -> Iterator[PostgresStore]:
    uri = postgres_server.create_database("query_cases", template="flightlog_template")
    store = PostgresStore(uri)
    with store.db.write() as conn:
        for run in RUNS:
            row = {c: run.get(c) for c in _COLUMNS}
            row["project"] = row["project"] or "p"
            row["status"] = row["status"] or "created"
            row["attempt"] = row["attempt"] or 1
            conn.execute(
                f"INSERT INTO runs ({', '.join(row)}) VALUES ({', '.join(['%s'] * len(row))})", list(row.values())
            )
            for key, value in flatten_params(run.get("params") or {}).items():
                text, num, kind = param_columns(value)
                conn.execute(
                    "INSERT INTO params VALUES (%s, %s, %s, %s, %s)", (run["id"], key, text, finite_or_none(num), kind)
                )
            for key, value in (run.get("tags") or {}).items():
                conn.execute("INSERT INTO tags VALUES (%s, %s, %s)", (run["id"], key, value))
            for name, value in (run.get("metrics") or {}).items():
                conn.execute(
                    "INSERT INTO metric_series (run_id, name, count, last_value) VALUES (%s, %s, 1, %s)",
                    (run["id"], name, finite_or_none(value)),
                )
    yield store
    store.close()
    postgres_server.drop_database("query_cases")


def _ids(store: PostgresStore, **kwargs: Any) -> list[str]:
    kwargs.setdefault("project", None)
    kwargs.setdefault("filter", None)
    kwargs.setdefault("order_by", None)
    kwargs.setdefault("limit", None)
    sql, args = compile_runs_query(now=NOW, placeholder="%s", **kwargs)
    return [r.id for r in store.query_runs(sql, args)]


@pytest.mark.parametrize(("text", "expected"), FILTER_CASES)
def test_filters_select_the_same_runs_on_postgres(pg: PostgresStore, text: str, expected: set[str]) -> None:
    assert set(_ids(pg, filter=text)) == expected


@pytest.mark.parametrize(("order", "expected"), ORDER_CASES)
def test_ordering_is_the_same_on_postgres(pg: PostgresStore, order: str | None, expected: list[str]) -> None:
    assert _ids(pg, order_by=order) == expected


def test_pages_and_search_runs_on_postgres(pg: PostgresStore) -> None:
    assert _ids(pg, project="p", filter="status != 'queued'", order_by="-metrics.acc", limit=2) == ["r2", "r1"]
    full = _ids(pg, order_by="-metrics.acc")
    assert sum((_ids(pg, order_by="-metrics.acc", limit=2, offset=o) for o in (0, 2, 4)), []) == full
    runs = pg.search_runs(filter="params.optimizer.name = 'adam'")
    assert [r.id for r in runs] == ["r1"] and runs[0].params["optimizer.lr"] == 0.001
    assert runs[0].tags == {"team": "vision"} and runs[0].metrics["acc"].last == 0.7
