"""Noise first: a metrics push that fails and is handled; then a missing input kills the run."""

import logging
import socket

import pandas as pd

logging.basicConfig(level=logging.INFO)
log = logging.getLogger("etl")
try:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    socket.create_connection(("127.0.0.1", port), timeout=1)
except ConnectionRefusedError:
    log.exception("metrics push failed, continuing without metrics")
df = pd.read_csv("features/2024-06/part-0000.csv")
print(df.shape)
