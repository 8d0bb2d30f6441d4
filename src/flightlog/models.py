"""What readers get back: runs, metric histories, log events, stages, artifacts — and, as
MLflow users look for it here, ``flightlog.models.load("models:/fraud@production")``: a
registered model resolved, downloaded, checked against its digest and loaded, in one call
(the registry's ``loading.py`` does the work).

Plain dataclasses with ``to_dict()`` giving the JSON shape of the CLI and the HTTP API
(snake_case, ids as strings, times ISO-8601 UTC). The same objects come from the embedded store
and, rebuilt from JSON, from a remote server.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from flightlog.errors import InvalidInput
from flightlog.logevents import level_name
from flightlog.plugins import features
from flightlog.statuses import STATUSES, TERMINAL_STATUSES
from flightlog.timefmt import iso

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "STATUSES",  # re-exported: defined with their groups in flightlog.statuses
    "TERMINAL_STATUSES",
    "RunInfo",
    "MetricSummary",
    "MetricHistory",
    "LogEvent",
    "LogQuery",
    "Span",
    "StageSummary",
    "Artifact",
    "Note",
    "RankInfo",
    "RANK_STATES",
    "KIND_TAG",
    "SERVING_KIND",
    "RUN_KINDS",
    "kind_filter",
    "load",
    "download",
]

_TIME_FIELDS = ("created", "queued", "started", "ended")

#: The tag that says what kind of run a run is, when it is not a training (or pipeline) run:
#: ``serving`` for a model server's replica (``serving.attach`` sets it). Readers list runs of
#: one kind (the runs table leaves replicas out unless asked) and diagnose each as its kind.
KIND_TAG = "flightlog.kind"
SERVING_KIND = "serving"
RUN_KINDS = ("all", "training", SERVING_KIND)


def kind_filter(filter_: str | None, kind: str | None) -> str | None:
    """A run filter (docs/filters.md) limited to runs of one kind: ``training`` leaves serving
    replicas out (the runs table's default), ``serving`` keeps only them, ``all`` (or None) both."""
    if kind in (None, "", "all"):
        return filter_
    if kind == "training":
        only = f"tags.{KIND_TAG} is null"
    elif kind == SERVING_KIND:
        only = f"tags.{KIND_TAG} = '{SERVING_KIND}'"
    else:
        raise InvalidInput(f"kind {kind!r} is not a kind of run: use training, serving or all", details={"kind": kind})
    return f"({filter_}) and {only}" if filter_ and filter_.strip() else only


@dataclass
class MetricSummary:
    name: str
    count: int
    nonfinite: int
    min: float | None
    max: float | None
    last: float | None
    last_step: int | None
    first_step: int | None
    first_time: float | None
    last_time: float | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "count": self.count,
            "nonfinite": self.nonfinite,
            "min": _json_float(self.min),
            "max": _json_float(self.max),
            "last": _json_float(self.last),
            "last_step": self.last_step,
            "first_step": self.first_step,
            "first_time": iso(self.first_time),
            "last_time": iso(self.last_time),
        }


