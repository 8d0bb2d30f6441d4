"""Pipeline step: make a small classification table."""

import json
import os
from pathlib import Path

import numpy as np

params = json.loads(os.environ.get("FLIGHTLOG_STEP_PARAMS") or "{}")
rng = np.random.default_rng(params.get("seed", 7))
x = rng.normal(size=(params.get("rows", 600), 4))
y = (x @ np.array([1.0, -1.0, 0.5, 2.0]) > 0).astype(int)
Path("data").mkdir(exist_ok=True)
np.savez("data/train.npz", x=x, y=y)
print(f"wrote {len(y)} rows", flush=True)
