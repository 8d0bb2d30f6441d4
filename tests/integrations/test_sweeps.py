"""Sweeps: grid, random and TPE search over a function or a command; each trial a child run;
early stopping from alert rules."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

import flightlog
from flightlog.sweeps import LogUniform, Trial, sweep
from tests.helpers import cli

pytestmark = pytest.mark.embedded_only("sweeps drive the SDK and the runner; transports are covered in tests/sdk")


def objective(lr: float, layers: int) -> float:
    return (math.log10(lr) + 2.5) ** 2 + 0.01 * layers


def train(trial: Trial) -> None:
    for step in range(3):
        trial.run.log({"val_loss": objective(trial.params["lr"], trial.params["layers"]) + 0.1 / (step + 1)}, step=step)


def test_a_20_trial_random_sweep_over_a_function_records_each_trial_as_a_child_run(home: Path) -> None:
    result = sweep(
        train,
        {"lr": LogUniform(1e-4, 1e-1), "layers": "int:1:4", "act": ["relu", "gelu"]},
        metric="val_loss",
        method="random",
        trials=20,
        project="sw",
        name="lr-search",
        seed=1,
    )
    assert len(result.trials) == 20 and all(t.state == "complete" for t in result.trials)
    client = flightlog.Client()
    parent = client.run(result.sweep_id)
    assert parent.status == "succeeded" and parent.tags == {"kind": "sweep"} and parent.params["sweep.trials"] == 20
    children = client.runs(filter=f"tags.sweep = '{result.sweep_id}'", limit=100)
    assert len(children) == 20 and {c.parent_id for c in children} == {result.sweep_id}
    assert sorted(client.store.children(result.sweep_id)) == sorted(c.id for c in children)
    for trial in result.trials:
        info = client.run(trial.run_id)
        assert info.params == trial.params and info.name == f"lr-search-{trial.number}"
        assert 1e-4 <= info.params["lr"] <= 1e-1 and info.params["layers"] in (1, 2, 3, 4)
        assert trial.value == pytest.approx(info.metrics["val_loss"].last)
    best = result.best
    assert best is not None and best.value == min(t.value for t in result.trials if t.value is not None)
    assert client.metric_history(result.sweep_id, "val_loss").steps.tolist() == list(range(20))
    [evidence] = client.evidence(result.sweep_id, "sweep")
    assert evidence["data"]["best"]["run_id"] == best.run_id and len(evidence["data"]["trials"]) == 20


def test_tpe_through_optuna_and_a_grid_that_runs_out(home: Path) -> None:
    pytest.importorskip("optuna")
    tpe = sweep(
        lambda t: objective(t.params["lr"], 1),
        {"lr": "log:1e-4:1e-1"},
        metric="unused",
        method="tpe",
        trials=12,
        project="sw",
        seed=0,
    )
    assert len(tpe.trials) == 12 and all(t.state == "complete" for t in tpe.trials)
    assert tpe.best is not None and tpe.best.value < 0.5  # TPE found the neighbourhood of lr = 10^-2.5
    grid = sweep(
        lambda t: objective(t.params["lr"], t.params["layers"]),
        {"lr": [0.1, 0.001], "layers": "int:1:2"},
        metric="unused",
        method="grid",
        trials=10,
        project="sw",
    )
    assert sorted((t.params["lr"], t.params["layers"]) for t in grid.trials) == [
        (0.001, 1),
        (0.001, 2),
        (0.1, 1),
        (0.1, 2),
    ]
    assert grid.best is not None and grid.best.params == {"lr": 0.001, "layers": 1}


WORKLOAD = """
import sys, time, flightlog
lr = float(sys.argv[1])
run = flightlog.init()
for step in range(60):
    run.log({"val_loss": 100.0 if lr > 0.05 else 1.0 / (step + 1) + lr}, step=step)
    if lr <= 0.05 and step == 4:
        break
    time.sleep(0.1)
"""

RULES = """
settings:
  interval: 1s
rules:
  - name: diverged
    kind: threshold
    metric: val_loss
    op: ">"
    value: 50
"""


def test_command_sweep_stops_a_diverging_trial_early_from_an_alert_rule(home: Path, tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(WORKLOAD)
    rules = tmp_path / "stop.yaml"
    rules.write_text(RULES)
    proc = cli(
        home,
        "sweep",
        "--param",
        "lr=0.01,0.1",
        "--param",
        "seed=1,2",
        "--method",
        "grid",
        "--trials",
        "10",
        "--metric",
        "val_loss",
        "--project",
        "sw",
        "--name",
        "cmd",
        "--alerts",
        str(rules),
        "--format",
        "json",
        "--",
        sys.executable,
        str(script),
        "{lr}",
        timeout=120,
    )
    out = json.loads(proc.stdout)
    trials = {(t["params"]["lr"], t["params"]["seed"]): t for t in out["trials"]}
    assert len(trials) == 4
    client = flightlog.Client()
    for seed in (1, 2):
        good, bad = trials[(0.01, seed)], trials[(0.1, seed)]
        assert good["state"] == "complete" and good["status"] == "succeeded"
        assert good["value"] == pytest.approx(0.2 + 0.01)
        assert bad["state"] == "pruned" and bad["stopped_by"] == "diverged" and bad["status"] == "stopped"
        info = client.run(bad["run_id"])
        assert info.tags["early_stopped"] == "diverged" and info.parent_id == out["sweep"]
        assert info.metrics["val_loss"].count < 60  # stopped long before its 60 steps
        assert info.params == {"lr": 0.1, "seed": seed}
    assert out["best"]["params"]["lr"] == 0.01


def test_sweep_cli_refuses_bad_specs_clearly(home: Path) -> None:
    bad = cli(home, "sweep", "--param", "lr=log:0:1", "--metric", "m", "--", "true", check=False)
    assert bad.returncode != 0 and "LOW > 0" in bad.stderr
    grid = cli(
        home, "sweep", "--param", "lr=uniform:0:1", "--method", "grid", "--metric", "m", "--", "true", check=False
    )
    assert grid.returncode != 0 and "grid search needs choices" in grid.stderr
    form = cli(home, "sweep", "--param", "lr", "--metric", "m", "--", "true", check=False)
    assert form.returncode != 0 and "NAME=SPEC" in form.stderr
