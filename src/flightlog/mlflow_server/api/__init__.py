"""MLflow's REST protocol, route by route: ``tracking`` (experiments, runs, params, tags,
metrics, inputs, search), ``artifacts`` (the artifact proxy, multipart uploads),
``logged_models`` and ``model_registry`` (registered models and versions onto flightlog's
registry). ``OPERATIONS`` is all of them, what the feature serves (``feature.py``)."""

from __future__ import annotations

from flightlog.mlflow_server.api import artifacts, logged_models, model_registry, tracking
from flightlog.plugins.operations import Operation

__all__ = ["OPERATIONS"]

OPERATIONS: list[Operation] = [
    *tracking.OPERATIONS,
    *artifacts.OPERATIONS,
    *logged_models.OPERATIONS,
    *model_registry.OPERATIONS,
]
