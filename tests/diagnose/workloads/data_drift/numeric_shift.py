"""This week's transaction amounts are in cents, not dollars: profile, drift, evidence."""

import numpy as np
import pandas as pd

import flightlog
from flightlog.data import drift, profile

rng = np.random.default_rng(0)
reference = pd.DataFrame({"amount": rng.gamma(2.0, 30.0, 5000), "country": rng.choice(["DE", "FR", "US"], 5000)})
current = pd.DataFrame({"amount": rng.gamma(2.0, 30.0, 5000) * 100, "country": rng.choice(["DE", "FR", "US"], 5000)})
run = flightlog.init()
report = drift(profile(reference), profile(current))
run.log_evidence("drift", "transactions", report.to_dict())
print("drifted columns:", report.drifted_columns)
for step in range(5):
    run.log({"loss": 1.0 / (step + 1)}, step=step)
