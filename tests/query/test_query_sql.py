from __future__ import annotations

import sqlite3
from typing import Any

import pytest
from query_store import insert_runs, select_ids

from flightlog.errors import FilterSyntaxError, InvalidInput
from flightlog.query import compile_filter, compile_runs_query, matches

NOW = 5000.0
RUNS: list[dict[str, Any]] = [
    {"id": "r1", "project": "p", "name": "resnet50-baseline", "status": "failed",
     "end_reason": "exception", "created": 100.0, "started": 100.0, "ended": 400.0,
     "exit_code": 1, "host": "gpu-1",
     "params": {"lr": 0.1, "optimizer": {"name": "adam", "lr": 0.001}, "batch size": 32,
                "use_amp": True, "layers": [1, 2], "seed": None},
     "tags": {"team": "vision"}, "metrics": {"acc": 0.7, "val/loss": 0.9, "loss": 0.5}},
    {"id": "r2", "project": "p", "name": "ViT-small", "status": "succeeded", "end_reason": "exit",
     "created": 200.0, "started": 200.0, "ended": 4000.0, "exit_code": 0, "host": "gpu-2",
     "params": {"lr": 0.01, "optimizer": {"name": "sgd"}, "batch size": 64, "use_amp": False},
     "tags": {"team": "nlp", "priority": "1"},
     "metrics": {"acc": 0.9, "val/loss": 0.3, "loss": float("-inf")}},
    {"id": "r3", "project": "p", "name": None, "status": "running", "created": 300.0,
     "started": 300.0, "params": {"lr": "0.5"},
     "metrics": {"acc": float("nan"), "loss": float("nan")}},
    {"id": "r4", "project": "other", "name": "bert", "status": "killed", "end_reason": "signal",
     "created": 400.0, "started": 410.0, "ended": 450.0, "signal": 15, "parent_id": "r2",
     "attempt": 2, "tags": {"team": "Vision Research"},
     "metrics": {"acc": 0.8, "loss": float("inf")}},
    {"id": "r5", "project": "p", "name": "bert-2", "status": "queued", "created": 500.0,
     "queued": 500.0},
]  # fmt: skip


@pytest.fixture
def db(store: sqlite3.Connection) -> sqlite3.Connection:
    insert_runs(store, RUNS)
    return store


