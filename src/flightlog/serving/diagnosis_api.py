"""``GET /api/v1/deployments/{endpoint}/diagnosis?env=&since=&project=``: the deployment diagnosis
(`flightlog.serving.diagnosis`) over the server's store, the same JSON as ``flightlog diagnose
--deployment ENDPOINT --format json``.

An unknown endpoint or environment is a 404 naming the known ones; an endpoint without traffic
yet is a report that says so. A token limited to one project diagnoses that project's replicas
and deployments only.
"""

from __future__ import annotations

from typing import Any

from starlette.responses import Response

from flightlog.client import Client
from flightlog.config import Settings
from flightlog.server.context import Ctx, forbid_other_project
from flightlog.server.operations import Operation, Param, ok
from flightlog.server.responses import json_response
from flightlog.serving.diagnosis import DEFAULT_SINCE, diagnose_deployment

__all__ = ["OPERATIONS"]


def _client(ctx: Ctx) -> Any:
    home = getattr(ctx.state.config, "home", None)
    settings = Settings.from_env(home=home) if home is not None else Settings.from_env()
    return Client.for_lookups(settings, store=ctx.store)


async def get_diagnosis(ctx: Ctx) -> Response:
    endpoint = ctx.path("endpoint")
    env = ctx.query.text("env", max_len=128)
    since = ctx.query.text("since", max_len=64) or DEFAULT_SINCE
    project = forbid_other_project(ctx.principal, ctx.query.text("project", max_len=200))
    report = await ctx.call(lambda: diagnose_deployment(_client(ctx), endpoint, env=env, since=since, project=project))
    return json_response(report)


OPERATIONS: list[Operation] = [
    Operation(
        "GET",
        "/deployments/{endpoint}/diagnosis",
        get_diagnosis,
        "reader",
        "The way back: what changed in production and when, the versions before and after, what differs in training",
        "deployments",
        params=(
            Param("endpoint", "path", {"type": "string", "maxLength": 128}, "An endpoint (fraud-api)."),
            Param(
                "env", "query", {"type": "string", "maxLength": 128}, "Its environment (needed when it has several)."
            ),
            Param("since", "query", {"type": "string", "maxLength": 64}, "Look back this far (24h, 2h, an ISO time)."),
            Param("project", "query", {"type": "string", "maxLength": 200}, "Only this project's deployment."),
        ),
        responses={"200": ok("The deployment diagnosis (docs/models.md, The way back)", {"type": "object"})},
    ),
]
