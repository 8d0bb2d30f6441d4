"""scikit-learn: a GradientBoostingClassifier fit, its staged train and validation deviance and accuracy logged per stage."""

import os

from sklearn.datasets import make_classification
from sklearn.ensemble import GradientBoostingClassifier
from sklearn.metrics import accuracy_score, log_loss
from sklearn.model_selection import train_test_split

import flightlog

x, y = make_classification(n_samples=2000, n_features=12, n_informative=6, random_state=1)
x_train, x_valid, y_train, y_valid = train_test_split(x, y, test_size=0.25, random_state=1)
params = {"n_estimators": 60, "learning_rate": 0.1, "max_depth": 3, "subsample": 1.0}
run = flightlog.init(
    project=os.environ.get("FLIGHTLOG_PROJECT", "healthy"), name=os.environ.get("WORKLOAD_NAME"), params=params
)
with run.stage("fit"):
    model = GradientBoostingClassifier(random_state=1, **params).fit(x_train, y_train)
for stage, (train_proba, valid_proba) in enumerate(
    zip(model.staged_predict_proba(x_train), model.staged_predict_proba(x_valid), strict=True)
):
    run.log(
        {
            "loss": log_loss(y_train, train_proba),
            "val_loss": log_loss(y_valid, valid_proba),
            "val_accuracy": accuracy_score(y_valid, valid_proba.argmax(axis=1)),
        },
        step=stage,
    )
run.finish()
