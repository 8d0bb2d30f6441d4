"""A process starved of CPU by other processes on a busy host uses little CPU while it steps:
that is contention, not a loader that keeps the compute waiting, and diagnosis says so instead
of naming a ``data_loader_bottleneck`` (the healthy-frameworks set met it under a parallel test
run on two cores)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from flightlog.client import Client
from tests.helpers import cli

# CPU-bound data preparation and a CPU-bound step, about 45 % and 55 % of each step's work
STARVED = """
import time
import flightlog
run = flightlog.init()
def spin(seconds):
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass
start = time.time()
step = 0
while time.time() - start < 3.0 or step < 12:
    with run.stage("data_loading"):
        spin(0.0018)
    with run.stage("train_step"):
        spin(0.0022)
    run.log({"loss": 1.0 / (step + 1)}, step=step)
    step += 1
"""

HOG = "while True: pass"


@pytest.mark.embedded_only("the same evidence over either transport")
def test_a_process_starved_by_a_busy_host_is_not_a_data_loader_bottleneck(home: Path) -> None:
    script = home.parent / "starved.py"
    script.write_text(STARVED)
    hogs = [subprocess.Popen([sys.executable, "-c", HOG]) for _ in range(os.cpu_count() or 1)]
    try:  # the workload at the lowest priority: the hogs take nearly all of every core
        proc = cli(home, "run", "--project", "busy", "--sample-interval", "0.1s", "--",
                   "nice", "-n", "19", sys.executable, str(script), timeout=120)
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    run = re.search(r"run ([0-9a-f]{32}) started", proc.stderr)[1]  # type: ignore[index]
    with Client(home) as c:
        report = c.diagnose(run, auto_baseline=False)
    loader = [f for f in report["findings"] if f["category"] == "data_loader_bottleneck"]
    assert all(f["confidence"] < 0.5 for f in loader), loader
    details = [e["detail"] for f in loader for e in f["evidence"]]
    assert any("waited for a CPU, not for input" in d for d in details), loader
