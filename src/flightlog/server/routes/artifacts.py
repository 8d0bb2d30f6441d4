"""Artifacts: listings, streamed uploads and downloads by run and path, and content-addressed blobs.

Writers upload a blob by its SHA-256 (``HEAD`` to ask whether the server has it, ``PUT`` to
send it) and then ship the ``artifact`` record that points at it; a script can also ``PUT``
a file straight under a run's path. Downloads are attachments in a sandbox (see blobs.py).
"""

from __future__ import annotations

import time

from starlette.responses import Response

from flightlog.errors import InvalidInput, NotFound
from flightlog.ids import new_writer_id
from flightlog.schema import record as schema_record
from flightlog.server.blobs import blob_info, check_artifact_path, check_digest, filename_of
from flightlog.server.context import Ctx
from flightlog.server.operations import RUN, Operation, Param, ok, schema_ref
from flightlog.server.responses import json_response
from flightlog.transport.artifacts import blob_digest

__all__ = ["OPERATIONS"]

_DIGEST = Param(
    "digest", "path", {"type": "string", "pattern": "^[0-9a-f]{64}$"}, "The content's SHA-256, lowercase hex."
)
_PATH = Param(
    "path",
    "path",
    {"type": "string", "minLength": 1, "maxLength": 1024},
    "The artifact's path under the run, e.g. `model.bin` or `eval/report.html`.",
)
_BINARY = {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}}


async def list_artifacts(ctx: Ctx) -> Response:
    arts = await ctx.call(ctx.store.artifacts, await ctx.run_id())
    return json_response({"artifacts": [a.to_dict() for a in arts]})


async def artifacts_by_digest(ctx: Ctx) -> Response:
    digests = [check_digest(d) for d in ctx.query.values("sha256", max_items=500) or []]
    arts = await ctx.call(ctx.store.artifacts_by_digest, digests)
    if ctx.principal.project is not None:
        projects = await ctx.call(ctx.store.run_projects, sorted({a.run_id for a in arts}))
        arts = [a for a in arts if projects.get(a.run_id) == ctx.principal.project]
    return json_response({"artifacts": [a.to_dict() for a in arts]})


async def download_artifact(ctx: Ctx) -> Response:
    path = check_artifact_path(ctx.path("path"))
    run_id = await ctx.run_id()
    arts = [a for a in await ctx.call(ctx.store.artifacts, run_id) if a.path == path]
    if not arts:
        raise NotFound(f"run {run_id[:12]} has no artifact {path!r}: list them at /api/v1/runs/{run_id}/artifacts")
    art = arts[-1]
    digest = blob_digest(art.uri)
    if digest is None:
        where = f" (it stays at {art.uri} on the machine that logged it)" if art.uri else ""
        raise NotFound(f"artifact {path!r} was recorded without its content{where}")
    return await ctx.call(ctx.state.blobs.response, digest, filename_of(path))  # off the loop: may download


async def upload_artifact(ctx: Ctx) -> Response:
    path = check_artifact_path(ctx.path("path"))
    q = ctx.query
    role = q.choice("role", ("input", "output"), default="output")
    kind = q.text("kind", max_len=100) or "file"
    step = q.integer("step", min=0, max=2**63 - 1)
    expected = ctx.request.headers.get("x-content-sha256")
    if expected is not None:
        check_digest(expected.strip().lower())
    info = await ctx.run()
    sha, size = await ctx.state.blobs.receive(
        ctx.request, limit=ctx.state.config.max_upload, expected=expected.strip().lower() if expected else None
    )
    ctx.state.metrics.add_ingest(upload_bytes=size)
    record = schema_record(
        "artifact",
        r=info.id,
        w=f"api-{new_writer_id()}",
        s=1,
        t=time.time(),
        role=role,
        kind=kind,
        path=path,
        source=None,
        size=size,
        sha256=sha,
        uri=f"cas:sha256/{sha}",
        step=step,
        attempt=info.attempt,
    )
    result = await ctx.call(ctx.store.ingest, [record])
    if result.skipped:
        raise InvalidInput(f"the store refused the artifact: {result.skipped[0]}")
    return json_response({"run": info.id, "path": path, "role": role, "kind": kind, **blob_info(sha, size)}, status=201)


async def _visible_blob(ctx: Ctx, digest: str) -> bool:
    """Whether this principal may know the server holds this content: a token limited to a
    project sees only its project's content (digests are public, so existence would leak)."""
    project = ctx.principal.project
    return project is None or await ctx.call(ctx.store.has_digest, digest, project)


async def head_blob(ctx: Ctx) -> Response:
    digest = check_digest(ctx.path("digest"))
    size = await ctx.call(ctx.state.blobs.size_of, digest)
    if size is None or not await _visible_blob(ctx, digest):
        return Response(status_code=404)
    return Response(status_code=200, headers={"Content-Length": str(size)})


