"""``POST /runs/{run}/attempts``: resume an ended run as its next attempt, atomically.

The SDK's ``init(id=..., resume=True)`` asks for the attempt it saw plus one; of several
processes resuming one run at the same instant, one gets it (200) and the others 409, the
answer the embedded and PostgreSQL stores give to a direct call (``claim_attempt``, store/sql/writes.py).
"""

from __future__ import annotations

import math

from starlette.responses import Response

from flightlog.errors import Conflict, InvalidInput
from flightlog.server.context import Ctx
from flightlog.server.operations import RUN, Operation, json_body, ok
from flightlog.server.responses import json_response

__all__ = ["OPERATIONS"]


async def claim(ctx: Ctx) -> Response:
    body = await ctx.json()
    seen, host, pid, started = body.get("seen"), body.get("host"), body.get("pid"), body.get("started")
    if not isinstance(seen, int) or isinstance(seen, bool) or not 1 <= seen < 1 << 31:
        raise InvalidInput('send {"seen": N, ...}: the attempt of the ended run, a whole number from 1')
    if not isinstance(host, str) or not 0 < len(host) <= 1000:
        raise InvalidInput('"host" must be the resuming process\'s host name')
    if not isinstance(pid, int) or isinstance(pid, bool) or not 0 < pid < 1 << 31:
        raise InvalidInput('"pid" must be the resuming process\'s id')
    if not isinstance(started, (int, float)) or isinstance(started, bool) or not math.isfinite(started):
        raise InvalidInput('"started" must be a time (epoch seconds)')
    run_id = await ctx.run_id()
    attempt = await ctx.call(ctx.store.claim_attempt, run_id, seen, host=host, pid=pid, started=float(started))
    if attempt is None:
        raise Conflict(
            f"run {run_id} is no longer ended at attempt {seen}: another process resumed it first",
            details={"run": run_id, "seen": seen},
        )
    return json_response({"run": run_id, "attempt": attempt})


OPERATIONS = [
    Operation(
        "POST",
        "/runs/{run}/attempts",
        claim,
        "writer",
        "Resume an ended run as its next attempt (atomic)",
        "runs",
        params=(RUN,),
        body=json_body(
            {
                "type": "object",
                "required": ["seen", "host", "pid", "started"],
                "properties": {
                    "seen": {"type": "integer", "minimum": 1, "description": "The attempt of the ended run, as read."},
                    "host": {"type": "string"},
                    "pid": {"type": "integer"},
                    "started": {"type": "number"},
                },
            }
        ),
        responses={
            "200": ok(
                "The attempt claimed",
                {"type": "object", "properties": {"run": {"type": "string"}, "attempt": {"type": "integer"}}},
            )
        },
    ),
]
