"""Downloads the dataset before the first step, in an SDK stage."""

import time

import flightlog

run = flightlog.init()
print("downloading dataset shards", flush=True)
with run.stage("download_dataset"):
    time.sleep(1.3)
for step in range(20):
    with run.stage("train_step"):
        time.sleep(0.005)
    run.log({"loss": 1.0 / (step + 1)}, step=step)
