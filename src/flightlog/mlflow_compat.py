"""MLflow-style tracking calls that log into flightlog: change one import.

    import flightlog.mlflow_compat as mlflow

    mlflow.set_experiment("vision")
    with mlflow.start_run(run_name="resnet") as run:
        mlflow.log_params({"lr": 0.1})
        for step in range(100):
            mlflow.log_metric("loss", loss, step=step)
        mlflow.log_artifact("model.pt")

The subset (docs/integrations.md lists it): ``set_experiment``, ``start_run`` (``run_name``,
``nested``, ``tags``, ``run_id``, ``description``), ``end_run``, ``active_run``,
``last_active_run``, ``log_param(s)``, ``log_metric(s)``, ``set_tag(s)``, ``log_artifact(s)``,
``log_text``, ``log_dict``, ``set_tracking_uri`` / ``get_tracking_uri``. Anything else
(``autolog``, the model registry, ``log_model``, ``search_runs``) raises ``AttributeError``
naming the flightlog way instead of silently doing nothing.

Differences from MLflow, on purpose: a metric logged without ``step`` goes one past the last
step (MLflow puts it at step 0); status strings map as FINISHED → succeeded, FAILED → failed,
KILLED → killed; experiments are flightlog projects.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import flightlog
from flightlog.errors import Conflict, InvalidInput
from flightlog.sdk.run import Run

__all__ = [
    "ActiveRun",
    "RunInfo",
    "active_run",
    "end_run",
    "get_tracking_uri",
    "last_active_run",
    "log_artifact",
    "log_artifacts",
    "log_dict",
    "log_metric",
    "log_metrics",
    "log_param",
    "log_params",
    "log_text",
    "set_experiment",
    "set_tag",
    "set_tags",
    "set_tracking_uri",
    "start_run",
]

_STATUS = {"FINISHED": "succeeded", "FAILED": "failed", "KILLED": "killed"}
_lock = threading.Lock()
_stack: list[ActiveRun] = []
_last: list[ActiveRun] = []
_experiment: list[str] = []
_home: list[str] = []


@dataclass
class RunInfo:
    """The fields of ``mlflow.entities.RunInfo`` that code commonly reads."""

    run_id: str
    run_name: str | None
    experiment_id: str
    status: str = "RUNNING"

    @property
    def run_uuid(self) -> str:
        return self.run_id


class ActiveRun:
    """What ``start_run`` returns: a context manager with ``.info`` and the flightlog run as ``.run``."""

    def __init__(self, run: Run) -> None:
        self.run = run
        self.info = RunInfo(run.id, run.name, run.project)

    def __enter__(self) -> ActiveRun:
        return self

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        if exc is not None:
            _end(self, "KILLED" if isinstance(exc, KeyboardInterrupt) else "FAILED", exc)
        else:
            _end(self, "FINISHED")


def set_tracking_uri(uri: str | os.PathLike[str]) -> None:
    """A local directory becomes the flightlog home; ``http(s)://`` is not an MLflow server here."""
    text = os.fspath(uri)
    if text.startswith(("http://", "https://", "databricks")):
        raise InvalidInput(
            f"set_tracking_uri({text!r}): flightlog.mlflow_compat logs to flightlog; set FLIGHTLOG_URL for a flightlog server"
        )
    path = text[len("file://") :] if text.startswith("file://") else text
    with _lock:
        _home[:] = [path]


def get_tracking_uri() -> str:
    from flightlog.config import Settings

    return Settings.from_env().store_uri if not _home else Path(_home[0]).as_uri()


def set_experiment(experiment_name: str | None = None, experiment_id: str | None = None) -> str:
    """Later runs go to this flightlog project; returns its name."""
    name = experiment_name or experiment_id
    if not name:
        raise InvalidInput("set_experiment needs an experiment name")
    with _lock:
        _experiment[:] = [name]
    return name


def start_run(
    run_id: str | None = None,
    experiment_id: str | None = None,
    run_name: str | None = None,
    nested: bool = False,
    tags: Mapping[str, Any] | None = None,
    description: str | None = None,
    parent_run_id: str | None = None,
    log_system_metrics: bool | None = None,
) -> ActiveRun:
    """Start a run (or continue ``run_id``); ``nested=True`` makes it a child of the active one."""
    with _lock:
        current = _stack[-1] if _stack else None
    if current is not None and not nested:
        raise Conflict(
            f"run {current.info.run_id} is already active: call end_run() first, or start_run(nested=True) for a child run"
        )
    parent = parent_run_id or (current.info.run_id if current is not None else None)
    project = experiment_id or (_experiment[0] if _experiment else None)
    existing = flightlog.active_run()
    if existing is not None and current is None and run_id is None and not existing.owner:
        run = existing  # inside `flightlog run`: the runner's run is this process's run
    else:
        run = flightlog.init(
            project=project,
            name=run_name,
            id=run_id,
            resume=run_id is not None,
            parent=parent,
            resources=bool(log_system_metrics) if log_system_metrics is not None else True,
            home=_home[0] if _home else None,
        )
    if tags:
        run.set_tags(tags)
    if description:
        run.note(description)
    active = ActiveRun(run)
    with _lock:
        _stack.append(active)
    return active


