"""A dependency answers 503 Service Unavailable; requests raises on it."""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer

import requests


class Overloaded(BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(503)
        self.end_headers()
        self.wfile.write(b"overloaded")

    def log_message(self, *args):
        pass


server = HTTPServer(("127.0.0.1", 0), Overloaded)
threading.Thread(target=server.serve_forever, daemon=True).start()
url = f"http://127.0.0.1:{server.server_port}/embeddings"
print(json.dumps({"level": "info", "msg": "fetching embeddings", "url": url, "ts": time.time()}))
r = requests.get(url, timeout=2)
r.raise_for_status()
