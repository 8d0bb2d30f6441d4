"""Fixtures of the security tests: the app in process (httpx's ASGI transport), and the real
servers of tests/server (a loopback port, auth on)."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from flightlog.server.app import FlightlogApp, create_app
from flightlog.server.config import ServerConfig
from tests.server.conftest import api, clean_env, live, server_process, server_store, token  # noqa: F401 - fixtures shared with tests/server
from tests.serving.conftest import model_server  # noqa: F401 - a real uvicorn model server, shared with tests/serving


class InProcess:
    """The app as `flightlog server` builds it, called in process over httpx's ASGI transport."""

    def __init__(
        self, app: FlightlogApp, base_url: str = "http://127.0.0.1:8765", client: tuple[str, int] = ("127.0.0.1", 50000)
    ) -> None:
        self.app, self.base_url, self.client = app, base_url, client

    def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        async def go() -> httpx.Response:
            transport = httpx.ASGITransport(app=self.app, client=self.client)  # type: ignore[arg-type]
            async with httpx.AsyncClient(transport=transport, base_url=self.base_url, timeout=60) as c:
                return await c.request(method, path, **kwargs)

        with ThreadPoolExecutor(1) as pool:  # a loop of its own, whatever the test runs in
            return pool.submit(anyio.run, go).result(timeout=120)

    def get(self, path: str, **kwargs: Any) -> httpx.Response:
        return self.request("GET", path, **kwargs)


@pytest.fixture
def make_app(tmp_path: Path, server_store: str) -> Iterator[Any]:  # noqa: F811 - the fixture imported above
    """``make_app(**config)`` → an :class:`InProcess` app over a fresh home (closed after the test),
    whose store is the home's SQLite file or a fresh PostgreSQL database (``server_store``: the
    suite runs against both; a file about SQLite's own internals overrides ``server_store``). Apps
    made in one test share that database, as replicas of one server do."""
    made: list[FlightlogApp] = []

    def make(
        *, base_url: str = "http://127.0.0.1:8765", client: tuple[str, int] = ("127.0.0.1", 50000), **config: Any
    ) -> InProcess:
        config.setdefault("store_uri", server_store)
        app = create_app(ServerConfig.for_home(tmp_path / f"srv{len(made)}", **config))
        made.append(app)
        return InProcess(app, base_url, client)

    yield make
    for app in made:
        app.close()
