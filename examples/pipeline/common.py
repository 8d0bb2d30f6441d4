"""What the example's steps share: their params (FLIGHTLOG_STEP_PARAMS) and the CSV format."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np


def params(**defaults: float) -> dict[str, float]:
    """The step's params from the pipeline (FLIGHTLOG_STEP_PARAMS), over the defaults."""
    return {**defaults, **json.loads(os.environ.get("FLIGHTLOG_STEP_PARAMS") or "{}")}


def read_csv(path: str | Path) -> tuple[np.ndarray, np.ndarray]:
    data = np.loadtxt(path, delimiter=",", skiprows=1)
    return data[:, :2], data[:, 2].astype(int)


def write_csv(path: str | Path, x: np.ndarray, y: np.ndarray) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    rows = np.column_stack([x, y])
    np.savetxt(path, rows, delimiter=",", header="x1,x2,label", comments="", fmt=["%.6f", "%.6f", "%d"])


def features(x: np.ndarray) -> np.ndarray:
    """Polynomial features: a linear model on them separates the moons."""
    return np.column_stack([np.ones(len(x)), x, x**2, x[:, :1] * x[:, 1:], x**3])
