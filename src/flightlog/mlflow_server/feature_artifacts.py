"""MLflow's artifacts, logged models and model registry as a feature: the artifact proxy
(``/api/2.0/mlflow-artifacts/``, with multipart uploads), ``/logged-models``, and the
``registered-models`` / ``model-versions`` routes onto flightlog's registry (docs/mlflow.md).

Its entry in the feature table (docs/plugins.md), beside the tracking routes' ``feature.py``:
the routes need Starlette (the server extra), so they are imported inside the hook; the
migrations are plain text, kept here so a store can ask for them on any thread.

The tables: MLflow's logged models (flightlog has no such noun: a logged model's files are
artifacts of its run, under ``models/<model_id>/``), the multipart uploads in flight (their
parts are content-addressed blobs, so any replica can finish an upload), and what MLflow says
of a registry version that flightlog's version does not keep (its ``source``, model id and stage).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from flightlog.plugins import StoreMigrations, hookimpl

__all__ = ["MIGRATIONS", "TABLES", "flightlog_api_operations", "flightlog_store_migrations"]

#: parents first (what migrate-store copies, in order)
TABLES = ("mlflow_logged_models", "mlflow_uploads", "mlflow_upload_parts", "mlflow_versions")


def _schema(real: str, big: str) -> list[str]:
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

MIGRATIONS = StoreMigrations(
    feature="mlflow_models",
    sqlite=[_schema("REAL", "INTEGER"), _STAGES],
    postgres=[_schema("DOUBLE PRECISION", "BIGINT"), _STAGES],
    tables=TABLES,
)


@hookimpl
def flightlog_store_migrations() -> Sequence[StoreMigrations]:
    return [MIGRATIONS]


@hookimpl
def flightlog_api_operations() -> list[Any]:
    # the routes need Starlette (flightlog[server]), which the CLI does not: imported when serving
    from flightlog.mlflow_server.artifacts import OPERATIONS as ARTIFACTS  # cost: as above
    from flightlog.mlflow_server.logged_models import OPERATIONS as LOGGED_MODELS  # cost: as above
    from flightlog.mlflow_server.model_registry import OPERATIONS as REGISTRY  # cost: as above

    return [*ARTIFACTS, *LOGGED_MODELS, *REGISTRY]
