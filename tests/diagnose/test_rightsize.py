"""Right-sizing from real runs under `flightlog run --memory-limit`."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from flightlog.client import Client
from tests.helpers import cli

SMALL = "import time\nblob = bytearray(30 * 1024 * 1024)\nblob[::4096] = b'x' * len(blob[::4096])\ntime.sleep(0.4)\n"
GREEDY = (
    "chunks = []\nwhile True:\n    chunks.append(bytearray(16 * 1024 * 1024))\n"
    "    chunks[-1][::4096] = b'x' * len(chunks[-1][::4096])\n"
)


def _run(home: Path, code: str, *args: str) -> str:
    script = home.parent / "job.py"
    script.write_text(code)
    proc = cli(
        home,
        "run",
        "--project",
        "etl",
        "--name",
        "daily",
        "--sample-interval",
        "0.1s",
        *args,
        "--",
        sys.executable,
        str(script),
        check=False,
    )
    return re.search(r"run ([0-9a-f]{32}) started", proc.stderr)[1]  # type: ignore[index]


@pytest.mark.embedded_only("the same evidence through either transport; test_by_name_across_runs covers http")
def test_over_provisioned_and_recommendation(home: Path) -> None:
    run = _run(home, SMALL, "--memory-limit", "1G")
    with Client(home) as c:
        rs = c.rightsize(run)
    mem = rs["memory"]
    assert mem["requested_bytes"] == 1 << 30
    assert 30 << 20 <= mem["peak_bytes"] < 200 << 20
    assert mem["recommended_bytes"] >= mem["peak_bytes"] * 1.25
    assert mem["recommended_bytes"] % (64 << 20) == 0
    assert rs["request"]["memory"].endswith("Mi") or rs["request"]["memory"].endswith("Gi")
    (flag,) = rs["flags"]
    assert flag["kind"] == "over_provisioned" and "asked for 1.0GiB" in flag["detail"]


@pytest.mark.embedded_only("the same evidence through either transport; test_by_name_across_runs covers http")
def test_killed_at_the_limit_asks_for_more(home: Path) -> None:
    run = _run(home, GREEDY, "--memory-limit", "128M")
    with Client(home) as c:
        assert c.run(run).end_reason == "oom_killed"
        rs = c.rightsize(run)
        report = c.diagnose(run)
    assert rs["flags"][0]["kind"] == "killed_at_limit"
    assert rs["memory"]["recommended_bytes"] >= 1.5 * (128 << 20)
    assert "real peak is above it" in rs["memory"]["basis"]
    assert report["findings"][0]["category"] == "oom_killed"
    assert report["rightsizing"]["memory"]["recommended_bytes"] == rs["memory"]["recommended_bytes"]


def test_by_name_across_runs(home: Path) -> None:
    _run(home, SMALL, "--memory-limit", "1G")
    _run(home, SMALL)
    with Client(home) as c:
        rs = c.rightsize("daily", project="etl")
    assert rs["subject"] == {"name": "daily", "project": "etl", "runs": 2}
    assert len(rs["observations"]) == 2
    assert rs["cpu"]["samples"] > 0 and rs["cpu"]["recommended_cores"] >= 0.1


CRASH = "import sys, time\nblob = bytearray(40 * 1024 * 1024)\ntime.sleep(0.3)\nsys.exit(3)\n"


@pytest.mark.embedded_only("the same evidence through either transport; test_by_name_across_runs covers http")
def test_a_run_that_failed_in_a_second_is_too_little_evidence(home: Path) -> None:
    run = _run(home, CRASH, "--memory-limit", "1G")
    with Client(home) as c:
        assert c.run(run).status == "failed"
        rs = c.rightsize(run)
        report = c.diagnose(run)
    assert rs["memory"]["recommended_bytes"] is None and rs["request"] == {"memory": None, "cpu": None}
    evidence = rs["evidence"]
    assert evidence["sufficient"] is False and evidence["attempts_used"] == 0
    assert "too little evidence" in evidence["reason"] and "failed after" in evidence["reason"]
    assert rs["observations"][0]["used"] is False
    assert rs["flags"] == []  # one sample of a dying process cannot call 1 GiB too much
    assert report["rightsizing"]["evidence"]["sufficient"] is False
    text = cli(home, "rightsize", run).stdout
    assert "no recommendation: too little evidence" in text
