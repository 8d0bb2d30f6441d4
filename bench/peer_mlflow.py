"""The W1/W2 workloads through MLflow (run by log_throughput.py / many_runs.py --peers).

Runs ONLY in the separate benchmark environment (.bench-venv, `make bench-peers`), never in
the project's. Uses MLflow's fastest documented APIs: asynchronous `log_metrics`
(synchronous=False) and `MlflowClient.log_batch`, on its SQLite store. Prints one JSON line.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tempfile
import time

STEPS = 2000  # MLflow is slow enough that a sample of the 100,000 steps gives its per-point cost


def _setup(store: str = "sqlite") -> str:
    """A fresh tracking store: MLflow's SQLite store, or its file store (``mlruns``)."""
    import mlflow

    tmp = tempfile.mkdtemp(prefix="mlflow-bench-")
    if store == "file":  # in "maintenance mode" since 3.x: refused unless asked for
        os.environ["MLFLOW_ALLOW_FILE_STORE"] = "true"
    uri = f"sqlite:///{tmp}/mlflow.db" if store == "sqlite" else f"file://{tmp}/mlruns"
    mlflow.set_tracking_uri(uri)
    os.chdir(tmp)
    return uri


def w1() -> dict[str, float]:
    import mlflow
    from mlflow.entities import Metric
    from mlflow.tracking import MlflowClient

    _setup()
    out: dict[str, float] = {}
    with mlflow.start_run() as run:
        t0 = time.perf_counter()
        for i in range(STEPS):
            x = i * 0.001
            mlflow.log_metrics(
                {"loss": 1.0 / (i + 1), "acc": x, "lr": 0.1, "grad_norm": x * 2, "throughput": 1000.0 + x},
                step=i,
                synchronous=False,
            )
        out["log_metrics_async_us_per_point"] = (time.perf_counter() - t0) / (STEPS * 5) * 1e6
        from mlflow.utils.async_logging.run_operations import RunOperations  # noqa: F401

        mlflow.flush_async_logging()
        out["log_metrics_async_incl_flush_us_per_point"] = (time.perf_counter() - t0) / (STEPS * 5) * 1e6
        client = MlflowClient()
        t0 = time.perf_counter()
        for i in range(STEPS):
            ts = int(time.time() * 1000)
            x = i * 0.001
            client.log_batch(
                run.info.run_id,
                metrics=[
                    Metric("loss2", 1.0 / (i + 1), ts, i),
                    Metric("acc2", x, ts, i),
                    Metric("lr2", 0.1, ts, i),
                    Metric("grad_norm2", x * 2, ts, i),
                    Metric("throughput2", 1000.0 + x, ts, i),
                ],
            )
        out["log_batch_us_per_point"] = (time.perf_counter() - t0) / (STEPS * 5) * 1e6
        ts = int(time.time() * 1000)
        for start in range(0, 100_000, 1000):  # 100,000 points of one metric, 1,000 per batch
            client.log_batch(
                run.info.run_id, metrics=[Metric("hist", float(i), ts, i) for i in range(start, start + 1000)]
            )
        t0 = time.perf_counter()
        history = client.get_metric_history(run.info.run_id, "hist")
        out["read_100k_history_ms"] = (time.perf_counter() - t0) * 1000
        assert len(history) == 100_000
    return out


def w2(store: str = "sqlite") -> dict[str, float]:
    import mlflow

    uri = _setup(store)
    rng = random.Random(7)
    t0 = time.perf_counter()
    for i in range(1000):
        params = {f"p{j}": rng.random() for j in range(19)}
        params["lr"] = rng.choice([0.001, 0.003, 0.01, 0.03, 0.1])
        with mlflow.start_run(run_name=f"run-{i}"):
            mlflow.log_params(params)
            mlflow.log_metrics(
                {
                    "acc": rng.random(),
                    "loss": rng.random(),
                    "f1": rng.random(),
                    "auc": rng.random(),
                    "val_loss": rng.random(),
                }
            )
    create = time.perf_counter() - t0
    # MLflow compares params as strings only: select lr > 0.01 by excluding the values below it
    query = "params.lr != '0.001' and params.lr != '0.003' and params.lr != '0.01'"
    mlflow.search_runs(filter_string=query, order_by=["metrics.acc DESC"], max_results=50)
    t0 = time.perf_counter()
    rows = mlflow.search_runs(filter_string=query, order_by=["metrics.acc DESC"], max_results=50)
    q = time.perf_counter() - t0
    code = (
        f"import time; t0=time.perf_counter(); import mlflow; mlflow.set_tracking_uri({uri!r}); "
        "mlflow.start_run(); print(time.perf_counter()-t0); mlflow.end_run()"
    )
    start = min(
        float(
            subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()[-1]
        )
        for _ in range(3)
    )
    return {"create_1000_runs_s": create, "query_ms": q * 1000, "query_rows": len(rows), "import_and_start_s": start}


if __name__ == "__main__":
    result = {"w1": w1, "w2": w2}[sys.argv[1]](*sys.argv[2:])  # w2 [sqlite|file]
    result["mlflow_version"] = __import__("mlflow").__version__
    result["store"] = sys.argv[2] if len(sys.argv) > 2 else "sqlite"
    print(json.dumps({k: round(v, 3) if isinstance(v, float) else v for k, v in result.items()}))
