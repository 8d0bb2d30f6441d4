"""Latency histograms: percentiles within half a bucket, merging equals the histogram of the whole."""

from __future__ import annotations

import random

import pytest

from flightlog.serving.histogram import LatencyHistogram
from flightlog.serving.outputs import OutputDistribution, merge_output_dicts


def test_percentiles_are_within_half_a_bucket_of_the_exact_value() -> None:
    rng = random.Random(7)
    values = [rng.lognormvariate(1.0, 1.2) for _ in range(20_000)]
    h = LatencyHistogram()
    h.update(values)
    exact = sorted(values)
    for q in (0.5, 0.95, 0.99):
        true = exact[int(q * (len(exact) - 1))]
        assert h.quantile(q) == pytest.approx(true, rel=0.045)


def test_merged_replicas_equal_one_histogram_of_everything() -> None:
    rng = random.Random(3)
    parts = [[rng.expovariate(0.1) for _ in range(1000)] for _ in range(3)]
    whole = LatencyHistogram()
    whole.update(v for part in parts for v in part)
    merged = LatencyHistogram()
    for part in parts:
        h = LatencyHistogram()
        h.update(part)
        merged.merge(LatencyHistogram.from_dict(h.to_dict()))  # as a reader gets them back
    assert merged.counts == whole.counts and merged.count == 3000
    assert merged.percentiles() == whole.percentiles()


def test_a_histogram_with_other_buckets_is_refused() -> None:
    with pytest.raises(ValueError, match="per_octave"):
        LatencyHistogram.from_dict({"base_ms": 0.001, "per_octave": 4, "counts": {}})


def test_output_distributions_merge_numbers_and_categories() -> None:
    a, b = OutputDistribution(), OutputDistribution()
    a.update([{"score": 0.1, "label": "ok"}, {"score": 0.9, "label": "fraud"}])
    b.update([{"score": 0.5, "label": "ok"}, [1, 2]])
    merged = merge_output_dicts(a.to_dict(), b.to_dict())
    assert merged["fields"]["label"]["values"] == {"ok": 2, "fraud": 1}
    assert merged["fields"]["score"]["count"] == 3 and merged["fields"]["score"]["mean"] == pytest.approx(0.5)
    assert merged["fields"]["score"]["p50"] == pytest.approx(0.5, rel=0.02)
    assert (
        merged["skipped"] == 1 and "output" not in merged["fields"]
    )  # a list of two is neither a number nor a category
