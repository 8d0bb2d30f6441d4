"""Uploads the model slowly after training (prints, an artifact, no stages)."""

import os
import time

import flightlog

run = flightlog.init()
for step in range(20):
    run.log({"loss": 1.0 / (step + 1)}, step=step)
    time.sleep(0.01)
print("uploading model to the registry", flush=True)
with open("model.bin", "wb") as f:
    for _ in range(13):
        f.write(os.urandom(64 * 1024))
        time.sleep(0.1)  # a slow link
run.log_artifact("model.bin")
print("upload complete", flush=True)
