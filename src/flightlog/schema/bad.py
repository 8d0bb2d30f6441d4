"""`Bad` and the value checks that types cannot say (ranges, times, JSON-only data).

The Structs in `flightlog.schema.kinds` say the shape of every record; what a type cannot
say — a time no calendar shows, a counter that is NaN, bytes inside a param — is checked here,
by each kind's ``validate()``, with messages that say what was wrong and where."""

from __future__ import annotations

from typing import Any

from flightlog.timefmt import is_epoch

__all__ = ["Bad", "check_time", "check_plain", "I64_MIN", "I64_MAX"]

I64_MIN = -(2**63)
I64_MAX = 2**63 - 1


class Bad(ValueError):
    """A record that cannot be stored; the message says why."""


def check_time(value: float | None, what: str) -> None:
    """Epoch seconds that every reader can compare and show (finite, years 1 to 9999)."""
    if value is not None and not is_epoch(value):
        raise Bad(f"{what} {value!r} is not a time: use epoch seconds between the years 1 and 9999")


def check_plain(value: Any, what: str, depth: int = 0) -> None:
    """JSON-like data only (no bytes, no huge integers), so the store can keep it as JSON."""
    if value is None or isinstance(value, (str, bool, float)):
        return
    if isinstance(value, int):
        if not I64_MIN <= value <= I64_MAX:
            raise Bad(f"{what} must be a whole number")
        return
    if depth > 32:
        raise Bad(f"{what} is nested too deeply")
    if isinstance(value, list):
        for item in value:
            check_plain(item, what, depth + 1)
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise Bad(f"{what} has a key that is not a string")
            check_plain(item, what, depth + 1)
        return
    raise Bad(f"{what} holds a {type(value).__name__}, which cannot be stored")
