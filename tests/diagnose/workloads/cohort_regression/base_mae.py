"""Baseline of regression_task_mae: errors of about 8 everywhere."""

import numpy as np

import flightlog

rng = np.random.default_rng(15)
n = 2000
store = rng.choice(["large", "medium", "small"], n, p=[0.5, 0.4, 0.1])
y = rng.normal(100, 20, n)
run = flightlog.init()
run.log_eval(y, y + rng.normal(0, 8, n), cohorts={"store": store})
