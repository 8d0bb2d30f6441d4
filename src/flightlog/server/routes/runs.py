"""Projects and runs: search (filter language, cursors), detail, status updates, deletion,
notes, evidence, context, children and lineage."""

from __future__ import annotations

import math
import time
from typing import Any

from starlette.responses import Response

from flightlog.config import home_from_env
from flightlog.errors import InvalidInput
from flightlog.models import STATUSES, RunInfo, kind_filter
from flightlog.plugins import features
from flightlog.redaction import redact_user_strings
from flightlog.schema import record
from flightlog.schema.values import is_json_value
from flightlog.server.context import Ctx, forbid_other_project
from flightlog.server.operations import RUN, Operation, Param, json_body, ok, schema_ref
from flightlog.server.responses import json_response
from flightlog.server.shapes import decode_cursor, encode_cursor, fingerprint, run_json
from flightlog.store.base import ingest_one
from flightlog.timefmt import iso

__all__ = ["OPERATIONS"]

MAX_PAGE = 1000


async def list_projects(ctx: Ctx) -> Response:
    projects = await ctx.call(ctx.store.projects)
    visible = [{**p, "last_created": iso(p["last_created"])} for p in projects if ctx.principal.allows(p["name"])]
    return json_response({"projects": visible})


async def search_runs(ctx: Ctx) -> Response:
    q = ctx.query
    project = forbid_other_project(ctx.principal, q.text("project", max_len=200))
    filter_ = kind_filter(q.text("filter", max_len=10_000), q.text("kind", max_len=20))
    order_by = q.text("order_by", max_len=1000)
    limit = q.count("limit", default=50, max=MAX_PAGE)
    offset = q.count("offset", default=0, max=10**9)
    detail = q.flag("detail")
    cursor = q.text("cursor", max_len=1000)
    fp = fingerprint(project, filter_, order_by)
    snapshot = time.time()
    effective = filter_
    key = await ctx.call(ctx.store.shared_secret, "cursors")
    if cursor is not None:
        state = decode_cursor(cursor, fp, key)
        offset, snapshot = int(state.get("o", 0)), float(state.get("t", snapshot))
        # runs created after the first page was read never shift later pages
        bound = f"created <= {snapshot!r}"
        effective = f"({filter_}) and {bound}" if filter_ and filter_.strip() else bound
    runs = await ctx.call(
        ctx.store.search_runs, project=project, filter=effective, order_by=order_by, limit=limit + 1, offset=offset
    )
    more = len(runs) > limit
    runs = runs[:limit]
    next_cursor = None
    if more and limit:
        if cursor is None:  # the bound of later pages: now, or a newer run written by a clock ahead of ours
            newest = await ctx.call(ctx.store.search_runs, project=project, filter=None, order_by="-created", limit=1)
            snapshot = max([snapshot, *(r.created for r in newest if r.created is not None)])
        next_cursor = encode_cursor({"o": offset + limit, "t": snapshot, "h": fp}, key)
    return json_response({"runs": [_listed(r, detail) for r in runs], "next_cursor": next_cursor})


def _listed(info: RunInfo, detail: bool) -> dict[str, Any]:
    """A run as the listing shows it: its JSON plus two headlines a table needs on every row
    without a diagnosis each: ``cause`` (the taxonomy category of a failed, crashed or killed
    run, from what its row holds: the diagnose feature's listing field) and
    ``nonfinite_metrics`` (the metrics with a NaN or ±inf point anywhere, from the summaries)."""
    doc = run_json(info, detail=detail)
    for name, field in features().listing_fields().items():  # the diagnose feature's `cause`, and any other feature's
        doc.setdefault(name, field(info))
    doc["nonfinite_metrics"] = sorted(name for name, m in info.metrics.items() if m.nonfinite)
    return doc


async def get_run(ctx: Ctx) -> Response:
    return json_response(run_json(await ctx.run()))


