"""The MLflow protocol's one table: an experiment id for each project, and what MLflow keeps of
an experiment that flightlog's projects do not (lifecycle, tags, artifact location).

Why a table: a flightlog project exists by its runs, while MLflow creates an experiment before
its first run and addresses it by a number it keeps (``experiment_id``). Ids start at 1; ``0``
is MLflow's "Default" experiment, flightlog's ``default`` project, with no row of its own
until it is changed. Migration N for SQLite mirrors migration N for PostgreSQL.
"""

from __future__ import annotations

from flightlog.plugins import StoreMigrations

__all__ = ["MIGRATIONS", "TABLES"]

TABLES = ("mlflow_experiments",)


def _schema(real: str, serial: str) -> list[str]:
    return [
        f"""CREATE TABLE mlflow_experiments (
            id {serial},
            project TEXT NOT NULL UNIQUE,
            lifecycle TEXT NOT NULL DEFAULT 'active',   -- active | deleted
            artifact_location TEXT,
            tags TEXT NOT NULL DEFAULT '{{}}',            -- JSON object
            created {real} NOT NULL,
            updated {real} NOT NULL
        )""",
    ]


MIGRATIONS = StoreMigrations(
    feature="mlflow_server",
    sqlite=[_schema("REAL", "INTEGER PRIMARY KEY AUTOINCREMENT")],
    postgres=[_schema("DOUBLE PRECISION", "BIGSERIAL PRIMARY KEY")],
    tables=TABLES,
)
