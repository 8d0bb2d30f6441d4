"""``GET /api/v1/runs/{run}/stream``: a run's new log events, metric points and status, live (SSE).

Stateless: the stream's position is a pair of store cursors (the last log chunk and metric
chunk sent), carried in each event's ``id``. A client that reconnects — to this replica or
another — sends it back as ``Last-Event-ID`` and continues exactly where it stopped: no
event twice, none lost. The stream reads the store every ``stream_poll`` seconds, ends with
an ``end`` event once the run has finished, and asks clients to reconnect when the server
is shutting down or the connection is older than ``stream_max_age``.

The credential that opened a stream is checked again before every batch the stream sends (and
every ``stream_recheck`` seconds while it only keeps alive): once its token is revoked or its
session signed out (or expired), nothing more is sent but ``unauthorized``, the stream closes,
and the client's reconnect gets the 401 that any other request would (issue 31, item 11: a
revoked token's stream once delivered what was written for up to ``stream_recheck`` seconds).
"""

from __future__ import annotations

import re
import time
from collections.abc import AsyncIterator
from typing import Any

import anyio
import numpy as np
from starlette.responses import Response, StreamingResponse

from flightlog.errors import InvalidInput, Unauthorized
from flightlog.models import LogQuery, RunInfo
from flightlog.server.auth import authenticate
from flightlog.server.context import Ctx
from flightlog.server.operations import RUN, Operation, Param
from flightlog.server.responses import json_bytes
from flightlog.server.routes.events import LOG_FILTERS, log_query
from flightlog.server.shapes import event_json, run_json
from flightlog.timefmt import iso

__all__ = ["OPERATIONS", "frame"]

KINDS = ("logs", "metrics", "status")


def frame(event: str, data: Any, event_id: str | None = None) -> bytes:
    head = f"id: {event_id}\n" if event_id else ""
    return f"{head}event: {event}\n".encode() + b"data: " + json_bytes(data) + b"\n\n"


