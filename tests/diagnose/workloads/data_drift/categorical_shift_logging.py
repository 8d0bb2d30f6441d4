"""A new app release changes the device mix; logged with `logging`."""

import logging

import numpy as np
import pandas as pd

import flightlog
from flightlog.data import drift, profile

logging.basicConfig(level=logging.INFO)
rng = np.random.default_rng(1)
ref = pd.DataFrame(
    {"device": rng.choice(["ios", "android", "web"], 4000, p=[0.4, 0.4, 0.2]), "clicks": rng.poisson(3, 4000)}
)
cur = pd.DataFrame(
    {"device": rng.choice(["ios", "android", "web"], 4000, p=[0.1, 0.2, 0.7]), "clicks": rng.poisson(9, 4000)}
)
run = flightlog.init()
result = drift(profile(ref), profile(cur)).to_dict()
run.log_evidence("drift", "events", result)
logging.getLogger("monitor").info("drift share %.2f", result["drift_share"])
