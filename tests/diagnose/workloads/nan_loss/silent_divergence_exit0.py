# expect: nan_loss
"""Silent divergence: plain print() logging, no SDK; the loss turns NaN and the script exits 0."""

import math

loss = 2.0
for step in range(0, 400, 20):
    loss = loss * 0.9 if step < 300 else math.nan
    print(f"step {step} loss={loss:.4f} ppl={math.exp(loss):.4f}")
print("training finished")
