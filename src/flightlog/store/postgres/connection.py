"""Opening a PostgreSQL store on purpose: a connection pool, a schema check, clear refusals.

Why a pool: a server answers many requests at once and the SDK ships from a background
thread; each borrows a connection for one transaction and gives it back. Connections run in
autocommit, so a read is one statement and a write is an explicit ``BEGIN … COMMIT``.

Why a lock per run, and no lock across runs: readers of one run's live stream keep a cursor on
its chunk ids and read ``id > cursor``. Ids come from sequences, handed out at insert time, not
at commit, so two transactions appending to one run could commit out of order and a reader
step over a row committed late; and two servers given one writer's batch at once must not both
pass its (run, writer, sequence) check. So an ingest transaction first takes a transaction
advisory lock on each run it writes (:meth:`PgDatabase.write_runs`, in one sorted order: no
deadlock between two of them): one run's appends commit in id order and its check cannot race,
while transactions of different runs (the many writers of a team) run side by side. The alert
feed, which reads every run's new rows at once, does not read by id: it reads by the writing
transaction's id (the ``xid`` column, migration 6; ``dialect.py``), which tells exactly which
rows were committed between two reads whatever order they committed in.

The connections take ``?`` placeholders too (:func:`qmarks`): the queries shared with the
SQLite store (``store/sql/``) are written once, in its style.

The password of the URI never appears in a message: errors name :func:`redact_uri`'s form.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from flightlog.errors import SchemaTooNew, StoreUnavailable
from flightlog.store.budget import Deadline
from flightlog.store.features import apply_feature_migrations, recorded_versions

if TYPE_CHECKING:
    from flightlog.plugins import StoreMigrations
from flightlog.store.postgres.migrations import MIGRATIONS, SCHEMA_VERSION

__all__ = ["PgDatabase", "PgLeadership", "redact_uri", "qmarks", "INGEST_LOCK", "MIGRATE_LOCK", "RUN_LOCK_SPACE"]

#: pg_advisory_xact_lock key of the few writes that touch every run's rows at once (deleting
#: runs, copying a store in): ingest never takes it (see the module doc)
INGEST_LOCK = 0x666C_6967_6874_01  # "flight" 1
#: the first key of the per-run locks of ingest (two-key advisory locks: this, and the run's hash)
RUN_LOCK_SPACE = 0x666C_6901
#: pg_advisory_lock key held while the schema is migrated (several servers start at once)
MIGRATE_LOCK = 0x666C_6967_6874_02
_SECRET_PARAMS = {"password", "passfile", "sslpassword", "sslkey"}
T = TypeVar("T")
_RETRIES = 3  # an ingest transaction that PostgreSQL chose as a deadlock's victim: tried again


def redact_uri(uri: str) -> str:
    """The URI without its password (in the netloc or as a query parameter): safe to print."""
    try:
        parts = urlsplit(uri)
    except ValueError:
        return "postgresql://…"
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, host = netloc.rsplit("@", 1)
        user = userinfo.split(":", 1)[0]
        netloc = f"{user}:***@{host}" if ":" in userinfo else f"{user}@{host}"
    query = [
        (k, "***" if k.lower() in _SECRET_PARAMS else v) for k, v in parse_qsl(parts.query, keep_blank_values=True)
    ]
    return urlunsplit((parts.scheme, netloc, parts.path, urlencode(query, safe="*"), ""))


@functools.lru_cache(maxsize=1024)
def qmarks(query: str) -> str:
    """A query written with ``?`` placeholders (SQLite's style) in psycopg's: ``?`` → ``%s``,
    a literal ``%`` → ``%%``. A query without ``?`` (psycopg's own style) is left as it is, so
    a ``?`` must not appear in the text of a shared query other than as a placeholder."""
    return query.replace("%", "%%").replace("?", "%s") if "?" in query else query


@functools.cache
def _cursor_class() -> type:
    """psycopg's cursor, taking ``?`` placeholders too (see :func:`qmarks`)."""
    from psycopg import Cursor

    class QmarkCursor(Cursor[Any]):
        def execute(self, query: Any, params: Any = None, **kwargs: Any) -> Any:
            if params is not None and isinstance(query, str):
                query = qmarks(query)
            return super().execute(query, params, **kwargs)

        def executemany(self, query: Any, params_seq: Any, **kwargs: Any) -> None:
            super().executemany(qmarks(query) if isinstance(query, str) else query, params_seq, **kwargs)

    return QmarkCursor


def _password(uri: str) -> str | None:
    try:
        parts = urlsplit(uri)
    except ValueError:
        return None
    if parts.password:
        return parts.password
    return dict(parse_qsl(parts.query)).get("password")


class PgDatabase:
    """A pool of connections to one PostgreSQL database, migrated to this code's schema."""

    def __init__(self, uri: str, *, max_size: int = 8, connect_timeout: float = 10.0) -> None:
        import psycopg
        from psycopg_pool import ConnectionPool

        self.uri = uri
        self.safe_uri = redact_uri(uri)
        self._secret = _password(uri)
        self._psycopg = psycopg
        try:
            with psycopg.connect(uri, autocommit=True, connect_timeout=max(1, int(connect_timeout))) as conn:
                self._migrate(conn)
                self._migrate_features(conn)
        except psycopg.Error as exc:
            raise self.unavailable(exc) from None
        self.pool = ConnectionPool(
            uri,
            min_size=1,
            max_size=max_size,
            open=False,
            timeout=30.0,
            name="flightlog",
            kwargs={
                "autocommit": True,
                "connect_timeout": max(1, int(connect_timeout)),
                "cursor_factory": _cursor_class(),
            },
            check=ConnectionPool.check_connection,
        )
        try:
            self.pool.open(wait=True, timeout=connect_timeout + 5)
        except Exception as exc:  # noqa: BLE001 - PoolTimeout and psycopg errors alike
            self.pool.close()
            raise self.unavailable(exc) from None

    def unavailable(self, exc: BaseException) -> StoreUnavailable:
        """A clear error that names the store (never its password) and what went wrong."""
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if self._secret:
            text = text.replace(self._secret, "***")
        return StoreUnavailable(
            f"cannot reach the PostgreSQL store at {self.safe_uri}: {text} "
            "(is the server running and does the URI name the right host, port, database and user?)",
            details={"store": self.safe_uri},
        )

    def _migrate(self, conn: Any) -> None:
        version = self._version(conn)
        if version == SCHEMA_VERSION:
            return
        if version > SCHEMA_VERSION:
            raise SchemaTooNew(
                f"the PostgreSQL store at {self.safe_uri} has schema version {version}, newer than this "
                f"flightlog understands ({SCHEMA_VERSION}): upgrade flightlog (pip install -U flightlog)",
                details={"store_version": version, "code_version": SCHEMA_VERSION},
            )
        conn.execute("SELECT pg_advisory_lock(%s)", (MIGRATE_LOCK,))
        try:
            with conn.transaction():
                version = self._version(conn)  # another server may have migrated meanwhile
                for number in range(version, SCHEMA_VERSION):
                    for statement in MIGRATIONS[number]:
                        conn.execute(statement)
                conn.execute(
                    "INSERT INTO meta(key, value) VALUES('schema_version', %s) "
                    "ON CONFLICT(key) DO UPDATE SET value=excluded.value",
                    (str(SCHEMA_VERSION),),
                )
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (MIGRATE_LOCK,))

    def apply_feature_migrations(self, migrations: Sequence[StoreMigrations] | None = None) -> None:
        """Features' own tables (store/features.py): ``migrations``, or every loaded feature's."""
        try:
            with self._connection() as conn:
                self._migrate_features(conn, migrations)
        except self._psycopg.Error as exc:
            raise self.unavailable(exc) from None

    def _migrate_features(self, conn: Any, migrations: Sequence[StoreMigrations] | None = None) -> None:
        """The features' own tables (store/features.py), under the same lock as the core's."""

        def versions() -> dict[str, int]:
            return recorded_versions(
                conn.execute("SELECT key, value FROM meta WHERE key LIKE 'schema_version:%'").fetchall()
            )

        @contextmanager
        def transaction() -> Iterator[Any]:
            conn.execute("SELECT pg_advisory_lock(%s)", (MIGRATE_LOCK,))
            try:
                with conn.transaction():
                    yield conn
            finally:
                conn.execute("SELECT pg_advisory_unlock(%s)", (MIGRATE_LOCK,))

        apply_feature_migrations(versions, transaction, dialect="postgres", placeholder="%s", migrations=migrations)

    @staticmethod
    def _version(conn: Any) -> int:
        if conn.execute("SELECT to_regclass('meta')").fetchone()[0] is None:
            return 0
        row = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        return int(row[0]) if row else 0

    @contextmanager
    def write(self, *, append: bool = False) -> Iterator[Any]:
        """One transaction; ``append=True`` for one that deletes chunk rows or copies a store in
        (takes INGEST_LOCK: two of those never interleave)."""
        with self._connection() as conn, conn.transaction():
            if append:
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (INGEST_LOCK,))
            yield conn

    def ingest_transaction(self, run_ids: Sequence[str], work: Callable[[Any], T]) -> T:
        """``work(conn)`` in an ingest transaction: a lock on each of ``run_ids`` first (see the
        module doc), all in one statement and one order (hashes sorted), so two transactions
        never wait on each other in a cycle. A deadlock PostgreSQL still finds (two new
        projects' rows, say) or a serialization failure is tried again: nothing was committed.

        The work runs in psycopg's pipeline mode: statements whose answers nobody reads (the
        locks, the inserts and updates) are sent without waiting for each answer, and a read
        waits only for what was sent before it. A server's ingest transaction of any number of
        batches thus waits for the database eight times (the pool's check of the connection,
        BEGIN, the writers' marks, the start and the end of ``apply_batches``'s savepoint, the
        runs' ranks and timelines, the bookkeeping, COMMIT) instead of about twenty-one, one per
        statement (``bench/pg_round_trips.py``, issue #32)."""
        retryable = (self._psycopg.errors.DeadlockDetected, self._psycopg.errors.SerializationFailure)
        for attempt in range(_RETRIES):
            try:
                # the transaction outside the pipeline (psycopg's own, in pipeline mode, waits for
                # the server as it opens and twice as it ends), the pipeline inside it
                with self._connection() as conn, conn.transaction(), conn.pipeline():
                    if run_ids:
                        conn.execute(
                            "SELECT pg_advisory_xact_lock(%s, k) FROM "
                            "(SELECT DISTINCT hashtext(r) AS k FROM unnest(%s::text[]) AS r ORDER BY k) AS s",
                            (RUN_LOCK_SPACE, list(run_ids)),
                        )
                    return work(conn)
            except retryable:
                if attempt == _RETRIES - 1:
                    raise
        raise AssertionError("unreachable")  # the loop returns or raises

    @contextmanager
    def read(self) -> Iterator[Any]:
        with self._connection() as conn:
            yield conn

    @contextmanager
    def budgeted_read(self, deadline: Deadline) -> Iterator[Any]:
        """A read that PostgreSQL cancels once ``deadline`` passes (``statement_timeout`` for
        this transaction only), raising :class:`~flightlog.errors.QueryTimeout`."""
        if deadline.at is None:
            with self.read() as conn:
                yield conn
            return
        with self._connection() as conn, conn.transaction():
            left = max(1, int((deadline.at - time.monotonic()) * 1000))
            conn.execute(f"SET LOCAL statement_timeout = {left}")
            try:
                yield conn
            except self._psycopg.errors.QueryCanceled:
                raise deadline.error() from None

    @contextmanager
    def _connection(self) -> Iterator[Any]:
        """A pooled connection; a lost server becomes StoreUnavailable (writers keep journaling)."""
        from psycopg_pool import PoolTimeout

        try:
            with self.pool.connection() as conn:
                yield conn
        except (self._psycopg.OperationalError, PoolTimeout) as exc:
            raise self.unavailable(exc) from None

    def close(self) -> None:
        self.pool.close()


