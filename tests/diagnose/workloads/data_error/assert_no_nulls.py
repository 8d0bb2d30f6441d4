"""An assertion on the data, with a warning before it."""

import warnings

import numpy as np

labels = np.array([1.0, 0.0, np.nan, 1.0])
warnings.warn("label file is older than 7 days", UserWarning, stacklevel=1)
assert not np.isnan(labels).any(), f"label column contains nulls: {int(np.isnan(labels).sum())} rows"
