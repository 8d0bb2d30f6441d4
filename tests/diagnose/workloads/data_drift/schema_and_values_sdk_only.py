# mode: sdk
"""SDK only: a column disappears and another one shifts; the run itself succeeds."""

import numpy as np
import pandas as pd

import flightlog
from flightlog.data import drift, profile

rng = np.random.default_rng(2)
ref = pd.DataFrame(
    {
        "age": rng.normal(40, 10, 3000),
        "income": rng.normal(50_000, 8_000, 3000),
        "segment": rng.choice(["a", "b"], 3000),
    }
)
cur = pd.DataFrame({"age": rng.normal(55, 10, 3000), "income": rng.normal(50_000, 8_000, 3000)})
with flightlog.init(name="schema_and_values_sdk_only") as run:
    run.log_evidence("drift", "customers", drift(profile(ref), profile(cur)).to_dict())
