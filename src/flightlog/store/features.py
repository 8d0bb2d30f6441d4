"""Features' own tables in the run store's database: the ``flightlog_store_migrations`` hook.

A feature (the model registry, a third-party package) declares its tables as numbered
migrations for SQLite and PostgreSQL (`flightlog.plugins.StoreMigrations`); both stores apply
them when they open, after the core's schema, on the store's own connection, so a feature's
rows live in the same database and its transactions can join the store's. Each feature is
versioned on its own — ``meta`` holds ``schema_version:<feature>`` — so features come and go
without renumbering the core. Applying is idempotent: only migrations past the recorded
version run, each feature's in one transaction that also records the new version.

When: a store applies every feature's migrations when it opens in a process that has loaded
the feature table (every feature's command, the server, ``flightlog migrate-store``), and a
feature calls :func:`ensure_tables` before it first touches its tables. A core command
(``flightlog runs ls``, the SDK's shipper) never loads the table for this: it is not slowed,
nor disturbed by a broken third-party package (docs/plugins.md, *A broken feature is left out*).

A feature whose migration fails is reported on stderr and left out (its transaction rolled
back); the store still opens, as the feature table promises.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from flightlog.notices import notice
from flightlog.plugins import StoreMigrations, features, table

if TYPE_CHECKING:
    from flightlog.plugins import StoreMigrations

__all__ = [
    "META_KEY",
    "apply_feature_migrations",
    "ensure_tables",
    "feature_migrations",
    "feature_tables",
    "loaded_feature_migrations",
    "recorded_versions",
]

#: the ``meta`` key holding a feature's schema version
META_KEY = "schema_version:{feature}"
_NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}$")


def feature_migrations() -> list[StoreMigrations]:
    """Every registered feature's migrations, as the feature table answers (loaded once a process)."""
    return [m for m in features().store_migrations() if isinstance(m, StoreMigrations)]


def loaded_feature_migrations() -> list[StoreMigrations]:
    """Every feature's migrations if this process has loaded the feature table; else none
    (the store does not load the table for them: see the module's doc)."""
    if table.features.cache_info().currsize == 0:
        return []
    return feature_migrations()


def ensure_tables(db: Any, migrations: StoreMigrations) -> None:
    """A feature's tables in the database ``db`` of a SQL run store, applied once per open
    database (``db.apply_feature_migrations``, which both stores' databases have)."""
    ready: set[str] = db.__dict__.setdefault("_feature_tables_ready", set())
    if migrations.feature not in ready:
        db.apply_feature_migrations([migrations])
        ready.add(migrations.feature)


def feature_tables() -> list[str]:
    """Every feature's tables, parents first (what ``flightlog migrate-store`` copies after the core's)."""
    return [t for m in feature_migrations() for t in m.tables]


def apply_feature_migrations(
    versions: Callable[[], dict[str, int]],
    transaction: Callable[[], AbstractContextManager[Any]],
    *,
    dialect: str,
    placeholder: str,
    migrations: Sequence[StoreMigrations] | None = None,
) -> None:
    """Bring every feature's tables up to date. ``versions()`` reads the recorded versions (a
    cheap read, the fast path when nothing changed); ``transaction()`` yields a connection in
    one write transaction; ``dialect`` is ``sqlite`` or ``postgres``."""
    wanted = loaded_feature_migrations() if migrations is None else list(migrations)
    if not wanted:
        return
    current = versions()
    for m in wanted:
        steps: Sequence[Sequence[str]] = m.sqlite if dialect == "sqlite" else m.postgres
        if current.get(m.feature, 0) >= len(steps):
            continue  # up to date (or made by a newer flightlog: its tables are left as they are)
        try:
            if not _NAME.match(m.feature):
                raise ValueError(f"a feature's store name must be lower-case letters, digits and _: {m.feature!r}")
            with transaction() as conn:
                key = META_KEY.format(feature=m.feature)
                row = conn.execute(f"SELECT value FROM meta WHERE key={placeholder}", (key,)).fetchone()
                done = int(row[0]) if row else 0  # another process may have migrated meanwhile
                for statements in steps[done:]:
                    for statement in statements:
                        conn.execute(statement)
                conn.execute(
                    f"INSERT INTO meta(key, value) VALUES({placeholder}, {placeholder}) "
                    "ON CONFLICT(key) DO UPDATE SET value=excluded.value",
                    (key, str(len(steps))),
                )
        except Exception as exc:  # noqa: BLE001 - one feature's broken tables never stop the store
            notice(f"warning: the feature {m.feature!r} (store migrations) was left out: {type(exc).__name__}: {exc}")


def recorded_versions(rows: Sequence[Sequence[Any]]) -> dict[str, int]:
    """``meta`` rows (key, value) of ``schema_version:*`` as {feature: version}."""
    prefix = META_KEY.format(feature="")
    return {str(k)[len(prefix) :]: int(v) for k, v in rows if str(k).startswith(prefix)}
