"""The diagnosis in the HTTP API: ``GET /api/v1/runs/{run}/diagnosis``, ``.../comparison`` and
``.../rightsizing``, declared as server operations (``flightlog.server.operations``).

The server lists them with its own operations (``*flightlog.diagnose.api.OPERATIONS`` in
``flightlog.server.routes.OPERATIONS``); the handlers run the same engine as the CLI, over
the server's store through the one read facade, `flightlog.Client` (``ctx.client``).
"""

from __future__ import annotations

from typing import Any

from flightlog.server.context import Ctx
from flightlog.server.operations import RUN, Operation, Param, ok
from flightlog.server.responses import Response, json_response

__all__ = ["OPERATIONS"]

_REPORT = {"type": "object", "required": ["run", "status", "kind", "findings", "baseline", "runbook", "rightsizing"]}
_BASELINE = Param("baseline", "query", {"type": "string", "maxLength": 64}, "A baseline run (id or unique prefix).")


async def get_diagnosis(ctx: Ctx) -> Response:
    from flightlog.diagnose.engine import diagnose_run

    info = await ctx.run()
    baseline = ctx.query.text("baseline", max_len=64)
    if baseline is not None:
        await ctx.run(baseline)  # the baseline's project must be visible too
    auto = ctx.query.flag("auto_baseline", default=True)
    report: dict[str, Any] = await ctx.call(diagnose_run, ctx.client, info.id, baseline, auto_baseline=auto)
    return json_response(report)


async def get_comparison(ctx: Ctx) -> Response:
    from flightlog.diagnose.compare import compare_runs

    info = await ctx.run()
    baseline = ctx.query.text("baseline", max_len=64)
    if baseline is None:  # the baseline a diagnosis would choose (404 with the reason when none)
        return json_response(await ctx.call(compare_runs, ctx.client, info.id, None))
    base = await ctx.run(baseline)
    return json_response(await ctx.call(compare_runs, ctx.client, info.id, base.id))


async def get_baseline(ctx: Ctx) -> Response:
    from flightlog.diagnose.selection import baseline_for  # on use: the server imports this module at start

    info = await ctx.run()
    choice = await ctx.call(baseline_for, ctx.client, info)
    return json_response(choice.to_dict())


async def get_rightsizing(ctx: Ctx) -> Response:
    from flightlog.diagnose.rightsize import rightsize

    info = await ctx.run()
    return json_response(await ctx.call(rightsize, ctx.client, info))


OPERATIONS: list[Operation] = [
    Operation(
        "GET",
        "/runs/{run}/diagnosis",
        get_diagnosis,
        "reader",
        "Likely causes of a failed or slow run, with evidence and next steps",
        "diagnosis",
        params=(
            RUN,
            _BASELINE,
            Param(
                "auto_baseline",
                "query",
                {"type": "boolean", "default": True},
                "Without baseline: compare with the run GET /runs/{run}/baseline chooses (docs/troubleshooting.md).",
            ),
        ),
        responses={"200": ok("The diagnosis (docs/troubleshooting.md)", _REPORT)},
    ),
    Operation(
        "GET",
        "/runs/{run}/comparison",
        get_comparison,
        "reader",
        "What changed from a baseline run: params, code, packages, environment, inputs, stages, peaks, metrics",
        "diagnosis",
        params=(
            RUN,
            Param(
                "baseline",
                "query",
                {"type": "string", "maxLength": 64},
                "The baseline run; without it, the one a diagnosis would choose (404, saying why, when none qualifies).",
            ),
        ),
        responses={"200": ok("The comparison", {"type": "object"})},
    ),
    Operation(
        "GET",
        "/runs/{run}/baseline",
        get_baseline,
        "reader",
        "The run a run is measured against, chosen the one way diagnose, compare, triage and the UI choose it, and why",
        "diagnosis",
        params=(RUN,),
        responses={
            "200": ok(
                "The choice (run is null when none qualifies; reason says why)",
                {"type": "object", "required": ["run", "choice", "reason", "skipped", "flagged", "comparable_runs"]},
            )
        },
    ),
    Operation(
        "GET",
        "/runs/{run}/rightsizing",
        get_rightsizing,
        "reader",
        "Memory and CPU requests with headroom from the run's observed peaks",
        "diagnosis",
        params=(RUN,),
        responses={"200": ok("Right-sizing", {"type": "object"})},
    ),
]
