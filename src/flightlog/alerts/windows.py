"""Per-series state kept in numpy arrays, one row ("slot") per run and series labels, so an
evaluation updates a thousand runs with a few array operations.

:class:`Slots` maps segment keys to rows and grows the arrays registered with it.
:class:`RingWindows` keeps the points of a window per slot (a ring buffer; a time window's ring
grows when more points fall inside it) and aggregates them (mean, min, max) at each slot's
newest point. Points leave a ring in the order they arrived — time order for the points of
one writer. Non-finite values are left out of aggregates (``non_finite`` is the rule for them).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from flightlog.alerts.delta import Column, SegmentKey

__all__ = ["Slots", "RingWindows", "AGGREGATES", "last_finite"]

AGGREGATES = ("last", "mean", "min", "max")


class Slots:
    """Rows of state arrays, one per segment key; freed when the run is forgotten."""

    def __init__(self) -> None:
        self.index: dict[SegmentKey, int] = {}
        self.by_run: dict[str, list[int]] = {}
        self.free: list[int] = []
        self.size = 0
        self.capacity = 0
        self._arrays: dict[str, tuple[np.ndarray, float]] = {}
        self.fresh: list[int] = []  # slots handed out by the last lookup

    def array(self, name: str, fill: float = np.nan, dtype: type = np.float64) -> np.ndarray:
        hit = self._arrays.get(name)
        if hit is None:
            arr: np.ndarray = np.full(self.capacity, fill, dtype=dtype)
            self._arrays[name] = (arr, fill)
            return arr
        return hit[0]

    def lookup(self, keys: Sequence[SegmentKey]) -> np.ndarray:
        index = self.index
        out = np.empty(len(keys), dtype=np.int64)
        self.fresh = []
        for i, key in enumerate(keys):
            slot = index.get(key)
            if slot is None:
                slot = self._allocate(key)
            out[i] = slot
        return out

    def _allocate(self, key: SegmentKey) -> int:
        if self.free:
            slot = self.free.pop()
        else:
            if self.size == self.capacity:
                self._grow(max(64, 2 * self.capacity))
            slot = self.size
            self.size += 1
        for arr, fill in self._arrays.values():
            arr[slot] = fill
        self.index[key] = slot
        self.by_run.setdefault(key[0], []).append(slot)
        self.fresh.append(slot)
        return slot

    def _grow(self, capacity: int) -> None:
        for name, (arr, fill) in list(self._arrays.items()):
            bigger = np.full((capacity, *arr.shape[1:]), fill, dtype=arr.dtype)
            bigger[: len(arr)] = arr
            self._arrays[name] = (bigger, fill)
        self.capacity = capacity

    def resize_rows(self, name: str, width: int, fill: float) -> np.ndarray:
        """A 2-D array (capacity × width); a wider one keeps each row's values."""
        hit = self._arrays.get(name)
        if hit is not None and hit[0].ndim == 2 and hit[0].shape[1] >= width:
            return hit[0]
        arr = np.full((self.capacity, width), fill)
        if hit is not None:
            arr[:, : hit[0].shape[1]] = hit[0]
        self._arrays[name] = (arr, fill)
        return arr

    def set(self, name: str, arr: np.ndarray, fill: float) -> None:
        self._arrays[name] = (arr, fill)

    def release(self, run_id: str) -> None:
        for slot in self.by_run.pop(run_id, []):
            self.free.append(slot)
        self.index = {k: v for k, v in self.index.items() if k[0] != run_id}


def last_finite(column: Column) -> tuple[np.ndarray, np.ndarray]:
    """Per segment: the newest finite value (NaN when none) and its time."""
    values, starts = column.values, column.starts
    finite = np.isfinite(values)
    if finite.all():
        last = starts[1:] - 1
        return values[last], column.times[last]
    pos = np.where(finite, np.arange(len(values)), -1)
    last = np.maximum.reduceat(pos, starts[:-1])
    ok = last >= starts[:-1]
    safe = np.where(ok, last, starts[1:] - 1)
    return np.where(ok, values[safe], np.nan), column.times[starts[1:] - 1]


