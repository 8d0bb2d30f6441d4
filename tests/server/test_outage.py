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
from tests.helpers import child_env, cli
from tests.server.conftest import ServerProcess

WRITER = """
import sys, time, flightlog
from pathlib import Path
run = flightlog.init(project="outage", name="through-a-restart", resources=False)
print(run.id, flush=True)
artifact = Path(sys.argv[1])
t0 = time.time()
i = 0
while time.time() - t0 < float(sys.argv[2]):
    run.log({"i": float(i), "sq": float(i * i)}, step=i)
    if i % 25 == 0:
        run.log_event(f"line {i}")
    if i == 2500:
        artifact.write_bytes(b"logged while the server was down " * 1000)
        run.log_artifact(artifact, kind="model")
    i += 1
    time.sleep(0.002)
run.log_event(f"last {i}")
run.finish()
print(i, flush=True)
"""


def test_server_down_10s_mid_run_every_point_and_line_exactly_once(
    tmp_path: Path, clean_env: Path, server_process: Callable[..., ServerProcess], monkeypatch: pytest.MonkeyPatch
) -> None:
    server = server_process("--auth")
    secret = cli(clean_env, "token", "create", "--role", "writer", "--home", str(server.home)).stdout.strip()
    url = server.start()
    env = child_env(clean_env, FLIGHTLOG_URL=url, FLIGHTLOG_TOKEN=secret, FLIGHTLOG_FLUSH_INTERVAL="0.2")
    writer = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(WRITER), str(tmp_path / "model.bin"), "16"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert writer.stdout is not None
    run_id = writer.stdout.readline().strip()
    time.sleep(3)
    server.stop(signal.SIGKILL)  # a crash: no goodbye
    time.sleep(10)
    server.start()  # same port, same store
    out, err = writer.communicate(timeout=90)
    assert writer.returncode == 0, err
    points = int(out.strip().splitlines()[-1])
    assert "cannot ship records" in err  # the user was told, once
    assert err.count("cannot ship records") == 1

    monkeypatch.setenv("FLIGHTLOG_URL", url)
    monkeypatch.setenv("FLIGHTLOG_TOKEN", secret)
    client = flightlog.Client(home=tmp_path / "reader")
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


SPILLER = """
import sys, time, flightlog
import flightlog.sdk.writer as writer
writer.MAX_PENDING_RECORDS = 30  # a long outage, compressed: memory holds 30 unshipped records
run = flightlog.init(project="outage", resources=False)
print(run.id, flush=True)
t0, i = time.time(), 0
while time.time() - t0 < float(sys.argv[1]):
    run.log({"i": float(i)}, step=i)
    if i % 10 == 0:
        run.log_event(f"line {i}")
    i += 1
    time.sleep(0.001)
run.finish()
print(i, flush=True)
"""


def test_an_outage_longer_than_memory_ships_from_the_journal_in_order(
    tmp_path: Path, clean_env: Path, server_process: Callable[..., ServerProcess], monkeypatch: pytest.MonkeyPatch
) -> None:
    server = server_process()
    url = server.start()
    server.stop()  # its port is ours; the server is down when the run starts
    env = child_env(clean_env, FLIGHTLOG_URL=url, FLIGHTLOG_FLUSH_INTERVAL="0.02")
    # the run lasts long enough for the server to be back before it ends (a writer that never
    # reached its server does not wait for it at finish: docs/server.md)
    writer = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(SPILLER), "12"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert writer.stdout is not None
    run_id = writer.stdout.readline().strip()
    time.sleep(3.5)  # ~170 flushes, far more records than memory holds
    server.start()
    out, err = writer.communicate(timeout=90)
    assert writer.returncode == 0, err
    points = int(out.strip().splitlines()[-1])
    monkeypatch.setenv("FLIGHTLOG_URL", url)
    client = flightlog.Client(home=tmp_path / "reader")
    assert client.metric_history(run_id, "i").steps.tolist() == list(range(points))
    assert [e.message for e in client.logs(run_id)] == [f"line {i}" for i in range(0, points, 10)]
    assert client.run(run_id).status == "succeeded"
    assert not list((clean_env / "journal").glob("*/*.journal")), "fully shipped: the journal is gone"
    client.close()
