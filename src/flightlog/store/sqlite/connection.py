"""Opening the SQLite file on purpose: WAL, pragmas on every connection, one writer at a time.

Writers take ``BEGIN IMMEDIATE`` so that two processes never both hold a read snapshot and
then fight to upgrade it (SQLITE_BUSY mid-transaction); readers never block writers in WAL.
The schema is checked on open: older stores are migrated, newer ones refused with instructions.

A *fork-safe* connection (the SDK's shipper uses one from a background thread of a process that
may fork at any moment: a data loader starting its workers) runs its SQLite calls under
:func:`~flightlog.forksafe.no_fork`. SQLite keeps process-wide mutexes (its allocator, its table
of open files); a fork that copies one taken by another thread leaves the child's first SQLite
call waiting forever. Waits for another process's write lock are made here, in Python, between
those sections (SQLite's own busy wait is kept short), so a fork waits for SQLite's work in this
process, never for another process's transaction.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from flightlog.errors import SchemaTooNew, StoreUnavailable
from flightlog.filemodes import create_private, private_dirs
from flightlog.forksafe import no_fork
from flightlog.store.budget import Deadline
from flightlog.store.features import apply_feature_migrations, recorded_versions

if TYPE_CHECKING:
    from flightlog.plugins import StoreMigrations
from flightlog.store.sqlite.migrations import MIGRATIONS, SCHEMA_VERSION

__all__ = ["Database", "schema_version"]

T = TypeVar("T")

_PROGRESS_EVERY = (
    100  # SQLite VM steps between deadline checks: a few µs, so even slow rows (LIKE over long text) stop soon
)

_LOCK_WAIT = 60.0  # seconds a write waits for another process's write lock before it fails
_SLICE_MS = 20  # a fork-safe connection: SQLite's own busy wait, per try, inside the no-fork section

#: WAL pages after which a commit of the SDK's connection (``fork_safe``) checkpoints, instead of
#: SQLite's 1,000 (issue #32). A run's commit wrote ~60 pages (its params went to ~20 leaves of
#: ``params_key_num``, its metrics to one leaf of ``metric_series_name_last`` per name; ~30 since
#: schema 7 dropped those two indexes, which no query read), and a checkpoint copies every page the
#: WAL holds back into the database and waits for two fsyncs: ~25 ms on this project's shared disk
#: at 4,000 pages, every ~65th ``finish()`` of a sweep (0.37 ms a run), ~65 ms at 16,000, every
#: ~260th (0.24 ms a run): a sweep rewrites the same index leaves run after run, so a longer WAL
#: copies each of them once for more runs. The WAL then grows to 64 MiB (reused, not grown further,
#: after each checkpoint; removed when the last connection closes). Durability is unchanged: a
#: commit is in the WAL when it returns, whenever the WAL is copied back (a process crash loses
#: nothing either way).
SDK_AUTOCHECKPOINT_PAGES = 16000

_PRAGMAS = (
    "PRAGMA synchronous=NORMAL",
    "PRAGMA temp_store=MEMORY",
    "PRAGMA cache_size=-65536",
    "PRAGMA mmap_size=268435456",
    "PRAGMA foreign_keys=OFF",
)


def schema_version(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT name FROM sqlite_master WHERE type='table' AND name='meta'").fetchone()
    if row is None:
        return 0
    row = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
    return int(row[0]) if row else 0


class Database:
    """One connection to one SQLite file, shared by threads under a lock."""

    def __init__(self, path: str | Path, *, fork_safe: bool = False, read_only: bool = False) -> None:
        self.path = Path(path)
        self.read_only = read_only
        self._section: Callable[[], AbstractContextManager[object]] = no_fork if fork_safe else nullcontext
        self._fork_safe = fork_safe  # the SDK's shipper connection (see SDK_AUTOCHECKPOINT_PAGES)
        busy_ms = _SLICE_MS if fork_safe else 30000
        self.lock = threading.RLock()
        try:
            if read_only:  # nothing created, nothing migrated: the file as it is (``sqlite:///…?mode=ro``)
                if not self.path.is_file():
                    raise OSError(f"no such file (a read-only store is never created): {self.path}")
                target, uri = f"{self.path.resolve().as_uri()}?mode=ro", True
            else:
                private_dirs(self.path.parent)
                create_private(self.path)  # owner-only, and so its -wal and -shm (filemodes.py)
                target, uri = str(self.path), False
            with self._section():
                self.conn = sqlite3.connect(
                    target, timeout=busy_ms / 1000, isolation_level=None, check_same_thread=False, uri=uri
                )
        except (OSError, sqlite3.Error) as exc:
            raise StoreUnavailable(f"cannot open the store at {self.path}: {exc}") from exc
        try:
            self._entered_after(lambda: self._configure(busy_ms)).close()
            self._migrate()
        except sqlite3.Error as exc:
            with self._section():
                self.conn.close()
            raise StoreUnavailable(f"cannot open the store at {self.path}: {exc}") from exc

    def _configure(self, busy_ms: int) -> None:
        self.conn.execute(f"PRAGMA busy_timeout={busy_ms}")
        mode = self.conn.execute("PRAGMA journal_mode").fetchone()[0]
        if mode != "wal" and not self.read_only:
            self.conn.execute("PRAGMA journal_mode=WAL")
        for pragma in _PRAGMAS:
            self.conn.execute(pragma)
        if self._fork_safe and not self.read_only:
            self.conn.execute(f"PRAGMA wal_autocheckpoint={SDK_AUTOCHECKPOINT_PAGES}")

    def _entered_after(self, attempt: Callable[[], object]) -> ExitStack:
        """The section, entered and left held, once ``attempt`` succeeded in it: tried again while
        another process holds the lock it needs, with the waits between tries outside the section."""
        deadline = time.monotonic() + _LOCK_WAIT
        while True:
            section = ExitStack()
            section.enter_context(self._section())
            try:
                attempt()
                return section
            except sqlite3.OperationalError as exc:
                section.close()
                if not _is_busy(exc) or time.monotonic() > deadline:
                    raise
            time.sleep(0.01)

    def _migrate(self) -> None:
        with self._section():
            version = schema_version(self.conn)
        if version != SCHEMA_VERSION:
            self._migrate_core(version)
        self.apply_feature_migrations()

    def apply_feature_migrations(self, migrations: Sequence[StoreMigrations] | None = None) -> None:
        """Features' own tables (store/features.py): ``migrations``, or every loaded feature's."""
        apply_feature_migrations(
            self._feature_versions, self.write, dialect="sqlite", placeholder="?", migrations=migrations
        )

    def _feature_versions(self) -> dict[str, int]:
        with self.read() as conn:
            return recorded_versions(
                conn.execute("SELECT key, value FROM meta WHERE key LIKE 'schema_version:%'").fetchall()
            )

    def _migrate_core(self, version: int) -> None:
        if version > SCHEMA_VERSION:
            raise SchemaTooNew(
                f"the store at {self.path} has schema version {version}, newer than this flightlog "
                f"understands ({SCHEMA_VERSION}): upgrade flightlog (pip install -U flightlog) "
                "or point FLIGHTLOG_HOME at another directory",
                details={"store_version": version, "code_version": SCHEMA_VERSION},
            )
        if self.read_only:
            raise StoreUnavailable(
                f"the store at {self.path} has schema version {version}, older than this flightlog's "
                f"({SCHEMA_VERSION}), and a read-only store is never migrated: open it once without ?mode=ro",
                details={"store_version": version, "code_version": SCHEMA_VERSION},
            )
        with self.write() as conn:
            version = schema_version(conn)  # another process may have migrated meanwhile
            for number in range(version, SCHEMA_VERSION):
                for statement in MIGRATIONS[number]:
                    conn.execute(statement)
            conn.execute(
                "INSERT INTO meta(key, value) VALUES('schema_version', ?) "
                "ON CONFLICT(key) DO UPDATE SET value=excluded.value",
                (str(SCHEMA_VERSION),),
            )

    @contextmanager
    def write(self, *, append: bool = False) -> Iterator[sqlite3.Connection]:
        """A write transaction (BEGIN IMMEDIATE … COMMIT), retried while the file is locked.

        ``append`` (a transaction that adds chunk rows) changes nothing here: SQLite has one
        writer at a time, so ids always commit in order (PostgreSQL needs a lock for that)."""
        # one section from BEGIN to COMMIT: a child forked while a transaction is open would copy
        # SQLite's record that this process holds the write lock, and never get it
        with self.lock, self._entered_after(lambda: self.conn.execute("BEGIN IMMEDIATE")):
            try:
                yield self.conn
                self.conn.execute("COMMIT")
            except BaseException as exc:
                try:
                    self.conn.execute("ROLLBACK")
                except sqlite3.Error:
                    pass  # SQLite already rolled back (a full disk does that)
                if isinstance(exc, sqlite3.OperationalError) and "readonly" in str(exc):
                    raise StoreUnavailable(
                        f"the store at {self.path} is read-only ({exc}): open it without ?mode=ro, "
                        "as a user who may write the file, to change it",
                        details={"path": str(self.path)},
                    ) from exc
                if isinstance(exc, sqlite3.OperationalError) and "full" in str(exc):
                    raise StoreUnavailable(
                        f"the store at {self.path} cannot take writes: {exc} (the disk is full); "
                        "free space on that disk, or move the store, and try again",
                        details={"path": str(self.path)},
                    ) from exc
                raise

    def ingest_transaction(self, run_ids: Sequence[str], work: Callable[[sqlite3.Connection], T]) -> T:
        """``work(conn)`` in an ingest transaction: SQLite has one writer at a time, so one
        :meth:`write` (its ids commit in order whatever the runs)."""
        with self.write(append=True) as conn:
            return work(conn)

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        with self.lock, self._section():
            yield self.conn

    @contextmanager
    def budgeted_read(self, deadline: Deadline) -> Iterator[sqlite3.Connection]:
        """A read that SQLite stops once ``deadline`` passes (a progress handler), raising
        :class:`QueryTimeout`: one expensive search cannot hold the connection for minutes."""
        with self.lock, self._section():
            if deadline.at is None:
                yield self.conn
                return
            self.conn.set_progress_handler(deadline.passed, _PROGRESS_EVERY)
            try:
                yield self.conn
            except sqlite3.OperationalError as exc:
                if "interrupted" in str(exc) and deadline.passed():
                    raise deadline.error() from None
                raise
            finally:
                self.conn.set_progress_handler(None, 0)

    def close(self) -> None:
        with self.lock, self._section():
            self.conn.close()


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    return "locked" in str(exc) or "busy" in str(exc)