class RingWindows:
    """The points of each slot's window, in a ring per slot; aggregates at the newest point."""

    def __init__(
        self, slots: Slots, name: str, kind: str, *, seconds: float | None = None, points: int | None = None
    ) -> None:
        self.slots = slots
        self.name = name
        self.kind = kind
        self.seconds = seconds
        self.points = points
        self.width = points if points is not None else 16

    def _arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        s = self.slots
        t = s.resize_rows(f"{self.name}:t", self.width, -np.inf)
        v = s.resize_rows(f"{self.name}:v", self.width, np.nan)
        return t, v, s.array(f"{self.name}:pos", 0, np.int64), s.array(f"{self.name}:n", 0, np.int64)

    def update(self, slots: np.ndarray, column: Column) -> np.ndarray:
        """Add the column's points; the aggregate per segment at its newest point (NaN: none)."""
        times, values, starts = column.times, column.values, column.starts
        counts = np.diff(starts)
        newest = times[starts[1:] - 1]
        finite = np.isfinite(values)
        if not finite.all():
            counts = np.add.reduceat(finite.astype(np.int64), starts[:-1])
            times, values = times[finite], values[finite]
            starts = np.concatenate(([0], np.cumsum(counts)))
        if self.seconds is not None:
            self._fit(slots, counts, newest)
        t, v, pos, n = self._arrays()
        width = t.shape[1]
        kept = np.minimum(counts, width)
        seg = np.repeat(np.arange(len(counts)), counts)
        rank = np.arange(len(values)) - np.repeat(starts[:-1], counts)
        skip = np.repeat(counts - kept, counts)
        keep = rank >= skip
        rows = slots[seg[keep]]
        cols = (pos[rows] + rank[keep] - skip[keep]) % width
        t[rows, cols] = times[keep]
        v[rows, cols] = values[keep]
        pos[slots] = (pos[slots] + kept) % width
        n[slots] = np.minimum(n[slots] + kept, width)
        return self.aggregate(slots, newest)

    def _fit(self, slots: np.ndarray, counts: np.ndarray, newest: np.ndarray) -> None:
        """Grow the rings so that every point inside the window fits (before writing)."""
        assert self.seconds is not None
        t = self._arrays()[0]
        inside = (t[slots] >= (newest - self.seconds)[:, None]).sum(axis=1) + counts
        need = int(inside.max()) if len(inside) else 0
        if need <= self.width:
            return
        width = 1 << (need - 1).bit_length()
        old_t, old_v, pos, filled = self._arrays()
        oldest = (pos - filled) % self.width
        order = (oldest[:, None] + np.arange(self.width)[None, :]) % self.width  # oldest first
        rows = np.arange(len(old_t))[:, None]
        new_t = np.full((len(old_t), width), -np.inf)
        new_v = np.full((len(old_t), width), np.nan)
        new_t[:, : self.width] = old_t[rows, order]
        new_v[:, : self.width] = old_v[rows, order]
        pos[:] = filled % width  # each row's points now sit at 0..filled-1, oldest first
        self.slots.set(f"{self.name}:t", new_t, -np.inf)
        self.slots.set(f"{self.name}:v", new_v, np.nan)
        self.width = width

    def aggregate(self, slots: np.ndarray, newest: np.ndarray) -> np.ndarray:
        t, v, _, _ = self._arrays()
        T, V = t[slots], v[slots]
        valid = ~np.isnan(V)
        if self.seconds is not None:
            valid &= (newest - self.seconds)[:, None] <= T
        count = valid.sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            if self.kind == "mean":
                out = np.where(valid, V, 0.0).sum(axis=1) / count
            elif self.kind == "min":
                out = np.where(valid, V, np.inf).min(axis=1)
            else:
                out = np.where(valid, V, -np.inf).max(axis=1)
        return np.where(count > 0, out, np.nan)
