"""A server that goes away in the middle of a run loses nothing: the journal keeps the records,
the shipper retries with backoff, and everything arrives exactly once when the server is back."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import flightlog
from flightlog.errors import FlightlogError
from tests.helpers import Lines, child_env, cli, wait_for
from tests.server.conftest import ServerProcess

#: the shipper's backoff (transport/sink.py: BASE_DELAY 0.25 s doubling up to MAX_DELAY 5 s) and the
#: outage compressed by the same factor: the outage still spans the whole backoff range, twice its
#: longest delay, in 1/25 of the time (10 s of outage become 0.4 s)
COMPRESS = 25
OUTAGE = 10.0 / COMPRESS
COMPRESSED_BACKOFF = f"""
import flightlog.transport.sink as sink
sink.BASE_DELAY, sink.MAX_DELAY = sink.BASE_DELAY / {COMPRESS}, sink.MAX_DELAY / {COMPRESS}
"""

WRITER = (
    COMPRESSED_BACKOFF
    + """
import sys, time, flightlog
from pathlib import Path
run = flightlog.init(project="outage", name="through-a-restart", resources=False)
print(run.id, flush=True)
artifact, down, stop = (Path(a) for a in sys.argv[1:4])
i, logged = 0, False
while not stop.exists():
    run.log({"i": float(i), "sq": float(i * i)}, step=i)
    if i % 25 == 0:
        run.log_event(f"line {i}")
    if down.exists() and not logged:
        artifact.write_bytes(b"logged while the server was down " * 1000)
        run.log_artifact(artifact, kind="model")
        logged = True
        print("artifact logged", flush=True)
    i += 1
    time.sleep(0.002)
run.log_event(f"last {i}")
run.finish()
print(i, flush=True)
"""
)


def _shipped(client: flightlog.Client, run_id: str, metric: str = "i") -> int:
    """How many points of ``metric`` the server has for the run (none yet: 0)."""
    try:
        return len(client.metric_history(run_id, metric))
    except FlightlogError:
        return 0


def _artifacts(client: flightlog.Client, run_id: str) -> list[str]:
    """The paths of the run's artifacts on the server (a server still starting: none)."""
    try:
        return [a.path for a in client.artifacts(run_id)]
    except FlightlogError:
        return []


def test_server_down_mid_run_past_the_longest_backoff_every_point_and_line_exactly_once(
    tmp_path: Path, clean_env: Path, server_process: Callable[..., ServerProcess], monkeypatch: pytest.MonkeyPatch
) -> None:
    server = server_process("--auth")
    secret = cli(clean_env, "token", "create", "--role", "writer", "--home", str(server.home)).stdout.strip()
    url = server.start()
    env = child_env(clean_env, FLIGHTLOG_URL=url, FLIGHTLOG_TOKEN=secret, FLIGHTLOG_FLUSH_INTERVAL="0.2")
    down, stop = tmp_path / "down", tmp_path / "stop"
    writer = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(WRITER), str(tmp_path / "model.bin"), str(down), str(stop)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert writer.stdout is not None and writer.stderr is not None
    out, err = Lines(writer.stdout), Lines(writer.stderr)
    run_id = out.wait_for("").strip()
    monkeypatch.setenv("FLIGHTLOG_URL", url)
    monkeypatch.setenv("FLIGHTLOG_TOKEN", secret)
    client = flightlog.Client(home=tmp_path / "reader")
    wait_for(lambda: _shipped(client, run_id), "the run's first points on the server")
    server.stop(signal.SIGKILL)  # a crash: no goodbye
    down.touch()  # the writer logs an artifact while the server is down
    err.wait_for("cannot ship records")
    out.wait_for("artifact logged")
    time.sleep(OUTAGE)  # the outage itself (compressed with the backoff: see COMPRESS)
    server.start()  # same port, same store
    # what was logged during the outage reaches the server while the run goes on
    wait_for(lambda: "model.bin" in _artifacts(client, run_id), "the outage's artifact on the server")
    stop.touch()
    assert writer.wait(timeout=90) == 0, err.text
    points = int(out.text.strip().splitlines()[-1])
    assert "cannot ship records" in err.text  # the user was told, once
    assert err.text.count("cannot ship records") == 1

    info = client.run(run_id)
    assert info.status == "succeeded"
    history = client.metric_history(run_id, "i")
    assert history.steps.tolist() == list(range(points)), "every point once, in order"
    assert history.values.tolist() == [float(s) for s in range(points)]
    assert len(client.metric_history(run_id, "sq")) == points
    lines = [e.message for e in client.logs(run_id)]
    assert lines == [f"line {i}" for i in range(0, points, 25)] + [f"last {points}"], "every line once, in order"
    model = next(a for a in client.artifacts(run_id) if a.path == "model.bin")
    got = client.download_artifact(run_id, "model.bin", tmp_path / "got.bin")
    assert got.read_bytes() == (tmp_path / "model.bin").read_bytes() and model.size == got.stat().st_size
    client.close()
    assert server.stop() in (0, -signal.SIGTERM)  # graceful: uvicorn re-raises SIGTERM once drained


SPILLER = (
    COMPRESSED_BACKOFF
    + """
import sys, time, flightlog
import flightlog.sdk.writer as writer
from pathlib import Path
writer.MAX_PENDING_RECORDS = 30  # a long outage, compressed: memory holds 30 unshipped records
run = flightlog.init(project="outage", resources=False)
print(run.id, flush=True)
stop = Path(sys.argv[1])
i = 0
while not stop.exists():
    run.log({"i": float(i)}, step=i)
    if i % 10 == 0:
        run.log_event(f"line {i}")
    i += 1
    if i == 600:
        print("600 points logged", flush=True)  # with their lines, over 20 times what memory holds
    time.sleep(0.001)
run.finish()
print(i, flush=True)
"""
)


def test_an_outage_longer_than_memory_ships_from_the_journal_in_order(
    tmp_path: Path, clean_env: Path, server_process: Callable[..., ServerProcess], monkeypatch: pytest.MonkeyPatch
) -> None:
    server = server_process()
    url = server.start()
    server.stop()  # its port is ours; the server is down when the run starts
    env = child_env(clean_env, FLIGHTLOG_URL=url, FLIGHTLOG_FLUSH_INTERVAL="0.02")
    stop = tmp_path / "stop"
    # the run goes on until the server is back and has its first records (a writer that never
    # reached its server does not wait for it at finish: docs/server.md)
    writer = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(SPILLER), str(stop)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert writer.stdout is not None and writer.stderr is not None
    out, err = Lines(writer.stdout), Lines(writer.stderr)
    run_id = out.wait_for("").strip()
    out.wait_for("600 points logged")  # dozens of flushes, far more records than memory holds
    server.start()
    monkeypatch.setenv("FLIGHTLOG_URL", url)
    client = flightlog.Client(home=tmp_path / "reader")
    wait_for(lambda: _shipped(client, run_id), "the run's first points on the server that came back")
    stop.touch()
    assert writer.wait(timeout=90) == 0, err.text
    points = int(out.text.strip().splitlines()[-1])
    assert client.metric_history(run_id, "i").steps.tolist() == list(range(points))
    assert [e.message for e in client.logs(run_id)] == [f"line {i}" for i in range(0, points, 10)]
    assert client.run(run_id).status == "succeeded"
    assert not list((clean_env / "journal").glob("*/*.journal")), "fully shipped: the journal is gone"
    client.close()
