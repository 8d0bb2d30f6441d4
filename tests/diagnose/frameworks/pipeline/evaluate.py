"""Pipeline step: the model's accuracy on the table."""

import numpy as np

import flightlog

data = np.load("data/train.npz")
w = np.load("model/weights.npy")
accuracy = float(((data["x"] @ w > 0).astype(int) == data["y"]).mean())
flightlog.init().log({"accuracy": accuracy})
print(f"accuracy {accuracy:.3f}", flush=True)
