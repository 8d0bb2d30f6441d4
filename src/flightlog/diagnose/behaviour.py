"""Model behaviour: ``nan_loss`` (the first step where a logged loss or metric turned NaN or
infinite) and ``loss_plateau`` (the monitored metric stopped improving for N evaluations)."""

from __future__ import annotations

import math
import re

import numpy as np

from flightlog.diagnose.evidence import RunEvidence, Thresholds
from flightlog.diagnose.findings import Finding
from flightlog.diagnose.metricnames import LOSS_LIKE, metric_direction
from flightlog.diagnose.nanlog import nan_in_log
from flightlog.diagnose.signals import Signal
from flightlog.diagnose.window import ramp

__all__ = ["analyze_behaviour", "nan_loss", "loss_plateau", "monitored_metric", "lower_is_better"]

_VALIDATION = re.compile(r"^(?:val|valid|validation|eval|test|dev)[_./-]|[_./-](?:val|valid|validation|eval|test|dev)$", re.I)
_IGNORE = re.compile(r"^(?:lr|learning_rate|epoch|step|time|throughput|samples|batch|grad_norm)|_lr$|\blr\b", re.I)


def analyze_behaviour(ev: RunEvidence) -> list[Finding]:
    out = []
    for analyzer in (nan_loss, nan_in_log, loss_plateau):
        finding = analyzer(ev)
        if finding is not None:
            out.append(finding)
    return out


def lower_is_better(name: str, th: Thresholds | None = None) -> bool | None:
    direction = metric_direction(name, th)
    return None if direction is None else direction == "lower"


def monitored_metric(names: list[str], th: Thresholds | None = None) -> str | None:
    """The metric a person would watch: a validation loss, else a loss, else a validation score."""
    candidates = [n for n in names if not _IGNORE.search(n) and lower_is_better(n, th) is not None]

    def rank(n: str) -> tuple[int, int, str]:
        return (0 if _VALIDATION.search(n) else 1, 0 if lower_is_better(n, th) else 1, n)

    return min(candidates, key=rank) if candidates else None


def nan_loss(ev: RunEvidence) -> Finding | None:
    bad = [m for m in ev.info.metrics.values() if m.nonfinite > 0]
    if not bad:
        return None
    signals: list[Signal] = []
    firsts: list[tuple[int, str, float, str]] = []
    for m in bad:
        h = ev.history(m.name)
        mask = ~np.isfinite(h.values)
        if not mask.any():
            continue
        i = int(np.argmax(mask))
        step, at, value = int(h.steps[i]), float(h.times[i]), float(h.values[i])
        before = h.values[:i][np.isfinite(h.values[:i])]
        lead = ""
        if before.size:
            lead = f"; last finite value {before[-1]:.4g}"
            if before.size >= 4 and abs(before[-1]) > 10 * max(1e-12, float(np.median(np.abs(before)))):
                lead += f", up from a median of {float(np.median(before)):.4g} (it diverged first)"
        text = "NaN" if math.isnan(value) else ("+inf" if value > 0 else "-inf")
        is_loss = bool(LOSS_LIKE.search(m.name))
        signals.append(Signal("nan_loss", 0.85 if is_loss else 0.6, f"non_finite:{m.name}", "metrics",
                              f"{m.name} became {text} at step {step} ({int(mask.sum())} of {mask.size} points non-finite){lead}", at))
        firsts.append((step, m.name, at, text))
    if not signals:
        return None
    firsts.sort()
    step, name, _, text = firsts[0]
    log_hits = [e for e in ev.recent if re.search(r"\b(?:nan|inf)\b", e.message, re.I) and e.level >= 30]
    if log_hits:
        e = log_hits[0]
        signals.append(Signal("nan_loss", 0.2, "the_log_reports_non_finite_values", "log", e.message.splitlines()[-1][:200], e.time))
    others = f" (also: {', '.join(n for _, n, _, _ in firsts[1:4])})" if len(firsts) > 1 else ""
    summary = f"{name} became {text} at step {step}{others}; every step after it trains on garbage."
    steps = [f"Inspect the batch and the gradients at step {step}: replay from the checkpoint before it with anomaly detection on."]
    return Finding("nan_loss", summary, signals, steps, kind="software")


def loss_plateau(ev: RunEvidence) -> Finding | None:
    th = ev.thresholds
    name = monitored_metric([m.name for m in ev.info.metrics.values() if m.count >= th.plateau_min_points], th)
    if name is None:
        return None
    h = ev.history(name)
    finite = np.isfinite(h.values)
    if not finite.all():
        return None  # a metric that went NaN or infinite is nan_loss's business
    values, steps, times = h.values, h.steps, h.times
    n = values.size
    if n < th.plateau_min_points:
        return None
    lower = bool(lower_is_better(name, th))
    v = values if lower else -values
    if n >= 10:  # a running median: one lucky evaluation is not an improvement
        pad = np.concatenate([np.full(2, v[0]), v, np.full(2, v[-1])])
        v = np.median(np.lib.stride_tricks.sliding_window_view(pad, 5), axis=1)
    # an improvement must beat both the relative threshold and the metric's own noise
    # (estimated from successive differences: a new best by noise alone is not progress)
    noise = float(np.median(np.abs(np.diff(v[n // 2 :])))) / 0.6745 / np.sqrt(2) if n >= 4 else 0.0
    best, best_i = float(v[0]), 0
    for i in range(1, n):
        if v[i] < best - max(th.plateau_min_delta * max(abs(best), 1e-12), 2 * noise):
            best, best_i = float(v[i]), i
    stall = n - 1 - best_i
    share = stall / n
    if stall < th.plateau_patience or share < 0.3:
        return None
    at_best = float(values[best_i])
    tail = values[best_i + 1 :]
    lo, hi = float(tail.min()), float(tail.max())
    spread = hi - lo
    progress = float(abs(values[0] - at_best))
    signals = [
        Signal("loss_plateau", ramp(share, 0.3, 0.8, 0.35, 0.65), "evaluations_without_improvement", "metrics",
               f"{name} reached {at_best:.4g} at step {int(steps[best_i])}; the {stall} evaluations since (to step {int(steps[-1])}) "
               f"stayed within {lo:.4g}–{hi:.4g} and did not improve on it by {th.plateau_min_delta:.0%}", float(times[best_i])),
    ]
    if progress > 0 and spread <= 0.5 * progress:
        signals.append(Signal("loss_plateau", 0.2, "a_flat_tail", "metrics",
                              f"since then {name} moved within {spread:.3g}, against {progress:.3g} of progress before it",
                              float(times[-1])))
    summary = (f"{name} stopped improving after step {int(steps[best_i])} ({at_best:.4g}): the last {stall} of {n} "
               f"evaluations ({share:.0%}) stayed within {lo:.4g}–{hi:.4g}.")
    return Finding("loss_plateau", summary, signals, kind="software")
