"""An engine over every run of a store (embedded SQLite or PostgreSQL): what ``flightlog alerts watch`` and the
server's background evaluation run.

On a server (`AlertService`, started by alerts' ``flightlog_server_start`` hook) the evaluation
runs in one thread per server process, over the server's own store, with the rules of
``ServerConfig.alerts`` (``flightlog server --alerts``) else ``./flightlog.alerts.yaml``, else
``HOME/alerts.yaml``. Several replicas on one store agree through the store's compare-and-set
transitions: each alert fires, and is notified, once.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from flightlog.alerts.config import AlertConfig, discover, load_config
from flightlog.alerts.dispatch import Delivered, Dispatcher
from flightlog.alerts.engine import AlertEngine
from flightlog.alerts.lookup import Lookup
from flightlog.alerts.stores import open_alert_store
from flightlog.client import Client
from flightlog.errors import FlightlogError, InvalidInput

__all__ = ["AlertService", "build_engine", "start_alert_service"]

log = logging.getLogger("flightlog.server.alerts")  # the server's logger, as before the move


def build_engine(
    client: Any, config: AlertConfig, *, say: Callable[[str], None], started: float | None = None
) -> tuple[AlertEngine, Dispatcher]:
    """An engine (and its dispatcher) over every run of ``client``'s store."""
    from flightlog.alerts.feeds.store import StoreFeed, feeds_changes

    store = client.store
    if not feeds_changes(store):
        raise InvalidInput(
            "live evaluation of every run needs a store (the embedded one or PostgreSQL); "
            "a flightlog server evaluates the runs that report to it"
        )
    alert_store = open_alert_store(store)

    def failed(done: Delivered) -> None:
        o = done.outcome
        say(
            f"alerts: notifier {o.notifier} failed after {o.attempts} attempt{'s' if o.attempts != 1 else ''}: {o.error}"
        )

    dispatcher = Dispatcher(alert_store, on_failure=failed)
    feed = StoreFeed(store, lookback=config.settings.lookback, started=started)
    engine = AlertEngine(
        config,
        feed,
        alert_store,
        Lookup(store, diagnose=client.diagnose),
        dispatcher,
        on_error=lambda m: say(f"alerts: {m}"),
        load_run=None,
    )
    return engine, dispatcher


class AlertService:
    """Evaluates the rules over every run of the server's store, every ``settings.interval``,
    while this server leads: of several servers sharing one PostgreSQL, one evaluates at a time
    (``store.leadership``), and another takes over, adopting the open alerts, when it stops."""

    def __init__(self, home: Path, store_uri: str, path: Path) -> None:
        self.path = path
        self.config = load_config(path)
        self.client = Client(home=home, store=store_uri)
        self.lead = self.client.store.leadership("alerts")  # type: ignore[attr-defined]
        # built now so that a broken setup is reported at start; rebuilt when the lead comes back
        self.engine: Any = None
        self.dispatcher: Any = None
        self._build()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="flightlog-alerts", daemon=True)

    def start(self) -> AlertService:
        log.info("evaluating %d alert rules from %s", len(self.config.rules), self.path)
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.wait(self.config.settings.interval):
            try:
                if not self.lead.held():
                    self._step_down()
                    continue
                if self.engine is None:
                    self._build()
                self.engine.cycle()
            except Exception:  # noqa: BLE001 - alerting never takes the server down
                log.exception("alert evaluation failed")

    def _build(self) -> None:
        self.engine, self.dispatcher = build_engine(self.client, self.config, say=log.warning)

    def _step_down(self, timeout: float = 10.0) -> None:
        if self.dispatcher is not None:
            self.dispatcher.close(timeout)
        self.engine = self.dispatcher = None

    def stop(self, final: bool = True, timeout: float = 10.0) -> None:
        """Stop evaluating (a `flightlog.plugins.Watcher`: ``final`` is the server shutting down)."""
        self._stop.set()
        if self._thread.ident is not None:  # started (a service with no rules never is)
            self._thread.join(timeout=timeout)
        self._step_down(timeout)
        self.lead.release()
        self.client.close()


def start_alert_service(home: Path, store_uri: str, rules: str | None) -> AlertService | None:
    """The background evaluation of a server at ``home`` over ``store_uri``, when a rules file is
    there (``rules``, else the usual places: `discover`); never fails the server."""
    try:
        path = discover(rules, home=home)
        if path is None:
            return None
        service = AlertService(home, store_uri, path)
        if not service.config.rules:
            service.stop(timeout=0)
            return None
        return service.start()
    except FlightlogError as exc:
        log.error("alerts are off: %s", exc.message)
    except Exception:  # noqa: BLE001
        log.exception("alerts are off")
    return None
