"""Run by the MLflow venv's interpreter: the real MLflow client against a flightlog server.

Prints one JSON document of what the client read back; the test compares it with what it
logged. MLFLOW_TRACKING_URI and the credentials come from the environment."""

import json
import time

import mlflow
from mlflow import MlflowClient
from mlflow.entities import Metric, Param, RunTag

out = {}
exp_id = mlflow.set_experiment("vision").experiment_id
out["experiment_id"] = exp_id
client = MlflowClient()
runs = {}
for i, (lr, acc, team) in enumerate([("0.1", 0.91, "vision-a"), ("0.01", 0.72, "nlp"), ("0.1", 0.40, "vision-b")]):
    with mlflow.start_run(run_name=f"r{i}") as run:
        mlflow.log_param("lr", lr)
        mlflow.log_params({"batch": 32, "opt": "adam"})
        mlflow.set_tag("team", team)
        for step in range(5):
            mlflow.log_metric("loss", 1.0 / (step + 1), step=step)
        mlflow.log_metrics({"acc": acc}, step=4)
        runs[f"r{i}"] = run.info.run_id
    if i == 2:
        client.set_terminated(run.info.run_id, status="FAILED")
out["runs"] = runs
t = int(time.time() * 1000)
batch_run = client.create_run(exp_id, run_name="batch")
client.log_batch(
    batch_run.info.run_id,
    metrics=[Metric("m", float(i), t + i, i) for i in range(1000)],
    params=[Param(f"p{i}", str(i)) for i in range(100)],
    tags=[RunTag("kind", "batch")],
)
client.set_terminated(batch_run.info.run_id)
got = client.get_run(batch_run.info.run_id)
out["batch"] = {
    "params": len(got.data.params),
    "metric_m": got.data.metrics.get("m"),
    "history": [(m.step, m.value, m.timestamp) for m in client.get_metric_history(batch_run.info.run_id, "m")][:3],
    "history_len": len(client.get_metric_history(batch_run.info.run_id, "m")),
    "status": got.info.status,
    "tags": {k: v for k, v in got.data.tags.items() if not k.startswith("mlflow.")},
}
r0 = client.get_run(runs["r0"])
out["r0"] = {
    "params": r0.data.params,
    "metrics": r0.data.metrics,
    "tags": {k: v for k, v in r0.data.tags.items() if k == "team"},
    "status": r0.info.status,
    "name": r0.info.run_name,
    "loss": [(m.step, m.value) for m in client.get_metric_history(runs["r0"], "loss")],
}


def names(filter_string="", order_by=None):
    found = mlflow.search_runs([exp_id], filter_string=filter_string, order_by=order_by, output_format="list")
    return [r.info.run_name for r in found]


out["search"] = {
    "acc_gt": names("metrics.acc > 0.5", ["metrics.acc DESC"]),
    "lr_and_like": names("params.lr = '0.1' and tags.team LIKE 'vision%'", ["attributes.run_name ASC"]),
    "failed": names("attributes.status = 'FAILED'"),
    "finished_by_name": names("attributes.status = 'FINISHED'", ["run_name DESC"]),
    "ilike": names("tags.team ILIKE 'VISION%'", ["run_name"]),
    "in": names(f"attributes.run_id IN ('{runs['r0']}', '{runs['r1']}')", ["run_name"]),
    "start_time": names(f"attributes.start_time >= {t}", ["run_name"]),
}
top = client.search_runs([exp_id], filter_string="metrics.acc > 0.5", order_by=["metrics.acc DESC"])[0]
out["search_data"] = {"metrics": top.data.metrics, "params": top.data.params, "team": top.data.tags.get("team")}
page = client.search_runs([exp_id], max_results=2, order_by=["attributes.run_name ASC"])
page2 = client.search_runs([exp_id], max_results=2, order_by=["attributes.run_name ASC"], page_token=page.token)
out["pages"] = [[r.info.run_name for r in page], [r.info.run_name for r in page2], page2.token]
client.delete_run(runs["r1"])
out["after_delete"] = names("", ["run_name"])
out["deleted_stage"] = client.get_run(runs["r1"]).info.lifecycle_stage
client.restore_run(runs["r1"])
out["after_restore"] = names("", ["run_name"])
client.delete_tag(runs["r0"], "team")
out["r0_tags_after_delete"] = sorted(k for k in client.get_run(runs["r0"]).data.tags if not k.startswith("mlflow."))
out["by_name"] = client.get_experiment_by_name("vision").experiment_id
out["experiments"] = sorted(e.name for e in client.search_experiments())
# the web UI's call (no client method): through the client's own REST helper, auth and all
from mlflow.utils.databricks_utils import get_databricks_host_creds  # noqa: E402
from mlflow.utils.rest_utils import http_request  # noqa: E402

creds = (
    get_databricks_host_creds(mlflow.get_tracking_uri()) if False else client._tracking_client.store.get_host_creds()
)
resp = http_request(
    creds,
    "/api/2.0/mlflow/metrics/get-history-bulk-interval",
    "GET",
    params={"run_ids": [runs["r0"], runs["r1"]], "metric_key": "loss", "max_results": 3},
)
out["bulk"] = sorted((m["run_id"] == runs["r0"], m["step"]) for m in resp.json()["metrics"])
print(json.dumps(out))
