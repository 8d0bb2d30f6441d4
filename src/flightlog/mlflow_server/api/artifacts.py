"""MLflow's artifact proxy (``/api/2.0/mlflow-artifacts/``) onto flightlog's artifact store.

A run made through MLflow gets the artifact URI ``mlflow-artifacts:/<experiment>/<run>/artifacts``
(:func:`artifact_uri`), which MLflow's client turns into this proxy's URLs; a logged model's is
``mlflow-artifacts:/<experiment>/models/<model_id>/artifacts``, whose files are artifacts of the
model's run under ``models/<model_id>/``. Every file that arrives is a flightlog artifact of its run,
content-addressed with its SHA-256, exactly as one logged by the SDK: `flightlog runs`, the UI,
``gc`` and the registry see it without knowing MLflow.

Deleting is a tombstone (an artifact record of kind ``deleted`` at the path): records are history
and are never rewritten, so MLflow's listings and downloads skip the path while flightlog still
shows what was there.

Multipart uploads (the client's ``MLFLOW_ENABLE_PROXY_MULTIPART_UPLOAD``, above its size threshold)
get part URLs on this server, like the presigned URLs of object storage: the client sends parts
there without its token, so the upload id in the URL is the credential (random, 192 bits, alive
for a day). Each part is a content-addressed blob whose ETag is its SHA-256; completing streams
the parts in order into one blob. Parts live in the shared blob store and the upload in the
database, so any replica can take any request.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
import re
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import anyio.to_thread

from flightlog.errors import NotFound
from flightlog.ids import new_writer_id
from flightlog.mlflow_server.common import principal_of
from flightlog.mlflow_server.errors import MlflowError, invalid, mlflow_error_response, not_found
from flightlog.mlflow_server.migrations import MODELS_MIGRATIONS as MIGRATIONS
from flightlog.models import Artifact, RunInfo
from flightlog.schema import record as schema_record
from flightlog.schema.paths import check_artifact_path
from flightlog.server.blobs import filename_of
from flightlog.server.context import Ctx, UnsupportedMediaType
from flightlog.server.operations import Operation, Param
from flightlog.server.origins import check_same_origin
from flightlog.server.prometheus import ROUTE_KEY
from flightlog.server.responses import Response, json_response
from flightlog.store.base import feature_store
from flightlog.store.features import ensure_tables
from flightlog.transport.artifacts import blob_digest

__all__ = [
    "OPERATIONS",
    "path_param",
    "PROXY",
    "Target",
    "artifact_uri",
    "db_of",
    "live_artifacts",
    "model_artifact_uri",
    "record_artifact",
    "resolve_target",
    "store_bytes",
    "write_manifest",
]

PROXY = "//api/2.0/mlflow-artifacts"
SCHEME = "mlflow-artifacts:/"
#: the kind of the record that deletes a path (MLflow's delete_artifacts)
DELETED = "deleted"
#: the kind of a model directory's manifest: every file under it, with its digest
MANIFEST = "model"
_UPLOAD_TTL = 24 * 3600.0
_MAX_PARTS = 10_000
_SEGMENT = re.compile(r"^[^/\x00]+$")
_PART_READ = 1 << 20


def artifact_uri(run_id: str, experiment_id: str) -> str:
    """The ``artifact_uri`` of a run made through MLflow: the client resolves it against this proxy."""
    return f"{SCHEME}{experiment_id}/{run_id}/artifacts"


def model_artifact_uri(model_id: str, experiment_id: str) -> str:
    """A logged model's ``artifact_uri``: its files are artifacts of its run under ``models/<model_id>/``."""
    return f"{SCHEME}{experiment_id}/models/{model_id}/artifacts"


def _tables(store: Any) -> Any:
    """A SQL run store's own database, with this feature's tables in it (either dialect)."""
    ensure_tables(store.db, MIGRATIONS)
    return store.db


#: the database of this feature's tables, for each run store's (``Store.backend``)
_BUILDERS = {"sqlite": _tables, "postgresql": _tables}


