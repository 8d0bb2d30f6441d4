# expect: none
# runner: --sample-interval 0.1s
"""Loads a dataset into memory first (a jump), then trains with flat memory: not a leak."""

import time

import numpy as np

import flightlog

data = np.ones((40, 1024, 1024), dtype=np.uint8)  # 40 MiB loaded up front
run = flightlog.init()
total = 0.0
for step in range(50):
    t0 = time.time()
    while time.time() - t0 < 0.02:
        total += float(data[step % 40, :64, :64].sum())
    run.log({"loss": 1.0 / (step + 1)}, step=step)
