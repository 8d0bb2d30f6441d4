# expect: none
"""A batch job that logs one final metric at the end: no steps, no slow start."""

import time

import flightlog

run = flightlog.init()
t0 = time.time()
while time.time() - t0 < 1.2:
    sum(range(1000))
run.log({"accuracy": 0.93})
