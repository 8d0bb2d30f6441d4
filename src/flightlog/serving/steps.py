"""Steps in an endpoint's per-minute traffic: when its p99 latency or its error rate moved, and
by how much, over every replica and version merged.

Why a change point and not a threshold: the question `diagnose --deployment` answers is *when*
production changed, so it looks for the one split of the series that best separates a "before"
from an "after" (the largest standardized difference of the means, on log latency; the largest
two-proportion z for errors), and then keeps it only when it is a step and not one noisy minute:
each side has at least `MIN_SEGMENT` minutes and the medians of the two sides differ (latency by
`LATENCY_RATIO`, errors by `ERROR_RATE_DELTA` and a z of `ERROR_Z`). A spike in one minute moves
a median of three or more minutes very little, so it is never a step; and a quiet minute (fewer
than `MIN_MINUTE_REQUESTS` requests) has no p99 worth the name, so it is left out of the latency
series (its requests still count in the versions' totals, `versions.py`).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from flightlog.serving.histogram import LatencyHistogram

__all__ = [
    "MIN_SEGMENT",
    "MIN_MINUTE_REQUESTS",
    "LATENCY_RATIO",
    "ERROR_RATE_DELTA",
    "ERROR_Z",
    "Minute",
    "Step",
    "merge_minutes",
    "latency_step",
    "error_step",
]

MIN_SEGMENT = 3  # minutes with traffic on each side of a step
LATENCY_RATIO = 1.5  # the medians of per-minute p99 differ by this factor (either way)
ERROR_RATE_DELTA = 0.01  # the error rates differ by one point of requests or more
ERROR_Z = 3.0  # and by a two-proportion z of three or more
MIN_MINUTE_REQUESTS = 20  # a minute with fewer requests has no p99 in the latency series


@dataclass
class Minute:
    """One wall-clock minute of an endpoint, every replica and version merged."""

    minute: int  # epoch seconds // 60
    requests: int = 0
    errors: int = 0
    latency: LatencyHistogram = field(default_factory=LatencyHistogram)
    versions: dict[str, int] = field(default_factory=dict)  # requests per version

    @property
    def start(self) -> float:
        return self.minute * 60.0

    @property
    def p99(self) -> float | None:
        return self.latency.quantile(0.99)

    @property
    def main_version(self) -> str | None:
        return max(self.versions, key=lambda v: self.versions[v]) if self.versions else None


@dataclass
class Step:
    """A step in one series: the first minute after it, the figures on each side, the evidence."""

    kind: str  # latency | error_rate
    time: float  # start of the first minute after the step
    before: float
    after: float
    minutes_before: int
    minutes_after: int
    evidence: dict[str, Any]

    @property
    def ratio(self) -> float | None:
        return self.after / self.before if self.before else None


def merge_minutes(rows: Iterable[Mapping[str, Any]]) -> list[Minute]:
    """The per-(version, minute) rows of ``serving.reading.aggregates`` merged per minute."""
    out: dict[int, Minute] = {}
    for row in rows:
        m = out.setdefault(int(row["minute"]), Minute(int(row["minute"])))
        m.requests += int(row.get("requests") or 0)
        m.errors += int(row.get("errors") or 0)
        if row.get("latency"):
            m.latency.merge(LatencyHistogram.from_dict(row["latency"]))
        version = str(row.get("version"))
        m.versions[version] = m.versions.get(version, 0) + int(row.get("requests") or 0)
    return [out[k] for k in sorted(out)]


def _merged_p99(minutes: list[Minute]) -> float | None:
    h = LatencyHistogram()
    for m in minutes:
        h.merge(m.latency)
    return h.quantile(0.99)


def latency_step(minutes: list[Minute]) -> Step | None:
    """The p99 step of the series, or None (too few minutes, or no split that is a step)."""
    series = [(m, m.p99) for m in minutes if m.requests >= MIN_MINUTE_REQUESTS and m.p99]
    n = len(series)
    if n < 2 * MIN_SEGMENT:
        return None
    logs = [math.log(p) for _, p in series if p]
    best, best_k = 0.0, 0
    for k in range(MIN_SEGMENT, n - MIN_SEGMENT + 1):
        a, b = logs[:k], logs[k:]
        pooled = (
            sum((x - statistics.fmean(a)) ** 2 for x in a) + sum((x - statistics.fmean(b)) ** 2 for x in b)
        ) / max(n - 2, 1)
        score = abs(statistics.fmean(b) - statistics.fmean(a)) / math.sqrt(pooled * (1 / len(a) + 1 / len(b)) + 1e-12)
        if score > best:
            best, best_k = score, k
    if not best_k:
        return None
    before = statistics.median(p for _, p in series[:best_k] if p)
    after = statistics.median(p for _, p in series[best_k:] if p)
    ratio = after / before
    if 1 / LATENCY_RATIO < ratio < LATENCY_RATIO:
        return None
    left, right = [m for m, _ in series[:best_k]], [m for m, _ in series[best_k:]]
    return Step(
        "latency",
        right[0].start,
        before,
        after,
        len(left),
        len(right),
        {
            "p99_ms_per_minute_before": [round(p or 0.0, 3) for _, p in series[:best_k]][-10:],
            "p99_ms_per_minute_after": [round(p or 0.0, 3) for _, p in series[best_k:]][:10],
            "median_p99_ms": {"before": before, "after": after},
            "merged_p99_ms": {"before": _merged_p99(left), "after": _merged_p99(right)},
            "score": round(best, 3),
        },
    )


def error_step(minutes: list[Minute]) -> Step | None:
    """The error-rate step of the series, or None."""
    series = [m for m in minutes if m.requests]
    n = len(series)
    if n < 2 * MIN_SEGMENT:
        return None
    best, best_k = 0.0, 0
    for k in range(MIN_SEGMENT, n - MIN_SEGMENT + 1):
        n1, e1 = sum(m.requests for m in series[:k]), sum(m.errors for m in series[:k])
        n2, e2 = sum(m.requests for m in series[k:]), sum(m.errors for m in series[k:])
        p = (e1 + e2) / (n1 + n2)
        if p <= 0 or p >= 1:
            continue
        z = abs(e2 / n2 - e1 / n1) / math.sqrt(p * (1 - p) * (1 / n1 + 1 / n2))
        if z > best:
            best, best_k = z, k
    if not best_k or best < ERROR_Z:
        return None
    left, right = series[:best_k], series[best_k:]
    before = sum(m.errors for m in left) / sum(m.requests for m in left)
    after = sum(m.errors for m in right) / sum(m.requests for m in right)
    med_before = statistics.median(m.errors / m.requests for m in left)
    med_after = statistics.median(m.errors / m.requests for m in right)
    if abs(after - before) < ERROR_RATE_DELTA or (med_after - med_before) * (after - before) <= 0:
        return None
    return Step(
        "error_rate",
        right[0].start,
        before,
        after,
        len(left),
        len(right),
        {
            "error_rate": {"before": before, "after": after},
            "median_error_rate_per_minute": {"before": med_before, "after": med_after},
            "requests": {"before": sum(m.requests for m in left), "after": sum(m.requests for m in right)},
            "errors": {"before": sum(m.errors for m in left), "after": sum(m.errors for m in right)},
            "z": round(best, 2),
        },
    )
