# expect: none
"""A refused connection is handled (traceback logged), the retry succeeds, the run finishes."""

import logging
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer

logging.basicConfig(level=logging.INFO)
log = logging.getLogger("client")


class Ok(BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args):
        pass


with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
try:
    socket.create_connection(("127.0.0.1", port), timeout=1)
except ConnectionRefusedError:
    log.exception("feature store not ready, retrying in 0.2s")
server = HTTPServer(("127.0.0.1", port), Ok)
threading.Thread(target=server.serve_forever, daemon=True).start()
time.sleep(0.2)
import urllib.request  # noqa: E402

log.info("feature store answered: %s", urllib.request.urlopen(f"http://127.0.0.1:{port}/").read().decode())
