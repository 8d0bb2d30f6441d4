"""Serving the UI: `flightlog ui`, the page at every deep link (never over the API's paths), its
headers, the proxy sub-path, and the page shown when the UI was not built."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import anyio
import httpx
import pytest

from flightlog.server import ui
from flightlog.server.app import create_app
from flightlog.server.config import ServerConfig


class Client:
    """In-process HTTP to the app (httpx's ASGI transport), one request at a time, in a thread of
    its own (the browser tests' Playwright keeps an event loop in this one)."""

    def __init__(self, app: object, root_path: str = "") -> None:
        self.app, self.root_path = app, root_path

    def request(self, method: str, path: str) -> httpx.Response:
        async def go() -> httpx.Response:
            transport = httpx.ASGITransport(app=self.app, root_path=self.root_path)  # type: ignore[arg-type]
            async with httpx.AsyncClient(
                transport=transport, base_url="http://127.0.0.1:8765"
            ) as c:  # a loopback name: the only kind flightlog ui answers
                return await c.request(method, path)

        with ThreadPoolExecutor(1) as pool:
            return pool.submit(anyio.run, go).result(timeout=60)

    def get(self, path: str) -> httpx.Response:
        return self.request("GET", path)

    def post(self, path: str) -> httpx.Response:
        return self.request("POST", path)


@pytest.fixture
def client(tmp_path: Path, built_ui: Path) -> Iterator[Client]:
    app = create_app(ServerConfig.for_home(tmp_path / "home"))
    try:
        yield Client(app)
    finally:
        app.close()


def test_every_deep_link_gets_the_page_with_a_strict_policy(client: Client) -> None:
    for path in ("/", "/projects/vision", "/projects/vision/runs/abc/logs?level=error", "/compare?runs=a,b", "/signin"):
        page = client.get(path)
        assert page.status_code == 200, path
        assert page.headers["content-type"].startswith("text/html")
        assert '<base href="/" />' in page.text
        csp = page.headers["content-security-policy"]
        assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp and "unsafe-eval" not in csp
        # beside 'self', only the page's own inline script, by its hash: never 'unsafe-inline'
        script_src = next(d.split()[1:] for d in csp.split(";") if d.split()[0] == "script-src")
        assert script_src[0] == "'self'" and all(s.startswith("'sha256-") for s in script_src[1:]), script_src
        assert len(script_src) - 1 == page.text.count("<script>"), (script_src, page.text)
        assert page.headers["x-content-type-options"] == "nosniff"
    asset = next((ui.STATIC / "assets").glob("*.js")).name
    got = client.get(f"/assets/{asset}")
    assert got.status_code == 200 and got.headers["content-type"].startswith("text/javascript")
    assert "immutable" in got.headers["cache-control"]


def test_api_paths_never_fall_through_to_the_page(client: Client) -> None:
    for path in (
        "/api/v1/nope",
        "/api/v2/runs",
        "/api",
        "/assets/missing.js",
        "/assets/..%2F..%2Fui.py",
        "/assets/sub/x.js",
    ):
        got = client.get(path)
        assert got.status_code == 404, path
        assert got.json()["error"]["code"] == "not_found", path
    assert client.get("/healthz").json() == {"status": "ok"}
    assert client.post("/projects/x").status_code == 405


def test_behind_a_proxy_the_page_names_its_sub_path(tmp_path: Path, built_ui: Path) -> None:
    app = create_app(ServerConfig.for_home(tmp_path / "home"))
    try:
        assert '<base href="/flightlog/" />' in Client(app, root_path="/flightlog").get("/projects/x").text
    finally:
        app.close()


def test_an_unbuilt_ui_says_how_to_build_it(client: Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ui, "STATIC", tmp_path / "nothing")
    got = client.get("/projects/x")
    assert got.status_code == 503 and "scripts/setup-ui.sh" in got.text


def test_flightlog_ui_serves_the_store_and_prints_its_address(tmp_path: Path, built_ui: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLIGHTLOG_")}
    exe = Path(sys.executable).with_name("flightlog")
    proc = subprocess.Popen(
        [str(exe), "ui", "--port", "0", "--home", str(tmp_path / "home"), "--project", "demo"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert first.startswith("flightlog UI: http://127.0.0.1:"), first
        url = first.split()[2]
        assert proc.stdout.readline().strip() == f"project demo: {url}projects/demo"
        assert '<base href="/" />' in httpx.get(url + "projects/demo").text
        assert httpx.get(url + "api/v1/projects").json() == {"projects": []}
        assert httpx.get(url + "api/v1/whoami").json()["auth"] is False
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err  # Ctrl-C is how it ends
