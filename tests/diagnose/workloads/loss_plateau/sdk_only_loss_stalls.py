# mode: sdk
"""SDK only, with stages: the training loss stops improving early."""

import flightlog

run = flightlog.init(name="sdk_only_loss_stalls")
for step in range(60):
    with run.stage("train_step"):
        loss = max(0.9, 2.0 - 0.1 * step) + (0.001 if step % 2 else 0.0)
    run.log({"loss": loss}, step=step)
run.finish()
