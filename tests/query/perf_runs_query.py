"""Time one filtered, ordered page over 1,000 runs × 20 params × 5 metrics (not a test).

    .venv/bin/python tests/query/perf_runs_query.py [N_RUNS]

Prints JSON: the median and p95 milliseconds of the query and its SQLite query plan.
"""

from __future__ import annotations

import json
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from query_store import create_store, insert_runs  # noqa: E402

from flightlog.query import compile_runs_query  # noqa: E402


def build(path: Path, n_runs: int = 1000) -> sqlite3.Connection:
    rng = random.Random(7)
    conn = create_store(path)
    runs = []
    for i in range(n_runs):
        params = {"lr": 10 ** rng.uniform(-4, -1), "batch_size": rng.choice([32, 64, 128])}
        params |= {f"p{k}": rng.choice([rng.random(), f"v{rng.randint(0, 9)}", True]) for k in range(18)}
        metrics = {m: rng.random() for m in ("acc", "loss", "val/loss", "f1", "lr_now")}
        runs.append({"id": f"run{i:05d}", "project": "vision", "created": 1.7e9 + i,
                     "status": rng.choice(["succeeded", "failed", "running"]),
                     "params": params, "metrics": metrics, "tags": {"team": "vision"}})  # fmt: skip
    insert_runs(conn, runs)
    return conn


def main() -> None:
    n_runs = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    with tempfile.TemporaryDirectory() as tmp:
        build(Path(tmp) / "flightlog.db", n_runs).close()
        conn = sqlite3.connect(Path(tmp) / "flightlog.db")  # a fresh reader, as a store would
        sql, params = compile_runs_query(project="vision", filter="params.lr > 0.01", order_by="-metrics.acc", limit=50)
        times = []
        for _ in range(200):
            t0 = time.perf_counter()
            rows = conn.execute(sql, params).fetchall()
            times.append((time.perf_counter() - t0) * 1000)
        plan = [r[-1] for r in conn.execute("EXPLAIN QUERY PLAN " + sql, params)]
        print(json.dumps({"rows": len(rows), "median_ms": round(statistics.median(times), 3),
                          "p95_ms": round(sorted(times)[189], 3), "max_ms": round(max(times), 3),
                          "sql": sql, "plan": plan}, indent=2))  # fmt: skip


if __name__ == "__main__":
    main()
