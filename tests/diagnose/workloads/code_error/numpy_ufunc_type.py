"""Adds a string column to a float array."""

import numpy as np

scores = np.zeros(3)
bonus = np.array(["1", "2", "3"])
print("combining")
print(scores + bonus)
