"""Is a difference between two evaluations more than chance? The test suited to each metric.

A rate with its counts — accuracy (of n rows), precision (of the predicted positives), recall
(of the actual positives) — is compared as **two proportions** (a z-test on the pooled rate,
with a Wald interval of the difference). Any other metric (F1, AUC, MAE, RMSE, macro averages)
has no closed form worth trusting on a slice, so :func:`bootstrap_stderr` resamples the rows
when the evaluation is made and keeps each metric's standard error; two evaluations are then
compared with the **bootstrap interval** of the difference (normal, from both errors).

Many cohorts times several metrics are many tests: at 5 % each, a few "regressions" appear in
coin flips. :func:`holm` adjusts the p-values of one comparison together (Holm–Bonferroni),
and a difference is significant when its adjusted p-value is below :data:`ALPHA`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.stats import norm

__all__ = ["Test", "two_proportions", "bootstrap_difference", "bootstrap_stderr", "holm", "ALPHA", "RATES"]

ALPHA = 0.05
#: the metrics that are a share of a count the evaluation knows (its "support")
RATES = ("accuracy", "precision", "recall")
_Z = float(norm.ppf(0.975))


@dataclass
class Test:
    method: str  # "two_proportions" | "bootstrap"
    p_value: float
    interval: tuple[float, float]  # 95 % interval of current − baseline
    n: int | None
    baseline_n: int | None
    p_adjusted: float | None = None

    @property
    def significant(self) -> bool:
        p = self.p_adjusted if self.p_adjusted is not None else self.p_value
        return p < ALPHA

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "p_value": self.p_value,
            "p_adjusted": self.p_adjusted,
            "interval": [self.interval[0], self.interval[1]],
            "n": self.n,
            "baseline_n": self.baseline_n,
            "significant": self.significant,
        }


def two_proportions(current: float, n: int, baseline: float, baseline_n: int) -> Test | None:
    """A z-test of two rates (``current`` of ``n``, ``baseline`` of ``baseline_n``)."""
    if n <= 0 or baseline_n <= 0:
        return None
    x1, x2 = current * n, baseline * baseline_n
    pooled = (x1 + x2) / (n + baseline_n)
    se0 = math.sqrt(pooled * (1 - pooled) * (1 / n + 1 / baseline_n))
    diff = current - baseline
    p = 1.0 if se0 == 0 else float(2 * norm.sf(abs(diff) / se0))
    se = math.sqrt(current * (1 - current) / n + baseline * (1 - baseline) / baseline_n)
    return Test("two_proportions", p, (diff - _Z * se, diff + _Z * se), n, baseline_n)


def bootstrap_difference(
    current: float, se: float, baseline: float, baseline_se: float, n: int | None, baseline_n: int | None
) -> Test:
    """The normal interval of ``current − baseline`` from each side's bootstrap standard error."""
    diff = current - baseline
    total = math.sqrt(se * se + baseline_se * baseline_se)
    p = (1.0 if diff == 0 else 0.0) if total == 0 else float(2 * norm.sf(abs(diff) / total))
    return Test("bootstrap", p, (diff - _Z * total, diff + _Z * total), n, baseline_n)


def bootstrap_stderr(
    compute: Callable[[np.ndarray], Mapping[str, float | None]],
    rows: np.ndarray,
    names: Sequence[str],
    *,
    rounds: int,
    rng: np.random.Generator,
    max_rows: int = 5000,
) -> dict[str, float]:
    """The bootstrap standard error of each of ``names`` over ``rows`` (indices into the
    evaluation's arrays): ``compute`` on ``rounds`` resamples. A slice larger than
    ``max_rows`` is resampled at that size and the error scaled back (it shrinks as
    1/√n), so that a million-row evaluation costs what a five-thousand-row one does."""
    if rounds <= 1 or rows.size < 2 or not names:
        return {}
    size = min(rows.size, max_rows)
    values: dict[str, list[float]] = {name: [] for name in names}
    for _ in range(rounds):
        sample = rows[rng.integers(0, rows.size, size)]
        for name, v in compute(sample).items():
            if name in values and v is not None and math.isfinite(v):
                values[name].append(float(v))
    scale = math.sqrt(size / rows.size)
    return {name: float(np.std(vs, ddof=1)) * scale for name, vs in values.items() if len(vs) >= max(2, rounds // 2)}


def holm(tests: Sequence[Test]) -> None:
    """Set each test's Holm–Bonferroni adjusted p-value (the tests of one comparison)."""
    order = sorted(range(len(tests)), key=lambda i: tests[i].p_value)
    running = 0.0
    m = len(tests)
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * tests[i].p_value))
        tests[i].p_adjusted = running
