"""Triage in the HTTP API: ``GET /api/v1/triage?project=&since=&pipeline=``, declared as a
server operation and served through the feature table (``flightlog_api_operations``).

The handler builds the same report as ``flightlog triage`` (:func:`~flightlog.triage.report.triage_report`)
over the server's store. A token of one project sees that project only: without ``project``
it is that project, another one is refused.
"""

from __future__ import annotations

from typing import Any

from starlette.responses import Response

from flightlog.client import Client
from flightlog.config import Settings
from flightlog.errors import Forbidden
from flightlog.server.context import Ctx
from flightlog.server.operations import Operation, Param, ok
from flightlog.server.responses import json_response
from flightlog.triage.report import DEFAULT_SINCE, triage_report

__all__ = ["OPERATIONS"]

_REPORT = {"type": "object", "required": ["project", "pipeline", "since", "until", "failures", "days", "groups"]}


def _client(ctx: Ctx) -> Client:
    home = getattr(ctx.state.config, "home", None)
    settings = Settings.from_env(home=home) if home is not None else Settings.from_env()
    return Client.for_lookups(settings, store=ctx.store)


async def get_triage(ctx: Ctx) -> Response:
    project = ctx.query.text("project", max_len=200)
    since = ctx.query.text("since", max_len=64) or DEFAULT_SINCE
    pipeline = ctx.query.text("pipeline", max_len=200)
    scope = ctx.principal.project
    if scope is not None:
        if project is not None and project != scope:
            raise Forbidden(
                f"this token is limited to project {scope!r}: it cannot read the failures of {project!r}",
                details={"project": scope},
            )
        project = scope

    def report() -> dict[str, Any]:
        return triage_report(_client(ctx), project=project, since=since, pipeline=pipeline)

    return json_response(await ctx.call(report))


OPERATIONS: list[Operation] = [
    Operation(
        "GET",
        "/triage",
        get_triage,
        "reader",
        "Failed, crashed and killed runs grouped by cause, each with its onset",
        "triage",
        params=(
            Param("project", "query", {"type": "string", "maxLength": 200}, "The project (default: every project)."),
            Param(
                "since",
                "query",
                {"type": "string", "maxLength": 64, "default": DEFAULT_SINCE},
                "Failures after a time: a duration ago (7d, 12h) or an ISO-8601 time.",
            ),
            Param("pipeline", "query", {"type": "string", "maxLength": 200}, "Only this pipeline's runs and steps."),
        ),
        responses={"200": ok("The failures grouped by cause (docs/triage.md)", _REPORT)},
        description="The same report as `flightlog triage --format json`: groups by cause signature, "
        "the biggest first, each with its runs (newest first), counts per day and onset.",
    ),
]
