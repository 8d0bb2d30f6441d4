"""scipy is asked for a solver that does not exist."""

import numpy as np
from scipy.optimize import minimize

method = "lbfgs"  # should be "L-BFGS-B"
print("fitting with", method)
minimize(lambda x: float(np.sum((x - 3) ** 2)), np.zeros(3), method=method)
