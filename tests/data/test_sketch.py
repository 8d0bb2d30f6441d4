"""The quantile sketch's error bound and exact merging, and HyperLogLog's estimate."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flightlog.data.sketch import HyperLogLog, QuantileSketch

QS = [0.001, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999]


def _distributions() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    return {
        "normal": rng.normal(0, 1, 200_000),
        "lognormal": rng.lognormal(3, 2, 200_000),
        "shifted": rng.normal(1e6, 5, 100_000),
        "with_zeros": np.concatenate([np.zeros(5000), rng.exponential(1, 50_000), -rng.exponential(3, 20_000)]),
        "integers": rng.integers(-1000, 1000, 100_000).astype(float),
    }


@pytest.mark.parametrize("name", list(_distributions()))
def test_quantiles_are_within_the_relative_error_bound(name: str) -> None:
    x = _distributions()[name]
    s = QuantileSketch(relative_accuracy=0.01)
    s.update(x)
    exact = np.quantile(x, QS, method="lower")
    for q, want, got in zip(QS, exact, s.quantiles(QS), strict=True):
        assert got is not None
        assert abs(got - want) <= 0.01 * abs(want) + 1e-12, (name, q, want, got)


def test_extremes_are_exact_and_count_is_kept() -> None:
    x = np.array([-3.5, 0.0, 2.25, 1e-300, 7.0])
    s = QuantileSketch()
    s.update(x)
    assert s.count == 5
    assert s.quantiles([0.0, 1.0]) == [-3.5, 7.0]
    assert s.zero_count == 1  # 1e-300 has a bucket of its own; only the real zero is zero


def test_merge_of_shards_equals_the_sketch_of_the_whole() -> None:
    x = _distributions()["with_zeros"]
    whole = QuantileSketch()
    whole.update(x)
    merged = QuantileSketch()
    for part in np.array_split(x, 7):
        shard = QuantileSketch()
        shard.update(part)
        merged.merge(shard)
    assert merged == whole
    assert merged.quantiles(QS) == whole.quantiles(QS)


def test_collapsing_keeps_merges_exact() -> None:
    rng = np.random.default_rng(3)
    x = rng.lognormal(0, 3, 50_000)  # spans ~37 octaves: more than 256 buckets
    whole = QuantileSketch(max_bins=256)
    whole.update(x)
    merged = QuantileSketch(max_bins=256)
    for part in np.array_split(x, 5):
        s = QuantileSketch(max_bins=256)
        s.update(part)
        merged.merge(s)
    assert merged == whole
    assert len(whole.to_dict()["positive"]["counts"]) <= 256
    # Collapsing sacrifices the smallest magnitudes; the upper tail keeps its accuracy.
    want = np.quantile(x, 0.999, method="lower")
    got = whole.quantiles([0.999])[0]
    assert got is not None and abs(got - want) <= 0.01 * want


def test_round_trip_through_dict_sparse_and_dense() -> None:
    for x in (np.array([1.0, 1e6, 1e-6]), np.random.default_rng(1).normal(5, 1, 10_000)):
        s = QuantileSketch()
        s.update(x)
        back = QuantileSketch.from_dict(s.to_dict())
        assert back == s
        assert back.quantiles(QS) == s.quantiles(QS)


def test_merging_different_accuracies_is_refused() -> None:
    with pytest.raises(ValueError, match="relative accuracy"):
        QuantileSketch(0.01).merge(QuantileSketch(0.02))


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.floats(min_value=-1e12, max_value=1e12, allow_nan=False), min_size=1, max_size=300),
    st.integers(min_value=1, max_value=5),
)
def test_merge_is_exact_for_any_split(values: list[float], parts: int) -> None:
    x = np.asarray(values)
    whole = QuantileSketch()
    whole.update(x)
    merged = QuantileSketch()
    for part in np.array_split(x, parts):
        s = QuantileSketch()
        s.update(part)
        merged.merge(s)
    assert merged == whole


def test_histogram_counts_every_value() -> None:
    x = np.random.default_rng(0).normal(0, 1, 10_000)
    s = QuantileSketch()
    s.update(x)
    h = s.histogram(20)
    assert sum(h["counts"]) == 10_000
    assert len(h["edges"]) == 21


@pytest.mark.parametrize("n", [10, 1000, 100_000])
def test_hyperloglog_estimates_distinct_values(n: int) -> None:
    h = HyperLogLog()
    h.add([f"user-{i}" for i in range(n)])
    h.add([f"user-{i}" for i in range(n // 2)])  # repeats do not count
    assert abs(h.estimate() - n) <= max(1, 0.05 * n)


def test_hyperloglog_merge_and_round_trip() -> None:
    a, b = HyperLogLog(), HyperLogLog()
    a.add([f"x{i}" for i in range(5000)])
    b.add([f"x{i}" for i in range(2500, 7500)])
    a.merge(b)
    assert abs(a.estimate() - 7500) <= 0.05 * 7500
    assert HyperLogLog.from_dict(a.to_dict()).estimate() == a.estimate()


def test_cdf_is_a_step_function_over_buckets() -> None:
    s = QuantileSketch()
    s.update(np.arange(1.0, 101.0))
    assert s.cdf(np.array([0.0, 1000.0])).tolist() == [0.0, 1.0]
    assert abs(s.cdf(np.array([50.0]))[0] - 0.5) <= 0.02
