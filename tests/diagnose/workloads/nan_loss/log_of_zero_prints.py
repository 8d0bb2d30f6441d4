"""log(0) in a cross-entropy: -inf, printed and logged."""

import numpy as np

import flightlog

np.seterr(all="ignore")
run = flightlog.init()
probs = np.linspace(0.5, 0.0, 40)
for step, p in enumerate(probs):
    loss = float(-np.log(p))
    print(f"step {step} loss={loss:.4f}")
    run.log({"train/loss": loss, "p": float(p)}, step=step)