# every filter and the runs it selects (tests/query/test_query_postgres.py runs them on PostgreSQL too)
FILTER_CASES: list[tuple[str, set[str]]] = [
    ("params.lr > 0.01", {"r1"}),
    ("params.lr >= 0.01", {"r1", "r2"}),
    ("params.lr > '0.01'", {"r1"}),
    ("params.lr = '0.5'", {"r3"}),  # text compares the display text
    ("params.lr = 0.5", set()),  # a string param is not a number
    ("params.lr != 0.1", {"r2"}),  # needs a numeric lr
    ("not params.lr = 0.1", {"r2", "r3", "r4", "r5"}),
    ("params.optimizer.lr < 0.01", {"r1"}),
    ("params.optimizer.name = 'adam'", {"r1"}),
    ("params.`batch size` in (64, 128)", {"r2"}),
    ("params.`batch size` not in (64)", {"r1"}),
    ("params.use_amp = true", {"r1"}),
    ("params.use_amp = false", {"r2"}),
    ("params.layers = '[1, 2]'", {"r1"}),
    ("params.seed is null", {"r1", "r2", "r3", "r4", "r5"}),  # logged as None = missing
    ("params.lr is null", {"r4", "r5"}),
    ("params.lr = null", {"r4", "r5"}),
    ("params.lr is not null", {"r1", "r2", "r3"}),
    ("params.optimizer.name ~ 'AD'", {"r1"}),
    ("params.optimizer.name like 's%'", {"r2"}),
    ("params.lr in (0.1, '0.5')", {"r1", "r3"}),
    ("status = 'failed'", {"r1"}),
    ("status in ('failed', 'killed')", {"r1", "r4"}),
    ("status not in ('failed', 'killed')", {"r2", "r3", "r5"}),
    ("status != 'running' and status != 'queued'", {"r1", "r2", "r4"}),
    ("end_reason = 'signal'", {"r4"}),
    ("name like 'bert%'", {"r4", "r5"}),
    ("name like 'BERT_2'", {"r5"}),
    ("name not like 'bert%'", {"r1", "r2"}),  # a run without a name has nothing to match
    ("name ~ 'vit'", {"r2"}),
    ("name !~ 'vit'", {"r1", "r4", "r5"}),
    ("name is null", {"r3"}),
    ("host = 'gpu-1' or host = 'gpu-2'", {"r1", "r2"}),
    ("parent = 'r2'", {"r4"}),
    ("id in ('r1', 'r5')", {"r1", "r5"}),
    ("project = 'other'", {"r4"}),
    ("exit_code != 0", {"r1"}),
    ("not exit_code = 0", {"r1", "r3", "r4", "r5"}),
    ("exit_code is null", {"r3", "r4", "r5"}),
    ("signal = 'SIGTERM'", {"r4"}),
    ("attempt > 1", {"r4"}),
    ("duration > 1h", {"r2", "r3"}),  # r3 is still running: until now
    ("duration < 5m", {"r4"}),
    ("duration <= 300", {"r1", "r4"}),
    ("not duration > 0", {"r5"}),
    ("created >= 300", {"r3", "r4", "r5"}),
    ("created > '1970-01-01T00:05:00Z'", {"r4", "r5"}),
    ("created > 80m", {"r3", "r4", "r5"}),  # within 4800 s before NOW = 5000
    ("ended is not null and ended < 1000", {"r1", "r4"}),
    ("queued is not null", {"r5"}),
    ("tags.team = 'vision'", {"r1"}),
    ("tags.team ~ 'VISION'", {"r1", "r4"}),
    ("tags.team != 'vision'", {"r2", "r4"}),
    ("tags.priority = 1", {"r2"}),
    ("tags.priority is null", {"r1", "r3", "r4", "r5"}),
    ("metrics.acc > 0.75", {"r2", "r4"}),
    ("metrics.acc in (0.7, 0.9)", {"r1", "r2"}),
    ("metrics.acc is null", {"r3", "r5"}),  # NaN is stored as NULL: no value
    ("metrics.val/loss < 0.5", {"r2"}),
    ("metrics.loss is nan", {"r3"}),  # the latest value; r5 never logged a loss
    ("metrics.acc is nan", {"r3"}),
    ("metrics.loss is not nan", {"r1", "r2", "r4"}),  # ±inf is not NaN
    ("metrics.loss is finite", {"r1"}),
    ("metrics.loss is not finite", {"r2", "r3", "r4"}),
    ("not metrics.loss is nan", {"r1", "r2", "r4", "r5"}),  # plain logic: r5 too
    ("metrics.nope is not finite or metrics.nope is finite", set()),
    ("metrics.loss is null", {"r3", "r5"}),  # NaN has no value, as before
    ("metrics.loss > 1", {"r4"}),
    ("METRICS.loss IS NOT FINITE and status = 'running'", {"r3"}),
    ("metrics.`val/loss` >= 0.5", {"r1"}),
    ("not (metrics.acc > 0.75 or status = 'failed')", {"r3", "r5"}),
    ("(status = 'failed' or status = 'killed') and not tags.team = 'vision'", {"r4"}),
]


@pytest.mark.parametrize(("text", "expected"), FILTER_CASES)
def test_filters_select_the_right_runs(db: sqlite3.Connection, text: str, expected: set[str]) -> None:
    assert set(select_ids(db, filter=text, now=NOW)) == expected
    assert {r["id"] for r in RUNS if matches(text, r, now=NOW)} == expected


ORDER_CASES: list[tuple[str | None, list[str]]] = [
    (None, ["r5", "r4", "r3", "r2", "r1"]),
    ("created", ["r1", "r2", "r3", "r4", "r5"]),
    ("-metrics.acc", ["r2", "r4", "r1", "r5", "r3"]),  # missing last, ties newest first
    ("metrics.acc", ["r1", "r4", "r2", "r5", "r3"]),
    ("params.lr", ["r2", "r1", "r3", "r5", "r4"]),  # numbers, then text, then missing
    ("-params.lr", ["r1", "r2", "r3", "r5", "r4"]),
    ("-ended", ["r2", "r4", "r1", "r5", "r3"]),
    ("ended", ["r1", "r4", "r2", "r5", "r3"]),
    ("-duration", ["r3", "r2", "r1", "r4", "r5"]),
    ("tags.team", ["r4", "r2", "r1", "r5", "r3"]),
    ("-tags.team", ["r1", "r2", "r4", "r5", "r3"]),
    ("status,-created", ["r1", "r4", "r5", "r3", "r2"]),
    ("-params.`batch size`,metrics.acc", ["r2", "r1", "r4", "r5", "r3"]),
    ("exit_code desc, metrics.val/loss", ["r1", "r2", "r5", "r4", "r3"]),
]


