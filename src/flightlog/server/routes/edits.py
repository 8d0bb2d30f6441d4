"""``POST /runs/{run}/edit``: rename, retag and describe a run (the web UI's edit form)."""

from __future__ import annotations

from typing import Any

from starlette.responses import Response

from flightlog.errors import InvalidInput
from flightlog.server.context import Ctx
from flightlog.server.operations import RUN, Operation, json_body, ok, schema_ref
from flightlog.server.responses import json_response
from flightlog.server.shapes import run_json
from flightlog.store.edits import edit_run

__all__ = ["OPERATIONS"]

_FIELDS = ("name", "description", "tags", "remove_tags")


async def edit(ctx: Ctx) -> Response:
    body = await ctx.json()
    run_id = await ctx.run_id()
    unknown = sorted(set(body) - set(_FIELDS))
    if unknown:
        raise InvalidInput(f"cannot edit {unknown}; send any of {list(_FIELDS)}", details={"allowed": list(_FIELDS)})
    name, description = body.get("name"), body.get("description")
    tags: Any = body.get("tags") or {}
    remove: Any = body.get("remove_tags") or []
    if name is not None and not isinstance(name, str):
        raise InvalidInput("name must be a string")
    if description is not None and not isinstance(description, str):
        raise InvalidInput("description must be a string ('' removes it)")
    if not isinstance(tags, dict) or not all(isinstance(v, (str, int, float, bool)) for v in tags.values()):
        raise InvalidInput('tags must be an object of strings, e.g. {"team": "cv"}')
    if not isinstance(remove, list) or not all(isinstance(k, str) for k in remove):
        raise InvalidInput('remove_tags must be a list of tag keys, e.g. ["tmp"]')
    await ctx.call(
        edit_run, ctx.store, run_id, origin="api", name=name, description=description, tags=tags, remove_tags=remove
    )
    return json_response(run_json(await ctx.run(run_id)))


OPERATIONS = [
    Operation(
        "POST",
        "/runs/{run}/edit",
        edit,
        "writer",
        "Rename, retag or describe a run (any status)",
        "runs",
        params=(RUN,),
        body=json_body(
            {
                "type": "object",
                "additionalProperties": False,
                "minProperties": 1,
                "properties": {
                    "name": {"type": "string", "minLength": 1, "maxLength": 200},
                    "description": {"type": "string", "maxLength": 10000, "description": "'' removes it"},
                    "tags": {"type": "object", "additionalProperties": {"type": "string", "maxLength": 1000}},
                    "remove_tags": {"type": "array", "items": {"type": "string", "minLength": 1, "maxLength": 200}},
                },
            }
        ),
        responses={"200": ok("The run as it now is", schema_ref("Run"))},
    ),
]
