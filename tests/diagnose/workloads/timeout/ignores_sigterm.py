# runner: --timeout 1s --kill-grace 0.5s
"""Ignores SIGTERM, so the runner has to SIGKILL it after the grace period."""

import logging
import signal
import time

signal.signal(signal.SIGTERM, signal.SIG_IGN)
logging.basicConfig(level=logging.INFO)
log = logging.getLogger("worker")
while True:
    log.info("polling queue")
    time.sleep(0.2)
