"""`flightlog run -- torchrun …` with real ranks on gloo: the ranks' lines are theirs, a worker's
error is the failure (never the launcher's ``ChildFailedError``), the launcher's summary is
evidence of each rank's end and never metrics."""

from __future__ import annotations

import json
import shutil
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import flightlog
from tests.helpers import cli

TORCHRUN = Path(sys.executable).with_name("torchrun")
pytestmark = pytest.mark.skipif(not TORCHRUN.exists() and shutil.which("torchrun") is None, reason="torchrun")

RANK_RAISES = """
import datetime
import torch
import torch.distributed as dist
from torch.distributed.elastic.multiprocessing.errors import record

def load_batch(rank, step):
    if rank == 1 and step == 2:
        raise ValueError(f"shard 7 has 0 rows (rank {rank})")
    return torch.ones(4)

@record
def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank = dist.get_rank()
    for step in range(4):
        x = load_batch(rank, step)
        dist.all_reduce(x)
        print(f"step={step} loss={1.0 / (step + 1):.4f}", flush=True)
    dist.destroy_process_group()

if __name__ == "__main__":
    main()
"""


def torchrun_under_flightlog(home: Path, tmp_path: Path, script: str, *args: str, **kw: Any) -> Any:
    """`flightlog run --project t -- torchrun --nproc_per_node 2 --standalone train.py ARGS`."""
    path = tmp_path / "train.py"
    path.write_text(textwrap.dedent(script))
    command = [str(TORCHRUN), "--nproc_per_node", "2", "--standalone", str(path), *args]
    return cli(home, "run", "--project", "t", "--", *command, **kw)


def test_a_worker_s_error_is_the_failure_and_each_rank_s_lines_are_its_own(home: Path, tmp_path: Path) -> None:
    proc = torchrun_under_flightlog(home, tmp_path, RANK_RAISES, check=False, timeout=180)
    assert proc.returncode == 1, proc.stderr
    client = flightlog.Client(home=home)
    run = client.runs(project="t", limit=1)[0]
    failure = run.failure or {}
    # the worker's exception, not torchrun's ChildFailedError
    assert failure.get("exception") == "ValueError", failure
    assert failure.get("rank") == 1
    assert {r["rank"] for r in failure.get("ranks", [])} == {0, 1}
    (exits,) = client.evidence(run.id, kind="launcher_exits")
    data = exits["data"]
    assert data["launcher"] == "torchrun" and data["first_error_rank"] == 1
    by_rank = {r["rank"]: r for r in data["ranks"]}
    assert by_rank[0]["victim"] is True and by_rank[1]["victim"] is False
    assert by_rank[1]["error"] == "ValueError: shard 7 has 0 rows (rank 1)"
    # each rank's traceback is one event carrying its rank, stored without the prefix
    lines = cli(home, "logs", run.id, "--level", "error", "--format", "json").stdout.splitlines()
    errors = [e for e in map(json.loads, lines) if e.get("rank") is not None]
    assert {e["rank"] for e in errors} == {0, 1}
    assert all(e["message"].startswith("Traceback (most recent call last):") for e in errors)
    # the summary's "exitcode : 1 (pid: …)", "rank : 0 (local_rank: 0)" are no metrics
    names = set(client.metrics(run.id))
    assert names == {"loss"}, names


RANK_SPEAKS_LATE = """
import os, sys, time
time.sleep(0.5)  # the rank's interpreter and imports
with open(os.path.join(sys.argv[1], f"spoke-{os.environ['RANK']}"), "w") as f:
    f.write(repr(time.time()))
print("loading the dataset", flush=True)
"""


@pytest.mark.embedded_only("the runner's own timeline; the store plays no part")
def test_the_launcher_s_own_banner_is_not_the_workload_s_first_output(home: Path, tmp_path: Path) -> None:
    """torchrun logs its "Setting OMP_NUM_THREADS" banner before it starts any rank: taken for the
    workload's first output, the ranks' imports read as the program's own setup (a healthy job
    diagnosed with a slow start on a loaded machine)."""
    proc = torchrun_under_flightlog(home, tmp_path, RANK_SPEAKS_LATE, str(tmp_path))
    assert "OMP_NUM_THREADS" in proc.stderr  # the banner this is about was printed
    (info,) = flightlog.Client(home=home).runs(project="t")
    first_rank_spoke = min(float(p.read_text()) for p in tmp_path.glob("spoke-*"))
    # the timeline keeps milliseconds; the banner came half a second before
    assert info.timeline["first_output"] >= first_rank_spoke - 0.001, (info.timeline, first_rank_spoke)
