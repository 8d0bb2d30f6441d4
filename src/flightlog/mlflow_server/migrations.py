"""The MLflow protocol's tables, in the run store's own database (two sets, each versioned on its own).

``MIGRATIONS`` (``mlflow_server``): an experiment id for each project, and what MLflow keeps of
an experiment that flightlog's projects do not (lifecycle, tags, artifact location). Why a
table: a flightlog project exists by its runs, while MLflow creates an experiment before its
first run and addresses it by a number it keeps (``experiment_id``). Ids start at 1; ``0`` is
MLflow's "Default" experiment, flightlog's ``default`` project, with no row of its own until
it is changed.

``MODELS_MIGRATIONS`` (``mlflow_models``): MLflow's logged models (flightlog has no such noun: a
logged model's files are artifacts of its run, under ``models/<model_id>/``), the multipart
uploads in flight (their parts are content-addressed blobs, so any replica can finish an
upload), and what MLflow says of a registry version that flightlog's version does not keep
(its ``source``, model id and stage).

Migration N for SQLite mirrors migration N for PostgreSQL.
"""

from __future__ import annotations

from flightlog.plugins import StoreMigrations

__all__ = ["MIGRATIONS", "MODELS_MIGRATIONS", "MODELS_TABLES", "TABLES"]

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


#: parents first (what migrate-store copies, in order)
MODELS_TABLES = ("mlflow_logged_models", "mlflow_uploads", "mlflow_upload_parts", "mlflow_versions")


def _models_schema(real: str, big: str) -> list[str]:
    return [
        f"""CREATE TABLE mlflow_logged_models (
            model_id TEXT PRIMARY KEY,               -- m-<32 hex>, MLflow's form
            project TEXT NOT NULL,
            experiment_id TEXT NOT NULL,
            run_id TEXT NOT NULL,                    -- the run holding its files (its source run, or one made for it)
            source_run_id TEXT,
            name TEXT NOT NULL,
            model_type TEXT,
            status TEXT NOT NULL,                    -- LOGGED_MODEL_PENDING | _READY | _UPLOAD_FAILED
            status_message TEXT,
            params TEXT NOT NULL DEFAULT '{{}}',      -- JSON object
            tags TEXT NOT NULL DEFAULT '{{}}',        -- JSON object
            step {big} NOT NULL DEFAULT 0,            -- the step its run logged it at (runs/outputs)
            created {real} NOT NULL,
            updated {real} NOT NULL,
            deleted INTEGER NOT NULL DEFAULT 0
        )""",
        "CREATE INDEX mlflow_logged_models_project ON mlflow_logged_models(project, created)",
        f"""CREATE TABLE mlflow_uploads (
            upload_id TEXT PRIMARY KEY,              -- unguessable: the part URLs carry it instead of a token
            run_id TEXT NOT NULL,
            path TEXT NOT NULL,
            parts INTEGER NOT NULL,
            created {real} NOT NULL
        )""",
        f"""CREATE TABLE mlflow_upload_parts (
            upload_id TEXT NOT NULL,
            part_number INTEGER NOT NULL,
            digest TEXT NOT NULL,
            size {big} NOT NULL,
            PRIMARY KEY (upload_id, part_number)
        )""",
        """CREATE TABLE mlflow_versions (
            project TEXT NOT NULL,
            name TEXT NOT NULL,
            version INTEGER NOT NULL,
            source TEXT NOT NULL,                    -- what the client gave: models:/m-..., runs:/..., mlflow-artifacts:/...
            model_id TEXT,
            PRIMARY KEY (project, name, version)
        )""",
    ]


#: 2: a version's MLflow stage (None | Staging | Production | Archived), for CI jobs that still use stages
_STAGES = ["ALTER TABLE mlflow_versions ADD COLUMN stage TEXT NOT NULL DEFAULT 'None'"]

MODELS_MIGRATIONS = StoreMigrations(
    feature="mlflow_models",
    sqlite=[_models_schema("REAL", "INTEGER"), _STAGES],
    postgres=[_models_schema("DOUBLE PRECISION", "BIGINT"), _STAGES],
    tables=MODELS_TABLES,
)
