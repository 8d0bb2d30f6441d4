# expect: none
"""A dataset service answers 503 twice (requests' HTTPError, logged as a warning with the retry),
then 200; the job loads its rows and finishes. A service that was briefly unavailable and then
answered is no service_unavailable failure (issue 29)."""

import logging
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer

import requests

logging.basicConfig(level=logging.INFO)
log = logging.getLogger("loader")
calls = {"n": 0}


class Flaky(BaseHTTPRequestHandler):
    def do_GET(self):
        calls["n"] += 1
        if calls["n"] <= 2:
            self.send_response(503)
            self.end_headers()
            self.wfile.write(b"Service Unavailable")
            return
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b'{"rows": 1000}')

    def log_message(self, *args):
        pass


server = HTTPServer(("127.0.0.1", 0), Flaky)
threading.Thread(target=server.serve_forever, daemon=True).start()
url = f"http://127.0.0.1:{server.server_port}/dataset"
for attempt in range(1, 6):
    try:
        response = requests.get(url, timeout=5)
        response.raise_for_status()
        log.info("dataset service answered: %s", response.text)
        break
    except requests.exceptions.HTTPError as e:
        log.warning("attempt %d: %s; retrying in %.1fs", attempt, e, 0.1 * attempt)
        time.sleep(0.1 * attempt)
print("loaded 1000 rows")
