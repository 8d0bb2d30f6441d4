"""A scikit-learn-style estimator in numpy (fit/predict, logistic regression by gradient descent),
cross-validated over 3 folds, each fold's score logged."""

import os

import numpy as np

import flightlog


class LogisticRegression:
    def __init__(self, lr: float = 0.5, epochs: int = 80) -> None:
        self.lr, self.epochs = lr, epochs

    def fit(self, x: np.ndarray, y: np.ndarray, run: flightlog.Run, fold: int) -> "LogisticRegression":
        self.w = np.zeros(x.shape[1])
        for epoch in range(self.epochs):
            p = 1 / (1 + np.exp(-x @ self.w))
            self.w -= self.lr * x.T @ (p - y) / len(y)
            loss = -np.mean(y * np.log(p + 1e-9) + (1 - y) * np.log(1 - p + 1e-9))
            run.log({f"fold{fold}/train_loss": float(loss)}, step=epoch)
        return self

    def predict(self, x: np.ndarray) -> np.ndarray:
        return (x @ self.w > 0).astype(int)


rng = np.random.default_rng(0)
x = rng.normal(size=(900, 5))
y = (x @ np.array([1.0, -2.0, 0.5, 0.0, 1.5]) + 0.5 * rng.normal(size=900) > 0).astype(int)
run = flightlog.init(
    project=os.environ.get("FLIGHTLOG_PROJECT", "healthy"),
    name=os.environ.get("WORKLOAD_NAME"),
    params={"model": "logistic_regression", "lr": 0.5, "epochs": 80, "folds": 3},
)
folds = np.array_split(rng.permutation(900), 3)
scores = []
for k, test in enumerate(folds):
    train = np.concatenate([f for j, f in enumerate(folds) if j != k])
    model = LogisticRegression().fit(x[train], y[train], run, k)
    scores.append(float((model.predict(x[test]) == y[test]).mean()))
    run.log({"cv_accuracy": scores[-1]}, step=k)
run.log({"mean_cv_accuracy": float(np.mean(scores))})
print(f"accuracy {np.mean(scores):.3f}", flush=True)
run.finish()
