"""The PostgreSQL store's own behaviour: schema upgrades, refusals, faults, and idempotent
ingest from several servers at once. (The behaviour suites run on it through ``home``.)"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from array import array
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from flightlog.errors import SchemaTooNew, StoreUnavailable
from flightlog.store.postgres.migrations import MIGRATIONS, SCHEMA_VERSION
from flightlog.store.postgres.store import PostgresStore
from flightlog.store.postgres.testing import TemporaryPostgres
from flightlog.store.registry import open_store
from tests.helpers import child_env, cli, run_script

pytestmark = pytest.mark.embedded_only("about the PostgreSQL store itself")


@pytest.fixture
def empty_db(postgres_server: Any) -> Iterator[str]:
    name = f"empty_{time.monotonic_ns()}"
    uri = postgres_server.create_database(name)
    yield uri
    postgres_server.drop_database(name)


def test_an_older_schema_is_upgraded_in_place_and_keeps_its_rows(empty_db: str) -> None:
    with psycopg.connect(empty_db, autocommit=True) as conn:
        for statement in MIGRATIONS[0]:
            conn.execute(statement)
        conn.execute("INSERT INTO meta VALUES ('schema_version', '1')")
        conn.execute("INSERT INTO runs(id, project, status, created) VALUES ('r-old', 'vision', 'succeeded', 1.0)")
    store = open_store(empty_db)
    try:
        assert store.get_run("r-old").project == "vision"
        assert store.tokens() == []  # a table of a later migration
        with psycopg.connect(empty_db) as conn:
            assert conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0] == str(
                SCHEMA_VERSION
            )
    finally:
        store.close()


def test_a_newer_schema_is_refused_with_instructions(empty_db: str) -> None:
    open_store(empty_db).close()
    with psycopg.connect(empty_db, autocommit=True) as conn:
        conn.execute("UPDATE meta SET value='999' WHERE key='schema_version'")
    with pytest.raises(SchemaTooNew, match="upgrade flightlog"):
        open_store(empty_db)


def test_two_servers_migrating_one_empty_database_at_once_agree(empty_db: str) -> None:
    stores: list[Any] = []
    errors: list[BaseException] = []

    def open_one() -> None:
        try:
            stores.append(open_store(empty_db))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for s in stores:
        s.close()
    assert errors == [] and len(stores) == 3


def _closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_postgres_down_at_start_is_a_clear_error_without_the_password(tmp_path: Path) -> None:
    uri = f"postgresql://flight:s3cret-pw@127.0.0.1:{_closed_port()}/flightlog"
    with pytest.raises(StoreUnavailable) as info:
        open_store(uri)
    message = info.value.message
    assert "s3cret-pw" not in message and "postgresql://flight:***@127.0.0.1" in message
    assert "cannot reach the PostgreSQL store" in message
    home = tmp_path / "home"
    proc = cli(home, "runs", "ls", check=False, env={**child_env(home), "FLIGHTLOG_STORE": uri})
    assert proc.returncode != 0
    assert "s3cret-pw" not in proc.stderr + proc.stdout and "cannot reach the PostgreSQL store" in proc.stderr


def _batch(run_id: str, writer: str, first: int, n: int) -> list[dict[str, Any]]:
    from flightlog.schema.values import encode_series

    out: list[dict[str, Any]] = []
    for seq in range(first, first + n):
        series = encode_series(array("q", [seq]), array("d", [float(seq)]), array("d", [seq * 0.5]))
        out.append({"k": "metrics", "r": run_id, "w": writer, "s": seq, "t": 1.0, "series": {"loss": series}})
    return out


def test_the_same_batches_sent_to_two_servers_at_once_are_stored_once(postgres_uri: str) -> None:
    a, b = PostgresStore(postgres_uri), PostgresStore(postgres_uri)
    try:
        batches = [_batch("run-1", "w1", 1 + 50 * i, 50) for i in range(8)]

        def send(store: PostgresStore) -> None:
            for batch in batches:
                store.ingest(batch)

        threads = [threading.Thread(target=send, args=(s,)) for s in (a, b, a, b)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        history = a.metric_history("run-1", "loss")
        assert list(history.steps) == list(range(1, 401))
        assert a.metric_summaries("run-1")["loss"].count == 400
    finally:
        a.close()
        b.close()


_WORKLOAD = """
import sys, time, flightlog
run = flightlog.init(project="restart")
print(run.id, flush=True)
for step in range(300):
    run.log({"loss": step * 0.5, "acc": 1.0}, step=step)
    if step % 30 == 0:
        print("step", step, flush=True)
    time.sleep(0.01)
