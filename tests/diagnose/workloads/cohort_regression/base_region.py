"""Baseline of region_de_worse: every region at about 88 %."""

import numpy as np

import flightlog

rng = np.random.default_rng(13)
n = 2000
region = rng.choice(["US", "FR", "DE"], n, p=[0.6, 0.3, 0.1])
y = rng.integers(0, 2, n)
pred = np.where(rng.random(n) < 0.88, y, 1 - y)
run = flightlog.init()
run.log_eval(y, pred, cohorts={"region": region})
