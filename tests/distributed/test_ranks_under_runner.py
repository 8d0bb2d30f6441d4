"""The ranks of a plain torchrun script (no ``flightlog.init()``) under ``flightlog run``: the
runner speaks for each rank it sees its launcher start (runner/ranks.py), so ``flightlog ranks``,
``logs --rank``, ``runs show`` and the ranks' API work as they do for ranks with the SDK; and a
rank with the SDK under the runner is still one rank, not two."""

from __future__ import annotations

import json
import re
import socket
import subprocess
from pathlib import Path
from typing import Any

import pytest

import flightlog
from tests.distributed.test_hangs import _STARTED, EMBEDDED, FLIGHTLOG, JOB, TORCHRUN, Job, _start, _stop
from tests.helpers import child_env

pytestmark = pytest.mark.skipif(not TORCHRUN.exists(), reason="torchrun")


@pytest.fixture(autouse=True)
def _no_job_left_behind() -> Any:
    yield
    while _STARTED:
        _stop(_STARTED.pop())


def _cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(FLIGHTLOG), *args], env=child_env(home), capture_output=True, text=True, timeout=60)


def _ranks(home: Path, run_id: str) -> list[dict[str, Any]]:
    done = _cli(home, "ranks", run_id, "--format", "json")
    assert done.returncode == 0, done.stderr
    return list(json.loads(done.stdout))


@EMBEDDED
def test_a_plain_script_s_ranks_are_listed_with_their_ends_and_first_errors(home: Path, tmp_path: Path) -> None:
    job = Job(home, tmp_path, "raises", ranks=3, GROUP_TIMEOUT="60")
    code, err = job.finish()
    assert code == 1, err
    run_id = job.run_id()
    ranks = {r["rank"]: r for r in _ranks(home, run_id)}
    assert sorted(ranks) == [0, 1, 2]
    assert all(r["world_size"] == 3 and r["launcher"] == "torchrun" and r["pid"] for r in ranks.values())
    one = ranks[1]
    assert one["state"] == "failed" and one["exit_code"] == 1, one
    assert one["first_error"]["message"] == "ValueError: shard 7 has 0 rows (rank 1)"
    assert one["writer"].startswith("observed-") and one["last_heartbeat"] is not None
    # the others failed waiting for it, or torchrun stopped them (SIGTERM): never "running" after the end
    assert all(ranks[r]["state"] in ("failed", "killed") for r in (0, 2)), ranks
    text = _cli(home, "ranks", run_id).stdout
    assert "ValueError: shard 7 has 0 rows (rank 1)" in text
    # the rank's own output, by rank
    logs = _cli(home, "logs", run_id, "--rank", "1")
    assert logs.returncode == 0 and "ValueError: shard 7 has 0 rows (rank 1)" in logs.stdout, logs.stderr
    # runs show has the ranks at a glance, the run's failure is the culprit's
    show = " ".join(_cli(home, "runs", "show", run_id).stdout.split())
    # the culprit leads; rank 0 may fail too (its collective gave up) or be stopped, like rank 2
    assert "ranks 3 (torchrun): rank 1 failed (exit 1), the culprit; " in show, show
    assert "looks like" in err and "on rank 1" in err
    doc = json.loads(_cli(home, "runs", "show", run_id, "--format", "json").stdout)
    assert [r["rank"] for r in doc["ranks"]] == [0, 1, 2]
    assert doc["failure"]["culprit"]["rank"] == 1
    assert doc["tags"]["distributed"] == "torchrun"


@EMBEDDED
def test_a_healthy_plain_script_s_ranks_all_succeeded(home: Path, tmp_path: Path) -> None:
    job = Job(home, tmp_path, "healthy", STEPS="4")
    code, err = job.finish()
    assert code == 0, err
    ranks = _ranks(home, job.run_id())
    assert [(r["rank"], r["state"], r["exit_code"]) for r in ranks] == [(0, "succeeded", 0), (1, "succeeded", 0)]
    assert all(r["first_error"] is None for r in ranks)
    show = " ".join(_cli(home, "runs", "show", job.run_id()).stdout.split())
    assert "ranks 2 (torchrun): all succeeded" in show


