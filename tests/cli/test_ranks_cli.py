"""`flightlog ranks` and `flightlog logs --rank` on a run that is not distributed: a clear word,
never a traceback; the JSON listing is an empty array."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import flightlog
from tests.helpers import child_env, cli


def test_a_run_of_one_process_has_no_ranks_and_says_so(home: Path) -> None:
    with flightlog.init(project="p", resources=False) as run:
        run.log_event("hello")
    shown = cli(home, "ranks", run.id[:8])
    assert shown.stdout == "" and "has no ranks: it is not a distributed run" in shown.stderr
    assert json.loads(cli(home, "ranks", run.id, "--format", "json").stdout) == []
    refused = cli(home, "logs", run.id, "--rank", "0", check=False)
    assert (
        refused.returncode == 1 and f"error: run {run.id} has no rank 0: it is not a distributed run" in refused.stderr
    )
    bad = cli(home, "logs", run.id, "--rank", "-1", check=False)
    assert bad.returncode == 2 and "-1 is not in the range x>=0" in bad.stderr
    assert cli(home, "logs", run.id).stdout == "INFO     hello\n"  # no rank shown where there is none
    missing = cli(home, "ranks", "nosuchrun", check=False)
    assert missing.returncode == 1 and "no run with id or prefix 'nosuchrun'" in missing.stderr


RANK_WITH_A_STALL = """
import os, time
import flightlog

run = flightlog.init(project="dist", resources=False)
run.log({"loss": 1.0}, step=0)
time.sleep(0.05)
now = time.time()  # the stall, seen after its last step
ident = {"rank": 1, "pid": os.getpid(), "host": "n1", "world_size": 2}
frames = [{"file": "/job/train.py", "line": 17, "function": "<module>", "code": "import torch"}]
run.log_evidence("stall", "rank1-stall-1", {**ident, "state": "stalled", "since": now - 4, "time": now})
run.log_evidence("stacks", "rank1-1", {**ident, "time": now, "threads": [{"name": "MainThread", "frames": frames}]})
if os.environ["THEN"] == "stepped":
    time.sleep(0.05)
    run.log({"loss": 0.5}, step=1)  # it moved on
run.finish("failed", exit_code=1)
print(run.id)
"""


@pytest.mark.parametrize("then", ["stuck", "stepped"])
def test_stacks_a_rank_moved_on_from_are_said_to_be_no_longer_where_it_is(home: Path, then: str) -> None:
    """``flightlog ranks --stacks`` shows a rank's latest stacks; when the rank logged a step after
    them, they are marked as not where it is or ended (issue 28: the culprit quoted such stacks)."""
    env = child_env(home, RANK="1", LOCAL_RANK="1", WORLD_SIZE="2", LOCAL_WORLD_SIZE="2", THEN=then)
    done = subprocess.run(
        [sys.executable, "-c", RANK_WITH_A_STALL], env=env, text=True, capture_output=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    shown = cli(home, "ranks", done.stdout.strip(), "--stacks").stdout
    assert "/job/train.py:17 in <module>" in shown, shown
    assert ("it made progress after these: not where it is or ended" in shown) == (then == "stepped"), shown


RANK_OF_A_JOB = """
import os, time
from pathlib import Path
import flightlog

run = flightlog.init(project="dist", resources=False)
rank = int(os.environ["RANK"])
meet = Path(os.environ["MEET"])
(meet / f"joined-{rank}").write_text("")
while len(list(meet.glob("joined-*"))) < 3:  # every rank joined before any ends the run
    time.sleep(0.01)
if rank == 1:  # it only waited for the others
    run.log_event("RuntimeError: Connection closed by peer [127.0.0.1]:29500", level="error")
else:
    run.log_event(f"FileNotFoundError: /data/train-{rank:05d}.bin", level="error")
run.finish("failed", end_reason="exit", exit_code=1)
"""


def test_runs_show_names_the_ranks_that_failed_alike_first(home: Path, tmp_path: Path) -> None:
    """Ranks 0 and 2 failed alike (``failure.culprit.alike``, no culprit) and rank 1 only waited,
    every one of them exit 1: the ranks line of ``runs show`` leads with the alike ranks as it
    does with a culprit. It said "all failed", hiding which ranks had the shared error
    (issue 28)."""
    owner = flightlog.init(project="dist", resources=False, home=home)
    ranks = []
    for rank in range(3):
        env = child_env(
            home,
            FLIGHTLOG_RUN_ID=owner.id,
            RANK=str(rank),
            LOCAL_RANK=str(rank),
            WORLD_SIZE="3",
            LOCAL_WORLD_SIZE="3",
            TORCHELASTIC_RUN_ID="job-1",
            MEET=str(tmp_path),
        )
        ranks.append(
            subprocess.Popen([sys.executable, "-c", RANK_OF_A_JOB], env=env, text=True, stderr=subprocess.PIPE)
        )
    for proc in ranks:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    alike = {"rank": None, "alike": [0, 2], "summary": "ranks 0 and 2 failed alike: FileNotFoundError"}
    owner.finish("failed", end_reason="exit", exit_code=1, failure={"message": "FileNotFoundError", "culprit": alike})
    shown = cli(home, "runs", "show", owner.id).stdout
    line = next(line for line in shown.splitlines() if line.startswith("ranks"))
    assert "3 (torchrun): ranks 0 and 2 failed alike (exit 1); rank 1 failed (exit 1)" in line, shown
