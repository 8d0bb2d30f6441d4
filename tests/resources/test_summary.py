"""ResourceSummary: peaks, averages, totals, merging."""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from flightlog.resources import ProcessTreeSampler, ResourceSummary
from tests.resources.conftest import Spawn


def _sample(t: float, **fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "time": t,
        "cpu_percent": None,
        "cpu_seconds": 0.0,
        "rss_bytes": 0,
        "threads": 1,
        "procs": 1,
        "open_files": 3,
        "disk_read_bytes": 0,
        "disk_write_bytes": 0,
        "net_sent_bytes": 1000,
        "net_recv_bytes": 5000,
        "memory_percent": 0.1,
        "cgroup_memory_usage": None,
        "cgroup_memory_limit": None,
        "gpus": [],
    }
    base.update(fields)
    return base


def _gpu(util: int, used: int, power: float | None) -> dict[str, Any]:
    return {
        "index": 0,
        "name": "H200",
        "uuid": "GPU-x",
        "utilization_percent": util,
        "memory_used_bytes": used,
        "memory_total_bytes": 100,
        "power_watts": power,
        "temperature_c": 50,
        "process_memory_bytes": used // 2,
    }


def test_peaks_averages_and_totals() -> None:
    s = ResourceSummary()
    s.add(_sample(100.0, cpu_percent=None, rss_bytes=100, gpus=[_gpu(10, 40, 100.0)]))
    s.add(
        _sample(
            101.0,
            cpu_percent=50.0,
            cpu_seconds=0.5,
            rss_bytes=300,
            threads=9,
            procs=3,
            disk_read_bytes=10,
            disk_write_bytes=1000,
            net_sent_bytes=1500,
            net_recv_bytes=9000,
            workdir_bytes=2048,
            workdir_bytes_partial=False,
            cgroup_memory_usage=700,
            cgroup_memory_limit=1000,
            gpus=[_gpu(90, 80, None)],
        )
    )
    s.add(
        _sample(
            103.0,
            cpu_percent=150.0,
            cpu_seconds=3.5,
            rss_bytes=200,
            disk_read_bytes=30,
            disk_write_bytes=1000,
            net_sent_bytes=1600,
            net_recv_bytes=9100,
            gpus=[_gpu(50, 60, 300.0)],
        )
    )
    d = s.to_dict()
    assert d["samples"] == 3
    assert d["duration_s"] == 3.0
    assert d["cpu_percent_avg"] == 100.0  # the first sample had no percentage
    assert d["cpu_percent_max"] == 150.0
    assert d["cpu_seconds"] == 3.5
    assert d["rss_bytes_max"] == 300
    assert d["rss_bytes_avg"] == 200
    assert d["threads_max"] == 9
    assert d["procs_max"] == 3
    assert d["disk_read_bytes"] == 30
    assert d["disk_write_bytes"] == 1000
    assert d["net_sent_bytes"] == 600
    assert d["net_recv_bytes"] == 4100
    assert d["workdir_bytes_max"] == 2048
    assert d["cgroup_memory_max"] == 700
    assert d["cgroup_memory_limit"] == 1000
    (gpu,) = d["gpus"]
    assert gpu["utilization_percent_avg"] == 50.0
    assert gpu["utilization_percent_max"] == 90
    assert gpu["memory_used_bytes_max"] == 80
    assert gpu["process_memory_bytes_max"] == 40
    assert gpu["power_watts_avg"] == 200.0  # the None reading is not an observation
    assert gpu["name"] == "H200"
    json.dumps(d)


def test_empty_summary_renders() -> None:
    d = ResourceSummary().to_dict()
    assert d["samples"] == 0
    assert d["cpu_percent_avg"] is None
    assert d["disk_read_bytes"] is None
    assert d["gpus"] == []


def test_merge_of_two_attempts_sums_counters_and_keeps_peaks() -> None:
    a, b, whole = ResourceSummary(), ResourceSummary(), ResourceSummary()
    first = [
        _sample(0.0, cpu_seconds=0.0, rss_bytes=10),
        _sample(1.0, cpu_seconds=2.0, rss_bytes=30),
    ]
    # A second sampler starts its counters from zero again.
    second = [
        _sample(5.0, cpu_seconds=0.0, rss_bytes=50),
        _sample(6.0, cpu_seconds=1.0, rss_bytes=20),
    ]
    for x in first:
        a.add(x)
    for x in second:
        b.add(x)
    for x in first + second:
        whole.add(x)
    merged = a.merge(b).to_dict()
    assert merged["cpu_seconds"] == 3.0
    assert merged["rss_bytes_max"] == 50
    assert merged["rss_bytes_avg"] == 27
    assert merged["samples"] == 4
    assert merged["duration_s"] == 6.0
    assert merged == whole.to_dict()


def test_real_samples_summarize(spawn: Spawn) -> None:
    # a child of our own: the test process may have children of other fixtures (a PostgreSQL server)
    sampler = ProcessTreeSampler(spawn([sys.executable, "-c", "import time; time.sleep(60)"]).pid, gpu=False)
    summary = ResourceSummary()
    for _ in range(3):
        time.sleep(0.06)
        summary.add(sampler.sample())
    d = summary.to_dict()
    assert d["samples"] == 3
    assert d["rss_bytes_max"] > 0
    assert d["procs_max"] == 1
    assert d["cpu_percent_max"] is not None
