# baseline: base_mae.py
"""A regression model: MAE better overall, much worse for 'store=small'."""

import numpy as np

import flightlog

rng = np.random.default_rng(5)
n = 2000
store = rng.choice(["large", "medium", "small"], n, p=[0.5, 0.4, 0.1])
y = rng.normal(100, 20, n)
err = np.where(store == "small", rng.normal(0, 15, n), rng.normal(0, 4, n))
run = flightlog.init()
run.log_eval(y, y + err, cohorts={"store": store})
