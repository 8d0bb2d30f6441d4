"""Downsampling for charts, checked against a plain loop on random histories (hypothesis)."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from flightlog.server.downsample import downsample

values_st = st.one_of(st.floats(-1e6, 1e6), st.sampled_from([math.nan, math.inf, -math.inf]))


@st.composite
def histories(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, int]:
    gaps = draw(st.lists(st.integers(0, 50), min_size=1, max_size=300))
    steps = np.cumsum(np.array(gaps, dtype=np.int64)) + draw(st.integers(-100, 100))
    values = np.array(draw(st.lists(values_st, min_size=len(steps), max_size=len(steps))), dtype=np.float64)
    return steps, values, draw(st.integers(1, 60))


@given(histories())
@settings(max_examples=200, deadline=None)
def test_buckets_match_a_plain_loop(history: tuple[np.ndarray, np.ndarray, int]) -> None:
    steps, values, buckets = history
    doc = downsample(steps, steps.astype(np.float64), values, buckets)
    assert doc["points"] == len(steps) and sum(doc["count"]) == len(steps)
    assert doc["buckets"] <= buckets or doc["buckets"] <= len(set(steps.tolist()))
    i = 0
    for b in range(doc["buckets"]):
        n = doc["count"][b]
        chunk_steps, chunk = steps[i : i + n].tolist(), values[i : i + n].tolist()
        i += n
        assert doc["step"][b] == chunk_steps[0] and doc["step_end"][b] == chunk_steps[-1]
        finite = [(v, s) for v, s in zip(chunk, chunk_steps, strict=True) if math.isfinite(v)]
        assert doc["nonfinite"][b] == n - len(finite)
        if not finite:
            assert doc["min"][b] is None and doc["max"][b] is None and doc["mean"][b] is None
            continue
        low = min(v for v, _ in finite)
        high = max(v for v, _ in finite)
        assert doc["min"][b] == low and doc["max"][b] == high
        assert doc["min_step"][b] == next(s for v, s in finite if v == low)
        assert doc["max_step"][b] == next(s for v, s in finite if v == high)
        assert math.isclose(doc["mean"][b], sum(v for v, _ in finite) / len(finite), rel_tol=1e-9, abs_tol=1e-6)
    if doc["buckets"] > 1:
        assert doc["step"] == sorted(doc["step"]) and len(set(doc["step"])) == doc["buckets"]


def test_empty_and_single_point() -> None:
    empty = downsample(np.array([], dtype=np.int64), np.array([]), np.array([]), 10)
    assert empty["points"] == 0 and empty["buckets"] == 0 and empty["min"] == []
    one = downsample(np.array([5]), np.array([1.0]), np.array([2.5]), 10)
    assert one["buckets"] == 1 and one["min"] == [2.5] and one["max_step"] == [5]
