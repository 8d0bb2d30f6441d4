"""``metric_regressed`` (an extension of the taxonomy in docs/architecture.md): a final metric much worse than the
baseline's — the run finished, nothing crashed, and the model got worse.

Worse needs a direction: a loss is better lower, an accuracy higher. Known names decide
(:func:`metric_direction`: loss, error, mse, perplexity, wer … lower; acc, f1, auc, iou,
bleu … higher); a project states the others in its diagnosis settings (``lower_is_better`` /
``higher_is_better``, names or globs). A metric whose direction is unknown is never judged.
"""

from __future__ import annotations

import math
from typing import Any

from flightlog.diagnose.evidence import RunEvidence, Thresholds
from flightlog.diagnose.factors import worse_text
from flightlog.diagnose.findings import Finding
from flightlog.diagnose.metricnames import VALIDATION, metric_direction
from flightlog.diagnose.signals import Signal
from flightlog.diagnose.window import ramp

__all__ = ["regressed_metrics", "analyze_regression", "FINAL_METRIC_WORSE", "MONITORED_WORSE"]

# signal ids
FINAL_METRIC_WORSE = "final_metric_worse_than_the_baseline"
MONITORED_WORSE = "the_monitored_metric_is_the_one_worse"
SHORTER_RUN = "the_run_stopped_earlier_than_the_baseline"


def regressed_metrics(comparison: dict[str, Any], th: Thresholds) -> list[dict[str, Any]]:
    """The comparison's metrics whose final value is worse than the baseline's by at least
    ``th.metric_regression`` (relative), worst first."""
    out = []
    for row in comparison.get("metrics") or []:
        run, base = row.get("run"), row.get("baseline")
        if not isinstance(run, (int, float)) or not isinstance(base, (int, float)):
            continue
        if not (math.isfinite(run) and math.isfinite(base)) or base == 0:
            continue
        direction = metric_direction(row["name"], th)
        if direction is None:
            continue
        worse = (run - base) / abs(base) if direction == "lower" else (base - run) / abs(base)
        if worse >= th.metric_regression:
            out.append({"name": row["name"], "run": run, "baseline": base, "direction": direction, "worse": worse})
    out.sort(key=lambda r: (0 if VALIDATION.search(r["name"]) else 1, -r["worse"]))
    return out


def analyze_regression(
    ev: RunEvidence, baseline: RunEvidence | None, comparison: dict[str, Any] | None
) -> list[Finding]:
    if baseline is None or comparison is None:
        return []
    th = ev.thresholds
    worse = regressed_metrics(comparison, th)
    if not worse:
        return []
    from flightlog.diagnose.behaviour import monitored_metric

    base_id = baseline.id[:12]
    signals: list[Signal] = []
    for r in worse[:5]:
        weight = ramp(r["worse"], th.metric_regression, 3 * th.metric_regression, 0.45, 0.75)
        signals.append(
            Signal(
                "metric_regressed",
                weight,
                f"{FINAL_METRIC_WORSE}:{r['name']}",
                "baseline",
                _detail(r, base_id),
                _last_time(ev, r["name"]),
            )
        )
    top = worse[0]
    watched = monitored_metric(list(ev.info.metrics), th)
    if watched is not None and any(r["name"] == watched for r in worse):
        signals.append(
            Signal(
                "metric_regressed",
                0.2,
                MONITORED_WORSE,
                "metrics",
                f"{watched} is the metric this run is judged by (a validation loss or score)",
                _last_time(ev, watched),
            )
        )
    run_step, base_step = _last_step(ev, top["name"]), _last_step(baseline, top["name"])
    shorter = run_step is not None and base_step is not None and run_step < 0.8 * base_step
    if shorter:
        # a run that stopped early has not had the baseline's chance to get there
        signals = [Signal(s.category, s.weight * 0.5, s.id, s.source, s.detail, s.at) for s in signals]
        signals.append(
            Signal(
                "metric_regressed",
                0.0,
                SHORTER_RUN,
                "metrics",
                f"the run stopped at step {run_step}, the baseline at step {base_step}: the final values "
                "are not from the same point of training",
                None,
            )
        )
    others = f" ({len(worse) - 1} more metric(s) worse too)" if len(worse) > 1 else ""
    summary = (
        f"{top['name']} ended at {top['run']:.4g}, {_worse(top)} than the baseline's {top['baseline']:.4g} "
        f"({top['direction']} is better){others}."
    )
    steps = [
        "Compare what changed since the baseline (params, code, packages, inputs) in the baseline section of this report.",
        f"If {top['name']} is better {'higher' if top['direction'] == 'lower' else 'lower'}, state it in the project's "
        "diagnosis settings (higher_is_better / lower_is_better).",
    ]
    return [Finding("metric_regressed", summary, signals, steps)]


def _detail(r: dict[str, Any], base_id: str) -> str:
    return (
        f"final {r['name']} {r['baseline']:.4g} → {r['run']:.4g}: {_worse(r)} "
        f"({r['direction']} is better; baseline {base_id})"
    )


def _worse(r: dict[str, Any]) -> str:
    return worse_text(r["run"], r["baseline"], r["direction"], r["worse"])


def _last_time(ev: RunEvidence, name: str) -> float | None:
    m = ev.info.metrics.get(name)
    return m.last_time if m is not None else None


def _last_step(ev: RunEvidence, name: str) -> int | None:
    m = ev.info.metrics.get(name)
    return m.last_step if m is not None else None
