"""Accuracy on the held-out rows, as a metric on the step's run and as a file for publish."""

from __future__ import annotations

import json

import numpy as np
from common import features, read_csv

import flightlog

run = flightlog.init()
x, y = read_csv("data/test.csv")
w = np.load("model/weights.npz")["w"]
accuracy = float(np.mean(((features(x) @ w) > 0) == y))
run.log({"accuracy": accuracy})
with open("model/metrics.json", "w") as f:
    json.dump({"accuracy": round(accuracy, 6)}, f)
print(f"test accuracy {accuracy:.4f}")
