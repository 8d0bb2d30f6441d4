"""flightlog's runs in MLflow's shapes (``mlflow/protos/service.proto``: Run, RunInfo, RunData).

Statuses map both ways as `flightlog import mlflow` maps them; times are MLflow's epoch
milliseconds; a run deleted through MLflow (soft, restorable) carries the tag
:data:`DELETED_TAG`, which MLflow's clients never see among its tags.
"""

from __future__ import annotations

import math
from typing import Any

from flightlog.models import RunInfo

__all__ = [
    "DELETED_TAG",
    "HIDDEN_TAGS",
    "RUN_NAME_TAG",
    "USER_TAG",
    "TO_FLIGHTLOG",
    "mlflow_status",
    "metric_value",
    "run_info",
    "run_doc",
    "ms",
]

DELETED_TAG = "flightlog.mlflow.deleted"
RUN_NAME_TAG = "mlflow.runName"
USER_TAG = "mlflow.user"
HIDDEN_TAGS = frozenset({DELETED_TAG})

#: MLflow status → (flightlog status, end_reason, exit code): the importer's table
TO_FLIGHTLOG: dict[str, tuple[str, str | None, int | None]] = {
    "FINISHED": ("succeeded", "exit", 0),
    "FAILED": ("failed", "exit", None),
    "KILLED": ("killed", "signal", None),
    "RUNNING": ("running", None, None),
    "SCHEDULED": ("queued", None, None),
}
_TO_MLFLOW = {
    "created": "SCHEDULED",
    "queued": "SCHEDULED",
    "running": "RUNNING",
    "succeeded": "FINISHED",
    "failed": "FAILED",
    "crashed": "FAILED",
    "stopped": "KILLED",
    "killed": "KILLED",
}


def mlflow_status(status: str) -> str:
    return _TO_MLFLOW.get(status, "FAILED")


def ms(seconds: float | None) -> int | None:
    return None if seconds is None else int(round(seconds * 1000))


def metric_value(value: float | None) -> Any:
    """A float as MLflow's JSON carries it (protobuf's JSON: NaN and infinities as strings)."""
    if value is None:
        return None
    if math.isfinite(value):
        return value
    return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")


def run_info(info: RunInfo, experiment_id: str) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "run_id": info.id,
        "run_uuid": info.id,
        "run_name": info.name or "",
        "experiment_id": experiment_id,
        "user_id": info.tags.get(USER_TAG, ""),
        "status": mlflow_status(info.status),
        "start_time": ms(info.started if info.started is not None else info.created),
        "artifact_uri": f"mlflow-artifacts:/{experiment_id}/{info.id}/artifacts",
        "lifecycle_stage": "deleted" if DELETED_TAG in info.tags else "active",
    }
    if info.ended is not None:
        doc["end_time"] = ms(info.ended)
    return doc


def run_doc(info: RunInfo, experiment_id: str, inputs: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A whole Run: its info, its latest metric values, params and tags (``mlflow.runName`` too)."""
    metrics = [
        {
            "key": name,
            "value": metric_value(m.last),
            "timestamp": ms(m.last_time) or 0,
            "step": m.last_step or 0,
        }
        for name, m in sorted(info.metrics.items())
        if m.last is not None or m.count
    ]
    params = [{"key": k, "value": _text(v)} for k, v in sorted(info.params.items())]
    tags = {k: v for k, v in info.tags.items() if k not in HIDDEN_TAGS}
    if info.name and RUN_NAME_TAG not in tags:
        tags[RUN_NAME_TAG] = info.name
    data = {
        "metrics": metrics,
        "params": params,
        "tags": [{"key": k, "value": str(v)} for k, v in sorted(tags.items())],
    }
    return {"info": run_info(info, experiment_id), "data": data, "inputs": {"dataset_inputs": inputs or []}}


def _text(value: Any) -> str:
    """A param as MLflow keeps it: text (a number logged by flightlog's SDK as it would print)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "True" if value else "False"
    return str(value)
