"""``serving_latency`` and ``serving_error_rate``: an endpoint's traffic over a window.

    - name: fraud-slow
      kind: serving_latency
      endpoint: fraud-api          # optional: every endpoint
      env: prod                    # optional: every environment
      above: 250                   # ms
      quantile: p99                # p50 | p95 | p99 (default p99)
      aggregate: mean              # mean (weighted by requests, default) | max, over the window
      window: 5m                   # default 5m
      min_requests: 1              # default 1: a window without traffic is not judged

    - name: fraud-errors
      kind: serving_error_rate
      endpoint: fraud-api
      above: 0.02                  # errors / requests
      window: 10m                  # default 10m
      min_requests: 100            # default 100: fewer requests in the window are not judged

A replica logs per minute ``serving.requests``, ``serving.errors`` and
``serving.latency_ms.p50/p95/p99`` (step = the minute); the window sums (or weighs) the points
of every replica of the group whose time falls inside it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from flightlog.alerts.delta import Needs
from flightlog.alerts.kinds.base import EvalEnv, Kind
from flightlog.alerts.rules import Rule
from flightlog.alerts.schema import Fields
from flightlog.errors import NotFound
from flightlog.models import RunInfo
from flightlog.serving.alertkinds.groups import (
    FIELDS,
    Finding,
    Group,
    ServingEvaluator,
    evaluators_of,
    parse_scope,
    window_field,
    window_text,
)

__all__ = ["LATENCY", "ERROR_RATE", "LatencySpec", "ErrorRateSpec"]

REQUESTS, ERRORS = "serving.requests", "serving.errors"
QUANTILES = ("p50", "p95", "p99")


@dataclass(frozen=True)
class LatencySpec:
    endpoint: str | None
    env: str | None
    above: float
    quantile: str = "p99"
    aggregate: str = "mean"
    window: float = 300.0
    min_requests: int = 1


@dataclass(frozen=True)
class ErrorRateSpec:
    endpoint: str | None
    env: str | None
    above: float
    window: float = 600.0
    min_requests: int = 100


def parse_latency(f: Fields) -> LatencySpec | None:
    endpoint, env = parse_scope(f)
    above = f.number("above", required=True, minimum=0.0)
    quantile = f.choice("quantile", QUANTILES, default="p99") or "p99"
    aggregate = f.choice("aggregate", ("mean", "max"), default="mean") or "mean"
    window = window_field(f, 300.0)
    min_requests = f.integer("min_requests", default=1, minimum=0)
    if above is None:
        return None
    return LatencySpec(endpoint, env, above, quantile, aggregate, window, 1 if min_requests is None else min_requests)


def parse_error_rate(f: Fields) -> ErrorRateSpec | None:
    endpoint, env = parse_scope(f)
    above = f.number("above", required=True, minimum=0.0)
    if above is not None and above >= 1:
        f.fail("above", f"is a share of requests, from 0 to 1 (0.02 = 2 %), got {above:g}")
    window = window_field(f, 600.0)
    min_requests = f.integer("min_requests", default=100, minimum=1)
    if above is None:
        return None
    return ErrorRateSpec(endpoint, env, above, window, 100 if min_requests is None else min_requests)


def _points(env: EvalEnv, run: RunInfo, name: str, window: float) -> dict[int, float]:
    """The run's points of ``name`` inside the window ending now, by step (the minute)."""
    try:
        h = env.lookup.store.metric_history(run.id, name)
    except NotFound:
        return {}
    if not len(h):
        return {}
    inside = (h.times > env.now - window) & (h.times <= env.now) & np.isfinite(h.values)
    return dict(zip(h.steps[inside].tolist(), h.values[inside].tolist(), strict=True))


class LatencyEvaluator(ServingEvaluator):
    def needs(self) -> Needs:
        return Needs(metrics=frozenset({REQUESTS, *(f"serving.latency_ms.{q}" for q in QUANTILES)}))

    def judge(self, rule: Rule, group: Group, runs: list[RunInfo], env: EvalEnv) -> list[Finding]:
        spec: LatencySpec = rule.spec
        values: list[float] = []
        weights: list[float] = []
        for run in runs:
            lat = _points(env, run, f"serving.latency_ms.{spec.quantile}", spec.window)
            req = _points(env, run, REQUESTS, spec.window)
            for step, v in lat.items():
                values.append(v)
                weights.append(req.get(step, 1.0))
        requests = float(sum(weights))
        if not values or requests < spec.min_requests:
            return [Finding(None)]
        if spec.aggregate == "max":
            value = max(values)
        else:
            value = float(np.average(values, weights=weights)) if requests > 0 else float(np.mean(values))
        return [
            Finding(
                value > spec.above,
                value,
                fields={
                    "threshold": spec.above,
                    "quantile": spec.quantile,
                    "aggregate": spec.aggregate,
                    "window": window_text(spec.window),
                    "requests": int(requests),
                },
                evidence={
                    "latency_ms": value,
                    "quantile": spec.quantile,
                    "aggregate": spec.aggregate,
                    "threshold_ms": spec.above,
                    "window_seconds": spec.window,
                    "points": len(values),
                    "requests": int(requests),
                },
            )
        ]


class ErrorRateEvaluator(ServingEvaluator):
    def needs(self) -> Needs:
        return Needs(metrics=frozenset({REQUESTS, ERRORS}))

    def judge(self, rule: Rule, group: Group, runs: list[RunInfo], env: EvalEnv) -> list[Finding]:
        spec: ErrorRateSpec = rule.spec
        requests = errors = 0.0
        for run in runs:
            req = _points(env, run, REQUESTS, spec.window)
            err = _points(env, run, ERRORS, spec.window)
            requests += sum(req.values())
            errors += sum(err.values())
        if requests < spec.min_requests:
            return [Finding(None)]
        rate = errors / requests
        return [
            Finding(
                rate > spec.above,
                rate,
                fields={
                    "threshold": spec.above,
                    "window": window_text(spec.window),
                    "requests": int(requests),
                    "errors": int(errors),
                },
                evidence={
                    "error_rate": rate,
                    "errors": int(errors),
                    "requests": int(requests),
                    "threshold": spec.above,
                    "window_seconds": spec.window,
                },
            )
        ]


LATENCY = Kind(
    name="serving_latency",
    doc="a serving endpoint's latency quantile (p99) over a window above a number of milliseconds",
    fields=(*FIELDS, "threshold", "quantile", "aggregate", "requests"),
    default_summary="{endpoint} ({env}, version {version}): {quantile} latency {value:.0f} ms over {window}, "
    "above {threshold:g} ms",
    parse=parse_latency,
    evaluators=evaluators_of(LatencyEvaluator),
    run_scoped=False,
)

ERROR_RATE = Kind(
    name="serving_error_rate",
    doc="a serving endpoint's errors / requests over a window above a share (with a minimum of requests)",
    fields=(*FIELDS, "threshold", "requests", "errors"),
    default_summary="{endpoint} ({env}, version {version}): error rate {value:.1%} over {window} "
    "({errors} of {requests} requests), above {threshold:.1%}",
    parse=parse_error_rate,
    evaluators=evaluators_of(ErrorRateEvaluator),
    run_scoped=False,
)
