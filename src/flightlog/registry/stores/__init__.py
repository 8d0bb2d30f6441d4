"""The registry's storage, chosen by the database of the run store it lives beside
(``store.backend``, from one table, as ``alerts/stores``): the embedded SQLite store and
PostgreSQL keep it in their own database; a flightlog server is reached through its API
(``registry/remote.py``), so no ``if backend ==`` appears elsewhere."""

from __future__ import annotations

from typing import Any

from flightlog.registry.migrations import MIGRATIONS
from flightlog.registry.stores.sql import SqlRegistryStore
from flightlog.store.base import feature_store
from flightlog.store.features import ensure_tables

__all__ = ["SqlRegistryStore", "open_registry_store", "sql_store_of"]


def open_registry_store(store: Any) -> SqlRegistryStore:
    """The registry's tables in a SQL run store's own database (either dialect: the store's ``db``
    and ``dialect``)."""
    ensure_tables(store.db, MIGRATIONS)
    return SqlRegistryStore(store.db, store.dialect.unique_violation)


#: the registry's storage of each run store's database (``Store.backend``); a server keeps its own
_BUILDERS = {"sqlite": open_registry_store, "postgresql": open_registry_store}


def sql_store_of(store: Any) -> SqlRegistryStore | None:
    """The registry tables in ``store``'s database, or None for a store that has none (a server's)."""
    return feature_store(store, _BUILDERS)
