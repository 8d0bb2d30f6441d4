"""An engine over every run of a store (embedded SQLite or PostgreSQL): what ``flightlog alerts watch`` and the
server's background evaluation run."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flightlog.alerts.config import AlertConfig
from flightlog.alerts.dispatch import Delivered, Dispatcher
from flightlog.alerts.engine import AlertEngine
from flightlog.alerts.lookup import Lookup
from flightlog.alerts.stores import open_alert_store
from flightlog.errors import InvalidInput

__all__ = ["build_engine"]


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
