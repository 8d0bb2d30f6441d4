# runner: --sample-interval 0.1s
"""No stages: steps arrive slowly while the process sits idle (samples + metric times only)."""

import time

import flightlog

run = flightlog.init()
for step in range(30):
    time.sleep(0.045)  # waiting on the network filesystem
    run.log({"loss": 1.0 / (step + 1)}, step=step)
