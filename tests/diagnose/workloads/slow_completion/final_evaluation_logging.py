"""A full evaluation pass after the last training step, with logging."""

import logging
import time

import flightlog

logging.basicConfig(level=logging.INFO)
log = logging.getLogger("train")
run = flightlog.init()
for step in range(20):
    run.log({"loss": 1.0 / (step + 1)}, step=step)
    time.sleep(0.01)
log.info("training done; evaluating on the full test set")
with run.stage("evaluation"):
    time.sleep(1.3)
log.info("evaluation done")
