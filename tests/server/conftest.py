"""Fixtures of the server tests: a real server on a loopback port in a thread (the app as
`flightlog server` serves it), and `flightlog server` itself as a real process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from flightlog.server.testing import RunningServer, serve_in_thread

FLIGHTLOG = str(Path(sys.executable).with_name("flightlog"))
FLIGHTLOG_ENV = [name for name in os.environ if name.startswith("FLIGHTLOG_")]


@pytest.fixture
def clean_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No FLIGHTLOG_ variable from outside; a client home of our own; cwd in tmp_path."""
    for name in FLIGHTLOG_ENV:
        monkeypatch.delenv(name, raising=False)
    client_home = tmp_path / "client"
    monkeypatch.setenv("FLIGHTLOG_HOME", str(client_home))
    monkeypatch.chdir(tmp_path)
    return client_home


@pytest.fixture(params=["sqlite", "postgres"])
def server_store(request: pytest.FixtureRequest) -> str:
    """The store a test server serves: its home's SQLite file, or a fresh PostgreSQL database."""
    return str(request.getfixturevalue("postgres_uri")) if request.param == "postgres" else ""


@pytest.fixture
def live(tmp_path: Path, server_store: str) -> Iterator[RunningServer]:
    """A real server with --auth and small limits (1 MiB bodies, 4 MiB inflated, 8 MiB uploads), on a loopback port."""
    with serve_in_thread(
        tmp_path / "srv", auth=True, max_body=1 << 20, max_inflated=4 << 20, max_upload=8 << 20, store_uri=server_store
    ) as running:
        yield running


@pytest.fixture
def token(live: RunningServer) -> Callable[..., str]:
    def make(role: str = "admin", project: str | None = None) -> str:
        return live.token(role, project)

    return make


@pytest.fixture
def api(live: RunningServer, token: Callable[..., str]) -> Iterator[httpx.Client]:
    """An admin's HTTP client of the live server, rooted at /api/v1."""
    with httpx.Client(base_url=live.url + "/api/v1", headers=auth(token("admin")), timeout=30) as client:
        yield client


@pytest.fixture
def server(
    tmp_path: Path, clean_env: Path, monkeypatch: pytest.MonkeyPatch, server_store: str
) -> Iterator[RunningServer]:
    """A real server (auth on) on a loopback port; FLIGHTLOG_URL and an admin token are set for the SDK and CLI."""
    with serve_in_thread(tmp_path / "srv", auth=True, store_uri=server_store) as running:
        monkeypatch.setenv("FLIGHTLOG_URL", running.url)
        monkeypatch.setenv("FLIGHTLOG_TOKEN", running.token("admin"))
        yield running


def auth(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


def error_of(response: Any) -> dict[str, Any]:
    body = response.json()
    assert set(body) == {"error"} and {"code", "message", "details"} <= set(body["error"]), body
    assert body["error"]["message"], body
    return dict(body["error"])


class ServerProcess:
    """`flightlog server` as a real process, restartable on the same port."""

    def __init__(self, home: Path, *args: str) -> None:
        self.home, self.args = home, args
        self.port = 0
        self.proc: subprocess.Popen[str] | None = None
        self.url = ""

    def start(self, timeout: float = 20) -> str:
        env = {k: v for k, v in os.environ.items() if not k.startswith("FLIGHTLOG_")}
        self.proc = subprocess.Popen(
            [FLIGHTLOG, "server", "--home", str(self.home), "--port", str(self.port), *self.args],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        line = self.proc.stdout.readline()
        if "listening on" not in line or time.monotonic() > deadline:
            self.proc.kill()
            raise AssertionError(
                f"server did not start: {line!r} {self.proc.stderr.read() if self.proc.stderr else ''}"
            )
        self.url = line.split("listening on ")[1].split()[0]
        self.port = int(self.url.split("/")[2].rsplit(":", 1)[1])  # http://HOST:PORT[/root-path]
        return self.url

    def stop(self, sig: int | None = signal.SIGTERM, timeout: float = 30) -> int:
        """Send ``sig`` (None: none, it was sent already) and wait for the exit code."""
        assert self.proc is not None
        if sig is not None:
            self.proc.send_signal(sig)
        code = self.proc.wait(timeout=timeout)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()
        self.proc = None
        return code


@pytest.fixture
def server_process(tmp_path: Path) -> Iterator[Callable[..., ServerProcess]]:
    made: list[ServerProcess] = []

    def make(*args: str) -> ServerProcess:
        proc = ServerProcess(tmp_path / "srv", *args)
        made.append(proc)
        return proc

    yield make
    for proc in made:
        if proc.proc is not None:
            proc.stop(signal.SIGKILL)
