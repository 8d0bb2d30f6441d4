"""SDK stages: every batch waits on a slow reader; the step itself is quick."""

import time

import numpy as np

import flightlog

run = flightlog.init()
w = np.random.default_rng(0).normal(size=(64, 64))
for step in range(25):
    with run.stage("data_loading"):
        time.sleep(0.04)  # remote storage read
        batch = np.ones((32, 64))
    with run.stage("train_step"):
        loss = 1.0 / (step + 1) + 1e-3 * float(np.abs(batch @ w).mean())
    run.log({"loss": loss}, step=step)
