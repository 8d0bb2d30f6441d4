"""The JSON shapes the API adds to the models' own, and opaque pagination cursors."""

from __future__ import annotations

import base64
import hashlib
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


def encode_cursor(state: dict[str, Any]) -> str:
    raw = json.dumps(state, separators=(",", ":"), sort_keys=True).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(text: str, fp: str) -> dict[str, Any]:
    """A cursor this server made for the same query; anything else is a clear 400."""
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        state = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise InvalidInput("cursor is not valid: pass next_cursor from the previous page as it was") from None
    if not isinstance(state, dict) or state.get("h") != fp:
        raise InvalidInput("cursor belongs to another query: keep the same parameters while paging, or drop the cursor")
    return state
