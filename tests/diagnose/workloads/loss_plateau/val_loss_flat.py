"""Validation loss improves for 10 evaluations, then stays flat with noise."""

import numpy as np

import flightlog

rng = np.random.default_rng(1)
run = flightlog.init()
for step in range(50):
    val = 1.0 / (step + 1) + 0.30 if step < 10 else 0.40 + rng.normal(0, 0.002)
    run.log({"val_loss": float(val), "train_loss": float(val - 0.1)}, step=step)
