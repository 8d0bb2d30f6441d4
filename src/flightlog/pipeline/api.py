"""The pipeline view in the HTTP API: ``GET /api/v1/runs/{run}/pipeline`` (what the UI's
pipeline tab draws), declared as a server operation like the diagnosis endpoints."""

from __future__ import annotations

from flightlog.server.context import Ctx
from flightlog.server.operations import RUN, Operation, ok
from flightlog.server.responses import Response, json_response

__all__ = ["OPERATIONS"]

_VIEW = {
    "type": "object",
    "required": ["run", "name", "status", "steps"],
    "properties": {
        "run": {"type": "string"},
        "name": {"type": "string"},
        "status": {"type": "string"},
        "steps": {"type": "array", "items": {"type": "object"}},
    },
}


async def get_pipeline(ctx: Ctx) -> Response:
    from flightlog.pipeline.state import load_view

    info = await ctx.run()
    view = await ctx.call(load_view, ctx.client, info.id)
    return json_response(view.to_dict())


OPERATIONS: list[Operation] = [
    Operation(
        "GET",
        "/runs/{run}/pipeline",
        get_pipeline,
        "reader",
        "A pipeline run's DAG: each step's status, attempts (child runs), duration and cache hit",
        "runs",
        params=(RUN,),
        responses={"200": ok("The pipeline", _VIEW)},
    ),
]
