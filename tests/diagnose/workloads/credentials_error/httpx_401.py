"""The API rejects an expired token: httpx raises on 401."""

import logging
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import httpx


class Auth(BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(401)
        self.send_header("WWW-Authenticate", "Bearer error=invalid_token")
        self.end_headers()

    def log_message(self, *args):
        pass


server = HTTPServer(("127.0.0.1", 0), Auth)
threading.Thread(target=server.serve_forever, daemon=True).start()
logging.basicConfig(level=logging.INFO)
logging.getLogger("upload").info("uploading metrics")
r = httpx.get(f"http://127.0.0.1:{server.server_port}/api/runs", headers={"Authorization": "Bearer expired"})
r.raise_for_status()