async def run_stream(ctx: Ctx) -> Response:
    q = ctx.query
    kinds = set(q.values("events", max_items=3) or KINDS)
    unknown = sorted(kinds - set(KINDS))
    if unknown:
        raise InvalidInput(
            f"events {unknown} are not streamed: use {', '.join(KINDS)}", details={"choices": list(KINDS)}
        )
    query = log_query(q)
    names = q.values("metric", max_items=200)
    info = await ctx.run()
    last_id = ctx.request.headers.get("last-event-id")
    if last_id:
        m = re.fullmatch(r"(\d{1,18})\.(\d{1,18})", last_id.strip())
        if not m:
            raise InvalidInput(f"Last-Event-ID {last_id[:40]!r} is not one of this stream's ids")
        cursors = int(m.group(1)), int(m.group(2))
    else:  # logs from the start (within the filters); metrics from now (charts load history first)
        cursors = 0, (await ctx.call(ctx.store.feed_cursors, info.id))[1]
    return StreamingResponse(
        _events(ctx, info, kinds, query, names, cursors),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


async def _events(
    ctx: Ctx, info: RunInfo, kinds: set[str], query: LogQuery, names: list[str] | None, cursors: tuple[int, int]
) -> AsyncIterator[bytes]:
    store, config, metrics = ctx.store, ctx.state.config, ctx.state.metrics
    log_at, metric_at = cursors
    last_status: tuple[Any, ...] | None = None
    metrics.streams_open += 1
    try:
        yield b"retry: 2000\n\n"
        quiet_since = opened = checked = time.monotonic()
        while True:
            sent = f"{log_at}.{metric_at}"  # where the client is: what this round reads is not sent yet
            run = await ctx.call(store.get_run, info.id)  # first: once it has ended, its events are in
            out: list[bytes] = []
            if "logs" in kinds:
                events, log_at = await ctx.call(store.log_events_after, info.id, log_at, query)
                if events:
                    out.append(frame("logs", {"events": [event_json(e) for e in events]}, f"{log_at}.{metric_at}"))
            if "metrics" in kinds:
                points, metric_at = await ctx.call(store.metric_points_after, info.id, metric_at, names)
                if points:
                    out.append(frame("metrics", {"metrics": _points(points)}, f"{log_at}.{metric_at}"))
            status = (run.status, run.ended, run.exit_code)
            if "status" in kinds and status != last_status:
                out.append(frame("status", run_json(run, detail=False), f"{log_at}.{metric_at}"))
            last_status = status
            now = time.monotonic()
            reconnect = (
                "the server is shutting down"
                if ctx.state.draining.is_set()
                else "this connection reached its maximum age"
                if now - opened >= config.stream_max_age
                else None
            )
            if run.is_finished:
                out.append(frame("end", {"status": run.status}, f"{log_at}.{metric_at}"))
            elif reconnect:
                out.append(frame("reconnect", {"reason": reconnect}, f"{log_at}.{metric_at}"))
            # the credential, checked after the reads and before anything is sent: what was written
            # after a revocation is never delivered (a quiet stream checks every stream_recheck s)
            if config.auth and (out or time.monotonic() - checked >= config.stream_recheck):
                ended = await _credential_ended(ctx)
                if ended is not None:
                    yield frame("unauthorized", {"error": ended}, sent)  # a new credential resumes from here
                    return
                checked = time.monotonic()
            for chunk in out:
                yield chunk
            if run.is_finished or reconnect:
                return
            if out:
                quiet_since = now
            elif now - quiet_since >= config.stream_keepalive:
                yield b": keep-alive\n\n"
                quiet_since = now
            await anyio.sleep(config.stream_poll)
    finally:
        metrics.streams_open -= 1


async def _credential_ended(ctx: Ctx) -> dict[str, Any] | None:
    """None while the token (or session) that opened the stream still holds; else the error
    (code and message) that a new request with it would get."""
    try:
        await authenticate(ctx.request, ctx.store, enabled=True)
    except Unauthorized as exc:
        return {"code": exc.code, "message": exc.message}
    return None


def _points(points: dict[str, tuple[bytes, bytes, bytes]]) -> dict[str, Any]:
    out = {}
    for name, (steps, times, values) in points.items():
        out[name] = {
            "steps": np.frombuffer(steps, dtype="<i8").tolist(),
            "values": np.frombuffer(values, dtype="<f8").tolist(),
            "times": [iso(t) for t in np.frombuffer(times, dtype="<f8").tolist()],
        }
    return out


OPERATIONS = [
    Operation(
        "GET",
        "/runs/{run}/stream",
        run_stream,
        "reader",
        "Live: new log events, metric points and status (server-sent events)",
        "live",
        description="Events: `logs` ({events: [...]}), `metrics` ({metrics: {name: {steps, values, times}}}), `status` "
        "(the run), `end` (the run has finished; the stream closes), `reconnect` (the server is shutting "
        "down, or the connection reached the server's maximum stream age), `unauthorized` ({error: "
        "{code, message}}: the token was revoked or the session ended; the stream closes). Log events start from the "
        "run's first (within the filters; `since` skips older ones), metric points from the moment of "
        "connecting. Reconnect with `Last-Event-ID` to resume without gaps.",
        params=(
            RUN,
            *LOG_FILTERS,
            Param(
                "events",
                "query",
                {"type": "array", "items": {"type": "string", "enum": list(KINDS)}},
                "Which events: logs, metrics, status (default all).",
            ),
            Param(
                "metric",
                "query",
                {"type": "array", "items": {"type": "string"}, "maxItems": 200},
                "Only these metrics' points.",
            ),
            Param(
                "Last-Event-ID",
                "header",
                {"type": "string", "pattern": r"^\d{1,18}\.\d{1,18}$"},
                "The id of the last event received, to resume.",
            ),
        ),
        responses={
            "200": {"description": "An event stream", "content": {"text/event-stream": {"schema": {"type": "string"}}}}
        },
    ),
]
