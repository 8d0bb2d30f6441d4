"""Which requests become prediction records: a rate that adapts to traffic.

Why not a fixed share: at 1 % an endpoint needs ~170 requests/s before a ten-minute window
holds the 1,000 rows a drift test wants, so a quiet endpoint is never judged, while a busy one
keeps far more than any test needs. So each window (``window_s``, the drift window) the replica
aims at ``min_records`` records per version, spread over the window: every second the
background thread sets the share to what the remaining records need at the traffic it
measures, never below the configured ``sample`` and never past ``record_bytes`` of records in
the window (then the configured share alone). A request path reads one float (``rate``).

``min_records=0`` turns the adaptation off (the configured share alone); ``sample=0`` keeps no
record at all, whatever the floor.
"""

from __future__ import annotations

import math

__all__ = ["DEFAULT_MIN_RECORDS", "DEFAULT_RECORD_BYTES", "DEFAULT_WINDOW_S", "AdaptiveSampler"]

DEFAULT_MIN_RECORDS = 1000  # per version and window: what a drift test of one window wants
DEFAULT_RECORD_BYTES = 4 * 1024 * 1024  # records kept per version and window, at most (then the base share)
DEFAULT_WINDOW_S = 600.0  # ten minutes: the window live drift is judged over
_ASSUMED_RECORD_BYTES = 512  # the size of a record before one was measured
_SMOOTHING = 0.3  # weight of the last second in the request rate


class AdaptiveSampler:
    """``rate``: the share of requests to keep now (read on the request path)."""

    __slots__ = (
        "base",
        "rate",
        "min_records",
        "record_bytes",
        "window_s",
        "_window",
        "kept_rows",
        "kept_bytes",
        "_per_second",
        "_last",
    )

    def __init__(
        self,
        base: float,
        *,
        min_records: int = DEFAULT_MIN_RECORDS,
        record_bytes: int = DEFAULT_RECORD_BYTES,
        window_s: float = DEFAULT_WINDOW_S,
    ) -> None:
        self.base = base
        self.rate = base
        self.min_records = min_records
        self.record_bytes = record_bytes
        self.window_s = window_s
        self._window = -1
        self.kept_rows = 0  # records kept in the current window
        self.kept_bytes = 0
        self._per_second: float | None = None  # requests per second, smoothed
        self._last: float | None = None

    def _turn(self, now: float) -> None:
        window = math.floor(now / self.window_s)
        if window != self._window:
            self._window, self.kept_rows, self.kept_bytes = window, 0, 0

    def kept(self, wall: float, size: int) -> None:
        """A prediction record of ``size`` bytes, of a request ending at ``wall``, was written."""
        if math.floor(wall / self.window_s) < self._window:
            return  # a late record of the window before: it no longer counts toward this one
        self._turn(wall)
        self.kept_rows += 1
        self.kept_bytes += size

    def observe(self, now: float, requests: int) -> float:
        """``requests`` were served since the last call; sets and returns the new ``rate``."""
        self._turn(now)
        if self._last is not None and now > self._last:
            instant = requests / (now - self._last)
            self._per_second = (
                instant if self._per_second is None else (1 - _SMOOTHING) * self._per_second + _SMOOTHING * instant
            )
        self._last = now
        self.rate = self._next(now)
        return self.rate

    def _next(self, now: float) -> float:
        if self.base <= 0 or self.min_records <= 0 or self._per_second is None:
            return self.base
        need = self.min_records - self.kept_rows
        if need <= 0 or self.kept_bytes >= self.record_bytes:
            return self.base
        remaining_s = max((self._window + 1) * self.window_s - now, 1.0)
        expected = max(self._per_second * remaining_s, 1.0)  # requests still to come in this window
        size = self.kept_bytes / self.kept_rows if self.kept_rows else _ASSUMED_RECORD_BYTES
        by_rows = need / expected
        by_bytes = (self.record_bytes - self.kept_bytes) / (size * expected)
        return max(self.base, min(1.0, by_rows, by_bytes))

    def to_dict(self) -> dict[str, float | int | None]:
        return {
            "rate": self.rate,
            "base": self.base,
            "min_records": self.min_records,
            "record_bytes": self.record_bytes,
            "window_s": self.window_s,
            "kept_rows": self.kept_rows,
            "kept_bytes": self.kept_bytes,
            "requests_per_s": self._per_second,
        }
