"""Latency histograms with fixed log-scale buckets: the same buckets in every replica, so the
histograms of several replicas (or minutes) merge by adding counts, exactly.

Why fixed buckets and not a sketch that adapts (``data/sketch.py``'s DDSketch): a histogram is
built per version and minute in every serving process and merged by readers across replicas;
with one fixed layout a merge is a sum of small integer maps and needs no numpy. Eight buckets
per octave from 1 µs keep every percentile within about 4.4 % of the true latency (half a
bucket's width), which is finer than the noise of any latency measurement.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["BASE_MS", "PER_OCTAVE", "LatencyHistogram", "bucket_of"]

BASE_MS = 0.001  # the lower edge of bucket 0: 1 µs
PER_OCTAVE = 8  # buckets per doubling of latency
_SCALE = PER_OCTAVE / math.log(2)
_MAX_BUCKET = 40 * PER_OCTAVE  # 1 µs · 2^40 ≈ 12.7 days: anything slower shares the last bucket


def bucket_of(ms: float) -> int:
    """The bucket of a latency in milliseconds (0 for anything at or under 1 µs)."""
    if not ms > BASE_MS:  # also NaN
        return 0
    return min(int(math.log(ms / BASE_MS) * _SCALE), _MAX_BUCKET)


def _midpoint(bucket: int) -> float:
    """The geometric middle of a bucket, in milliseconds: what a percentile in it reads as."""
    return BASE_MS * math.exp((bucket + 0.5) / _SCALE)


class LatencyHistogram:
    """Counts per bucket (sparse), the total and the sum; ``merge`` adds another's counts."""

    __slots__ = ("counts", "count", "sum_ms", "max_ms")

    def __init__(self) -> None:
        self.counts: dict[int, int] = {}
        self.count = 0
        self.sum_ms = 0.0
        self.max_ms = 0.0

    def add(self, ms: float) -> None:
        b = bucket_of(ms)
        self.counts[b] = self.counts.get(b, 0) + 1
        self.count += 1
        self.sum_ms += ms
        if ms > self.max_ms:
            self.max_ms = ms

    def update(self, values: Iterable[float]) -> None:
        for ms in values:
            self.add(ms)

    def merge(self, other: LatencyHistogram) -> None:
        for b, n in other.counts.items():
            self.counts[b] = self.counts.get(b, 0) + n
        self.count += other.count
        self.sum_ms += other.sum_ms
        self.max_ms = max(self.max_ms, other.max_ms)

    def quantile(self, q: float) -> float | None:
        """The latency (ms) at quantile ``q`` (0..1): the middle of the bucket holding that rank."""
        if self.count == 0:
            return None
        rank = q * (self.count - 1)
        seen = 0
        for b in sorted(self.counts):
            seen += self.counts[b]
            if seen > rank:
                return min(_midpoint(b), self.max_ms) if b else min(BASE_MS, self.max_ms)
        return self.max_ms  # pragma: no cover - the loop always reaches the last rank

    def percentiles(self) -> dict[str, float | None]:
        return {"p50": self.quantile(0.50), "p95": self.quantile(0.95), "p99": self.quantile(0.99)}

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe: bucket keys as strings, with the layout so a reader can check it."""
        return {
            "base_ms": BASE_MS,
            "per_octave": PER_OCTAVE,
            "counts": {str(b): n for b, n in sorted(self.counts.items())},
            "count": self.count,
            "sum_ms": self.sum_ms,
            "max_ms": self.max_ms,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LatencyHistogram:
        if data.get("base_ms") != BASE_MS or data.get("per_octave") != PER_OCTAVE:
            raise ValueError(
                f"a latency histogram with buckets base_ms={data.get('base_ms')}, per_octave={data.get('per_octave')} "
                f"cannot be read: this version of flightlog uses base_ms={BASE_MS}, per_octave={PER_OCTAVE}"
            )
        h = cls()
        h.counts = {int(b): int(n) for b, n in dict(data.get("counts") or {}).items()}
        h.count = int(data.get("count") or sum(h.counts.values()))
        h.sum_ms = float(data.get("sum_ms") or 0.0)
        h.max_ms = float(data.get("max_ms") or 0.0)
        return h
