"""What every concern of the SQL store stands on: its database, its dialect, the query deadline.

The queries of :class:`~flightlog.store.sql.store.SqlStore` are split by concern into mixins
(``writes.py``, ``runs.py``, ``details.py``, ``events.py``, ``streams.py``, ``access.py``,
``changefeed.py``), each a subclass of :class:`SqlCore`. Mixins over one small base, rather than
objects the store delegates to, because the store's surface is one flat set of methods (the
``StoreReader``/``StoreWriter`` protocols, ``store/base.py``): a mixin adds its methods to that
surface as they are, with no forwarding method to keep in step, and each reads only what
:class:`SqlCore` declares (``db``, ``dialect``, ``_deadline``), never another mixin's methods.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol, TypeVar

from flightlog.store.budget import Deadline, query_timeout_from_env
from flightlog.store.sql.dialect import Dialect

__all__ = ["SqlCore", "SqlDatabase", "parts"]

T = TypeVar("T")

_PART = 500  # ids per ``IN (…)``: well under SQLite's limit of bound variables


class SqlDatabase(Protocol):
    def read(self) -> AbstractContextManager[Any]: ...
    def write(self, *, append: bool = False) -> AbstractContextManager[Any]:
        """One transaction; ``append=True`` for one that deletes chunk rows (or copies a store)."""
        ...

    def ingest_transaction(self, run_ids: Sequence[str], work: Callable[[Any], T]) -> T:
        """``work(conn)`` in one transaction that appends to these runs (ingest): each run's
        appends commit in the order of their ids, whatever else commits meanwhile (see the
        backends)."""
        ...

    def budgeted_read(self, deadline: Deadline) -> AbstractContextManager[Any]: ...
    def close(self) -> None: ...


class SqlCore:
    """A backend sets ``db`` and ``dialect`` (see ``store/sqlite/store.py``, ``store/postgres/store.py``)."""

    db: SqlDatabase
    dialect: Dialect

    def __init__(self) -> None:
        self._query_timeout: float | None = None
        self._query_timeout_read = False

    @property
    def query_timeout(self) -> float | None:
        """Seconds a search (runs by filter, logs by grep) may take; None: no limit.

        FLIGHTLOG_QUERY_TIMEOUT by default (read on the first search, so a writer never fails
        over a reader's setting); the server sets it from ``--query-timeout``.
        """
        if not self._query_timeout_read:
            self._query_timeout, self._query_timeout_read = query_timeout_from_env(), True
        return self._query_timeout

    @query_timeout.setter
    def query_timeout(self, seconds: float | None) -> None:
        self._query_timeout, self._query_timeout_read = seconds or None, True

    def _deadline(self) -> Deadline:
        return Deadline(self.query_timeout)

    def close(self) -> None:
        self.db.close()


def parts(ids: list[str]) -> Iterator[list[str]]:
    for start in range(0, len(ids), _PART):
        yield ids[start : start + _PART]
