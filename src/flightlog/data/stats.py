"""Per-column statistics that are built batch by batch and merge like the whole.

Each class holds only *mergeable state* (counts, moments, sketches, capped value counts);
everything a reader wants (std, quantiles, histogram, top values) is derived from that state
when asked. That is why a profile of shards merged equals the profile of the whole file:
counts, null counts, min, max and the quantile sketch exactly, mean and std up to floating
point rounding (Chan's parallel update).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from flightlog.data.sketch import HyperLogLog, QuantileSketch
from flightlog.timefmt import iso

__all__ = [
    "NumericStats",
    "CategoricalStats",
    "DatetimeStats",
    "DEFAULT_QUANTILES",
    "quantile_key",
    "EXACT_VALUES_LIMIT",
    "MAX_CATEGORIES",
]

DEFAULT_QUANTILES = (0.01, 0.05, 0.25, 0.5, 0.75, 0.95, 0.99)
#: A numeric column keeps its exact values while it has at most this many, so the drift tests
#: for small samples (Kolmogorov–Smirnov) run on the real values, not on sketch buckets.
EXACT_VALUES_LIMIT = 1000
#: A categorical column counts every distinct value exactly up to this many; beyond, it keeps
#: the most frequent ones (with an error bound) and estimates the cardinality with HyperLogLog.
MAX_CATEGORIES = 1000
#: Category values longer than this are cut (profiles stay small even for free-text columns).
MAX_VALUE_CHARS = 200


def quantile_key(q: float) -> str:
    """0.5 → ``p50``, 0.999 → ``p99.9``."""
    return "p" + f"{q * 100:.4f}".rstrip("0").rstrip(".")


class NumericStats:
    """Count, NaN/inf counts, mean and M2 (Chan), exact min/max, a DDSketch, small-sample values."""

    def __init__(self, relative_accuracy: float = 0.01, exact_limit: int = EXACT_VALUES_LIMIT) -> None:
        self.count = 0  # finite values
        self.nan_count = 0
        self.inf_count = 0
        self.mean = 0.0
        self.m2 = 0.0
        self.min: float | int | None = None
        self.max: float | int | None = None
        self.sketch = QuantileSketch(relative_accuracy)
        self.exact_limit = exact_limit
        self.values: list[float] | None = []

    def update(self, arr: pa.Array) -> None:
        """Add a batch of non-null values."""
        if pa.types.is_decimal(arr.type):
            arr = arr.cast(pa.float64())
        x = arr.to_numpy(zero_copy_only=False)
        is_int = x.dtype.kind in "iu"
        xf = x.astype(np.float64, copy=False)
        if xf.size == 0:
            return
        total = float(xf.sum())
        if not math.isfinite(total):
            finite = np.isfinite(xf)
            nan = int(np.count_nonzero(np.isnan(xf)))
            self.nan_count += nan
            self.inf_count += int(xf.size - np.count_nonzero(finite)) - nan
            xf = xf[finite]
            if xf.size == 0:
                return
            total = float(xf.sum())
        n = int(xf.size)
        mean_b = total / n
        d = xf - mean_b
        m2_b = float(d @ d)
        lo, hi = (int(x.min()), int(x.max())) if is_int else (float(xf.min()), float(xf.max()))
        self._combine(n, mean_b, m2_b, lo, hi)
        self.sketch.update(xf)
        if self.values is not None:
            if self.count <= self.exact_limit:
                self.values.extend(float(v) for v in xf)
            else:
                self.values = None

    def _combine(self, n: int, mean: float, m2: float, lo: float | int | None, hi: float | int | None) -> None:
        if n == 0:
            return
        total = self.count + n
        delta = mean - self.mean
        self.mean += delta * n / total
        self.m2 += m2 + delta * delta * self.count * n / total
        self.count = total
        self.min = lo if self.min is None or (lo is not None and lo < self.min) else self.min
        self.max = hi if self.max is None or (hi is not None and hi > self.max) else self.max

    def merge(self, other: NumericStats) -> None:
        self.nan_count += other.nan_count
        self.inf_count += other.inf_count
        self._combine(other.count, other.mean, other.m2, other.min, other.max)
        self.sketch.merge(other.sketch)
        # Values are kept only while the merged count stays within the limit, as for one scan.
        if self.values is not None and other.values is not None and self.count <= self.exact_limit:
            self.values = self.values + other.values
        else:
            self.values = None

    @property
    def std(self) -> float | None:
        """Sample standard deviation (ddof=1, as pandas), None below two values."""
        return math.sqrt(self.m2 / (self.count - 1)) if self.count > 1 else None

    def quantiles(self, qs: tuple[float, ...] = DEFAULT_QUANTILES) -> dict[str, float | None]:
        """Exact ("lower" method) while the values are kept, else from the sketch."""
        if self.values:
            exact = np.quantile(np.asarray(self.values), qs, method="lower")
            return {quantile_key(q): float(v) for q, v in zip(qs, exact, strict=True)}
        return dict(zip((quantile_key(q) for q in qs), self.sketch.quantiles(qs), strict=True))

    def histogram(self, bins: int = 20) -> dict[str, Any]:
        """Equal-width bins over [min, max] (exact counts while the values are kept)."""
        if self.values and self.min is not None and self.max is not None and self.max > self.min:
            counts, edges = np.histogram(np.asarray(self.values), bins=bins, range=(float(self.min), float(self.max)))
            return {"edges": [float(e) for e in edges], "counts": [int(c) for c in counts]}
        return self.sketch.histogram(bins)

    def to_dict(self, qs: tuple[float, ...] = DEFAULT_QUANTILES, bins: int = 20) -> dict[str, Any]:
        return {
            "count": self.count,
            "mean": self.mean if self.count else None,
            "std": self.std,
            "min": self.min,
            "max": self.max,
            "nan_count": self.nan_count,
            "inf_count": self.inf_count,
            "zero_count": self.sketch.zero_count,
            "quantiles": self.quantiles(qs),
            "histogram": self.histogram(bins),
            "m2": self.m2,
            "sketch": self.sketch.to_dict(),
            "values": sorted(self.values) if self.values is not None else None,
            "exact_limit": self.exact_limit,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> NumericStats:
        sketch = QuantileSketch.from_dict(d["sketch"])
        out = cls(sketch.relative_accuracy, int(d.get("exact_limit", EXACT_VALUES_LIMIT)))
        out.sketch = sketch
        out.count = int(d["count"])
        out.nan_count = int(d.get("nan_count", 0))
        out.inf_count = int(d.get("inf_count", 0))
        out.mean = float(d["mean"]) if d.get("mean") is not None else 0.0
        out.m2 = float(d.get("m2", 0.0))
        out.min, out.max = d.get("min"), d.get("max")
        vals = d.get("values")
        out.values = [float(v) for v in vals] if vals is not None else None
        return out


class CategoricalStats:
    """Value counts: exact up to ``max_categories`` distinct values, then the heaviest ones.

    Beyond the cap, the most frequent values are kept (a summary that merges batch by batch,
    as in Misra–Gries); ``error`` bounds how much any kept count may be too low, ``other_count``
    holds the rest, and HyperLogLog estimates the number of distinct values.
    """

    def __init__(self, max_categories: int = MAX_CATEGORIES) -> None:
        self.max_categories = max_categories
        self.counts: dict[Any, int] = {}
        self.count = 0
        self.other_count = 0
        self.error = 0
        self.exact = True
        self.hll: HyperLogLog | None = None

    def update(self, arr: pa.Array) -> None:
        """Add a batch of non-null values (strings, booleans or dictionary-encoded)."""
        if pa.types.is_dictionary(arr.type):
            arr = arr.dictionary_decode()
        if pa.types.is_large_string(arr.type) or pa.types.is_string_view(arr.type):
            arr = arr.cast(pa.string())
        if len(arr) == 0:
            return
        self.count += len(arr)
        vc = pc.value_counts(arr)
        values = vc.field("values")
        counts = vc.field("counts").to_numpy().astype(np.int64)
        if self.exact and len(self.counts) + len(values) > self.max_categories:
            self._go_inexact()
        if self.hll is not None:
            self.hll.add(values.to_numpy(zero_copy_only=False))
        if len(values) > self.max_categories:
            keep = np.argpartition(-counts, self.max_categories)[: self.max_categories]
            rest = np.ones(len(counts), bool)
            rest[keep] = False
            self.other_count += int(counts[rest].sum())
            self.error += int(counts[rest].max())
            values, counts = values.take(pa.array(keep)), counts[keep]
        for v, c in zip(values.to_pylist(), counts.tolist(), strict=True):
            v = _clip_value(v)
            self.counts[v] = self.counts.get(v, 0) + c
        self._prune()

    def _go_inexact(self) -> None:
        self.exact = False
        self.hll = HyperLogLog()
        if self.counts:
            self.hll.add(list(self.counts))

    def _prune(self) -> None:
        if len(self.counts) <= self.max_categories:
            return
        ranked = sorted(self.counts.items(), key=lambda kv: kv[1], reverse=True)
        dropped = ranked[self.max_categories :]
        self.other_count += sum(c for _, c in dropped)
        self.error += dropped[0][1]
        self.counts = dict(ranked[: self.max_categories])

    def merge(self, other: CategoricalStats) -> None:
        if self.exact and (not other.exact or len(set(self.counts) | set(other.counts)) > self.max_categories):
            self._go_inexact()
        if self.hll is not None:
            if other.hll is not None:
                self.hll.merge(other.hll)
            elif other.counts:
                self.hll.add(list(other.counts))
        self.count += other.count
        self.other_count += other.other_count
        self.error += other.error
        for v, c in other.counts.items():
            self.counts[v] = self.counts.get(v, 0) + c
        self._prune()

    @property
    def cardinality(self) -> int:
        if self.exact or self.hll is None:
            return len(self.counts)
        return max(self.hll.estimate(), len(self.counts))

    def top(self, k: int = 10) -> list[dict[str, Any]]:
        ranked = sorted(self.counts.items(), key=lambda kv: (-kv[1], str(kv[0])))[:k]
        total = self.count or 1
        return [{"value": v, "count": c, "share": c / total} for v, c in ranked]

    def to_dict(self, top_k: int = 10) -> dict[str, Any]:
        return {
            "count": self.count,
            "cardinality": self.cardinality,
            "exact": self.exact,
            "top": self.top(top_k),
            "counts": [[v, c] for v, c in sorted(self.counts.items(), key=lambda kv: (-kv[1], str(kv[0])))],
            "other_count": self.other_count,
            "error": self.error,
            "max_categories": self.max_categories,
            "hll": self.hll.to_dict() if self.hll is not None else None,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CategoricalStats:
        out = cls(int(d.get("max_categories", MAX_CATEGORIES)))
        out.count = int(d["count"])
        out.counts = {v: int(c) for v, c in d.get("counts", [])}
        out.other_count = int(d.get("other_count", 0))
        out.error = int(d.get("error", 0))
        out.exact = bool(d.get("exact", True))
        out.hll = HyperLogLog.from_dict(d["hll"]) if d.get("hll") else None
        return out


def _clip_value(v: Any) -> Any:
    if isinstance(v, str) and len(v) > MAX_VALUE_CHARS:
        return v[:MAX_VALUE_CHARS] + "…"
    return v


class DatetimeStats:
    """Count and the earliest and latest time (epoch seconds, naive times taken as UTC)."""

    def __init__(self) -> None:
        self.count = 0
        self.min: float | None = None
        self.max: float | None = None

    def update(self, arr: pa.Array) -> None:
        if len(arr) == 0:
            return
        if pa.types.is_date(arr.type):
            arr = arr.cast(pa.timestamp("s"))
        mm = pc.min_max(arr)
        lo, hi = mm["min"], mm["max"]
        unit = getattr(arr.type, "unit", "s")
        scale = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}[unit]
        lo_s = lo.cast(pa.int64()).as_py() * scale
        hi_s = hi.cast(pa.int64()).as_py() * scale
        self._combine(len(arr), lo_s, hi_s)

    def _combine(self, n: int, lo: float | None, hi: float | None) -> None:
        self.count += n
        if lo is not None:
            self.min = lo if self.min is None else min(self.min, lo)
        if hi is not None:
            self.max = hi if self.max is None else max(self.max, hi)

    def merge(self, other: DatetimeStats) -> None:
        self._combine(other.count, other.min, other.max)

    def to_dict(self) -> dict[str, Any]:
        return {
            "count": self.count,
            "min": iso(self.min),
            "max": iso(self.max),
            "min_epoch": self.min,
            "max_epoch": self.max,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> DatetimeStats:
        out = cls()
        out.count = int(d["count"])
        out.min, out.max = d.get("min_epoch"), d.get("max_epoch")
        return out
