"""No write from another origin's page (issue 31, item 3): the MLflow routes once read any
content type as JSON and merged query parameters into POST bodies, so a page on another local
port made Chromium delete an experiment, tag a run and plant a registered model on a server
without ``--auth``, with no preflight. Now every write must be declared JSON (415 otherwise)
and a browser's write from another origin is refused (403 ``cross_origin``) on every route."""

from __future__ import annotations

import http.server
import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from flightlog.server.testing import RunningServer, serve_in_thread
from tests.server.conftest import error_of

CHROMIUM = os.environ.get("FLIGHTLOG_TEST_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-dev-shm-usage"]


@pytest.fixture
def open_server(tmp_path: Path, server_store: str) -> Iterator[tuple[RunningServer, dict[str, str]]]:
    """A real server WITHOUT --auth (loopback only) with an experiment, a run in it; their ids."""
    with serve_in_thread(tmp_path / "srv", store_uri=server_store) as running:
        with httpx.Client(base_url=running.url + "/api/2.0/mlflow", timeout=30) as http:
            exp = http.post("/experiments/create", json={"name": "victim"}).json()["experiment_id"]
            run = http.post("/runs/create", json={"experiment_id": exp}).json()["run"]["info"]["run_id"]
        yield running, {"experiment_id": exp, "run_id": run}


def _untouched(server: RunningServer, ids: dict[str, str]) -> None:
    with httpx.Client(base_url=server.url + "/api/2.0/mlflow", timeout=30) as http:
        exp = http.get("/experiments/get", params={"experiment_id": ids["experiment_id"]}).json()["experiment"]
        assert exp["lifecycle_stage"] == "active", exp
        run = http.get("/runs/get", params={"run_id": ids["run_id"]}).json()["run"]
        assert "planted" not in {t["key"] for t in run["data"].get("tags", [])}, run
        models = http.get("/registered-models/search").json().get("registered_models", [])
        assert models == [], models


def test_simple_requests_are_refused_415(open_server: tuple[RunningServer, dict[str, str]]) -> None:
    server, ids = open_server
    base = server.url + "/api/2.0/mlflow"
    body = json.dumps({"experiment_id": ids["experiment_id"]})
    attempts = [
        httpx.post(f"{base}/experiments/delete", content=body, headers={"Content-Type": "text/plain"}),
        httpx.post(f"{base}/experiments/delete", data={"experiment_id": ids["experiment_id"]}),
        httpx.post(f"{base}/runs/set-tag", params={"run_id": ids["run_id"], "key": "planted", "value": "1"}),
        httpx.post(f"{base}/registered-models/create", params={"name": "planted"}),
        httpx.post(
            f"{base}/registered-models/create",
            files={"name": (None, "planted")},  # multipart/form-data
        ),
        httpx.post(
            server.url + "/api/2.0/mlflow-artifacts/mpu/create/" + f"{ids['experiment_id']}/{ids['run_id']}/artifacts",
            content='{"path": "x.bin", "num_parts": 1}',
            headers={"Content-Type": "text/plain"},
        ),
    ]
    for response in attempts:
        assert response.status_code == 415, (response.request.url, response.text)
        assert "application/json" in response.json()["message"]
    _untouched(server, ids)


def test_a_write_from_another_origin_is_refused_on_every_route(
    open_server: tuple[RunningServer, dict[str, str]],
) -> None:
    server, ids = open_server
    evil = {"Origin": "http://127.0.0.1:1", "Content-Type": "application/json"}
    base = server.url + "/api/2.0/mlflow"
    refused = [
        httpx.post(f"{base}/experiments/delete", json=ids, headers=evil),
        httpx.post(f"{base}/runs/set-tag", json={**ids, "key": "planted", "value": "1"}, headers=evil),
        httpx.post(f"{base}/registered-models/create", json={"name": "planted"}, headers=evil),
        httpx.put(
            f"{server.url}/api/2.0/mlflow-artifacts/artifacts/{ids['experiment_id']}/{ids['run_id']}/artifacts/x",
            content=b"x",
            headers={"Origin": "null"},
        ),
        httpx.post(f"{server.url}/api/v1/runs/{ids['run_id']}/notes", json={"text": "csrf"}, headers=evil),
        httpx.post(
            f"{base}/runs/set-tag",
            json={**ids, "key": "planted", "value": "1"},
            headers={"Sec-Fetch-Site": "cross-site"},
        ),
    ]
    for response in refused:
        assert response.status_code == 403, (response.request.url, response.text)
    assert error_of(refused[4])["code"] == "cross_origin"
    assert refused[0].json()["error_code"] == "PERMISSION_DENIED"
    _untouched(server, ids)
    # the server's own pages (same origin) and clients that are not browsers (no Origin) still write
    own = {"Origin": server.url, "Content-Type": "application/json"}
    assert httpx.post(f"{base}/runs/set-tag", json={**ids, "key": "ok", "value": "1"}, headers=own).status_code == 200
    assert httpx.post(f"{server.url}/api/v1/runs/{ids['run_id']}/notes", json={"text": "mine"}).status_code < 300
    # reads are not writes: a page may not read the answer anyway (no CORS), and GET changes nothing
    assert httpx.get(f"{base}/experiments/search", headers={"Origin": "http://127.0.0.1:1"}).status_code == 200


ATTACK_PAGE = """<!doctype html><html><body><script>
const target = %(target)r;
const exp = %(exp)r, run = %(run)r;
const shots = [
  fetch(target + "/api/2.0/mlflow/experiments/delete", {method: "POST", mode: "no-cors",
        headers: {"Content-Type": "text/plain"}, body: JSON.stringify({experiment_id: exp})}),
  fetch(target + "/api/2.0/mlflow/runs/set-tag?run_id=" + run + "&key=planted&value=1",
        {method: "POST", mode: "no-cors"}),
  fetch(target + "/api/2.0/mlflow/registered-models/create", {method: "POST", mode: "no-cors",
        body: new URLSearchParams({name: "planted"})}),
  fetch(target + "/ajax-api/2.0/mlflow/registered-models/create?name=planted", {method: "POST", mode: "no-cors",
        headers: {"Content-Type": "text/plain"}, body: '{"name": "planted"}'}),
];
Promise.allSettled(shots).then(() => { document.title = "sent"; });
</script></body></html>"""


@pytest.fixture
def attacker_site(open_server: tuple[RunningServer, dict[str, str]]) -> Iterator[str]:
    """A page on another local port that fires the forged requests at the server."""
    server, ids = open_server
    page = (ATTACK_PAGE % {"target": server.url, "exp": ids["experiment_id"], "run": ids["run_id"]}).encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)

        def log_message(self, *args: Any) -> None:
            pass

    site = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=site.serve_forever, args=(0.05,), daemon=True)  # shutdown() waits a poll
    thread.start()
    try:
        yield f"http://127.0.0.1:{site.server_address[1]}/"
    finally:
        site.shutdown()
        site.server_close()


def test_chromium_on_another_port_changes_nothing(
    open_server: tuple[RunningServer, dict[str, str]], attacker_site: str
) -> None:
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"this test needs Chromium at {CHROMIUM} (FLIGHTLOG_TEST_CHROMIUM names another)")
    from playwright.sync_api import sync_playwright

    server, ids = open_server
    sent: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = browser.new_page()
            page.on("request", lambda r: sent.append(r.url) if r.url.startswith(server.url) else None)
            page.goto(attacker_site)
            page.wait_for_function("document.title === 'sent'", timeout=15_000)
        finally:
            browser.close()
    assert len(sent) == 4, sent  # the browser did send every forged request
    _untouched(server, ids)
