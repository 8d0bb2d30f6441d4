"""The state machine and the router on the real embedded store: two evaluators on one store
(a runner and a server sharing FLIGHTLOG_HOME) notify each alert once; repeats follow the
repeat interval of the clock; a silence holds notifications back until it ends."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import flightlog
from flightlog.alerts.config import parse_config
from flightlog.alerts.dispatch import Dispatcher
from flightlog.alerts.engine import AlertEngine
from flightlog.alerts.feeds.store import StoreFeed
from flightlog.alerts.lookup import Lookup
from flightlog.alerts.payload import AlertView, Notification
from flightlog.alerts.routing import Pending
from flightlog.alerts.silences import new_silence
from flightlog.alerts.stores import open_alert_store
from flightlog.alerts.types import Alert
from flightlog.errors import NotFound
from tests.alerts.conftest import Webhook
from tests.alerts.test_kinds import sdk_run
from tests.helpers import child_env, wait_for

RULES = """
settings:
  repeat_interval: 60s
rules:
  - name: keeps-failing
    kind: consecutive_failures
    count: 2
    severity: critical
notifiers:
  - kind: webhook
    url: {url}
    retries: 0
"""


def engine(home: Path, url: str, started: float) -> tuple[AlertEngine, Any]:
    client = flightlog.Client(home=home)
    config = parse_config(RULES.format(url=url), "rules.yaml")
    store = open_alert_store(client.store)
    eng = AlertEngine(
        config,
        StoreFeed(client.store, started=started),
        store,
        Lookup(client.store),
        Dispatcher(store, threaded=False),
        load_run=None,
    )
    return eng, client


def fail(home: Path) -> str:
    return sdk_run(home, "run.finish('failed')", project="p", name="job")


def test_two_evaluators_on_one_store_notify_once(ahome: Path, webhook: Webhook) -> None:
    started = time.time()
    a, client_a = engine(ahome, webhook.url, started)
    b, client_b = engine(ahome, webhook.url, started)
    a.cycle(), b.cycle()
    fail(ahome)
    second = fail(ahome)
    changes_a, changes_b = a.cycle().changes, b.cycle().changes
    assert [(c.new, c.alert.run_id) for c in changes_a + changes_b] == [("firing", second)]
    assert webhook.alerts() == [("keeps-failing", "firing", "new")]
    fail(ahome)  # a third failure: still the same alert, firing
    a.cycle(), b.cycle()
    assert len(webhook.payloads) == 1
    sdk_run(ahome, "pass", project="p", name="job")  # a success ends the streak
    resolved = b.cycle().changes + a.cycle().changes
    assert [c.new for c in resolved] == ["resolved"]
    assert webhook.alerts() == [("keeps-failing", "firing", "new"), ("keeps-failing", "resolved", "resolved")]
    [alert] = open_alert_store(client_a.store).alerts()
    assert (
        alert.state == "resolved"
        and alert.resolved_reason == "succeeded"
        and alert.labels == {"project": "p", "name": "job"}
    )
    client_a.close()
    client_b.close()


def test_repeats_follow_the_repeat_interval(ahome: Path, webhook: Webhook) -> None:
    started = time.time()
    eng, client = engine(ahome, webhook.url, started)
    fail(ahome)
    fail(ahome)
    now = time.time()
    eng.cycle(now)
    for offset, expected in ((10, 1), (59, 1), (61, 2), (62, 2), (100, 2), (122, 3)):
        eng.cycle(now + offset)
        assert len(webhook.payloads) == expected, offset
    assert [reason for _, _, reason in webhook.alerts()] == ["new", "repeat", "repeat"]
    assert webhook.payloads[1]["title"] == "[FIRING:1] (still firing) keeps-failing · p/job"
    client.close()


def test_a_silence_holds_notifications_until_it_ends(ahome: Path, webhook: Webhook) -> None:
    started = time.time()
    eng, client = engine(ahome, webhook.url, started)
    store = open_alert_store(client.store)
    silence = new_silence("keeps-*", 30, {"project": "p"})
    store.add_silence(silence)
    fail(ahome)
    fail(ahome)
    now = time.time()
    assert [c.new for c in eng.cycle(now).changes] == ["firing"]
    eng.cycle(now + 10)
    assert webhook.payloads == []
    [alert] = store.alerts()
    assert alert.silenced_by == silence.id and alert.state == "firing"
    eng.cycle(silence.ends + 1)  # the silence ended, the alert still fires: it is notified now
    assert webhook.alerts() == [("keeps-failing", "firing", "new")]
    events = [e["event"] for e in store.events()]
    assert events == ["firing", "silenced", "notified"]
    client.close()


def test_a_notification_that_resolves_one_alert_and_fires_another_records_each_ones_status(
    ahome: Path, webhook: Webhook
) -> None:
    """One evaluation can resolve an alert of a run and fire another: the notification is
    "mixed", and the history says of each alert what the notification said of it."""
    client = flightlog.Client(home=ahome)
    store = open_alert_store(client.store)
    now = time.time()
    gone, new = (
        Alert(f"a{i}", f"f{i}", rule, "threshold", "warning", {"run": "r1"}, state, run_id="r1", fired_at=now)
        for i, (rule, state) in enumerate((("silent", "resolved"), ("cpu-idle", "firing")))
    )
    for alert in (gone, new):
        assert store.create(alert)
    notifier = parse_config(RULES.format(url=webhook.url), "rules.yaml").notifiers[0]
    views = [AlertView(gone, status="resolved"), AlertView(new, status="firing")]
    Dispatcher(store, threaded=False).submit(Pending(notifier, Notification("mixed", "run=r1", {"run": "r1"}, views)))
    assert webhook.alerts() == [("silent", "resolved", "mixed"), ("cpu-idle", "firing", "mixed")]
    notified = {(e["rule"], e["detail"]["status"]) for e in store.events() if e["event"] == "notified"}
    assert notified == {("silent", "resolved"), ("cpu-idle", "firing")}
    client.close()


HOLDS = """
import sys, flightlog
run = flightlog.init(project="p", name="held", resources=False)
run.log({"loss": 100.0}, step=0)
print(run.id, flush=True)
sys.stdin.readline()  # the test makes the store refuse to end alerts first
run.finish()
"""

REFUSE_RESOLVING = """
CREATE TRIGGER refuse_resolving BEFORE UPDATE ON alerts WHEN NEW.state = 'resolved'
BEGIN SELECT RAISE(ABORT, 'disk I/O error'); END
"""


def test_an_end_the_store_refused_is_tried_again_until_the_alert_ends(tmp_path: Path, monkeypatch: Any) -> None:
    """The feed says a run finished once: when the store refuses to end its alert at that moment
    (a real SQLite error, raised by a trigger), the engine tries again in later cycles; the alert
    must not stay firing for a run that has ended."""
    home = tmp_path / "home"
    monkeypatch.setenv("FLIGHTLOG_HOME", str(home))
    monkeypatch.delenv("FLIGHTLOG_STORE", raising=False)
    monkeypatch.delenv("FLIGHTLOG_URL", raising=False)
    client = flightlog.Client(home=home)
    rules = "rules:\n  - {name: loss-high, kind: threshold, metric: loss, op: '>', value: 10}\n"
    store = open_alert_store(client.store)
    errors: list[str] = []
    eng = AlertEngine(
        parse_config(rules, "rules.yaml"),
        StoreFeed(client.store, started=time.time() - 5),
        store,
        Lookup(client.store),
        on_error=errors.append,
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDS], env=child_env(home), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None and proc.stdin is not None
        run_id = proc.stdout.readline().strip()

        def stored() -> bool:
            try:
                return "loss" in client.run(run_id).metrics
            except NotFound:  # not shipped yet
                return False

        wait_for(stored, "the point in the store")
        assert [c.new for c in eng.cycle().changes] == ["firing"]
        with sqlite3.connect(client.store.db.path) as db:
            db.execute(REFUSE_RESOLVING)
        proc.stdin.write("\n")
        proc.stdin.flush()
        assert proc.wait(timeout=60) == 0
        assert eng.cycle().changes == []  # the run's end is seen, and its alert cannot be ended
        assert any("disk I/O error" in e for e in errors), errors
        assert [a.state for a in store.alerts()] == ["firing"]
        with sqlite3.connect(client.store.db.path) as db:
            db.execute("DROP TRIGGER refuse_resolving")
        assert [(c.new, c.alert.resolved_reason) for c in eng.cycle().changes] == [("resolved", "run_ended")]
        assert [a.state for a in store.alerts()] == ["resolved"]
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()
