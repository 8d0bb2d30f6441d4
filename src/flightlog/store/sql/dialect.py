"""What differs between the SQL of the SQLite and the PostgreSQL store, beyond the placeholder.

The shared queries (the mixins that make ``store/sql/store.py``'s ``SqlStore``, and
``store/sql/ingest.py``) are written once, with ``?`` placeholders; each backend gives one
:class:`Dialect` for the few spellings that differ.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any, Protocol

from flightlog.store.changes import FEED_TABLES

__all__ = ["Dialect", "newest_feed_ids", "sql_savepoint"]


class Dialect(Protocol):
    #: the errors of an INSERT that a unique key refused (a feature's "already exists")
    unique_violation: tuple[type[Exception], ...]
    #: the placeholder of the filter compiler's SQL (``flightlog.query.compile_runs_query``)
    placeholder: str
    #: after ``ORDER BY`` a text column: order by code point on either store
    collate: str
    #: the metric_series upsert of one series summary (named parameters: run, name, count, …)
    series_upsert: str
    #: errors of one broken journal record, besides KeyError, TypeError, ValueError, IndexError
    record_errors: tuple[type[Exception], ...]

    def any_of(self, column: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
        """``column`` equal to one of ``values``: the condition and its arguments."""
        ...

    def prefix(self, column: str, text: str) -> tuple[str, list[Any]]:
        """``column`` starting with ``text`` (letters, digits, ``_.-``): the condition and its arguments."""
        ...

    def insert_id(self, conn: Any, sql: str, args: Sequence[Any]) -> int:
        """Run an INSERT into a table keyed by ``id``; the id of the new row."""
        ...

    def or_ignore(self, sql: str) -> str:
        """An ``INSERT INTO …`` that does nothing where the row exists (or a constraint says no)."""
        ...

    def filter_cursor(self, conn: Any) -> Any:
        """What runs the filter compiler's query (its numbers typed as the store needs)."""
        ...

    def ingest_marks(self, conn: Any, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], int]:
        """The ``ingested`` high-water mark of each (run, writer) of ``keys`` that has one."""
        ...

    def append_rows(self, conn: Any, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        """Append rows to a chunk table (no conflict possible: ids are the table's own)."""
        ...

    def savepoint(self, conn: Any, name: str) -> AbstractContextManager[Any]:
        """A savepoint around the block: released at its end, rolled back (and the error raised
        again) when the block raises. Every statement of the block has run when it ends (on
        PostgreSQL, in pipeline mode, it waits for them), so their errors are raised inside it."""
        ...

    def feed_cursor(self, conn: Any) -> dict[str, int]:
        """Where every feed table (``store/changes.py``) stands now: what ``feed_window`` reads up to."""
        ...

    def feed_horizon(self, conn: Any) -> dict[str, int]:
        """A cursor that ``feed_cursor`` reaches only once every row committed by now is inside
        a window up to it: what a reader that saw a run end waits for before it takes the run's
        rows as complete (``alerts/feeds/store.py``)."""
        ...

    def feed_marks(self, conn: Any) -> str:
        """What changes whenever a row is added to a feed table of this store, and only then
        (``change_position``: a cache is kept while it stays the same)."""
        ...

    def feed_window(self, after: int, upto: int) -> tuple[str, list[Any]]:
        """The rows of a feed table committed after cursor ``after`` and by cursor ``upto``: the
        condition and its arguments (0: from the first row)."""
        ...


def newest_feed_ids(conn: Any) -> dict[str, int]:
    """The newest id of every feed table (``store/changes.py``), read in one statement (one
    snapshot), each from its primary key's end: no scan. SQLite's feed cursor; PostgreSQL's
    change marks (its cursor is a transaction id instead)."""
    row = conn.execute("SELECT " + ", ".join(f"(SELECT COALESCE(MAX(id), 0) FROM {t})" for t in FEED_TABLES)).fetchone()
    return {t: int(v) for t, v in zip(FEED_TABLES, row, strict=True)}


@contextmanager
def sql_savepoint(conn: Any, name: str) -> Iterator[None]:
    """A savepoint in plain SQL (SQLite's; see :meth:`Dialect.savepoint`)."""
    conn.execute(f"SAVEPOINT {name}")
    try:
        yield
    except BaseException:
        conn.execute(f"ROLLBACK TO SAVEPOINT {name}")
        conn.execute(f"RELEASE SAVEPOINT {name}")
        raise
    conn.execute(f"RELEASE SAVEPOINT {name}")
