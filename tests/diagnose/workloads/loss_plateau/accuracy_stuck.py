"""Accuracy (higher is better) stuck at 0.71 after a quick rise, with logging."""

import logging

import numpy as np

import flightlog

logging.basicConfig(level=logging.INFO)
rng = np.random.default_rng(2)
run = flightlog.init()
for epoch in range(40):
    acc = min(0.71, 0.5 + 0.05 * epoch) + rng.normal(0, 0.001)
    logging.getLogger("eval").info("epoch %d accuracy %.4f", epoch, acc)
    run.log({"val_accuracy": float(acc)}, step=epoch)
