"""The registry's storage, chosen by the run store it lives beside (as ``alerts/stores``):
the embedded SQLite store and PostgreSQL keep it in their own database; a flightlog server is
reached through its API (``registry/remote.py``), so no ``if backend ==`` appears elsewhere."""

from __future__ import annotations

from typing import Any

from flightlog.registry.migrations import MIGRATIONS
from flightlog.registry.stores.sql import SqlRegistryStore
from flightlog.store.features import ensure_tables
from flightlog.store.sqlite.connection import Database

__all__ = ["SqlRegistryStore", "sql_store_of"]


def sql_store_of(store: Any) -> SqlRegistryStore | None:
    """The registry tables in ``store``'s database, or None for a store that has none (a server's)."""
    import sqlite3

    db = getattr(store, "db", None)
    if isinstance(db, Database):
        ensure_tables(db, MIGRATIONS)
        return SqlRegistryStore(db, sqlite3.IntegrityError)
    try:
        from flightlog.store.postgres.connection import PgDatabase  # optional: flightlog[postgres]
    except ImportError:  # psycopg is not installed: no store can be a PostgreSQL one
        return None
    if isinstance(db, PgDatabase):
        import psycopg

        ensure_tables(db, MIGRATIONS)
        return SqlRegistryStore(db, psycopg.errors.UniqueViolation)
    return None
