# baseline: base_region.py
"""Accuracy improves overall while region DE gets worse (auto-picked baseline)."""

import numpy as np

import flightlog

rng = np.random.default_rng(3)
n = 2000
region = rng.choice(["US", "FR", "DE"], n, p=[0.6, 0.3, 0.1])
y = rng.integers(0, 2, n)
correct = np.where(region == "DE", rng.random(n) < 0.62, rng.random(n) < 0.93)
pred = np.where(correct, y, 1 - y)
run = flightlog.init()
run.log_eval(y, pred, cohorts={"region": region})