class PgLeadership:
    """Who runs a cluster-wide job (alert evaluation) among the servers sharing one database:
    the holder of a session advisory lock, on a connection of its own.

    Why a session lock: it lives exactly as long as the holder's connection, so a server that
    dies, hangs up or loses the network gives the job away without any timeout to tune; the
    others try to take it at each of their cycles. :meth:`held` checks the connection each time
    and reports a lost one, so a holder never keeps working on a lock it no longer has.
    """

    def __init__(self, db: PgDatabase, name: str) -> None:
        import hashlib

        self.db = db
        self.key = int.from_bytes(hashlib.sha256(f"flightlog-lead:{name}".encode()).digest()[:8], "big", signed=True)
        self._conn: Any = None
        self._holding = False

    def held(self) -> bool:
        """Whether this process leads now (taking the lead when nobody has it)."""
        psycopg = self.db._psycopg
        try:
            if self._conn is None or self._conn.closed:
                self._holding = False
                self._conn = psycopg.connect(self.db.uri, autocommit=True, connect_timeout=5)
            if self._holding:
                self._conn.execute("SELECT 1")
            else:
                self._holding = bool(self._conn.execute("SELECT pg_try_advisory_lock(%s)", (self.key,)).fetchone()[0])
        except psycopg.Error:
            self.release()
        return self._holding

    def release(self) -> None:
        self._holding = False
        if self._conn is not None:
            try:
                self._conn.close()  # the session ends: the lock goes with it
            except Exception:  # noqa: BLE001 - already gone
                pass
            self._conn = None
