"""`flightlog server` as a process: it prints where it listens, serves the CLI, and shuts down
gracefully (live streams are asked to reconnect, requests in flight finish)."""

from __future__ import annotations

import signal
import sqlite3
from collections.abc import Callable
from pathlib import Path

import httpx

from flightlog.store.sqlite.connection import Database, schema_version
from flightlog.store.sqlite.migrations import MIGRATIONS, SCHEMA_VERSION
from flightlog.store.sqlite.store import SqliteStore
from flightlog.transport import HttpStore
from flightlog.transport.sse import parse_events
from tests.helpers import child_env, cli, cli_json
from tests.server.conftest import ServerProcess
from tests.server.journal import Writer


def test_server_process_serves_the_cli_and_drains_on_sigterm(
    tmp_path: Path, clean_env: Path, server_process: Callable[..., ServerProcess]
) -> None:
    server = server_process("--grace", "600")  # longer than any wait here: an exit is a drain, not the grace ending
    url = server.start()
    assert url.startswith("http://127.0.0.1:")
    store = HttpStore(url, token=None, home=tmp_path / "c")
    w = Writer("served")
    store.ingest([w.run("team", name="shared"), w.logs([(1.0, "stdout", "info", "hi")])])
    env = child_env(clean_env, FLIGHTLOG_URL=url)
    assert [r["name"] for r in cli_json(clean_env, "runs", "ls", env=env)] == ["shared"]
    assert cli(clean_env, "logs", "served", env=env).stdout == "hi\n"
    with httpx.stream("GET", f"{url}/api/v1/runs/served/stream", timeout=30) as response:
        events = parse_events(response.iter_lines())
        assert next(events).event in ("logs", "status")
        assert server.proc is not None
        server.proc.send_signal(signal.SIGTERM)
        rest = [e.event for e in events]
    assert "reconnect" in rest, "a live stream is told to reconnect elsewhere"
    assert server.stop(None, timeout=120) in (0, -signal.SIGTERM)  # drained: well before its 600 s of grace
    store.close()


def test_auth_server_without_tokens_says_how_to_make_one(
    tmp_path: Path, server_process: Callable[..., ServerProcess]
) -> None:
    server = server_process("--auth")
    server.start()
    assert server.proc is not None and server.proc.stderr is not None
    stderr = server.proc.stderr
    server.proc.send_signal(signal.SIGTERM)
    server.proc.wait(timeout=20)
    assert "flightlog token create --role admin" in stderr.read()
    server.stop(None)


def test_a_schema_1_store_upgrades_to_the_tokens_schema(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)  # a store as the first release wrote it
    for statement in MIGRATIONS[0]:
        conn.execute(statement)
    conn.execute("INSERT INTO meta(key, value) VALUES('schema_version', '1')")
    conn.execute("INSERT INTO runs(id, project, status, created) VALUES('old', 'p', 'succeeded', 1.0)")
    conn.commit()
    conn.close()
    store = SqliteStore(path)
    assert schema_version(store.db.conn) == SCHEMA_VERSION >= 2
    assert store.get_run("old").status == "succeeded"
    store.create_token("0123456789ab", "f" * 64, "reader", None, "t")
    assert store.token_by_hash("f" * 64)["role"] == "reader"  # type: ignore[index]
    store.close()
    Database(path).close()  # opening an up-to-date store again changes nothing
