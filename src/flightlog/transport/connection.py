"""One HTTP connection pool to a flightlog server, speaking its error shape.

Every failure comes back as a :class:`~flightlog.errors.FlightlogError`: the server's
``{"error": {"code", "message", "details"}}`` is rebuilt into the same exception class the
embedded store raises, and a server that cannot be reached is :class:`StoreUnavailable`.
Idempotent requests are retried a few times on connection errors and 502/503/504, so a
reader does not fail because a server is restarting behind a load balancer.
"""

from __future__ import annotations

import contextlib
import time
import weakref
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote, urlparse

import httpcore  # noqa: F401 - httpx imports it when a first Client is made; here it loads with this module (see flightlog.forksafe)
import httpx

from flightlog.errors import FlightlogError, InvalidInput, StoreUnavailable, error_from_dict

__all__ = ["Connection", "segment"]

_RETRY_STATUS = frozenset({502, 503, 504})
_IDEMPOTENT = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS"})


def segment(value: str) -> str:
    """One path segment, percent-encoded (``/`` included)."""
    return quote(value, safe="")


def _version() -> str:
    from flightlog._version import __version__

    return __version__


class Connection:
    def __init__(
        self, url: str, token: str | None, *, timeout: float = 60.0, retries: int = 2, close_at_exit: bool = True
    ) -> None:
        parsed = urlparse(url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise InvalidInput(
                f"FLIGHTLOG_URL={url!r} is not a server address: use http(s)://HOST[:PORT], e.g. http://127.0.0.1:8765"
            )
        self.url = url.rstrip("/")
        self.retries = retries
        headers = {"User-Agent": f"flightlog/{_version()}", "Accept": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        self.client = httpx.Client(
            base_url=self.url + "/api/v1",
            headers=headers,
            timeout=httpx.Timeout(timeout, connect=5.0),
            follow_redirects=False,
        )
        # a Client that is never closed must not leave sockets behind for the GC to warn about.
        # ``close_at_exit=False`` (the SDK's shipping connection): not at interpreter exit either,
        # where finalizers run before the SDK's at-exit hook, which still ships a run's last
        # records through it and then closes it
        self._finalizer = weakref.finalize(self, self.client.close)
        self._finalizer.atexit = close_at_exit

    def close(self) -> None:
        self._finalizer()

    # ── requests ────────────────────────────────────────────────────────────
    def request(
        self,
        method: str,
        path: str,
        *,
        retries: int | None = None,
        ok: tuple[int, ...] = (),
        **kwargs: Any,
    ) -> httpx.Response:
        """Send one request; statuses ≥ 400 not listed in ``ok`` raise the server's error."""
        attempts = 1 + (self.retries if retries is None else retries) if method in _IDEMPOTENT else 1
        delay = 0.2
        for attempt in range(attempts):
            last = attempt == attempts - 1
            try:
                response = self.client.request(method, path, **kwargs)
            except httpx.TransportError as exc:
                if last:
                    raise self.unreachable(exc) from None
            else:
                if response.status_code in _RETRY_STATUS and not last:
                    response.close()
                else:
                    if response.status_code >= 400 and response.status_code not in ok:
                        raise self.error(response)
                    return response
            time.sleep(delay)
            delay *= 3
        raise AssertionError("unreachable")  # pragma: no cover

    def json(self, method: str, path: str, **kwargs: Any) -> Any:
        response = self.request(method, path, **kwargs)
        try:
            return response.json()
        except ValueError:
            raise StoreUnavailable(
                f"the server at {self.url} answered {method} {path} with something that is not JSON "
                "(is FLIGHTLOG_URL the address of a flightlog server?)"
            ) from None

    @contextlib.contextmanager
    def stream(self, method: str, path: str, **kwargs: Any) -> Iterator[httpx.Response]:
        try:
            with self.client.stream(method, path, **kwargs) as response:
                if response.status_code >= 400:
                    response.read()
                    raise self.error(response)
                yield response
        except httpx.TransportError as exc:
            raise self.unreachable(exc) from None

    # ── errors ──────────────────────────────────────────────────────────────
    def unreachable(self, exc: Exception) -> StoreUnavailable:
        return StoreUnavailable(
            f"cannot reach the flightlog server at {self.url} ({type(exc).__name__}: {exc or 'no details'}); "
            "check FLIGHTLOG_URL and that `flightlog server` is running",
            details={"url": self.url, "unreachable": True},  # no answer at all (a 5xx is an answer)
        )

    def error(self, response: httpx.Response) -> FlightlogError:
        status = response.status_code
        try:
            body = response.json()
        except ValueError:
            body = None
        if isinstance(body, dict) and isinstance(body.get("error"), dict):
            return error_from_dict(body, status)
        text = response.text[:200].strip()
        message = f"the server at {self.url} answered {status} {response.reason_phrase}" + (f": {text}" if text else "")
        if status >= 500:
            return StoreUnavailable(message, details={"status": status})
        exc = FlightlogError(message, details={"status": status})
        exc.http_status = status
        exc.code = "http_error"
        return exc
