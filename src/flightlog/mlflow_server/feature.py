"""MLflow's REST protocol as a feature: the ``/api/2.0/mlflow/`` and ``/ajax-api/2.0/mlflow/``
routes for experiments, runs, params, tags, metrics, inputs and search; the artifact proxy
(``/api/2.0/mlflow-artifacts/``, with multipart uploads), ``/logged-models`` and the
``registered-models`` / ``model-versions`` routes onto flightlog's registry (docs/mlflow.md);
and the tables that keep what MLflow has and flightlog does not (``migrations.py``).

Its entry in the feature table (docs/plugins.md): the routes need Starlette (the server
extra), so they are imported inside the hook; the migrations are plain text, imported here (a
store may ask for them on any thread).
"""

from __future__ import annotations

from collections.abc import Sequence

from flightlog.mlflow_server.migrations import MIGRATIONS, MODELS_MIGRATIONS
from flightlog.plugins import StoreMigrations, hookimpl
from flightlog.plugins.operations import Operation

__all__ = ["flightlog_api_operations", "flightlog_store_migrations"]


@hookimpl
def flightlog_store_migrations() -> Sequence[StoreMigrations]:
    return [MIGRATIONS, MODELS_MIGRATIONS]


@hookimpl
def flightlog_api_operations() -> list[Operation]:
    # imported here: the routes need Starlette (flightlog[server]), which the CLI does not
    from flightlog.mlflow_server.api import OPERATIONS

    return list(OPERATIONS)
