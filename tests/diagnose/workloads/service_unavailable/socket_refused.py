"""Connects to a feature store that is not listening."""

import socket

with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
print(f"connecting to feature store at 127.0.0.1:{port}")
conn = socket.create_connection(("127.0.0.1", port), timeout=2)
