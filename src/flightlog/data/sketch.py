"""Mergeable sketches: a relative-accuracy quantile sketch and a HyperLogLog distinct counter.

Why these two: a profile must be small, built in one streaming pass, and mergeable (profile
shards in parallel, then merge). Exact quantiles need every value; a *DDSketch* keeps one
counter per logarithmic bucket instead, so

* every quantile estimate is within ``relative_accuracy`` (default 1 %) of the exact value of
  that rank (``|estimate - exact| <= 0.01 * |exact|``), whatever the distribution;
* merging two sketches adds their counters, so the merge of shard sketches is *identical* to the
  sketch of the whole (merging is exact, not just close);
* a batch update is a handful of vectorised numpy passes (``log2``, ``ceil``, ``bincount``),
  which is what lets a 10-million-row column be sketched in a fraction of a second.

The bucket counts also give the histogram and the CDF that the drift tests use.

HyperLogLog (precision 12: 4,096 one-byte registers, about 1.6 % standard error) estimates the
number of distinct values of a categorical column once there are too many to count exactly;
merging takes the register-wise maximum, which is again exact.
"""

from __future__ import annotations

import base64
import math
from collections.abc import Iterable
from typing import Any

import numpy as np

__all__ = ["QuantileSketch", "HyperLogLog", "hash_values"]

# Smallest magnitude given its own bucket; anything below counts as zero. The smallest normal
# double keeps every practically useful value distinguishable from zero.
_MIN_INDEXABLE = float(np.finfo(np.float64).tiny)


