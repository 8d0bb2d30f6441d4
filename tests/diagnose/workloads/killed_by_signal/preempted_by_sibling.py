"""A node agent preempts the job with SIGTERM (a sibling process sends it)."""

import logging
import os
import subprocess
import time

logging.basicConfig(level=logging.INFO)
log = logging.getLogger("train")
subprocess.Popen(["sh", "-c", f"sleep 0.3; kill -TERM {os.getpid()}"])
for step in range(100):
    log.info("step %d", step)
    time.sleep(0.05)
