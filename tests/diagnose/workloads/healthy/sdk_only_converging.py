# expect: none
# mode: sdk
"""SDK only, a loss that keeps converging (1/step): not a plateau."""

import flightlog

with flightlog.init(name="sdk_only_converging") as run:
    for step in range(80):
        with run.stage("train_step"):
            loss = 1.0 / (step + 1)
        run.log({"loss": loss, "lr": 0.1}, step=step)