class QuantileSketch:
    """A DDSketch: logarithmic buckets with exact counts, for values of either sign.

    ``max_bins`` bounds the size of each sign's store; when a store spans more buckets, the
    buckets of the smallest magnitude are collapsed into one (the tails, where quantiles matter
    most, keep their accuracy). Collapsing depends only on the final bucket range, so merging
    stays exact.
    """

    __slots__ = (
        "relative_accuracy",
        "max_bins",
        "gamma",
        "_mult",
        "_min_key",
        "_neg_offset",
        "count",
        "zero_count",
        "min",
        "max",
        "_pos",
        "_neg",
    )

    def __init__(self, relative_accuracy: float = 0.01, max_bins: int = 4096) -> None:
        if not 0 < relative_accuracy < 1:
            raise ValueError("relative_accuracy must be between 0 and 1")
        self.relative_accuracy = float(relative_accuracy)
        self.max_bins = int(max_bins)
        self.gamma = (1 + relative_accuracy) / (1 - relative_accuracy)
        self._mult = 1.0 / math.log2(self.gamma)
        self._min_key = math.ceil(math.log2(_MIN_INDEXABLE) * self._mult)
        # Negative values share one bincount with positive ones, their keys shifted past the
        # whole span of possible keys (about ±35,500 at 1 % accuracy).
        self._neg_offset = 2 - 2 * self._min_key
        self.count = 0
        self.zero_count = 0
        self.min = math.inf
        self.max = -math.inf
        # Dense stores: (offset key, counts) for magnitudes of positive and negative values.
        self._pos: tuple[int, np.ndarray] = (0, np.zeros(0, np.int64))
        self._neg: tuple[int, np.ndarray] = (0, np.zeros(0, np.int64))

    # -- building -------------------------------------------------------------------------

    def update(self, values: np.ndarray) -> None:
        """Add finite float64 values (callers drop NaN and ±inf first)."""
        n = int(values.size)
        if n == 0:
            return
        self.count += n
        lo_value = float(values.min())
        self.min = min(self.min, lo_value)
        self.max = max(self.max, float(values.max()))
        zero_key = self._min_key - 1
        mags = np.abs(values)
        with np.errstate(divide="ignore"):
            np.log2(mags, out=mags)
        mags *= self._mult
        np.ceil(mags, out=mags)
        # log2(0) is -inf; clipping sends zeros (and subnormals) to the zero key.
        np.clip(mags, zero_key, -zero_key, out=mags)
        keys = mags.astype(np.int64)
        has_neg = lo_value < 0
        if has_neg:
            # A multiply-add is several times faster than a masked (fancy-indexed) add.
            keys += (values < 0).view(np.int8) * np.int64(self._neg_offset)
        lo = int(keys.min())
        counts = np.bincount(keys - lo)
        if has_neg:
            split = max(0, 1 - zero_key - lo)
            self._add_dense(lo, counts[:split], positive=True)
            if split < counts.size:
                self._add_dense(lo + split - self._neg_offset, counts[split:], positive=False)
        else:
            self._add_dense(lo, counts, positive=True)

    def _add_dense(self, offset: int, counts: np.ndarray, *, positive: bool) -> None:
        if counts.size == 0:
            return
        zero_key = self._min_key - 1
        if offset <= zero_key:
            cut = zero_key - offset + 1
            self.zero_count += int(counts[:cut].sum())
            counts = counts[cut:]
            offset = zero_key + 1
        nz = np.flatnonzero(counts)
        if nz.size == 0:
            return
        counts = counts[nz[0] : nz[-1] + 1].astype(np.int64, copy=False)
        offset += int(nz[0])
        store = self._pos if positive else self._neg
        merged = _merge_dense(store, (offset, counts))
        merged = _collapse(merged, self.max_bins)
        if positive:
            self._pos = merged
        else:
            self._neg = merged

    def merge(self, other: QuantileSketch) -> None:
        """Add another sketch's counts (both must use the same relative accuracy)."""
        if not math.isclose(other.gamma, self.gamma):
            raise ValueError("cannot merge sketches with different relative accuracy")
        self.count += other.count
        self.zero_count += other.zero_count
        self.min = min(self.min, other.min)
        self.max = max(self.max, other.max)
        self._pos = _collapse(_merge_dense(self._pos, other._pos), self.max_bins)
        self._neg = _collapse(_merge_dense(self._neg, other._neg), self.max_bins)

    def copy(self) -> QuantileSketch:
        out = QuantileSketch(self.relative_accuracy, self.max_bins)
        out.merge(self)
        return out

    # -- reading --------------------------------------------------------------------------

    def _value(self, keys: np.ndarray) -> np.ndarray:
        return 2.0 * np.power(self.gamma, keys.astype(np.float64)) / (self.gamma + 1.0)

    def points(self) -> tuple[np.ndarray, np.ndarray]:
        """The sketch as a weighted sample: (ascending representative values, counts).

        Representatives are clamped to [min, max] so the extremes are exact.
        """
        parts_v: list[np.ndarray] = []
        parts_c: list[np.ndarray] = []
        noff, ncounts = self._neg
        if ncounts.size:
            nz = np.flatnonzero(ncounts)
            parts_v.append(-self._value(noff + nz)[::-1])
            parts_c.append(ncounts[nz][::-1])
        if self.zero_count:
            parts_v.append(np.zeros(1))
            parts_c.append(np.array([self.zero_count], np.int64))
        poff, pcounts = self._pos
        if pcounts.size:
            nz = np.flatnonzero(pcounts)
            parts_v.append(self._value(poff + nz))
            parts_c.append(pcounts[nz])
        if not parts_v:
            return np.zeros(0), np.zeros(0, np.int64)
        values = np.clip(np.concatenate(parts_v), self.min, self.max)
        return values, np.concatenate(parts_c)

    def quantiles(self, qs: Iterable[float]) -> list[float | None]:
        """Estimates of the values of rank ``floor(q * (count - 1))`` (the "lower" quantile)."""
        qs = list(qs)
        if self.count == 0:
            return [None for _ in qs]
        values, counts = self.points()
        cum = np.cumsum(counts)
        out: list[float | None] = []
        for q in qs:
            if q <= 0:
                out.append(self.min)
                continue
            if q >= 1:
                out.append(self.max)
                continue
            rank = math.floor(q * (self.count - 1))
            i = int(np.searchsorted(cum, rank, side="right"))
            out.append(float(values[min(i, values.size - 1)]))
        return out

    def cdf(self, x: np.ndarray) -> np.ndarray:
        """Share of values ``<= x`` for each x (step function over the buckets)."""
        if self.count == 0:
            return np.zeros(len(x))
        values, counts = self.points()
        cum = np.concatenate([[0], np.cumsum(counts)])
        return cum[np.searchsorted(values, x, side="right")] / self.count

    def histogram(self, bins: int = 20) -> dict[str, list[float] | list[int]]:
        """An equal-width histogram over [min, max] built from the buckets."""
        if self.count == 0:
            return {"edges": [], "counts": []}
        lo, hi = self.min, self.max
        if hi <= lo:
            return {"edges": [lo, hi], "counts": [self.count]}
        values, counts = self.points()
        edges = np.linspace(lo, hi, bins + 1)
        idx = np.clip(np.searchsorted(edges, values, side="right") - 1, 0, bins - 1)
        hist = np.bincount(idx, weights=counts, minlength=bins).astype(np.int64)
        return {"edges": [float(e) for e in edges], "counts": [int(c) for c in hist]}

    # -- serialisation ---------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        def store(s: tuple[int, np.ndarray]) -> dict[str, Any]:
            offset, counts = s
            nz = np.flatnonzero(counts)
            if nz.size * 2 < counts.size:  # sparse: keys and counts of non-empty buckets
                return {
                    "keys": [int(k) for k in nz + offset],
                    "counts": [int(c) for c in counts[nz]],
                }
            return {"offset": int(offset), "counts": [int(c) for c in counts]}

        return {
            "relative_accuracy": self.relative_accuracy,
            "max_bins": self.max_bins,
            "count": self.count,
            "zero_count": self.zero_count,
            "min": self.min if self.count else None,
            "max": self.max if self.count else None,
            "positive": store(self._pos),
            "negative": store(self._neg),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> QuantileSketch:
        out = cls(float(d["relative_accuracy"]), int(d.get("max_bins", 4096)))
        out.count = int(d["count"])
        out.zero_count = int(d.get("zero_count", 0))
        out.min = float(d["min"]) if d.get("min") is not None else math.inf
        out.max = float(d["max"]) if d.get("max") is not None else -math.inf
        for key, attr in (("positive", "_pos"), ("negative", "_neg")):
            s = d.get(key) or {"offset": 0, "counts": []}
            counts = np.asarray(s["counts"], dtype=np.int64)
            if "keys" in s:
                keys = np.asarray(s["keys"], dtype=np.int64)
                dense = np.zeros(int(keys[-1] - keys[0]) + 1 if keys.size else 0, np.int64)
                if keys.size:
                    dense[keys - keys[0]] = counts
                setattr(out, attr, (int(keys[0]) if keys.size else 0, dense))
            else:
                setattr(out, attr, (int(s["offset"]), counts))
        return out

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, QuantileSketch):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]


