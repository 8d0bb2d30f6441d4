"""A run with very many metric names (10,000 by default): `flightlog metrics` (JSON, and the
table with a sparkline per metric), `runs ls` and `runs show` (JSON), each as the real command in its own process, over the embedded
store and over a server (`flightlog server` in a thread of this process, loopback, no auth).

Each metric has 2 points. Reading a run's summaries must cost once per run, not once per
metric name: before that fix `flightlog metrics` re-read every summary for every name.

    python bench/metric_names.py [--names 10000] [--skip-http]

Prints one JSON object (seconds, wall clock of each command).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from array import array
from pathlib import Path

from _common import emit, fresh_home, machine

FLIGHTLOG = str(Path(sys.executable).with_name("flightlog"))
RUN = "0123456789abcdef0123456789abcdef"


def fill(home: Path, names: int) -> None:
    from flightlog.schema.values import encode_series
    from flightlog.store.sqlite.store import SqliteStore

    store = SqliteStore(home / "flightlog.db")
    now = time.time()
    steps, times = array("q", [0, 1]), array("d", [now - 1, now])
    series = {
        f"layer{i // 100:03d}/grad_norm_{i % 100:02d}": encode_series(steps, times, array("d", [1.0, 0.5]))
        for i in range(names)
    }
    store.ingest(
        [
            {
                "k": "run",
                "r": RUN,
                "w": "bench",
                "s": 1,
                "t": now,
                "project": "bench",
                "name": "wide",
                "status": "succeeded",
                "created": now,
                "started": now,
                "ended": now + 1,
            },
            {"k": "metrics", "r": RUN, "w": "bench", "s": 2, "t": now, "attempt": 1, "series": series},
        ]
    )
    store.close()


def timed_command(env: dict[str, str], *args: str, fmt: str = "json") -> float:
    t0 = time.perf_counter()
    proc = subprocess.run([FLIGHTLOG, *args, "--format", fmt], env=env, capture_output=True, text=True, timeout=3600)
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"flightlog {' '.join(args)} failed: {proc.stderr[-2000:]}")
    return round(elapsed, 3)


def commands(env: dict[str, str]) -> dict[str, float]:
    return {
        "metrics": timed_command(env, "metrics", RUN[:8]),
        "metrics_table": timed_command(env, "metrics", RUN[:8], fmt="text"),  # a sparkline per metric: one history each
        "runs_ls": timed_command(env, "runs", "ls"),
        "runs_show": timed_command(env, "runs", "show", RUN[:8]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--names", type=int, default=10_000)
    parser.add_argument("--skip-http", action="store_true", help="only the embedded store")
    args = parser.parse_args()
    home = fresh_home("metric-names")
    fill(home, args.names)
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLIGHTLOG_")}
    env["FLIGHTLOG_HOME"] = str(home)
    result: dict[str, object] = {"machine": machine(), "metric_names": args.names, "embedded_s": commands(env)}
    if not args.skip_http:
        from flightlog.server.testing import serve_in_thread

        with serve_in_thread(home) as server:
            result["http_s"] = commands({**env, "FLIGHTLOG_URL": server.url, "FLIGHTLOG_HOME": str(home / "client")})
    emit(result)


if __name__ == "__main__":
    main()
