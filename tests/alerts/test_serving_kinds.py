"""The serving rule kinds on a real evaluation: serving-like replicas recorded with the SDK
(tests/data/servinglike.py) into a real store, one cycle of the engine that `flightlog alerts
watch` and the server run, alerts kept in the store's alert tables. Each kind fires where its
condition holds and stays quiet on a neighbour below its threshold."""

from __future__ import annotations

import textwrap
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import flightlog
from flightlog.alerts.config import parse_config
from flightlog.alerts.service import build_engine
from flightlog.alerts.types import Alert
from flightlog.alerts.yamlsource import RulesFileError
from flightlog.data import profile
from tests.data.servinglike import log_minutes, log_predictions, replica


def evaluate(rules: str, started: float) -> list[Alert]:
    said: list[str] = []
    with flightlog.Client() as client:
        engine, dispatcher = build_engine(
            client, parse_config(textwrap.dedent(rules)), say=said.append, started=started
        )
        engine.cycle()
        alerts = engine.store.open_alerts()
        dispatcher.close()
    assert said == []
    return sorted(alerts, key=lambda a: (a.rule, sorted(a.labels.items())))


def minutes(n: int, requests: float, errors: float, p99: float) -> list[dict[str, float]]:
    return [
        {
            "requests": requests,
            "errors": errors,
            "latency_ms.p50": p99 / 4,
            "latency_ms.p95": p99 / 2,
            "latency_ms.p99": p99,
        }
        for _ in range(n)
    ]


def test_latency_and_error_rate_fire_above_their_thresholds_only(ahome: Path) -> None:
    started = time.time() - 5
    for endpoint, env, version, traffic in [
        ("slow-api", "prod", "3", minutes(5, 200, 2, 400.0)),  # p99 400 ms, 1 % errors
        ("fast-api", "prod", "1", minutes(5, 200, 20, 100.0)),  # p99 100 ms, 10 % errors
        ("quiet-api", "prod", "1", minutes(5, 5, 3, 100.0)),  # 60 % errors of 25 requests: too few to judge
        ("slow-api", "staging", "4", minutes(5, 200, 0, 900.0)),  # out of the rules' scope
    ]:
        run = replica(endpoint, env=env, version=version)
        log_minutes(run, traffic)
        run.finish()
    alerts = evaluate(
        """
        rules:
          - name: p99
            kind: serving_latency
            env: prod
            above: 250
            window: 30m
          - name: errors
            kind: serving_error_rate
            env: prod
            above: 0.05
            window: 30m
            min_requests: 100
    """,
        started,
    )
    assert [(a.rule, a.labels["endpoint"], a.labels["env"], a.labels["version"], a.state) for a in alerts] == [
        ("errors", "fast-api", "prod", "1", "firing"),
        ("p99", "slow-api", "prod", "3", "firing"),
    ]
    errors, p99 = alerts
    assert errors.value == pytest.approx(0.1) and errors.evidence["requests"] == 1000
    assert (
        errors.summary == "fast-api (prod, version 1): error rate 10.0% over 30m00s (100 of 1000 requests), above 5.0%"
    )
    assert p99.value == pytest.approx(400.0) and p99.evidence["model"] == "fraud"
    assert p99.summary == "slow-api (prod, version 3): p99 latency 400 ms over 30m00s, above 250 ms"


def _training(rng: np.random.Generator, n: int = 5000) -> str:
    frame = pd.DataFrame({"amount": rng.normal(100, 20, n), "country": rng.choice(["BR", "US"], n)})
    y = rng.integers(0, 2, n)
    run = flightlog.init(project="train", name="fraud")
    run.log_profile("train", profile(frame))
    run.log_eval(y, np.where(rng.random(n) < 0.93, y, 1 - y), cohorts={"country": frame["country"].to_numpy()})
    run.finish()
    return str(run.id)


def _traffic(rng: np.random.Generator, n: int, shift: float, br_accuracy: float) -> list[dict[str, Any]]:
    now = time.time()
    rows = []
    for i in range(n):
        country = str(rng.choice(["BR", "US"]))
        y = int(rng.integers(0, 2))
        acc = br_accuracy if country == "BR" else 0.93
        rows.append(
            {
                "time": now - 600 + i * 0.2,
                "inputs": {"amount": float(rng.normal(100 + shift, 20)), "country": country},
                "output": y if rng.random() < acc else 1 - y,
                "label": y,
            }
        )
    return rows


def test_drift_and_a_cohort_regression_fire_on_live_traffic(ahome: Path) -> None:
    rng = np.random.default_rng(7)
    started = time.time() - 5
    train = _training(rng)
    moved = replica("fraud-api", version="2", training_run=train, as_param=True)  # as serving.attach records it
    log_predictions(moved, _traffic(rng, 1500, shift=15.0, br_accuracy=0.7), version="2")
    moved.finish()
    steady = replica("fraud-api", env="eu", version="2", training_run=train)
    log_predictions(steady, _traffic(rng, 1500, shift=0.0, br_accuracy=0.93), version="2")
    steady.finish()
    alerts = evaluate(
        """
        rules:
          - name: drift
            kind: serving_drift
            endpoint: fraud-api
            window: 1h
            every: 0s
          - name: br
            kind: serving_cohort
            endpoint: fraud-api
            cohort: country
            worse_by: 0.1
            window: 1h
            every: 0s
    """,
        started,
    )
    assert [(a.rule, a.labels["env"], a.labels.get("feature") or a.labels.get("cohort")) for a in alerts] == [
        ("br", "prod", "country=BR"),
        ("drift", "prod", "amount"),
    ]
    br, drift = alerts
    assert br.labels["version"] == "2" and br.labels["endpoint"] == "fraud-api"
    assert br.summary.startswith("fraud-api (prod, version 2): cohort country=BR accuracy 0.")
    assert " live vs 0.9" in br.summary and br.evidence["training_run"] == train
    assert br.value is not None and br.value < 0.8
    assert drift.evidence["test"] == "wasserstein" and drift.evidence["drifted"] is True
    assert drift.value is not None and drift.value > 0.5 and drift.evidence["training_run"] == train
    assert drift.summary.startswith("fraud-api (prod, version 2): feature amount drifted against training")


def test_serving_rules_are_checked_with_clear_errors() -> None:
    with pytest.raises(RulesFileError) as err:
        parse_config(
            textwrap.dedent("""
            rules:
              - name: a
                kind: serving_error_rate
                above: 2
              - name: b
                kind: serving_cohort
                cohort: country
              - name: c
                kind: serving_drift
                thresholds: {wasserstien: 0.2}
              - name: d
                kind: serving_latency
                quantile: p90
        """)
        )
    text = str(err.value)
    assert "rules[0].above: is a share of requests, from 0 to 1 (0.02 = 2 %), got 2" in text
    assert "rules[1]: needs a condition: below: X, above: X (the live metric) or worse_by: D" in text
    assert "rules[2].thresholds.wasserstien: unknown drift threshold: use one of" in text
    assert "rules[3]: needs the field 'above'" in text and "rules[3].quantile" in text
