"""Allocates a dense matrix far larger than the machine: NumPy's MemoryError."""

import numpy as np

n_users, n_items = 3_000_000, 2_000_000
print(f"building a {n_users} x {n_items} interaction matrix")
interactions = np.zeros((n_users, n_items), dtype=np.float32)
