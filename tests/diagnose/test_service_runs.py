"""HTTP clients and serving processes in whole runs (issue 29, the sixteenth probe set): a
client's connection pool with no free connection and a server that cannot bind its port.

Each is a real script under ``flightlog run`` with a real server on 127.0.0.1 (``http.server``
in a thread, uvicorn), and real client libraries (urllib3, httpx). Each was read wrongly before
its rule: the pool's ``EmptyPoolError`` as the workload's code (0.28), httpx's ``PoolTimeout``
— raised with no message — as a dependency (0.21), uvicorn's bind error, a log line with no
traceback before exit code 3, as the workload's code by its exit code alone (0.25)."""

from __future__ import annotations

import re
import socket
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import cli

pytestmark = pytest.mark.embedded_only("the report is the same over either transport (tests/diagnose/test_api.py)")


def _run(home: Path, script: str, *argv: str) -> dict[str, Any]:
    """Run ``script`` under ``flightlog run``; its full diagnosis."""
    from flightlog.client import Client

    path = home.parent / "workload.py"
    path.write_text(textwrap.dedent(script))
    proc = cli(home, "run", "--project", "services", "--", sys.executable, str(path), *argv, check=False, timeout=120)
    m = re.search(r"run ([0-9a-f]{32}) started", proc.stderr)
    assert m, proc.stderr
    with Client(home) as c:
        report: dict[str, Any] = c.diagnose(m[1], auto_baseline=False)
    assert report["status"] == "failed", (report["status"], proc.stderr[-2000:])
    return report


def _lead(report: dict[str, Any], category: str, rule: str) -> None:
    """The top finding is ``category`` at 0.5 or more, and ``rule`` is among its evidence."""
    top = report["findings"][0] if report["findings"] else {}
    assert top.get("category") == category and top["confidence"] >= 0.5, report["findings"][:3]
    assert any(rule in (e.get("detail") or "") or rule in str(e) for e in top["evidence"]) or rule in str(top), top


# a local service that answers slowly: every request holds its connection for a while
SLOW_SERVER = """
import http.server, threading, time
class Slow(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        time.sleep(1.0)
        self.send_response(200)
        self.send_header("content-length", "2")
        self.end_headers()
        self.wfile.write(b"{}")
    def log_message(self, *args):
        pass
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Slow)
server.daemon_threads = True
threading.Thread(target=server.serve_forever, daemon=True).start()
PORT = server.server_port
"""

URLLIB3_POOL = (
    SLOW_SERVER
    + """
import logging, threading
import urllib3
logging.basicConfig(level=logging.INFO, format="%(threadName)s %(levelname)s %(message)s")
pool = urllib3.HTTPConnectionPool("127.0.0.1", PORT, maxsize=2, block=True, retries=False)
errors = []
def embed(shard):
    try:
        pool.urlopen("GET", f"/v1/embed/{shard}", pool_timeout=0.2)
        logging.info("shard %d embedded", shard)
    except Exception as exc:
        errors.append(exc)
print("embedding 6 shards over a pool of 2 connections", flush=True)
threads = [threading.Thread(target=embed, args=(i,)) for i in range(6)]
for t in threads:
    t.start()
for t in threads:
    t.join()
if errors:
    raise errors[0]
"""
)

HTTPX_POOL = (
    SLOW_SERVER
    + """
import asyncio, logging
import httpx
logging.basicConfig(level=logging.INFO)
async def main():
    limits = httpx.Limits(max_connections=2)
    timeout = httpx.Timeout(10.0, pool=0.2)
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{PORT}", limits=limits, timeout=timeout) as client:
        print("fetching 8 documents for the dedup pass", flush=True)
        await asyncio.gather(*(client.get(f"/doc/{i}") for i in range(8)))
asyncio.run(main())
"""
)


@pytest.mark.parametrize(
    "script",
    [pytest.param(URLLIB3_POOL, id="urllib3-EmptyPoolError"), pytest.param(HTTPX_POOL, id="httpx-PoolTimeout")],
)
def test_a_connection_pool_with_no_free_connection_is_a_service_at_capacity(home: Path, script: str) -> None:
    """The requests in flight hold every connection the client's pool may open: the capacity the
    client was given says no, as a database's "too many clients" — not the workload's code, not a
    dependency (httpx raises ``PoolTimeout`` with no message at all)."""
    report = _run(home, script)
    _lead(report, "service_unavailable", "Pool")


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A port another process holds: a listening socket on 127.0.0.1."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        yield held.getsockname()[1]


UVICORN_ON_A_TAKEN_PORT = """
import sys
import uvicorn
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route
async def health(request):
    return JSONResponse({"ok": True})
app = Starlette(routes=[Route("/health", health)])
port = int(sys.argv[1])
print(f"starting ranker-serving on 127.0.0.1:{port}", flush=True)
uvicorn.run(app, host="127.0.0.1", port=port, log_level="info")
"""


