"""Read timeouts of a real server (short ones here, 10 s and 30 s by default): a client that
dribbles its headers a byte at a time is cut at the header deadline however steadily it
dribbles, one that stops sending its body is cut after the body timeout, and a slow body that
keeps coming is read to the end."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from flightlog.server.app import create_app
from flightlog.server.config import ServerConfig
from flightlog.server.connections import ConnectionLimits
from flightlog.server.serve import Server, bind, uvicorn_config


@pytest.fixture
def port(tmp_path: Path) -> Iterator[int]:
    """A real server on a loopback port with a 1 s header deadline and a 1 s body timeout."""
    app = create_app(ServerConfig.for_home(tmp_path / "srv"))
    sock = bind("127.0.0.1", 0)
    server = Server(uvicorn_config(app, grace=2, limits=ConnectionLimits(header_timeout=1.0, body_timeout=1.0)), app)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.01)
    try:
        yield sock.getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(timeout=20)
        sock.close()
        app.close()


def _answer(sock: socket.socket, within: float) -> tuple[bytes, float]:
    """What the server sent until it closed the connection, and when it closed it."""
    sock.settimeout(within)
    got, start = b"", time.monotonic()
    while True:
        try:
            chunk = sock.recv(4096)
        except (ConnectionResetError, TimeoutError):
            break
        if not chunk:
            break
        got += chunk
    return got, time.monotonic() - start


def test_headers_dribbled_a_byte_at_a_time_are_cut_at_the_deadline(port: int) -> None:
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    start = time.monotonic()
    request = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 400
    cut = False
    for byte in request:  # a byte every 20 ms: never idle, never done
        try:
            sock.sendall(bytes([byte]))
        except (BrokenPipeError, ConnectionResetError):
            cut = True
            break
        time.sleep(0.02)
        if time.monotonic() - start > 6:
            break
    answer, _ = _answer(sock, within=5)
    sock.close()
    assert cut or answer, "the server kept reading headers past its deadline"
    assert answer.startswith(b"HTTP/1.1 408 Request Timeout"), answer[:100]
    assert time.monotonic() - start < 5


def test_a_body_that_stops_coming_is_cut_and_a_slow_steady_one_is_read(port: int) -> None:
    head = (
        b"POST /api/v1/ingest HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/msgpack\r\n"
        b"Content-Length: 100\r\n\r\n"
    )
    stalled = socket.create_connection(("127.0.0.1", port), timeout=5)
    stalled.sendall(head + b"x" * 10)  # and then nothing
    answer, closed_after = _answer(stalled, within=10)
    stalled.close()
    assert closed_after < 5, "a stalled body held its connection"
    steady = socket.create_connection(("127.0.0.1", port), timeout=5)
    steady.sendall(head)
    for _ in range(5):  # ten bytes every 0.5 s: 2.5 s in all, more than the body timeout
        time.sleep(0.5)
        steady.sendall(b"y" * 20)
    answer, _ = _answer(steady, within=10)
    steady.close()
    assert answer.startswith(b"HTTP/1.1 400"), answer[:200]  # read to the end: "not valid msgpack", from the app
