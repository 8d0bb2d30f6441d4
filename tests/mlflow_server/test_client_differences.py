"""The last differences an MLflow client met against flightlog, each against the real MLflow 3
client (.bench-venv) and a real `flightlog server` (auth on), as the same script meets a real
`mlflow server`: the metric history after `log_model` has each point once; experiment 0 is
"Default"; stages move (CI jobs use them) and `models:/NAME/Production` resolves; a client
without a token is told to set MLFLOW_TRACKING_TOKEN; the run link the client prints opens the
run (tests/ui/test_mlflow_links.py opens it in a browser)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

import flightlog
from flightlog.server.testing import RunningServer
from tests.helpers import cli_json
from tests.mlflow_server.test_artifacts import mlflow_script, server

__all__ = ["server"]
pytestmark = pytest.mark.timeout(600)

_SCRIPT = """
import json, sys
import numpy as np
import mlflow
from mlflow import MlflowClient
from sklearn.linear_model import LogisticRegression

client = MlflowClient()
default = client.get_experiment("0")
by_name = client.get_experiment_by_name("Default")
listed = [e.name for e in client.search_experiments(filter_string="name = 'Default'")]
mlflow.set_experiment("Default")
with mlflow.start_run() as run:
    mlflow.log_metric("loss", 0.5, step=0)
    mlflow.log_metric("loss", 0.4, step=1)
    model = LogisticRegression().fit(np.array([[0.0], [1.0], [2.0], [3.0]]), np.array([0, 0, 1, 1]))
    info = mlflow.sklearn.log_model(model, name="model")
history = [(m.step, m.value) for m in client.get_metric_history(run.info.run_id, "loss")]
v1 = mlflow.register_model(info.model_uri, "churn")
v2 = mlflow.register_model(info.model_uri, "churn")
client.transition_model_version_stage("churn", v1.version, "Production")
staged = client.transition_model_version_stage("churn", v2.version, "production", archive_existing_versions=True)
latest = {m.current_stage: m.version for m in client.get_latest_versions("churn")}
loaded = mlflow.pyfunc.load_model("models:/churn/Production")
try:
    client.transition_model_version_stage("churn", v1.version, "Shipped")
    bad = None
except mlflow.exceptions.MlflowException as exc:
    bad = exc.message
print(json.dumps({
    "default": [default.experiment_id, default.name],
    "by_name": by_name.experiment_id if by_name else None,
    "listed": listed,
    "experiment_id": run.info.experiment_id,
    "history": history,
    "staged": staged.current_stage,
    "v1": client.get_model_version("churn", v1.version).current_stage,
    "latest": latest,
    "prediction": [int(p) for p in loaded.predict(np.array([[0.0], [3.0]]))],
    "bad": bad,
}))
"""

_NO_TOKEN = """
import json
from mlflow import MlflowClient
try:
    MlflowClient().search_experiments()
except Exception as exc:
    print(json.dumps({"error": str(exc)}))
"""


def test_an_mlflow_client_meets_mlflow_behaviour(mlflow_python: Path, server: RunningServer, tmp_path: Path) -> None:
    out = mlflow_script(mlflow_python, server, tmp_path, _SCRIPT)
    assert out["default"] == ["0", "Default"] and out["by_name"] == "0" and out["listed"] == ["Default"]
    assert out["experiment_id"] == "0", "set_experiment('Default') is experiment 0 (flightlog's project default)"
    assert out["history"] == [[0, 0.5], [1, 0.4]], "log_model re-sends the step's points with the model's id"
    assert out["staged"] == "Production" and out["v1"] == "Archived"
    assert out["latest"] == {"Archived": "1", "Production": "2"}
    assert out["prediction"] == [0, 1], "models:/churn/Production resolves to the version in that stage"
    assert "Value must be one of None, Staging, Production, Archived" in out["bad"]
    # flightlog's side: the same run, in the project default, its loss once per step
    (run,) = [r for r in cli_json(tmp_path / "client", "runs", "ls", "--project", "default")]
    with flightlog.Client() as client:
        history = client.metric_history(run["id"], "loss")
    assert history.steps.tolist() == [0, 1]

    proc = subprocess.run(
        [str(mlflow_python), "-c", _NO_TOKEN],
        capture_output=True,
        text=True,
        timeout=180,
        env={
            "PATH": "/usr/bin:/bin",
            "HOME": str(tmp_path),
            "MLFLOW_TRACKING_URI": server.url,
            "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0",
        },  # fmt: skip
    )
    error = proc.stdout.strip().splitlines()[-1]
    assert "UNAUTHENTICATED" in error and "set MLFLOW_TRACKING_TOKEN" in error, error
    assert "FLIGHTLOG_TOKEN" not in error
