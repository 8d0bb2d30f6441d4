"""Stages named after the loop: fetch_batch dominates forward."""

import queue
import threading
import time

import flightlog

run = flightlog.init()
q = queue.Queue(maxsize=2)


def producer():
    for i in range(30):
        time.sleep(0.035)  # decoding images on one thread
        q.put(i)


threading.Thread(target=producer, daemon=True).start()
for step in range(30):
    with run.stage("fetch_batch"):
        item = q.get()
    with run.stage("forward"):
        total = sum(range(2000))
    run.log({"loss": 1.0 / (item + 1)}, step=step)
