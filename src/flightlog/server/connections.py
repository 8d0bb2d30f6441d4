"""Connection limits and read timeouts for the HTTP server (uvicorn's h11 protocol, extended).

uvicorn bounds how long a connection may sit idle *between* requests (keep-alive), but not how
long a client may take to send a request: a client that sends half a request line and a byte
every few seconds (slowloris) holds a connection, and a file descriptor, for ever. A few
thousand such clients exhaust the process's descriptors, every accept() then fails with
"Too many open files", and the server is unreachable. So each connection here:

* has ``header_timeout`` seconds, in all, to send a request's line and headers (counted from
  the connection, or from the end of the previous response plus the keep-alive time);
* may pause at most ``body_timeout`` seconds between chunks of a request's body;
* is one of at most ``max_connections``; a new connection over the limit takes the place of
  the connection that has been waiting longest for a request (a slow client loses its place
  to a fresh one), and is answered 503 only when every connection has a request in progress.

A connection that runs out of time is answered ``408`` and closed.
"""

from __future__ import annotations

import asyncio
import logging
import resource
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = [
    "ACCEPT_BURST",
    "BODY_TIMEOUT",
    "HEADER_TIMEOUT",
    "ConnectionLimits",
    "default_max_connections",
    "limited_protocol",
]

log = logging.getLogger("flightlog.server")

HEADER_TIMEOUT = 10.0  # seconds for a request's line and headers: a real client needs milliseconds
BODY_TIMEOUT = 30.0  # seconds between two chunks of a body: generous for a slow uplink
ACCEPT_BURST = 100  # connections accepted in one go (the listen backlog): asyncio accepts them before any is counted
_RESERVED_FDS = 64  # descriptors kept for what is not a connection: the store, threads, logs, uploads


def default_max_connections() -> int:
    """As many connections as the descriptor limit leaves room for (at most 4,096), so that the
    limit of open connections is reached before the process's limit of open files is: a burst
    of accepted connections is counted only once they have all been accepted."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return 4096
    return max(16, min(4096, soft - max(_RESERVED_FDS, soft // 16) - ACCEPT_BURST))


class ConnectionLimits:
    """The limits every connection of one server shares."""

    def __init__(
        self,
        *,
        max_connections: int | None = None,
        header_timeout: float = HEADER_TIMEOUT,
        body_timeout: float = BODY_TIMEOUT,
    ) -> None:
        self.max_connections = default_max_connections() if max_connections is None else max_connections
        self.header_timeout = header_timeout
        self.body_timeout = body_timeout
        self.evicted = 0  # connections closed to make room, and refused ones
        self.timed_out = 0


def limited_protocol(limits: ConnectionLimits) -> type[H11Protocol]:
    """uvicorn's h11 protocol class bound to ``limits`` (uvicorn makes one protocol per connection)."""

    class Limited(_LimitedH11):
        pass

    Limited.limits = limits
    return Limited


class _LimitedH11(H11Protocol):
    limits: ConnectionLimits

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._read_timer: asyncio.TimerHandle | None = None
        self._waiting_since = 0.0

    # ── the connection's life ───────────────────────────────────────────────
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        crowded = len(self.connections) >= self.limits.max_connections
        super().connection_made(transport)
        self._waiting_since = self.loop.time()
        if crowded and not self._evict_one():
            self.limits.evicted += 1
            self._answer_and_close(b"503 Service Unavailable", b"the server has too many connections; try again")
            return
        self._arm(self.limits.header_timeout)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        state = self.conn.their_state
        if state is h11.SEND_BODY:  # the headers are in: from now on, the body's pauses are timed
            self._arm(self.limits.body_timeout)
        elif state is not h11.IDLE:  # the request is in (or the connection is ending): nothing to wait for
            self._disarm()
        # still IDLE: part of a request line or headers came; the header deadline stands

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self.transport.is_closing():
            return
        self._waiting_since = self.loop.time()  # waiting for the next request: keep-alive, then the headers
        self._arm(self.timeout_keep_alive + self.limits.header_timeout)

    # ── timers ──────────────────────────────────────────────────────────────
    def _arm(self, seconds: float) -> None:
        self._disarm()
        self._read_timer = self.loop.call_later(seconds, self._read_timed_out)

    def _disarm(self) -> None:
        if self._read_timer is not None:
            self._read_timer.cancel()
            self._read_timer = None

    def _read_timed_out(self) -> None:
        self._read_timer = None
        if self.transport.is_closing():
            return
        state = self.conn.their_state
        if state is h11.SEND_BODY and self.flow.read_paused:  # we stopped reading, not the client
            self._arm(self.limits.body_timeout)
            return
        if state is h11.IDLE and self._waiting_for_request():
            self.limits.timed_out += 1
            self._answer_and_close(b"408 Request Timeout", b"the request took too long to arrive")
        elif state is h11.SEND_BODY:
            self.limits.timed_out += 1
            self.transport.close()  # the app sees a disconnect; its response would go nowhere

    # ── making room ─────────────────────────────────────────────────────────
    def _waiting_for_request(self) -> bool:
        return self.conn.their_state is h11.IDLE and (self.cycle is None or self.cycle.response_complete)

    def _evict_one(self) -> bool:
        """Close the connection that has waited longest for a request; False when none waits."""
        waiting = [
            c
            for c in self.connections
            if c is not self
            and isinstance(c, _LimitedH11)
            and c._waiting_for_request()
            and not c.transport.is_closing()
        ]
        if not waiting:
            return False
        oldest = min(waiting, key=lambda c: c._waiting_since)
        self.limits.evicted += 1
        oldest._answer_and_close(b"503 Service Unavailable", b"the server needed this connection for another client")
        return True

    def _answer_and_close(self, status: bytes, text: bytes) -> None:
        """A plain answer straight on the socket (the request never reached the app), then close."""
        self._disarm()
        body = b'{"error": {"code": "connection_closed", "message": "' + text + b'", "details": {}}}'
        self.transport.write(
            b"HTTP/1.1 " + status + b"\r\nContent-Type: application/json\r\nConnection: close\r\n"
            b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body
        )
        self.transport.close()