def db_of(ctx: Ctx) -> Any:
    """The run store's database, with this feature's tables in it."""
    db = feature_store(ctx.store, _BUILDERS)
    if db is None:
        raise MlflowError("NOT_IMPLEMENTED", "this server's store keeps no MLflow models (it has no database)")
    return db


@dataclass(frozen=True)
class Target:
    """Where a proxy path lands: a run, the prefix of its artifact paths, and the rest."""

    run: RunInfo
    prefix: str  # "" for a run's own artifacts, "models/<id>" for a logged model's
    rest: str  # the path below the artifact root ("" for the root)
    model_id: str | None = None

    def path(self, *more: str) -> str:
        """The artifact path under the run, checked by the one rule every artifact path passes
        (`flightlog.schema.paths`: relative, no ``..``, ``.``, backslash, drive or control character)."""
        joined = "/".join(p for p in (self.prefix, self.rest, *more) if p)
        return check_artifact_path(joined) if joined else joined


def _segments(path: str) -> list[str]:
    parts = path.strip("/").split("/") if path.strip("/") else []
    for p in parts:
        if p in (".", "..") or not _SEGMENT.match(p):
            raise invalid(f"Invalid path {path[:200]!r}: it must be relative, without '.' or '..' segments")
    return parts


_FORMS = "<experiment>/<run>/artifacts/... or <experiment>/models/<model>/artifacts/..."


async def resolve_target(ctx: Ctx, path: str) -> Target:
    """The run and artifact path a proxy path names; the run must be visible to the caller."""
    parts = _segments(path)
    if len(parts) >= 4 and parts[1] == "models" and parts[3] == "artifacts":
        model_id = parts[2]
        _check_rest(parts[4:])
        run_id = await ctx.call(_model_run, db_of(ctx), model_id)
        if run_id is None:
            raise not_found(f"Logged model with ID '{model_id}' not found.")
        return Target(await _run(ctx, run_id), f"models/{model_id}", "/".join(parts[4:]), model_id)
    if len(parts) >= 3 and parts[2] == "artifacts":
        _check_rest(parts[3:])
        return Target(await _run(ctx, parts[1]), "", "/".join(parts[3:]))
    raise not_found(f"{path[:200]!r} is not an artifact location of this server: paths here are {_FORMS}")


def _check_rest(parts: list[str]) -> None:
    """Refuse a bad path before the run is even looked up (and whatever the caller's scope)."""
    if parts:
        check_artifact_path("/".join(parts))


async def _run(ctx: Ctx, run_id: str) -> RunInfo:
    try:
        return await ctx.run(run_id)
    except NotFound:
        raise not_found(f"Run '{run_id}' not found.") from None


def _model_run(db: Any, model_id: str) -> str | None:
    with db.read() as conn:
        row = conn.execute("SELECT run_id FROM mlflow_logged_models WHERE model_id=?", (model_id,)).fetchone()
    return None if row is None else str(row[0])


def live_artifacts(arts: list[Artifact]) -> dict[str, Artifact]:
    """The output artifacts as MLflow sees them: the last record of each path, deleted paths left out."""
    latest: dict[str, Artifact] = {}
    for a in arts:
        if a.role == "output":
            latest[a.path] = a
    return {p: a for p, a in latest.items() if a.kind != DELETED}


def _under(arts: dict[str, Artifact], prefix: str) -> dict[str, Artifact]:
    if not prefix:
        return arts
    return {p: a for p, a in arts.items() if p.startswith(prefix + "/")}


async def record_artifact(
    ctx: Ctx,
    run: RunInfo,
    path: str,
    sha: str | None,
    size: int | None,
    *,
    kind: str = "file",
    meta: dict[str, Any] | None = None,
) -> None:
    """An artifact record of ``run``, as the native upload route forms one (one writer per record)."""
    check_artifact_path(path)  # whatever route named it (issue 31, item 5)
    fields: dict[str, Any] = {"meta": meta} if meta else {}
    record = schema_record(
        "artifact",
        r=run.id,
        w=f"mlflow-{new_writer_id()}",
        s=1,
        t=time.time(),
        role="output",
        kind=kind,
        path=path,
        source=None,
        size=size,
        sha256=sha,
        uri=None if sha is None else f"cas:sha256/{sha}",
        step=None,
        attempt=run.attempt,
        **fields,
    )
    result = await ctx.call(ctx.store.ingest, [record])
    if result.skipped:
        raise invalid(f"The store refused the artifact {path!r}: {result.skipped[0]}")


