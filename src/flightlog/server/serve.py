"""Serving the app with uvicorn: binding, the loopback rule, connection limits, graceful shutdown.

On SIGTERM or Ctrl-C the server stops accepting connections, tells live streams to ask their
clients to reconnect (elsewhere), lets requests in flight finish (up to ``grace`` seconds),
then closes the store. Connections are limited and timed (server/connections.py); should
accept() fail all the same (out of file descriptors), the failure is logged at most once per
:data:`ACCEPT_LOG_EVERY` seconds with a count, not once per try.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import socket
import time
from typing import Any

import uvicorn

from flightlog.errors import InvalidInput
from flightlog.server.app import FlightlogApp
from flightlog.server.config import LOOPBACK
from flightlog.server.connections import ACCEPT_BURST, ConnectionLimits, limited_protocol

__all__ = ["AcceptErrors", "bind", "check_host", "Server", "uvicorn_config"]

log = logging.getLogger("flightlog.server")
ACCEPT_LOG_EVERY = 10.0  # seconds between two log lines about failing accept() calls


def check_host(host: str, *, auth: bool, insecure: bool) -> None:
    """Without --auth anyone who can connect is an admin: only loopback, unless --insecure."""
    if auth or insecure or _is_loopback(host):
        return
    raise InvalidInput(
        f"refusing to listen on {host} without --auth: anyone who can reach it could read and delete every run. "
        "Make tokens (`flightlog token create --role admin`) and pass --auth, or pass --insecure on a network you trust"
    )


def _is_loopback(host: str) -> bool:
    if host in LOOPBACK:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP spelled out: asyncio only turns Nagle off (TCP_NODELAY) for sockets that say
    # so, and without it every keep-alive answer waits ~40 ms for a delayed ACK
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise InvalidInput(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.listen(ACCEPT_BURST)
    sock.set_inheritable(True)
    return sock


def address(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def uvicorn_config(
    app: FlightlogApp,
    *,
    grace: float = 30.0,
    log_level: str = "warning",
    limits: ConnectionLimits | None = None,
    **extra: Any,
) -> uvicorn.Config:
    return uvicorn.Config(
        app,
        http=limited_protocol(limits or ConnectionLimits()),
        h11_max_incomplete_event_size=64 << 10,  # a request line and headers of at most 64 KiB
        backlog=ACCEPT_BURST,  # also how many connections asyncio accepts at once, before the limit sees them
        lifespan="on",
        ws="none",
        log_level=log_level,
        access_log=False,
        timeout_graceful_shutdown=int(grace),
        timeout_keep_alive=30,
        server_header=False,
        proxy_headers=False,  # the app's ForwardedHeaders decides whom to believe (hosts.py)
        **extra,
    )


class Server(uvicorn.Server):
    """uvicorn's server, telling live streams to wind down as soon as shutdown begins."""

    def __init__(self, config: uvicorn.Config, app: FlightlogApp) -> None:
        super().__init__(config)
        self.flightlog = app
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None

    async def serve(self, sockets: list[socket.socket] | None = None) -> None:
        self._loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        self._loop.set_exception_handler(AcceptErrors())
        await super().serve(sockets)

    def handle_exit(self, sig: int, frame: Any) -> None:
        self.flightlog.state.draining.set()
        super().handle_exit(sig, frame)
        self._wake_up()

    def stop(self) -> None:
        """Begin the shutdown SIGTERM begins, from any thread (a server run in a thread)."""
        self.flightlog.state.draining.set()
        self.should_exit = True
        self._wake_up()

    def _wake_up(self) -> None:
        loop, wake = self._loop, self._wake
        if loop is not None and wake is not None and not loop.is_closed():
            loop.call_soon_threadsafe(wake.set)

    async def main_loop(self) -> None:
        """uvicorn's tick loop (the date header, ``limit_max_requests``), woken at once when
        shutdown is asked for instead of at its next tenth of a second: every stop of a server
        (a test's, a deploy's) was 0.1 s longer than it had to be."""
        counter = 0
        should_exit = await self.on_tick(counter)
        while not should_exit:
            counter = (counter + 1) % 864000
            if self._wake is None:
                await asyncio.sleep(0.1)
            else:
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), 0.1)
            should_exit = await self.on_tick(counter)


class AcceptErrors:
    """The event loop's exception handler: failed accept() calls, which asyncio reports once per
    try (thousands a second once descriptors run out), become one line per ``ACCEPT_LOG_EVERY``
    seconds; anything else goes to asyncio's default handler."""

    def __init__(self) -> None:
        self.failed = 0
        self.last_logged = float("-inf")

    def __call__(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        if context.get("message") != "socket.accept() out of system resource":
            loop.default_exception_handler(context)
            return
        self.failed += 1
        now = time.monotonic()
        if now - self.last_logged < ACCEPT_LOG_EVERY:
            return
        exc = context.get("exception")
        reason = getattr(exc, "strerror", None) or str(exc)
        log.error(
            "cannot accept connections: %s (%d failed accept calls since the last report); raise the limit "
            "of open files (ulimit -n, systemd's LimitNOFILE=) or put a proxy with a connection limit in front",
            reason,
            self.failed,
        )
        self.failed, self.last_logged = 0, now
