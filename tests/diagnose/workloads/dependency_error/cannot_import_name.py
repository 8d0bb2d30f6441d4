"""A name that the installed NumPy does not have."""

import logging

logging.basicConfig(level=logging.INFO)
logging.getLogger("train").info("starting")
from numpy import fast_histogram_v2  # noqa: F401,E402
