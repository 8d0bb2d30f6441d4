"""``metric_regressed`` (an extension of the taxonomy in docs/architecture.md): a final metric much worse than the
baseline's — the run finished, nothing crashed, and the model got worse.

Worse needs a direction: a loss is better lower, an accuracy higher. Known names decide
(:func:`metric_direction`: loss, error, mse, perplexity, wer … lower; acc, f1, auc, iou,
bleu … higher); a project states the others in its diagnosis settings (``lower_is_better`` /
``higher_is_better``, names or globs). A metric whose direction is unknown is never judged.

Worse than one run is not yet a regression: runs of the same script differ by their seeds.
An automatically chosen baseline comes with the comparable runs it was chosen from, and the
difference leads only when it lies outside their spread (:func:`analyze_regression`).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from flightlog.diagnose.behaviour import monitored_metric
from flightlog.diagnose.evidence import RunEvidence, Thresholds
from flightlog.diagnose.factors import worse_text
from flightlog.diagnose.findings import Finding
from flightlog.diagnose.metricnames import VALIDATION, metric_direction
from flightlog.diagnose.signals import Signal
from flightlog.diagnose.window import ramp
from flightlog.models import RunInfo

if TYPE_CHECKING:
    from flightlog.diagnose.selection import BaselineChoice

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


#: a regression that no spread backs carries at most this weight: a hint, never a lead
HINT = 0.3
#: the comparable runs it takes to know a run-to-run spread (a pinned baseline needs none)
MIN_REFERENCES = 3
#: how far (in the references' standard deviations) beyond their mean a value must lie
SPREAD_Z = 2.0


def analyze_regression(
    ev: RunEvidence,
    baseline: RunEvidence | None,
    comparison: dict[str, Any] | None,
    choice: BaselineChoice | None = None,
) -> list[Finding]:
    """``metric_regressed`` against the baseline. A baseline a person named (pinned, given)
    is the reference on its own; one picked automatically is judged with the runs it was
    picked from: the difference leads only when it lies outside the spread of at least
    :data:`MIN_REFERENCES` comparable runs — else run-to-run noise explains it, a hint."""
    if baseline is None or comparison is None:
        return []
    th = ev.thresholds
    worse = regressed_metrics(comparison, th)
    if not worse:
        return []
    base_id = baseline.id[:12]
    judged_alone = choice is None or choice.pinned
    references = choice.references if choice is not None else []
    signals: list[Signal] = []
    backed: list[str] = []
    for r in worse[:5]:
        weight = ramp(r["worse"], th.metric_regression, 3 * th.metric_regression, 0.45, 0.75)
        detail = _detail(r, base_id)
        if not judged_alone:
            verdict, text = _against_the_spread(r, references)
            detail += f"; {text}"
            if not verdict:
                weight = 0.0
        if weight > 0:
            backed.append(r["name"])
        signals.append(
            Signal(
                "metric_regressed",
                weight,
                f"{FINAL_METRIC_WORSE}:{r['name']}",
                "baseline",
                detail,
                _last_time(ev, r["name"]),
            )
        )
    top = worse[0]
    if not backed:  # nothing outside the spread: the largest difference, as a hint
        signals[0] = replace(signals[0], weight=HINT)
    watched = monitored_metric(list(ev.info.metrics), th)
    if watched is not None and watched in backed:
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
    if not judged_alone and not backed:
        n = len(references)
        summary += (
            f" Not outside the run-to-run spread of the {n} comparable run{'s' if n != 1 else ''} seen: noise may explain it."
            if n >= MIN_REFERENCES
            else f" Only {n} comparable run{'s' if n != 1 else ''} to judge it by: too few to know the run-to-run spread."
        )
    steps = [
        "Compare what changed since the baseline (params, code, packages, inputs) in the baseline section of this report.",
        f"If {top['name']} is better {'higher' if top['direction'] == 'lower' else 'lower'}, state it in the project's "
        "diagnosis settings (higher_is_better / lower_is_better).",
    ]
    if not judged_alone and not backed:
        steps.insert(
            0,
            "Pin the reference run (flightlog runs edit RUN --tag baseline=true), or run it 3 times to see the spread.",
        )
    return [Finding("metric_regressed", summary, signals, steps)]


def _against_the_spread(r: dict[str, Any], references: list[RunInfo]) -> tuple[bool, str]:
    """Whether ``r``'s final value lies outside the spread of the references' final values,
    and the sentence that says so (with how many runs and their range)."""
    finals = [v for ref in references if (v := _final(ref, r["name"])) is not None]
    n = len(finals)
    if n < MIN_REFERENCES:
        return False, (
            f"only {n} comparable run{'s' if n != 1 else ''} with {r['name']}: too few to know the run-to-run "
            f"spread (pin a baseline, or compare with {MIN_REFERENCES} or more)"
        )
    values = np.asarray(finals, dtype=float)
    lo, hi = float(values.min()), float(values.max())
    sd = float(values.std(ddof=1))
    value = float(r["run"])
    if r["direction"] == "lower":
        beyond = value > hi and (sd == 0 or (value - float(values.mean())) / sd >= SPREAD_Z)
    else:
        beyond = value < lo and (sd == 0 or (float(values.mean()) - value) / sd >= SPREAD_Z)
    where = "outside" if beyond else "within"
    return beyond, f"{where} the spread of {n} comparable runs ({lo:.4g}–{hi:.4g})"


def _final(info: RunInfo, name: str) -> float | None:
    m = info.metrics.get(name)
    if m is None or m.last is None or not math.isfinite(m.last):
        return None
    return float(m.last)


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
