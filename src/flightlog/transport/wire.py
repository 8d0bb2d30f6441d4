"""The ingest wire format: journal records as msgpack, gzip-compressed, in bounded batches.

Records carry ``bytes`` (pre-encoded series, log chunks), which JSON cannot hold, so ingest
speaks MessagePack: ``{"records": [record, ...]}``, the records exactly as the journal keeps
them. Each record is encoded once; batches are cut so that no request body grows past
``max_bytes`` before compression (a single larger record travels alone). The server bounds
both the compressed body and what it inflates to, so a small body cannot expand into gigabytes.
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Sequence
from typing import Any

import msgspec

from flightlog.errors import FlightlogError, InvalidInput

__all__ = [
    "MEDIA_TYPE",
    "MEDIA_TYPES",
    "MAX_BATCH_BYTES",
    "PayloadTooLarge",
    "encode_batches",
    "decode_batch",
    "inflate",
]

MEDIA_TYPE = "application/msgpack"
MEDIA_TYPES = frozenset({"application/msgpack", "application/x-msgpack", "application/vnd.msgpack"})
MAX_BATCH_BYTES = 8 << 20

_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder()


class PayloadTooLarge(FlightlogError):
    """A request body (or what it inflates to) is over the server's limit."""

    code = "payload_too_large"
    http_status = 413


def encode_batches(records: Sequence[dict[str, Any]], max_bytes: int = MAX_BATCH_BYTES) -> list[tuple[int, bytes]]:
    """``records`` → [(how many records, gzip body)], in order, each body at most ``max_bytes`` raw."""
    batches: list[tuple[int, bytes]] = []
    group: list[msgspec.Raw] = []
    size = 0
    for record in records:
        raw = _encoder.encode(record)
        if group and size + len(raw) > max_bytes:
            batches.append((len(group), _pack(group)))
            group, size = [], 0
        group.append(msgspec.Raw(raw))
        size += len(raw)
    if group:
        batches.append((len(group), _pack(group)))
    return batches


def _pack(group: list[msgspec.Raw]) -> bytes:
    return gzip.compress(_encoder.encode({"records": group}), compresslevel=1, mtime=0)


_INFLATE_STEP = 1 << 20  # output bytes per step: a bomb is refused after at most limit + 1 MiB


def inflate(body: bytes, encoding: str, limit: int) -> bytes | bytearray:
    """Undo ``Content-Encoding`` (gzip, deflate or none), refusing output over ``limit`` bytes.

    Inflated in bounded steps, so memory grows with what is kept (never past ``limit`` plus
    one step), whatever the compressed body claims to hold.
    """
    encoding = encoding.strip().lower()
    if encoding in ("", "identity"):
        return body
    if encoding not in ("gzip", "x-gzip", "deflate"):
        raise InvalidInput(
            f"Content-Encoding {encoding!r} is not supported: send gzip, deflate or no encoding",
            details={"content_encoding": encoding},
        )
    wbits = 16 + zlib.MAX_WBITS if "gzip" in encoding else zlib.MAX_WBITS
    inflater = zlib.decompressobj(wbits)
    out = bytearray()
    pending = body
    try:
        while pending and not inflater.eof:
            out += inflater.decompress(pending, _INFLATE_STEP)
            pending = inflater.unconsumed_tail
            if len(out) > limit:
                raise PayloadTooLarge(
                    f"the body inflates to more than {limit} bytes, the most this server takes: send smaller batches",
                    details={"limit": limit},
                )
    except zlib.error as exc:
        raise InvalidInput(f"the body is not valid {encoding} data: {exc}") from None
    if not inflater.eof:
        raise InvalidInput(f"the {encoding} body is truncated")
    return out  # no copy: the decoder reads a bytearray as well


def decode_batch(data: bytes | bytearray) -> list[Any]:
    """A msgpack ingest body → its list of records (items are checked one by one later)."""
    try:
        doc = _decoder.decode(data)
    except msgspec.DecodeError as exc:
        raise InvalidInput(f"the body is not valid MessagePack: {exc}") from None
    except RecursionError:
        raise InvalidInput("the body is nested too deeply") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("records"), list):
        raise InvalidInput('the body must be a MessagePack map {"records": [record, ...]}')
    records: list[Any] = doc["records"]
    return records
