"""A small gzip body that inflates to far more than the body limit is refused with a 413 (the
JSON error shape) after inflating at most about the limit: memory never follows what the body
claims to hold."""

from __future__ import annotations

import gzip
import tracemalloc
import zlib
from typing import Any

import msgspec

from tests.server.conftest import error_of
from tests.server.journal import Writer


def _bomb(size: int) -> bytes:
    """A gzip member of ``size`` zero bytes, compressed to about size / 1000."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = bytes(1 << 20)
    parts = [packer.compress(block) for _ in range(size >> 20)]
    return b"".join(parts) + packer.flush()


def test_a_gzip_bomb_is_refused_without_inflating_it(make_app: Any) -> None:
    app = make_app(auth=False)  # default limits: 32 MiB bodies
    body = _bomb(200 << 20)  # 200 MiB of zeros in ~200 kB
    assert len(body) < 1 << 20
    tracemalloc.start()
    try:
        response = app.request(
            "POST",
            "/api/v1/ingest",
            content=body,
            headers={"Content-Type": "application/msgpack", "Content-Encoding": "gzip"},
        )
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert response.status_code == 413, response.text[:300]
    err = error_of(response)
    assert err["code"] == "payload_too_large" and err["details"]["limit"] == 32 << 20
    assert peak < 48 << 20, f"inflating the refused body held {peak >> 20} MiB"


def test_a_batch_within_the_limit_still_goes_in(make_app: Any) -> None:
    app = make_app(auth=False)
    w = Writer("0123456789abcdef0123456789abcdef")
    body = gzip.compress(msgspec.msgpack.encode({"records": [w.run("vision", name="ok")]}))
    response = app.request(
        "POST",
        "/api/v1/ingest",
        content=body,
        headers={"Content-Type": "application/msgpack", "Content-Encoding": "gzip"},
    )
    assert response.status_code == 200, response.text
    assert response.json()["applied"] == 1
