# mode: sdk
"""SDK + flightlog.data: a validation gate fails and stops the pipeline."""

import sys

import pandas as pd

import flightlog
from flightlog.data import NotNull, validate

df = pd.DataFrame({"user": [1, 2, 3, 4], "label": [1, None, 0, None]})
run = flightlog.init(name="sdk_validation_failed")
result = validate(df, [NotNull("label")])
run.log_evidence("validation", "train.parquet", result.to_dict())
if not result.success:
    run.log_event("validation failed: 2 rows without a label", level="error")
    run.finish("failed", exit_code=1)
    sys.exit(1)
