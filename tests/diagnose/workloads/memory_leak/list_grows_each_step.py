# runner: --sample-interval 0.1s
"""Keeps every step's activations in a list (the classic: losses kept as tensors)."""

import time

import flightlog

run = flightlog.init()
history = []
for step in range(90):
    activations = bytearray(3 * 1024 * 1024)
    activations[::4096] = b"x" * len(activations[::4096])
    history.append(activations)
    run.log({"loss": 1.0 / (step + 1)}, step=step)
    time.sleep(0.03)
