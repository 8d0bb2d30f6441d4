"""Alert stores, chosen by the database of the run store they live beside (``store.backend``,
from one table: no ``if backend ==`` and no type probing elsewhere)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flightlog.alerts.stores.base import CLAIMS, AlertEvent, AlertStore
from flightlog.alerts.stores.memory import MemoryAlertStore
from flightlog.errors import InvalidInput
from flightlog.store.base import feature_store

__all__ = ["AlertStore", "AlertEvent", "CLAIMS", "MemoryAlertStore", "open_alert_store", "register"]


def _sqlite(store: Any) -> AlertStore:
    from flightlog.alerts.stores.sqlite import SqliteAlertStore  # cost: the store's own backend only

    return SqliteAlertStore(store.db)


def _postgres(store: Any) -> AlertStore:
    from flightlog.alerts.stores.postgres import PostgresAlertStore  # cost: as above (psycopg)

    return PostgresAlertStore(store.db)


def _http(store: Any) -> AlertStore:
    from flightlog.alerts.stores.http import HttpAlertStore  # cost: as above (httpx)

    return HttpAlertStore(store)


#: the alert store of each run store's database (``Store.backend``)
_BUILDERS: dict[str, Callable[[Any], AlertStore]] = {"sqlite": _sqlite, "postgresql": _postgres, "http": _http}


def register(backend: str, build: Callable[[Any], AlertStore]) -> None:
    """The alert store of the run stores on ``backend`` (``Store.backend``), replacing any before."""
    _BUILDERS[backend] = build


def open_alert_store(store: Any) -> AlertStore:
    """The alert store that lives beside ``store`` (a run store from the registry)."""
    found = feature_store(store, _BUILDERS)
    if found is None:
        raise InvalidInput(
            f"alerts are kept in the embedded store, in PostgreSQL or by a flightlog server; {type(store).__name__} keeps none "
            "(unset FLIGHTLOG_STORE, or point FLIGHTLOG_URL at a server)"
        )
    return found
