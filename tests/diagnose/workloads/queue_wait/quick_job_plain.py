# queued-ago: 2h
"""A quick job that sat in the scheduler's queue for two hours."""

print("scoring batch 2024-06-01")
print("done: 1200 rows")
