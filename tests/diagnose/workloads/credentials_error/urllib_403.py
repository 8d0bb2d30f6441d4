"""Object storage says 403 Forbidden for the bucket."""

import threading
import urllib.request
from http.server import BaseHTTPRequestHandler, HTTPServer


class Bucket(BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(403)
        self.end_headers()
        self.wfile.write(b"<Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>")

    def log_message(self, *args):
        pass


server = HTTPServer(("127.0.0.1", 0), Bucket)
threading.Thread(target=server.serve_forever, daemon=True).start()
print("fetching s3://training-data/2024/part-0.parquet")
urllib.request.urlopen(f"http://127.0.0.1:{server.server_port}/training-data/2024/part-0.parquet")