@EMBEDDED
def test_a_stuck_plain_rank_reads_hung_while_it_hangs_and_its_stacks_are_one_command_away(
    home: Path, tmp_path: Path
) -> None:
    job = Job(home, tmp_path, "stuck", GROUP_TIMEOUT="300")
    try:
        run_id = job.run_id()

        def in_read_shard() -> bool:
            latest = job.evidence("stacks", rank=1)[-1:]
            return bool(latest) and "read_shard" in json.dumps(latest[0]["data"]["threads"])

        job.wait_for("rank 1's stacks in read_shard", in_read_shard)
        # its own stall follows (the stacks may have come first, asked for when rank 0 stalled)
        states = job.wait_for(
            "rank 1 reads hung",
            lambda: (found := {r.rank: r.state for r in job.client.ranks(run_id)}).get(1) == "hung" and found,
        )
        assert states[0] in ("running", "hung"), states
        stacks = _cli(home, "ranks", run_id, "--stacks")
        assert "in read_shard" in stacks.stdout and "rank 1" in stacks.stdout, stacks.stdout
        doc = json.loads(_cli(home, "ranks", run_id, "--stacks", "--format", "json").stdout)
        assert doc[1]["hang_evidence"]["stall"]["state"] == "stalled"
    finally:
        (job.signals / "release").write_text("go")
    code, err = job.finish()
    assert code == 0, err
    assert {r["state"] for r in _ranks(home, job.run_id())} == {"succeeded"}


@EMBEDDED
def test_a_rank_with_the_sdk_under_flightlog_run_is_one_rank_with_its_steps(home: Path, tmp_path: Path) -> None:
    job = Job(home, tmp_path, "raises", USE_SDK="1", GROUP_TIMEOUT="60")
    code, err = job.finish()
    assert code != 0
    ranks = _ranks(home, job.run_id())
    assert [r["rank"] for r in ranks] == [0, 1], ranks  # the SDK's row and the runner's are one
    one = ranks[1]
    assert not one["writer"].startswith("observed-")  # the rank's own account first
    assert one["last_step"] == 2 and one["state"] == "failed"
    assert "ValueError: shard 7 has 0 rows (rank 1)" in one["first_error"]["message"]
    logs = job.client.logs(job.run_id(), component="flightlog.ranks")
    assert not [e for e in logs if "claimed twice" in e.message]  # no false "two jobs" notice


@EMBEDDED
def test_a_rank_that_only_waited_for_another_node_s_rank_is_no_cause(home: Path, tmp_path: Path) -> None:
    """Two nodes on this host (torchrun's static rendezvous), ``flightlog run`` around node 0
    only (one host's view, docs/distributed.md). Node 1's rank 1 exits; rank 0 fails in its
    all_reduce ("Connection reset by peer … a remote worker"). Nothing here can name the culprit,
    and rank 0's message is a victim's: a hint at most, never "looks like service_unavailable"
    at 0.89, a service that refused (issue 28)."""
    signals = tmp_path / "signals"
    signals.mkdir()
    env = child_env(home, SCENARIO="exit", SIGNALS=str(signals), GROUP_TIMEOUT="60")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    nodes = ["--nnodes", "2", "--nproc_per_node", "1", "--master_addr", "127.0.0.1", "--master_port", str(port)]
    other = _start([str(TORCHRUN), *nodes, "--node_rank", "1", str(JOB)], env, tmp_path)
    command = [str(FLIGHTLOG), "run", "--project", "dist", "--", str(TORCHRUN), *nodes, "--node_rank", "0", str(JOB)]
    done = subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    other.communicate(timeout=120)
    assert done.returncode != 0, done.stderr
    assert "no clear cause, a hint" in done.stderr and "looks like" not in done.stderr, done.stderr
    run_id = re.findall(r"run ([0-9a-f]{32})", done.stderr)[-1]
    report = flightlog.Client(home=home).diagnose(run_id, auto_baseline=False)
    assert not [f for f in report["findings"] if f["confidence"] >= 0.5], report
    waited = [f for f in report["findings"] if f["category"] == "service_unavailable"]
    assert all("what a rank says when it only waited for another one" in f["summary"] for f in waited), waited
