# expect: none
"""Automatic batch sizing (the pattern of Accelerate's ``find_executable_batch_size``): the
first batch size runs out of GPU memory, the error is caught and logged, the batch is halved,
and the training that follows succeeds. An out-of-memory error the run got over, with its work
printed after it, is no OOM kill (issue 29)."""

import logging
import os

import flightlog

logging.basicConfig(level=logging.INFO, format="%(levelname)s:%(name)s:%(message)s")
log = logging.getLogger("autobatch")


def train_step(batch_size: int) -> float:
    if batch_size > 64:  # what the device's memory allows
        raise RuntimeError(
            f"CUDA out of memory. Tried to allocate {batch_size * 8} MiB (GPU 0; 15.78 GiB total capacity; "
            "14.20 GiB already allocated; 512.00 MiB free; 14.90 GiB reserved in total by PyTorch)"
        )
    return 1.0 / batch_size


batch_size = 256
while True:
    try:
        train_step(batch_size)
        break
    except RuntimeError as e:
        if "out of memory" not in str(e):
            raise
        log.warning("OOM at batch size %d: %s; halving", batch_size, e)
        batch_size //= 2
log.info("batch size %d fits", batch_size)
run = flightlog.init(project=os.environ.get("FLIGHTLOG_PROJECT", "wl"), name=os.environ.get("WORKLOAD_NAME"))
loss = 2.0
for step in range(30):
    loss *= 0.9
    run.log({"loss": loss}, step=step)
run.finish()
