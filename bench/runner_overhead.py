"""The runner's own CPU cost around an idle child: sampling every 1 s versus (effectively) never.

Runs `flightlog run --sample-interval 1s -- sleep N` and the same with a 1-hour interval, and
reads the CPU seconds the runner process used (getrusage of children: the sleeping child adds
nothing). The difference is what resource sampling costs. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
from pathlib import Path

from _common import emit, fresh_home, machine


def cpu_of(cmd: list[str], env: dict[str, str]) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=20.0)
    args = parser.parse_args()
    home = fresh_home("overhead")
    env = {**os.environ, "FLIGHTLOG_HOME": str(home)}
    exe = str(Path(sys.executable).with_name("flightlog"))
    idle = ["sleep", str(args.seconds)]
    sampled = cpu_of([exe, "run", "--project", "bench", "--sample-interval", "1s", "--", *idle], env)
    unsampled = cpu_of([exe, "run", "--project", "bench", "--sample-interval", "1h", "--", *idle], env)
    emit(
        {
            "workload": f"flightlog run around `sleep {args.seconds:g}`",
            "machine": machine(),
            "runner_cpu_s_sampling_1s": round(sampled, 3),
            "runner_cpu_s_without_sampling": round(unsampled, 3),
            "sampling_cost_cpu_s": round(sampled - unsampled, 3),
            "sampling_cost_share_of_one_core": round((sampled - unsampled) / args.seconds, 4),
            "target_cpu_s_over_20s": 0.2,
        }
    )


if __name__ == "__main__":
    main()
