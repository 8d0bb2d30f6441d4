"""Serving-like runs made with the SDK, shaped as a serving replica records them (issue 20):
a run tagged ``serving.*``, per-minute traffic metrics, and sampled predictions and labels as
structured log events of component ``serving``. The live-data and serving-alert tests build
their evidence with these; the reading side goes through ``prediction_rows``, which also takes
``flightlog.serving.predictions`` rows."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any

import flightlog


def replica(
    endpoint: str,
    *,
    env: str = "prod",
    model: str = "fraud",
    version: str = "1",
    training_run: str | None = None,
    name: str = "r1",
    project: str = "serve",
    as_param: bool = False,
) -> Any:
    """A replica run; its training run as the tag ``serving.training_run``, or (``as_param``) as
    the parameter ``serving.model_run``, which ``serving.attach`` records."""
    tags = {
        "serving.endpoint": endpoint,
        "serving.env": env,
        "serving.model": model,
        "serving.version": version,
        "serving.replica": name,
    }
    if training_run and not as_param:
        tags["serving.training_run"] = training_run
    run = flightlog.init(project=project, name=f"{endpoint}-{name}", tags=tags)
    if training_run and as_param:
        run.log_params({"serving": {"model_run": training_run}})
    return run


def log_minutes(run: Any, minutes: Iterable[Mapping[str, float]], first: int | None = None) -> None:
    """One point per metric and minute (step = the minute since the epoch)."""
    start = first if first is not None else int(time.time() // 60) - 10
    for i, m in enumerate(minutes):
        run.log({f"serving.{k}": v for k, v in m.items()}, step=start + i)


def log_predictions(run: Any, rows: Iterable[Mapping[str, Any]], *, version: str = "1") -> None:
    """Sampled predictions (``time``, ``inputs``, ``output``, optional ``label``), each as a log
    event, and its label, when it has one, as a later event joined by request id."""
    labels = []
    for i, r in enumerate(rows):
        rid = r.get("request_id") or f"{run.id[:8]}-{i}"
        run.log_event(
            "prediction",
            component="serving",
            time=r["time"],
            fields={
                "request_id": rid,
                "version": version,
                "latency_ms": 12.0,
                "status": 200,
                "inputs": dict(r["inputs"]),
                "input_hashes": {"email": "sha256:0f3a"},
                "output": r["output"],
            },
        )
        if "label" in r:
            labels.append((rid, r["label"], r["time"]))
    for rid, label, t in labels:
        run.log_event("label", component="serving", time=t + 1.0, fields={"request_id": rid, "label": label})
