"""Triage in the HTTP API: ``GET /api/v1/triage?project=&since=&pipeline=`` and one run's goodput,
``GET /api/v1/runs/{run}/goodput`` (the UI's Timeline tab draws its summary line and its bar from
it), declared as server operations and served through the feature table (``flightlog_api_operations``).

The handler builds the same report as ``flightlog triage`` (:func:`~flightlog.triage.report.triage_report`)
over the server's store, in the server's triage worker process (worker.py) and within the
bounds of budget.py; a report is remembered by the store's change position (the same question
within a minute, with nothing changed, is answered from memory). A token of one project sees that
project only: without ``project`` it is that project, another one is refused.
"""

from __future__ import annotations

import threading
import time
import weakref
from typing import Any

from flightlog.errors import Forbidden
from flightlog.server.context import Ctx
from flightlog.server.operations import RUN, Operation, Param, ok
from flightlog.server.responses import Response, json_bytes, json_response
from flightlog.triage.budget import ReportCache
from flightlog.triage.goodput import run_goodput
from flightlog.triage.report import DEFAULT_SINCE
from flightlog.triage.worker import report_in_worker

__all__ = ["OPERATIONS"]

_REPORT = {"type": "object", "required": ["project", "pipeline", "since", "until", "failures", "days", "groups"]}


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

    def report() -> bytes:
        reports = _reports(ctx.store)
        now = time.time()
        config = ctx.state.config

        def make() -> dict[str, Any]:  # in the worker process (worker.py): never this one's CPU or store
            return report_in_worker(
                config.store_uri, config.home, ctx.store, project=project, since=since, pipeline=pipeline, now=now
            )

        key = (project, pipeline, since)
        return json_bytes(reports.get(key, ctx.store.change_position(), make, now=now))

    return Response(await ctx.call(report), media_type="application/json")


#: per store (one per server app): reports by the store's change position
_REPORTS: weakref.WeakKeyDictionary[Any, ReportCache] = weakref.WeakKeyDictionary()
_REPORTS_LOCK = threading.Lock()


def _reports(store: Any) -> ReportCache:
    with _REPORTS_LOCK:
        found = _REPORTS.get(store)
        if found is None:
            found = _REPORTS[store] = ReportCache()
        return found


_GOODPUT = {
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
    return json_response(await ctx.call(run_goodput, ctx.client, info))


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
    Operation(
        "GET",
        "/runs/{run}/goodput",
        get_goodput,
        "reader",
        "Where a run's time went: queued, startup, productive steps, data stalls, idle GPU, checkpointing, retries",
        "runs",
        params=(RUN,),
        responses={"200": ok("The run's goodput", _GOODPUT)},
    ),
]
