"""k-means in numpy with stages (assign, update) and the inertia per iteration, as a
scikit-learn-style clustering job would log it."""

import os

import numpy as np

import flightlog

rng = np.random.default_rng(3)
centers = rng.normal(scale=5, size=(4, 2))
x = np.concatenate([c + rng.normal(size=(300, 2)) for c in centers])
run = flightlog.init(
    project=os.environ.get("FLIGHTLOG_PROJECT", "healthy"),
    name=os.environ.get("WORKLOAD_NAME"),
    params={"n_clusters": 4, "max_iter": 30},
)
mu = x[rng.choice(len(x), 4, replace=False)]
for it in range(30):
    with run.stage("assign"):
        labels = np.argmin(((x[:, None, :] - mu[None]) ** 2).sum(-1), axis=1)
    with run.stage("update"):
        mu = np.stack([x[labels == k].mean(0) if (labels == k).any() else mu[k] for k in range(4)])
    run.log({"inertia": float(((x - mu[labels]) ** 2).sum())}, step=it)
run.finish()
