"""Sampling that adapts to traffic (serving/sampling.py): a quiet endpoint keeps enough records per
window for a drift test, a busy one keeps the configured share once the window has them, and a
byte budget caps what a window keeps."""

from __future__ import annotations

import random

from flightlog.serving.sampling import AdaptiveSampler


def _window(sampler: AdaptiveSampler, per_second: float, seconds: int, start: float, size: int = 300) -> int:
    """Traffic at ``per_second`` for ``seconds``; every kept request writes a record of ``size`` bytes."""
    rng = random.Random(7)
    kept = 0
    for s in range(seconds):
        now = start + s
        for _ in range(int(per_second)):
            if rng.random() < sampler.rate:
                sampler.kept(now, size)
                kept += 1
        sampler.observe(now + 1, int(per_second))
    return kept


def test_a_quiet_endpoint_keeps_enough_records_for_a_drift_test() -> None:
    sampler = AdaptiveSampler(0.01, min_records=1000)
    kept = _window(sampler, 3, 600, start=6000.0)  # 1,800 requests in ten minutes
    assert 900 <= kept <= 1100, kept  # at 1 % it would be ~18
    assert sampler.rate >= 0.01


def test_a_busy_endpoint_keeps_its_share_once_the_window_has_enough() -> None:
    sampler = AdaptiveSampler(0.01, min_records=1000)
    kept = _window(sampler, 500, 600, start=6000.0)  # 300,000 requests
    assert 2500 <= kept <= 4500, kept  # about 1 % of them, the floor met along the way
    assert abs(sampler.rate - 0.01) < 1e-9


def test_the_byte_budget_caps_a_window_and_a_new_window_starts_over() -> None:
    sampler = AdaptiveSampler(0.0001, min_records=1000, record_bytes=60_000)
    kept = _window(sampler, 5, 590, start=6000.0, size=300)  # records of 300 B: the budget holds 200
    assert 150 <= kept <= 230, kept
    assert sampler.kept_rows == kept and 55_000 < sampler.kept_bytes <= 60_300 and sampler.rate <= 0.05
    _window(sampler, 5, 15, start=6590.0)  # into the next window (from 6,600 s): the floor again
    assert sampler.kept_rows < 100 and sampler.rate > 0.03  # as much as the new window's budget allows


def test_off_switches() -> None:
    fixed = AdaptiveSampler(0.05, min_records=0)
    assert _window(fixed, 3, 60, start=0.0) < 30 and fixed.rate == 0.05
    none = AdaptiveSampler(0.0)
    assert _window(none, 3, 60, start=0.0) == 0 and none.rate == 0.0
