"""Posting JSON over HTTP with the standard library (no client dependency in the runner)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any

from flightlog.alerts.notifiers.base import DeliveryError

__all__ = ["post_json"]

_RETRYABLE = {408, 425, 429, 500, 502, 503, 504}


def post_json(url: str, body: Any, *, headers: Mapping[str, str], timeout: float) -> int:
    data = json.dumps(body, ensure_ascii=False, allow_nan=False, default=str).encode()
    request = urllib.request.Request(url, data=data, method="POST")
    request.add_header("Content-Type", "application/json")
    request.add_header("User-Agent", "flightlog-alerts")
    for key, value in headers.items():
        request.add_header(key, value)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 - http(s) checked at load
            response.read(65536)
            return int(response.status)
    except urllib.error.HTTPError as exc:
        detail = exc.read(500).decode("utf-8", "replace").strip()
        exc.close()
        retry_after = _retry_after(exc.headers.get("Retry-After") if exc.headers else None)
        message = f"{_where(url)} answered HTTP {exc.code}" + (f": {detail}" if detail else "")
        raise DeliveryError(message, permanent=exc.code not in _RETRYABLE, retry_after=retry_after) from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise DeliveryError(f"cannot reach {_where(url)}: {reason}") from None


def _retry_after(value: str | None) -> float | None:
    try:
        return float(value) if value else None
    except ValueError:
        return None


def _where(url: str) -> str:
    """The URL without its path and query (which may hold a credential)."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname or ''}{':' + str(parts.port) if parts.port else ''}"
