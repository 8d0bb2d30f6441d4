"""Bound the volume stored: a token bucket over events, with counted drops and summaries.

One event costs one token whatever its size, so a traceback of 80 lines counts as one line.
The bucket holds one second of the rate, so short bursts pass and a flood is cut to the rate.

Events at level error or above get a second, smaller bucket (a tenth of the rate, at least one
per second) when the main one is empty: in a flood, the traceback at the end is the evidence
that matters most, and it should not be dropped with the noise before it.

While dropping, one summary event per ``interval`` says how much was lost; the last one is
written at ``close`` however short its interval, so no drop goes unreported.
"""

from __future__ import annotations

from flightlog.capture.parse import ERROR, WARNING
from flightlog.logevents import LogBatch

__all__ = ["TokenBucket", "RateLimiter", "select"]


class TokenBucket:
    """Refills at ``rate`` per second up to ``capacity``; starts full."""

    __slots__ = ("rate", "capacity", "tokens", "_last")

    def __init__(self, rate: float, capacity: float) -> None:
        self.rate = rate
        self.capacity = capacity
        self.tokens = capacity
        self._last: float | None = None

    def refill(self, now: float) -> None:
        if self._last is not None and now > self._last:
            self.tokens = min(self.capacity, self.tokens + (now - self._last) * self.rate)
        if self._last is None or now > self._last:
            self._last = now

    def take(self, n: int) -> int:
        """Take up to ``n`` tokens; return how many were granted."""
        granted = min(n, int(self.tokens))
        self.tokens -= granted
        return granted


def select(batch: LogBatch, keep: list[int]) -> LogBatch:
    """The events of ``batch`` at the indices ``keep`` (in order)."""
    if len(keep) == len(batch):
        return batch
    out = LogBatch()
    for name, column in batch.to_columns().items():
        getattr(out, name).extend([column[i] for i in keep])
    return out


def _prefix(batch: LogBatch, n: int) -> LogBatch:
    return LogBatch.from_columns({name: column[:n] for name, column in batch.to_columns().items()})


def _format_seconds(seconds: float) -> str:
    return f"{seconds:.0f}s" if seconds >= 10 or seconds == int(seconds) else f"{seconds:.1f}s"


class RateLimiter:
    """Applies ``max_rate`` events/s to batches; ``counts`` receives the drop counters."""

    def __init__(
        self,
        max_rate: float,
        interval: float,
        counts: dict[str, int],
        *,
        attempt: int = 1,
        rank: int | None = None,
    ) -> None:
        if max_rate <= 0:
            raise ValueError("max_rate must be positive")
        self.max_rate = max_rate
        self.interval = interval
        self._bucket = TokenBucket(max_rate, max(1.0, max_rate))
        reserve = max(1.0, max_rate / 10)
        self._reserve = TokenBucket(reserve, max(1.0, reserve))
        self._counts = counts
        self._attempt = attempt
        self._rank = rank
        self._window_start: float | None = None
        self._window_lines = 0
        self._window_bytes = 0

    def __call__(self, batch: LogBatch, now: float, final: bool = False) -> LogBatch:
        self._bucket.refill(now)
        self._reserve.refill(now)
        n = len(batch)
        if n:
            granted = self._bucket.take(n)
            if granted < n:
                batch = self._drop(batch, granted, now)
        if self._window_start is not None and (final or now - self._window_start >= self.interval):
            self._summarize(batch, now)
        return batch

    def _drop(self, batch: LogBatch, granted: int, now: float) -> LogBatch:
        levels = batch.level
        messages = batch.message
        if max(levels[granted:]) < ERROR:  # a flood of ordinary lines: keep a prefix
            dropped = messages[granted:]
            kept = _prefix(batch, granted)
        else:
            keep = list(range(granted))
            dropped = []
            for i in range(granted, len(batch)):
                if levels[i] >= ERROR and self._reserve.take(1):
                    keep.append(i)
                else:
                    dropped.append(messages[i])
            kept = select(batch, keep)
        if dropped:
            joined = "\n".join(dropped)
            lines = joined.count("\n") + 1
            size = len(joined.encode("utf-8", "backslashreplace")) + 1
            self._counts["dropped_lines"] += lines
            self._counts["dropped_bytes"] += size
            if self._window_start is None:
                self._window_start = now
            self._window_lines += lines
            self._window_bytes += size
        return kept

    def _summarize(self, batch: LogBatch, now: float) -> None:
        start = self._window_start if self._window_start is not None else now
        elapsed = max(0.0, now - start)
        lines = self._window_lines
        message = (
            f"flightlog dropped {lines} lines in the last {_format_seconds(elapsed)} "
            f"(rate limit {self.max_rate:g} lines/s)"
        )
        batch.append(
            now,
            "stderr",
            WARNING,
            message,
            component="flightlog",
            fields={
                "dropped_lines": lines,
                "dropped_bytes": self._window_bytes,
                "interval_s": round(elapsed, 3),
                "rate_limit": self.max_rate,
            },
            rank=self._rank,
            attempt=self._attempt,
        )
        self._window_start = None
        self._window_lines = 0
        self._window_bytes = 0
