"""The live feed over PostgreSQL, where transactions commit out of the order of their ids: a run
whose end commits while an older transaction (any writer of the cluster: another run's ingest,
the alert store's own writes, a server's lease) is still open is read as ended before its last
points are — those come in the window once the older transaction ends. The feed holds such a
run's end back until then, so its last points are judged, not dropped."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

import flightlog
from flightlog.alerts.config import parse_config
from flightlog.alerts.dispatch import Dispatcher
from flightlog.alerts.engine import AlertEngine
from flightlog.alerts.feeds.store import StoreFeed
from flightlog.alerts.lookup import Lookup
from flightlog.alerts.monitor import LiveMonitor
from flightlog.alerts.stores import open_alert_store
from tests.alerts.test_kinds import sdk_run

RULES = """
rules:
  - name: loss-nan
    kind: non_finite
"""


@pytest.fixture
def pg_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, postgres_uri: str) -> Iterator[tuple[Path, str]]:
    for name in [n for n in os.environ if n.startswith("FLIGHTLOG_")]:
        monkeypatch.delenv(name, raising=False)
    home = tmp_path / "home"
    monkeypatch.setenv("FLIGHTLOG_HOME", str(home))
    monkeypatch.setenv("FLIGHTLOG_STORE", postgres_uri)
    monkeypatch.chdir(tmp_path)
    yield home, postgres_uri


def test_a_run_that_ended_while_an_older_transaction_was_open_has_its_last_points_judged(
    pg_home: tuple[Path, str],
) -> None:
    home, uri = pg_home
    client = flightlog.Client(home=home)
    store = open_alert_store(client.store)
    engine = AlertEngine(
        parse_config(RULES, "rules.yaml"),
        StoreFeed(client.store, started=time.time()),
        store,
        Lookup(client.store),
        Dispatcher(store, threaded=False),
        load_run=None,
    )
    engine.cycle()
    with psycopg.connect(uri) as older:  # another writer's transaction, begun first and still open
        older.execute("SELECT pg_current_xact_id()")  # it has its id now: the feed's window waits for it
        run = sdk_run(home, "run.log({'loss': float('nan')}, step=0)", project="p", name="job")
        engine.cycle()  # the run's end is committed; its NaN is in a transaction younger than the open one
        older.rollback()
    engine.cycle()
    engine.cycle()
    fired = [(a.rule, a.run_id) for a in store.alerts() if a.fired_at is not None]
    assert fired == [("loss-nan", run)]  # it fired (and was resolved as the run ended)


def test_flightlog_run_s_last_evaluation_waits_for_its_run_s_last_points(pg_home: tuple[Path, str]) -> None:
    """The same for the runner watching its own run: its last evaluation, once the run ended,
    evaluates again while the run's last rows are not readable yet, and so judges them."""
    home, uri = pg_home
    client = flightlog.Client(home=home)
    store = open_alert_store(client.store)
    with psycopg.connect(uri) as older:
        older.execute("SELECT pg_current_xact_id()")
        run = sdk_run(home, "run.log({'loss': float('nan')}, step=0)", project="p", name="job")
        engine = AlertEngine(
            parse_config(RULES, "rules.yaml"),
            StoreFeed(client.store, run_id=run),
            store,
            Lookup(client.store),
            Dispatcher(store, threaded=False),
            load_run=run,
        )
        monitor = LiveMonitor(engine, 60.0).start()  # it waits up to 5 s: the transaction ends after 0.5 s
        ends = threading.Timer(0.5, older.rollback)  # the other writer's transaction ends meanwhile
        ends.start()
        monitor.stop(final=True)
        ends.join()
    fired = [(a.rule, a.run_id) for a in store.alerts() if a.fired_at is not None]
    assert fired == [("loss-nan", run)]
