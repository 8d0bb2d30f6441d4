"""Ingest throughput over HTTP: 8 writer processes, the real SDK in remote mode, one server.

Each writer is `flightlog.init()` + `run.log({20 metrics}, step=i)` in a loop + `finish()`,
with FLIGHTLOG_URL set: the SDK journals locally and its shipper POSTs gzip'd msgpack batches
(its own columnar metric records) to `flightlog server` running as another process on this
machine (with --auth, so every request is authenticated). The writers share the machine's
cores with the server. The clock runs from the first writer's first point to the last
writer's return from `finish()` (which returns once the server has taken everything), and
the server's own count of stored points is checked against what was logged.

Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import emit, machine

FLIGHTLOG = str(Path(sys.executable).with_name("flightlog"))
WRITER = """
import json, sys, time, flightlog
steps, width, start_at = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
names = [f"m{j}" for j in range(width)]
run = flightlog.init(project="bench", name=sys.argv[4], resources=False)
while time.time() < start_at:
    time.sleep(0.001)
t0 = time.time()
log = run.log
for i in range(steps):
    v = float(i)
    log({n: v for n in names}, step=i)
run.finish()
t1 = time.time()
cpu = time.process_time()
print(json.dumps({"id": run.id, "points": steps * width, "t0": t0, "t1": t1, "stats": run.stats, "cpu": cpu}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--steps", type=int, default=25_000, help="log() calls per writer")
    parser.add_argument("--width", type=int, default=20, help="metrics per log() call")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="flightlog-bench-ingest-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLIGHTLOG_")}
    token = json.loads(
        subprocess.run(
            [FLIGHTLOG, "token", "create", "--role", "writer", "--home", str(work / "server"), "--format", "json"],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )["token"]
    server = subprocess.Popen(
        [FLIGHTLOG, "server", "--port", "0", "--auth", "--home", str(work / "server")],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdout is not None
    url = server.stdout.readline().split("listening on ")[1].split()[0]
    try:
        start_at = time.time() + 3.0  # every writer imported and connected before the clock starts
        writers = [
            subprocess.Popen(
                [sys.executable, "-c", WRITER, str(args.steps), str(args.width), str(start_at), f"w{i}"],
                env={**env, "FLIGHTLOG_URL": url, "FLIGHTLOG_TOKEN": token, "FLIGHTLOG_HOME": str(work / f"writer{i}")},
                stdout=subprocess.PIPE,
                text=True,
            )
            for i in range(args.writers)
        ]
        results = []
        for proc in writers:
            out, _ = proc.communicate(timeout=600)
            if proc.returncode != 0:
                raise SystemExit(f"a writer failed ({proc.returncode})")
            results.append(json.loads(out.strip().splitlines()[-1]))
        import httpx

        stored = 0
        with httpx.Client(base_url=url + "/api/v1", headers={"Authorization": f"Bearer {token}"}) as api:
            for r in results:
                stored += sum(m["count"] for m in api.get(f"/runs/{r['id']}/metrics").json()["metrics"])
            server_metrics = httpx.get(url + "/metrics").text
        import psutil

        cpu = psutil.Process(server.pid).cpu_times()
        server_cpu = cpu.user + cpu.system
    finally:
        server.terminate()
        server.wait(timeout=60)
    t0 = min(r["t0"] for r in results)
    t1 = max(r["t1"] for r in results)
    points = sum(r["points"] for r in results)
    batches = next(
        (
            int(line.split()[-1])
            for line in server_metrics.splitlines()
            if line.startswith("flightlog_ingest_batches_total")
        ),
        None,
    )
    if os.environ.get("BENCH_DEBUG"):
        print([(round(r["t0"] - t0, 2), round(r["t1"] - t0, 2)) for r in results], file=sys.stderr)
    emit(
        {
            "benchmark": "server_ingest",
            "writers": args.writers,
            "metrics_per_log_call": args.width,
            "points": points,
            "points_stored": stored,
            "seconds": round(t1 - t0, 3),
            "points_per_second": round(points / (t1 - t0)),
            "target_points_per_second": 300_000,
            "ingest_requests": batches,
            "ship_errors": sum(r["stats"]["ship_errors"] for r in results),
            "server_cpu_seconds": round(server_cpu, 2),
            "writers_cpu_seconds": round(sum(r["cpu"] for r in results), 2),
            "machine": machine(),
        }
    )


if __name__ == "__main__":
    main()