def test_a_server_whose_port_another_process_holds(home: Path, taken_port: int) -> None:
    """uvicorn logs the bind error ("[Errno 98] … address already in use") and exits 3 with no
    traceback: the run's port setting collides with another process, as torch's store's does."""
    report = _run(home, UVICORN_ON_A_TAKEN_PORT, str(taken_port))
    _lead(report, "bad_parameter", "address already in use")


# a model served by the run itself (uvicorn in a thread, as a smoke test before a deploy), whose
# handler raises on the third request; the client raises on the 500 it gets back
SERVED_HANDLER_RAISES = """
import logging, threading, time
import requests, uvicorn
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
WEIGHTS = {"age": 0.2, "tenure": 0.5}
async def predict(request):
    features = await request.json()
    score = sum(WEIGHTS[name] * value for name, value in features.items())
    return JSONResponse({"score": score, "model": model_version})
app = Starlette(routes=[Route("/predict", predict, methods=["POST"])])
server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="info"))
thread = threading.Thread(target=server.run, daemon=True)
thread.start()
while not server.started:
    time.sleep(0.05)
port = server.servers[0].sockets[0].getsockname()[1]
print("smoke-testing the packaged model before deploy", flush=True)
try:
    r = requests.post(f"http://127.0.0.1:{port}/predict", json={"age": 31, "tenure": 4}, timeout=5)
    r.raise_for_status()
finally:
    server.should_exit = True
    thread.join(5)
"""


def test_a_500_from_the_run_s_own_server_is_its_handler_s_exception(home: Path) -> None:
    """The run's server logged its handler's traceback ("Exception in ASGI application", a
    NameError in the workload's own handler) and answered 500; the client raised on the 500.
    The handler's exception is the cause — the 500 is how it came back, not a service that
    failed the run (it read as service_unavailable 0.97)."""
    report = _run(home, SERVED_HANDLER_RAISES)
    top = report["findings"][0]
    assert top["category"] == "code_error" and top["confidence"] >= 0.5, report["findings"][:3]
    assert "NameError" in top["summary"] and "model_version" in top["summary"], top["summary"]
    assert not any(f["category"] == "service_unavailable" and f["confidence"] >= 0.5 for f in report["findings"])


# a 500 from a service the run does not hold: its handler's traceback is not in the run's output,
# and the workload's own handled error logged before it is no server's
ANOTHER_SERVICE_S_500 = """
import http.server, json, logging, threading
import requests
logging.basicConfig(level=logging.INFO)
class Failing(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.send_response(500)
        self.send_header("content-length", "0")
        self.end_headers()
    def log_message(self, *args):
        pass
server = http.server.HTTPServer(("127.0.0.1", 0), Failing)
threading.Thread(target=server.serve_forever, daemon=True).start()
try:
    json.loads("{cached: ")
except ValueError:
    logging.exception("the score cache does not parse, scoring again")
requests.post(f"http://127.0.0.1:{server.server_port}/score", json={"ids": [1, 2]}, timeout=5).raise_for_status()
"""


def test_a_500_from_a_service_the_run_does_not_hold_stays_the_service_s(home: Path) -> None:
    """Only a traceback the server logged for its handler ("Exception in ASGI application", …)
    is joined under the client's 500: a handled error of the workload's own is not."""
    report = _run(home, ANOTHER_SERVICE_S_500)
    _lead(report, "service_unavailable", "500")


# the same served model, whose handler multiplies a request's features by weights of another size
SERVED_MATMUL_MISMATCH = (
    SERVED_HANDLER_RAISES.replace(
        "WEIGHTS = {",
        "import numpy as np\nW = np.ones((16, 1))\nWEIGHTS = {",
    )
    .replace(
        "score = sum(WEIGHTS[name] * value for name, value in features.items())",
        "score = float((np.asarray(list(features.values()), dtype=float).reshape(1, -1) @ W)[0, 0])",
    )
    .replace('"model": model_version', '"model": "v4"')
)


def test_numpy_s_matrix_product_of_mismatched_shapes_in_a_served_handler(home: Path) -> None:
    """numpy's words for a matrix product of shapes that do not fit ("has a mismatch in its
    core dimension", ``np.dot``'s "not aligned") are a shape mismatch, as torch's "mat1 and mat2
    shapes cannot be multiplied": the handler's code, at a lead (it read as 0.33)."""
    report = _run(home, SERVED_MATMUL_MISMATCH)
    top = report["findings"][0]
    assert top["category"] == "code_error" and top["confidence"] >= 0.5, report["findings"][:3]
    assert "core dimension" in top["summary"], top["summary"]