def _merge_dense(a: tuple[int, np.ndarray], b: tuple[int, np.ndarray]) -> tuple[int, np.ndarray]:
    (ao, ac), (bo, bc) = a, b
    if ac.size == 0:
        return bo, bc.copy()
    if bc.size == 0:
        return ao, ac
    lo = min(ao, bo)
    hi = max(ao + ac.size, bo + bc.size)
    out = np.zeros(hi - lo, np.int64)
    out[ao - lo : ao - lo + ac.size] += ac
    out[bo - lo : bo - lo + bc.size] += bc
    return lo, out


def _collapse(store: tuple[int, np.ndarray], max_bins: int) -> tuple[int, np.ndarray]:
    offset, counts = store
    if counts.size <= max_bins:
        return store
    cut = counts.size - max_bins
    kept = counts[cut:].copy()
    kept[0] += int(counts[: cut + 1].sum()) - int(counts[cut])
    return offset + cut, kept


# -- HyperLogLog -----------------------------------------------------------------------------

_HLL_P = 12
_HLL_M = 1 << _HLL_P


def hash_values(values: Any) -> np.ndarray:
    """Stable 64-bit hashes of values (strings, numbers, booleans), equal across processes.

    pandas' SipHash with its fixed key is used so that HyperLogLog registers built on different
    machines merge correctly.
    """
    from pandas.util import hash_array

    arr = np.asarray(values, dtype=object)
    return np.asarray(hash_array(arr, categorize=False), dtype=np.uint64)


class HyperLogLog:
    """Distinct-count estimate with 4,096 registers (about 1.6 % standard error)."""

    __slots__ = ("registers",)

    def __init__(self) -> None:
        self.registers = np.zeros(_HLL_M, np.uint8)

    def add_hashes(self, hashes: np.ndarray) -> None:
        if hashes.size == 0:
            return
        h = hashes.astype(np.uint64, copy=False)
        idx = (h >> np.uint64(64 - _HLL_P)).astype(np.int64)
        rest = (h << np.uint64(_HLL_P)) | np.uint64(1 << (_HLL_P - 1))
        # Position of the leftmost 1-bit, from the float exponent (exact except within 2**-52
        # of a power of two, which does not matter for an estimate).
        _, exp = np.frexp(rest.astype(np.float64))
        rho = (65 - exp).astype(np.uint8)
        np.maximum.at(self.registers, idx, rho)

    def add(self, values: Any) -> None:
        self.add_hashes(hash_values(values))

    def merge(self, other: HyperLogLog) -> None:
        np.maximum(self.registers, other.registers, out=self.registers)

    def estimate(self) -> int:
        m = float(_HLL_M)
        alpha = 0.7213 / (1 + 1.079 / m)
        z = float(np.sum(np.power(2.0, -self.registers.astype(np.float64))))
        e = alpha * m * m / z
        zeros = int(np.count_nonzero(self.registers == 0))
        if e <= 2.5 * m and zeros:
            e = m * math.log(m / zeros)
        return round(e)

    def to_dict(self) -> dict[str, Any]:
        return {"p": _HLL_P, "registers": base64.b64encode(self.registers.tobytes()).decode()}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> HyperLogLog:
        if int(d.get("p", _HLL_P)) != _HLL_P:
            raise ValueError(f"HyperLogLog precision {d.get('p')} is not supported")
        out = cls()
        out.registers = np.frombuffer(base64.b64decode(d["registers"]), np.uint8).copy()
        return out
