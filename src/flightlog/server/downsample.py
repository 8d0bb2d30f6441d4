"""Metric histories for charts: N buckets over the step range, each keeping its min and max.

A mean-only downsampling hides the spike that explains a divergence; keeping both extremes
(and the steps they happened at) means a chart of 1,000 buckets still shows every spike of a
million points. NaN and infinities are counted per bucket and left out of min, max and mean.
Everything is vectorized (numpy ``reduceat`` over bucket boundaries): a million points take
a few milliseconds.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["downsample"]


def downsample(steps: np.ndarray, times: np.ndarray, values: np.ndarray, buckets: int) -> dict[str, Any]:
    """Columns, one entry per non-empty bucket; ``steps`` must be sorted (as histories are)."""
    n = len(steps)
    out: dict[str, Any] = {"points": n, "buckets": 0}
    names = (
        "step",
        "step_end",
        "time",
        "count",
        "nonfinite",
        "min",
        "min_step",
        "max",
        "max_step",
        "mean",
        "first",
        "last",
    )
    if n == 0:
        return {**out, **{k: [] for k in names}}
    first_step, last_step = int(steps[0]), int(steps[-1])
    span = last_step - first_step + 1
    if span <= buckets:  # every distinct step is its own bucket
        starts = np.flatnonzero(np.r_[True, steps[1:] != steps[:-1]])
    else:
        edges = np.floor(np.linspace(first_step, last_step + 1, buckets + 1)[:-1])
        starts = np.unique(np.searchsorted(steps, edges, side="left"))
        starts = starts[starts < n]
    ends = np.r_[starts[1:], n]
    counts = ends - starts
    finite = np.isfinite(values)
    if finite.all():  # the common case: no masked copies
        low = high = values
        nfinite = counts
        total = np.add.reduceat(values, starts)
    else:
        low = np.where(finite, values, np.inf)
        high = np.where(finite, values, -np.inf)
        nfinite = np.add.reduceat(finite.astype(np.int64), starts)
        total = np.add.reduceat(np.where(finite, values, 0.0), starts)
    bmin = np.minimum.reduceat(low, starts)
    bmax = np.maximum.reduceat(high, starts)
    min_at = _first_per_bucket(np.flatnonzero(low == np.repeat(bmin, counts)), starts)
    max_at = _first_per_bucket(np.flatnonzero(high == np.repeat(bmax, counts)), starts)
    has = nfinite > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(has, total / np.maximum(nfinite, 1), np.nan)
    return {
        **out,
        "buckets": len(starts),
        "step": steps[starts].tolist(),
        "step_end": steps[ends - 1].tolist(),
        "time": times[starts].tolist(),
        "count": counts.tolist(),
        "nonfinite": (counts - nfinite).tolist(),
        "min": _or_none(bmin, has),
        "min_step": _or_none(steps[min_at], has),
        "max": _or_none(bmax, has),
        "max_step": _or_none(steps[max_at], has),
        "mean": _or_none(mean, has),
        "first": values[starts].tolist(),
        "last": values[ends - 1].tolist(),
    }


def _first_per_bucket(idx: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """The first of the (sorted) indices ``idx`` in each bucket; every bucket has one (its own extreme)."""
    bucket = np.searchsorted(starts, idx, side="right") - 1
    return idx[np.r_[True, bucket[1:] != bucket[:-1]]]


def _or_none(column: np.ndarray, has: np.ndarray) -> list[Any]:
    values = column.tolist()
    return [v if h else None for v, h in zip(values, has.tolist(), strict=True)]
