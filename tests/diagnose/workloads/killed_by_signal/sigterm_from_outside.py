# signal: 0.8 TERM
"""`docker stop`: the runner receives SIGTERM and forwards it."""

import time

for step in range(1000):
    print(f"step {step}", flush=True)
    time.sleep(0.05)
