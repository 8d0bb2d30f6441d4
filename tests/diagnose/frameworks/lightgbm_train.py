"""LightGBM: a small binary classifier with the flightlog callback and a validation set."""

import os

import lightgbm as lgb
import numpy as np

from flightlog.integrations.lightgbm import flightlog_lightgbm_callback

rng = np.random.default_rng(0)
x = rng.normal(size=(2000, 6))
y = (x[:, 0] + 0.5 * x[:, 1] + 0.3 * rng.normal(size=2000) > 0).astype(int)
train, valid = lgb.Dataset(x[:1600], y[:1600]), lgb.Dataset(x[1600:], y[1600:])
callback = flightlog_lightgbm_callback(
    project=os.environ.get("FLIGHTLOG_PROJECT", "healthy"), name=os.environ.get("WORKLOAD_NAME")
)
lgb.train(
    {"objective": "binary", "learning_rate": 0.1, "num_leaves": 15, "verbose": -1, "num_threads": 1},
    train,
    num_boost_round=30,
    valid_sets=[valid],
    valid_names=["valid"],
    callbacks=[callback],
)
