"""A run's events: metric summaries and histories (downsampled for charts), logs with filters and
cursors, resource samples and stage spans."""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np
from starlette.responses import Response

from flightlog.errors import InvalidInput
from flightlog.logevents import STREAMS, level_code
from flightlog.models import LogQuery
from flightlog.query.regex import MAX_PATTERN, compile_grep
from flightlog.server.context import Ctx, Query
from flightlog.server.downsample import downsample
from flightlog.server.operations import RUN, Operation, Param, ok, schema_ref
from flightlog.server.responses import json_response
from flightlog.server.shapes import decode_cursor, encode_cursor, event_json, fingerprint
from flightlog.timefmt import iso
from flightlog.transport.wire import MEDIA_TYPE, MEDIA_TYPES

__all__ = ["OPERATIONS", "log_query", "LOG_FILTERS"]

MAX_BUCKETS = 10_000
MAX_JSON_POINTS = 50_000
MAX_LOG_PAGE = 10_000
_msgpack = msgspec.msgpack.Encoder()


async def metric_summaries(ctx: Ctx) -> Response:
    summaries = await ctx.call(ctx.store.metric_summaries, await ctx.run_id())
    return json_response({"metrics": [s.to_dict() for s in summaries.values()]})


async def metric_history(ctx: Ctx) -> Response:
    q = ctx.query
    buckets = q.integer("buckets", min=1, max=MAX_BUCKETS)
    from_step, to_step = (
        q.integer("from_step", min=-(2**63), max=2**63 - 1),
        q.integer("to_step", min=-(2**63), max=2**63 - 1),
    )
    name = ctx.path("name")
    rank = q.integer("rank", min=0, max=2**31 - 1)
    history = await ctx.call(ctx.store.metric_history, await ctx.run_id(), name, rank)
    steps, values, times = history.steps, history.values, history.times
    if from_step is not None or to_step is not None:
        lo = 0 if from_step is None else int(np.searchsorted(steps, from_step, side="left"))
        hi = len(steps) if to_step is None else int(np.searchsorted(steps, to_step, side="right"))
        steps, values, times = steps[lo:hi], values[lo:hi], times[lo:hi]
    if buckets is not None:
        doc = await ctx.call(downsample, steps, times, values, buckets)
        doc["time"] = [iso(t) for t in doc["time"]]
        return json_response({"name": name, **doc})
    if _wants_msgpack(ctx):
        body = _msgpack.encode(
            {
                "name": name,
                "steps": np.ascontiguousarray(steps, dtype="<i8").tobytes(),
                "times": np.ascontiguousarray(times, dtype="<f8").tobytes(),
                "values": np.ascontiguousarray(values, dtype="<f8").tobytes(),
            }
        )
        return Response(body, media_type=MEDIA_TYPE)
    if len(steps) > MAX_JSON_POINTS:
        raise InvalidInput(
            f"metric {name!r} has {len(steps)} points, more than {MAX_JSON_POINTS} fit in one JSON answer: "
            "ask for buckets=N (a chart), a from_step/to_step range, or Accept: application/msgpack",
            details={"points": len(steps), "max": MAX_JSON_POINTS},
        )
    return json_response(
        {
            "name": name,
            "steps": steps.tolist(),
            "values": values.tolist(),
            "times": [iso(t) for t in times.tolist()],
        }
    )


def _wants_msgpack(ctx: Ctx) -> bool:
    accept = ctx.request.headers.get("accept", "")
    return any(part.split(";")[0].strip().lower() in MEDIA_TYPES for part in accept.split(","))


def log_query(q: Query, *, limit: int | None = None, tail: bool = False) -> LogQuery:
    """The log filters of a request (shared by the logs listing and the live stream)."""
    level = q.text("level", max_len=20)
    min_level = None
    if level is not None and level.strip():
        min_level = level_code(level, default=-1)
        if min_level < 0 or min_level > 1000:
            raise InvalidInput(f"level {level!r} is not a log level: use debug, info, warning, error or critical")
    grep = q.text("grep", max_len=MAX_PATTERN)
    if grep:
        compile_grep(grep)  # a 400 naming what is wrong (or unsupported) before any store work
    streams = q.values("stream", max_items=3)
    for s in streams or ():
        if s not in STREAMS:
            raise InvalidInput(f"stream {s!r} is not valid: use one of {', '.join(STREAMS)}")
    since, until = q.when("since"), q.when("until")
    return LogQuery(
        min_level=min_level,
        grep=grep or None,
        since=since,
        until=until,
        streams=tuple(streams) if streams else None,
        component=q.text("component", max_len=500),
        attempt=q.integer("attempt", min=0, max=2**31 - 1),
        stage=q.text("stage", max_len=500),
        limit=limit,
        tail=tail,
        rank=q.integer("rank", min=0, max=2**31 - 1),
    )


