"""Model-quality metrics computed with numpy, without scikit-learn.

Why our own: flightlog must not pull a machine-learning framework into every training job,
and the handful of metrics a cohort table needs are short. A metric that is undefined for a
slice (AUC with one class present, precision with no positive prediction) is ``None``, never a
made-up 0, so a tiny cohort cannot look like a regression.

Classification: ``accuracy``, ``precision``, ``recall``, ``f1`` (binary: of the positive
label; more than two classes: macro averages) and ``auc`` (needs scores: a 1-D score of the
positive label, or a 2-D matrix of class probabilities — one-vs-rest macro average).
Regression: ``mae``, ``rmse``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy.stats import rankdata

__all__ = [
    "CLASSIFICATION_METRICS",
    "REGRESSION_METRICS",
    "LOWER_IS_BETTER",
    "classification",
    "regression",
    "auc",
]

CLASSIFICATION_METRICS = ("accuracy", "precision", "recall", "f1", "auc")
REGRESSION_METRICS = ("mae", "rmse")
LOWER_IS_BETTER = frozenset(REGRESSION_METRICS)


def _ratio(num: float, den: float) -> float | None:
    return float(num / den) if den else None


def auc(y_pos: np.ndarray, scores: np.ndarray) -> float | None:
    """Area under the ROC curve via the Mann–Whitney U statistic (ties count half)."""
    n_pos = int(np.count_nonzero(y_pos))
    n_neg = int(y_pos.size - n_pos)
    if n_pos == 0 or n_neg == 0:
        return None
    ranks = rankdata(scores)
    u = float(ranks[y_pos].sum()) - n_pos * (n_pos + 1) / 2
    return u / (n_pos * n_neg)


def _binary(y_true: np.ndarray, y_pred: np.ndarray, positive: Any) -> tuple[float | None, float | None, float | None]:
    t = y_true == positive
    p = y_pred == positive
    tp = float(np.count_nonzero(t & p))
    precision = _ratio(tp, float(np.count_nonzero(p)))
    recall = _ratio(tp, float(np.count_nonzero(t)))
    if precision is None or recall is None:
        f1 = None
    else:
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


def classification(
    y_true: np.ndarray,
    y_pred: np.ndarray,
    *,
    classes: Sequence[Any],
    positive: Any = None,
    scores: np.ndarray | None = None,
    names: Sequence[str] = CLASSIFICATION_METRICS,
) -> dict[str, float | None]:
    """Metrics for predicted labels (and optional scores) against true labels.

    ``classes`` are all labels of the task (so a slice missing a class still averages over
    every class it has); ``positive`` is the positive label of a binary task.
    """
    out: dict[str, float | None] = {}
    n = y_true.size
    if "accuracy" in names:
        out["accuracy"] = _ratio(float(np.count_nonzero(y_true == y_pred)), n)
    want = [m for m in ("precision", "recall", "f1") if m in names]
    if want:
        if positive is not None:
            prf = _binary(y_true, y_pred, positive)
        else:
            per = [_binary(y_true, y_pred, c) for c in classes if np.any(y_true == c) or np.any(y_pred == c)]
            prf = tuple(_mean([x[i] for x in per]) for i in range(3))  # type: ignore[assignment]
        for m, v in zip(("precision", "recall", "f1"), prf, strict=True):
            if m in names:
                out[m] = v
    if "auc" in names:
        out["auc"] = _auc(y_true, scores, classes, positive)
    return out


def _mean(values: list[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return float(np.mean(vals)) if vals else None


def _auc(y_true: np.ndarray, scores: np.ndarray | None, classes: Sequence[Any], positive: Any) -> float | None:
    if scores is None:
        return None
    if scores.ndim == 1:
        return auc(y_true == (positive if positive is not None else classes[-1]), scores)
    per = [auc(y_true == c, scores[:, i]) for i, c in enumerate(classes)]
    return _mean(per)


def regression(
    y_true: np.ndarray, y_pred: np.ndarray, *, names: Sequence[str] = REGRESSION_METRICS
) -> dict[str, float | None]:
    """Mean absolute error and root mean squared error."""
    err = y_pred.astype(np.float64) - y_true.astype(np.float64)
    out: dict[str, float | None] = {}
    if "mae" in names:
        out["mae"] = float(np.mean(np.abs(err))) if err.size else None
    if "rmse" in names:
        out["rmse"] = float(np.sqrt(np.mean(err * err))) if err.size else None
    return out
