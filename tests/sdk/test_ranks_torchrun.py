"""Ranks of one run with real `torchrun` jobs (gloo on CPU): `flightlog.init()` in each rank,
no `flightlog run`, no id — the ranks meet in one run, each with its identity, heartbeat, last
step, logs, metrics and end; through the embedded store, a real server and PostgreSQL. Also a
rank that raises, a rank that leaves with os._exit, a rank killed with SIGKILL from outside,
`flightlog run -- torchrun`, and two jobs that share a rendezvous id."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import flightlog
from tests.helpers import child_env, cli, cli_json

# torch is not imported here: only the jobs' ranks run it
pytestmark = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed")

TORCHRUN = str(Path(sys.executable).with_name("torchrun"))
SCRIPT = """
import datetime, os, sys, time
from pathlib import Path
import flightlog

run = flightlog.init(project="dist", name="ddp")
import torch
import torch.distributed as dist

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
rank = dist.get_rank()
print(f"hello from rank {rank} in run {run.id}", flush=True)
for step in range(3):
    x = torch.ones(1) * (rank + 1)
    dist.all_reduce(x)
    run.log({"loss": 1.0 / (step + 1) + rank, "sum": float(x.item())}, step=step)
mode = os.environ.get("MODE", "")
hold = os.environ.get("HOLD")
if hold:  # wait for the test's signal, alive (a file, not a sleep)
    ready = os.environ["READY"] + f".{rank}"
    Path(ready + ".tmp").write_text(run.id)  # written whole, then renamed: never read half-written
    os.replace(ready + ".tmp", ready)
    while not Path(hold).exists():
        time.sleep(0.05)
if rank == 1 and mode == "raise":
    raise RuntimeError("rank 1 broke")
if rank == 1 and mode == "exit":
    os._exit(3)
if rank == 1 and mode == "kill":
    pending = Path(os.environ["PIDFILE"] + ".tmp")  # written whole, then renamed: never read half-written
    pending.write_text(str(os.getpid()))
    os.replace(pending, os.environ["PIDFILE"])
    while True:
        time.sleep(0.05)
