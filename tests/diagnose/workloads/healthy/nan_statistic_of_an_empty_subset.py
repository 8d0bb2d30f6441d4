# expect: none
"""Training logged with the SDK (a finite loss), then an evaluation per language prints its
accuracy, ``nan`` for a language with no rows (numpy's mean of an empty slice). A statistic
undefined on an empty subset after a finite training is no NaN loss (issue 29)."""

import os

import numpy as np

import flightlog

run = flightlog.init(project=os.environ.get("FLIGHTLOG_PROJECT", "wl"), name=os.environ.get("WORKLOAD_NAME"))
loss = 1.0
for step in range(30):
    loss *= 0.9
    run.log({"loss": loss}, step=step)
rng = np.random.default_rng(0)
languages = rng.choice(["en", "de", "fr"], 300)
correct = rng.random(300) < 0.9
for language in ["en", "de", "fr", "ja"]:
    rows = languages == language
    accuracy = correct[rows].mean() if rows.any() else float("nan")
    f1 = accuracy * 0.98
    print(f"eval/{language}: n={rows.sum()} accuracy={accuracy:.3f} f1={f1:.3f}")
run.finish()