async def run_logs(ctx: Ctx) -> Response:
    q = ctx.query
    limit = q.count("limit", default=1000, max=MAX_LOG_PAGE)
    tail = q.flag("tail")
    cursor = q.text("cursor", max_len=1000)
    query = log_query(q)
    if tail and cursor is not None:
        raise InvalidInput("tail and cursor do not go together: tail gives the last events, cursors page forwards")
    run_id = await ctx.run_id()
    if limit == 0:
        return json_response({"events": [], "next_cursor": None})
    if tail:
        query.limit, query.tail = limit, True
        events = await ctx.call(ctx.store.logs, run_id, query)
        return json_response({"events": [event_json(e) for e in events], "next_cursor": None})
    fp = fingerprint(run_id, query.__dict__)
    key = await ctx.call(ctx.store.shared_secret, "cursors")
    skip = 0
    at: float | None = None
    if cursor is not None:
        state = decode_cursor(cursor, fp, key)  # signed: its time and count are what a server wrote
        at, skip = float(state["t"]), int(state["k"])
        query.since = at if query.since is None else max(query.since, at)
    query.limit = limit + skip + 1
    found = await ctx.call(ctx.store.logs, run_id, query)
    if at is not None:  # drop the events at the cursor's time that earlier pages already gave
        found = [e for i, e in enumerate(found) if not (i < skip and e.time == at)]
    page, more = found[:limit], len(found) > limit
    next_cursor = None
    if more and page:
        last = page[-1].time
        same = sum(1 for e in page if e.time == last) + (skip if last == at else 0)
        next_cursor = encode_cursor({"t": last, "k": same, "h": fp}, key)
    return json_response({"events": [event_json(e) for e in page], "next_cursor": next_cursor})


async def run_resources(ctx: Ctx) -> Response:
    since = ctx.query.when("since")
    rank = ctx.query.integer("rank", min=0, max=2**31 - 1)
    samples = await ctx.call(ctx.store.resource_samples, await ctx.run_id(), since, rank)
    return json_response({"samples": samples})


async def run_stages(ctx: Ctx) -> Response:
    rank = ctx.query.integer("rank", min=0, max=2**31 - 1)
    stages = await ctx.call(ctx.store.stages, await ctx.run_id(), rank)
    return json_response({"stages": [s.to_dict() for s in stages]})


LOG_FILTERS = (
    Param(
        "level",
        "query",
        {"type": "string", "maxLength": 20},
        "This level and above: debug, info, warning, error, critical (or a number).",
    ),
    Param(
        "grep",
        "query",
        {"type": "string", "maxLength": MAX_PATTERN},
        "Only events whose message matches this regular expression (case-insensitive; RE2 syntax: "
        "no backreferences or lookaround).",
    ),
    Param(
        "since",
        "query",
        {"type": "string", "maxLength": 64},
        "Events at or after: epoch seconds, ISO-8601, or a duration ago (10m).",
    ),
    Param("until", "query", {"type": "string", "maxLength": 64}, "Events at or before (same forms as since)."),
    Param(
        "stream",
        "query",
        {"type": "array", "items": {"type": "string", "enum": list(STREAMS)}, "maxItems": 3},
        "Only these streams (repeat the parameter, or separate with commas).",
    ),
    Param("component", "query", {"type": "string", "maxLength": 500}, "Only events of this component (logger name)."),
    Param("attempt", "query", {"type": "integer", "minimum": 0}, "Only events of this attempt."),
    Param("stage", "query", {"type": "string", "maxLength": 500}, "Only events recorded inside this stage."),
    Param("rank", "query", {"type": "integer", "minimum": 0}, "Only events of this rank of a distributed run."),
)
_RANK = Param(
    "rank",
    "query",
    {"type": "integer", "minimum": 0},
    "In a distributed run, this rank's points (default: the lowest rank that logged the metric).",
)
_NAME = Param(
    "name", "path", {"type": "string", "minLength": 1, "maxLength": 1000}, "The metric's name (may contain '/')."
)
_COLUMN: dict[str, Any] = {"type": "array"}

