"""The fraud scorer the example trains and serves: the data, the features, the two model kinds.

numpy only, shared by train.py (fit), app.py (predict), traffic.py (requests with their truth)
and rollout.py (the two data snapshots). A transaction is

    {"amount": 182.5, "hour": 23, "country": "BR", "card_present": 0, "account_age_days": 41}

and its truth is whether it was fraud. Fraud is likelier for large amounts, at night, without
the card, on young accounts; in BR it is also common on small card-not-present payments (a
pattern a model learns only from BR's own rows).
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "COLUMNS",
    "COUNTRIES",
    "Model",
    "encode",
    "fit",
    "generate",
    "load",
    "read_csv",
    "write_csv",
]

COUNTRIES = ("US", "GB", "DE", "BR", "IN")
COUNTRY_SHARE = (0.35, 0.15, 0.15, 0.2, 0.15)
COLUMNS = ("amount", "hour", "country", "card_present", "account_age_days", "fraud")


def generate(rows: int, seed: int) -> list[dict[str, Any]]:
    """``rows`` transactions with their truth (``fraud``: 0 or 1), the same process every time."""
    rng = np.random.default_rng(seed)
    country = rng.choice(len(COUNTRIES), size=rows, p=COUNTRY_SHARE)
    amount = np.round(rng.lognormal(4.0, 1.1, rows), 2)
    hour = rng.integers(0, 24, rows)
    card = (rng.random(rows) < 0.6).astype(int)
    age = rng.integers(1, 3000, rows)
    night = (hour < 6) | (hour >= 22)
    logit = -3.2 + 0.9 * (np.log(amount) - 4.0) + 1.2 * night - 1.4 * card - 0.6 * (np.log(age) - 5.0)
    br = country == COUNTRIES.index("BR")
    logit = np.where(br & (card == 0) & (amount < 60), 2.5, logit)  # BR's own pattern: 9 in 10 are fraud
    fraud = (rng.random(rows) < 1 / (1 + np.exp(-logit))).astype(int)
    return [
        {
            "amount": float(amount[i]),
            "hour": int(hour[i]),
            "country": COUNTRIES[country[i]],
            "card_present": int(card[i]),
            "account_age_days": int(age[i]),
            "fraud": int(fraud[i]),
        }
        for i in range(rows)
    ]


def write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)


def read_csv(path: Path) -> list[dict[str, Any]]:
    with path.open(newline="") as f:
        return [
            {
                "amount": float(r["amount"]),
                "hour": int(r["hour"]),
                "country": r["country"],
                "card_present": int(r["card_present"]),
                "account_age_days": int(r["account_age_days"]),
                "fraud": int(r["fraud"]),
            }
            for r in csv.DictReader(f)
        ]


def encode(rows: list[dict[str, Any]]) -> np.ndarray:
    """Features: log amount, night, card present, log age, a country one-hot, and the country
    one-hot times (card not present and a small amount), where BR's pattern lives."""
    amount = np.array([float(r["amount"]) for r in rows])
    hour = np.array([int(r["hour"]) for r in rows])
    card = np.array([float(r["card_present"]) for r in rows])
    age = np.array([float(r["account_age_days"]) for r in rows])
    country = np.array([COUNTRIES.index(r["country"]) if r["country"] in COUNTRIES else -1 for r in rows])
    onehot = (country[:, None] == np.arange(len(COUNTRIES))[None, :]).astype(float)
    small_cnp = ((card == 0) & (amount < 60)).astype(float)
    night = ((hour < 6) | (hour >= 22)).astype(float)
    base = np.column_stack([np.ones(len(rows)), np.log1p(amount) - 4.0, night, card, np.log1p(age) - 5.0])
    return np.column_stack([base, onehot, onehot * small_cnp[:, None]])


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-np.clip(z, -30, 30)))


class Model:
    """``linear``: logistic regression on the features. ``wide``: the same readout over two
    fixed random layers of ``width`` units (a bigger model whose every prediction multiplies a
    width × width matrix: the deliberately heavier predict path of version 2)."""

    def __init__(self, arrays: dict[str, np.ndarray]) -> None:
        self.arrays: dict[str, Any] = arrays  # Any: numpy's savez stub reads **arrays as its allow_pickle flag
        self.kind = str(arrays["kind"])

    def hidden(self, x: np.ndarray) -> np.ndarray:
        if self.kind == "linear":
            return x
        a = self.arrays
        h = np.tanh(x.astype(np.float32) @ a["w1"])
        return np.column_stack([x, np.tanh(h @ a["w2"]) / np.sqrt(a["w2"].shape[1])])

    def predict(self, rows: list[dict[str, Any]]) -> np.ndarray:
        """The fraud probability of each transaction."""
        return _sigmoid(self.hidden(encode(rows)) @ self.arrays["w"])

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez(path, **self.arrays)


def load(path: str | Path) -> Model:
    with np.load(path) as data:
        return Model({k: data[k] for k in data.files})


def fit(rows: list[dict[str, Any]], *, kind: str = "linear", width: int = 3072, iterations: int = 12) -> Model:
    """Fit the log loss: the readout over the features first (Newton), then (``wide``) a
    few gradient steps over the features and the random layers together (cheap: only the readout learns)."""
    x = encode(rows)
    y = np.array([r["fraud"] for r in rows], dtype=float)
    w = np.zeros(x.shape[1])
    for _ in range(iterations):  # Newton's method: a handful of steps for a few features
        p = _sigmoid(x @ w)
        hessian = (x * (p * (1 - p))[:, None]).T @ x + 1e-3 * np.eye(x.shape[1])
        w -= np.linalg.solve(hessian, x.T @ (p - y))
    arrays: dict[str, np.ndarray] = {"kind": np.array(kind), "w": w}
    if kind == "wide":
        rng = np.random.default_rng(0)
        arrays["w1"] = (rng.normal(0, 1, (x.shape[1], width)) / np.sqrt(x.shape[1])).astype(np.float32)
        arrays["w2"] = (rng.normal(0, 1, (width, width)) / np.sqrt(width)).astype(np.float32)
        h = Model(arrays).hidden(x)
        w = np.concatenate([w, np.zeros(width)]).astype(np.float32)
        for _ in range(20):
            w -= 0.5 * h.T @ (_sigmoid(h @ w) - y).astype(np.float32) / len(y)
        arrays["w"] = w
    return Model(arrays)
