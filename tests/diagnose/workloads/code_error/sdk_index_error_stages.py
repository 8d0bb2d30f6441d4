# mode: sdk
"""SDK with stages: an off-by-one in the batching."""

import flightlog

data = list(range(10))
with flightlog.init(name="sdk_index_error_stages") as run:
    for step in range(6):
        with run.stage("train_step"):
            batch = [data[step * 2 + i] for i in range(3)]
            run.log({"loss": sum(batch) / 10}, step=step)
