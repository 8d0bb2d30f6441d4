"""Times and durations as users write them and as flightlog prints them.

Internally every time is a float of seconds since the epoch (UTC); at the edges (CLI JSON,
HTTP API) times are ISO-8601 UTC with milliseconds, e.g. ``2026-11-30T12:00:00.123Z``.
"""

from __future__ import annotations

import math
import re
import time
from datetime import UTC, datetime

from flightlog.errors import InvalidInput

__all__ = ["iso", "is_epoch", "parse_time", "parse_duration", "format_duration", "parse_size", "format_size"]

_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w)?", re.IGNORECASE)
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0, None: 1.0}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgtp]?)(i?b?)\s*$", re.IGNORECASE)


# the times a datetime can show: years 1 to 9999
_EARLIEST, _LATEST = -62135596800.0, 253402300799.999


def is_epoch(ts: float) -> bool:
    """A finite time between the years 1 and 9999: one that can be stored, compared and shown."""
    return math.isfinite(ts) and _EARLIEST <= ts <= _LATEST


def iso(ts: float | None) -> str | None:
    """Epoch seconds to ``YYYY-MM-DDTHH:MM:SS.mmmZ``.

    None stays None, and so does a time no calendar can show (NaN, ±inf, beyond year 9999):
    such a value can still sit in a series a client wrote, and one bad point must not make a
    whole answer fail.
    """
    if ts is None or not is_epoch(ts):
        return None
    # isoformat, not strftime: faster, and it writes the year 1 as 0001 where glibc writes 1
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds")[:-6] + "Z"


def parse_duration(text: str, *, what: str = "duration") -> float:
    """``90``, ``1.5s``, ``10m``, ``2h``, ``1h30m``, ``7d`` → seconds."""
    s = str(text).strip()
    pos, total, matched = 0, 0.0, False
    while pos < len(s):
        m = _DURATION.match(s, pos)
        if not m or m.end() == pos:
            break
        total += float(m.group(1)) * _UNITS[(m.group(2) or "").lower() or None]
        pos, matched = m.end(), True
        while pos < len(s) and s[pos] == " ":
            pos += 1
    if not matched or pos != len(s):
        raise InvalidInput(f"invalid {what} {text!r}: use a number with a unit, e.g. 30s, 10m, 2h, 1h30m or 7d")
    return total


def parse_time(text: str, *, now: float | None = None, what: str = "time") -> float:
    """An ISO-8601 time (``2026-11-30T12:00:00Z``, a date) or a duration ago (``10m``) → epoch."""
    s = str(text).strip()
    try:
        ago = parse_duration(s, what=what)
    except InvalidInput:
        pass
    else:
        return _in_range((now if now is not None else time.time()) - ago, s, what)
    try:
        dt = datetime.fromisoformat(s.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise InvalidInput(
            f"invalid {what} {text!r}: use ISO-8601 (2026-11-30T12:00:00Z) or a duration ago (10m, 2h)"
        ) from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return _in_range(dt.timestamp(), s, what)


def _in_range(ts: float, text: str, what: str) -> float:
    if not is_epoch(ts):
        raise InvalidInput(f"invalid {what} {text!r}: it is outside the years 1 to 9999")
    return ts


def format_duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 1:
        return f"{seconds * 1000:.0f}ms"
    if seconds < 60:
        return f"{seconds:.1f}s"
    m, s = divmod(int(seconds), 60)
    if m < 60:
        return f"{m}m{s:02d}s"
    h, m = divmod(m, 60)
    if h < 48:
        return f"{h}h{m:02d}m"
    d, h = divmod(h, 24)
    return f"{d}d{h:02d}h"


def parse_size(text: str, *, what: str = "size") -> int:
    """``512M``, ``8G``, ``8GiB``, ``1.5g``, ``1000`` → bytes (K/M/G/T are powers of 1024)."""
    m = _SIZE.match(str(text))
    if not m:
        raise InvalidInput(f"invalid {what} {text!r}: use a number with a unit, e.g. 512M, 8G")
    power = " kmgtp".index((m.group(2) or " ").lower())
    return int(float(m.group(1)) * (1024**power))


def format_size(n: float | None) -> str:
    if n is None:
        return "-"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f}{unit}" if unit == "B" else f"{n:.1f}{unit}"
        n /= 1024
    return f"{n:.1f}TiB"