def end_run(status: str = "FINISHED") -> None:
    """End the innermost active run (FINISHED, FAILED or KILLED)."""
    _check_status(status)
    with _lock:
        current = _stack[-1] if _stack else None
    if current is not None:
        _end(current, status)


def _end(active: ActiveRun, status: str, exc: BaseException | None = None) -> None:
    _check_status(status)
    with _lock:
        if active in _stack:
            _stack.remove(active)
        _last[:] = [active]
    active.info.status = status
    if not active.run.owner:
        return  # the runner around this process ends its run
    if exc is not None and status == "FAILED":
        active.run.fail(exc)
    else:
        active.run.finish(_STATUS[status])


def _check_status(status: str) -> None:
    if status not in _STATUS:
        raise InvalidInput(f"run status {status!r} is not valid: use FINISHED, FAILED or KILLED")


def active_run() -> ActiveRun | None:
    with _lock:
        return _stack[-1] if _stack else None


def last_active_run() -> ActiveRun | None:
    with _lock:
        return _stack[-1] if _stack else (_last[0] if _last else None)


def _run() -> Run:
    """The active run; like MLflow, the first logging call starts one."""
    current = active_run()
    return (current or start_run()).run


def log_param(key: str, value: Any) -> Any:
    _run().log_params({key: value})
    return value


def log_params(params: Mapping[str, Any]) -> None:
    _run().log_params(dict(params))


def log_metric(key: str, value: float, step: int | None = None, timestamp: int | None = None, **_: Any) -> None:
    _run().log({key: value}, step=step)


def log_metrics(metrics: Mapping[str, float], step: int | None = None, timestamp: int | None = None, **_: Any) -> None:
    _run().log(dict(metrics), step=step)


def set_tag(key: str, value: Any) -> None:
    _run().set_tags({key: value})


def set_tags(tags: Mapping[str, Any]) -> None:
    _run().set_tags(dict(tags))


def log_artifact(local_path: str | os.PathLike[str], artifact_path: str | None = None) -> None:
    source = Path(local_path)
    name = f"{artifact_path.strip('/')}/{source.name}" if artifact_path else None
    _run().log_artifact(source, name=name)


def log_artifacts(local_dir: str | os.PathLike[str], artifact_path: str | None = None) -> None:
    source = Path(local_dir)
    if not source.is_dir():
        raise InvalidInput(f"log_artifacts: {local_dir} is not a directory")
    for path in sorted(p for p in source.rglob("*") if p.is_file()):
        rel = path.relative_to(source).as_posix()
        _run().log_artifact(path, name=f"{artifact_path.strip('/')}/{rel}" if artifact_path else rel)


def log_text(text: str, artifact_file: str) -> None:
    _log_content(text, artifact_file)


def log_dict(dictionary: Mapping[str, Any], artifact_file: str) -> None:
    if artifact_file.endswith((".yaml", ".yml")):
        import yaml

        _log_content(yaml.safe_dump(dict(dictionary)), artifact_file)
    else:
        _log_content(json.dumps(dictionary, indent=2), artifact_file)


def _log_content(text: str, artifact_file: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / Path(artifact_file).name
        path.write_text(text)
        _run().log_artifact(path, name=artifact_file)


_INSTEAD = {
    "autolog": "use a framework integration (flightlog.integrations, docs/integrations.md)",
    "log_model": "save the model yourself and call log_artifact(path) or flightlog's run.checkpoint(path, step)",
    "search_runs": "use flightlog.Client().runs(filter=...) (docs/filters.md)",
    "register_model": "flightlog has no model registry yet; record the model file with log_artifact",
}


def __getattr__(name: str) -> Any:
    hint = _INSTEAD.get(name) or (
        _INSTEAD["log_model"]
        if name.split(".")[-1] in ("pytorch", "sklearn", "keras")
        else "see docs/integrations.md for the supported subset"
    )
    raise AttributeError(f"flightlog.mlflow_compat has no {name!r}: {hint}")