@pytest.mark.parametrize(("order", "expected"), ORDER_CASES)
def test_ordering_puts_missing_values_last(db: sqlite3.Connection, order: str | None, expected: list[str]) -> None:
    assert select_ids(db, order_by=order, now=NOW) == expected


def test_project_filter_order_and_limit_together(db: sqlite3.Connection) -> None:
    ids = select_ids(db, project="p", filter="status != 'queued'", order_by="-metrics.acc", limit=2)
    assert ids == ["r2", "r1"]


def test_pages_concatenate_to_the_whole_listing(db: sqlite3.Connection) -> None:
    full = select_ids(db, order_by="-metrics.acc")
    pages = [select_ids(db, order_by="-metrics.acc", limit=2, offset=o) for o in (0, 2, 4)]
    assert sum(pages, []) == full
    assert select_ids(db, order_by="-metrics.acc", offset=3) == full[3:]
    assert select_ids(db, limit=0) == []


def test_values_are_bound_never_interpolated(db: sqlite3.Connection) -> None:
    evil = "x'; DROP TABLE runs; --"
    text = f'tags.`{evil}` = "{evil}" or name ~ "{evil}%_" or params.`a"b` like \'%\''
    sql, params = compile_runs_query(project=evil, filter=text, order_by=f"-params.`{evil}`", limit=5)
    assert evil not in sql and "DROP" not in sql and "%" not in sql
    assert evil in params
    assert list(db.execute(sql, params)) == []
    assert db.execute("SELECT count(*) FROM runs").fetchone() == (5,)


@pytest.mark.parametrize(
    ("placeholder", "marker"),
    [("?", "?"), ("%s", "%s"), ("$", "$1")],
)
def test_placeholder_styles(placeholder: str, marker: str) -> None:
    sql, params = compile_runs_query(project="p", filter="params.lr > 0.1 and duration > 1h",
                                     order_by="-metrics.acc,duration", limit=10, offset=20,
                                     now=NOW, placeholder=placeholder)  # fmt: skip
    assert params == ["acc", "p", "lr", 0.1, NOW, 3600.0, NOW, NOW, 10, 20]
    assert marker in sql
    if placeholder == "$":
        assert [f"${i}" in sql for i in range(1, 11)] == [True] * 10 and "$11" not in sql
    else:
        assert sql.count(placeholder) == len(params)


def test_compile_filter_fragment_reuses_in_other_queries(db: sqlite3.Connection) -> None:
    fragment, params = compile_filter("metrics.acc > 0.75 and tags.team ~ 'vision'")
    rows = db.execute(f"SELECT id FROM runs r WHERE {fragment}", params).fetchall()
    assert rows == [("r4",)]
    fragment, params = compile_filter("attempt = 2", placeholder="$", first_index=3)
    assert fragment == "r.attempt = $3" and params == [2]


def test_blank_filter_and_order_mean_none(db: sqlite3.Connection) -> None:
    assert select_ids(db, filter="  ", order_by="") == ["r5", "r4", "r3", "r2", "r1"]


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(InvalidInput, match="limit"):
        compile_runs_query(project=None, filter=None, order_by=None, limit=-1)
    with pytest.raises(InvalidInput, match="offset"):
        compile_runs_query(project=None, filter=None, order_by=None, limit=None, offset=-5)
    with pytest.raises(FilterSyntaxError):
        compile_runs_query(project=None, filter="lr > 1", order_by=None, limit=None)
    with pytest.raises(FilterSyntaxError):
        compile_runs_query(project=None, filter=None, order_by="-accuracy", limit=None)
    with pytest.raises(ValueError, match="placeholder"):
        compile_runs_query(project=None, filter=None, order_by=None, limit=1, placeholder=":x")


def test_query_plan_uses_the_indexes(db: sqlite3.Connection) -> None:
    sql, params = compile_runs_query(project="p", filter="params.lr > 0.01 and tags.team = 'x'",
                                     order_by="-metrics.acc", limit=50)  # fmt: skip
    plan = " | ".join(row[-1] for row in db.execute("EXPLAIN QUERY PLAN " + sql, params))
    assert "SCAN" not in plan, plan
