"""W2: 1,000 runs with 20 params and 5 final metrics each, then a query; and start-up time.

Prints one JSON object: the time to create the 1,000 runs through the public SDK
(init → log → finish, sequentially, at the defaults: resource sampling, console capture, a new
FLIGHTLOG_HOME), the latency of `params.lr > 0.01` ordered by `-metrics.acc` (top 50), and
`import flightlog` + `flightlog.init()` in a fresh process, with the load average.

With --peers, the same 1,000 runs through MLflow in .bench-venv, on its file store and on its
SQLite store, alternated with flightlog's in each of --rounds rounds (a rotating order, each in a
fresh store); the best of each is quoted, and the ratio of MLflow's best store to flightlog.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from typing import Any

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
    parser.add_argument("--rounds", type=int, default=None, help="rounds (default 1; 2 with --peers)")
    args = parser.parse_args()
    _set_runs(args.runs)
    rounds = args.rounds or (2 if args.peers else 1)
    load_before = os.getloadavg()
    creates: list[float] = []
    peers: dict[str, list[dict[str, Any]]] = {"mlflow_file": [], "mlflow_sqlite": []}
    for r in range(rounds):
        jobs: list[tuple[str, Any]] = [("flightlog", None)]
        if args.peers:
            jobs += [("mlflow_file", "file"), ("mlflow_sqlite", "sqlite")]
        for name, store in jobs[r % len(jobs) :] + jobs[: r % len(jobs)]:
            if store is None:
                fresh_home(f"w2-{r}")
                creates.append(create_runs())
            else:
                peers[name].append(run_peer("peer_mlflow.py", "w2", store))
    create = min(creates)
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
        "create_1000_runs_s_all_rounds": [round(c, 3) for c in creates],
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "targets": {"create_1000_runs_s": 1.2, "query_ms": 20, "import_and_init_s": 0.3},
    }
    result["meets_targets"] = create <= 1.2 and q <= 20 and start <= 0.3
    if args.peers:
        result["peers"] = peers
        ok = [p for side in peers.values() for p in side if "error" not in p]
        if ok:
            best = min(ok, key=lambda p: p["create_1000_runs_s"])
            result["mlflow_best"] = {"store": best["store"], "create_1000_runs_s": best["create_1000_runs_s"]}
            result["ratios"] = {
                "mlflow_best_vs_flightlog_create_1000": round(best["create_1000_runs_s"] / create, 1),
                "mlflow_vs_flightlog_query": round(min(p["query_ms"] for p in ok) / q, 1),
                "mlflow_vs_flightlog_import_and_start": round(min(p["import_and_start_s"] for p in ok) / start, 1),
                "target_create_ratio": 10,
            }
    emit(result)
    json.dumps(result)


if __name__ == "__main__":
    main()
