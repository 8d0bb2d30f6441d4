"""kill -9 from an operator while memory is small: not an OOM."""

import os
import subprocess
import time

print("serving", flush=True)
subprocess.Popen(["sh", "-c", f"sleep 0.3; kill -KILL {os.getpid()}"])
time.sleep(5)
