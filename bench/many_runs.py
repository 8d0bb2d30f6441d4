"""W2: 1,000 runs with 20 params and 5 final metrics each, then a query; and start-up time.

Prints one JSON object: the time to create the 1,000 runs through the public SDK
(init → log → finish, sequentially), the latency of `params.lr > 0.01` ordered by
`-metrics.acc` (top 50), and `import flightlog` + `flightlog.init()` in a fresh process.
With --peers, the same through MLflow in .bench-venv, and the ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time

from _common import emit, fresh_home, machine, run_peer

RUNS = 1000
STARTUP = """
import time
t0 = time.perf_counter()
import flightlog
run = flightlog.init(project="startup")
t1 = time.perf_counter()
run.finish()
print(t1 - t0)
"""


def create_runs() -> float:
    import flightlog

    rng = random.Random(7)
    t0 = time.perf_counter()
    for i in range(RUNS):
        params = {f"p{j}": rng.random() for j in range(19)}
        params["lr"] = rng.choice([0.001, 0.003, 0.01, 0.03, 0.1])
        run = flightlog.init(project="w2", name=f"run-{i}", params=params)
        run.log(
            {
                "acc": rng.random(),
                "loss": rng.random(),
                "f1": rng.random(),
                "auc": rng.random(),
                "val_loss": rng.random(),
            }
        )
        run.finish()
    return time.perf_counter() - t0


def query_ms() -> tuple[float, int]:
    import flightlog

    client = flightlog.Client()
    client.runs(project="w2", filter="params.lr > 0.01", order_by="-metrics.acc", limit=50)  # warm
    times = []
    for _ in range(20):
        t0 = time.perf_counter()
        rows = client.runs(project="w2", filter="params.lr > 0.01", order_by="-metrics.acc", limit=50)
        times.append(time.perf_counter() - t0)
    return min(times) * 1000, len(rows)


def startup_s() -> float:
    env = {**os.environ}
    samples = []
    for _ in range(5):
        out = subprocess.run([sys.executable, "-c", STARTUP], env=env, capture_output=True, text=True, check=True)
        samples.append(float(out.stdout.strip()))
    return min(samples)


def _set_runs(runs: int) -> None:
    global RUNS
    RUNS = runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--peers", action="store_true", help="also run MLflow in .bench-venv and print ratios")
    parser.add_argument("--runs", type=int, default=RUNS, help="runs to create (bench/ab.py --quick uses fewer)")
    args = parser.parse_args()
    _set_runs(args.runs)
    fresh_home("w2")
    create = create_runs()
    q, n = query_ms()
    start = startup_s()
    result = {
        "workload": "W2: 1,000 runs x 20 params x 5 final metrics; query params.lr > 0.01 by -metrics.acc top 50",
        "machine": machine(),
        "runs": RUNS,
        "create_1000_runs_s": round(create, 3),  # the time for RUNS runs (1,000 unless --runs says otherwise)
        "query_ms": round(q, 2),
        "query_rows": n,
        "import_and_init_s": round(start, 3),
        "targets": {"create_1000_runs_s": 5.0, "query_ms": 20, "import_and_init_s": 0.3},
    }
    result["meets_targets"] = create <= 5.0 and q <= 20 and start <= 0.3
    if args.peers:
        peer = run_peer("peer_mlflow.py", "w2")
        result["peers"] = {"mlflow": peer}
        if "error" not in peer:
            result["ratios"] = {
                "mlflow_vs_flightlog_create_1000": round(peer["create_1000_runs_s"] / create, 1),
                "mlflow_vs_flightlog_query": round(peer["query_ms"] / q, 1),
                "mlflow_vs_flightlog_import_and_start": round(peer["import_and_start_s"] / start, 1),
            }
    emit(result)
    json.dumps(result)


if __name__ == "__main__":
    main()
