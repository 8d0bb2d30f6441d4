"""Query latency over HTTP: the first page of a 10,000-run project, and a 1,000,000-point metric
downsampled to 1,000 buckets (min and max kept per bucket).

The store is filled first (10,000 runs with 10 params, 3 tags and 5 metrics each; one run with
a 1,000,000-point metric written in 100 chunks, as an SDK flushing every 10,000 points would),
then `flightlog server --auth` runs as its own process and an HTTP client (keep-alive, as a
browser or the CLI would) times each query end to end: request, auth, store, JSON, response.

Prints one JSON object (milliseconds; median and 95th percentile of the timed requests).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from array import array
from pathlib import Path

from _common import emit, machine

FLIGHTLOG = str(Path(sys.executable).with_name("flightlog"))


def fill(home: Path, runs: int, points: int) -> str:
    from flightlog.schema.values import encode_series
    from flightlog.store.sqlite.store import SqliteStore

    store = SqliteStore(home / "flightlog.db")
    rng = random.Random(7)
    t0 = 1_780_000_000.0
    batch = []
    for i in range(runs):
        run_id = f"{i:08x}{rng.getrandbits(96):024x}"
        rec = {"r": run_id, "w": "bench", "t": t0 + i}
        batch += [
            {
                **rec,
                "k": "run",
                "s": 1,
                "project": "big",
                "name": f"run-{i}",
                "status": rng.choice(["succeeded", "failed", "running"]),
                "created": t0 + i,
                "started": t0 + i,
                "host": "gpu-1",
                "pid": 1,
            },
            {
                **rec,
                "k": "params",
                "s": 2,
                "data": {f"p{j}": rng.random() for j in range(9)} | {"lr": rng.choice([0.1, 0.01, 0.001])},
            },
            {**rec, "k": "tags", "s": 3, "data": {"team": "vision", "owner": f"u{i % 7}", "stage": "dev"}},
            {
                **rec,
                "k": "metrics",
                "s": 4,
                "attempt": 1,
                "series": {
                    f"m{j}": encode_series(array("q", [0]), array("d", [t0 + i]), array("d", [rng.random()]))
                    for j in range(5)
                },
            },
        ]
        if len(batch) >= 4000:
            store.ingest(batch)
            batch = []
    store.ingest(batch)
    big = "ffffffff" + "0" * 24
    store.ingest(
        [
            {
                "k": "run",
                "r": big,
                "w": "bench",
                "s": 1,
                "t": t0,
                "project": "metrics",
                "status": "succeeded",
                "created": t0,
            }
        ]
    )
    chunk = 10_000
    for n, start in enumerate(range(0, points, chunk)):
        steps = array("q", range(start, min(points, start + chunk)))
        times = array("d", (t0 + s * 0.01 for s in steps))
        values = array(
            "d", (1.0 / (1 + s * 1e-4) + rng.gauss(0, 0.01) + (5.0 if rng.random() < 1e-5 else 0.0) for s in steps)
        )
        store.ingest(
            [
                {
                    "k": "metrics",
                    "r": big,
                    "w": "bench",
                    "s": 2 + n,
                    "t": t0,
                    "attempt": 1,
                    "series": {"loss": encode_series(steps, times, values)},
                }
            ]
        )
    store.close()
    return big


def timed(client: object, path: str, params: dict[str, object], n: int) -> tuple[list[float], object]:
    get = client.get  # type: ignore[attr-defined]
    for _ in range(3):
        get(path, params=params).raise_for_status()
    times = []
    doc = None
    for _ in range(n):
        t0 = time.perf_counter()
        response = get(path, params=params)
        doc = response.json()
        times.append((time.perf_counter() - t0) * 1000)
        response.raise_for_status()
    return times, doc


def summary(times: list[float]) -> dict[str, float]:
    ordered = sorted(times)
    return {
        "median_ms": round(statistics.median(ordered), 2),
        "p95_ms": round(ordered[int(len(ordered) * 0.95) - 1], 2),
        "min_ms": round(ordered[0], 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--points", type=int, default=1_000_000)
    parser.add_argument("--requests", type=int, default=30)
    args = parser.parse_args()
    import httpx

    work = Path(tempfile.mkdtemp(prefix="flightlog-bench-query-"))
    t = time.perf_counter()
    big = fill(work, args.runs, args.points)
    fill_s = time.perf_counter() - t
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLIGHTLOG_")}
    token = json.loads(
        subprocess.run(
            [FLIGHTLOG, "token", "create", "--role", "reader", "--home", str(work), "--format", "json"],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )["token"]
    server = subprocess.Popen(
        [FLIGHTLOG, "server", "--port", "0", "--auth", "--home", str(work)], env=env, stdout=subprocess.PIPE, text=True
    )
    assert server.stdout is not None
    url = server.stdout.readline().split("listening on ")[1].split()[0]
    try:
        with httpx.Client(base_url=url + "/api/v1", headers={"Authorization": f"Bearer {token}"}, timeout=60) as api:
            page_times, page = timed(api, "/runs", {"project": "big", "limit": 50}, args.requests)
            filtered_times, _ = timed(
                api,
                "/runs",
                {
                    "project": "big",
                    "filter": "params.lr > 0.005 and status = 'failed'",
                    "order_by": "-metrics.m0",
                    "limit": 50,
                },
                args.requests,
            )
            chart_times, chart = timed(api, f"/runs/{big}/metrics/loss", {"buckets": 1000}, args.requests)
    finally:
        server.terminate()
        server.wait(timeout=60)
    assert isinstance(page, dict) and isinstance(chart, dict)
    emit(
        {
            "benchmark": "server_query",
            "runs_in_project": args.runs,
            "first_page": {**summary(page_times), "runs_returned": len(page["runs"]), "target_ms": 50},
            "filtered_ordered_page": summary(filtered_times),
            "metric_points": chart["points"],
            "downsampled_1000_buckets": {**summary(chart_times), "buckets": chart["buckets"], "target_ms": 100},
            "fill_seconds": round(fill_s, 1),
            "machine": machine(),
        }
    )


if __name__ == "__main__":
    main()
