"""Registry tests run against real stores: the embedded SQLite file and a real PostgreSQL,
with runs recorded by the real SDK."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest

import flightlog
from flightlog.client import Client


@pytest.fixture(params=["sqlite", "postgres"])
def client(request: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Client]:
    """A Client over a fresh store of each kind; the SDK in this process writes to the same store."""
    for name in ("FLIGHTLOG_URL", "FLIGHTLOG_TOKEN", "FLIGHTLOG_STORE", "FLIGHTLOG_RUN_ID"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("FLIGHTLOG_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("FLIGHTLOG_PROJECT", "fraud-team")
    monkeypatch.setenv("FLIGHTLOG_CONSOLE", "off")
    if request.param == "postgres":
        monkeypatch.setenv("FLIGHTLOG_STORE", request.getfixturevalue("postgres_uri"))
    c = Client()
    yield c
    c.close()


def logged_run(
    tmp_path: Path, files: dict[str, bytes], *, project: str = "fraud-team", inputs: dict[str, bytes] | None = None
) -> str:
    """A finished run, recorded by the SDK, that logged ``files`` as output artifacts (and
    ``inputs`` as input data snapshots)."""
    run = flightlog.init(project=project, name="train")
    for name, data in (inputs or {}).items():
        source = tmp_path / f"in-{name}"
        source.write_bytes(data)
        run.log_input(source, name=name)
    for name, data in files.items():
        source = tmp_path / name.replace("/", "_")
        source.write_bytes(data)
        run.log_artifact(source, name=name)
    run.finish()
    return run.id


class Receiver:
    """A real HTTP server on 127.0.0.1 that keeps every POST (headers and body); ``fail`` makes it
    answer 503, ``delay`` makes it slow (a wider window for two deliverers to race)."""

    def __init__(self, path: str = "/hook") -> None:
        self.received: list[dict[str, Any]] = []
        self.fail = False
        self.delay = 0.0
        self.attempts = 0  # every POST, refused ones too
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers["Content-Length"]))
                outer.attempts += 1
                if outer.delay:
                    time.sleep(outer.delay)  # the receiver is slow, not the test waiting
                if outer.fail:
                    self.send_response(503)
                    self.end_headers()
                    return
                outer.received.append({"headers": dict(self.headers), "body": body})
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}{path}"
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()  # shutdown() waits a poll

    def wait_for(self, n: int, timeout: float = 10.0) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while len(self.received) < n and time.monotonic() < deadline:
            time.sleep(0.02)
        return self.received

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
