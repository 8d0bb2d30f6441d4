# queued-ago: 20m
"""JSON logs; queued 20 minutes."""

import json
import time

for i in range(3):
    print(json.dumps({"ts": time.time(), "level": "info", "msg": "processed partition", "partition": i}))
