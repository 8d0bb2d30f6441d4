"""An expensive search is stopped at its time budget with a clear error (HTTP 422
``query_timeout``; the CLI: a message, exit 1), and ``~``/``like`` patterns are bounded, so one
filter over large params cannot hold the store (and every reader) for half a minute."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from flightlog.query.fields import MAX_NEEDLE
from flightlog.store.sqlite.store import SqliteStore
from tests.helpers import child_env, cli
from tests.server.conftest import error_of
from tests.server.journal import Writer


@pytest.fixture
def server_store() -> str:
    """SQLite only: this file checks what SQLite itself does (the statements it runs, its LIKE)."""
    return ""


# 100 runs with a 100 kB param: SQLite's LIKE compares the needle at every offset of every value,
# so this filter takes seconds (tens under load) without a budget
SLOW = "params.blob ~ '" + "a" * (MAX_NEEDLE - 1) + "b'"


def _fill(store: Any) -> None:
    records = []
    for i in range(100):
        w = Writer(f"{i:032x}")
        records += [w.run("vision"), w.record("params", data={"blob": "a" * 100_000, "lr": 0.1})]
    store.ingest(records)


def test_a_search_over_its_budget_is_stopped_with_a_422(make_app: Any) -> None:
    app = make_app(query_timeout=0.3)
    _fill(app.app.state.store)
    response = app.get("/api/v1/runs", params={"filter": SLOW})
    assert response.status_code == 422, response.text[:300]
    err = error_of(response)
    assert err["code"] == "query_timeout" and err["details"]["budget_s"] == 0.3
    assert "--query-timeout" in err["message"]
    # the store is not left in a bad state: the next (cheap) search works
    fine = app.get("/api/v1/runs", params={"filter": "params.lr = 0.1", "limit": 5})
    assert fine.status_code == 200 and len(fine.json()["runs"]) == 5


def test_a_pattern_longer_than_the_limit_is_refused(make_app: Any) -> None:
    app = make_app()
    for text in ("params.blob ~ '" + "a" * (MAX_NEEDLE + 1) + "'", "name like '" + "%a" * 11 + "'"):
        response = app.get("/api/v1/runs", params={"filter": text})
        assert response.status_code == 400, response.text[:300]
        assert error_of(response)["code"] == "invalid_filter"


def test_the_cli_stops_at_FLIGHTLOG_QUERY_TIMEOUT_with_a_message(tmp_path: Path) -> None:
    home = tmp_path / "home"
    store = SqliteStore(home / "flightlog.db")
    _fill(store)
    store.close()
    proc = cli(home, "runs", "ls", "--filter", SLOW, check=False, env=child_env(home, FLIGHTLOG_QUERY_TIMEOUT="0.3"))
    assert proc.returncode != 0
    assert "time budget of 0.3 s" in proc.stderr and "FLIGHTLOG_QUERY_TIMEOUT" in proc.stderr
    assert "Traceback" not in proc.stderr
    bad = cli(home, "runs", "ls", check=False, env=child_env(home, FLIGHTLOG_QUERY_TIMEOUT="soon"))
    assert bad.returncode != 0 and "FLIGHTLOG_QUERY_TIMEOUT" in bad.stderr and "Traceback" not in bad.stderr
