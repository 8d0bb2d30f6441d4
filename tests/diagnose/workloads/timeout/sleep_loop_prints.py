# runner: --timeout 1s --kill-grace 1s
"""Waits forever on a lock that never frees."""

import time

print("waiting for lock /locks/train", flush=True)
while True:
    time.sleep(0.1)