OPERATIONS = [
    Operation(
        "GET",
        "/runs/{run}/metrics",
        metric_summaries,
        "reader",
        "Every metric of a run: count, min, max, last",
        "events",
        params=(RUN,),
        responses={
            "200": ok(
                "Summaries",
                {"type": "object", "properties": {"metrics": {"type": "array", "items": schema_ref("MetricSummary")}}},
            )
        },
    ),
    Operation(
        "GET",
        "/runs/{run}/metrics/{name}",
        metric_history,
        "reader",
        "One metric's points, or N buckets for a chart",
        "events",
        route="/runs/{run}/metrics/{name:path}",
        description="With `buckets=N`, the step range is cut into N buckets and each keeps its count, min and max "
        "(with the steps they happened at), mean, first and last value, so spikes survive. Without it, "
        "every point: JSON, or binary columns (little-endian int64 steps, float64 times and values) in "
        "MessagePack with `Accept: application/msgpack`. In a distributed run the points are one rank's: `rank`, "
        "else the lowest rank that logged the metric (ranks' points are never interleaved).",
        params=(
            RUN,
            _NAME,
            Param("buckets", "query", {"type": "integer", "minimum": 1, "maximum": MAX_BUCKETS}, "How many buckets."),
            Param("from_step", "query", {"type": "integer"}, "Only points at or after this step."),
            Param("to_step", "query", {"type": "integer"}, "Only points at or before this step."),
            _RANK,
        ),
        responses={
            "200": {
                "description": "Points or buckets",
                "content": {
                    "application/json": {
                        "schema": {
                            "type": "object",
                            "required": ["name"],
                            "properties": {
                                "name": {"type": "string"},
                                "steps": _COLUMN,
                                "values": _COLUMN,
                                "times": _COLUMN,
                                "points": {"type": "integer"},
                                "buckets": {"type": "integer"},
                                "step": _COLUMN,
                                "min": _COLUMN,
                                "max": _COLUMN,
                                "mean": _COLUMN,
                            },
                        }
                    },
                    MEDIA_TYPE: {"schema": {"type": "string", "format": "binary"}},
                },
            }
        },
    ),
    Operation(
        "GET",
        "/runs/{run}/logs",
        run_logs,
        "reader",
        "Log events with filters, paged with cursors (or the last N)",
        "events",
        params=(
            RUN,
            *LOG_FILTERS,
            Param(
                "limit",
                "query",
                {"type": "integer", "minimum": 0, "maximum": MAX_LOG_PAGE, "default": 1000},
                "Events per page.",
            ),
            Param("tail", "query", {"type": "boolean"}, "The last `limit` events instead of the first."),
            Param(
                "cursor", "query", {"type": "string", "maxLength": 1000}, "`next_cursor` of the previous page (opaque)."
            ),
        ),
        responses={
            "200": ok(
                "A page of events, oldest first",
                {
                    "type": "object",
                    "required": ["events", "next_cursor"],
                    "properties": {
                        "events": {"type": "array", "items": schema_ref("LogEvent")},
                        "next_cursor": {"type": ["string", "null"]},
                    },
                },
            )
        },
    ),
    Operation(
        "GET",
        "/runs/{run}/resources",
        run_resources,
        "reader",
        "Resource samples (CPU, memory, GPUs, disk, network)",
        "events",
        params=(
            RUN,
            Param("since", "query", {"type": "string", "maxLength": 64}, "Samples at or after this time."),
            Param("rank", "query", {"type": "integer", "minimum": 0}, "Only the samples of this rank's processes."),
        ),
        responses={
            "200": ok(
                "Samples, oldest first",
                {"type": "object", "properties": {"samples": {"type": "array", "items": {"type": "object"}}}},
            )
        },
    ),
    Operation(
        "GET",
        "/runs/{run}/stages",
        run_stages,
        "reader",
        "Stage timings with their kept spans",
        "events",
        params=(
            RUN,
            Param("rank", "query", {"type": "integer", "minimum": 0}, "Only the stages this rank's processes timed."),
        ),
        responses={
            "200": ok(
                "Stages", {"type": "object", "properties": {"stages": {"type": "array", "items": {"type": "object"}}}}
            )
        },
    ),
]
