"""MLflow's metric messages as column series: the fast lane (what clients send) and the checked
path (anything else) give the same series, and every bad metric is refused in MLflow's words."""

import math

import pytest

from flightlog.mlflow_server.errors import MlflowError
from flightlog.mlflow_server.writes import metric_series
from flightlog.schema.values import decode_series


def _columns(metrics: list[dict]) -> dict[str, list[list[float]]]:
    return {k: [list(c) for c in decode_series(v)] for k, v in metric_series(metrics).items()}


def test_plain_and_unusual_metrics_make_the_same_series() -> None:
    plain = [{"key": "loss", "value": 0.5 + i, "timestamp": 1000 * i, "step": i} for i in range(4)]
    unusual = [
        {"key": "loss", "value": 0.5, "timestamp": "0", "step": "0"},  # strings, as some clients send
        {"key": "loss", "value": 1.5, "timestamp": 1000.0, "step": 1.0},
        {"key": "loss", "value": "2.5", "timestamp": 2000},  # no step: 0
        {"key": "loss", "value": 3.5, "timestamp": 3000, "step": 3},
    ]
    assert _columns(plain)["loss"] == [[0, 1, 2, 3], [0.0, 1.0, 2.0, 3.0], [0.5, 1.5, 2.5, 3.5]]
    assert _columns(unusual)["loss"] == [[0, 1, 0, 3], [0.0, 1.0, 2.0, 3.0], [0.5, 1.5, 2.5, 3.5]]
    odd = _columns([{"key": "x", "value": "NaN", "timestamp": 1}, {"key": "x", "value": -math.inf, "timestamp": 2}])
    assert math.isnan(odd["x"][2][0]) and odd["x"][2][1] == -math.inf


@pytest.mark.parametrize(
    ("bad", "says"),
    [
        ({"key": "a", "value": True, "timestamp": 1}, "must be a number"),
        ({"key": "a", "value": "x", "timestamp": 1}, "must be a number"),
        ({"key": "a", "value": 2**2000, "timestamp": 1}, "too large for a double"),
        ({"key": "a", "value": 1.0, "timestamp": 2**64}, "whole number"),
        ({"key": "a", "value": 1.0}, "timestamp"),
        ({"key": ["a"], "value": 1.0, "timestamp": 1}, "must be a string"),
        ({"key": "a/../b", "value": 1.0, "timestamp": 1}, "Invalid metric name"),
        ([1], "each metric is an object"),
    ],
)
def test_a_bad_metric_after_good_ones_is_refused(bad: object, says: str) -> None:
    good = {"key": "a", "value": 1.0, "timestamp": 1, "step": 0}
    with pytest.raises(MlflowError, match=says):
        metric_series([good, good, bad])  # type: ignore[list-item]
