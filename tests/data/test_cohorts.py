"""Cohort metrics, and a cohort regression hidden by an aggregate improvement."""

from __future__ import annotations

import numpy as np
import pytest

from flightlog.data import compare_cohorts, evaluate
from flightlog.data.metrics import auc, classification, regression
from flightlog.errors import InvalidInput


def test_binary_metrics_by_hand() -> None:
    y = np.array([1, 1, 1, 0, 0, 0, 0, 1])
    p = np.array([1, 0, 1, 0, 1, 0, 0, 1])
    m = classification(y, p, classes=[0, 1], positive=1)
    # tp=3 fp=1 fn=1 tn=3
    assert m["accuracy"] == 0.75
    assert m["precision"] == 0.75 and m["recall"] == 0.75 and m["f1"] == pytest.approx(0.75)
    assert m["auc"] is None  # no scores


def test_auc_matches_the_pairwise_definition_with_ties() -> None:
    y = np.array([1, 0, 1, 0, 1, 0])
    s = np.array([0.9, 0.1, 0.4, 0.4, 0.8, 0.7])
    pos, neg = s[y == 1], s[y == 0]
    want = np.mean([1.0 if a > b else 0.5 if a == b else 0.0 for a in pos for b in neg])
    assert auc(y == 1, s) == pytest.approx(want)
    assert auc(np.array([True, True]), np.array([0.1, 0.2])) is None


def test_undefined_metrics_are_none_not_zero() -> None:
    m = classification(np.array([0, 0]), np.array([0, 0]), classes=[0, 1], positive=1)
    assert m["precision"] is None and m["recall"] is None and m["f1"] is None and m["accuracy"] == 1.0


def test_regression_metrics() -> None:
    m = regression(np.array([1.0, 2.0, 3.0]), np.array([2.0, 2.0, 5.0]))
    assert m["mae"] == pytest.approx(1.0)
    assert m["rmse"] == pytest.approx(np.sqrt(5 / 3))


def test_evaluate_binary_scores_with_cohorts_and_a_bounded_sample() -> None:
    rng = np.random.default_rng(0)
    n = 2000
    y = rng.integers(0, 2, n)
    scores = np.clip(y * 0.6 + rng.normal(0.2, 0.2, n), 0, 1)
    region = rng.choice(["EU", "US"], n)
    ev = evaluate(y, scores, cohorts={"region": region}, sample_size=50)
    assert ev["task"] == "classification" and ev["positive_label"] == 1 and ev["count"] == n
    assert set(ev["overall"]) == {"accuracy", "precision", "recall", "f1", "auc"}
    assert ev["overall"]["auc"] > 0.9
    assert {(c["cohort"], c["value"]) for c in ev["cohorts"]} == {
        ("region", "EU"),
        ("region", "US"),
    }
    assert sum(c["count"] for c in ev["cohorts"]) == n
    sample = ev["sample"]
    assert sample["size"] == 50 and len(sample["rows"]) == 50
    assert set(sample["rows"][0]) == {"row", "y_true", "y_pred", "score", "region"}
    assert evaluate(y, scores, cohorts={"region": region}, sample_size=50)["sample"] == sample  # seeded


def test_evaluate_regression_and_multiclass() -> None:
    rng = np.random.default_rng(1)
    r = evaluate(rng.normal(size=100), rng.normal(size=100))
    assert r["task"] == "regression" and set(r["overall"]) == {"mae", "rmse"}
    y = rng.integers(0, 3, 300)
    proba = rng.dirichlet([1, 1, 1], 300)
    proba[np.arange(300), y] += 1.0
    proba /= proba.sum(axis=1, keepdims=True)
    m = evaluate(y, proba)
    assert m["task"] == "classification" and m["overall"]["accuracy"] > 0.8 and m["overall"]["auc"] > 0.9
    labels = evaluate(np.array(["cat", "dog", "cat"]), np.array(["cat", "cat", "cat"]), metrics=["accuracy"])
    assert labels["overall"] == {"accuracy": pytest.approx(2 / 3)}


def test_evaluate_rejects_bad_input() -> None:
    with pytest.raises(InvalidInput, match="rows"):
        evaluate([1, 0], [1])
    with pytest.raises(InvalidInput, match="does not apply"):
        evaluate([1.5, 2.5], [1.0, 2.0], metrics=["auc", "mae"])
    with pytest.raises(InvalidInput, match="cohort 'g'"):
        evaluate([1, 0], [1, 0], cohorts={"g": ["a"]})


def _predictions(y: np.ndarray, region: np.ndarray, accuracy: dict[str, float], rng: np.random.Generator) -> np.ndarray:
    p_right = np.vectorize(accuracy.get)(region)
    return np.where(rng.random(y.size) < p_right, y, 1 - y)


def test_a_cohort_regression_hidden_by_an_aggregate_improvement_is_found() -> None:
    rng = np.random.default_rng(42)
    n = 6000
    region = rng.choice(["EU", "US", "APAC"], n, p=[0.45, 0.45, 0.1])
    y = rng.integers(0, 2, n)
    base = evaluate(
        y,
        _predictions(y, region, {"EU": 0.8, "US": 0.8, "APAC": 0.85}, rng),
        cohorts={"region": region},
    )
    cur = evaluate(
        y,
        _predictions(y, region, {"EU": 0.9, "US": 0.9, "APAC": 0.7}, rng),
        cohorts={"region": region},
    )
    assert cur["overall"]["accuracy"] > base["overall"]["accuracy"]
    c = compare_cohorts(cur, base)
    assert c["aggregate_improved"] and not c["aggregate_regressed"]
    assert c["hidden_regression"]
    worst = c["regressions"][0]
    assert (worst["cohort"], worst["value"]) == ("region", "APAC")
    assert worst["delta"] < -0.1
    assert {r["value"] for r in c["regressions"]} == {"APAC"}
    assert compare_cohorts(base, base)["regressions"] == []


def test_error_metrics_regress_relatively_and_small_cohorts_are_skipped() -> None:
    rng = np.random.default_rng(3)
    y = rng.normal(size=1000)
    g = np.array(["big"] * 980 + ["tiny"] * 20)
    pred = y + rng.normal(0, 0.1, 1000)
    base = evaluate(y, pred, cohorts={"g": g})
    noisy = pred.copy()
    noisy[g == "tiny"] += 5
    cur = evaluate(y, noisy, cohorts={"g": g})
    c = compare_cohorts(cur, base)
    assert c["regressions"] == [] and c["aggregate_regressed"]  # "tiny" has 20 rows < min_count
    c2 = compare_cohorts(cur, base, min_count=10)
    assert {(r["value"], r["metric"]) for r in c2["regressions"]} == {
        ("tiny", "mae"),
        ("tiny", "rmse"),
    }
    assert c2["regressions"][0]["relative"] > 1


def test_compare_rejects_mismatched_evaluations() -> None:
    a = evaluate([1, 0], [1, 0])
    b = evaluate([1.5, 2.5], [1.0, 2.0])
    with pytest.raises(InvalidInput, match="cannot compare"):
        compare_cohorts(a, b)
    with pytest.raises(InvalidInput, match="not an eval result"):
        compare_cohorts({"x": 1}, a)
