"""scikit-learn: SGDClassifier trained by partial_fit epochs over minibatches, loss and accuracy logged with the SDK."""

import os

import numpy as np
from sklearn.datasets import make_classification
from sklearn.linear_model import SGDClassifier
from sklearn.metrics import accuracy_score, log_loss
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

import flightlog

x, y = make_classification(n_samples=3000, n_features=20, n_informative=8, random_state=0)
x_train, x_valid, y_train, y_valid = train_test_split(x, y, test_size=0.25, random_state=0)
scaler = StandardScaler().fit(x_train)
x_train, x_valid = scaler.transform(x_train), scaler.transform(x_valid)
params = {"loss": "log_loss", "alpha": 1e-4, "learning_rate": "optimal", "batch": 128, "epochs": 20}
run = flightlog.init(
    project=os.environ.get("FLIGHTLOG_PROJECT", "healthy"), name=os.environ.get("WORKLOAD_NAME"), params=params
)
model = SGDClassifier(loss="log_loss", alpha=1e-4, learning_rate="optimal", random_state=0)
rng = np.random.default_rng(0)
classes = np.unique(y)
for epoch in range(20):
    order = rng.permutation(len(x_train))
    for start in range(0, len(order), 128):
        i = order[start : start + 128]
        model.partial_fit(x_train[i], y_train[i], classes=classes)
    run.log(
        {
            "loss": log_loss(y_train, model.predict_proba(x_train)),
            "val_loss": log_loss(y_valid, model.predict_proba(x_valid)),
            "val_accuracy": accuracy_score(y_valid, model.predict(x_valid)),
        },
        step=epoch,
    )
run.finish()
