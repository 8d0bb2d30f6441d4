"""The rule kinds, by name. A new kind is one module with a ``KIND`` and one line here."""

from __future__ import annotations

from flightlog.alerts.kinds import (
    diagnosis,
    duration,
    failures,
    improvement,
    nonfinite,
    serving_data,
    serving_traffic,
    stalled,
    threshold,
)
from flightlog.alerts.kinds.base import EvalEnv, Evaluator, Kind, run_labels

__all__ = ["KINDS", "Kind", "Evaluator", "EvalEnv", "run_labels"]

KINDS: dict[str, Kind] = {
    k.name: k
    for k in (
        threshold.KIND,
        improvement.KIND,
        nonfinite.KIND,
        failures.KIND,
        stalled.KIND,
        duration.KIND,
        diagnosis.KIND,
        serving_traffic.LATENCY,
        serving_traffic.ERROR_RATE,
        serving_data.DRIFT,
        serving_data.COHORT,
    )
}
