"""The server's triage worker process (triage/worker.py) ends with the server, however the server
ended: one killed outright never shuts its pool down, and the worker must not be left behind."""

from __future__ import annotations

import signal
from pathlib import Path

import httpx
import psutil

from tests.security.probe import server_subprocess
from tests.security.test_triage_cost import crafted
from tests.server.conftest import auth


def test_the_triage_worker_ends_when_its_server_is_killed(tmp_path: Path) -> None:
    with server_subprocess(tmp_path / "srv") as server:
        server.store.ingest(crafted(3))
        answer = httpx.get(
            f"{server.url}/api/v1/triage",
            params={"project": "vision"},
            headers=auth(server.token("reader")),
            timeout=120,
        )
        assert answer.status_code == 200, answer.text
        children = psutil.Process(server.proc.pid).children(recursive=True)
        workers = [p for p in children if "multiprocessing.spawn" in " ".join(p.cmdline())]
        assert len(workers) == 1, [p.cmdline() for p in children]  # the report was made there
        server.proc.send_signal(signal.SIGKILL)
        server.proc.wait()
        gone, alive = psutil.wait_procs(children, timeout=60)
        for p in alive:  # a failed test leaves nothing behind either
            p.kill()
        assert not alive, f"left running after the server was killed: {[p.cmdline() for p in alive]}"
