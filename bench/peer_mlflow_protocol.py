"""The MLflow client's side of bench/mlflow_protocol.py: seeds a tracking server, then times it.

Runs ONLY in the separate benchmark environment (.bench-venv, `make bench-venv`), never in the
project's, against whichever server `MLFLOW_TRACKING_URI` names (flightlog's or MLflow's own),
so both servers answer the same client code. Prints one JSON line.

    seed EXPERIMENT N      N runs made through the REST API by 8 threads (create + one log-batch
                           each: 10 params, 5 metrics, 2 tags, the same data for every server)
    measure EXP_ID REPEATS MlflowClient.log_batch of 1,000 metrics, then search_runs with a filter
                           and an order_by over the seeded experiment, then the same search as
                           one plain REST request (JSON decoded, no MLflow entities), REPEATS
                           timed calls each
"""

from __future__ import annotations

import json
import os
import random
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import requests

SEARCH_FILTER = "metrics.acc > 0.5 and params.opt = 'adam'"
SEARCH_ORDER = ["metrics.loss ASC"]
_local = threading.local()


def _post(path: str, body: dict) -> dict:
    """One REST call on this thread's keep-alive session; a refused call is retried (SQLite locks)."""
    session = getattr(_local, "session", None)
    if session is None:
        session = _local.session = requests.Session()
    url = os.environ["MLFLOW_TRACKING_URI"].rstrip("/") + "/api/2.0/mlflow/" + path
    for attempt in range(20):
        r = session.post(url, json=body, timeout=120)
        if r.status_code == 200:
            return r.json()
        if r.status_code < 500 or attempt == 19:
            raise SystemExit(f"{path}: {r.status_code} {r.text[:500]}")
        time.sleep(0.05 * (attempt + 1))
    raise AssertionError("unreachable")


def _seed_one(experiment_id: str, i: int) -> None:
    rng = random.Random(i)
    start = 1_700_000_000_000 + i * 1000
    run = _post(
        "runs/create",
        {"experiment_id": experiment_id, "run_name": f"run-{i}", "start_time": start, "tags": []},
    )["run"]["info"]["run_id"]
    params = [{"key": f"p{j}", "value": str(rng.randint(0, 99))} for j in range(9)]
    params.append({"key": "opt", "value": rng.choice(["adam", "sgd", "adamw"])})
    metrics = [
        {"key": key, "value": rng.random(), "timestamp": start + 500, "step": 0}
        for key in ("acc", "loss", "f1", "auc", "val_loss")
    ]
    tags = [{"key": "team", "value": f"team-{i % 7}"}, {"key": "kind", "value": "seeded"}]
    _post("runs/log-batch", {"run_id": run, "params": params, "metrics": metrics, "tags": tags})


def seed(name: str, n: int) -> dict:
    experiment_id = _post("experiments/create", {"name": name})["experiment_id"]
    t0 = time.perf_counter()
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda i: _seed_one(experiment_id, i), range(n)))
    return {"experiment_id": experiment_id, "runs": n, "seed_s": round(time.perf_counter() - t0, 2)}


def measure(experiment_id: str, repeats: int) -> dict:
    from mlflow.entities import Metric
    from mlflow.tracking import MlflowClient

    client = MlflowClient()
    run_id = client.create_run(experiment_id, run_name="ingest").info.run_id
    ts = int(time.time() * 1000)
    ingest = []
    for r in range(repeats + 1):  # the first call warms the connection and is left out
        batch = [Metric(f"m{j % 10}", float(j), ts, r * 100 + j // 10) for j in range(1000)]
        t0 = time.perf_counter()
        client.log_batch(run_id, metrics=batch)
        ingest.append(time.perf_counter() - t0)
    stored = len(client.get_metric_history(run_id, "m0"))
    search, rows = [], 0
    for _ in range(repeats + 1):
        t0 = time.perf_counter()
        found = client.search_runs([experiment_id], filter_string=SEARCH_FILTER, order_by=SEARCH_ORDER)
        search.append(time.perf_counter() - t0)
        rows = len(found)
    wire, wire_rows = [], 0  # the same request on the wire, decoded as JSON but not into MLflow's entities
    body = {"experiment_ids": [experiment_id], "filter": SEARCH_FILTER, "order_by": SEARCH_ORDER, "max_results": 1000}
    for _ in range(repeats + 1):
        t0 = time.perf_counter()
        doc = _post("runs/search", body)
        wire.append(time.perf_counter() - t0)
        wire_rows = len(doc["runs"])
    top, top_rows = [], 0
    for _ in range(repeats + 1):
        t0 = time.perf_counter()
        found = client.search_runs([experiment_id], filter_string=SEARCH_FILTER, order_by=SEARCH_ORDER, max_results=50)
        top.append(time.perf_counter() - t0)
        top_rows = len(found)
    return {
        "log_batch_s": ingest[1:],
        "m0_points_stored": stored,
        "search_s": search[1:],
        "search_rows": rows,
        "search_wire_s": wire[1:],
        "search_wire_rows": wire_rows,
        "search_top50_s": top[1:],
        "search_top50_rows": top_rows,
    }


if __name__ == "__main__":
    command, *rest = sys.argv[1:]
    out = seed(rest[0], int(rest[1])) if command == "seed" else measure(rest[0], int(rest[1]))
    out["mlflow_version"] = __import__("mlflow").__version__
    print(json.dumps(out))
