"""Pipeline step: logistic regression by gradient descent, the loss per epoch through the SDK."""

from pathlib import Path

import numpy as np

import flightlog

data = np.load("data/train.npz")
x, y = data["x"], data["y"]
run = flightlog.init(params={"lr": 0.5, "epochs": 60})
w = np.zeros(x.shape[1])
for epoch in range(60):
    p = 1 / (1 + np.exp(-x @ w))
    w -= 0.5 * x.T @ (p - y) / len(y)
    run.log({"loss": float(-np.mean(y * np.log(p + 1e-9) + (1 - y) * np.log(1 - p + 1e-9)))}, step=epoch)
Path("model").mkdir(exist_ok=True)
np.save("model/weights.npy", w)
