"""A series chunk's summary (count, non-finite count, finite min and max, the value at the
highest step, the step and time range): the same answer for a loop's long chunk, summarised in
numpy's passes, as for a short one."""

from __future__ import annotations

import math
import random
from array import array
from typing import Any

import pytest

from flightlog.schema.values import series_summary


def _expected(steps: list[int], times: list[float], values: list[float]) -> dict[str, Any]:
    finite = [v for v in values if math.isfinite(v)]
    last_step = max(steps)
    last_at = max(i for i, s in enumerate(steps) if s == last_step)  # the last point of the highest step
    return {
        "count": len(values),
        "nonfinite": len(values) - len(finite),
        "min": min(finite) if finite else None,
        "max": max(finite) if finite else None,
        "first_step": min(steps),
        "last_step": last_step,
        "last_value": values[last_at],
        "first_time": min(times),
        "last_time": max(times),
    }


@pytest.mark.parametrize("n", [1, 7, 511, 512, 2_000, 50_000])
@pytest.mark.parametrize("kind", ["finite", "with_nonfinite", "all_nan", "repeated_steps"])
def test_a_chunks_summary_is_the_same_at_every_length(n: int, kind: str) -> None:
    rng = random.Random(n * 31 + len(kind))
    steps = [rng.randrange(-50, 50) if kind == "repeated_steps" else i for i in range(n)]
    times = [1000.0 + rng.random() * 100 for _ in range(n)]
    pool = [float("nan"), float("inf"), -float("inf")]
    values = [
        float("nan")
        if kind == "all_nan"
        else rng.choice(pool)
        if kind == "with_nonfinite" and rng.random() < 0.1
        else rng.uniform(-1e6, 1e6)
        for _ in range(n)
    ]
    got = series_summary(array("q", steps), array("d", times), array("d", values))
    want = _expected(steps, times, values)
    assert list(got) == list(want)
    for key, value in want.items():
        if isinstance(value, float) and math.isnan(value):
            assert math.isnan(got[key]), key
        else:
            assert got[key] == value and type(got[key]) is type(value), (key, got[key], value)
