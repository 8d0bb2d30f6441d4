"""A 50-step pipeline of no-op steps: what flightlog adds per step beyond starting the process.

Four timings of the same 50 no-op processes (``python -c pass``), one after another:

- ``plain``: a plain script starting them with ``subprocess.run`` (the floor);
- ``wrapped``: each under ``flightlog run`` (the runner: a run, capture, sampling, the end);
- ``pipeline``: a 50-step chain run by the pipeline controller (``--max-parallel 1``, no
  cache): each step a child run under ``flightlog run``, plus cache keys, state records,
  lineage and the polling loop;
- ``cached``: the same pipeline again, every step a cache hit (no process at all).

Per step: ``(pipeline - plain) / 50`` is everything flightlog adds; ``(pipeline - wrapped) / 50``
is the controller's share (the part this benchmark is about: the runner's own cost is
``bench/runner_overhead.py``'s). With ``--peers`` and Prefect installed in ``.bench-venv``, the
same 50 steps as Prefect tasks run by a flow (``bench/peer_prefect.py``). Prints one JSON object.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from _common import PEER_PYTHON, emit, fresh_home, machine, run_peer

NOOP = [sys.executable, "-c", "pass"]


def plain(n: int) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        subprocess.run(NOOP, check=True)
    return time.perf_counter() - t0


def wrapped(n: int, env: dict[str, str]) -> float:
    exe = str(Path(sys.executable).with_name("flightlog"))
    t0 = time.perf_counter()
    for i in range(n):
        subprocess.run([exe, "run", "--project", "bench-wrapped", "--name", f"s{i}", "--", *NOOP], env=env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def pipeline(n: int, workdir: Path, *, chain: bool, max_parallel: int, use_cache: bool) -> float:
    from flightlog.pipeline import Pipeline

    pipe = Pipeline("bench-chain" if chain else "bench-fan", project="bench", workdir=workdir)
    for i in range(n):
        pipe.add(f"s{i}", NOOP, needs=[f"s{i - 1}"] if chain and i else [])
    t0 = time.perf_counter()
    result = pipe.run(max_parallel=max_parallel, use_cache=use_cache, quiet=True)
    took = time.perf_counter() - t0
    if result.status != "succeeded":
        raise SystemExit(f"the benchmark pipeline {result.status}: {result.to_dict()}")
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--peers", action="store_true", help="also Prefect, from .bench-venv")
    args = parser.parse_args()
    n = args.steps
    home = fresh_home("pipeline")
    env = {**os.environ, "FLIGHTLOG_HOME": str(home)}
    load_before = os.getloadavg()[0]
    t_plain = plain(n)
    t_wrapped = wrapped(n, env)
    t_pipe = pipeline(n, home, chain=True, max_parallel=1, use_cache=False)
    t_cached = pipeline(n, home, chain=True, max_parallel=1, use_cache=True)
    t_fan = pipeline(n, home, chain=False, max_parallel=4, use_cache=False)
    result = {
        "workload": f"{n} no-op steps (python -c pass), sequential chain",
        "machine": machine(),
        "load_average_at_start": round(load_before, 2),
        "plain_script_s": round(t_plain, 3),
        "flightlog_run_each_s": round(t_wrapped, 3),
        "pipeline_s": round(t_pipe, 3),
        "pipeline_all_cached_s": round(t_cached, 3),
        "pipeline_independent_max_parallel_4_s": round(t_fan, 3),
        "overhead_per_step_ms": round((t_pipe - t_plain) / n * 1000, 1),
        "runner_share_per_step_ms": round((t_wrapped - t_plain) / n * 1000, 1),
        "controller_overhead_per_step_ms": round((t_pipe - t_wrapped) / n * 1000, 1),
        "cache_hit_per_step_ms": round(t_cached / n * 1000, 1),
        "target_controller_overhead_per_step_ms": 50,
    }
    if args.peers:
        if PEER_PYTHON.exists() and subprocess.run([str(PEER_PYTHON), "-c", "import prefect"],
                                                   capture_output=True).returncode == 0:
            result["prefect"] = run_peer("peer_prefect.py", "--steps", str(n))
        else:
            result["prefect"] = {"error": "prefect is not installed in .bench-venv"}
    emit(result)


if __name__ == "__main__":
    main()
