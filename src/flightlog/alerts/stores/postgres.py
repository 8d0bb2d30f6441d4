"""Alerts in the PostgreSQL store, on the store's connection pool: PostgreSQL's dialect of
:class:`~flightlog.alerts.stores.sql.SqlAlertStore`. Its row-level compare-and-set is what lets
several servers evaluate the same rules over one PostgreSQL and send each notification once."""

from __future__ import annotations

from flightlog.alerts.stores.sql import SqlAlertStore

__all__ = ["PostgresAlertStore"]


class PostgresAlertStore(SqlAlertStore):
    placeholder = "%s"
    least = "LEAST"
    same = "{column} IS NOT DISTINCT FROM ?::double precision"

    def _unique_violation(self) -> type[Exception]:
        import psycopg

        return psycopg.errors.UniqueViolation
