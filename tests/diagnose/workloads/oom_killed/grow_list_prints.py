# runner: --memory-limit 100M
"""Keeps every batch it reads in a list: killed at the cgroup limit."""

import time

cache = []
for step in range(400):
    cache.append(bytearray(8 * 1024 * 1024))
    for i in range(0, len(cache[-1]), 4096):
        cache[-1][i] = 1  # touch the pages so they count
    print(f"step {step}: cached {len(cache) * 8} MiB", flush=True)
    time.sleep(0.005)