class _Body:
    """What `BlobStore.receive` reads (headers and a byte stream), for content made here."""

    def __init__(self, chunks: Callable[[], AsyncIterator[bytes]], size: int) -> None:
        self.headers = {"content-length": str(size)}
        self._chunks = chunks

    def stream(self) -> AsyncIterator[bytes]:
        return self._chunks()


async def store_bytes(ctx: Ctx, data: bytes) -> tuple[str, int]:
    """Keep ``data`` as a blob; returns (sha256, size)."""

    async def once() -> AsyncIterator[bytes]:
        yield data

    sha, size = await ctx.state.blobs.receive(
        _Body(once, len(data)), limit=max(len(data), 1), expected=hashlib.sha256(data).hexdigest()
    )
    return str(sha), int(size)


async def write_manifest(ctx: Ctx, run: RunInfo, prefix: str, *, source: str) -> Artifact:
    """Record the directory ``prefix`` of ``run`` as one artifact (kind ``model``): a manifest of
    every file under it with its digest, so a registry version made from it has one digest that
    covers the whole model. Returns the artifact; NotFound when the directory holds nothing."""
    arts = _under(live_artifacts(await ctx.call(ctx.client.artifacts, run)), prefix)
    files = [
        {"path": p[len(prefix) + 1 :], "sha256": a.sha256, "size": a.size}
        for p, a in sorted(arts.items())
        if a.kind != MANIFEST or p == prefix
    ]
    if not files:
        raise not_found(f"Run '{run.id}' has no artifacts under {prefix!r}: log the model's files there first.")
    doc = {"format": "flightlog.model-directory/1", "source": source, "files": files}
    data = json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()
    sha, size = await store_bytes(ctx, data)
    await record_artifact(ctx, run, prefix, sha, size, kind=MANIFEST, meta={"files": len(files), "source": source})
    for a in await ctx.call(ctx.client.artifacts, run):
        if a.path == prefix and a.sha256 == sha:
            return a
    raise NotFound(f"the manifest of {prefix!r} was not recorded")


# ── routes ─────────────────────────────────────────────────────────────────


def path_param(name: str, description: str) -> Param:
    """A path parameter as the route matches it: any text without control characters (a line
    break never matches a route, and the core would answer that in flightlog's shape)."""
    return Param(name, "path", {"type": "string", "pattern": "^[^\\x00-\\x1f]+$", "maxLength": 4096}, description)


_PARAMS = {
    "artifact_path": path_param("artifact_path", "<experiment>/<run>/artifacts/<path>, or a logged model's location"),
    "upload_id": path_param("upload_id", "The upload's id (from mpu/create)."),
    "part_number": Param("part_number", "path", {"type": "integer", "minimum": 1}, "The part, from 1."),
}


def _operation(
    method: str,
    path: str,
    handler: Callable[[Ctx], Awaitable[Response]],
    role: str | None,
    summary: str,
    route: str | None = None,
) -> Operation:
    """A proxy route: MLflow's auth (bearer or basic) and MLflow's error shape, checked here (the
    core's endpoint would answer refusals in flightlog's shape); ``role`` None: no token, the
    URL is the credential (multipart parts)."""
    full = PROXY + path

    async def endpoint(ctx: Ctx) -> Response:
        ctx.request.scope[ROUTE_KEY] = full[1:]
        try:
            check_same_origin(ctx.request)  # a page of another origin changes nothing (server/origins.py)
            if role is not None:
                principal = await principal_of(ctx)
                principal.require(role)
                ctx = Ctx(ctx.request, ctx.state, principal)
            return await handler(ctx)
        except Exception as exc:  # noqa: BLE001 - every error becomes MLflow's one shape
            return mlflow_error_response(exc, dict(ctx.request.scope))

    return Operation(
        method,
        full,
        endpoint,
        None,
        summary,
        "mlflow-artifacts",
        route=None if route is None else PROXY + route,
        params=tuple(p for name, p in _PARAMS.items() if "{" + name in path),
        own_origin_check=True,
        description="MLflow's artifact proxy (docs/mlflow.md). "
        + (
            f"Needs the role {role!r}: a flightlog token as `Authorization: Bearer` (MLFLOW_TRACKING_TOKEN) "
            "or as the basic-auth password."
            if role
            else "No token: the upload id in the URL is the credential."
        )
        + ' Errors are MLflow\'s `{"error_code", "message"}`.',
    )