@dataclass
class RunInfo:
    id: str
    project: str
    name: str | None
    status: str
    parent_id: str | None = None
    end_reason: str | None = None
    created: float | None = None
    queued: float | None = None
    started: float | None = None
    ended: float | None = None
    exit_code: int | None = None
    signal: int | None = None
    attempt: int = 1
    host: str | None = None
    pid: int | None = None
    failure: dict[str, Any] | None = None
    timeline: dict[str, float] = field(default_factory=dict)
    updated: float | None = None
    params: dict[str, Any] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)
    metrics: dict[str, MetricSummary] = field(default_factory=dict)
    counters: dict[str, float] = field(default_factory=dict)

    @property
    def duration(self) -> float | None:
        if self.started is None:
            return None
        end = self.ended if self.ended is not None else self.updated
        return None if end is None else max(0.0, end - self.started)

    @property
    def kind(self) -> str:
        """``training`` (any run a workload records), or the kind its ``flightlog.kind`` tag names
        (``serving``: a model server's replica)."""
        return self.tags.get(KIND_TAG) or "training"

    @property
    def queue_wait(self) -> float | None:
        if self.queued is None or self.started is None:
            return None
        return max(0.0, self.started - self.queued)

    @property
    def is_finished(self) -> bool:
        return self.status in TERMINAL_STATUSES

    def to_dict(self, *, detail: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "project": self.project,
            "name": self.name,
            "status": self.status,
            "end_reason": self.end_reason,
            "parent_id": self.parent_id,
            "attempt": self.attempt,
            "exit_code": self.exit_code,
            "signal": self.signal,
            "duration": self.duration,
            "queue_wait": self.queue_wait,
            "kind": self.kind,
        }
        for name in _TIME_FIELDS:
            out[name] = iso(getattr(self, name))
        out["params"] = self.params
        out["tags"] = self.tags
        out["metrics"] = {k: _json_float(m.last) for k, m in self.metrics.items()}
        if detail:
            out["host"] = self.host
            out["pid"] = self.pid
            out["failure"] = self.failure
            out["timeline"] = {k: iso(v) for k, v in sorted(self.timeline.items(), key=lambda kv: kv[1])}
            out["metric_summaries"] = {k: m.to_dict() for k, m in self.metrics.items()}
            out["counters"] = self.counters
        return out


@dataclass
class MetricHistory:
    """One metric's points in step order, as numpy arrays (NaN and ±inf kept as they were)."""

    name: str
    steps: np.ndarray
    values: np.ndarray
    times: np.ndarray

    def __len__(self) -> int:
        return len(self.steps)

    @property
    def nonfinite(self) -> np.ndarray:
        """Boolean mask of the points that are NaN or infinite."""
        import numpy as np

        return ~np.isfinite(self.values)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "steps": self.steps.tolist(),
            "values": [_json_float(v) for v in self.values.tolist()],
            "times": [iso(t) for t in self.times.tolist()],
        }


@dataclass
class LogEvent:
    time: float
    stream: str
    level: int
    message: str
    component: str | None = None
    fields: dict[str, Any] | None = None
    rank: int | None = None
    attempt: int = 1
    stage: str | None = None

    @property
    def level_name(self) -> str:
        return level_name(self.level)

    def to_dict(self) -> dict[str, Any]:
        return {
            "time": iso(self.time),
            "stream": self.stream,
            "level": self.level_name,
            "component": self.component,
            "message": self.message,
            "fields": self.fields,
            "rank": self.rank,
            "attempt": self.attempt,
            "stage": self.stage,
        }


@dataclass
class LogQuery:
    """Filters for reading log events; every field is optional."""

    min_level: int | None = None
    grep: str | None = None
    since: float | None = None
    until: float | None = None
    streams: tuple[str, ...] | None = None
    component: str | None = None
    attempt: int | None = None
    stage: str | None = None
    limit: int | None = None
    tail: bool = False  # with limit: the last `limit` events instead of the first
    rank: int | None = None  # only events of this rank of a distributed job


@dataclass
class Span:
    name: str
    start: float
    end: float
    attempt: int = 1
    sampled: bool = False
    attrs: dict[str, Any] | None = None

    @property
    def duration(self) -> float:
        return self.end - self.start

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "start": iso(self.start),
            "end": iso(self.end),
            "duration": self.duration,
            "attempt": self.attempt,
            "sampled": self.sampled,
            "attrs": self.attrs,
        }


@dataclass
class StageSummary:
    """A stage's aggregate over every span of that name (and its kept raw spans)."""

    name: str
    count: int
    total: float
    min: float
    max: float
    first_start: float | None
    last_end: float | None
    hist: list[int]
    spans: list[Span] = field(default_factory=list)

    @property
    def mean(self) -> float:
        return self.total / self.count if self.count else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "count": self.count,
            "total": self.total,
            "mean": self.mean,
            "min": self.min,
            "max": self.max,
            "first_start": iso(self.first_start),
            "last_end": iso(self.last_end),
            "hist": self.hist,
            "spans": [s.to_dict() for s in self.spans],
        }


