# mode: sdk
"""SDK: records its input dataset, which was never synced to this host."""

import flightlog

with flightlog.init(name="sdk_log_input") as run, run.stage("startup"):
    run.log_input("datasets/imagenet-subset")
