"""httpx with retries logged as warnings, then gives up."""

import logging
import socket
import time

import httpx

logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s %(message)s")
log = logging.getLogger("loader")
with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
url = f"http://127.0.0.1:{port}/v1/batches"
for attempt in range(1, 4):
    try:
        httpx.get(url, timeout=1.0)
        break
    except httpx.ConnectError as exc:
        log.warning("attempt %d: %s, retrying", attempt, exc)
        time.sleep(0.05)
httpx.get(url, timeout=1.0).raise_for_status()
