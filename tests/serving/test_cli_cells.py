"""How the serving tables print numbers: a latency under one millisecond must read like the others
(0.69, not 0.693), other fractions keep three significant figures."""

import pytest

from flightlog.serving.cli import _cell


@pytest.mark.parametrize(
    ("key", "value", "shown"),
    [
        ("p50_ms", 0.6934, "0.69"),
        ("p99_ms", 5.5512, "5.55"),
        ("latency_ms", 1234.6, "1235"),
        ("score", 0.002091, "0.00209"),
        ("score", 4.5678, "4.57"),
        ("requests", 135, "135"),
        ("output", {"fraud": True}, '{"fraud":true}'),
        ("label", None, ""),
    ],
)
def test_a_cell_reads_at_the_precision_its_column_needs(key: str, value: object, shown: str) -> None:
    assert _cell(key, value) == shown
