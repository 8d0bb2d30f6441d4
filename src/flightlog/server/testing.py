"""A real flightlog server for tests: uvicorn on a free loopback port, in a thread.

    from flightlog.server.testing import serve_in_thread

    with serve_in_thread(tmp_path / "server", auth=True) as server:
        token = server.token("writer", project="vision")
        env = {"FLIGHTLOG_URL": server.url, "FLIGHTLOG_TOKEN": token}
        ...

The server is the one `flightlog server` runs (same app, same store, same HTTP stack), so
SDK processes, the CLI and plain HTTP clients can all talk to it.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flightlog.server.app import FlightlogApp, create_app
from flightlog.server.config import ServerConfig
from flightlog.server.serve import Server, address, bind, uvicorn_config
from flightlog.server.tokens import create_token

__all__ = ["HEADLESS_CHROMIUM_ARGS", "RunningServer", "serve_in_thread"]

#: how the suite's UI tests and bench/ui_perf.py launch Chromium: headless, as root in a
#: container (no sandbox, no /dev/shm), and nothing of its own on the network
HEADLESS_CHROMIUM_ARGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
)


@dataclass
class RunningServer:
    url: str
    home: Path
    app: FlightlogApp

    def token(self, role: str = "admin", project: str | None = None, name: str | None = None) -> str:
        """Make a token straight in the store (as `flightlog token create` does); returns its secret."""
        return create_token(self.app.state.store, role, project, name).secret


@contextmanager
def serve_in_thread(home: str | os.PathLike[str], *, auth: bool = False, **config: Any) -> Iterator[RunningServer]:
    app = create_app(ServerConfig.for_home(home, auth=auth, **config))
    sock = bind("127.0.0.1", 0)
    server = Server(uvicorn_config(app, grace=5), app)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name="flightlog-test-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            sock.close()
            app.close()
            raise RuntimeError("the test server did not start")
        time.sleep(0.01)
    try:
        yield RunningServer(address(sock), app.state.config.home, app)
    finally:
        server.stop()
        thread.join(timeout=20)
        sock.close()
        app.close()