async def upload(ctx: Ctx) -> Response:
    target = await resolve_target(ctx, ctx.path("artifact_path"))
    if not target.rest:
        raise invalid("Upload to a file's path below the artifact root, not to the root itself.")
    sha, size = await ctx.state.blobs.receive(ctx.request, limit=ctx.state.config.max_upload)
    ctx.state.metrics.add_ingest(upload_bytes=size)
    await record_artifact(ctx, target.run, target.path(), sha, size)
    return json_response({})


async def download(ctx: Ctx) -> Response:
    target = await resolve_target(ctx, ctx.path("artifact_path"))
    arts = live_artifacts(await ctx.call(ctx.client.artifacts, target.run))
    art = arts.get(target.path())
    if art is None or (art.kind == MANIFEST and _under(arts, art.path)):
        raise not_found(f"Artifact {target.rest!r} does not exist (run {target.run.id}).")
    digest = blob_digest(art.uri)
    if digest is None:
        raise not_found(f"Artifact {target.rest!r} was recorded without its content (it stays where it was logged).")
    response: Response = await ctx.call(ctx.state.blobs.response, digest, filename_of(art.path))
    return response


async def list_files(ctx: Ctx) -> Response:
    path = ctx.query.text("path", max_len=4096) or ""
    if len(_segments(path)) < 3:
        return json_response({})  # above any run: nothing to list (MLflow's clients never ask)
    target = await resolve_target(ctx, path)
    arts = live_artifacts(await ctx.call(ctx.client.artifacts, target.run))
    base = target.path()
    if base in arts and not _under(arts, base):
        a = arts[base]
        return json_response({"files": [_file(posixpath.basename(base), False, a.size)]})
    children: dict[str, dict[str, Any]] = {}
    for p, a in _under(arts, base).items():
        head, _, tail = p[len(base) + 1 if base else 0 :].partition("/")
        if tail:
            children[head] = _file(head, True, None)
        elif head not in children:
            children[head] = _file(head, False, a.size)
    files = [children[k] for k in sorted(children)]
    return json_response({"files": files} if files else {})


def _file(path: str, is_dir: bool, size: int | None) -> dict[str, Any]:
    doc: dict[str, Any] = {"path": path, "is_dir": is_dir}
    if not is_dir and size is not None:
        doc["file_size"] = size
    return doc


async def delete(ctx: Ctx) -> Response:
    target = await resolve_target(ctx, ctx.path("artifact_path"))
    arts = live_artifacts(await ctx.call(ctx.client.artifacts, target.run))
    base = target.path()
    doomed = sorted(p for p in arts if p == base or not base or p.startswith(base + "/"))
    for p in doomed:
        await record_artifact(ctx, target.run, p, None, None, kind=DELETED, meta={"deleted_by": "mlflow"})
    return json_response({})


# ── multipart ──────────────────────────────────────────────────────────────


async def _message(ctx: Ctx) -> dict[str, Any]:
    media = ctx.request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media != "application/json":  # no form or text/plain post of another origin's page (server/origins.py)
        raise UnsupportedMediaType(
            f"send this request's message as application/json, not {media or 'no Content-Type'}",
            details={"content_type": media},
        )
    raw = await ctx.body()
    try:
        doc = json.loads(raw or b"{}")
    except ValueError:
        raise invalid("The request body is not valid JSON.") from None
    if not isinstance(doc, dict):
        raise invalid("The request body must be a JSON object.")
    return doc


def _local_name(doc: dict[str, Any]) -> str:
    name = doc.get("path")
    if not isinstance(name, str) or not name:
        raise invalid("Missing value for required parameter 'path'.")
    # the client sends its local file's path (a Windows one too): the file's name is what lands here,
    # and that name keeps the one artifact path rule (no "..", ".", drive or escape code: refused)
    return check_artifact_path(posixpath.basename(name.replace("\\", "/")))


