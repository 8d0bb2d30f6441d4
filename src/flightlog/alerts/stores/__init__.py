"""Alert stores, chosen by the run store they live beside (no ``if backend ==`` elsewhere)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flightlog.alerts.stores.base import CLAIMS, AlertEvent, AlertStore
from flightlog.alerts.stores.memory import MemoryAlertStore
from flightlog.errors import InvalidInput

__all__ = ["AlertStore", "AlertEvent", "CLAIMS", "MemoryAlertStore", "open_alert_store", "register"]

_BUILDERS: list[tuple[Callable[[Any], bool], Callable[[Any], AlertStore]]] = []


def register(accepts: Callable[[Any], bool], build: Callable[[Any], AlertStore]) -> None:
    _BUILDERS.insert(0, (accepts, build))


def open_alert_store(store: Any) -> AlertStore:
    """The alert store that lives beside ``store`` (a run store from the registry)."""
    for accepts, build in _BUILDERS:
        if accepts(store):
            return build(store)
    raise InvalidInput(
        f"alerts are kept in the embedded store, in PostgreSQL or by a flightlog server; {type(store).__name__} keeps none "
        "(unset FLIGHTLOG_STORE, or point FLIGHTLOG_URL at a server)"
    )


def _is_sqlite(store: Any) -> bool:
    from flightlog.store.sqlite.connection import Database

    return isinstance(getattr(store, "db", None), Database)


def _sqlite(store: Any) -> AlertStore:
    from flightlog.alerts.stores.sqlite import SqliteAlertStore

    return SqliteAlertStore(store.db)


register(_is_sqlite, _sqlite)


def _is_postgres(store: Any) -> bool:
    try:
        from flightlog.store.postgres.connection import PgDatabase
    except ImportError:  # psycopg is not installed: no store can be a PostgreSQL one
        return False
    return isinstance(getattr(store, "db", None), PgDatabase)


def _postgres(store: Any) -> AlertStore:
    from flightlog.alerts.stores.postgres import PostgresAlertStore

    return PostgresAlertStore(store.db)


register(_is_postgres, _postgres)


def _is_http(store: Any) -> bool:
    from flightlog.transport.http_store import HttpStore

    return isinstance(store, HttpStore)


def _http(store: Any) -> AlertStore:
    from flightlog.alerts.stores.http import HttpAlertStore

    return HttpAlertStore(store)


register(_is_http, _http)
