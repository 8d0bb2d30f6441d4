"""The memory trend fit: Theil–Sen is robust to spikes; a one-off load is not a trend."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from flightlog.diagnose.memory import fit_trend


def test_steady_growth_with_spikes() -> None:
    t = np.arange(50, dtype=float)
    y = 100e6 + 2e6 * t
    y[[10, 30]] += 80e6  # two garbage-collection-like spikes
    trend = fit_trend(t, y)
    assert trend is not None
    assert abs(trend.slope - 2e6) / 2e6 < 0.01
    assert trend.tau > 0.9


def test_step_then_flat_is_not_steady() -> None:
    t = np.arange(50, dtype=float)
    y = np.where(t < 5, 50e6, 150e6)
    trend = fit_trend(t, y)
    assert trend is not None
    assert trend.slope == 0.0


@settings(max_examples=50, deadline=None)
@given(st.floats(min_value=-1e6, max_value=1e6), st.floats(min_value=0, max_value=1e9))
def test_recovers_any_line(slope: float, intercept: float) -> None:
    t = np.linspace(0, 100, 40)
    trend = fit_trend(t, intercept + slope * t)
    assert trend is not None
    assert abs(trend.slope - slope) <= 1e-6 * max(1.0, abs(slope))


def test_too_few_points() -> None:
    assert fit_trend(np.array([1.0, 2.0]), np.array([1.0, 2.0])) is None
    assert fit_trend(np.array([1.0, 1.0, 1.0]), np.array([1.0, 2.0, 3.0])) is None
