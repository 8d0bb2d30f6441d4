"""XGBoost and LightGBM: real boosters trained for a few rounds on a tiny table."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import flightlog

pytestmark = pytest.mark.embedded_only("the integration writes through the SDK; transports are covered in tests/sdk")


def _table(n: int = 80) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, 4))
    return x, x[:, 0] * 2 + x[:, 1]


def test_xgboost_callback_records_params_round_metrics_and_the_model(home: Path) -> None:
    xgb = pytest.importorskip("xgboost")
    from flightlog.integrations.xgboost import FlightlogXGBoostCallback

    x, y = _table()
    dtrain, dvalid = xgb.DMatrix(x[:60], label=y[:60]), xgb.DMatrix(x[60:], label=y[60:])
    callback = FlightlogXGBoostCallback(project="tab", name="xgb", resources=False)
    booster = xgb.train(
        {"eta": 0.3, "max_depth": 3, "objective": "reg:squarederror", "nthread": 1},
        dtrain,
        num_boost_round=5,
        evals=[(dtrain, "train"), (dvalid, "valid")],
        callbacks=[callback],
    )

    client = flightlog.Client()
    info = client.run(callback.run.id)
    assert info.status == "succeeded" and info.name == "xgb"
    assert info.params["eta"] == pytest.approx(0.3) and info.params["max_depth"] == 3
    assert info.params["name"] == "reg:squarederror"
    history = client.metric_history(info.id, "valid-rmse")
    assert history.steps.tolist() == [0, 1, 2, 3, 4]
    assert history.values[-1] == pytest.approx(float(booster.eval(dvalid).split(":")[1]), rel=1e-5)
    assert client.metric_history(info.id, "train-rmse").values.size == 5
    [model] = [a for a in client.artifacts(info.id) if a.kind == "checkpoint"]
    assert model.step == 4 and model.path == "model.json"
    loaded = xgb.Booster(model_file=str(client.artifact_file(model)))
    assert loaded.num_boosted_rounds() == 5
    assert {s.name: s.count for s in client.stages(info.id)}["train_step"] == 5


def test_lightgbm_callback_records_params_round_metrics_and_the_model(home: Path) -> None:
    lgb = pytest.importorskip("lightgbm")
    from flightlog.integrations.lightgbm import flightlog_lightgbm_callback

    x, y = _table()
    train = lgb.Dataset(x[:60], label=y[:60])
    valid = lgb.Dataset(x[60:], label=y[60:], reference=train)
    callback = flightlog_lightgbm_callback(project="tab", name="lgb", resources=False)
    lgb.train(
        {
            "objective": "regression",
            "learning_rate": 0.2,
            "num_leaves": 7,
            "verbose": -1,
            "num_threads": 1,
            "min_data_in_leaf": 5,
        },
        train,
        num_boost_round=6,
        valid_sets=[valid],
        valid_names=["valid"],
        callbacks=[callback],
    )

    client = flightlog.Client()
    info = client.run(callback.run.id)
    assert info.status == "succeeded"
    assert info.params["learning_rate"] == 0.2 and info.params["num_leaves"] == 7
    assert client.metric_history(info.id, "valid-l2").steps.tolist() == [0, 1, 2, 3, 4, 5]
    [model] = [a for a in client.artifacts(info.id) if a.kind == "checkpoint"]
    assert model.step == 5 and model.path == "model.txt"
    assert lgb.Booster(model_file=str(client.artifact_file(model))).num_trees() == 6
    assert {s.name: s.count for s in client.stages(info.id)}["train_step"] == 6
