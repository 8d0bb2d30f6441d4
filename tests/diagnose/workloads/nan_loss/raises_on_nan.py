"""A guard that stops training when the loss is NaN (no SDK metrics)."""

import math

loss = 1.0
for step in range(30):
    loss = loss * 1e30 if step < 12 else loss - loss
    if math.isnan(loss) or math.isinf(loss):
        raise FloatingPointError(f"loss is nan at step {step}; stopping")
    print(f"step {step} loss={loss:.3g}")
