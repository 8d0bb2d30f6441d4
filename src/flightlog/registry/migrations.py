"""The registry's tables, for SQLite and PostgreSQL, applied by the run store when it opens
(the ``flightlog_store_migrations`` hook; ``store/features.py``). Migration N of one list
mirrors migration N of the other, column for column, so ``flightlog migrate-store`` copies
rows as they are. Every table is keyed by project first: the registry is per project."""

from __future__ import annotations

from flightlog.plugins import StoreMigrations

__all__ = ["MIGRATIONS", "TABLES"]

#: parents first (what migrate-store copies, in order)
TABLES = (
    "registry_models",
    "registry_versions",
    "registry_aliases",
    "registry_alias_history",
    "registry_deployments",
    "registry_deployment_history",
    "registry_events",
    "registry_event_sends",
)


def _schema(real: str, serial: str, big: str) -> list[str]:
    return [
        f"""CREATE TABLE registry_models (
            project TEXT NOT NULL,
            name TEXT NOT NULL,
            description TEXT,
            tags TEXT NOT NULL DEFAULT '{{}}',       -- JSON object
            protected TEXT NOT NULL DEFAULT '[]',   -- JSON list of aliases needing an admin token
            created {real} NOT NULL,
            PRIMARY KEY (project, name)
        )""",
        f"""CREATE TABLE registry_versions (
            project TEXT NOT NULL,
            name TEXT NOT NULL,
            version INTEGER NOT NULL,
            run_id TEXT NOT NULL,
            source TEXT NOT NULL,                  -- artifact | checkpoint
            artifact_path TEXT NOT NULL,
            digest TEXT,
            size {big},
            uri TEXT,
            description TEXT,
            tags TEXT NOT NULL DEFAULT '{{}}',
            created {real} NOT NULL,
            created_by TEXT,
            PRIMARY KEY (project, name, version)
        )""",
        "CREATE INDEX registry_versions_run ON registry_versions(run_id)",
        f"""CREATE TABLE registry_aliases (
            project TEXT NOT NULL,
            name TEXT NOT NULL,
            alias TEXT NOT NULL,
            version INTEGER NOT NULL,
            updated {real} NOT NULL,
            updated_by TEXT,
            PRIMARY KEY (project, name, alias)
        )""",
        f"""CREATE TABLE registry_alias_history (
            id {serial},
            project TEXT NOT NULL,
            name TEXT NOT NULL,
            alias TEXT NOT NULL,
            from_version INTEGER,
            to_version INTEGER,
            time {real} NOT NULL,
            actor TEXT
        )""",
        "CREATE INDEX registry_alias_history_alias ON registry_alias_history(project, name, alias)",
        f"""CREATE TABLE registry_deployments (
            project TEXT NOT NULL,
            endpoint TEXT NOT NULL,
            env TEXT NOT NULL,
            name TEXT NOT NULL,
            version INTEGER NOT NULL,
            ref TEXT NOT NULL,
            updated {real} NOT NULL,
            updated_by TEXT,
            PRIMARY KEY (project, endpoint, env)
        )""",
        f"""CREATE TABLE registry_deployment_history (
            id {serial},
            project TEXT NOT NULL,
            endpoint TEXT NOT NULL,
            env TEXT NOT NULL,
            name TEXT NOT NULL,
            from_version INTEGER,
            to_version INTEGER NOT NULL,
            ref TEXT NOT NULL,
            time {real} NOT NULL,
            actor TEXT
        )""",
        "CREATE INDEX registry_deployment_history_ep ON registry_deployment_history(project, endpoint, env)",
        f"""CREATE TABLE registry_events (
            id {serial},
            project TEXT NOT NULL,
            kind TEXT NOT NULL,
            key TEXT NOT NULL UNIQUE,              -- the dedup key: one delivery per event
            payload TEXT NOT NULL,                 -- JSON
            time {real} NOT NULL,
            claimed {real},                        -- a dispatcher took it (compare-and-set)
            delivered {real}
        )""",
    ]


def _sends(real: str, big: str) -> list[str]:
    """Which destination already got which event: an event sent to two destinations of which one
    failed is retried to that one only, so each destination gets it once."""
    return [
        f"""CREATE TABLE registry_event_sends (
            event_id {big} NOT NULL,
            target TEXT NOT NULL,                  -- the destination's key (events.Destination.key)
            time {real} NOT NULL,
            PRIMARY KEY (event_id, target)
        )""",
    ]


def _last_version() -> list[str]:
    """The highest version number a model ever had: a deleted version's number is never given
    again, so a deployment's history (``v3 → v4``) keeps naming the model it served."""
    return [
        "ALTER TABLE registry_models ADD COLUMN last_version INTEGER NOT NULL DEFAULT 0",
        "UPDATE registry_models SET last_version = (SELECT COALESCE(MAX(v.version), 0) FROM registry_versions v "
        "WHERE v.project = registry_models.project AND v.name = registry_models.name)",
    ]


MIGRATIONS = StoreMigrations(
    feature="registry",
    sqlite=[_schema("REAL", "INTEGER PRIMARY KEY", "INTEGER"), _sends("REAL", "INTEGER"), _last_version()],
    postgres=[
        _schema("DOUBLE PRECISION", "BIGSERIAL PRIMARY KEY", "BIGINT"),
        _sends("DOUBLE PRECISION", "BIGINT"),
        _last_version(),
    ],
    tables=TABLES,
)
