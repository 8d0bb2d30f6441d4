"""``ServingMiddleware``: pure ASGI (no Starlette import), for any ASGI app — Starlette, FastAPI.

Per HTTP request it reads the clock twice, takes a valid new ``X-Request-ID`` (else makes an
unguessable one), adds the id to the response headers, and appends one tuple to the replica's
buffer; a sampled request also keeps the first ``MAX_SAMPLED_BODY`` bytes of its body and of
the response's, and their sizes (parsed as JSON later on the background thread; a body over
the bound is recorded by its size only). Nothing is ever awaited for the evidence. Health and metrics probes (``DEFAULT_SKIP_PATHS``) pass through
unrecorded: a readiness probe answering 503 while the model loads is not a model error, and a
probe every few seconds would pull the latency percentiles toward zero. Not
``BaseHTTPMiddleware``: that one runs the app in a task and costs tens of microseconds per
request. Lifespan shutdown writes the open minute before the server exits.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from time import perf_counter
from typing import Any

from flightlog.serving.recorder import Truncated
from flightlog.serving.replica import Replica, current

__all__ = ["DEFAULT_SKIP_PATHS", "ServingMiddleware"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_HEADER = b"x-request-id"

#: The paths Kubernetes probes and Prometheus scrapes usually take; ``skip_paths=()`` records them too.
DEFAULT_SKIP_PATHS: tuple[str, ...] = ("/health", "/healthz", "/livez", "/readyz", "/metrics")


#: the most of a sampled request's (and its response's) body kept to parse on the background
#: thread; past it, only its size (issue 31, item 7: a 300 MB streamed response was buffered whole)
MAX_SAMPLED_BODY = 64 * 1024


class _Capture(list[bytes]):
    """A sampled body's chunks up to :data:`MAX_SAMPLED_BODY`, and the size of the whole."""

    __slots__ = ("size",)

    def __init__(self) -> None:
        super().__init__()
        self.size = 0

    def take(self, chunk: bytes) -> None:
        kept = self.size
        self.size += len(chunk)
        if kept < MAX_SAMPLED_BODY:
            self.append(chunk[: MAX_SAMPLED_BODY - kept])


def _parse_http(inputs: Any, output: Any) -> tuple[Any, Any, str | None]:
    return _json(inputs), _json(output), None


def _json(chunks: Any) -> Any:
    if chunks is None:
        return None
    if isinstance(chunks, _Capture) and chunks.size > MAX_SAMPLED_BODY:
        return Truncated(chunks.size)  # never parsed: a prefix is not the document
    body = b"".join(chunks)
    if not body:
        return None
    try:
        return json.loads(body)
    except ValueError:
        return {"body": body.decode("utf-8", "replace")}  # hashed unless "body" is allow-listed


class ServingMiddleware:
    """``app = ServingMiddleware(app)`` (or ``app.add_middleware(ServingMiddleware)``); the
    replica is ``attach()``'s, or the one given.

    ``skip_paths``: request paths served without evidence — exact paths, or prefixes written with
    a trailing ``*`` (``"/static/*"``); the probes of ``DEFAULT_SKIP_PATHS`` by default."""

    def __init__(
        self, app: ASGIApp, replica: Replica | None = None, skip_paths: Iterable[str] = DEFAULT_SKIP_PATHS
    ) -> None:
        self.app = app
        self._replica = replica
        if isinstance(skip_paths, str):
            raise TypeError(f"skip_paths takes a list of paths, not one string: write skip_paths=[{skip_paths!r}]")
        paths = list(skip_paths)
        for path in paths:
            if not isinstance(path, str) or not path.startswith("/"):
                raise ValueError(
                    f"skip_paths: {path!r} is not a request path; write it from its first '/' ('/healthz')"
                )
        self._skip = frozenset(p for p in paths if not p.endswith("*"))
        self._skip_prefixes = tuple(p[:-1] for p in paths if p.endswith("*"))

    @property
    def replica(self) -> Replica | None:
        return self._replica or current()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        replica = self._replica or current()
        if kind != "http" or replica is None:
            if kind == "lifespan" and replica is not None:
                await self.app(scope, self._lifespan(receive, replica), send)
                return
            await self.app(scope, receive, send)
            return
        path = scope.get("path")
        if path in self._skip or (self._skip_prefixes and str(path).startswith(self._skip_prefixes)):
            await self.app(scope, receive, send)
            return
        start = perf_counter()
        rid = None
        for name, value in scope["headers"]:
            if name == _HEADER:
                rid = replica.request_id(value.decode("latin-1"))  # checked: bounded, plain, never reused
                break
        if rid is None:
            rid = replica.new_request_id()
        raw = rid.encode("latin-1")
        status = 500
        sampled = replica.sampled()
        body_in: _Capture | None = None
        body_out: _Capture | None = None
        if sampled:
            body_in, body_out = _Capture(), _Capture()
            inner_receive = receive

            async def receive() -> Message:
                message = await inner_receive()
                if message["type"] == "http.request":
                    body_in.take(message.get("body", b""))
                return message

        async def send_wrapper(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message["headers"] = [*message.get("headers", ()), (_HEADER, raw)]
            elif body_out is not None and message["type"] == "http.response.body":
                body_out.take(message.get("body", b""))
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        except BaseException as exc:  # the server turns it into a 500; the evidence keeps its type
            end = perf_counter()
            replica.record(end, end - start, status, rid, body_out, body_in, _parse_http if sampled else None, exc)
            raise
        end = perf_counter()
        replica.record(end, end - start, status, rid, body_out, body_in, _parse_http if sampled else None)

    @staticmethod
    def _lifespan(receive: Receive, replica: Replica) -> Receive:
        async def wrapped() -> Message:
            message = await receive()
            if message["type"] == "lifespan.shutdown":
                replica.flush()
            return message

        return wrapped
