"""For machines around the server: the API description, health checks and Prometheus metrics."""

from __future__ import annotations

from starlette.responses import PlainTextResponse, Response

from flightlog.errors import StoreUnavailable
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
    return PlainTextResponse(ctx.state.metrics.render(), media_type="text/plain; version=0.0.4; charset=utf-8")


OPERATIONS = [
    Operation("GET", "/openapi.json", openapi_json, None, "This document", "meta",
              responses={"200": ok("The OpenAPI document", {"type": "object"})}),
    Operation("GET", "//healthz", healthz, None, "Health check for load balancers", "meta",
              responses={"200": ok("Serving", {"type": "object"}), "503": {"description": "Not serving"}}),
    Operation("GET", "//metrics", prometheus, None, "Request, error and ingest counters in Prometheus text format", "meta",
              responses={"200": ok("Metrics", {"type": "string"}, media="text/plain")}),
]
