# expect: none
"""A healthy loop: numpy compute, balanced stages, a converging loss."""

import numpy as np

import flightlog

rng = np.random.default_rng(0)
x = rng.normal(size=(256, 32))
w_true = rng.normal(size=32)
y = x @ w_true
w = np.zeros(32)
run = flightlog.init(params={"lr": 0.05})
for step in range(60):
    with run.stage("data_loading"):
        idx = rng.integers(0, 256, 64)
    with run.stage("train_step"):
        for _ in range(200):
            grad = x[idx].T @ (x[idx] @ w - y[idx]) / 64
        w -= 0.05 * grad
        loss = float(np.mean((x @ w - y) ** 2))
    run.log({"loss": loss}, step=step)
