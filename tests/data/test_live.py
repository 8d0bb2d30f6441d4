"""Live data evidence on real runs: a training run keeps its profile and cohort evaluation, a
serving-like replica (tests/data/servinglike.py) logs sampled predictions and labels, and the
live side reads both back through the store."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import flightlog
from flightlog.data import profile
from flightlog.data.live import (
    DriftMonitor,
    LiveProfile,
    PredictionRow,
    compare_live,
    live_cohorts,
    live_drift,
    prediction_rows,
    training_eval,
    training_profile,
)
from flightlog.errors import InvalidInput, NotFound
from tests.data.servinglike import log_predictions, replica

COUNTRIES, SHARES = ["BR", "US", "DE"], [0.3, 0.5, 0.2]


def _inputs(rng: np.random.Generator, n: int, shift: float = 0.0) -> list[dict[str, Any]]:
    amount = rng.normal(100 + shift, 20, n)
    age = rng.integers(18, 80, n)
    country = rng.choice(COUNTRIES, n, p=SHARES)
    return [
        {"amount": float(a), "age": int(g), "country": str(c)} for a, g, c in zip(amount, age, country, strict=True)
    ]


def _training_run(rng: np.random.Generator, n: int = 5000) -> str:
    rows = _inputs(rng, n)
    run = flightlog.init(project="train", name="fraud")
    frame = pd.DataFrame(rows)
    frame["is_fraud"] = rng.integers(0, 2, n)
    run.log_profile("train", profile(frame))
    country = frame["country"].to_numpy()
    y = frame["is_fraud"].to_numpy()
    acc = np.where(country == "BR", 0.93, 0.9)
    run.log_eval(y, np.where(rng.random(n) < acc, y, 1 - y), cohorts={"country": country})
    run.finish()
    return str(run.id)


@pytest.mark.parametrize("seed", range(5))
def test_a_shifted_feature_drifts_from_its_onset_and_the_others_do_not(home: Path, seed: int) -> None:
    rng = np.random.default_rng(seed)
    train = _training_run(rng)
    run = replica("fraud-api", training_run=train)
    t0, per_window, window = time.time() - 7200, 1200, 300.0
    rows: list[dict[str, Any]] = []
    for w in range(6):  # from window 3 on, amount moves by 0.75 std
        for i, x in enumerate(_inputs(rng, per_window, shift=15.0 if w >= 3 else 0.0)):
            rows.append({"time": t0 + w * window + i * window / per_window, "inputs": x, "output": 0})
    log_predictions(run, rows)
    run.finish()

    with flightlog.Client() as client:
        live = prediction_rows(client.logs(run.id, component="serving"))
        monitor = DriftMonitor(training_profile(client, train))
    assert len(live) == 6 * per_window and live[0].inputs.keys() == {"amount", "age", "country"}
    windows = monitor.feed(live, window)
    assert len(windows) == 6
    for w, results in enumerate(windows):
        by = {r.feature: r for r in results}
        assert set(by) == {"amount", "age", "country"}  # the training target is not a live field: no drift
        assert by["age"].drifted is False and by["country"].drifted is False, (w, by)
        assert by["amount"].drifted is (w >= 3), (w, by["amount"])
        assert by["amount"].test == "wasserstein" and by["country"].test == "jensenshannon"
        assert by["amount"].window_start == pytest.approx(t0 + w * window)
        assert by["amount"].onset == (pytest.approx(t0 + 3 * window) if w >= 3 else None)
    doc = windows[-1][0].to_dict()
    assert doc["window"]["rows"] == per_window and doc["onset"] is not None and doc["threshold"] == 0.1


def test_a_live_profile_merges_like_the_whole_and_stays_bounded() -> None:
    rng = np.random.default_rng(1)
    rows = _inputs(rng, 60_000)
    a, b, whole = LiveProfile(), LiveProfile(), LiveProfile()
    for i in range(0, 60_000, 5000):  # batch by batch
        (a if i < 30_000 else b).update(rows[i : i + 5000])
        whole.update(rows[i : i + 5000])
    merged = a.merge(b).profile
    assert merged.row_count == whole.rows == 60_000
    assert merged["amount"].numeric.sketch == whole.profile["amount"].numeric.sketch
    assert merged["country"].categorical.counts == whole.profile["country"].categorical.counts
    num = whole.profile["amount"].numeric
    assert num.values is None and num.sketch._pos[1].size <= num.sketch.max_bins  # memory does not grow with rows


def test_mixed_types_are_profiled_as_the_majority_and_the_rest_is_type_drift() -> None:
    """17 of 1,400 requests sent text where a number belongs: the field is judged on its numbers,
    and the text is a finding of its own; the rows of requests that failed are not profiled."""
    rng = np.random.default_rng(4)
    reference = profile(pd.DataFrame(_inputs(rng, 5000)))
    rows = [PredictionRow(time=1000.0 + i, inputs=x, status=200) for i, x in enumerate(_inputs(rng, 1400))]
    for i in range(17):
        rows[i * 80].inputs["amount"] = "one hundred"
    rows += [PredictionRow(time=3000.0 + i, inputs={"amount": "n/a", "age": "?"}, status=422) for i in range(30)]
    live = LiveProfile()
    live.update(rows)
    assert live.rows == 1400 and live.failed == 30
    assert live.types["amount"] == {"number": 1383, "text": 17} and live.set_aside == {"amount": {"text": 17}}
    assert live.profile["amount"].numeric is not None and live.profile["amount"].null_count == 17
    found = {(d.feature, d.test): d for d in DriftMonitor(reference).observe(live)}
    typed = found[("amount", "type")]
    assert typed.drifted and typed.types == {"number": 1383, "text": 17}
    assert typed.statistic == pytest.approx(17 / 1400)
    assert not found[("amount", "wasserstein")].drifted, "judged on its numbers, which did not move"
    assert ("age", "type") not in found and ("country", "type") not in found
    # a field whose values are all text where training had numbers: retyped, drifted
    retyped = LiveProfile()
    retyped.update([{"amount": str(x["amount"]), "age": x["age"]} for x in _inputs(rng, 400)])
    (only,) = [d for d in DriftMonitor(reference).observe(retyped) if d.test == "type"]
    assert only.feature == "amount" and only.drifted and only.statistic == 1.0


@pytest.mark.parametrize("seed", range(4))
def test_a_small_window_is_judged_without_false_alarms(seed: int) -> None:
    """300 live rows: a significance test on the live rows' own number, so an unchanged window
    stays quiet and a shift of one standard deviation is found."""
    rng = np.random.default_rng(10 + seed)
    reference = profile(pd.DataFrame(_inputs(rng, 20_000)))
    quiet, shifted = LiveProfile(), LiveProfile()
    quiet.update(_inputs(rng, 300))
    shifted.update(_inputs(rng, 300, shift=20.0))
    calm = {d.feature: d for d in live_drift(reference, quiet)}
    assert calm["amount"].test == "ks" and calm["country"].test == "chisquare"
    assert not any(d.drifted for d in calm.values()), calm
    moved = {d.feature: d for d in live_drift(reference, shifted)}
    assert moved["amount"].drifted and moved["amount"].p_value is not None and moved["amount"].p_value < 0.01
    assert not moved["age"].drifted and not moved["country"].drifted
    tiny = LiveProfile()
    tiny.update(_inputs(rng, 150))
    assert live_drift(reference, tiny) == [], "fewer than MIN_ROWS: not judged"


def test_a_cohort_regression_on_live_labels_is_found(home: Path) -> None:
    rng = np.random.default_rng(3)
    train = _training_run(rng)
    run = replica("fraud-api", training_run=train)
    rows = []
    for i, x in enumerate(_inputs(rng, 3000)):
        y = int(rng.integers(0, 2))
        acc = 0.7 if x["country"] == "BR" else 0.9
        rows.append(
            {"time": time.time() - 600 + i * 0.1, "inputs": x, "label": y, "output": y if rng.random() < acc else 1 - y}
        )
    log_predictions(run, rows)
    run.finish()

    with flightlog.Client() as client:
        live_rows = prediction_rows(client.logs(run.id, component="serving"))
        training = training_eval(client, train)
        with pytest.raises(NotFound, match="no data profile"):
            training_profile(client, run.id)
    assert sum(r.has_label for r in live_rows) == 3000  # every label joined its prediction by request id
    ev = live_cohorts(live_rows, ["country"])
    assert ev is not None and ev["task"] == "classification" and list(ev["overall"]) == ["accuracy"]
    report = compare_live(ev, training, threshold=0.1)
    [br] = report["regressions"]
    assert (br["cohort"], br["value"], br["metric"]) == ("country", "BR", "accuracy")
    assert 0.65 < br["current"] < 0.75 and 0.9 < br["baseline"] < 0.96
    assert br["summary"] == f"cohort country=BR accuracy {br['current']:.2f} live vs {br['baseline']:.2f} in training"
    assert report["cohorts_compared"] == 3


def test_the_adapter_takes_serving_reader_rows_and_log_events_alike() -> None:
    from flightlog.models import LogEvent

    events = [
        LogEvent(
            10.0,
            "sdk",
            20,
            "prediction",
            "serving",
            {"request_id": "a", "version": "2", "latency_ms": 5, "inputs": {"x": 1.5}, "output": 1},
        ),
        LogEvent(11.0, "sdk", 20, "label", "serving", {"request_id": "a", "label": 0}),
        LogEvent(12.0, "sdk", 20, "an unrelated line", None, None),
    ]
    reader_rows = [
        {
            "time": "1970-01-01T00:00:10Z",
            "request_id": "a",
            "version": "2",
            "latency_ms": 5,
            "inputs": {"x": 1.5},
            "output": 1,
            "label": 0,
        }
    ]
    recorder_events = [  # the serving recorder's own components: serving.prediction, serving.label
        LogEvent(
            10.0,
            "sdk",
            20,
            "prediction a 200 5.0 ms",
            "serving.prediction",
            {"request_id": "a", "version": "2", "latency_ms": 5, "inputs": {"x": 1.5}, "output": 1},
        ),
        LogEvent(11.0, "sdk", 20, "label a", "serving.label", {"request_id": "a", "label": 0}),
    ]
    assert prediction_rows(events) == prediction_rows(reader_rows) == prediction_rows(recorder_events)
    [row] = prediction_rows(reader_rows)
    assert (row.time, row.inputs, row.output, row.label, row.has_label, row.version) == (
        10.0,
        {"x": 1.5},
        1,
        0,
        True,
        "2",
    )
    with pytest.raises(InvalidInput, match="needs its time"):
        prediction_rows([{"inputs": {"x": 1}}])
    with pytest.raises(InvalidInput, match="inputs must be a mapping"):
        prediction_rows([{"time": 1.0, "inputs": [1, 2]}])
