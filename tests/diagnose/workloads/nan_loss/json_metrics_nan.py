"""JSON-logged metrics plus SDK metrics; the loss turns NaN midway and training continues."""

import json
import math

import flightlog

run = flightlog.init()
for step in range(40):
    loss = 1.0 / (step + 1) if step < 25 else math.nan
    print(json.dumps({"level": "info", "step": step, "loss": loss if not math.isnan(loss) else "NaN"}))
    run.log({"loss": loss, "grad_norm": 0.5}, step=step)
