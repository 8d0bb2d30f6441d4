"""What `flightlog run` costs to start and stop around a workload that does nothing.

Times `flightlog run -- true`, `python -m flightlog.runner -- true` (the entry a pipeline step
uses) and a plain `true`, interleaved, N times each (after one warm-up of each, which also fills
the package-list cache in FLIGHTLOG_HOME), and reports the median wall time and the CPU seconds
(getrusage of children) of each, and the runner's start/stop overhead over the plain process.
Every run must have been stored with its final status when the command returns (checked).

``--bytecode`` lets Python write and reuse compiled bytecode (in a temporary
PYTHONPYCACHEPREFIX), as an installed package does; without it the environment decides (this
project's development environment sets PYTHONDONTWRITEBYTECODE=1, so every process compiles
flightlog's sources again). ``--cwd`` runs the commands in that directory (a large one shows
the cost of the working-directory probe). Prints one JSON object.
"""

from __future__ import annotations

import argparse
import os
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import emit, fresh_home, machine


def measure(cmd: list[str], env: dict[str, str], cwd: str) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr.decode(errors='replace')}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("-n", type=int, default=20)
    parser.add_argument("--cwd", default=None, help="directory to run the commands in (default: an empty one)")
    parser.add_argument("--bytecode", action="store_true", help="let Python cache compiled bytecode")
    args = parser.parse_args()
    home = fresh_home("startup")
    env = {**os.environ, "FLIGHTLOG_HOME": str(home)}
    if args.bytecode:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = tempfile.mkdtemp(prefix="flightlog-bench-pycache-")
    cwd = args.cwd or tempfile.mkdtemp(prefix="flightlog-bench-cwd-")
    exe = str(Path(sys.executable).with_name("flightlog"))
    commands = {
        "plain_true": ["true"],
        "flightlog_run_true": [exe, "run", "--project", "bench", "--", "true"],
        "python_m_runner_true": [sys.executable, "-m", "flightlog.runner", "--project", "bench", "--", "true"],
    }
    for cmd in commands.values():  # warm-up: page cache, bytecode, package-list cache
        measure(cmd, env, cwd)
    walls: dict[str, list[float]] = {name: [] for name in commands}
    cpus: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(args.n):
        for name, cmd in commands.items():
            wall, cpu = measure(cmd, env, cwd)
            walls[name].append(wall)
            cpus[name].append(cpu)
    with sqlite3.connect(home / "flightlog.db") as db:
        statuses = [row[0] for row in db.execute("SELECT status FROM runs")]
    median = {name: statistics.median(values) for name, values in walls.items()}
    emit(
        {
            "workload": f"`true`, alone and under the runner, {args.n} times each, interleaved",
            "machine": machine(),
            "load_average": os.getloadavg(),
            "bytecode_cached": args.bytecode or not env.get("PYTHONDONTWRITEBYTECODE"),
            "cwd": cwd,
            "median_wall_ms": {name: round(1000 * value, 1) for name, value in median.items()},
            "median_cpu_ms": {name: round(1000 * statistics.median(values), 1) for name, values in cpus.items()},
            "flightlog_run_overhead_ms": round(1000 * (median["flightlog_run_true"] - median["plain_true"]), 1),
            "python_m_runner_overhead_ms": round(1000 * (median["python_m_runner_true"] - median["plain_true"]), 1),
            "runs_stored": len(statuses),
            "runs_succeeded": statuses.count("succeeded"),
        }
    )


if __name__ == "__main__":
    main()
