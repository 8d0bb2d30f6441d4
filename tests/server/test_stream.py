"""Live streams (SSE): new log events, metric points and status, resumable with Last-Event-ID,
and `flightlog logs --follow` in remote mode."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx

from flightlog.server.testing import RunningServer, serve_in_thread
from flightlog.transport import HttpStore
from flightlog.transport.sse import ServerEvent, parse_events
from tests.helpers import child_env, cli, wait_for
from tests.server.conftest import auth, error_of
from tests.server.journal import Writer


def _events(response: httpx.Response) -> Iterator[ServerEvent]:
    return parse_events(response.iter_lines())


def test_stream_sends_logs_metrics_status_and_ends_with_the_run(
    live: RunningServer, token: Callable[..., str], tmp_path: Path
) -> None:
    store = HttpStore(live.url, token=token("writer"), home=tmp_path / "c")
    w = Writer("liverun")
    store.ingest([w.run("p"), w.logs([(1.0, "stdout", "info", "before")]), w.metrics({"loss": ([0], [1.0])})])
    seen: list[tuple[str, object]] = []
    last_id = None
    headers = {**auth(token("reader")), "Accept": "text/event-stream"}
    with httpx.stream("GET", f"{live.url}/api/v1/runs/liverun/stream", headers=headers, timeout=30) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        for event in _events(response):
            data = json.loads(event.data)
            seen.append((event.event, data))
            last_id = event.id or last_id
            if event.event == "logs" and data["events"][0]["message"] == "before":
                store.ingest([w.logs([(2.0, "stderr", "error", "after")]), w.metrics({"loss": ([1, 2], [0.5, 0.25])})])
            if event.event == "logs" and data["events"][0]["message"] == "after":
                store.ingest([w.record("run", status="succeeded", ended=3.0)])
            if event.event == "end":
                break
    kinds = [k for k, _ in seen]
    assert kinds[0] in ("logs", "status") and kinds[-1] == "end"
    messages = [e["message"] for k, d in seen if k == "logs" for e in d["events"]]  # type: ignore[index, union-attr]
    assert messages == ["before", "after"], "each event once"
    metric_steps = [s for k, d in seen if k == "metrics" for s in d["metrics"]["loss"]["steps"]]  # type: ignore[index]
    assert metric_steps == [1, 2], "points from the moment of connecting"
    statuses = [d["status"] for k, d in seen if k == "status"]  # type: ignore[index]
    assert statuses == ["running", "succeeded"]
    # resuming from the last id sends nothing again (and ends at once: the run is over)
    with httpx.stream(
        "GET",
        f"{live.url}/api/v1/runs/liverun/stream",
        headers={**headers, "Last-Event-ID": last_id or ""},
        params={"events": "logs"},
        timeout=30,
    ) as response:
        again = list(_events(response))
    assert [e.event for e in again] == ["end"]
    bad = httpx.get(f"{live.url}/api/v1/runs/liverun/stream", params={"events": "gossip"}, headers=headers)
    assert bad.status_code == 400 and "gossip" in error_of(bad)["message"]
    assert (
        httpx.get(f"{live.url}/api/v1/runs/liverun/stream", headers={**headers, "Last-Event-ID": "x"}).status_code
        == 400
    )
    store.close()


def test_logs_follow_in_remote_mode_uses_the_stream(server: RunningServer, clean_env: Path) -> None:
    code = """
import time, flightlog
run = flightlog.init(project="p", resources=False)
print(run.id, flush=True)
for i in range(6):
    run.log_event(f"tick {i}", level="warning" if i % 2 else "info")
    time.sleep(0.3)
run.finish()
"""
    env = child_env(clean_env, FLIGHTLOG_FLUSH_INTERVAL="0.1")
    with subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True) as writer:
        assert writer.stdout is not None
        run_id = writer.stdout.readline().strip()
        # the run must be on the server for --follow to find it (its first flush)
        headers = auth(server.token("reader"))
        wait_for(
            lambda: httpx.get(f"{server.url}/api/v1/runs/{run_id}", headers=headers).status_code == 200,
            "the run on the server",
        )
        follow = cli(clean_env, "logs", run_id, "--follow", "--level", "warning", "--format", "json", timeout=60)
        writer.wait(timeout=30)
    assert [json.loads(line)["message"] for line in follow.stdout.splitlines()] == ["tick 1", "tick 3", "tick 5"]
    text = httpx.get(server.url + "/metrics").text
    assert 'route="/api/v1/runs/{run}/stream",status="200"' in text, "--follow went through the live stream"


def test_an_old_stream_asks_its_client_to_reconnect_and_it_resumes_without_a_gap(tmp_path: Path) -> None:
    """`stream_max_age` bounds one connection; the client resumes with Last-Event-ID: each event once, in order."""
    with serve_in_thread(tmp_path / "srv", auth=True, stream_max_age=0.4, stream_poll=0.05) as srv:
        store = HttpStore(srv.url, token=srv.token("writer"), home=tmp_path / "c")
        w = Writer("longrun")
        store.ingest([w.run("p")])
        first_seen = threading.Event()

        def write() -> None:
            first_seen.wait(30)
            for i in range(1, 12):
                store.ingest([w.logs([(float(i), "stdout", "info", f"line {i}")])])
                time.sleep(0.1)
            store.ingest([w.record("run", status="succeeded", ended=20.0)])

        store.ingest([w.logs([(0.0, "stdout", "info", "line 0")])])
        writer = threading.Thread(target=write)
        writer.start()
        reader = HttpStore(srv.url, token=srv.token("reader"), home=tmp_path / "r")
        seen: list[str] = []
        for batch in reader.follow_logs("longrun", reconnect_for=30):
            seen += [e.message for e in batch]
            first_seen.set()
        writer.join(30)
        assert seen == [f"line {i}" for i in range(12)]
        counter = 'flightlog_http_requests_total{method="GET",route="/api/v1/runs/{run}/stream",status="200"} '
        opened = [
            float(line.removeprefix(counter))
            for line in httpx.get(srv.url + "/metrics").text.splitlines()
            if line.startswith(counter)
        ]
        assert opened and opened[0] >= 2, f"the 1.2 s stream was cut into several connections: {opened}"
        store.close()
        reader.close()
