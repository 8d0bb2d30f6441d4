"""The embedded store keeps no index its queries never read (issue 32): a run's params and
metrics are found by the run, so ``params_key_num`` and ``metric_series_name_last`` only cost
each run's commit a leaf per name. A store made before is upgraded, and answers the same."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import flightlog
from flightlog.store.sqlite.connection import Database, schema_version
from flightlog.store.sqlite.migrations import MIGRATIONS, SCHEMA_VERSION

DROPPED = {"params_key_num", "metric_series_name_last"}


def _indexes(path: Path) -> set[str]:
    conn = sqlite3.connect(path)
    try:
        return {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type='index'")}
    finally:
        conn.close()


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("FLIGHTLOG_URL", "FLIGHTLOG_STORE", "FLIGHTLOG_TOKEN", "FLIGHTLOG_RUN_ID", "FLIGHTLOG_HOME"):
        monkeypatch.delenv(name, raising=False)


def test_a_new_store_has_no_index_of_params_by_value_nor_of_metrics_by_last_value(tmp_path: Path) -> None:
    Database(tmp_path / "flightlog.db").close()
    indexes = _indexes(tmp_path / "flightlog.db")
    assert not DROPPED & indexes
    assert {"runs_project_created", "tags_key_value", "run_writers_rank"} <= indexes  # the others stay


def test_an_older_store_loses_them_and_its_filters_and_orders_answer_the_same(tmp_path: Path, clean_env: None) -> None:
    home = tmp_path / "home"
    home.mkdir()
    path = home / "flightlog.db"
    conn = sqlite3.connect(path, isolation_level=None)  # a store as schema 6 left it: the indexes filled
    conn.execute("BEGIN")
    for migration in MIGRATIONS[:6]:
        for statement in migration:
            conn.execute(statement)
    conn.execute("INSERT INTO meta(key, value) VALUES('schema_version', '6')")
    lrs = {"a": 0.001, "b": 0.03, "c": 0.1, "d": 0.01, "e": "warmup"}
    accs = {"a": 0.9, "b": 0.7, "c": 0.8, "d": 0.95}
    for i, (run_id, lr) in enumerate(lrs.items()):
        conn.execute(
            "INSERT INTO runs(id, project, status, created) VALUES(?, 'p', 'succeeded', ?)", (run_id, float(i))
        )
        num, kind = (None, "str") if isinstance(lr, str) else (lr, "float")
        conn.execute("INSERT INTO params VALUES(?, 'lr', ?, ?, ?)", (run_id, str(lr), num, kind))
        if run_id in accs:
            conn.execute(
                "INSERT INTO metric_series(run_id, name, count, last_value) VALUES(?, 'acc', 1, ?)",
                (run_id, accs[run_id]),
            )
    conn.execute("COMMIT")
    conn.close()
    assert _indexes(path) >= DROPPED

    client = flightlog.Client(home=home)
    above = client.runs(project="p", filter="params.lr > 0.005", order_by="-metrics.acc")
    assert [r.id for r in above] == ["d", "c", "b"]
    assert [r.id for r in client.runs(project="p", filter="metrics.acc >= 0.8", order_by="params.lr")] == [
        "a",
        "d",
        "c",
    ]
    assert [r.id for r in client.runs(project="p", filter="params.lr = 'warmup'")] == ["e"]
    client.close()

    db = Database(path)
    assert schema_version(db.conn) == SCHEMA_VERSION
    db.close()
    assert not DROPPED & _indexes(path)
