"""A 50-step pipeline of no-op steps: what flightlog adds per step beyond starting the process.

The same no-op processes (``python -c pass``) run one after another, three ways:

- ``plain``: a plain script starting them with ``subprocess.run`` (the floor);
- ``pipeline``: a chain of steps run by the pipeline controller (``max_parallel=1``, no cache),
  each step a child run under ``flightlog run`` (forked from the local executor's warm runner),
  plus cache keys, state records, lineage and the polling loop;
- ``cold``: each under ``python -m flightlog.runner`` started afresh, as a step starts when the
  warm runner is unavailable (and as one ``flightlog run`` costs), on fewer steps.

The machine this runs on may be busy, so the whole plain loop and the whole pipeline alternate
for ``--rounds`` rounds and are summed: a change of load hits both alike. Per step,
``(pipeline - plain) / steps`` is everything flightlog adds, the warm runner's start included.
CPU seconds are reported too (load does not inflate them): the controller's own (this process)
and its children's (warm runner, runners and workloads). Then the chain once more with every
step a cache hit, and the steps independent with ``max_parallel=4``. With ``--peers`` and
Prefect installed in ``.bench-venv``, the same steps as Prefect tasks (``bench/peer_prefect.py``).
Prints one JSON object.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from _common import PEER_PYTHON, emit, fresh_home, machine, run_peer

NOOP = [sys.executable, "-c", "pass"]


def plain(n: int) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        subprocess.run(NOOP, check=True)
    return time.perf_counter() - t0


def cold(n: int, env: dict[str, str], cwd: Path) -> float:
    # in the directory the pipeline's steps run in: the runner looks at its working directory's size
    t0 = time.perf_counter()
    for i in range(n):
        subprocess.run(
            [sys.executable, "-m", "flightlog.runner", "--project", "bench-wrapped", "--name", f"s{i}", "--", *NOOP],
            env=env,
            cwd=cwd,
            check=True,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    return time.perf_counter() - t0


def pipeline(n: int, workdir: Path, *, chain: bool, max_parallel: int, use_cache: bool, name: str) -> float:
    from flightlog.pipeline import Pipeline

    pipe = Pipeline(name, project="bench", workdir=workdir)
    for i in range(n):
        pipe.add(f"s{i}", NOOP, needs=[f"s{i - 1}"] if chain and i else [])
    t0 = time.perf_counter()
    result = pipe.run(max_parallel=max_parallel, use_cache=use_cache, quiet=True)
    took = time.perf_counter() - t0
    if result.status != "succeeded":
        raise SystemExit(f"the benchmark pipeline {result.status}: {result.to_dict()}")
    return took


def measured(fn: Any) -> tuple[float, float, float]:
    """Wall seconds, this process's CPU seconds and its children's CPU seconds spent in ``fn``."""

    def cpu(who: int) -> float:
        r = resource.getrusage(who)
        return r.ru_utime + r.ru_stime

    own, children = cpu(resource.RUSAGE_SELF), cpu(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0, cpu(resource.RUSAGE_SELF) - own, cpu(resource.RUSAGE_CHILDREN) - children)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cold-steps", type=int, default=10, help="steps run under a fresh runner process each")
    parser.add_argument("--peers", action="store_true", help="also Prefect, from .bench-venv")
    args = parser.parse_args()
    n = args.steps
    home = fresh_home("pipeline")
    env = {**os.environ, "FLIGHTLOG_HOME": str(home)}
    load_before = os.getloadavg()[0]
    totals = {"plain": [0.0, 0.0, 0.0], "pipeline": [0.0, 0.0, 0.0]}
    for r in range(args.rounds):
        for name, fn in (
            ("plain", lambda: plain(n)),
            (
                "pipeline",
                lambda r=r: pipeline(n, home, chain=True, max_parallel=1, use_cache=False, name=f"bench-chain-{r}"),
            ),
        ):
            wall, own, children = measured(fn)
            totals[name][0] += wall
            totals[name][1] += own
            totals[name][2] += children
    steps = n * args.rounds
    t_plain, t_pipe = totals["plain"][0], totals["pipeline"][0]
    _, _, cold_plain_cpu = measured(lambda: plain(args.cold_steps))
    t_cold, _, cold_cpu = measured(lambda: cold(args.cold_steps, env, home))
    t_cold_plain = plain(args.cold_steps)
    t_cached = pipeline(n, home, chain=True, max_parallel=1, use_cache=True, name="bench-chain-0")
    t_fan = pipeline(n, home, chain=False, max_parallel=4, use_cache=False, name="bench-fan")
    result = {
        "workload": f"a {n}-step chain of no-op steps (python -c pass), {args.rounds} rounds alternating with a plain loop",
        "machine": machine(),
        "load_average_at_start": round(load_before, 2),
        "load_average_at_end": round(os.getloadavg()[0], 2),
        "plain_script_s": round(t_plain, 3),
        "pipeline_s": round(t_pipe, 3),
        "pipeline_all_cached_s": round(t_cached, 3),
        "pipeline_independent_max_parallel_4_s": round(t_fan, 3),
        "overhead_per_step_ms": round((t_pipe - t_plain) / steps * 1000, 1),
        "controller_cpu_per_step_ms": round(totals["pipeline"][1] / steps * 1000, 1),
        "runner_cpu_per_step_ms": round((totals["pipeline"][2] - totals["plain"][2]) / steps * 1000, 1),
        "cold_runner_overhead_per_step_ms": round((t_cold - t_cold_plain) / args.cold_steps * 1000, 1),
        "cold_runner_cpu_per_step_ms": round((cold_cpu - cold_plain_cpu) / args.cold_steps * 1000, 1),
        "cache_hit_per_step_ms": round(t_cached / n * 1000, 1),
        "target_overhead_per_step_ms": 50,
    }
    if args.peers:
        if (
            PEER_PYTHON.exists()
            and subprocess.run([str(PEER_PYTHON), "-c", "import prefect"], capture_output=True).returncode == 0
        ):
            result["prefect"] = run_peer("peer_prefect.py", "--steps", str(n))
        else:
            result["prefect"] = {"error": "prefect is not installed in .bench-venv"}
    emit(result)


if __name__ == "__main__":
    main()