async def mpu_create(ctx: Ctx) -> Response:
    target = await resolve_target(ctx, ctx.path("artifact_path"))
    doc = await _message(ctx)
    path = target.path(_local_name(doc))
    parts = doc.get("num_parts", 1)
    if isinstance(parts, str) and parts.isdigit():
        parts = int(parts)
    if isinstance(parts, bool) or not isinstance(parts, int) or not 1 <= parts <= _MAX_PARTS:
        raise invalid(f"Invalid value {parts!r} for parameter 'num_parts': use a whole number from 1 to {_MAX_PARTS}.")
    upload_id = secrets.token_urlsafe(24)

    def create() -> None:
        with db_of(ctx).write() as conn:
            conn.execute(
                "DELETE FROM mlflow_upload_parts WHERE upload_id IN "
                "(SELECT upload_id FROM mlflow_uploads WHERE created < ?)",
                (time.time() - _UPLOAD_TTL,),
            )
            conn.execute("DELETE FROM mlflow_uploads WHERE created < ?", (time.time() - _UPLOAD_TTL,))
            conn.execute(
                "INSERT INTO mlflow_uploads(upload_id, run_id, path, parts, created) VALUES(?, ?, ?, ?, ?)",
                (upload_id, target.run.id, path, parts, time.time()),
            )

    await ctx.call(create)
    base = str(ctx.request.base_url).rstrip("/")
    credentials = [
        {"url": f"{base}/api/2.0/mlflow-artifacts/mpu/parts/{upload_id}/{n}", "part_number": n, "headers": {}}
        for n in range(1, parts + 1)
    ]
    return json_response({"upload_id": upload_id, "credentials": credentials})


def _upload(db: Any, upload_id: str) -> tuple[str, str, int] | None:
    with db.read() as conn:
        row = conn.execute(
            "SELECT run_id, path, parts FROM mlflow_uploads WHERE upload_id=? AND created >= ?",
            (upload_id, time.time() - _UPLOAD_TTL),
        ).fetchone()
    return None if row is None else (str(row[0]), str(row[1]), int(row[2]))


async def mpu_part(ctx: Ctx) -> Response:
    upload_id, number = ctx.path("upload_id"), ctx.path("part_number")
    found = await ctx.call(_upload, db_of(ctx), upload_id)
    if found is None:
        raise not_found("No multipart upload with this id is open (it was completed, aborted, or is over a day old).")
    if not number.isdigit() or not 1 <= int(number) <= found[2]:
        raise invalid(f"Part number {number[:20]!r} is not one of this upload's parts (1 to {found[2]}).")
    sha, size = await ctx.state.blobs.receive(ctx.request, limit=ctx.state.config.max_upload)
    ctx.state.metrics.add_ingest(upload_bytes=size)

    def keep() -> None:
        with db_of(ctx).write() as conn:
            conn.execute(
                "DELETE FROM mlflow_upload_parts WHERE upload_id=? AND part_number=?", (upload_id, int(number))
            )
            conn.execute(
                "INSERT INTO mlflow_upload_parts(upload_id, part_number, digest, size) VALUES(?, ?, ?, ?)",
                (upload_id, int(number), sha, size),
            )

    await ctx.call(keep)
    return Response(status_code=200, headers={"ETag": f'"{sha}"'})


def _parts(db: Any, upload_id: str) -> list[tuple[int, str, int]]:
    with db.read() as conn:
        rows = conn.execute(
            "SELECT part_number, digest, size FROM mlflow_upload_parts WHERE upload_id=? ORDER BY part_number",
            (upload_id,),
        ).fetchall()
    return [(int(r[0]), str(r[1]), int(r[2])) for r in rows]


def _forget(db: Any, upload_id: str) -> None:
    with db.write() as conn:
        conn.execute("DELETE FROM mlflow_upload_parts WHERE upload_id=?", (upload_id,))
        conn.execute("DELETE FROM mlflow_uploads WHERE upload_id=?", (upload_id,))