sys.stdin.readline()   # the test restarts PostgreSQL, then lets the run finish
for step in range(300, 400):
    run.log({"loss": step * 0.5, "acc": 1.0}, step=step)
run.finish()
print("done", flush=True)
"""


@pytest.mark.slow
def test_postgres_restarted_mid_run_loses_nothing(tmp_path: Path) -> None:
    """Writers keep journaling while PostgreSQL is away and catch up when it is back."""
    with TemporaryPostgres() as pg:
        uri = pg.create_database("restart")
        home = tmp_path / "home"
        env = {**child_env(home), "FLIGHTLOG_STORE": uri, "FLIGHTLOG_FLUSH_INTERVAL": "0.1"}
        proc = subprocess.Popen(
            [sys.executable, "-c", _WORKLOAD],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
        )
        assert proc.stdout is not None and proc.stdin is not None
        run_id = proc.stdout.readline().strip()
        while proc.stdout.readline().strip() != "step 60":
            pass
        pg.stop()  # PostgreSQL goes away mid-run
        while proc.stdout.readline().strip() != "step 270":
            pass
        pg.start()
        proc.stdin.write("\n")
        proc.stdin.flush()
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0 and "done" in out, err
        store = open_store(uri)
        try:
            history = store.metric_history(run_id, "loss")
            assert list(history.steps) == list(range(400)), "every point stored exactly once"
            assert store.get_run(run_id).status == "succeeded"
        finally:
            store.close()


def test_migrate_store_copies_a_sqlite_home_losslessly(tmp_path: Path, postgres_uri: str) -> None:
    home = tmp_path / "home"
    run_script(
        home,
        """
        import math, flightlog
        for name in ("base", "fast"):
            run = flightlog.init(project="vision", name=name, params={"lr": 0.1, "opt": {"name": "adam"}},
                                 tags={"team": "cv"}, resources=False)
            for i in range(300):
                run.log({"loss": 1.0 / (i + 1), "acc": i / 300}, step=i)
            run.log({"loss": math.nan}, step=300)
            run.log_event("could not open shard 7", level="error", component="data")
            with run.stage("train"):
                pass
            run.note("lr too high?")
            run.finish()
    """,
    )
    cli(home, "alerts", "silence", "loss-*", "--for", "1h")
    env = child_env(home)
    before = {args: cli(home, *args, "--format", "json", env=env).stdout for args in _views(home)}
    copied = json.loads(cli(home, "migrate-store", str(home), postgres_uri, "--format", "json").stdout)
    assert copied["runs"] == 2 and copied["rows"]["metric_chunks"] >= 4 and copied["rows"]["alert_silences"] == 1
    on_pg = {**env, "FLIGHTLOG_STORE": postgres_uri}
    after = {args: cli(home, *args, "--format", "json", env=on_pg).stdout for args in _views(home)}
    assert after == before
    again = cli(home, "migrate-store", str(home), postgres_uri, check=False)
    assert again.returncode != 0 and "already holds data" in again.stderr
    # the copy goes on where the original left off: new chunks get new ids after the copied ones
    run_script(
        home,
        """
        import flightlog
        run = flightlog.init(project="vision", name="after", resources=False)
        run.log({"loss": 0.5}, step=0)
        run.finish()
    """,
        env=on_pg,
    )
    assert len(json.loads(cli(home, "runs", "ls", "--format", "json", env=on_pg).stdout)) == 3


def _views(home: Path) -> list[tuple[str, ...]]:
    ids = [r["id"] for r in json.loads(cli(home, "runs", "ls", "--format", "json").stdout)]
    views: list[tuple[str, ...]] = [("runs", "ls"), ("projects",), ("alerts", "silences")]
    for run_id in ids:
        views += [("runs", "show", run_id), ("logs", run_id), ("metrics", run_id, "loss")]
    return views


def test_the_change_position_moves_with_this_store_s_writes_only(postgres_uri: str, empty_db: str) -> None:
    """A cache keyed on the change position (the triage report's) is reused while the store is
    unchanged, however busy the rest of the cluster is, and dropped on the next metric row."""
    store, other = PostgresStore(postgres_uri), PostgresStore(empty_db)
    try:
        store.ingest([{"k": "run", "r": "pos", "w": "w1", "s": 1, "t": 1.0, "project": "vision", "status": "running"}])
        before = store.change_position()
        other.ingest([{"k": "run", "r": "elsewhere", "w": "w1", "s": 1, "t": 1.0, "status": "running"}])
        other.ingest(_batch("elsewhere", "w1", 2, 3))  # another database's transactions, committed
        assert store.change_position() == before
        store.ingest(_batch("pos", "w1", 2, 1))
        assert store.change_position() != before
    finally:
        store.close()
        other.close()
