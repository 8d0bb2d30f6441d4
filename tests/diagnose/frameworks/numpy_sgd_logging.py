"""Linear regression by minibatch SGD in numpy, reported with the logging module and the SDK (lr 0.1: converges)."""

import logging
import os

import numpy as np

import flightlog

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
log = logging.getLogger("train")
rng = np.random.default_rng(0)
x = 0.3 * rng.normal(size=(512, 8))
y = x @ rng.normal(size=8) + 0.01 * rng.normal(size=512)
run = flightlog.init(
    project=os.environ.get("FLIGHTLOG_PROJECT", "healthy"),
    name=os.environ.get("WORKLOAD_NAME"),
    params={"lr": 0.1, "batch": 32, "epochs": 80},
)
w = np.zeros(8)
for step in range(80):
    i = rng.integers(0, 512, 32)
    err = x[i] @ w - y[i]
    w -= 0.1 * (x[i].T @ err) / 32 * 10
    run.log({"loss": float(np.mean(err**2))}, step=step)
    if step % 20 == 19:
        val = float(np.mean((x @ w - y) ** 2))
        run.log({"val_loss": val}, step=step)
        log.info("step %d val_loss %.4f", step, val)
run.finish()
