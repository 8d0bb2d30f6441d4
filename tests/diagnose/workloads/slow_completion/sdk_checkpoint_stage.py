"""A slow checkpoint write at the end, in an SDK stage."""

import time

import flightlog

run = flightlog.init()
for step in range(20):
    with run.stage("train_step"):
        time.sleep(0.01)
    run.log({"loss": 1.0 / (step + 1)}, step=step)
print("saving final checkpoint", flush=True)
with run.stage("checkpoint"):
    time.sleep(1.3)
