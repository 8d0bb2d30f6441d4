# expect: none
"""Warnings on stderr and a deprecation notice; nothing fails."""

import sys
import warnings

warnings.warn("the 'normalize' argument is deprecated", FutureWarning, stacklevel=1)
print("WARNING: GPU not found, falling back to CPU", file=sys.stderr)
total = sum(i * i for i in range(100_000))
print("result", total)
