"""One run's goodput in the HTTP API: ``GET /api/v1/runs/{run}/goodput`` (the UI's Timeline tab
draws its summary line and its bar from it)."""

from __future__ import annotations

from flightlog.diagnose.reader import StoreReader
from flightlog.server.context import Ctx
from flightlog.server.operations import RUN, Operation, ok
from flightlog.server.responses import Response, json_response
from flightlog.triage.goodput import run_goodput

__all__ = ["OPERATIONS"]

_DOC = {
    "type": "object",
    "required": ["run", "seconds", "shares", "summary"],
    "properties": {
        "run": {"type": "string"},
        "wall_seconds": {"type": "number"},
        "goodput": {"type": ["number", "null"]},
        "seconds": {"type": "object", "additionalProperties": {"type": "number"}},
        "shares": {"type": "object", "additionalProperties": {"type": "number"}},
        "gpu_hours": {"type": "number"},
        "cost": {"type": ["number", "null"]},
        "summary": {"type": "string"},
    },
}


async def get_goodput(ctx: Ctx) -> Response:
    info = await ctx.run()
    reader = StoreReader(ctx.store, getattr(ctx.state.config, "home", None))
    return json_response(await ctx.call(run_goodput, reader, info))


OPERATIONS: list[Operation] = [
    Operation(
        "GET",
        "/runs/{run}/goodput",
        get_goodput,
        "reader",
        "Where a run's time went: queued, startup, productive steps, data stalls, idle GPU, checkpointing, retries",
        "runs",
        params=(RUN,),
        responses={"200": ok("The run's goodput", _DOC)},
    ),
]
