# runner: --memory-limit 120M
"""Concatenates features into ever larger numpy arrays, logged with `logging`."""

import logging

import numpy as np

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
log = logging.getLogger("features")
log.warning("feature cache disabled: recomputing everything")  # noise
parts = []
for shard in range(200):
    parts.append(np.ones((1024, 1024), dtype=np.float64))  # 8 MiB a shard
    if shard % 3 == 0:
        log.info("shard %d loaded, %d MiB held", shard, len(parts) * 8)
features = np.concatenate(parts)
