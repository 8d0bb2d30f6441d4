"""The runner's observer of a plain script's ranks (runner/ranks.py) with a real process as a
rank: a rank the launcher's summary names but the process tree never showed (it died before the
observer's first look, as a rank that raises at import does) lists with the job's size, launcher
and its own pid, like the ranks the tree showed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import flightlog
from flightlog.runner.ranks import RankObserver
from tests.helpers import cli_json

#: what torchrun sets in each rank's environment (the observer reads it from /proc/PID/environ)
RANK_0 = {
    "RANK": "0",
    "LOCAL_RANK": "0",
    "WORLD_SIZE": "3",
    "LOCAL_WORLD_SIZE": "3",
    "GROUP_RANK": "0",
    "TORCHELASTIC_RUN_ID": "job-1",
    "TORCHELASTIC_RESTART_COUNT": "0",
}


def test_a_rank_known_only_from_the_launcher_s_summary_lists_like_its_siblings(home: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in RANK_0} | RANK_0
    rank_0 = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], env=env, stdin=subprocess.PIPE)
    try:
        run = flightlog.init(project="p", resources=False)
        observer = RankObserver(run, 1, rank_0.pid)
        observer.look()
        assert [r.identity["rank"] for r in observer.ranks.values()] == [0]
    finally:
        rank_0.communicate(timeout=30)
    # rank 1 raised before any look; torchrun's summary names it with its pid and exit code
    summary = {"launcher": "torchrun", "ranks": [{"rank": 1, "local_rank": 1, "pid": 4242, "exit_code": 1}]}
    observer.finish(succeeded=False, launcher=summary, tracebacks={})
    run.finish(status="failed")

    ranks = {r["rank"]: r for r in cli_json(home, "ranks", run.id)}
    assert sorted(ranks) == [0, 1]
    assert ranks[1]["pid"] == 4242 and ranks[1]["exit_code"] == 1 and ranks[1]["state"] == "failed", ranks[1]
    for rank in ranks.values():
        assert (rank["world_size"], rank["launcher"], rank["local_world_size"]) == (3, "torchrun", 3), rank
