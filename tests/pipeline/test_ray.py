"""The Ray executor runs the example pipeline (examples/pipeline) with the same results as local
processes: each step a child run with its logs and status, the same model and accuracy."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from tests.helpers import child_env, cli

import flightlog

pytest.importorskip("ray", reason="the ray extra is not installed (pip install 'flightlog[ray]')")

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "pipeline"


def copy_example(dest: Path) -> Path:
    shutil.copytree(EXAMPLE, dest, ignore=shutil.ignore_patterns("data", "model", "published", "__pycache__"))
    return dest / "pipeline.yaml"


@pytest.mark.embedded_only("Ray workers write to the same embedded store; a server would serve them the same way")
def test_the_ray_executor_runs_the_example_pipeline_with_the_same_results(home: Path, tmp_path: Path) -> None:
    local = copy_example(tmp_path / "local")
    on_ray = copy_example(tmp_path / "ray")
    env = child_env(home, RAY_AUTH_MODE="disabled", RAY_USAGE_STATS_ENABLED="0")
    local_view = json.loads(cli(home, "pipeline", "run", str(local), "--format", "json", env=env, timeout=300).stdout)
    # a local Ray with 2 CPUs, started for the pipeline and shut down after it
    ray_view = json.loads(
        cli(
            home,
            "pipeline",
            "run",
            str(on_ray),
            "--executor",
            "ray",
            "--max-parallel",
            "2",
            "--no-cache",
            "--format",
            "json",
            env=env,
            timeout=300,
        ).stdout
    )
    assert ray_view["status"] == local_view["status"] == "succeeded"
    assert ray_view["options"]["executor"] == "ray"
    assert [s["status"] for s in ray_view["steps"]] == ["succeeded"] * 5
    assert [s["outputs"] for s in ray_view["steps"]] == [s["outputs"] for s in local_view["steps"]]  # same bytes

    client = flightlog.Client()
    steps = {s["name"]: s for s in ray_view["steps"]}
    train = client.run(steps["train"]["run"])
    assert train.parent_id == ray_view["run"] and train.status == "succeeded"
    assert any("trained 8 epochs" in e.message for e in client.logs(train.id))  # captured on the worker
    accuracy = client.metrics(steps["evaluate"]["run"])["accuracy"].last
    assert accuracy == json.loads((tmp_path / "local" / "model" / "metrics.json").read_text())["accuracy"]
    w_ray = np.load(tmp_path / "ray" / "published" / "model.npz")["w"]
    assert np.array_equal(w_ray, np.load(tmp_path / "local" / "published" / "model.npz")["w"])
