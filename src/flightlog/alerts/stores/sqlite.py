"""Alerts in the embedded SQLite store, on the store's own connection: SQLite's dialect of
:class:`~flightlog.alerts.stores.sql.SqlAlertStore` (writes are ``BEGIN IMMEDIATE`` transactions)."""

from __future__ import annotations

import sqlite3

from flightlog.alerts.stores.sql import SqlAlertStore

__all__ = ["SqliteAlertStore"]


class SqliteAlertStore(SqlAlertStore):
    placeholder = "?"
    least = "MIN"
    same = "{column} IS ?"

    def _unique_violation(self) -> type[Exception]:
        return sqlite3.IntegrityError
