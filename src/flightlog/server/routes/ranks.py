"""``GET /runs/{run}/ranks``: the ranks of a distributed run, each with its state.

What ``flightlog ranks RUN`` and ``Client.ranks`` read through a server: per rank its identity
(rank, local rank, world size, node, host, pid, restart), its state, heartbeat, last step, its
end (exit code, signal) and the first error it logged (``models.RankInfo``). The state is
worked out here, on the server's clock and host (store/sql/rankview.py). A run of one process
has no ranks: an empty list.
"""

from __future__ import annotations

from starlette.responses import Response

from flightlog.server.context import Ctx
from flightlog.server.operations import RUN, Operation, Param, ok, schema_ref
from flightlog.server.responses import json_response

__all__ = ["OPERATIONS"]


async def run_ranks(ctx: Ctx) -> Response:
    everything = ctx.query.flag("all")
    ranks = await ctx.call(ctx.store.ranks, await ctx.run_id(), all_attempts=everything)
    return json_response({"ranks": [r.to_dict() for r in ranks]})


OPERATIONS = [
    Operation(
        "GET",
        "/runs/{run}/ranks",
        run_ranks,
        "reader",
        "The ranks of a distributed run: identity, state, heartbeat, last step, exit, first error",
        "events",
        description="One entry per rank of the run's current attempt (its newest restart), ordered by rank; "
        "`all=true` gives every attempt and restart. `state` is `running`, `succeeded`, `failed`, `stopped`, "
        "`killed`, `lost` (vanished without an end: its process is gone, its heartbeat stopped, or its run ended "
        "without it) or `hung`. A run of one process has none.",
        params=(
            RUN,
            Param("all", "query", {"type": "boolean"}, "Every attempt and restart, not only the current ones."),
        ),
        responses={
            "200": ok(
                "The ranks, by attempt and rank",
                {
                    "type": "object",
                    "required": ["ranks"],
                    "properties": {"ranks": {"type": "array", "items": schema_ref("RankInfo")}},
                },
            )
        },
    ),
]
