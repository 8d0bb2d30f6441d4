"""Two interleaved half-moons, split into train and test."""

from __future__ import annotations

import numpy as np
from common import params, write_csv

p = params(rows=2000, seed=7)
rng = np.random.default_rng(int(p["seed"]))
n = int(p["rows"])
t = rng.uniform(0, np.pi, n)
label = rng.integers(0, 2, n)
x = np.column_stack([np.cos(t) + label * 1.0, np.sin(t) * (1 - 2 * label) + label * 0.5])
x += rng.normal(0, 0.15, x.shape)
split = int(n * 0.8)
write_csv("data/train.csv", x[:split], label[:split])
write_csv("data/test.csv", x[split:], label[split:])
print(f"prepared {split} training and {n - split} test rows")
