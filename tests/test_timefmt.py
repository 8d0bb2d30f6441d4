"""Times as users write them and as flightlog shows them: every answer is a time or a clear error."""

from __future__ import annotations

import math

import pytest

from flightlog.errors import InvalidInput
from flightlog.timefmt import is_epoch, iso, parse_time


def test_iso_shows_milliseconds_in_utc() -> None:
    assert iso(1_780_000_000.1234) == "2026-05-28T20:26:40.123Z"
    assert iso(None) is None
    assert (iso(-62135596800.0), iso(253402300799.5)) == ("0001-01-01T00:00:00.000Z", "9999-12-31T23:59:59.500Z")


@pytest.mark.parametrize("ts", [math.nan, math.inf, -math.inf, 1e300, -1e300, 253402300800.0])
def test_a_time_no_calendar_can_show_is_null_not_an_error(ts: float) -> None:
    assert not is_epoch(ts)
    assert iso(ts) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-11-30T12:00:00Z", 1_796_040_000.0),
        ("2026-11-30", 1_795_996_800.0),
        ("10m", 1_000_000_000.0 - 600),
        ("1h30m", 1_000_000_000.0 - 5400),
    ],
)
def test_parse_time_reads_iso_and_durations_ago(text: str, expected: float) -> None:
    assert parse_time(text, now=1_000_000_000.0) == expected


@pytest.mark.parametrize("text", ["last tuesday", "99999999999w", ""])
def test_parse_time_refuses_what_it_cannot_place_in_the_calendar(text: str) -> None:
    with pytest.raises(InvalidInput) as info:
        parse_time(text, what="since")
    assert "since" in info.value.message
