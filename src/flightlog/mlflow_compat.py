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
``log_text``, ``log_dict``, ``set_tracking_uri`` / ``get_tracking_uri``, and for reading back
``get_run``, ``search_runs`` (``output_format="list"``) and a basic ``MlflowClient``
(``get_run``, ``search_runs``, ``get_metric_history``, ``log_metric``, ``log_param``, ``set_tag``,
``create_experiment``, ``get_experiment_by_name``). Anything else (``autolog``, the model
registry, ``log_model``) raises ``AttributeError`` naming the flightlog way instead of silently
doing nothing. This is the embedded path: MLflow's own client against ``flightlog server`` is
the full protocol (docs/mlflow.md).

Differences from MLflow, on purpose: a metric logged without ``step`` goes one past the last
step (MLflow puts it at step 0); status strings map as FINISHED → succeeded, FAILED → failed,
KILLED → killed; experiments are flightlog projects (an experiment's id is its name);
``search_runs`` filters are flightlog's filter language (docs/filters.md), which reads MLflow's
common ``metrics.acc > 0.9 and params.opt = 'adam'`` as MLflow does, and returns a list, never
a pandas DataFrame.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
import time
from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flightlog.client import Client
from flightlog.errors import Conflict, InvalidInput
from flightlog.models import RunInfo as FlightlogRunInfo
from flightlog.schema.values import encode_series
from flightlog.sdk import active_run as active_flightlog_run
from flightlog.sdk import init
from flightlog.sdk.run import Run
from flightlog.store.base import ingest_one

__all__ = [
    "ActiveRun",
    "Experiment",
    "Metric",
    "MlflowClient",
    "MlflowRun",
    "RunData",
    "RunInfo",
    "active_run",
    "end_run",
    "get_run",
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
    "search_runs",
    "set_experiment",
    "set_tag",
    "set_tags",
    "set_tracking_uri",
    "start_run",
]

_STATUS = {"FINISHED": "succeeded", "FAILED": "failed", "KILLED": "killed"}
_MLFLOW_STATUS = {"succeeded": "FINISHED", "failed": "FAILED", "crashed": "FAILED", "killed": "KILLED",
                  "stopped": "KILLED", "running": "RUNNING", "queued": "SCHEDULED", "created": "SCHEDULED"}  # fmt: skip
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
    start_time: int | None = None  # milliseconds, as MLflow's
    end_time: int | None = None

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
    existing = active_flightlog_run()
    if existing is not None and current is None and run_id is None and not existing.owner:
        run = existing  # inside `flightlog run`: the runner's run is this process's run
    else:
        run = init(
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


# ── reading back: get_run, search_runs, MlflowClient ────────────────────────
@dataclass
class RunData:
    """``mlflow.entities.RunData``: params and tags as text, each metric's latest value."""

    params: dict[str, str] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)


@dataclass
class MlflowRun:
    """``mlflow.entities.Run``: ``.info`` and ``.data``."""

    info: RunInfo
    data: RunData


@dataclass
class Metric:
    """One point of ``get_metric_history``: timestamp in milliseconds, as MLflow's."""

    key: str
    value: float
    timestamp: int
    step: int


@dataclass
class Experiment:
    """``mlflow.entities.Experiment``: a flightlog project, whose id is its name."""

    experiment_id: str
    name: str
    lifecycle_stage: str = "active"


def _ms(seconds: float | None) -> int | None:
    return None if seconds is None else int(round(seconds * 1000))


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value) if isinstance(value, (dict, list)) else str(value)


def _as_mlflow(info: FlightlogRunInfo) -> MlflowRun:
    metrics = {k: float(m.last) for k, m in info.metrics.items() if m.last is not None}
    return MlflowRun(
        RunInfo(
            info.id,
            info.name,
            info.project,
            _MLFLOW_STATUS.get(info.status, "RUNNING"),
            _ms(info.started or info.created),
            _ms(info.ended),
        ),
        RunData({k: _text(v) for k, v in info.params.items()}, metrics, dict(info.tags)),
    )


def _order(order_by: Sequence[str] | None) -> str | None:
    """MLflow's ``["metrics.acc DESC", "params.lr"]`` as flightlog's ``-metrics.acc,params.lr``."""
    keys = []
    for item in order_by or ():
        words = item.split()
        if not words or len(words) > 2 or (len(words) == 2 and words[1].upper() not in ("ASC", "DESC")):
            raise InvalidInput(f"order_by {item!r}: use a field with ASC or DESC, e.g. 'metrics.acc DESC'")
        desc = len(words) == 2 and words[1].upper() == "DESC"
        keys.append(("-" if desc else "") + words[0])
    return ",".join(keys) or None


