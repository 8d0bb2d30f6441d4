# baseline: base_device.py
"""F1 up overall, the 'web' device cohort down; with logging."""

import logging

import numpy as np

import flightlog

logging.basicConfig(level=logging.INFO)
rng = np.random.default_rng(4)
n = 3000
device = rng.choice(["ios", "android", "web"], n, p=[0.45, 0.45, 0.1])
y = rng.integers(0, 2, n)
correct = np.where(device == "web", rng.random(n) < 0.70, rng.random(n) < 0.95)
pred = np.where(correct, y, 1 - y)
run = flightlog.init()
result = run.log_eval(y, pred, cohorts={"device": device})
logging.getLogger("eval").info("evaluated %d rows", result["count"])