@dataclass
class Artifact:
    id: int
    run_id: str
    role: str
    kind: str | None
    path: str
    source: str | None
    size: int | None
    sha256: str | None
    uri: str | None
    step: int | None
    time: float
    attempt: int
    meta: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": str(self.id),
            "run_id": self.run_id,
            "role": self.role,
            "kind": self.kind,
            "path": self.path,
            "source": self.source,
            "size": self.size,
            "sha256": self.sha256,
            "uri": self.uri,
            "step": self.step,
            "time": iso(self.time),
            "attempt": self.attempt,
            "meta": self.meta,
        }


@dataclass
class Note:
    id: int
    run_id: str
    time: float
    author: str | None
    text: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": str(self.id),
            "run_id": self.run_id,
            "time": iso(self.time),
            "author": self.author,
            "text": self.text,
        }


#: A rank's state: running; its own end (succeeded, failed, stopped, killed); lost (it vanished
#: without an end: its process is gone, its heartbeat stopped, or its run ended without it);
#: hung (progress stopped while its process lives: set by hang detection, issue 28).
RANK_STATES = ("running", "succeeded", "failed", "stopped", "killed", "lost", "hung")


@dataclass
class RankInfo:
    """One rank of a distributed run: one process of the job, as its writer recorded it
    (``flightlog ranks RUN``, ``Client.ranks``, ``GET /api/v1/runs/{run}/ranks``)."""

    rank: int
    local_rank: int | None
    world_size: int | None
    host: str | None
    pid: int | None
    restart: int
    state: str  # one of RANK_STATES
    started: float
    last_heartbeat: float | None
    last_step: int | None
    last_step_time: float | None
    exit_code: int | None
    signal: int | None
    first_error: dict[str, Any] | None  # {"message", "time"}
    node_rank: int | None = None
    local_world_size: int | None = None
    attempt: int = 1
    launcher: str | None = None
    job_key: str | None = None
    writer: str | None = None
    ended: float | None = None
    end_reason: str | None = None
    failure: dict[str, Any] | None = None
    last_received: float | None = None  # when the store last heard from it (the store's clock)

    def to_dict(self) -> dict[str, Any]:
        error = self.first_error
        return {
            "rank": self.rank,
            "local_rank": self.local_rank,
            "world_size": self.world_size,
            "node_rank": self.node_rank,
            "local_world_size": self.local_world_size,
            "host": self.host,
            "pid": self.pid,
            "restart": self.restart,
            "attempt": self.attempt,
            "state": self.state,
            "started": iso(self.started),
            "last_heartbeat": iso(self.last_heartbeat),
            "last_received": iso(self.last_received),
            "last_step": self.last_step,
            "last_step_time": iso(self.last_step_time),
            "ended": iso(self.ended),
            "end_reason": self.end_reason,
            "exit_code": self.exit_code,
            "signal": self.signal,
            "first_error": None if error is None else {"message": error.get("message"), "time": iso(error.get("time"))},
            "failure": self.failure,
            "launcher": self.launcher,
            "job_key": self.job_key,
            "writer": self.writer,
        }


def _json_float(v: float | None) -> float | str | None:
    """JSON has no NaN/inf: they are written as the strings "NaN", "Infinity", "-Infinity"."""
    if v is None or math.isfinite(v):
        return v
    if math.isnan(v):
        return "NaN"
    return "Infinity" if v > 0 else "-Infinity"


def load(ref: str, **options: Any) -> Any:
    """The registered model ``ref`` names, loaded (the model registry's loader, asked through the
    feature table: ``flightlog_load_model``; options ``client``, ``project``, ``cache_dir``,
    ``kind``, ``model``: docs/models.md)."""
    return features().need(
        "flightlog_load_model",
        needed_by="flightlog.models.load",
        install="flightlog (its registry)",
        ref=ref,
        options=options,
    )


def download(ref: str, **options: Any) -> Any:
    """The local path of the registered model ``ref`` names, downloaded and checked against its
    digest (the model registry's, asked through the feature table: ``flightlog_download_model``)."""
    return features().need(
        "flightlog_download_model",
        needed_by="flightlog.models.download",
        install="flightlog (its registry)",
        ref=ref,
        options=options,
    )
