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
