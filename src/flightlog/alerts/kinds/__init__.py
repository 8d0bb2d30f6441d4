"""The rule kinds, by name. A new kind is one module with a ``KIND`` and one line here.

``KINDS`` holds alerts' own kinds, which alerts registers in the feature table
(`flightlog_alert_rule_kinds`); rules are read against `rule_kinds()`, the table's, so that
another feature's kinds (serving's, triage's) are used the same way.
"""

from __future__ import annotations

from flightlog.alerts.kinds import (
    diagnosis,
    duration,
    failures,
    hang,
    improvement,
    nonfinite,
    stalled,
    threshold,
)
from flightlog.alerts.kinds.base import EvalEnv, Evaluator, Kind, run_labels
from flightlog.plugins import features

__all__ = ["KINDS", "rule_kinds", "Kind", "Evaluator", "EvalEnv", "run_labels"]

KINDS: dict[str, Kind] = {
    k.name: k
    for k in (
        threshold.KIND,
        improvement.KIND,
        nonfinite.KIND,
        failures.KIND,
        stalled.KIND,
        hang.KIND,
        duration.KIND,
        diagnosis.KIND,
    )
}


def rule_kinds() -> dict[str, Kind]:
    """Every rule kind the feature table knows, by name; the first feature to name one keeps it
    (alerts registers first among the features that have kinds: a built-in name is never replaced)."""
    kinds: dict[str, Kind] = {}
    for kind in features().alert_rule_kinds():
        kinds.setdefault(kind.name, kind)
    return kinds or dict(KINDS)  # a table without the alerts feature (a test's own): its own kinds
