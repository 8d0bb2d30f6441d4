"""A rank that vanished without its end (SIGKILL) after its peers ended: the next Client on its
host (any `flightlog` command) or `flightlog sync` ships its journal, marks it lost and so ends
the run of peer ranks. The reconciliation marker notices the death of a rank it saw alive."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import flightlog
from flightlog.journal import list_journals
from tests.helpers import child_env, cli, cli_json, plugin_site

pytestmark = pytest.mark.embedded_only("journals are settled on the host that wrote them")

RANK = """
import os, sys, time
from pathlib import Path
import flightlog

run = flightlog.init(project="dist", resources=False)
rank = int(os.environ["RANK"])
for step in range(3):
    run.log({"loss": 1.0 + rank}, step=step)
run.log_event(f"rank {rank} ready")
if rank == 1:
    run._w.flush()  # everything up to now reaches the store, as the shipper would within 0.5 s
    Path(os.environ["READY"]).write_text(run.id)
    while True:
        time.sleep(0.05)
"""


def _job(home: Path, tmp_path: Path) -> tuple[subprocess.Popen[str], str]:
    ready = tmp_path / "ready"
    env = {"WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29999"}
    # both ranks are children of this test process: one launching process, one job key
    stuck = subprocess.Popen(
        [sys.executable, "-c", RANK], env=child_env(home, RANK="1", READY=str(ready), **env), text=True
    )
    deadline = time.monotonic() + 60
    while not ready.exists():
        assert stuck.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    done = subprocess.run([sys.executable, "-c", RANK], env=child_env(home, RANK="0", **env), timeout=60)
    assert done.returncode == 0
    return stuck, ready.read_text()


def test_the_next_command_on_the_host_settles_a_killed_rank(home: Path, tmp_path: Path) -> None:
    stuck, run_id = _job(home, tmp_path)
    try:
        # a command while rank 1 lives: the run is running, rank 1 is (and the marker remembers it)
        doc = cli_json(home, "ranks", run_id)
        assert [(r["rank"], r["state"]) for r in doc] == [(0, "succeeded"), (1, "running")]
        assert cli_json(home, "runs", "ls")[0]["status"] == "running"
    finally:
        os.kill(stuck.pid, signal.SIGKILL)
        stuck.wait(timeout=30)
    runs = cli_json(home, "runs", "ls")  # its reconciliation sees the rank's process gone
    assert (runs[0]["id"], runs[0]["status"], runs[0]["end_reason"]) == (run_id, "crashed", "lost")
    ranks = flightlog.Client().ranks(run_id)
    assert [(r.rank, r.state, r.last_step) for r in ranks] == [(0, "succeeded", 2), (1, "lost", 2)]
    assert list_journals(home) == []  # shipped and removed
    said = cli(home, "logs", run_id, "--component", "flightlog.ranks").stdout
    assert "rank 1" in said and "vanished without recording its end" in said
    assert "[rank 1] INFO     rank 1 ready" in cli(home, "logs", run_id).stdout


def test_flightlog_sync_settles_a_killed_rank(home: Path, tmp_path: Path) -> None:
    stuck, run_id = _job(home, tmp_path)
    os.kill(stuck.pid, signal.SIGKILL)
    stuck.wait(timeout=30)
    report = cli_json(home, "sync")
    assert report["removed"] >= 1
    client = flightlog.Client(reconcile=False)
    assert client.run(run_id).status == "crashed"
    assert [r.state for r in client.ranks(run_id)] == ["succeeded", "lost"]
    cli(home, "sync")  # again: nothing changes, nothing is said twice
    assert len(client.logs(run_id, component="flightlog.ranks")) == 1


# ── a launcher's SIGTERM that comes while the surviving rank records its end ─────────────────
SURVIVOR = """
import os, time
from pathlib import Path
import flightlog

run = flightlog.init(project="dist", resources=False)
run.log({"loss": 1.0}, step=0)
Path(os.environ["STARTED"]).write_text(run.id)
while not Path(os.environ["GO"]).exists():  # rank 1 is killed meanwhile
    time.sleep(0.05)
raise RuntimeError("Connection closed by peer")  # what gloo raises on the rank that survived
"""
#: a feature whose run-end hook stands for torchrun: it stops the job's other ranks with SIGTERM as
#: soon as one rank is gone, here exactly while rank 0 records its end (its run-end hooks run there)
STOPPER = """
import os, signal
from flightlog.plugins import hookimpl

@hookimpl
def flightlog_run_end(run_id, status):
    os.kill(os.getpid(), signal.SIGTERM)
"""


def test_a_sigterm_while_the_surviving_rank_records_its_end_waits_for_it(home: Path, tmp_path: Path) -> None:
    """torchrun SIGTERMs the other ranks once one is gone, often while the rank that saw the
    failure first is recording its end: the handler used to kill it halfway, so neither its end
    nor the loss of the killed rank it was settling reached the store, and the job's run read
    running for ever (tests/distributed, SDK alone, a rank SIGKILLed). The end is recorded, the
    killed rank settled, and then the process dies of the SIGTERM, as it asked."""
    ready, started, go = tmp_path / "ready", tmp_path / "started", tmp_path / "go"
    env = {"WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29998"}
    # both ranks are children of this test process: one launching process, one job key
    killed = subprocess.Popen([sys.executable, "-c", RANK], env=child_env(home, RANK="1", READY=str(ready), **env))
    survivor_env = child_env(home, RANK="0", STARTED=str(started), GO=str(go), **env)
    survivor_env["PYTHONPATH"] = os.pathsep.join(
        [str(plugin_site(tmp_path, "stopper", STOPPER)), survivor_env.get("PYTHONPATH", "")]
    )
    survivor = subprocess.Popen(
        [sys.executable, "-c", SURVIVOR], env=survivor_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 60
        while not (ready.exists() and started.exists()):
            assert killed.poll() is None and survivor.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        run_id = ready.read_text()
        assert started.read_text() == run_id
    finally:
        os.kill(killed.pid, signal.SIGKILL)
        killed.wait(timeout=30)
    go.write_text("go")
    _, err = survivor.communicate(timeout=60)
    assert survivor.returncode == -signal.SIGTERM, err  # it still dies of the SIGTERM, after its end
    client = flightlog.Client(reconcile=False)  # what the ranks themselves recorded, nothing settled here
    run = client.run(run_id)
    assert (run.status, (run.failure or {}).get("rank")) == ("failed", 0)  # it read running
    assert [(r.rank, r.state) for r in client.ranks(run_id)] == [(0, "failed"), (1, "lost")]
    assert list_journals(home) == []  # both journals shipped and removed
