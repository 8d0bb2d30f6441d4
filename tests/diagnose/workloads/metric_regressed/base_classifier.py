"""The baseline: a small numpy logistic regression that reaches about 0.9 validation accuracy."""

import sys
import time

import numpy as np

import flightlog

noise = float(sys.argv[1]) if len(sys.argv) > 1 else 0.0
rng = np.random.default_rng(7)
n, d = 2000, 8
x = rng.normal(size=(n, d))
w_true = rng.normal(size=d)
y = (x @ w_true + rng.normal(scale=0.5, size=n) > 0).astype(float)
y_train = np.where(rng.random(n) < noise, 1 - y, y)  # label noise in the training data
run = flightlog.init(params={"label_noise": noise})
w = np.zeros(d)
train, val = slice(0, 1500), slice(1500, n)
for epoch in range(30):
    p = 1 / (1 + np.exp(-(x[train] @ w)))
    w -= 0.5 * x[train].T @ (p - y_train[train]) / 1500
    pv = 1 / (1 + np.exp(-(x[val] @ w)))
    val_loss = float(-np.mean(y[val] * np.log(pv + 1e-9) + (1 - y[val]) * np.log(1 - pv + 1e-9)))
    val_acc = float(np.mean((pv > 0.5) == y[val]))
    run.log({"val_loss": val_loss, "val_acc": val_acc}, step=epoch)
    time.sleep(0.08)  # an epoch takes time, as real ones do
print(f"val_acc={val_acc:.3f} val_loss={val_loss:.3f}")