async def get_blob(ctx: Ctx) -> Response:
    digest = check_digest(ctx.path("digest"))
    if ctx.principal.project is not None and not await ctx.call(ctx.store.has_digest, digest, ctx.principal.project):
        raise NotFound(f"no artifact of project {ctx.principal.project!r} has the content {digest[:12]}…")
    return await ctx.call(ctx.state.blobs.response, digest, digest)


async def put_blob(ctx: Ctx) -> Response:
    """Store content by its digest. A token limited to a project that does not hold the content
    yet must send all of it (the hash is checked) even when the server has it: that upload is
    what lets its project's artifacts point at the content."""
    digest = check_digest(ctx.path("digest"))
    size = await ctx.call(ctx.state.blobs.size_of, digest)
    if size is not None and await _visible_blob(ctx, digest):
        return json_response({**blob_info(digest, size), "created": False})
    existed = size is not None
    sha, size = await ctx.state.blobs.receive(ctx.request, limit=ctx.state.config.max_upload, expected=digest)
    if ctx.principal.project is not None:
        await ctx.call(ctx.store.grant_blob, sha, ctx.principal.project)
    ctx.state.metrics.add_ingest(upload_bytes=size)
    return json_response({**blob_info(sha, size), "created": not existed}, status=200 if existed else 201)


_ART_LIST = {
    "type": "object",
    "required": ["artifacts"],
    "properties": {"artifacts": {"type": "array", "items": schema_ref("Artifact")}},
}
_BLOB = {
    "type": "object",
    "properties": {"sha256": {"type": "string"}, "size": {"type": "integer"}, "uri": {"type": "string"}},
}

OPERATIONS = [
    Operation(
        "GET",
        "/runs/{run}/artifacts",
        list_artifacts,
        "reader",
        "A run's artifacts (inputs and outputs)",
        "artifacts",
        params=(RUN,),
        responses={"200": ok("Artifacts", _ART_LIST)},
    ),
    Operation(
        "GET",
        "/runs/{run}/artifacts/{path}",
        download_artifact,
        "reader",
        "Download an artifact (streamed, as an attachment)",
        "artifacts",
        route="/runs/{run}/artifacts/{path:path}",
        params=(RUN, _PATH),
        responses={"200": {"description": "The content", "content": _BINARY}},
    ),
    Operation(
        "PUT",
        "/runs/{run}/artifacts/{path}",
        upload_artifact,
        "writer",
        "Upload a file as an artifact of a run (streamed)",
        "artifacts",
        route="/runs/{run}/artifacts/{path:path}",
        description="The body is the file, streamed; its size is limited by the server's --max-upload. "
        "Send `X-Content-SHA256` to have the content checked.",
        params=(
            RUN,
            _PATH,
            Param("role", "query", {"type": "string", "enum": ["input", "output"]}, "input or output (default)."),
            Param(
                "kind", "query", {"type": "string", "maxLength": 100}, "file (default), model, checkpoint, dataset, ..."
            ),
            Param("step", "query", {"type": "integer", "minimum": 0}, "The step it belongs to."),
            Param("X-Content-SHA256", "header", {"type": "string", "pattern": "^[0-9a-f]{64}$"}, "Expected SHA-256."),
        ),
        body={"required": True, "content": _BINARY},
        responses={"201": ok("Stored", _BLOB)},
    ),
    Operation(
        "GET",
        "/artifacts",
        artifacts_by_digest,
        "reader",
        "Artifacts (of any run) with these contents",
        "artifacts",
        params=(
            Param(
                "sha256",
                "query",
                {"type": "array", "items": {"type": "string", "pattern": "^[0-9a-f]{64}$"}, "maxItems": 500},
                "SHA-256 digests (repeat the parameter, or separate with commas).",
            ),
        ),
        responses={"200": ok("Artifacts", _ART_LIST)},
    ),
    Operation(
        "HEAD",
        "/blobs/sha256/{digest}",
        head_blob,
        "writer",
        "Whether the server has this content",
        "artifacts",
        params=(_DIGEST,),
        responses={"200": {"description": "It has it"}, "404": {"description": "It does not"}},
    ),
    Operation(
        "GET",
        "/blobs/sha256/{digest}",
        get_blob,
        "reader",
        "Download content by its SHA-256 (streamed)",
        "artifacts",
        params=(_DIGEST,),
        responses={"200": {"description": "The content", "content": _BINARY}},
    ),
    Operation(
        "PUT",
        "/blobs/sha256/{digest}",
        put_blob,
        "writer",
        "Upload content by its SHA-256 (streamed; size and hash checked)",
        "artifacts",
        params=(_DIGEST,),
        body={"required": True, "content": _BINARY},
        responses={"200": ok("Already there", _BLOB), "201": ok("Stored", _BLOB)},
    ),
]
