"""What ``init()``'s console capture costs a print-heavy loop: 100,000 ``print()`` calls to a
pipe, with the capture and without it (``console=False``).

Each variant runs in a fresh child whose stdout is a pipe the parent drains. The figure is the
process's CPU time (every thread: the capture's drain thread does its redaction, grouping and
storing in the same process) from the loop's start to the end of ``run.finish()``, which
stores what is left; the loop's wall time is reported too (noisy on a shared machine). Best
of ``--repeat``, the variants interleaved. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import textwrap

from _common import emit, fresh_home, machine

CHILD = textwrap.dedent("""
    import sys, time
    import flightlog
    run = flightlog.init(project="bench", resources=False, console={console}, quiet=True)
    cpu, wall = time.process_time(), time.perf_counter()
    for i in range({n}):
        print(f"step {{i}} loss={{1.0 / (i + 1):.6f}} lr=0.001 throughput=1234.5 samples/s")
    wall = time.perf_counter() - wall
    run.finish()
    sys.stderr.write(f"{{time.process_time() - cpu}} {{wall}}" + chr(10))
""")


def loop_seconds(console: bool, n: int, env: dict[str, str]) -> tuple[float, float]:
    """(CPU seconds, loop wall seconds) of one child."""
    proc = subprocess.run(
        [sys.executable, "-c", CHILD.format(console=console, n=n)], env=env, capture_output=True, text=True, check=True
    )
    assert proc.stdout.count("\n") == n
    cpu, wall = proc.stderr.strip().splitlines()[-1].split()
    return float(cpu), float(wall)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--prints", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    home = fresh_home("console")
    env = {**os.environ, "FLIGHTLOG_HOME": str(home)}
    without, with_capture = [], []
    for _ in range(args.repeat):  # interleaved, so that a busy moment hurts both alike
        without.append(loop_seconds(False, args.prints, env))
        with_capture.append(loop_seconds(True, args.prints, env))
    cpu_without, cpu_with = min(c for c, _ in without), min(c for c, _ in with_capture)
    wall_without, wall_with = min(w for _, w in without), min(w for _, w in with_capture)
    emit(
        {
            "workload": f"{args.prints} print() calls to a pipe after flightlog.init()",
            "machine": machine(),
            "cpu_s_without_capture": round(cpu_without, 3),
            "cpu_s_with_capture": round(cpu_with, 3),
            "cpu_ratio": round(cpu_with / cpu_without, 2),
            "cost_us_per_print": round((cpu_with - cpu_without) / args.prints * 1e6, 2),
            "loop_wall_s_without_capture": round(wall_without, 3),
            "loop_wall_s_with_capture": round(wall_with, 3),
            "wall_ratio": round(wall_with / wall_without, 2),
        }
    )


if __name__ == "__main__":
    main()
