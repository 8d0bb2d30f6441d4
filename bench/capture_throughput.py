"""Runner capture throughput: a Python child writes 1,000,000 short lines.

Compares the child's wall time redirected to a file (as is, and with PYTHONUNBUFFERED=1, which
`flightlog run` sets for its child) with the wall time of
`flightlog run` around the same child, until `flightlog run` returns with every line stored
and searchable (checked: the stored count and a search for the last line). Prints one JSON
object with lines/s and the ratio.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import emit, fresh_home, machine

CHILD = 'import sys\nw = sys.stdout.write\nfor i in range({n}):\n    w(f"line {{i}} loss=0.{{i % 997}}\\n")\n'


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    home = fresh_home("capture")
    code = CHILD.format(n=args.lines)
    flightlog_exe = str(Path(sys.executable).with_name("flightlog"))
    direct, direct_unbuffered, wrapped = [], [], []
    base_env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    for _ in range(args.rounds):
        for times, extra in ((direct, {}), (direct_unbuffered, {"PYTHONUNBUFFERED": "1"})):
            with tempfile.TemporaryFile() as sink:
                t0 = time.perf_counter()
                subprocess.run([sys.executable, "-c", code], stdout=sink, check=True, env={**base_env, **extra})
                times.append(time.perf_counter() - t0)
        with tempfile.TemporaryFile() as sink:
            t0 = time.perf_counter()
            subprocess.run(
                [flightlog_exe, "run", "--project", "bench", "--name", "capture", "--", sys.executable, "-c", code],
                stdout=sink,
                stderr=subprocess.DEVNULL,
                check=True,
                env={**base_env, "FLIGHTLOG_HOME": str(home)},
            )
            wrapped.append(time.perf_counter() - t0)
    import flightlog

    client = flightlog.Client(home=home)
    run = client.runs(project="bench", limit=1)[0]
    stored = int(run.counters.get("log_events", 0))
    t0 = time.perf_counter()
    found = client.logs(run.id, grep=f"^line {args.lines - 1} ")
    search_s = time.perf_counter() - t0
    best_direct, best_unbuffered, best_wrapped = min(direct), min(direct_unbuffered), min(wrapped)
    emit(
        {
            "workload": f"python child writing {args.lines:,} lines (sys.stdout.write(f'line {{i}} loss=0.{{i % 997}}\\n'))",
            "machine": machine(),
            "direct_to_file_s": round(best_direct, 3),
            "flightlog_run_s": round(best_wrapped, 3),
            "flightlog_run_lines_per_s": round(args.lines / best_wrapped),
            "direct_lines_per_s": round(args.lines / best_direct),
            "ratio_flightlog_run_to_direct": round(best_wrapped / best_direct, 2),
            # flightlog run sets PYTHONUNBUFFERED=1 for its child (lines must arrive as written):
            # the same child, unbuffered, redirected to a file, isolates flightlog's own cost
            "direct_unbuffered_to_file_s": round(best_unbuffered, 3),
            "ratio_flightlog_run_to_direct_unbuffered": round(best_wrapped / best_unbuffered, 2),
            "stored_events_last_run": stored,
            "every_line_stored": stored == args.lines,
            "search_last_line_s": round(search_s, 3),
            "search_found": len(found),
            "target_lines_per_s": 300_000,
        }
    )


if __name__ == "__main__":
    main()
