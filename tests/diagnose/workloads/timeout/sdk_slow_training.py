# runner: --timeout 1.2s --kill-grace 1s
"""Training that needs far longer than its budget."""

import time

import flightlog

run = flightlog.init()
for step in range(10_000):
    with run.stage("train_step"):
        time.sleep(0.05)
    run.log({"loss": 1.0 / (step + 1)}, step=step)
