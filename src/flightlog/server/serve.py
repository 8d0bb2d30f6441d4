"""Serving the app with uvicorn: binding, the loopback rule, graceful shutdown.

On SIGTERM or Ctrl-C the server stops accepting connections, tells live streams to ask their
clients to reconnect (elsewhere), lets requests in flight finish (up to ``grace`` seconds),
then closes the store.
"""

from __future__ import annotations

import ipaddress
import socket
from typing import Any

import uvicorn

from flightlog.errors import InvalidInput
from flightlog.server.app import FlightlogApp
from flightlog.server.config import LOOPBACK

__all__ = ["bind", "check_host", "Server", "uvicorn_config"]


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
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def address(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def uvicorn_config(app: FlightlogApp, *, grace: float = 30.0, log_level: str = "warning", **extra: Any) -> uvicorn.Config:
    return uvicorn.Config(
        app,
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

    def handle_exit(self, sig: int, frame: Any) -> None:
        self.flightlog.state.draining.set()
        super().handle_exit(sig, frame)
