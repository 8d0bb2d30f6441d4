"""JSON logs; the checkpoint to resume from is missing."""

import json
import time

import numpy as np


def log(level, msg, **fields):
    print(json.dumps({"ts": time.time(), "level": level, "msg": msg, **fields}), flush=True)


log("info", "resuming", checkpoint="checkpoints/epoch_3.npy")
weights = np.load("checkpoints/epoch_3.npy")
log("info", "loaded", shape=list(weights.shape))
