"""Runs in .bench-venv (which has the real `mlflow`): make a tracking store, then print what
MLflow's own client reads back from it as JSON, the truth the import test compares against.

    python make_store.py TRACKING_URI ARTIFACT_ROOT N_RUNS
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from pathlib import Path

import mlflow
from mlflow.entities import Metric, Param, RunTag
from mlflow.tracking import MlflowClient

STATUSES = ["FINISHED", "FINISHED", "FINISHED", "FAILED", "KILLED"]


def make(uri: str, artifact_root: Path, n_runs: int) -> None:
    client = MlflowClient(tracking_uri=uri)
    experiments = [
        client.create_experiment(name, artifact_location=(artifact_root / name).as_uri()) for name in ("vision", "nlp")
    ]
    base = int(time.time() * 1000) - 3_600_000
    parent_id = None
    for i in range(n_runs):
        exp = experiments[i % 2]
        tags = {"team": "cv" if i % 2 == 0 else "nlp", "seed": str(i)}
        if parent_id is not None and i % 10 == 5:
            tags["mlflow.parentRunId"] = parent_id
        run = client.create_run(exp, start_time=base + i * 1000, tags=tags, run_name=f"run-{i:03d}")
        rid = run.info.run_id
        if i == 0:
            parent_id = rid
        params = [
            Param("lr", str(0.1 / (i + 1))),
            Param("batch_size", str(16 * (1 + i % 4))),
            Param("optimizer", "adam"),
            Param("model/depth", str(i % 5)),
        ]
        metrics = []
        for step in range(6):
            ts = base + i * 1000 + step * 10
            metrics.append(Metric("loss", 1.0 / (step + 1) + i * 0.001, ts, step))
            metrics.append(Metric("acc", step / 6, ts, step))
        if i % 25 == 3:
            metrics.append(Metric("grad_norm", math.nan, base + i * 1000, 0))
            metrics.append(Metric("grad_norm", 1.5, base + i * 1000 + 1, 1))
        client.log_batch(rid, metrics=metrics, params=params, tags=[RunTag("note", f"run {i}")])
        folder = artifact_root / "tmp" / rid
        folder.mkdir(parents=True)
        (folder / "summary.txt").write_text(f"run {i}\n" * (i + 1))
        client.log_artifact(rid, str(folder / "summary.txt"))
        if i % 10 == 0:
            (folder / "model").mkdir()
            (folder / "model" / "weights.bin").write_bytes(os.urandom(256))
            client.log_artifacts(rid, str(folder / "model"), artifact_path="model")
        client.set_terminated(rid, status=STATUSES[i % len(STATUSES)], end_time=base + i * 1000 + 500)
    deleted = client.create_run(experiments[0], run_name="deleted")
    client.delete_run(deleted.info.run_id)


def read_back(uri: str) -> list[dict]:
    client = MlflowClient(tracking_uri=uri)
    out = []
    for exp in client.search_experiments():
        if exp.name == "Default":
            continue
        for run in client.search_runs([exp.experiment_id], max_results=10_000):
            info, data = run.info, run.data
            history = {
                key: [
                    [m.step, m.timestamp, None if math.isnan(m.value) else m.value]
                    for m in client.get_metric_history(info.run_id, key)
                ]
                for key in data.metrics
            }
            out.append(
                {
                    "id": info.run_id,
                    "experiment": exp.name,
                    "name": info.run_name,
                    "status": info.status,
                    "start_time": info.start_time,
                    "end_time": info.end_time,
                    "params": data.params,
                    "tags": data.tags,
                    "metrics": history,
                    "artifacts": _artifacts(client, info.run_id, None),
                }
            )
    return out


def _artifacts(client: MlflowClient, run_id: str, path: str | None) -> list[list]:
    files = []
    for item in client.list_artifacts(run_id, path):
        if item.is_dir:
            files.extend(_artifacts(client, run_id, item.path))
        else:
            files.append([item.path, item.file_size])
    return sorted(files)


if __name__ == "__main__":
    uri, root, n = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
    mlflow.set_tracking_uri(uri)
    make(uri, root, n)
    json.dump(read_back(uri), sys.stdout)
