"""MLflow's tracking protocol as a feature: the ``/api/2.0/mlflow/`` and ``/ajax-api/2.0/mlflow/``
routes for experiments, runs, params, tags, metrics, inputs and search, and the table that
gives each project an MLflow experiment id.

Its entry in the feature table (docs/plugins.md): the routes need Starlette (the server
extra), so they are imported inside the hook; the migrations are plain text, imported here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from flightlog.mlflow_server.migrations import MIGRATIONS
from flightlog.plugins import StoreMigrations, hookimpl

__all__ = ["flightlog_api_operations", "flightlog_store_migrations"]


@hookimpl
def flightlog_store_migrations() -> Sequence[StoreMigrations]:
    return [MIGRATIONS]


@hookimpl
def flightlog_api_operations() -> list[Any]:
    # imported here: the routes need Starlette (flightlog[server]), which the CLI does not
    from flightlog.mlflow_server.tracking import OPERATIONS

    return list(OPERATIONS)
