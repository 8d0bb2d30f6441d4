"""Run by the MLflow venv's interpreter: what the real MLflow client raises for bad input.

argv[1] is an experiment name this token may not touch. Prints {case: [error_code, http status]}."""

import json
import sys

import mlflow
from mlflow import MlflowClient
from mlflow.exceptions import MlflowException, RestException
from mlflow.utils.rest_utils import http_request

client = MlflowClient()
creds = client._tracking_client.store.get_host_creds()
exp_id = mlflow.set_experiment("errors").experiment_id
run_id = client.create_run(exp_id).info.run_id
out = {}


def code(name, fn):
    try:
        fn()
        out[name] = None
    except RestException as exc:
        out[name] = [exc.error_code, exc.get_http_status_code()]
    except MlflowException as exc:
        out[name] = [exc.error_code, exc.get_http_status_code()]


def raw(path, body):
    def call():
        resp = http_request(creds, "/api/2.0/mlflow" + path, "POST", json=body)
        if resp.status_code != 200:
            payload = resp.json()
            raise RestException(payload)

    return call


code("unknown_run", lambda: client.get_run("0" * 32))
code("bad_filter", lambda: client.search_runs([exp_id], filter_string="metrics.acc >> 1"))
code("or_filter", lambda: client.search_runs([exp_id], filter_string="metrics.a > 1 or metrics.b > 1"))
code("bad_order", lambda: client.search_runs([exp_id], order_by=["attributes.nope DESC"]))
metrics = [{"key": "m", "value": 1.0, "timestamp": 1, "step": i} for i in range(1001)]
code("batch_metrics", raw("/runs/log-batch", {"run_id": run_id, "metrics": metrics}))
params = [{"key": f"p{i}", "value": "v"} for i in range(101)]
code("batch_params", raw("/runs/log-batch", {"run_id": run_id, "params": params}))
code("long_param", raw("/runs/log-parameter", {"run_id": run_id, "key": "p", "value": "x" * 6001}))
code("metric_text", raw("/runs/log-metric", {"run_id": run_id, "key": "m", "value": "abc", "timestamp": 1}))
code("changed_param", lambda: (client.log_param(run_id, "lr", "0.1"), client.log_param(run_id, "lr", "0.2")))
code("other_project", lambda: mlflow.set_experiment(sys.argv[1]))
code("duplicate_experiment", lambda: client.create_experiment("errors"))
print(json.dumps(out))
