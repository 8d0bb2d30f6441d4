"""The queries of the SQL stores (SQLite, PostgreSQL), written once: both stores hold the same
data model (migration N of one is migration N of the other) and answer every question alike.

A backend gives its :class:`SqlDatabase` (``read``, ``write``, ``budgeted_read``), its
:class:`~flightlog.store.sql.dialect.Dialect`, and what only it does: ``leadership`` and
``reclaim_space``. :class:`SqlStore` is composed of one mixin per concern, each over
:class:`~flightlog.store.sql.core.SqlCore` (the database, the dialect, the query deadline; why
mixins: see ``core.py``):

- ``writes.py``: ingest, and the direct changes to a run (status, attempt, note, delete);
- ``runs.py``: which runs: resolve an id, get, search by filter, projects, sizes, children;
- ``details.py``: one run's notes, context, artifacts and evidence;
- ``events.py``: one run's metric series, logs, stages, resource samples and ranks;
- ``streams.py``: a run's live streams (new log events and metric points after a cursor);
- ``access.py``: the server's access checks: runs' and blobs' projects, tokens, sessions, secrets;
- ``changefeed.py``: the change feed over every run that alerts read (``store/changes.py``).
"""

from __future__ import annotations

from flightlog.store.sql.access import SqlAccess
from flightlog.store.sql.changefeed import SqlChangeFeed
from flightlog.store.sql.core import SqlDatabase
from flightlog.store.sql.details import SqlDetails
from flightlog.store.sql.events import SqlEvents
from flightlog.store.sql.runs import SqlRuns
from flightlog.store.sql.streams import SqlStreams
from flightlog.store.sql.writes import SqlWrites

__all__ = ["SqlDatabase", "SqlStore"]


class SqlStore(SqlWrites, SqlRuns, SqlDetails, SqlEvents, SqlStreams, SqlAccess, SqlChangeFeed):
    """Every query of a SQL store; a backend subclasses it and sets ``db`` and ``dialect``."""
