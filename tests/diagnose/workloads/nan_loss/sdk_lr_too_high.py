"""Too high a learning rate: the loss diverges to inf, then NaN."""

import numpy as np

import flightlog

np.seterr(all="ignore")
run = flightlog.init(params={"lr": 10.0})
w = np.float64(1.0)
for step in range(60):
    grad = 2 * w
    w = w - 10.0 * grad * abs(w)
    loss = w * w
    run.log({"loss": float(loss)}, step=step)
