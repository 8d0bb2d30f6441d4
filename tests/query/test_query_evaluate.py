from __future__ import annotations

import random
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from query_store import create_store, insert_runs, select_ids

from flightlog.query import matches
from flightlog.query.evaluate import flatten_params

NOW = 10_000.0


def test_params_may_be_nested_or_flat() -> None:
    nested = {"id": "a", "params": {"optimizer": {"lr": 0.1, "betas": [0.9, 0.99]}}}
    flat = {"id": "a", "params": {"optimizer.lr": 0.1}}
    assert matches("params.optimizer.lr = 0.1", nested)
    assert matches("params.optimizer.lr = 0.1", flat)
    assert matches("params.optimizer.betas = '[0.9, 0.99]'", nested)
    assert flatten_params({"a": {"b": {"c": 1}}, "d": {}}) == {"a.b.c": 1, "d": {}}


def test_times_may_be_iso_text_and_metrics_mappings() -> None:
    run = {"id": "a", "created": "2026-11-30T12:00:00Z", "started": "2026-11-30T12:00:00Z",
           "ended": "2026-11-30T13:30:00Z", "metrics": {"acc": {"last_value": 0.5}}}  # fmt: skip
    assert matches("created > '2026-11-30' and duration > 1h and metrics.acc = 0.5", run)
    assert not matches("duration > 2h", run)


def test_relative_times_and_running_durations_use_now() -> None:
    run = {"id": "a", "created": NOW - 60, "started": NOW - 60}
    assert matches("created > 5m and duration >= 60", run, now=NOW)
    assert not matches("created > 30s", run, now=NOW)
    assert not matches("duration > 61", run, now=NOW)


def test_params_compare_as_the_store_encodes_them() -> None:
    run = {"id": "a", "params": {"lr": float("nan"), "cfg": {"b": [1, 2], "a": {}}, "n": 3}}
    assert not matches("params.lr > 0 or params.lr < 0 or params.lr = 0", run)
    assert matches("params.lr = 'nan' and params.n = '3' and params.n = 3.0", run)
    assert matches("params.cfg.b = '[1, 2]' and params.cfg.a = '{}'", run)


# --- the evaluator agrees with SQL on generated filters ------------------------------------

PARAM_VALUES: list[Any] = [0.1, 0.01, 0.5, 1, -2, 32, "0.1", "adam", "Adam", "true", "a%b",
                           True, False, None, [1, 2], float("nan"), float("inf")]  # fmt: skip
TEXTS = ["adam", "Adam", "vision", "a%b", "a_b", "x\\y", "", "0.1", "1", "true", "ü"]
NUMBERS = [-2, 0, 0.01, 0.1, 0.5, 1, 32, 100, 2.5e3]


def make_runs(n: int = 80) -> list[dict[str, Any]]:
    rng = random.Random(1234)

    def maybe(values: list[Any]) -> Any:
        return rng.choice([*values, None])

    runs = []
    for i in range(n):
        started = maybe([100.0, 5000.0, 9000.0])
        runs.append({
            "id": f"run{i:03d}", "project": rng.choice(["p", "q"]), "name": maybe(TEXTS),
            "status": rng.choice(["running", "failed", "succeeded"]), "host": maybe(TEXTS),
            "created": float(rng.randint(0, 10_000)), "started": started,
            "ended": maybe([200.0, 8000.0]) if started else None,
            "exit_code": maybe([0, 1, 137]), "attempt": rng.choice([1, 2]),
            "params": {k: rng.choice(PARAM_VALUES) for k in ("lr", "opt.lr", "name")
                       if rng.random() < 0.8},
            "tags": {k: rng.choice(TEXTS) for k in ("team", "prio") if rng.random() < 0.7},
            "metrics": {k: rng.choice([*NUMBERS, float("nan"), float("inf"), float("-inf")])
                        for k in ("acc", "val/loss") if rng.random() < 0.7},
        })  # fmt: skip
    return runs


RUNS = make_runs()


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sqlite3.Connection]:
    conn = create_store(Path(tmp_path_factory.mktemp("agree")) / "flightlog.db")
    insert_runs(conn, RUNS)
    yield conn
    conn.close()


def quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


texts = st.sampled_from(TEXTS).map(quote)
numbers = st.sampled_from(NUMBERS).map(str)
anything = st.one_of(texts, numbers, st.sampled_from(["true", "false", "'0.1'", "'32'"]))
ops = st.sampled_from(["=", "!=", "<", "<=", ">", ">="])
patterns = st.sampled_from(["'a%'", "'%A%'", "'_'", "'a\\%b'", "'a\\_b'", "'%'", "''"])


def in_list(values: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.tuples(st.sampled_from(["in", "not in"]), st.lists(values, min_size=1, max_size=3)).map(
        lambda t: f"{t[0]} ({', '.join(t[1])})"
    )


def predicate() -> st.SearchStrategy[str]:
    params = st.sampled_from(["params.lr", "params.opt.lr", "params.name", "params.nope"])
    texts_f = st.sampled_from(["name", "host", "tags.team", "tags.prio", "tags.nope"])
    nums_f = st.sampled_from(["created", "started", "ended", "duration", "exit_code", "attempt",
                              "metrics.acc", "metrics.val/loss", "metrics.nope"])  # fmt: skip
    is_null = st.sampled_from([" is null", " is not null", " = null", " != null"])
    number_tests = st.sampled_from([" is nan", " is not nan", " is finite", " is not finite"])
    return st.one_of(
        st.tuples(params, ops, st.one_of(numbers, st.sampled_from(["'0.1'", "'-2'"]))).map(" ".join),
        st.tuples(params, st.sampled_from(["=", "!="]), anything).map(" ".join),
        st.tuples(params, st.sampled_from(["like", "not like"]), patterns).map(" ".join),
        st.tuples(params, st.sampled_from(["~", "!~"]), texts).map(" ".join),
        st.tuples(params, in_list(anything)).map(" ".join),
        st.tuples(texts_f, st.sampled_from(["=", "!="]), anything).map(" ".join),
        st.tuples(texts_f, st.sampled_from(["~", "!~"]), texts).map(" ".join),
        st.tuples(texts_f, st.sampled_from(["like", "not like"]), patterns).map(" ".join),
        st.tuples(texts_f, in_list(texts)).map(" ".join),
        st.tuples(nums_f, ops, numbers).map(" ".join),
        st.tuples(nums_f, in_list(numbers)).map(" ".join),
        st.tuples(
            st.sampled_from(["status", "project"]),
            st.sampled_from(["=", "!="]),
            st.sampled_from(["'running'", "'failed'"]),
        ).map(" ".join),  # fmt: skip
        st.tuples(
            st.sampled_from(["params.lr", "name", "tags.team", "metrics.acc", "ended", "duration", "exit_code"]),
            is_null,
        ).map("".join),  # fmt: skip
        st.tuples(st.sampled_from(["metrics.acc", "metrics.val/loss", "metrics.nope"]), number_tests).map("".join),
    )


filters = st.recursive(
    predicate(),
    lambda inner: st.one_of(
        st.tuples(inner, st.sampled_from(["and", "or"]), inner).map(" ".join),
        inner.map(lambda e: f"not ({e})"),
        inner.map(lambda e: f"({e})"),
    ),
    max_leaves=6,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=filters)
def test_matches_agrees_with_sql(db: sqlite3.Connection, text: str) -> None:
    in_sql = set(select_ids(db, filter=text, now=NOW))
    in_python = {run["id"] for run in RUNS if matches(text, run, now=NOW)}
    assert in_python == in_sql, text
