# queued-ago: 45m
"""An SDK job with stages, queued 45 minutes before it could start."""

import time

import flightlog

run = flightlog.init()
for step in range(5):
    with run.stage("train_step"):
        time.sleep(0.01)
    run.log({"loss": 1.0 / (step + 1)}, step=step)
