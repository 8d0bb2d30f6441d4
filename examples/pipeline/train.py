"""Logistic regression on a few polynomial features, with a checkpoint per epoch.

A retried attempt starts from the last checkpoint (FLIGHTLOG_RESUME_FROM). With
FLIGHTLOG_DEMO_FLAKY set, the first attempt loses its "feature store" connection after epoch 3
(once: a marker file remembers), which the pipeline retries.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
from common import features, params, read_csv

import flightlog

p = params(epochs=8, lr=0.5)
run = flightlog.init()
x, y = read_csv("data/train.csv")
f = features(x)
w = np.zeros(f.shape[1])
start = 0
if run.resume_from:
    state = np.load(run.resume_from)
    w, start = state["w"], int(state["epoch"]) + 1
    print(f"resuming from {run.resume_from} at epoch {start}")
Path("model").mkdir(exist_ok=True)
for epoch in range(start, int(p["epochs"])):
    for _ in range(200):
        prob = 1 / (1 + np.exp(-f @ w))
        w -= p["lr"] * f.T @ (prob - y) / len(y)
    loss = float(-np.mean(y * np.log(prob + 1e-9) + (1 - y) * np.log(1 - prob + 1e-9)))
    run.log({"loss": loss, "train_acc": float(np.mean((prob > 0.5) == y))}, step=epoch)
    np.savez("model/checkpoint.npz", w=w, epoch=epoch)
    run.checkpoint("model/checkpoint.npz", step=epoch)
    marker = os.environ.get("FLIGHTLOG_DEMO_FLAKY")
    if marker and epoch == 3 and not os.path.exists(marker):
        Path(marker).touch()
        raise ConnectionResetError("[Errno 104] Connection reset by peer: feature store at 10.0.0.7:6379")
np.savez("model/weights.npz", w=w)
print(f"trained {int(p['epochs'])} epochs, final loss {loss:.4f}")
