"""Peer: the 50 no-op steps of bench/pipeline_overhead.py as a Prefect flow of tasks, each task
starting the same process, each waiting for the one before. Runs in .bench-venv (never the
project's environment); prints one JSON object (seconds, with the plain loop as the floor)."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

NOOP = [sys.executable, "-c", "pass"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=50)
    args = parser.parse_args()
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")  # no network here
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    import prefect
    from prefect import flow, task

    @task
    def step(_previous: int) -> int:
        return subprocess.run(NOOP, check=True).returncode

    @flow
    def chain(n: int) -> None:
        previous = 0
        for _ in range(n):
            previous = step(previous)

    t0 = time.perf_counter()
    for _ in range(args.steps):
        subprocess.run(NOOP, check=True)
    plain = time.perf_counter() - t0
    chain(1)  # the first flow starts Prefect's ephemeral API: not counted
    t0 = time.perf_counter()
    chain(args.steps)
    took = time.perf_counter() - t0
    print(
        json.dumps(
            {
                "prefect": prefect.__version__,
                "plain_script_s": round(plain, 3),
                "flow_s": round(took, 3),
                "overhead_per_step_ms": round((took - plain) / args.steps * 1000, 1),
            }
        )
    )


if __name__ == "__main__":
    main()
