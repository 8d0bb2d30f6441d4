"""Copying an embedded SQLite store into PostgreSQL, row for row: ``flightlog migrate-store``.

Why rows and not records: the two schemas are the same data model, table for table and column
for column (``store/postgres/migrations.py``), so a copy of every row — ids included, chunk
bytes untouched — is lossless by construction, and far faster than replaying journals. The
copy runs in one PostgreSQL transaction under the ingest lock, with COPY, and is checked by
counting the rows on both sides before it commits: it lands whole or not at all. The target
must be empty (a fresh database, or one never written to), so nothing there is overwritten.

Artifact files are not rows: they stay where they are (``FLIGHTLOG_HOME/artifacts``); point
the servers at the same directory, or copy them into a bucket (docs/deploy.md).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from flightlog.errors import Conflict, InvalidInput
from flightlog.store.features import feature_tables
from flightlog.store.postgres.store import PostgresStore
from flightlog.store.sqlite.connection import Database

__all__ = ["TABLES", "copy_sqlite_to_postgres", "sqlite_path_of"]

#: every table of the core schema but ``meta``, parents before what refers to them; the
#: features' own tables (``flightlog_store_migrations``, store/features.py) are copied after them
TABLES = (
    "projects",
    "runs",
    "params",
    "tags",
    "notes",
    "context",
    "metric_series",
    "metric_chunks",
    "log_chunks",
    "spans",
    "stage_stats",
    "resource_samples",
    "artifacts",
    "counters",
    "evidence",
    "ingested",
    "run_writers",
    "tokens",
    "alerts",
    "alert_events",
    "alert_silences",
    "blob_projects",
    "sessions",
)
_BATCH = 1000


def sqlite_path_of(source: str) -> Path:
    """SRC as a home directory, a ``flightlog.db`` file or a ``sqlite:///`` URI."""
    path = Path(source[len("sqlite:///") :]) if source.startswith("sqlite:///") else Path(source)
    if path.is_dir():
        path = path / "flightlog.db"
    if not path.is_file():
        raise InvalidInput(
            f"{source} is not an embedded store: give a FLIGHTLOG_HOME directory, its flightlog.db, or sqlite:///PATH"
        )
    return path


def copy_sqlite_to_postgres(
    source: str, target: str, *, progress: Callable[[str, int], None] | None = None
) -> dict[str, int]:
    """Copy every row of the SQLite store ``source`` into the empty PostgreSQL store ``target``;
    returns the rows copied per table."""
    try:
        from psycopg import sql
    except ImportError as exc:
        raise InvalidInput(
            f"migrating into PostgreSQL needs psycopg 3 ({exc}): pip install 'flightlog[postgres]'"
        ) from None

    if not target.startswith(("postgresql://", "postgres://")):
        raise InvalidInput(
            f"the target must be a PostgreSQL store URI (postgresql://USER@HOST/DB), not {target[:40]!r}"
        )
    tables = (*TABLES, *feature_tables())  # loads the feature table: both stores then hold every feature's tables
    src = Database(sqlite_path_of(source))  # brings an older store up to the current schema first
    dst = PostgresStore(target)
    counts: dict[str, int] = {}
    try:
        with dst.db.write(append=True) as conn:
            busy = [
                t
                for t in tables
                if conn.execute(sql.SQL("SELECT EXISTS (SELECT 1 FROM {})").format(sql.Identifier(t))).fetchone()[0]
            ]
            if busy:
                raise Conflict(
                    f"the PostgreSQL store {dst.uri} already holds data (in {', '.join(busy)}): "
                    "migrate into an empty database",
                    details={"tables": busy},
                )
            with src.read() as lite:
                for table in tables:
                    columns = [r[1] for r in lite.execute(f"PRAGMA table_info({table})")]
                    counts[table] = _copy_table(lite, conn, table, columns) if columns else 0
                    if progress is not None:
                        progress(table, counts[table])
            for table in tables:
                if _serial(conn, table):
                    conn.execute(
                        sql.SQL(
                            "SELECT setval(pg_get_serial_sequence({t}, 'id'), "
                            "COALESCE((SELECT MAX(id) FROM {i}), 1), "
                            "(SELECT MAX(id) FROM {i}) IS NOT NULL)"
                        ).format(t=sql.Literal(table), i=sql.Identifier(table))
                    )
                stored = conn.execute(sql.SQL("SELECT COUNT(*) FROM {}").format(sql.Identifier(table))).fetchone()[0]
                if stored != counts[table]:  # never commit a partial copy
                    raise Conflict(
                        f"copied {counts[table]} rows of {table} but PostgreSQL holds {stored}: nothing was committed"
                    )
    finally:
        src.close()
        dst.close()
    return counts


def _copy_table(lite: Any, conn: Any, table: str, columns: list[str]) -> int:
    from psycopg import sql

    target = sql.SQL("COPY {} ({}) FROM STDIN").format(
        sql.Identifier(table), sql.SQL(", ").join(map(sql.Identifier, columns))
    )
    select = "SELECT " + ", ".join(f'"{c}"' for c in columns) + f" FROM {table}"
    n = 0
    with conn.cursor().copy(target) as copy:
        cursor = lite.execute(select)
        while rows := cursor.fetchmany(_BATCH):
            for row in rows:
                copy.write_row(row)  # BLOBs arrive as bytes, NaN as NULL: as PostgreSQL keeps them
            n += len(rows)
    return n


def _serial(conn: Any, table: str) -> bool:
    has_id = conn.execute(
        "SELECT 1 FROM information_schema.columns WHERE table_name = %s AND column_name = 'id'", (table,)
    ).fetchone()
    return (
        has_id is not None
        and conn.execute("SELECT pg_get_serial_sequence(%s, 'id')", (table,)).fetchone()[0] is not None
    )
