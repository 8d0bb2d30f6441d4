# expect: none
"""Ordinary lines that mention Killed and NaN; the run succeeds."""

print("Killed 3 stale workers before starting")
print("loss=NaN guard enabled; will skip batches with NaN inputs")
print("checked 1000 rows: 0 NaN values")
for step in range(5):
    print(f"step {step} loss={1.0 / (step + 1):.3f}")
print("done")
