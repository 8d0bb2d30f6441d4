# runner: --memory-limit 150M
"""A training loop with SDK stages whose batches grow until the limit kills it."""

import flightlog

run = flightlog.init()
held = []
for step in range(500):
    with run.stage("data_loading"):
        batch = bytearray((4 + step) * 1024 * 1024)
        batch[::4096] = b"x" * len(batch[::4096])
    with run.stage("train_step"):
        held.append(batch)
        run.log({"loss": 1.0 / (step + 1)}, step=step)