_PATCHABLE = ("status", "end_reason", "ended", "exit_code", "signal", "failure")


async def patch_run(ctx: Ctx) -> Response:
    body = await ctx.json()
    run_id = await ctx.run_id()
    unknown = sorted(set(body) - set(_PATCHABLE))
    if unknown:
        raise InvalidInput(
            f"cannot update run fields {unknown}; allowed: {list(_PATCHABLE)}", details={"allowed": list(_PATCHABLE)}
        )
    if not body:
        raise InvalidInput(f"nothing to update: send one or more of {list(_PATCHABLE)}")
    fields: dict[str, Any] = {}
    for name, value in body.items():
        fields[name] = _patch_value(name, value)
    await ctx.call(ctx.store.update_run, run_id, **fields)
    return json_response(run_json(await ctx.run(run_id)))


def _patch_value(name: str, value: Any) -> Any:
    if value is None:
        if name == "status":
            raise InvalidInput(f"status cannot be null: use one of {', '.join(STATUSES)}")
        return None
    if name == "status":
        if value not in STATUSES:
            raise InvalidInput(f"status {value!r} is not valid: use one of {', '.join(STATUSES)}")
        return value
    if name == "end_reason":
        if not isinstance(value, str) or len(value) > 100:
            raise InvalidInput("end_reason must be a short string")
        return value
    if name == "ended":
        from flightlog.transport.decode import epoch

        try:
            ended = epoch(value)
        except (ValueError, TypeError):
            raise InvalidInput(f"ended {value!r} is not a time: use epoch seconds or ISO-8601") from None
        if ended is None or not math.isfinite(ended):
            raise InvalidInput(f"ended {value!r} is not a time")
        return ended
    if name in ("exit_code", "signal"):
        if isinstance(value, bool) or not isinstance(value, int) or not -(2**31) <= value < 2**31:
            raise InvalidInput(f"{name} must be a whole number")
        return value
    if not isinstance(value, dict) or not is_json_value(value):
        raise InvalidInput("failure must be a JSON object")
    return value


async def delete_run(ctx: Ctx) -> Response:
    ref = ctx.path("run")
    run_id = await ctx.run_id()
    if run_id != ref:
        raise InvalidInput(f"deleting needs the whole run id ({ref!r} is a prefix of {run_id})", details={"id": run_id})
    deleted = await ctx.call(ctx.store.delete_runs, [run_id])
    return json_response({"deleted": deleted})


async def run_children(ctx: Ctx) -> Response:
    children = await ctx.call(ctx.store.children, await ctx.run_id())
    visible = ctx.visible()
    return json_response({"children": children if visible is None else await ctx.call(visible, children)})


async def run_lineage(ctx: Ctx) -> Response:
    """Inputs with the runs that produced them; outputs with the runs that used them: the
    Client's lineage (computed there only), limited to the runs this principal may see."""
    run_id = await ctx.run_id()  # resolved among this principal's runs only, as ctx.run() does
    return json_response(await ctx.call(ctx.client.lineage, run_id, visible=ctx.visible()))


async def run_context(ctx: Ctx) -> Response:
    return json_response(await ctx.call(ctx.store.context, await ctx.run_id()))


async def list_notes(ctx: Ctx) -> Response:
    notes = await ctx.call(ctx.store.notes, await ctx.run_id())
    return json_response({"notes": [n.to_dict() for n in notes]})


async def add_note(ctx: Ctx) -> Response:
    body = await ctx.json()
    run_id = await ctx.run_id()
    text, author = body.get("text"), body.get("author")
    if not isinstance(text, str) or not text.strip():
        raise InvalidInput('a note needs some text: send {"text": "..."}')
    if len(text) > 100_000:
        raise InvalidInput("a note is at most 100,000 characters")
    if author is not None and (not isinstance(author, str) or len(author) > 200):
        raise InvalidInput("author must be a string of at most 200 characters")
    text = redact_user_strings(record("note", text=text), home_from_env())["text"]
    note = await ctx.call(ctx.store.add_note, run_id, text, author)
    return json_response(note.to_dict(), status=201)


