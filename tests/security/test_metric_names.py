"""A run with thousands of metric names: reading each metric's history must not re-read every
summary of the run (that made `flightlog metrics` quadratic: 10,000 names took minutes). The
statements SQLite runs are counted (speed itself is measured by bench/metric_names.py)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

import flightlog
from flightlog.store.sqlite.store import SqliteStore
from tests.server.journal import Writer


@pytest.fixture
def server_store() -> str:
    """SQLite only: this file checks what SQLite itself does (the statements it runs, its LIKE)."""
    return ""


RUN = "d" * 32
NAMES = [f"layer{i:03d}/grad_norm" for i in range(300)]


def _fill(store: Any) -> None:
    w = Writer(RUN)
    store.ingest([w.run("vision"), w.metrics({name: ([0, 1], [1.0, 0.5]) for name in NAMES})])


@contextmanager
def summary_reads(store: SqliteStore) -> Iterator[list[str]]:
    """The statements that read metric summaries (table metric_series) while the block runs."""
    seen: list[str] = []
    store.db.conn.set_trace_callback(lambda sql: seen.append(sql) if "metric_series" in sql else None)
    try:
        yield seen
    finally:
        store.db.conn.set_trace_callback(None)


def test_the_client_reads_summaries_once_per_run(tmp_path: Path) -> None:
    client = flightlog.Client(home=tmp_path / "home")
    _fill(client.store)
    store = client.store
    assert isinstance(store, SqliteStore)
    with summary_reads(store) as seen:
        info = client.run(RUN[:8])
        summaries = client.metrics(RUN[:8])
        histories = {name: client.metric_history(RUN[:8], name) for name in summaries}
    client.close()
    assert sorted(summaries) == sorted(NAMES) == sorted(info.metrics)
    assert all(h.values.tolist() == [1.0, 0.5] for h in histories.values())
    assert len(seen) <= 2, f"{len(seen)} reads of the summaries for {len(NAMES)} metrics"


def test_the_server_reads_no_summaries_for_one_metric(make_app: Any) -> None:
    app = make_app()
    store = app.app.state.store
    _fill(store)
    with summary_reads(store) as seen:
        for name in NAMES[:50]:
            response = app.get(f"/api/v1/runs/{RUN[:8]}/metrics/{name}")
            assert response.status_code == 200 and response.json()["values"] == [1.0, 0.5]
        listed = app.get(f"/api/v1/runs/{RUN}/metrics").json()["metrics"]
    assert len(listed) == len(NAMES)
    assert len(seen) <= 1, f"{len(seen)} reads of the summaries for 50 histories and one listing"
