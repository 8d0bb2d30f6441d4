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


def test_reading_back_get_run_search_runs_and_mlflowclient(home: Path) -> None:
    import flightlog.mlflow_compat as mlflow

    mlflow.set_experiment("readback")
    ids = {}
    for name, lr, acc in [("a", 0.1, 0.9), ("b", 0.01, 0.7), ("c", 0.1, 0.4)]:
        with mlflow.start_run(run_name=name) as run:
            mlflow.log_params({"lr": lr, "opt": "adam"})
            mlflow.set_tag("team", "cv")
            for step in range(3):
                mlflow.log_metric("acc", acc - 0.1 * (2 - step), step=step)
        ids[name] = run.info.run_id
    got = mlflow.get_run(ids["a"])
    assert got.info.run_name == "a" and got.info.status == "FINISHED" and got.info.experiment_id == "readback"
    assert got.data.params == {"lr": "0.1", "opt": "adam"} and got.data.tags == {"team": "cv"}
    assert got.data.metrics == {"acc": pytest.approx(0.9)}
    assert (
        got.info.start_time is not None and got.info.end_time is not None and got.info.start_time <= got.info.end_time
    )
    found = mlflow.search_runs(filter_string="params.lr = 0.1", order_by=["metrics.acc DESC"])
    assert [r.info.run_name for r in found] == ["a", "c"]
    assert [r.info.run_name for r in mlflow.search_runs(["readback"], order_by=["metrics.acc"])] == ["c", "b", "a"]
    with pytest.raises(flightlog.FlightlogError, match="output_format='list'"):
        mlflow.search_runs(output_format="pandas")
    with pytest.raises(flightlog.FlightlogError, match="ASC or DESC"):
        mlflow.search_runs(order_by=["metrics.acc SIDEWAYS"])

    client = mlflow.MlflowClient()
    assert client.get_experiment_by_name("readback").experiment_id == "readback"
    assert client.get_experiment_by_name("nope") is None and client.create_experiment("new") == "new"
    history = client.get_metric_history(ids["b"], "acc")
    assert [(m.step, round(m.value, 6)) for m in history] == [(0, 0.5), (1, 0.6), (2, 0.7)]
    assert all(m.timestamp > 1_600_000_000_000 for m in history)  # milliseconds, as MLflow's
    client.log_metric(ids["b"], "val", 3.5, timestamp=1_700_000_000_000, step=7)
    client.log_param(ids["b"], "extra", 5)
    client.set_tag(ids["b"], "reviewed", "yes")
    after = client.get_run(ids["b"])
    assert (
        after.data.metrics["val"] == 3.5 and after.data.params["extra"] == "5" and after.data.tags["reviewed"] == "yes"
    )
    assert [(m.step, m.timestamp) for m in client.get_metric_history(ids["b"], "val")] == [(7, 1_700_000_000_000)]
    assert [r.info.run_name for r in client.search_runs("readback", "tags.reviewed = 'yes'")] == ["b"]
    with pytest.raises(flightlog.FlightlogError, match="MLflow's own client"):
        mlflow.MlflowClient("http://127.0.0.1:5000")
    client.close()
