"""A real uvicorn server in a subprocess serving tests/serving/app.py, and a real httpx client."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.helpers import child_env

HERE = Path(__file__).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ModelServer:
    def __init__(self, home: Path, env: dict[str, str], app: str = "app:app") -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = home.parent / f"uvicorn-{self.port}.log"
        self._out = open(self.log, "w")  # noqa: SIM115 - the server writes to it until stop()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", app, "--port", str(self.port), "--log-level", "warning"],
            cwd=HERE,
            env={**child_env(home), "PYTHONPATH": os.environ.get("PYTHONPATH", ""), **env},
            stdout=self._out,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(self.url + "/ping", timeout=1)
                break
            except httpx.TransportError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"uvicorn did not start:\n{self.output()}") from None
                time.sleep(0.05)

    def output(self) -> str:
        self._out.flush()
        return self.log.read_text()

    def stop(self, sig: int = signal.SIGTERM) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        code = self.proc.wait(timeout=60)
        self._out.close()
        return code


@pytest.fixture
def model_server(tmp_path: Path) -> Iterator[Callable[..., ModelServer]]:
    made: list[ModelServer] = []

    def make(home: Path | None = None, app: str = "app:app", **env: str) -> ModelServer:
        server = ModelServer(home or tmp_path / "home", env, app)
        made.append(server)
        return server

    yield make
    for server in made:
        if server.proc.poll() is None:
            server.proc.kill()
            server.proc.wait()
        server._out.close()


def poll(what: Callable[[], Any], timeout: float = 60, every: float = 0.1) -> Any:
    """``what()`` once it is truthy; AssertionError (with the last value) past the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        value = what()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not there after {timeout} s: {value!r}")
        time.sleep(every)
