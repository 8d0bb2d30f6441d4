"""What resource sampling costs the process that samples (the runner, or the training process).

Spawns an idle child (``sleep``), then measures this process's own CPU seconds (user + system)
over the same idle wait twice: once doing nothing, once running a SamplerThread on the child
at 1 s, with the slow probe (disk use of the working directory) included. Prints ONE JSON
object. Budget (issue 3): at most 0.2 CPU-seconds over 20 s, i.e. 1 % of one core.

    python bench/sampler_overhead.py [--seconds 20] [--interval 1.0] [--workdir .]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import threading
import time
from typing import Any

import psutil

from flightlog.resources import ProcessTreeSampler, ResourceSummary, SamplerThread, disk_usage

BUDGET_CPU_SECONDS_PER_20S = 0.2


def _own_cpu() -> float:
    t = psutil.Process().cpu_times()
    return t.user + t.system


def _idle(seconds: float) -> float:
    """CPU seconds this process spends over ``seconds`` of doing nothing but waiting."""
    child = subprocess.Popen(["sleep", str(seconds + 5)])
    try:
        start = _own_cpu()
        threading.Event().wait(seconds)
        return _own_cpu() - start
    finally:
        child.kill()
        child.wait()


def _sampling(seconds: float, interval: float, workdir: str) -> tuple[float, int, dict[str, Any]]:
    """CPU seconds over the same wait while sampling the child (setup and teardown included)."""
    child = subprocess.Popen(["sleep", str(seconds + 5)])
    summary = ResourceSummary()
    try:
        start = _own_cpu()
        sampler = ProcessTreeSampler(child.pid, workdir=workdir, slow_interval=30.0)
        thread = SamplerThread(sampler, summary.add, interval=interval).start()
        threading.Event().wait(seconds)
        thread.stop()
        used = _own_cpu() - start
        return used, thread.samples, {"notes": sampler.notes, "errors": thread.errors}
    finally:
        child.kill()
        child.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--interval", type=float, default=1.0)
    parser.add_argument("--workdir", default=os.getcwd())
    args = parser.parse_args()

    # Warm imports and psutil's one-time caches so neither phase pays for them.
    ProcessTreeSampler(os.getpid(), gpu=False).sample()

    # What one slow probe of this working directory costs on its own (it runs once per 30 s,
    # so once inside the 20 s window), to read the figure below.
    walk_start = _own_cpu()
    walk = disk_usage(args.workdir)
    walk_cpu = _own_cpu() - walk_start

    idle = _idle(args.seconds)
    sampling, samples, info = _sampling(args.seconds, args.interval, args.workdir)
    overhead = max(0.0, sampling - idle)
    budget = BUDGET_CPU_SECONDS_PER_20S * args.seconds / 20.0
    print(
        json.dumps(
            {
                "bench": "sampler_overhead",
                "seconds": args.seconds,
                "interval_s": args.interval,
                "samples": samples,
                "workdir": args.workdir,
                "workdir_entries": walk.entries,
                "workdir_partial": walk.partial,
                "workdir_walk_cpu_seconds": round(walk_cpu, 4),
                "cpu_seconds_idle": round(idle, 4),
                "cpu_seconds_sampling": round(sampling, 4),
                "overhead_cpu_seconds": round(overhead, 4),
                "overhead_percent_of_one_core": round(100.0 * overhead / args.seconds, 3),
                "cpu_ms_per_sample": round(1000.0 * overhead / samples, 3) if samples else None,
                "budget_cpu_seconds": round(budget, 4),
                "within_budget": overhead <= budget,
                "sampling_errors": info["errors"],
                "notes": info["notes"],
                "python": platform.python_version(),
                "cpu_count": os.cpu_count(),
                "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            }
        )
    )


if __name__ == "__main__":
    main()
