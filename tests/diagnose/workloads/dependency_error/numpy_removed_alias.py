"""Code written for an older NumPy: np.float was removed (a version incompatibility)."""

import numpy as np

weights = [0.2, 0.3, 0.5]
print("normalizing", weights)
total = np.float(sum(weights))