async def _open_upload(ctx: Ctx) -> tuple[Target, dict[str, Any], str, tuple[str, str, int]]:
    target = await resolve_target(ctx, ctx.path("artifact_path"))
    doc = await _message(ctx)
    upload_id = doc.get("upload_id")
    if not isinstance(upload_id, str) or not upload_id:
        raise invalid("Missing value for required parameter 'upload_id'.")
    found = await ctx.call(_upload, db_of(ctx), upload_id)
    if found is None or found[0] != target.run.id or found[1] != target.path(_local_name(doc)):
        raise not_found(f"No open multipart upload {upload_id[:12]}… of {target.path(_local_name(doc))!r}.")
    return target, doc, upload_id, found


async def mpu_complete(ctx: Ctx) -> Response:
    target, doc, upload_id, (_, path, count) = await _open_upload(ctx)
    db = db_of(ctx)
    parts = await ctx.call(_parts, db, upload_id)
    have = {n for n, _, _ in parts}
    missing = [n for n in range(1, count + 1) if n not in have]
    if missing:
        raise invalid(f"Parts {missing[:20]} of the upload were never received: send them before completing.")
    sent = doc.get("parts") or []
    digests = {n: d for n, d, _ in parts}
    for p in sent if isinstance(sent, list) else []:
        number, etag = (p.get("part_number"), str(p.get("etag") or "").strip('"')) if isinstance(p, dict) else (0, "")
        if etag and digests.get(int(number or 0)) != etag:
            raise invalid(f"Part {number}'s ETag {etag[:16]!r} is not the part this server received.")
    blobs = ctx.state.blobs
    store = getattr(blobs, "objects", blobs)  # object storage fetches a part into the local cache

    async def chunks() -> AsyncIterator[bytes]:
        for _, digest, _ in parts:
            local = await anyio.to_thread.run_sync(store.path_of, f"cas:sha256/{digest}")
            with open(local, "rb") as f:  # noqa: ASYNC230 - each read is moved off the loop below
                while chunk := await anyio.to_thread.run_sync(f.read, _PART_READ):
                    yield chunk

    total = sum(size for _, _, size in parts)
    sha, size = await blobs.receive(_Body(chunks, total), limit=max(total, ctx.state.config.max_upload))
    await record_artifact(ctx, target.run, path, sha, size, meta={"multipart_parts": len(parts)})
    await ctx.call(_forget, db, upload_id)
    return json_response({})


async def mpu_abort(ctx: Ctx) -> Response:
    _, _, upload_id, _ = await _open_upload(ctx)
    await ctx.call(_forget, db_of(ctx), upload_id)  # the parts' blobs go with the next `flightlog gc`
    return json_response({})


_AP = "/{artifact_path}"
_APR = "/{artifact_path:path}"

OPERATIONS: list[Operation] = [
    _operation("PUT", "/artifacts" + _AP, upload, "writer", "Upload an artifact (MLflow)", route="/artifacts" + _APR),
    _operation(
        "GET", "/artifacts" + _AP, download, "reader", "Download an artifact (MLflow)", route="/artifacts" + _APR
    ),
    _operation("DELETE", "/artifacts" + _AP, delete, "writer", "Delete artifacts (MLflow)", route="/artifacts" + _APR),
    _operation("GET", "/artifacts", list_files, "reader", "List artifacts under ?path= (MLflow)"),
    _operation(
        "POST",
        "/mpu/create" + _AP,
        mpu_create,
        "writer",
        "Start a multipart upload (MLflow)",
        route="/mpu/create" + _APR,
    ),
    _operation(
        "POST",
        "/mpu/complete" + _AP,
        mpu_complete,
        "writer",
        "Complete a multipart upload (MLflow)",
        route="/mpu/complete" + _APR,
    ),
    _operation(
        "POST", "/mpu/abort" + _AP, mpu_abort, "writer", "Abort a multipart upload (MLflow)", route="/mpu/abort" + _APR
    ),
    _operation(
        "PUT", "/mpu/parts/{upload_id}/{part_number}", mpu_part, None, "Send one part of a multipart upload (MLflow)"
    ),
]
