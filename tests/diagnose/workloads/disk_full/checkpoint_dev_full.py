"""Saves a checkpoint to a full device (/dev/full answers ENOSPC)."""

import pickle

state = {"weights": list(range(10000))}
print("saving checkpoint")
with open("/dev/full", "wb") as f:
    pickle.dump(state, f)
    f.flush()
