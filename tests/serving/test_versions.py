"""Versions compared on what users feel (`serving/versions.py`): each version's p50/p95/p99, its
5xx and 4xx rates apart and its throughput over the minutes it served, merged by traffic; a
difference is a finding only with enough requests, significance and size."""

from __future__ import annotations

import random
from typing import Any

from flightlog.serving.histogram import LatencyHistogram
from flightlog.serving.versions import compare_versions, version_stats


def _minutes(
    version: str,
    first: int,
    per_minute: list[int],
    latency: Any,
    *,
    errors: float = 0.0,
    client_errors: float = 0.0,
    seed: int = 1,
) -> list[dict[str, Any]]:
    """Aggregate rows as `serving.aggregates` reads them, one per minute, from generated requests."""
    rng = random.Random(seed)
    rows = []
    for i, n in enumerate(per_minute):
        h = LatencyHistogram()
        h.update(latency(rng) for _ in range(n))
        rows.append(
            {
                "version": version,
                "minute": first + i,
                "requests": n,
                "errors": sum(rng.random() < errors for _ in range(n)),
                "client_errors": sum(rng.random() < client_errors for _ in range(n)),
                "error_types": {"ValueError": 1} if errors else {},
                "latency": h.to_dict(),
                "replicas": 2,
            }
        )
    return rows


def _v1(rng: random.Random) -> float:
    return rng.gauss(5.5, 0.6)


def _v2(rng: random.Random) -> float:  # 3.6x slower at p50, and 2 % of requests take a 300 ms path
    return rng.gauss(300, 20) if rng.random() < 0.02 else rng.gauss(20, 2)


def test_a_slower_version_is_named_at_p50_and_p99_with_sizes_and_ns() -> None:
    rows = _minutes("1", 1000, [160] * 5, _v1) + _minutes("2", 1005, [170, 160, 150, 175], _v2, seed=2)
    rows += _minutes("2", 1009, [3], _v1, seed=3)  # a quiet minute of three fast requests
    stats = {s.version: s for s in version_stats(rows)}
    v1, v2 = stats["1"], stats["2"]
    assert (v1.requests, v2.requests) == (800, 658)
    assert v2.throughput and 130 < v2.throughput < 132  # 658 requests over the 5 minutes from 1005 to 1009
    changes = {c.metric: c for c in compare_versions(v1, v2)}
    p50, p99 = changes["p50_ms"], changes["p99_ms"]
    assert p50.finding and 3.2 < (p50.ratio or 0) < 4.0 and (p50.n_before, p50.n_after) == (800, 658)
    assert p99.finding and (p99.ratio or 0) > 20
    assert "×" in p50.text() and "→" in p50.text()
    assert not changes["error_rate"].finding and not changes["client_error_rate"].finding
    ranked = compare_versions(v1, v2)
    assert ranked[0].metric == "p99_ms", "the largest significant change comes first"


def test_three_requests_are_never_a_finding() -> None:
    rows = _minutes("1", 1000, [200] * 5, _v2) + _minutes("2", 1005, [3], _v1)
    stats = {s.version: s for s in version_stats(rows)}
    changes = compare_versions(stats["1"], stats["2"])
    assert not any(c.finding for c in changes)
    p99 = next(c for c in changes if c.metric == "p99_ms")
    assert p99.why_not == "too few requests (3 of the 500 a p99 needs on each side)"


def test_two_samples_of_one_distribution_differ_in_nothing() -> None:
    rows = _minutes("1", 1000, [300] * 4, _v2, seed=5) + _minutes("2", 1004, [300] * 4, _v2, seed=6)
    stats = {s.version: s for s in version_stats(rows)}
    changes = compare_versions(stats["1"], stats["2"])
    assert not any(c.finding for c in changes), [c.to_dict() for c in changes]


def test_server_and_client_error_rates_are_judged_apart() -> None:
    rows = _minutes("1", 1000, [200] * 5, _v1, client_errors=0.01) + _minutes(
        "2", 1005, [200] * 5, _v1, errors=0.05, client_errors=0.01, seed=9
    )
    stats = {s.version: s for s in version_stats(rows)}
    assert stats["2"].error_types == {"ValueError": 5}
    changes = {c.metric: c for c in compare_versions(stats["1"], stats["2"])}
    assert changes["error_rate"].finding and changes["error_rate"].text().startswith("5xx error rate 0.0% → 5.")
    assert not changes["client_error_rate"].finding
    assert not changes["p50_ms"].finding, "as fast"
