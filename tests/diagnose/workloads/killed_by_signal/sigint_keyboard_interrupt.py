# signal: 0.8 INT
"""Ctrl-C: the runner forwards SIGINT; Python prints KeyboardInterrupt."""

import time

import flightlog

run = flightlog.init()
print("training", flush=True)
for step in range(1000):
    run.log({"loss": 1.0 / (step + 1)}, step=step)
    time.sleep(0.02)
