"""The JSON shapes the API adds to the models' own, and opaque pagination cursors.

A cursor carries the state of a listing (where the next page starts, how many events at that
time earlier pages gave), which the server then trusts to size its read; so every cursor is
signed with an HMAC under a key the store keeps (``shared_secret("cursors")``, the same for
every replica), and one not made by a server of this store is refused with a 400 before any
of its state is used.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
from typing import Any

from flightlog.errors import InvalidInput
from flightlog.models import LogEvent, RunInfo
from flightlog.timefmt import iso

__all__ = ["run_json", "event_json", "encode_cursor", "decode_cursor", "fingerprint"]


def run_json(info: RunInfo, *, detail: bool = True) -> dict[str, Any]:
    """The CLI's JSON of a run, plus what a remote client needs to treat it like a local one."""
    doc = info.to_dict(detail=detail)
    doc["host"] = info.host
    doc["pid"] = info.pid
    doc["updated"] = iso(info.updated)
    return doc


def event_json(event: LogEvent) -> dict[str, Any]:
    doc = event.to_dict()
    doc["level_no"] = event.level  # the exact level, when it has no name of its own
    return doc


def fingerprint(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:16]


_SIGNATURE = 16  # bytes of HMAC-SHA256 kept: 128 bits, more than any client can guess


def _sign(raw: bytes, key: bytes) -> bytes:
    return hmac.new(key, raw, hashlib.sha256).digest()[:_SIGNATURE]


def encode_cursor(state: dict[str, Any], key: bytes) -> str:
    raw = json.dumps(state, separators=(",", ":"), sort_keys=True).encode()
    return base64.urlsafe_b64encode(_sign(raw, key) + raw).decode().rstrip("=")


def decode_cursor(text: str, fp: str, key: bytes) -> dict[str, Any]:
    """A cursor a server of this store made for the same query; anything else is a clear 400."""
    invalid = InvalidInput("cursor is not valid: pass next_cursor from the previous page as it was")
    try:
        signed = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (ValueError, binascii.Error):
        raise invalid from None
    signature, raw = signed[:_SIGNATURE], signed[_SIGNATURE:]
    if not hmac.compare_digest(signature, _sign(raw, key)):
        raise invalid
    try:
        state = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise invalid from None
    if not isinstance(state, dict) or state.get("h") != fp:
        raise InvalidInput("cursor belongs to another query: keep the same parameters while paging, or drop the cursor")
    return state
