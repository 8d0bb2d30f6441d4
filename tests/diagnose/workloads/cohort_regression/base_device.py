"""Baseline of device_worse_logging."""

import numpy as np

import flightlog

rng = np.random.default_rng(14)
n = 3000
device = rng.choice(["ios", "android", "web"], n, p=[0.45, 0.45, 0.1])
y = rng.integers(0, 2, n)
pred = np.where(rng.random(n) < 0.9, y, 1 - y)
run = flightlog.init()
run.log_eval(y, pred, cohorts={"device": device})