class MlflowClient:
    """The calls of ``mlflow.MlflowClient`` that scripts reach for first, on flightlog's ``Client``.

    ``tracking_uri``: a local directory (the flightlog home), else the one ``set_tracking_uri``
    or ``FLIGHTLOG_HOME`` names. Writes go through the store's idempotent ingest, as the CLI's."""

    def __init__(self, tracking_uri: str | os.PathLike[str] | None = None) -> None:
        home = os.fspath(tracking_uri) if tracking_uri is not None else (_home[0] if _home else None)
        if home is not None and home.startswith(("http://", "https://", "databricks")):
            raise InvalidInput(
                f"MlflowClient({home!r}): flightlog.mlflow_compat reads flightlog's store; for a flightlog "
                "server use MLflow's own client (docs/mlflow.md) or set FLIGHTLOG_URL"
            )
        if home is not None and home.startswith("file://"):
            home = home[len("file://") :]
        self._client = Client(home)

    def get_run(self, run_id: str) -> MlflowRun:
        return _as_mlflow(self._client.run(run_id, exact=True))

    def search_runs(
        self,
        experiment_ids: str | Sequence[str] | None = None,
        filter_string: str = "",
        order_by: Sequence[str] | None = None,
        max_results: int = 1000,
    ) -> list[MlflowRun]:
        """Runs of these experiments (projects) matching a flightlog filter, newest first by default."""
        projects: list[str | None] = [experiment_ids] if isinstance(experiment_ids, str) else [*(experiment_ids or [])]
        if not projects:
            projects = [None]  # every project
        found: list[MlflowRun] = []
        for project in projects:
            runs = self._client.runs(
                project=project, filter=filter_string or None, order_by=_order(order_by), limit=max_results
            )
            found.extend(_as_mlflow(r) for r in runs)
        return found[:max_results]

    def get_metric_history(self, run_id: str, key: str) -> list[Metric]:
        history = self._client.metric_history(self._client.run(run_id, exact=True).id, key)
        return [
            Metric(key, float(v), int(round(t * 1000)), int(s))
            for s, t, v in zip(history.steps.tolist(), history.times.tolist(), history.values.tolist(), strict=True)
        ]

    def log_metric(
        self, run_id: str, key: str, value: float, timestamp: int | None = None, step: int | None = None
    ) -> None:
        info = self._client.run(run_id, exact=True)
        stamp = (timestamp / 1000) if timestamp is not None else time.time()
        series = {key: encode_series(array("q", [step or 0]), array("d", [stamp]), array("d", [float(value)]))}
        ingest_one(self._client.store, info.id, "metrics", origin="mlflow-compat", attempt=info.attempt, series=series)

    def log_param(self, run_id: str, key: str, value: Any) -> Any:
        ingest_one(self._client.store, self._client.run(run_id, exact=True).id, "params", origin="mlflow-compat",
                   data={key: value})  # fmt: skip
        return value

    def set_tag(self, run_id: str, key: str, value: Any) -> None:
        ingest_one(self._client.store, self._client.run(run_id, exact=True).id, "tags", origin="mlflow-compat",
                   data={key: _text(value)})  # fmt: skip

    def create_experiment(self, name: str, **_: Any) -> str:
        """A flightlog project exists once it has a run: the id is the name, whether it has runs yet or not."""
        if not name:
            raise InvalidInput("create_experiment needs a name")
        return name

    def get_experiment_by_name(self, name: str) -> Experiment | None:
        known = {p["name"] for p in self._client.projects()}
        return Experiment(name, name) if name in known else None

    def close(self) -> None:
        self._client.close()


def get_run(run_id: str) -> MlflowRun:
    """``mlflow.get_run``: the run with params, latest metrics and tags."""
    client = MlflowClient()
    try:
        return client.get_run(run_id)
    finally:
        client.close()


def search_runs(
    experiment_ids: Sequence[str] | None = None,
    filter_string: str = "",
    order_by: Sequence[str] | None = None,
    max_results: int = 100000,
    output_format: str = "list",
    experiment_names: Sequence[str] | None = None,
    **_: Any,
) -> list[MlflowRun]:
    """``mlflow.search_runs`` as a list (``output_format="list"``): no pandas in flightlog's SDK."""
    if output_format != "list":
        raise InvalidInput(
            f"search_runs(output_format={output_format!r}): flightlog.mlflow_compat returns output_format='list'; "
            "build a DataFrame from it, or use Client().runs(...)"
        )
    projects = list(experiment_ids or []) + list(experiment_names or [])
    if not projects and _experiment:
        projects = [_experiment[0]]
    client = MlflowClient()
    try:
        return client.search_runs(projects or None, filter_string, order_by, max_results)
    finally:
        client.close()


_INSTEAD = {
    "autolog": "use a framework integration (flightlog.integrations, docs/integrations.md)",
    "log_model": "save the model yourself and call log_artifact(path) or flightlog's run.checkpoint(path, step)",
    "register_model": "flightlog has no model registry yet; record the model file with log_artifact",
}


def __getattr__(name: str) -> Any:
    hint = _INSTEAD.get(name) or (
        _INSTEAD["log_model"]
        if name.split(".")[-1] in ("pytorch", "sklearn", "keras")
        else "see docs/integrations.md for the supported subset"
    )
    raise AttributeError(f"flightlog.mlflow_compat has no {name!r}: {hint}")