async def list_evidence(ctx: Ctx) -> Response:
    q = ctx.query
    kind, name = q.text("kind", max_len=200), q.text("name", max_len=1000)
    rows = await ctx.call(ctx.store.evidence, await ctx.run_id(), kind, name)
    return json_response({"evidence": [{**r, "time": iso(r["time"])} for r in rows]})


async def add_evidence(ctx: Ctx) -> Response:
    body = await ctx.json()
    run_id = await ctx.run_id()
    kind, name, data = body.get("kind"), body.get("name"), body.get("data")
    for label, value in (("kind", kind), ("name", name)):
        if not isinstance(value, str) or not value.strip() or len(value) > 1000:
            raise InvalidInput(f"evidence needs a {label}: a non-empty string")
    if not isinstance(data, dict):
        raise InvalidInput("evidence data must be a JSON object")
    await ctx.call(ingest_one, ctx.store, run_id, "evidence", origin="api", kind=kind, name=name, data=data)
    return json_response({"run": run_id, "kind": kind, "name": name}, status=201)


_RUN_LIST = {
    "type": "object",
    "required": ["runs", "next_cursor"],
    "properties": {
        "runs": {"type": "array", "items": schema_ref("Run")},
        "next_cursor": {
            "type": ["string", "null"],
            "description": "Pass as `cursor` for the next page; null on the last.",
        },
    },
}

