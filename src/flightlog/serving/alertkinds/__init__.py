"""The serving rule kinds — ``serving_latency``, ``serving_error_rate``, ``serving_drift``,
``serving_cohort`` — which the serving feature adds to alerting through the feature table
(``flightlog_alert_rule_kinds`` in ``serving/feature.py``), as triage adds its own: alerting
knows no serving (docs/alerting.md)."""

from __future__ import annotations

from flightlog.alerts.kinds.base import Kind
from flightlog.serving.alertkinds import data, traffic

__all__ = ["KINDS"]

#: the serving feature's rule kinds, in the order `flightlog alerts` lists them
KINDS: tuple[Kind, ...] = (traffic.LATENCY, traffic.ERROR_RATE, data.DRIFT, data.COHORT)
