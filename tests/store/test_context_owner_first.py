"""Whose context a run shows when several processes wrote one: the run's owner's first."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flightlog.store import open_store

pytestmark = pytest.mark.embedded_only("about the stores' SQL itself (SQLite and PostgreSQL, both below)")


@pytest.fixture(params=["sqlite", "postgres"])
def store_uri(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'flightlog.db'}"
        return
    server: Any = request.getfixturevalue("postgres_server")
    name = f"context_{time.monotonic_ns()}"
    yield server.create_database(name)
    server.drop_database(name)


def test_the_owner_s_context_comes_first_whatever_the_writer_ids(store_uri: str) -> None:
    """A script that calls ``flightlog.init()`` under ``flightlog run`` writes its own context
    (its ``sys.argv``) beside the runner's; the two were merged by writer id, which is random,
    so ``runs show`` gave the runner's command line or the script's name by chance (8 of 17
    runs of one probe showed the script's). The owner, the runner, comes first; what only the
    other writer says is still merged. Found on complete runs written for the purpose
    (issue 29)."""
    store = open_store(store_uri)
    runner, script = "ffffffffffffffff", "0000000000000000"  # the script's id sorts first
    runner_command = ["flightlog", "run", "--timeout", "8s", "--", "python", "score.py"]
    store.ingest(
        [
            {"k": "run", "r": "r1", "w": runner, "s": 1, "t": 1.0, "project": "p", "status": "running"},
            {"k": "writer", "r": "r1", "w": runner, "s": 2, "t": 1.0, "host": "h", "pid": 10, "owner": True},
            {"k": "context", "r": "r1", "w": runner, "s": 3, "t": 1.0, "data": {"command": runner_command}},
            {"k": "writer", "r": "r1", "w": script, "s": 1, "t": 2.0, "host": "h", "pid": 11, "owner": False},
            {
                "k": "context",
                "r": "r1",
                "w": script,
                "s": 2,
                "t": 2.0,
                "data": {"command": ["score.py"], "python": "3.11.7"},
            },
        ]
    )
    try:
        context = store.context("r1")
    finally:
        store.close()
    assert context["command"] == runner_command, context
    assert context["python"] == "3.11.7", context