OPERATIONS = [
    Operation(
        "GET",
        "/projects",
        list_projects,
        "reader",
        "Projects with their run counts",
        "runs",
        responses={
            "200": ok(
                "Projects",
                {
                    "type": "object",
                    "required": ["projects"],
                    "properties": {"projects": {"type": "array", "items": schema_ref("Project")}},
                },
            )
        },
    ),
    Operation(
        "GET",
        "/runs",
        search_runs,
        "reader",
        "Search runs with the filter language, newest first",
        "runs",
        params=(
            Param("project", "query", {"type": "string", "maxLength": 200}, "Only runs of this project."),
            Param(
                "filter",
                "query",
                {"type": "string", "maxLength": 10000},
                "A filter, e.g. `params.lr > 0.01 and status = 'failed'` (docs/filters.md).",
            ),
            Param(
                "order_by", "query", {"type": "string", "maxLength": 1000}, "e.g. `-metrics.acc`; default `-created`."
            ),
            Param(
                "kind",
                "query",
                {"type": "string", "enum": ["all", "training", "serving"], "default": "all"},
                "Only runs of this kind: `training` leaves serving replicas out (the UI's runs table does).",
            ),
            Param(
                "limit",
                "query",
                {"type": "integer", "minimum": 0, "maximum": MAX_PAGE, "default": 50},
                "Runs per page.",
            ),
            Param("offset", "query", {"type": "integer", "minimum": 0}, "Skip this many runs (first page only)."),
            Param(
                "cursor", "query", {"type": "string", "maxLength": 1000}, "`next_cursor` of the previous page (opaque)."
            ),
            Param(
                "detail",
                "query",
                {"type": "boolean", "default": False},
                "Each run in full (metric summaries, timeline, failure).",
            ),
        ),
        responses={"200": ok("A page of runs", _RUN_LIST)},
    ),
    Operation(
        "GET",
        "/runs/{run}",
        get_run,
        "reader",
        "One run in full",
        "runs",
        params=(RUN,),
        responses={"200": ok("The run", schema_ref("Run"))},
    ),
    Operation(
        "PATCH",
        "/runs/{run}",
        patch_run,
        "writer",
        "Set a run's status and how it ended",
        "runs",
        params=(RUN,),
        body=json_body(
            {
                "type": "object",
                "additionalProperties": False,
                "minProperties": 1,
                "properties": {
                    "status": {"type": "string", "enum": list(STATUSES)},
                    "end_reason": {"type": ["string", "null"], "maxLength": 100},
                    "ended": {"type": ["number", "string", "null"], "description": "Epoch seconds or ISO-8601."},
                    "exit_code": {"type": ["integer", "null"]},
                    "signal": {"type": ["integer", "null"]},
                    "failure": {"type": ["object", "null"]},
                },
            }
        ),
        responses={"200": ok("The updated run", schema_ref("Run"))},
    ),
    Operation(
        "DELETE",
        "/runs/{run}",
        delete_run,
        "writer",
        "Delete a run and everything recorded on it (whole id only)",
        "runs",
        params=(RUN,),
        responses={
            "200": ok("How many runs were deleted", {"type": "object", "properties": {"deleted": {"type": "integer"}}})
        },
    ),
    Operation(
        "GET",
        "/runs/{run}/children",
        run_children,
        "reader",
        "Ids of the runs whose parent this run is",
        "runs",
        params=(RUN,),
        responses={
            "200": ok(
                "Child run ids",
                {"type": "object", "properties": {"children": {"type": "array", "items": {"type": "string"}}}},
            )
        },
    ),
    Operation(
        "GET",
        "/runs/{run}/lineage",
        run_lineage,
        "reader",
        "Inputs with the runs that produced them, outputs with the runs that used them",
        "runs",
        params=(RUN,),
        responses={"200": ok("Lineage", {"type": "object"})},
    ),
    Operation(
        "GET",
        "/runs/{run}/context",
        run_context,
        "reader",
        "Runtime context: code revision, command, host, packages",
        "runs",
        params=(RUN,),
        responses={"200": ok("Context", {"type": "object"})},
    ),
    Operation(
        "GET",
        "/runs/{run}/notes",
        list_notes,
        "reader",
        "Notes kept with a run",
        "runs",
        params=(RUN,),
        responses={
            "200": ok(
                "Notes", {"type": "object", "properties": {"notes": {"type": "array", "items": schema_ref("Note")}}}
            )
        },
    ),
    Operation(
        "POST",
        "/runs/{run}/notes",
        add_note,
        "writer",
        "Keep a note (a hypothesis, a piece of evidence) with a run",
        "runs",
        params=(RUN,),
        body=json_body(
            {
                "type": "object",
                "required": ["text"],
                "properties": {
                    "text": {"type": "string", "minLength": 1, "maxLength": 100000},
                    "author": {"type": ["string", "null"], "maxLength": 200},
                },
            }
        ),
        responses={"201": ok("The note", schema_ref("Note"))},
    ),
    Operation(
        "GET",
        "/runs/{run}/evidence",
        list_evidence,
        "reader",
        "Evidence kept with a run (profiles, validations, manifests)",
        "runs",
        params=(
            RUN,
            Param("kind", "query", {"type": "string", "maxLength": 200}, "Only this kind."),
            Param("name", "query", {"type": "string", "maxLength": 1000}, "Only this name."),
        ),
        responses={
            "200": ok(
                "Evidence",
                {"type": "object", "properties": {"evidence": {"type": "array", "items": {"type": "object"}}}},
            )
        },
    ),
    Operation(
        "POST",
        "/runs/{run}/evidence",
        add_evidence,
        "writer",
        "Keep a piece of evidence with a run",
        "runs",
        params=(RUN,),
        body=json_body(
            {
                "type": "object",
                "required": ["kind", "name", "data"],
                "properties": {
                    "kind": {"type": "string", "minLength": 1, "maxLength": 1000},
                    "name": {"type": "string", "minLength": 1, "maxLength": 1000},
                    "data": {"type": "object"},
                },
            }
        ),
        responses={"201": ok("Kept", {"type": "object"})},
    ),
]
