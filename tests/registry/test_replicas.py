"""`deployments show`: the replicas that report serving an endpoint (runs the serving feature
tags), and a replica whose process vanished shown as gone, as runs are marked crashed."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from tests.helpers import child_env, cli_json, run_script

_REPLICA = """
import os, sys, flightlog
run = flightlog.init(project="fraud-team", name="fraud-api", tags={
    "serving.endpoint": "fraud-api", "serving.env": "prod", "serving.model": "fraud",
    "serving.version": "1", "serving.replica": sys.argv[1]})
run._w.flush()  # the run reaches the store now, as a serving process's first heartbeat does
if sys.argv[1] == "r-gone":
    os.kill(os.getpid(), 9)  # the replica vanishes: no end record
run.finish()
"""


def test_replicas_are_listed_and_a_vanished_one_is_gone(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    train = run_script(
        home,
        """
        import flightlog, pathlib
        p = pathlib.Path("w.bin"); p.write_bytes(b"w")
        run = flightlog.init(project="fraud-team"); run.log_artifact(p, name="w.bin"); run.finish(); print(run.id)
    """,
    ).stdout.split()[-1]
    cli_json(home, "models", "register", train, "w.bin", "fraud")
    cli_json(home, "deploy", "fraud/1", "--endpoint", "fraud-api", "--env", "prod")
    for replica in ("r-ok", "r-gone"):
        subprocess.run(
            [sys.executable, "-c", textwrap.dedent(_REPLICA), replica],
            env=child_env(home),
            cwd=home.parent,
            timeout=60,
            capture_output=True,
        )

    report = cli_json(home, "deployments", "show", "fraud-api", "--env", "prod")
    replicas = {r["replica"]: r for r in report["replicas"]}
    assert set(replicas) == {"r-ok", "r-gone"}
    assert replicas["r-gone"]["status"] == "gone" and replicas["r-gone"]["state"] == "gone"
    assert replicas["r-ok"]["state"] == "gone", "its run ended: it serves no more"
    assert replicas["r-ok"]["status"] == "succeeded" and replicas["r-ok"]["version"] == 1
    assert replicas["r-ok"]["current"] is True
