"""Stage timings cheap enough to wrap every batch.

Each stage name keeps running totals (count, total, min, max) and a histogram of durations in
power-of-two buckets. The first ``KEEP_WHOLE`` spans of a name are kept whole, so coarse phases
(startup, data loading, train, checkpoint, evaluation) appear on the timeline exactly; past
that, a name is a fine-grained stage (per batch) and only a bounded reservoir sample of raw
spans is kept besides the aggregate. Recording a span is a few list operations, no I/O.
"""

from __future__ import annotations

import math
import random
import threading
import time
from typing import Any

__all__ = ["StageAggregator", "StageTimer", "HIST_BUCKETS", "bucket_upper_bounds", "KEEP_WHOLE", "SAMPLE_SIZE"]

KEEP_WHOLE = 20
SAMPLE_SIZE = 50
# bucket i holds durations in [2^(i-1+MIN_EXP), 2^(i+MIN_EXP)); bucket 0 everything shorter
MIN_EXP = -20  # ~1 µs
HIST_BUCKETS = 34  # up to 2^13 s ≈ 2.3 h; the last bucket takes everything longer


def bucket_upper_bounds() -> list[float]:
    return [2.0 ** (i + MIN_EXP) for i in range(HIST_BUCKETS)]


class _Stat:
    __slots__ = ("count", "total", "min", "max", "first_start", "last_end", "hist", "sample", "seen_sampled")

    def __init__(self) -> None:
        self.count = 0
        self.total = 0.0
        self.min = math.inf
        self.max = 0.0
        self.first_start: float | None = None
        self.last_end: float | None = None
        self.hist = [0] * HIST_BUCKETS
        self.sample: list[tuple[float, float, dict[str, Any] | None]] = []
        self.seen_sampled = 0


class StageAggregator:
    """Per-writer stage statistics; thread-safe, flushed as cumulative totals."""

    def __init__(self, attempt: int = 1) -> None:
        self.attempt = attempt
        self._stats: dict[str, _Stat] = {}
        self._whole: list[list[Any]] = []  # spans to ship whole: [name, start, end, attempt, sampled, attrs]
        self._dirty: set[str] = set()
        self._lock = threading.Lock()
        self._rng = random.Random(0x5EED)
        #: spans recorded so far (all names): the hang watch reads it as a sign of progress
        self.recorded = 0

    def record(self, name: str, start: float, end: float, attrs: dict[str, Any] | None) -> None:
        duration = end - start
        with self._lock:
            self.recorded += 1
            st = self._stats.get(name)
            if st is None:
                st = self._stats[name] = _Stat()
                st.first_start = start
            st.count += 1
            st.total += duration
            if duration < st.min:
                st.min = duration
            if duration > st.max:
                st.max = duration
            st.last_end = end
            exp = math.frexp(duration)[1] - MIN_EXP if duration > 0 else 0
            st.hist[0 if exp < 0 else exp if exp < HIST_BUCKETS else HIST_BUCKETS - 1] += 1
            self._dirty.add(name)
            if st.count <= KEEP_WHOLE:
                self._whole.append([name, start, end, self.attempt, False, attrs])
                return
            # reservoir sample of the spans past the first KEEP_WHOLE (Algorithm R)
            st.seen_sampled += 1
            if len(st.sample) < SAMPLE_SIZE:
                st.sample.append((start, end, attrs))
            else:
                j = self._rng.randrange(st.seen_sampled)
                if j < SAMPLE_SIZE:
                    st.sample[j] = (start, end, attrs)

    def drain(self, final: bool = False) -> tuple[list[list[Any]], dict[str, dict[str, Any]]]:
        """Whole spans recorded since the last drain and cumulative stats of changed stages.

        The reservoir sample is shipped once, at the final drain, since it changes until then.
        """
        with self._lock:
            spans, self._whole = self._whole, []
            stats = {
                name: {
                    "count": st.count,
                    "total": st.total,
                    "min": st.min,
                    "max": st.max,
                    "first_start": st.first_start,
                    "last_end": st.last_end,
                    "hist": list(st.hist),
                }
                for name in self._dirty
                for st in (self._stats[name],)
            }
            self._dirty = set()
            if final:
                for name, st in self._stats.items():
                    spans.extend([name, s, e, self.attempt, True, a] for s, e, a in st.sample)
                    st.sample = []
        return spans, stats

    def totals(self) -> dict[str, dict[str, float]]:
        """Per stage: how many spans and their total seconds so far (where a rank's time goes)."""
        with self._lock:
            return {name: {"count": st.count, "total": st.total} for name, st in self._stats.items()}


class StageTimer:
    """``with run.stage("data_loading", epoch=3): ...`` — one span, tagged on log events inside it."""

    __slots__ = ("_agg", "_stack", "_name", "_attrs", "_start", "_offset")

    def __init__(
        self, agg: StageAggregator, stack: list[str], name: str, attrs: dict[str, Any] | None, offset: float
    ) -> None:
        self._agg = agg
        self._stack = stack
        self._name = name
        self._attrs = attrs
        self._offset = offset
        self._start = 0.0

    def __enter__(self) -> StageTimer:
        self._stack.append(self._name)
        self._start = time.perf_counter()
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        end = time.perf_counter()
        if self._stack and self._stack[-1] == self._name:
            self._stack.pop()
        attrs = self._attrs
        if exc_type is not None:
            attrs = {**(attrs or {}), "error": getattr(exc_type, "__name__", str(exc_type))}
        self._agg.record(self._name, self._start + self._offset, end + self._offset, attrs)
