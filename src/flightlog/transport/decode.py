"""The API's JSON back into the objects the embedded store returns (RunInfo, LogEvent, ...).

The JSON is the documented shape (``to_dict()`` of each model: ISO-8601 times, NaN and
infinities as the strings "NaN", "Infinity", "-Infinity"); these functions undo it, so code
written against ``flightlog.Client`` sees the same types whichever transport it uses.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

from flightlog.logevents import level_code
from flightlog.models import Artifact, LogEvent, MetricSummary, Note, RankInfo, RunInfo, Span, StageSummary

__all__ = [
    "epoch",
    "number",
    "run_from_dict",
    "summary_from_dict",
    "log_event_from_dict",
    "stage_from_dict",
    "artifact_from_dict",
    "note_from_dict",
    "evidence_from_dict",
    "project_from_dict",
    "rank_from_dict",
]

_SPECIAL = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def epoch(value: Any) -> float | None:
    """An ISO-8601 time (or epoch seconds) → epoch seconds; None stays None."""
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    text = str(value)
    dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.timestamp()


def number(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, str):
        return _SPECIAL.get(value, math.nan)
    return float(value)


def summary_from_dict(d: dict[str, Any]) -> MetricSummary:
    return MetricSummary(
        name=d["name"],
        count=int(d.get("count") or 0),
        nonfinite=int(d.get("nonfinite") or 0),
        min=number(d.get("min")),
        max=number(d.get("max")),
        last=number(d.get("last")),
        last_step=d.get("last_step"),
        first_step=d.get("first_step"),
        first_time=epoch(d.get("first_time")),
        last_time=epoch(d.get("last_time")),
    )


def run_from_dict(d: dict[str, Any]) -> RunInfo:
    summaries = d.get("metric_summaries")
    if summaries is not None:
        metrics = {name: summary_from_dict(s) for name, s in summaries.items()}
    else:  # a compact listing: the last value only
        metrics = {
            name: MetricSummary(name, 0, 0, None, None, number(last), None, None, None, None)
            for name, last in (d.get("metrics") or {}).items()
        }
    return RunInfo(
        id=d["id"],
        project=d["project"],
        name=d.get("name"),
        status=d["status"],
        parent_id=d.get("parent_id"),
        end_reason=d.get("end_reason"),
        created=epoch(d.get("created")),
        queued=epoch(d.get("queued")),
        started=epoch(d.get("started")),
        ended=epoch(d.get("ended")),
        exit_code=d.get("exit_code"),
        signal=d.get("signal"),
        attempt=int(d.get("attempt") or 1),
        host=d.get("host"),
        pid=d.get("pid"),
        failure=d.get("failure"),
        timeline={k: t for k, v in (d.get("timeline") or {}).items() if (t := epoch(v)) is not None},
        updated=epoch(d.get("updated")),
        params=dict(d.get("params") or {}),
        tags=dict(d.get("tags") or {}),
        metrics=metrics,
        counters={k: float(v) for k, v in (d.get("counters") or {}).items()},
    )


def log_event_from_dict(d: dict[str, Any]) -> LogEvent:
    level = d.get("level_no")
    return LogEvent(
        time=epoch(d["time"]) or 0.0,
        stream=d["stream"],
        level=int(level) if isinstance(level, int) else level_code(d.get("level")),
        message=d["message"],
        component=d.get("component"),
        fields=d.get("fields"),
        rank=d.get("rank"),
        attempt=int(d.get("attempt") or 1),
        stage=d.get("stage"),
    )


def _span(d: dict[str, Any]) -> Span:
    return Span(
        name=d["name"],
        start=epoch(d["start"]) or 0.0,
        end=epoch(d["end"]) or 0.0,
        attempt=int(d.get("attempt") or 1),
        sampled=bool(d.get("sampled")),
        attrs=d.get("attrs"),
    )


def stage_from_dict(d: dict[str, Any]) -> StageSummary:
    return StageSummary(
        name=d["name"],
        count=int(d["count"]),
        total=float(d["total"]),
        min=float(d["min"]),
        max=float(d["max"]),
        first_start=epoch(d.get("first_start")),
        last_end=epoch(d.get("last_end")),
        hist=list(d.get("hist") or []),
        spans=[_span(s) for s in d.get("spans") or []],
    )


def artifact_from_dict(d: dict[str, Any]) -> Artifact:
    return Artifact(
        id=int(d["id"]),
        run_id=d["run_id"],
        role=d["role"],
        kind=d.get("kind"),
        path=d["path"],
        source=d.get("source"),
        size=d.get("size"),
        sha256=d.get("sha256"),
        uri=d.get("uri"),
        step=d.get("step"),
        time=epoch(d["time"]) or 0.0,
        attempt=int(d.get("attempt") or 1),
        meta=d.get("meta"),
    )


def note_from_dict(d: dict[str, Any]) -> Note:
    return Note(
        id=int(d["id"]), run_id=d["run_id"], time=epoch(d["time"]) or 0.0, author=d.get("author"), text=d["text"]
    )


def evidence_from_dict(d: dict[str, Any]) -> dict[str, Any]:
    return {"kind": d["kind"], "name": d["name"], "time": epoch(d["time"]), "data": d.get("data")}


def project_from_dict(d: dict[str, Any]) -> dict[str, Any]:
    return {**d, "last_created": epoch(d.get("last_created"))}


def rank_from_dict(d: dict[str, Any]) -> RankInfo:
    error = d.get("first_error")
    return RankInfo(
        rank=int(d["rank"]),
        local_rank=d.get("local_rank"),
        world_size=d.get("world_size"),
        host=d.get("host"),
        pid=d.get("pid"),
        restart=int(d.get("restart") or 0),
        state=str(d["state"]),
        started=epoch(d.get("started")) or 0.0,
        last_heartbeat=epoch(d.get("last_heartbeat")),
        last_step=d.get("last_step"),
        last_step_time=epoch(d.get("last_step_time")),
        exit_code=d.get("exit_code"),
        signal=d.get("signal"),
        first_error=None if not error else {"message": error.get("message"), "time": epoch(error.get("time"))},
        node_rank=d.get("node_rank"),
        local_world_size=d.get("local_world_size"),
        attempt=int(d.get("attempt") or 1),
        launcher=d.get("launcher"),
        job_key=d.get("job_key"),
        writer=d.get("writer"),
        ended=epoch(d.get("ended")),
        end_reason=d.get("end_reason"),
        failure=d.get("failure"),
        last_received=epoch(d.get("last_received")),
    )
