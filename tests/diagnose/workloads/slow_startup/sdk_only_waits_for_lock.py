# mode: sdk
"""SDK only (no runner): waits for a shared cache to be unlocked before training."""

import time

import flightlog

run = flightlog.init(name="sdk_only_waits_for_lock")
run.log_event("waiting for /cache/.lock", level="info")
time.sleep(1.3)
for step in range(15):
    with run.stage("forward"):
        time.sleep(0.01)
    run.log({"loss": 1.0 / (step + 1)}, step=step)
run.finish()
