"""Ranks as peers without torch: processes given a launcher's variables (as `torchrun` or
`srun` would) meet in one run; a second job with the same job key gets its own run; a job named
by FLIGHTLOG_RUN_ID or init(id=...) is joined; offline ranks meet after `flightlog sync`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import flightlog
from tests.helpers import child_env, cli

RANK = """
import os, flightlog
run = flightlog.init(project="peers", **({"id": os.environ["RUN_ID"]} if os.environ.get("RUN_ID") else {}))
run.log({"loss": 1.0 + int(os.environ["RANK"])}, step=0)
print(run.id)
if os.environ.get("FAIL") == os.environ["RANK"]:
    raise ValueError(f"bad shard on rank {os.environ['RANK']}")
"""
STATIC = {"WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29400"}


def job(home: Path, n: int = 2, **env: str) -> list[subprocess.CompletedProcess[str]]:
    """One job of ``n`` ranks, all children of this process (one launching process, as torchrun's)."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", RANK],
            env=child_env(home, RANK=str(r), LOCAL_RANK=str(r), **{**STATIC, "WORLD_SIZE": str(n), **env}),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for r in range(n)
    ]
    out = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=120)
        out.append(subprocess.CompletedProcess(p.args, p.returncode, stdout, stderr))
    return out


def test_one_job_one_run_and_the_next_job_its_own(home: Path) -> None:
    first = job(home)
    assert all(p.returncode == 0 for p in first), [p.stderr for p in first]
    run_ids = {p.stdout.strip() for p in first}
    assert len(run_ids) == 1
    first_run = run_ids.pop()
    client = flightlog.Client()
    assert [(r.rank, r.state) for r in client.ranks(first_run)] == [(0, "succeeded"), (1, "succeeded")]
    assert client.run(first_run).status == "succeeded"
    # the same script again from the same launching process: the same job key, another job
    second = job(home)
    assert all(p.returncode == 0 for p in second)
    second_runs = {p.stdout.strip() for p in second}
    assert len(second_runs) == 1 and first_run not in second_runs
    second_run = second_runs.pop()
    assert all(f"records into run {second_run[:12]}" in p.stderr for p in second)
    assert [(r.rank, r.state) for r in client.ranks(second_run)] == [(0, "succeeded"), (1, "succeeded")]
    assert len(client.ranks(first_run, all_attempts=True)) == 2  # nothing of the second job in the first
    assert [second_run in e.message for e in client.logs(first_run, component="flightlog.ranks")] == [True]


def test_a_failing_rank_fails_the_job(home: Path) -> None:
    procs = job(home, 3, FAIL="2")
    assert [p.returncode for p in procs] == [0, 0, 1]
    run_id = procs[0].stdout.strip()
    client = flightlog.Client()
    run = client.run(run_id)
    assert (run.status, run.exit_code, (run.failure or {}).get("rank")) == ("failed", 1, 2)
    ranks = client.ranks(run_id)
    assert [r.state for r in ranks] == ["succeeded", "succeeded", "failed"]
    assert ranks[2].first_error == {"message": "ValueError: bad shard on rank 2", "time": ranks[2].first_error["time"]}


def test_a_run_named_for_the_job_is_joined_by_every_rank(home: Path) -> None:
    named = job(home, FLIGHTLOG_RUN_ID="nightly-42")
    assert [p.stdout.strip() for p in named] == ["nightly-42", "nightly-42"]
    client = flightlog.Client()
    assert client.run("nightly-42").status == "succeeded"
    assert [r.rank for r in client.ranks("nightly-42")] == [0, 1]
    by_id = job(home, RUN_ID="by-id-7")  # init(id=...) in every rank: no Conflict, one run
    assert [p.returncode for p in by_id] == [0, 0] and {p.stdout.strip() for p in by_id} == {"by-id-7"}
    # the same name for a second job: joined as asked, said on stderr and on the run
    again = job(home, FLIGHTLOG_RUN_ID="nightly-42")
    assert all("looks like another job's" in p.stderr for p in again)
    said = [e.message for e in client.logs("nightly-42", component="flightlog.ranks")]
    assert sum("was claimed twice" in m for m in said) == 2


def test_offline_ranks_meet_after_sync(home: Path) -> None:
    procs = job(home, FLIGHTLOG_MODE="offline")
    assert {p.returncode for p in procs} == {0}
    run_id = procs[0].stdout.strip()
    assert procs[1].stdout.strip() == run_id  # the key, without asking the store
    cli(home, "sync")
    client = flightlog.Client()
    assert client.run(run_id).status == "succeeded"
    assert [r.rank for r in client.ranks(run_id)] == [0, 1]
