"""Real receivers for alert notifications: an HTTP webhook and an SMTP server on 127.0.0.1,
each in a thread of the test process; and a FLIGHTLOG_HOME whose store (embedded, or a fresh
PostgreSQL database) keeps the alerts; the server's evaluation is tested against a real server separately."""

from __future__ import annotations

import json
import os
import socket
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

FLIGHTLOG_ENV = [name for name in os.environ if name.startswith("FLIGHTLOG_")]


@pytest.fixture(params=["embedded", "postgres"])
def ahome(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> Iterator[Path]:
    """An empty FLIGHTLOG_HOME with every other FLIGHTLOG_ variable cleared; alerts live in its
    embedded store, or (``postgres``) in a fresh PostgreSQL database named by FLIGHTLOG_STORE."""
    for name in FLIGHTLOG_ENV:
        monkeypatch.delenv(name, raising=False)
    h = tmp_path / "home"
    monkeypatch.setenv("FLIGHTLOG_HOME", str(h))
    if request.param == "postgres":
        monkeypatch.setenv("FLIGHTLOG_STORE", request.getfixturevalue("postgres_uri"))
    monkeypatch.chdir(tmp_path)
    yield h


def wait_until(check: Callable[[], Any], timeout: float = 15.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def rules_file(tmp_path: Path, text: str, name: str = "rules.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


@dataclass
class Webhook:
    url: str
    requests: list[dict[str, Any]] = field(default_factory=list)
    fail_next: int = 0  # answer 503 to this many requests first
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def payloads(self) -> list[dict[str, Any]]:
        with self.lock:
            return [r["json"] for r in self.requests if r["status"] == 200]

    def alerts(self, status: str | None = None) -> list[tuple[str, str, str]]:
        """(rule, status, reason) of every alert delivered, in order."""
        return [
            (a["rule"], a["status"], p["reason"])
            for p in self.payloads
            for a in p["alerts"]
            if status is None or a["status"] == status
        ]

    def wait(self, n: int, timeout: float = 15.0) -> list[dict[str, Any]]:
        wait_until(lambda: len(self.payloads) >= n, timeout, f"{n} webhook deliveries (got {len(self.payloads)})")
        return self.payloads


@pytest.fixture
def webhook() -> Iterator[Webhook]:
    hook = Webhook("")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - the http.server API
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            with hook.lock:
                status = 200
                if hook.fail_next > 0:
                    hook.fail_next -= 1
                    status = 503
                hook.requests.append(
                    {"path": self.path, "headers": dict(self.headers), "status": status, "json": json.loads(body)}
                )
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    hook.url = f"http://127.0.0.1:{server.server_address[1]}/hook"
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)  # shutdown() waits a poll
    thread.start()
    try:
        yield hook
    finally:
        server.shutdown()
        server.server_close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Mailbox:
    port: int
    messages: list[Any] = field(default_factory=list)
    logins: list[tuple[str, str]] = field(default_factory=list)

    def wait(self, n: int, timeout: float = 15.0) -> list[Any]:
        wait_until(lambda: len(self.messages) >= n, timeout, f"{n} emails (got {len(self.messages)})")
        return self.messages


@pytest.fixture
def smtp() -> Iterator[Mailbox]:
    """A real SMTP server (aiosmtpd) on 127.0.0.1 that keeps every message it accepts."""
    from email import message_from_bytes, policy

    from aiosmtpd.controller import Controller

    box = Mailbox(free_port())

    class Handler:
        async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # noqa: N802 - aiosmtpd's API
            message = message_from_bytes(envelope.content, policy=policy.default)
            box.messages.append({"from": envelope.mail_from, "to": list(envelope.rcpt_tos), "message": message})
            return "250 OK"

    controller = Controller(Handler(), hostname="127.0.0.1", port=box.port)
    controller.start()
    try:
        yield box
    finally:
        controller.stop()
