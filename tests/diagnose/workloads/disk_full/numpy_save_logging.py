"""numpy.save onto a full disk, with logging."""

import logging

import numpy as np

logging.basicConfig(level=logging.INFO)
logging.getLogger("export").info("exporting embeddings")
with open("/dev/full", "wb") as f:
    np.save(f, np.ones((256, 256)))
    f.flush()
