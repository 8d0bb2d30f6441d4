"""``POST /api/v1/ingest``: batches of journal records from writers (the SDK, the runner, sync).

Idempotent on (run, writer, sequence): a retried or replayed batch changes nothing. A token
limited to a project may only write runs of that project: records of a run it cannot write
are refused with 403 (the whole batch, so the writer keeps them and says why).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from starlette.responses import Response

from flightlog.config import home_from_env
from flightlog.errors import Forbidden
from flightlog.redaction import REDACTED_HEADER, USER_STRING_KINDS, count_pass, redact_user_strings, redactor
from flightlog.schema import Bad, check_record
from flightlog.schema.values import decode_log_chunk, log_chunk_payload
from flightlog.server.context import Ctx, UnsupportedMediaType
from flightlog.server.operations import Operation, ok
from flightlog.server.responses import json_response
from flightlog.transport.artifacts import blob_digest
from flightlog.transport.wire import MEDIA_TYPE, MEDIA_TYPES, PayloadTooLarge, decode_batch, inflate

__all__ = ["OPERATIONS"]

MAX_RECORDS = 50_000  # per request: the records' checks take ~30 µs each, so a batch costs a second or two at most
STORE_CHUNK = (
    5_000  # records per store transaction: an embedded store's readers wait for each one, never for a whole batch
)
#: A request this small, from a writer that redacts its own records (the SDK's shipper), is
#: prepared on the event loop: its work (tens of microseconds a record, a few records) costs
#: less than the hop to a worker thread and back, which under a few hundred requests a second was
#: the largest share of a server's CPU per batch (bench/load.py, issue #32). Anything larger, or
#: whose log chunks the server must redact itself, still goes to a worker thread.
INLINE_BODY = 16 << 10  # bytes as sent (compressed)
INLINE_INFLATED = 256 << 10  # bytes once inflated
INLINE_RECORDS = 64


@dataclass
class _Batch:
    """A request's records after the per-record work: checked, redacted, and counted."""

    received: int
    good: list[dict[str, Any]]
    skipped: list[str]
    declared: dict[str, str]  # run → the project its run record names
    points: int
    log_events: int

    @property
    def run_ids(self) -> list[str]:
        return sorted({r["r"] for r in self.good})


async def ingest(ctx: Ctx) -> Response:
    """Every step that touches each record (inflating, decoding, checking, redacting, counting)
    runs in a worker thread: a batch of many small records must never hold the event loop,
    which answers every other request (``/healthz`` included) meanwhile."""
    media = ctx.request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media not in MEDIA_TYPES:
        raise UnsupportedMediaType(
            f"send journal records as {MEDIA_TYPE} (optionally gzip-compressed), not {media or 'no Content-Type'}",
            details={"content_type": media},
        )
    body = await ctx.body()
    config = ctx.state.config
    limit = config.max_body if config.max_inflated is None else config.max_inflated
    # a writer that redacts says so (flightlog's HTTP store always does); see flightlog.redaction
    writer_redacts = bool(ctx.request.headers.get(REDACTED_HEADER, "").strip())
    encoding = ctx.request.headers.get("content-encoding", "")
    batch = _prepare_inline(body, encoding, limit, writer_redacts)
    if batch is None:
        batch = await ctx.call(_prepare, body, encoding, limit, writer_redacts)
    good, skipped = batch.good, batch.skipped
    if ctx.principal.project is not None:
        await _check_scope(ctx, batch)
        good = await _own_content_only(ctx, good, skipped)
    applied = duplicates = 0
    queue = ctx.state.ingester()  # applied with other requests' batches, in one transaction (ingestqueue.py)
    for start in range(0, len(good), STORE_CHUNK):  # in order; idempotent, so a retry after a failed chunk is safe
        result = await queue.ingest(good[start : start + STORE_CHUNK])
        applied += result.applied
        duplicates += result.duplicates
        skipped.extend(result.skipped)
    ctx.state.metrics.add_ingest(
        batches=1,
        records=batch.received,
        applied=applied,
        duplicates=duplicates,
        skipped=len(skipped),
        points=batch.points,
        log_events=batch.log_events,
        bytes=len(body),
    )
    return json_response({"applied": applied, "duplicates": duplicates, "skipped": skipped})


def _prepare_inline(body: bytes, encoding: str, limit: int, writer_redacts: bool) -> _Batch | None:
    """:func:`_prepare` on the event loop for a small request (see ``INLINE_BODY``); None when
    the request is not small, for a worker thread to prepare."""
    if not writer_redacts or len(body) > INLINE_BODY:
        return None
    try:
        data = inflate(body, encoding, min(limit, INLINE_INFLATED))
    except PayloadTooLarge:
        if limit <= INLINE_INFLATED:
            raise  # over the server's own limit: the same answer a worker thread would give
        return None
    records = decode_batch(data)
    if len(records) > INLINE_RECORDS or any(
        not isinstance(rec, dict) or not isinstance(rec.get("k"), str) or rec["k"] in USER_STRING_KINDS
        for rec in records
    ):
        return None  # the user strings' redaction may build the redactor, reading files: not on the loop
    return _prepared(records, writer_redacts)


def _prepare(body: bytes, encoding: str, limit: int, writer_redacts: bool = False) -> _Batch:
    """Inflate, decode, bound, check and redact a request's records (in a worker thread)."""
    return _prepared(decode_batch(inflate(body, encoding, limit)), writer_redacts)


