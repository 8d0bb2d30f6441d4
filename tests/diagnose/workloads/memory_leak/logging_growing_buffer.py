# runner: --sample-interval 0.1s
"""A log buffer that is never flushed, logged with `logging`."""

import logging
import time

import flightlog

logging.basicConfig(level=logging.INFO)
log = logging.getLogger("serve")
run = flightlog.init()
buffer = []
for step in range(90):
    buffer.append("x" * (3 * 1024 * 1024))
    if step % 20 == 0:
        log.info("step %d, %d requests buffered", step, len(buffer))
    run.log({"latency_ms": 12.0}, step=step)
    time.sleep(0.03)
