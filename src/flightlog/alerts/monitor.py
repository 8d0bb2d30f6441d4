"""Live evaluation for one run, inside ``flightlog run``: a thread that evaluates the rules
every ``settings.interval`` on the run's new points, and a last evaluation when it ends.

    monitor = start_monitor(run, options.alerts)   # after the run starts
    ...
    monitor.stop(final=True)                        # after the run's final status is stored

Whatever happens here — a broken rules file found by discovery, a locked store, a notifier
that is down — is reported on stderr and never stops or fails the workload.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from flightlog.errors import FlightlogError
from flightlog.notices import notice

__all__ = ["Monitor", "start_monitor", "LiveMonitor", "NullMonitor"]


def _say(message: str) -> None:
    notice(message)


class Monitor(Protocol):
    def stop(self, final: bool = True) -> None: ...


class NullMonitor:
    """No rules apply: nothing runs."""

    def stop(self, final: bool = True) -> None:
        pass


class LiveMonitor:
    def __init__(
        self,
        engine: Any,
        interval: float,
        *,
        dispatcher: Any = None,
        on_close: Callable[[], None] | None = None,
        flush_timeout: float = 20.0,
        settle_timeout: float = 5.0,
        say: Callable[[str], None] = _say,
    ) -> None:
        """``settle_timeout``: how long the last evaluation waits for the run's last rows to be
        readable (PostgreSQL: an older transaction of another writer still open; the feed's
        ``settling``), evaluating again every 50 ms; then it ends as it is."""
        self.engine = engine
        self.interval = interval
        self.dispatcher = dispatcher
        self.on_close = on_close
        self.flush_timeout = flush_timeout
        self.settle_timeout = settle_timeout
        self.say = say
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="flightlog-alerts", daemon=True)
        self._lock = threading.Lock()

    def start(self) -> LiveMonitor:
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self._cycle()

    def _cycle(self) -> None:
        with self._lock:
            try:
                self.engine.cycle()
            except Exception as exc:  # noqa: BLE001 - never let alerting take the run down
                self.say(f"alerts: evaluation failed: {type(exc).__name__}: {exc}")

    def stop(self, final: bool = True) -> None:
        self._stop.set()
        self._thread.join(timeout=max(5.0, 2 * self.interval))
        if final:
            self._cycle()
            deadline = time.monotonic() + self.settle_timeout
            while getattr(self.engine.feed, "settling", False) and time.monotonic() < deadline:
                time.sleep(0.05)
                self._cycle()
        try:
            if self.dispatcher is not None and not self.dispatcher.close(self.flush_timeout):
                self.say(f"alerts: some notifications were still being sent after {self.flush_timeout:g}s; gave up")
        finally:
            if self.on_close is not None:
                try:
                    self.on_close()
                except Exception:  # noqa: BLE001
                    pass


def start_monitor(run: Any, alerts: str | Path | None = None, *, say: Callable[[str], None] = _say) -> Monitor:
    """Start watching ``run`` (a ``flightlog.Run``) with the discovered rules; a NullMonitor when
    there are none, when the run reports to a server (the server evaluates), or when the
    rules cannot be used (reported on stderr)."""
    try:
        return _start(run, alerts, say)
    except Exception as exc:  # noqa: BLE001 - alerting is never a reason for the run to fail
        message = exc.message if isinstance(exc, FlightlogError) else f"{type(exc).__name__}: {exc}"
        say(f"alerts are off for this run: {message}")
        return NullMonitor()


def _start(run: Any, alerts: str | Path | None, say: Callable[[str], None]) -> Monitor:
    from flightlog.alerts.discovery import discover

    settings = run.settings
    path = discover(alerts, home=settings.home)
    if path is None:
        return NullMonitor()
    from flightlog.alerts.config import load_config  # the rule kinds: loaded only with a rules file

    config = load_config(path)
    if not config.rules:
        return NullMonitor()
    if settings.mode != "online" or settings.url:
        if alerts is not None:
            where = "the server evaluates them" if settings.url else f"FLIGHTLOG_MODE={settings.mode}"
            say(f"alerts from {path} are not evaluated by the runner here: {where}")
        return NullMonitor()
    from flightlog.alerts.dispatch import Dispatcher
    from flightlog.alerts.engine import AlertEngine
    from flightlog.alerts.feeds.store import StoreFeed
    from flightlog.alerts.lookup import Lookup
    from flightlog.alerts.stores import open_alert_store
    from flightlog.client import Client

    client = Client(settings=settings)
    try:
        alert_store = open_alert_store(client.store)
        feed = StoreFeed(client.store, run_id=run.id)
    except Exception:
        client.close()
        raise

    def failed(done: Any) -> None:
        o = done.outcome
        say(
            f"alerts: notifier {o.notifier} failed after {o.attempts} attempt{'s' if o.attempts != 1 else ''}: {o.error}"
        )

    dispatcher = Dispatcher(alert_store, on_failure=failed)
    engine = AlertEngine(
        config,
        feed,
        alert_store,
        Lookup(client.store, diagnose=client.diagnose),
        dispatcher,
        on_error=lambda m: say(f"alerts: {m}"),
        load_run=run.id,
    )
    for warning in config.warnings:
        say(f"alerts: {warning.render(config.source)}")
    missing = config.missing_env()
    if missing:
        say(f"alerts: notifiers reference unset environment variables: {', '.join(missing)}")
    monitor = LiveMonitor(engine, config.settings.interval, dispatcher=dispatcher, on_close=client.close, say=say)
    monitor.start()
    return monitor
