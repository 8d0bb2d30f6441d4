"""For machines around the server: the API description, health checks and Prometheus metrics."""

from __future__ import annotations

from starlette.responses import PlainTextResponse, Response

from flightlog.errors import FlightlogError, StoreUnavailable
from flightlog.plugins import features
from flightlog.server.context import Ctx
from flightlog.server.operations import Operation, ok
from flightlog.server.responses import json_response

__all__ = ["OPERATIONS"]


async def openapi_json(ctx: Ctx) -> Response:
    return json_response(ctx.request.app.state.openapi)


async def healthz(ctx: Ctx) -> Response:
    """200 while the store answers (a load balancer's check); 503 while draining or when it does not."""
    if ctx.state.draining.is_set():
        raise StoreUnavailable("the server is shutting down")
    await ctx.call(ctx.store.projects)
    return json_response({"status": "ok"})


async def prometheus(ctx: Ctx) -> Response:
    text = ctx.state.metrics.render()
    if ctx.state.config.export_run_metrics:
        text += await _run_gauges(ctx)
    return PlainTextResponse(text, media_type="text/plain; version=0.0.4; charset=utf-8")


async def _run_gauges(ctx: Ctx) -> str:
    """Per-run gauges (opt-in). They name runs and show their numbers, so under --auth only a
    request with a reader token gets them, limited to its token's project."""
    from flightlog.server.auth import authenticate

    project = None
    if ctx.state.config.auth:
        try:
            principal = await authenticate(ctx.request, ctx.store, enabled=True)
        except FlightlogError:
            return "# per-run gauges (flightlog_run_*) need a reader token: scrape with an Authorization header\n"
        project = principal.project
    texts = [await ctx.call(text, ctx.store, project) for text in features().metrics_text()]  # the export feature's
    return "".join(texts)


OPERATIONS = [
    Operation(
        "GET",
        "/openapi.json",
        openapi_json,
        None,
        "This document",
        "meta",
        responses={"200": ok("The OpenAPI document", {"type": "object"})},
    ),
    Operation(
        "GET",
        "//healthz",
        healthz,
        None,
        "Health check for load balancers",
        "meta",
        responses={"200": ok("Serving", {"type": "object"}), "503": {"description": "Not serving"}},
    ),
    Operation(
        "GET",
        "//metrics",
        prometheus,
        None,
        "Request, error and ingest counters in Prometheus text format",
        "meta",
        responses={"200": ok("Metrics", {"type": "string"}, media="text/plain")},
    ),
]
