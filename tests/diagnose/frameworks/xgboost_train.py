"""XGBoost: a small regression booster with FlightlogXGBoostCallback and a validation set."""

import os

import numpy as np
import xgboost as xgb

from flightlog.integrations.xgboost import FlightlogXGBoostCallback

rng = np.random.default_rng(0)
x = rng.normal(size=(2000, 6))
y = x @ rng.normal(size=6) + 0.1 * rng.normal(size=2000)
dtrain, dvalid = xgb.DMatrix(x[:1600], label=y[:1600]), xgb.DMatrix(x[1600:], label=y[1600:])
callback = FlightlogXGBoostCallback(
    project=os.environ.get("FLIGHTLOG_PROJECT", "healthy"), name=os.environ.get("WORKLOAD_NAME")
)
xgb.train(
    {"eta": 0.1, "max_depth": 4, "objective": "reg:squarederror", "nthread": 1},
    dtrain,
    num_boost_round=60,
    evals=[(dtrain, "train"), (dvalid, "valid")],
    callbacks=[callback],
    verbose_eval=False,
)
