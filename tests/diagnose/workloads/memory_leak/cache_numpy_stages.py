# runner: --sample-interval 0.1s --memory-limit 1G
"""An unbounded cache of numpy results, with SDK stages, under a memory limit."""

import time

import numpy as np

import flightlog

run = flightlog.init()
cache = {}
for step in range(90):
    with run.stage("train_step"):
        key = f"batch-{step}"
        cache[key] = np.ones((400, 1024))  # ~3 MiB never evicted
        loss = float(cache[key][0, 0]) / (step + 1)
        time.sleep(0.03)
    run.log({"loss": loss}, step=step)
