"""Builds a lookup index in Python before training (logging, no stages)."""

import logging
import time

import flightlog

logging.basicConfig(level=logging.INFO)
log = logging.getLogger("prep")
run = flightlog.init()
log.info("indexing 2M documents")
deadline = time.time() + 1.3
index = {}
i = 0
while time.time() < deadline:
    index[i % 50_000] = str(i)
    i += 1
log.info("index ready: %d entries", len(index))
for step in range(20):
    run.log({"loss": 1.0 / (step + 1)}, step=step)
    time.sleep(0.005)