dist.destroy_process_group()
"""


def torchrun(
    home: Path, tmp_path: Path, nproc: int, *args: str, env: dict[str, str] | None = None, wait: bool = True
) -> Any:
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    cmd = [TORCHRUN, "--nproc_per_node", str(nproc), *args, str(script)]
    environ = child_env(home, FLIGHTLOG_CONSOLE="auto", FLIGHTLOG_PROJECT="dist", **(env or {}))
    if not wait:  # a session of its own: the whole job (torchrun and its ranks) can be killed at once
        return subprocess.Popen(
            cmd, env=environ, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
        )
    return subprocess.run(cmd, env=environ, capture_output=True, text=True, timeout=180, cwd=tmp_path)


def only_run(client: flightlog.Client) -> flightlog.RunInfo:
    runs = client.runs(project="dist")
    assert len(runs) == 1, [(r.id, r.status) for r in runs]
    return runs[0]


def test_each_rank_records_into_one_run(home: Path, tmp_path: Path) -> None:
    nproc = 3  # more than two: a middle rank, and ranks that are neither the first nor the last
    proc = torchrun(home, tmp_path, nproc)
    assert proc.returncode == 0, proc.stderr[-3000:]
    client = flightlog.Client()
    run = only_run(client)
    assert (run.status, run.exit_code, run.tags.get("distributed")) == ("succeeded", 0, "torchrun")
    assert proc.stderr.count(f"run {run.id[:12]} in project dist") == 1  # rank 0 says where, once
    ranks = client.ranks(run)
    assert [(r.rank, r.world_size, r.local_rank, r.node_rank, r.restart, r.state) for r in ranks] == [
        (i, nproc, i, 0, 0, "succeeded") for i in range(nproc)
    ]
    assert len({r.pid for r in ranks}) == nproc and all(r.exit_code == 0 for r in ranks)
    assert all(r.last_step == 2 and r.last_heartbeat is not None and r.first_error is None for r in ranks)
    assert len({r.job_key for r in ranks}) == 1 and ranks[0].launcher == "torchrun"
    # per rank: the console output, metrics (rank 0's by default), resources
    for i in range(nproc):
        lines = [e.message for e in client.logs(run, rank=i, grep="hello")]
        assert lines == [f"hello from rank {i} in run {run.id}"]
        assert client.metric_history(run, "loss", rank=i).values.tolist() == pytest.approx(
            [1.0 + i, 0.5 + i, 1 / 3 + i]
        )
    assert client.metric_history(run, "loss").values.tolist() == pytest.approx([1.0, 0.5, 1 / 3])
    assert client.resources(run, rank=nproc - 1)  # the rank's own process was sampled
    # the CLI: the table, JSON, and logs of one rank with the rank shown when there are several
    table = cli(home, "ranks", run.id[:8]).stdout
    assert "RANK" in table and f"{nproc - 1}/{nproc}" in table and "succeeded" in table
    doc = cli_json(home, "ranks", run.id)
    assert [d["rank"] for d in doc] == list(range(nproc)) and doc[0]["state"] == "succeeded"
    assert cli(home, "logs", run.id, "--rank", "1", "--grep", "hello").stdout == f"hello from rank 1 in run {run.id}\n"
    assert f"[rank 1] hello from rank 1 in run {run.id}" in cli(home, "logs", run.id).stdout


def test_a_rank_that_raises_fails_the_run_with_its_error(home: Path, tmp_path: Path) -> None:
    proc = torchrun(home, tmp_path, 3, env={"MODE": "raise"})
    assert proc.returncode != 0
    client = flightlog.Client()
    run = only_run(client)
    assert (run.status, run.exit_code) == ("failed", 1)
    assert run.failure is not None and run.failure["rank"] == 1 and run.failure["message"] == "rank 1 broke"
    states = {r.rank: r for r in client.ranks(run)}
    assert (states[1].state, states[1].exit_code) == ("failed", 1)
    assert states[1].first_error == {
        "message": "RuntimeError: rank 1 broke",
        "time": pytest.approx(states[1].ended, abs=1),
    }
    assert {states[0].state, states[2].state} <= {"succeeded", "killed"}  # done, or stopped by the agent
    assert "RuntimeError: rank 1 broke" in client.logs(run, rank=1, level="error")[0].message


@pytest.mark.embedded_only("the lost rank is settled from this host's journals; the store's side has its own tests")
def test_a_rank_that_leaves_with_os_exit_is_lost(home: Path, tmp_path: Path) -> None:
    proc = torchrun(home, tmp_path, 2, env={"MODE": "exit"})
    assert proc.returncode != 0
    client = flightlog.Client()  # settles this host's dead ranks, if the surviving rank did not
    run = only_run(client)
    assert (run.status, run.end_reason) == ("crashed", "lost")
    states = {r.rank: r for r in client.ranks(run)}
    # what it had not flushed when it left is gone with it (os._exit runs no exit hook)
    assert states[1].state == "lost" and states[1].exit_code is None and states[1].last_heartbeat is not None
    assert states[0].state in ("succeeded", "killed")
    assert any("rank 1" in e.message and "vanished" in e.message for e in client.logs(run, component="flightlog.ranks"))


@pytest.mark.embedded_only("a SIGKILL from outside, settled from this host's journals")
def test_a_rank_killed_from_outside_is_lost(home: Path, tmp_path: Path) -> None:
    pidfile = tmp_path / "rank1.pid"
    job = torchrun(home, tmp_path, 2, env={"MODE": "kill", "PIDFILE": str(pidfile)}, wait=False)
    try:
        deadline = time.monotonic() + 120
        while not pidfile.exists() and job.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert pidfile.exists(), job.communicate()[1][-3000:]
        os.kill(int(pidfile.read_text()), signal.SIGKILL)
        job.communicate(timeout=120)
    finally:
        if job.poll() is None:  # the test failed before the job ended: take its ranks down with it
            os.killpg(job.pid, signal.SIGKILL)
            job.communicate()
    client = flightlog.Client()
    run = only_run(client)
    states = {r.rank: r.state for r in client.ranks(run)}
    assert states[1] == "lost" and states[0] in ("succeeded", "killed")
    assert (run.status, run.end_reason) == ("crashed", "lost")


def test_under_flightlog_run_the_ranks_attach_to_the_runners_run(home: Path, tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    proc = cli(home, "run", "--project", "dist", "--", TORCHRUN, "--nproc_per_node", "2", str(script), check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    client = flightlog.Client()
    run = only_run(client)  # the runner's run: the ranks made none of their own
    assert run.status == "succeeded"
    ranks = client.ranks(run)
    assert [(r.rank, r.world_size, r.state, r.last_step) for r in ranks] == [
        (0, 2, "succeeded", 2),
        (1, 2, "succeeded", 2),
    ]
    assert client.metric_history(run, "loss", rank=1).values.tolist() == pytest.approx([2.0, 1.5, 4 / 3])


@pytest.mark.embedded_only("two concurrent jobs through one store; the store's own checks run on every store")
def test_two_jobs_sharing_a_rendezvous_id_get_two_runs(home: Path, tmp_path: Path) -> None:
    rdzv = ["--rdzv-backend", "c10d", "--rdzv-endpoint", "localhost:0", "--rdzv-id", "shared-job-42"]
    first_dir, second_dir = tmp_path / "a", tmp_path / "b"
    first_dir.mkdir()
    second_dir.mkdir()
    release = tmp_path / "release"
    ready = tmp_path / "ready"
    first = torchrun(home, first_dir, 2, *rdzv, env={"HOLD": str(release), "READY": str(ready)}, wait=False)
    try:
        deadline = time.monotonic() + 120
        while not all((tmp_path / f"ready.{i}").exists() for i in (0, 1)) and first.poll() is None:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        first_run = (tmp_path / "ready.0").read_text()
        while len(flightlog.Client(reconcile=False).ranks(first_run)) < 2:  # its ranks are in the store
            assert time.monotonic() < deadline
            time.sleep(0.05)
        second = torchrun(home, second_dir, 2, *rdzv)  # alive rank 0 of restart 0 in the first: another job
        assert second.returncode == 0, second.stderr[-3000:]
    finally:
        release.write_text("go")
        out, err = first.communicate(timeout=120)
    assert first.returncode == 0, err[-3000:]
    client = flightlog.Client()
    runs = {r.id: r for r in client.runs(project="dist")}
    assert len(runs) == 2 and first_run in runs
    second_run = next(rid for rid in runs if rid != first_run)
    assert [(r.rank, r.state) for r in client.ranks(first_run)] == [(0, "succeeded"), (1, "succeeded")]
    assert [(r.rank, r.state) for r in client.ranks(second_run)] == [(0, "succeeded"), (1, "succeeded")]
    assert len({r.pid for r in client.ranks(first_run)} | {r.pid for r in client.ranks(second_run)}) == 4
    assert f"records into run {second_run[:12]}, not into the run its job key names" in second.stderr
    assert "torchrun:shared-job-42" in second.stderr
    said_first = [e.message for e in client.logs(first_run, component="flightlog.ranks")]
    said_second = [e.message for e in client.logs(second_run, component="flightlog.ranks")]
    assert len(said_first) == 1 and second_run in said_first[0]  # once, however many ranks moved
    assert len(said_second) == 1 and first_run in said_second[0] and "already has rank" in said_second[0]
    # nothing of the second job is in the first run
    assert not client.logs(first_run, grep=f"in run {second_run}")
    assert json.loads(cli(home, "ranks", second_run, "--format", "json").stdout)[1]["rank"] == 1