def _prepared(records: list[Any], writer_redacts: bool) -> _Batch:
    if len(records) > MAX_RECORDS:
        raise PayloadTooLarge(
            f"a batch holds at most {MAX_RECORDS} records, not {len(records)}: send smaller batches",
            details={"limit": MAX_RECORDS, "records": len(records)},
        )
    good, skipped = _checked(records, writer_redacts)
    declared: dict[str, str] = {}
    for rec in good:
        if rec["k"] == "run" and "project" in rec:
            declared.setdefault(rec["r"], rec["project"])
    return _Batch(
        len(records),
        good,
        skipped,
        declared,
        points=sum(_points(r) for r in good),
        log_events=sum(int(r.get("n", 0)) for r in good if r["k"] == "logs"),
    )


def _checked(records: list[Any], writer_redacts: bool) -> tuple[list[dict[str, Any]], list[str]]:
    """The records that pass their checks, redacted: user strings always (few, and the server's
    own policy applies to every writer), log chunks when the writer does not redact them."""
    good, skipped = [], []
    home: Path | None = None  # found when a record needs it (a file system walk without FLIGHTLOG_HOME)
    for i, rec in enumerate(records):
        try:
            check_record(rec)
        except Bad as exc:
            where = f"record {i}"
            if isinstance(rec, dict):
                where += f" ({rec.get('k')!r}, run {str(rec.get('r'))[:64]!r}, seq {str(rec.get('s'))[:20]})"
            skipped.append(f"{where}: {exc}")
            continue
        if home is None and (rec["k"] in USER_STRING_KINDS or (rec["k"] == "logs" and not writer_redacts)):
            home = home_from_env()
        if rec["k"] == "logs" and not writer_redacts:
            try:
                _redact_log_chunk(rec, home)
            except (TypeError, ValueError, KeyError, AttributeError) as exc:  # never stored unredacted
                skipped.append(
                    f"record {i} ('logs', run {str(rec.get('r'))[:64]!r}): its events cannot be redacted: {exc}"
                )
                continue
        good.append(rec if home is None else redact_user_strings(rec, home))  # whatever the writer: no secrets
    return good, skipped


def _redact_log_chunk(rec: dict[str, Any], home: Any) -> None:
    """A log chunk from a writer that does not redact (an old client, a script, another
    protocol): each event's message and fields redacted as ``Run.log_event`` redacts them."""
    red = redactor(home)
    batch = decode_log_chunk(rec["data"])
    batch.message = [red.redact(m) if isinstance(m, str) else m for m in batch.message]
    batch.fields = [red.redact_mapping(f) if f else f for f in batch.fields]
    rec.update(log_chunk_payload(batch))
    count_pass("logs", len(batch))


def _points(rec: dict[str, Any]) -> int:
    if rec["k"] != "metrics":
        return 0
    return sum(len(enc[0]) // 8 for enc in rec["series"].values())


async def _check_scope(ctx: Ctx, batch: _Batch) -> None:
    scope = ctx.principal.project
    run_ids = batch.run_ids
    existing = await ctx.call(ctx.store.run_projects, run_ids)
    for run_id in run_ids:
        project = existing.get(run_id, batch.declared.get(run_id))
        if project != scope:
            what = (
                f"belongs to project {project!r}" if project else "does not exist yet and the batch does not create it"
            )
            raise Forbidden(
                f"this token is limited to project {scope!r}; run {run_id} {what}",
                details={"project": scope, "run": run_id},
            )
    for run_id, project in batch.declared.items():
        if project != scope:
            raise Forbidden(f"this token is limited to project {scope!r} and cannot move run {run_id} to {project!r}")


async def _own_content_only(ctx: Ctx, records: list[dict[str, Any]], skipped: list[str]) -> list[dict[str, Any]]:
    """Artifact records of a project-limited token may only point at content its project holds
    (uploaded by it, hash checked): a digest seen in another project's listing is not enough."""
    project = str(ctx.principal.project)
    kept = []
    for rec in records:
        digest = blob_digest(rec.get("uri")) if rec["k"] == "artifact" else None  # the content it serves
        if digest is not None and not await ctx.call(ctx.store.has_digest, digest, project):
            skipped.append(
                f"artifact {str(rec.get('path'))[:200]!r} of run {rec['r'][:64]!r}: project {project!r} has no content "
                f"{digest}: upload it first (PUT /api/v1/blobs/sha256/{digest})"
            )
            continue
        kept.append(rec)
    return kept


OPERATIONS = [
    Operation(
        "POST",
        "/ingest",
        ingest,
        "writer",
        "Ingest a batch of journal records (idempotent)",
        "ingest",
        description='The body is MessagePack `{"records": [...]}` (the journal\'s records as they are, series and '
        "log chunks as bytes), usually with `Content-Encoding: gzip`. Records already applied (same run, "
        "writer and sequence number) are counted as duplicates; malformed records are refused one by one "
        "and listed in `skipped`.",
        body={
            "required": True,
            "content": {
                MEDIA_TYPE: {
                    "schema": {
                        "type": "object",
                        "required": ["records"],
                        "properties": {"records": {"type": "array", "items": {"type": "object"}}},
                    }
                }
            },
        },
        responses={
            "200": ok(
                "What was applied",
                {
                    "type": "object",
                    "required": ["applied", "duplicates", "skipped"],
                    "properties": {
                        "applied": {"type": "integer"},
                        "duplicates": {"type": "integer"},
                        "skipped": {"type": "array", "items": {"type": "string"}},
                    },
                },
            )
        },
    ),
]
