"""What the server sends: JSON documents (NaN and infinities as strings) and the one error shape.

``Response`` is the type an operation's handler answers with; a feature's API module imports it
from here, so that only the server names Starlette (the ``server-extra`` import contract).
"""

from __future__ import annotations

import math
import re
from typing import Any

import msgspec
from starlette.responses import Response

from flightlog.errors import FlightlogError

__all__ = ["Response", "json_response", "error_response", "json_safe", "json_bytes"]

_encoder = msgspec.json.Encoder()
_packer = msgspec.msgpack.Encoder()
#: a non-finite float in msgpack: msgspec writes every float as float64 (0xcb), and NaN and
#: the infinities are those with every exponent bit set
_NON_FINITE = re.compile(rb"\xcb[\x7f\xff][\xf0-\xff]")


def json_safe(value: Any) -> Any:
    """JSON has no NaN or infinities: they become "NaN", "Infinity", "-Infinity"."""
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if isinstance(value, (bytes, bytearray, memoryview)):
        return None  # never part of a JSON document (binary columns travel as msgpack)
    return value


def _surely_finite(doc: Any) -> bool:
    """Whether ``doc`` holds no NaN or infinity, without walking it in Python.

    Walking a 1,000-run answer with :func:`json_safe` costs more than building it (40 ms for
    1 MB). msgspec's msgpack encoder, in C, writes every float with its exponent bits intact
    (JSON's would write NaN as ``null``), so one scan of those bytes says whether the walk is
    needed. A match inside another value's bytes (rare: none in the answers for 10,000 seeded
    MLflow runs) is a false alarm that only costs the walk.
    (Bytes never belong in these documents; on this path they would come out as base64 text.)"""
    try:
        packed = _packer.encode(doc)
    except (TypeError, OverflowError, msgspec.EncodeError):
        return False
    return _NON_FINITE.search(packed) is None


def json_bytes(doc: Any) -> bytes:
    if _surely_finite(doc):
        try:
            return _encoder.encode(doc)
        except (TypeError, msgspec.EncodeError):
            pass
    try:
        return _encoder.encode(json_safe(doc))
    except (TypeError, msgspec.EncodeError):
        import json

        return json.dumps(json_safe(doc), default=repr, allow_nan=False).encode()


def json_response(doc: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(json_bytes(doc), status_code=status, headers=headers, media_type="application/json")


def error_response(exc: FlightlogError, headers: dict[str, str] | None = None) -> Response:
    status = exc.http_status if 400 <= exc.http_status <= 599 else 500
    extra = dict(headers or {})
    if status == 401:
        extra.setdefault("WWW-Authenticate", 'Bearer realm="flightlog"')
    return json_response(exc.to_dict(), status=status, headers=extra)
