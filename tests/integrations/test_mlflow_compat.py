"""`flightlog.mlflow_compat`: MLflow-style code logs into flightlog with one import changed."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import flightlog
from tests.helpers import cli, run_script

MLFLOW_STYLE = """
import flightlog.mlflow_compat as mlflow

mlflow.set_experiment("vision")
with mlflow.start_run(run_name="resnet", tags={"team": "cv"}, description="baseline") as run:
    mlflow.log_params({"lr": 0.1, "optimizer": "adam"})
    mlflow.log_param("epochs", 3)
    for step in range(5):
        mlflow.log_metric("loss", 1.0 / (step + 1), step=step)
        mlflow.log_metrics({"acc": step / 5, "lr": 0.1}, step=step)
    mlflow.set_tag("stage", "dev")
    mlflow.log_text("hello", "notes/readme.txt")
    mlflow.log_dict({"layers": 50}, "config.json")
    with mlflow.start_run(run_name="eval", nested=True) as child:
        mlflow.log_metric("val_acc", 0.9)
    assert mlflow.active_run().info.run_id == run.info.run_id
print(run.info.run_id, child.info.run_id)
"""


def test_mlflow_style_script_logs_params_metrics_tags_artifacts_and_nested_runs(home: Path) -> None:
    out = run_script(home, MLFLOW_STYLE).stdout.split()
    run_id, child_id = out[-2], out[-1]
    client = flightlog.Client()
    info = client.run(run_id)
    assert info.project == "vision" and info.name == "resnet" and info.status == "succeeded"
    assert info.params == {"lr": 0.1, "optimizer": "adam", "epochs": 3}
    assert info.tags == {"team": "cv", "stage": "dev"}
    assert client.metric_history(run_id, "loss").steps.tolist() == [0, 1, 2, 3, 4]
    assert client.metric_history(run_id, "acc").values.tolist()[-1] == pytest.approx(0.8)
    assert sorted(a.path for a in client.artifacts(run_id)) == ["config.json", "notes/readme.txt"]
    assert [n.text for n in client.notes(run_id)] == ["baseline"]
    child = client.run(child_id)
    assert child.parent_id == run_id and child.status == "succeeded" and child.metrics["val_acc"].last == 0.9


@pytest.mark.embedded_only("status mapping and misuse errors are in-process behaviour")
def test_status_mapping_misuse_and_the_unsupported_subset(home: Path) -> None:
    import flightlog.mlflow_compat as mlflow

    mlflow.set_experiment("p")
    with pytest.raises(ValueError, match="boom"), mlflow.start_run(run_name="bad") as bad:
        mlflow.log_metric("loss", 1.0)
        raise ValueError("boom")
    assert flightlog.Client().run(bad.info.run_id).status == "failed"
    assert mlflow.last_active_run() is bad

    first = mlflow.start_run()
    with pytest.raises(flightlog.FlightlogError, match="already active.*nested=True"):
        mlflow.start_run()
    mlflow.end_run("KILLED")
    assert flightlog.Client().run(first.info.run_id).status == "killed"
    assert mlflow.active_run() is None
    mlflow.start_run()
    with pytest.raises(flightlog.FlightlogError, match="FINISHED, FAILED or KILLED"):
        mlflow.end_run("DONE")
    mlflow.end_run()
    with pytest.raises(AttributeError, match="autolog.*flightlog.integrations"):
        mlflow.autolog()
    with pytest.raises(AttributeError, match="log_artifact"):
        mlflow.pytorch.log_model(None, "model")
    with pytest.raises(flightlog.FlightlogError, match="FLIGHTLOG_URL"):
        mlflow.set_tracking_uri("http://mlflow.example:5000")
    mlflow.log_metric("auto", 1.0)  # like MLflow, logging with no active run starts one
    auto = mlflow.active_run()
    assert auto is not None and auto.info.experiment_id == "p"
    mlflow.end_run()


def test_under_flightlog_run_start_run_is_the_runners_run(home: Path, tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(
        "import flightlog.mlflow_compat as mlflow\n"
        "with mlflow.start_run(run_name='ignored') as run:\n"
        "    mlflow.log_param('lr', 0.1)\n"
        "    mlflow.log_metric('loss', 0.5, step=0)\n"
        "print(run.info.run_id)\n"
    )
    proc = cli(home, "run", "--project", "wrapped", "--", sys.executable, str(script))
    run_id = proc.stdout.split()[-1]
    [info] = flightlog.Client().runs(project="wrapped")
    assert info.id == run_id and info.status == "succeeded"  # the runner set the status, once
    assert info.params == {"lr": 0.1} and info.metrics["loss"].last == 0.5
