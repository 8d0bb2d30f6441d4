"""Posting JSON over HTTP with the standard library (no client dependency in the runner).

Redirects are never followed: a notifier's URL is where its payload (and its credential
headers) may go, and urllib would turn the POST into a GET to whatever address a 3xx names,
a hook on an internal network included. A 3xx is a delivery failure that names its status.

The target's answer body is never kept: a failure's message (which lands in the alert history,
readable by every reader of the run) holds the status and its standard reason only, since an
error page may echo the payload, an internal hostname or a token.
"""

from __future__ import annotations

import http
import json
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any

from flightlog.alerts.notifiers.base import DeliveryError

__all__ = ["post_bytes", "post_json"]

_RETRYABLE = {408, 425, 429, 500, 502, 503, 504}


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """Every 3xx stays an answer (urllib then raises it as an HTTPError), never a new request."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_opener = urllib.request.build_opener(_NoRedirects())


def post_json(url: str, body: Any, *, headers: Mapping[str, str], timeout: float) -> int:
    data = json.dumps(body, ensure_ascii=False, allow_nan=False, default=str).encode()
    return post_bytes(url, data, headers=headers, timeout=timeout)


def post_bytes(url: str, data: bytes, *, headers: Mapping[str, str], timeout: float) -> int:
    """POST a JSON body already encoded (a signed one: the signature covers these exact bytes);
    ``headers`` may replace the User-Agent. Raises `DeliveryError`; returns the status."""
    request = urllib.request.Request(url, data=data, method="POST")
    request.add_header("Content-Type", "application/json")
    request.add_header("User-Agent", "flightlog-alerts")
    for key, value in headers.items():
        request.add_header(key, value)
    try:
        with _opener.open(request, timeout=timeout) as response:  # noqa: S310 - http(s) checked at load
            response.read(65536)
            return int(response.status)
    except urllib.error.HTTPError as exc:
        exc.close()  # its body is the target's to say, not ours to record
        retry_after = _retry_after(exc.headers.get("Retry-After") if exc.headers else None)
        message = f"{_where(url)} answered HTTP {exc.code} {_reason(exc.code)}".rstrip()
        if 300 <= exc.code < 400:
            message += ": redirects are not followed (point the notifier's url at the final address)"
        raise DeliveryError(message, permanent=exc.code not in _RETRYABLE, retry_after=retry_after) from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise DeliveryError(f"cannot reach {_where(url)}: {reason}") from None


def _reason(code: int) -> str:
    """The standard phrase of a status (never the one the target sent)."""
    try:
        return http.HTTPStatus(code).phrase
    except ValueError:
        return ""


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
