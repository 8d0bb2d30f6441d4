"""The steps of `diagnose --deployment`: a step in p99 or in the error rate is found where it is,
one noisy minute is not a step, and a drift onset is found in a version's sampled records
against its training run's profile (real SDK runs in a real store)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import flightlog
from flightlog.data import profile
from flightlog.serving.histogram import LatencyHistogram
from flightlog.serving.livechanges import drift_change
from flightlog.serving.steps import error_step, latency_step, merge_minutes
from flightlog.serving.versiondiff import _paired


def _rows(p99s: list[float], errors: list[int] | None = None, requests: int = 200) -> list[dict[str, Any]]:
    out = []
    for i, p99 in enumerate(p99s):
        h = LatencyHistogram()
        h.update([p99 * 0.5] * (requests - 3) + [p99] * 3)
        out.append(
            {
                "version": "1" if i < len(p99s) // 2 else "2",
                "minute": 1000 + i,
                "requests": requests,
                "errors": (errors or [0] * len(p99s))[i],
                "latency": h.to_dict(),
            }
        )
    return out


def test_a_latency_step_is_found_at_its_minute() -> None:
    step = latency_step(merge_minutes(_rows([10, 11, 10, 12, 10, 31, 30, 33, 29, 30])))
    assert step is not None and step.time == 1005 * 60.0
    assert step.minutes_before == 5 and step.minutes_after == 5
    assert 2.5 < (step.ratio or 0) < 3.5


@pytest.mark.parametrize("series", [[10, 11, 10, 90, 10, 11, 10, 12], [10, 11, 10, 12, 10, 11, 10, 95], [10] * 4])
def test_one_noisy_minute_or_too_few_minutes_is_no_step(series: list[float]) -> None:
    assert latency_step(merge_minutes(_rows(series))) is None


def test_an_error_rate_step_needs_more_than_chance() -> None:
    found = error_step(merge_minutes(_rows([10.0] * 8, errors=[1, 0, 2, 1, 12, 14, 11, 13])))
    assert found is not None and found.time == 1004 * 60.0 and found.after > 0.05 > found.before
    assert error_step(merge_minutes(_rows([10.0] * 8, errors=[1, 0, 2, 1, 2, 0, 1, 2]))) is None


def test_a_drift_onset_is_found_against_the_training_profile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLIGHTLOG_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("FLIGHTLOG_CONSOLE", "off")
    rng = np.random.default_rng(7)
    frame = pd.DataFrame({"amount": rng.normal(100, 20, 5000), "country": rng.choice(["BR", "US"], 5000)})
    run = flightlog.init(project="train", name="fraud")
    run.log_profile("train", profile(frame))
    run.finish()
    start = time.time() - 3600
    rows = [  # twenty minutes as trained, then twenty with amounts shifted by two standard deviations
        {
            "time": start + i * 0.5,
            "version": "2",
            "inputs": {
                "amount": float(rng.normal(100 if i < 2400 else 140, 20)),
                "country": str(rng.choice(["BR", "US"])),
            },
            "output": 0,
        }
        for i in range(4800)
    ]
    notes: list[str] = []
    with flightlog.Client() as client:
        change = drift_change(client, rows, "2", run.id, notes)
        quiet = drift_change(client, rows[:2400], "2", run.id, notes)
        few = drift_change(client, rows[:500], "2", run.id, notes)  # judged with a significance test: no drift
        tiny = drift_change(client, rows[:150], "2", run.id, notes)
        # the inputs of failed requests are not judged: 600 refused requests with wild amounts change nothing
        refused = [
            dict(r, time=r["time"] + 0.1, status=422, inputs={"amount": 1e6, "country": "??"}) for r in rows[:600]
        ]
        calm = drift_change(client, rows[:2400] + refused, "2", run.id, notes)
    assert change is not None and change["kind"] == "drift" and change["features"] == ["amount"]
    assert change["time"] == pytest.approx(start + 1200, abs=1)  # the first shifted window
    (amount,) = change["evidence"]["features"]
    assert amount["training"]["kind"] == "numeric" and 95 < amount["training"]["mean"] < 105
    assert 135 < amount["live"]["mean"] < 145, "the live side of the feature, as people read it"
    assert quiet is None and few is None and tiny is None and calm is None
    assert notes == [
        "drift not judged: 150 sampled records of successful requests of version 2, fewer than 200 per window"
    ]


def test_a_quiet_minute_is_left_out_of_the_latency_series() -> None:
    """Six busy minutes at 10 ms then one minute of three slow requests: no step from three requests."""
    rows = _rows([10, 11, 10, 12, 10, 11])
    h = LatencyHistogram()
    h.update([40.0, 41.0, 39.0])
    rows.append({"version": "2", "minute": 1006, "requests": 3, "errors": 0, "latency": h.to_dict()})
    rows += [dict(r, minute=1007 + i) for i, r in enumerate(_rows([10, 11, 10])[:2])]
    assert latency_step(merge_minutes(rows)) is None


def test_one_snapshot_replaced_by_another_is_one_difference() -> None:
    gone = {
        "kind": "data",
        "summary": "",
        "name": "snapshot-a",
        "status": "removed",
        "before": {"rows": 4000},
        "after": {},
    }
    new = {
        "kind": "data",
        "summary": "",
        "name": "snapshot-b",
        "status": "added",
        "before": {},
        "after": {"rows": 3433},
    }
    (row,) = _paired([gone, new])
    assert row["summary"] == "training data snapshot-a replaced by snapshot-b (rows 4,000 → 3,433)"
    third = dict(new, name="extra")
    assert len(_paired([gone, new, third])) == 3, "two new inputs: no pairing"


def test_a_training_data_change_is_told_from_the_runs_profiles_not_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two runs read a snapshot of the same size whose amounts moved; each logged a profile of a
    DataFrame (no file name to match the input by): the difference says how the data moved."""
    from flightlog.serving.versiondiff import version_differences

    monkeypatch.setenv("FLIGHTLOG_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("FLIGHTLOG_CONSOLE", "off")
    rng = np.random.default_rng(3)
    ids = []
    for mean in (100.0, 130.0):
        frame = pd.DataFrame({"amount": rng.normal(mean, 20, 4000).round(2), "country": rng.choice(["BR", "US"], 4000)})
        path = tmp_path / f"snapshot-{int(mean)}.csv"
        frame.to_csv(path, index=False)
        run = flightlog.init(project="train", name="fraud")
        run.log_input(path, name="data/train.csv")
        run.log_profile("train", profile(frame))
        run.finish()
        ids.append(run.id)
    with flightlog.Client() as client:
        rows, _ = version_differences(client, ids[1], ids[0])
    data = next(r for r in rows if r["kind"] == "data")
    assert data["summary"].startswith("training data train.csv changed (amount mean 100 → 130"), data["summary"]
    assert "bytes" not in data["summary"] and "country" not in data["summary"]
