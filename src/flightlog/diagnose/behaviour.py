"""Model behaviour: ``nan_loss`` (the first step where a logged loss or metric turned NaN or
infinite), ``loss_divergence`` (a loss that exploded while it stayed finite) and
``loss_plateau`` (the monitored metric stopped improving for N evaluations — and stayed flat:
a loss that rises is not a plateau, it is a divergence or overfitting)."""

from __future__ import annotations

import math
import re

import numpy as np

from flightlog.diagnose.evidence import RunEvidence, Thresholds
from flightlog.diagnose.factors import factor_text
from flightlog.diagnose.findings import Finding
from flightlog.diagnose.metricnames import LOSS_LIKE, VALIDATION, metric_direction
from flightlog.diagnose.nanlog import nan_in_log
from flightlog.diagnose.signals import Signal
from flightlog.diagnose.window import ramp
from flightlog.models import RunInfo

__all__ = [
    "analyze_behaviour",
    "nan_loss",
    "nonfinite_losses",
    "is_loss",
    "loss_divergence",
    "loss_plateau",
    "monitored_metric",
    "lower_is_better",
    "learning_rate_params",
]

_VALIDATION = re.compile(
    r"^(?:val|valid|validation|eval|test|dev)[_./-]|[_./-](?:val|valid|validation|eval|test|dev)$", re.I
)
_LEARNING_RATE = re.compile(r"(?:^|[_./-])(?:lr|learning_?rate|eta|step_?size)(?:$|[_./-])", re.I)
_IGNORE = re.compile(r"^(?:lr|learning_rate|epoch|step|time|throughput|samples|batch|grad_norm)|_lr$|\blr\b", re.I)


def analyze_behaviour(ev: RunEvidence) -> list[Finding]:
    out = []
    for analyzer in (nan_loss, nan_in_log, loss_divergence, loss_plateau):
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


def is_loss(name: str, th: Thresholds | None = None) -> bool:
    """A loss (or an error, a perplexity: lower is better and the name says so), not a scale."""
    return bool(LOSS_LIKE.search(name)) and metric_direction(name, th) == "lower"


def nonfinite_losses(info: RunInfo, th: Thresholds | None = None) -> list[str]:
    """The losses of a run that became NaN or infinite (an evaluation statistic that is
    undefined on its data is not one of them: see :func:`nan_loss`)."""
    return sorted(m.name for m in info.metrics.values() if m.nonfinite and is_loss(m.name, th))


#: the weights of a first non-finite point: a training loss, an evaluation loss, another metric
_NAN_LOSS, _NAN_OTHER = 0.85, 0.6
#: ... and of one while a training loss went on finite after it: an evaluation loss, a statistic
_NAN_EVAL_LOSS_LOSS_FINITE, _NAN_STATISTIC_LOSS_FINITE = 0.4, 0.2
#: the one signal id of every statistic undefined on its data while the losses stayed finite
_UNDEFINED_STATISTIC = "non_finite_statistic_while_the_loss_stayed_finite"
#: the norm of the gradients a trainer logs at each step (Transformers' ``grad_norm``, Lightning's
#: ``grad_norm/total``, ``gradient_norm``): a statistic of the training step, not of an evaluation
_GRADIENT_NORM = re.compile(r"(?:^|[_./-])grad(?:ient)?_?norm(?:$|[_./-])", re.I)
#: how many logged points a gradient norm must stay non-finite to the end to be the training's NaN
_GRADIENT_NAN_MIN_POINTS = 3


def _gradients_stayed_nan(name: str, values: np.ndarray) -> bool:
    """A gradient norm non-finite at every point from its first non-finite one to the end (three
    or more): the gradients, and after the next step the weights, are NaN. The loss the trainer
    logs can stay finite all the same — Transformers' Trainer replaces a NaN loss by the mean of
    the losses logged before it (``logging_nan_inf_filter``, on by default: ``'loss': '0'`` once
    they are reset) — so this is the run's NaN, not a statistic undefined on its data. A mixed
    precision loss scaler's skipped step (an ``inf`` norm now and then, finite ones between) is
    not: the norm comes back finite."""
    if not _GRADIENT_NORM.search(name):
        return False
    bad = ~np.isfinite(values)
    if not bad.any():
        return False
    tail = bad[int(np.argmax(bad)) :]
    return bool(tail.all()) and tail.size >= _GRADIENT_NAN_MIN_POINTS


def nan_loss(ev: RunEvidence) -> Finding | None:
    """The first non-finite point of each metric that has one.

    A statistic (a correlation, an AUC, an F1) is legitimately undefined on some data — a
    slice with one class, constant predictions — and evaluation code prints it as ``nan``
    while the loss trains on, finite: that is a hint about the evaluation, never a NaN loss.
    So is an evaluation loss that went NaN while the training loss stayed finite after it,
    though more strongly (an empty evaluation split averages to NaN; so does an overflow)."""
    th = ev.thresholds
    bad = [m for m in ev.info.metrics.values() if m.nonfinite > 0]
    if not bad:
        return None
    signals: list[Signal] = []
    firsts: list[tuple[int, str, float, str]] = []
    healthy = _finite_training_losses(ev)
    undefined: list[str] = []
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
        loss = is_loss(m.name, th)
        gradients = _gradients_stayed_nan(m.name, h.values)
        weight = _NAN_LOSS if loss or gradients else _NAN_OTHER
        went_on = [n for n, last_step in healthy.items() if n != m.name and last_step >= step]
        if gradients:
            went_on = []
            lead += (
                "; it never came back finite: the gradients, and so the weights, are NaN"
                " (a Trainer logs a NaN loss as the mean of the earlier ones)"
            )
        elif not loss and not went_on:
            # a statistic of an evaluation after the training (a final report per subset): the
            # training losses ended finite, whatever step the statistic was printed at
            went_on = [n for n in healthy if n != m.name]
        signal_id = f"non_finite:{m.name}"
        if went_on and (not loss or _VALIDATION.search(m.name) or VALIDATION.search(m.name)):
            weight = _NAN_EVAL_LOSS_LOSS_FINITE if loss else _NAN_STATISTIC_LOSS_FINITE
            lead += f"; {went_on[0]} stayed finite after it" if loss else f"; {went_on[0]} stayed finite"
            undefined.append(m.name)
            if not loss:
                # the statistics of one undefined evaluation (AUC and F1 of an empty subset) are
                # one piece of evidence, not one each
                signal_id = _UNDEFINED_STATISTIC
        signals.append(
            Signal(
                "nan_loss",
                weight,
                signal_id,
                "metrics",
                f"{m.name} became {text} at step {step} ({int(mask.sum())} of {mask.size} points non-finite){lead}",
                at,
            )
        )
        firsts.append((step, m.name, at, text))
    if not signals:
        return None
    firsts.sort(key=lambda f: (f[1] in undefined, f[0]))
    step, name, _, text = firsts[0]
    log_hits = [e for e in ev.recent if re.search(r"\b(?:nan|inf)\b", e.message, re.I) and e.level >= 30]
    if log_hits and name not in undefined:
        e = log_hits[0]
        signals.append(
            Signal(
                "nan_loss", 0.2, "the_log_reports_non_finite_values", "log", e.message.splitlines()[-1][:200], e.time
            )
        )
    others = f" (also: {', '.join(n for _, n, _, _ in firsts[1:4])})" if len(firsts) > 1 else ""
    if name in undefined:
        summary = (
            f"{name} became {text} at step {step}{others} while the loss stayed finite: an evaluation statistic "
            "undefined on its data (a slice with one class, constant predictions, an empty split), not a NaN loss."
        )
        steps = [f"Check the data {name} is computed on at step {step}: how many rows, how many classes."]
    else:
        summary = f"{name} became {text} at step {step}{others}; every step after it trains on garbage."
        steps = [
            f"Inspect the batch and the gradients at step {step}: replay from the checkpoint before it with anomaly detection on."
        ]
    return Finding("nan_loss", summary, signals, steps, kind="software")


def _finite_training_losses(ev: RunEvidence) -> dict[str, int]:
    """``{name: last step}`` of the training losses (not an evaluation's) that ended finite."""
    out: dict[str, int] = {}
    for m in ev.info.metrics.values():
        if m.nonfinite or m.last_step is None or not is_loss(m.name, ev.thresholds):
            continue
        if _VALIDATION.search(m.name) or VALIDATION.search(m.name):
            continue
        out[m.name] = int(m.last_step)
    return out


def learning_rate_params(params: dict[str, object]) -> dict[str, object]:
    """The params that name a learning rate (``lr``, ``optimizer.learning_rate``, ``eta``):
    the first suspect when a loss explodes."""
    return {k: v for k, v in params.items() if _LEARNING_RATE.search(k)}


def loss_divergence(ev: RunEvidence) -> Finding | None:
    """A loss that ran away while every point stayed finite: it ended ``divergence_factor``
    times (or more) above where it started — or above the low it had come down to, when it
    rose back over a fair share of the way it had come (a warm-up that fell from 6 to 0.25
    and then climbed to 25 diverged, though it ended below its start). The levels are running
    medians, so minibatch noise and single spikes move neither the low nor the end. A loss
    that went NaN is :func:`nan_loss`'s."""
    th = ev.thresholds
    worst: tuple[float, str, float, float, int, float, bool] | None = None
    for m in ev.info.metrics.values():
        if m.count < th.divergence_min_points or m.nonfinite or lower_is_better(m.name, th) is not True:
            continue
        if not LOSS_LIKE.search(m.name):
            continue
        h = ev.history(m.name)
        values = h.values
        if values.size < th.divergence_min_points or not np.isfinite(values).all():
            continue
        run = _runaway(values, th.divergence_factor)
        if run is None:
            continue
        factor, start, end, i, from_low = run
        if worst is None or factor > worst[0]:
            worst = (factor, m.name, start, end, int(h.steps[i]), float(h.times[i]), from_low)
    if worst is None:
        return None
    factor, name, start, end, step, at, from_low = worst
    times = factor_text(factor)
    where = "its low of" if from_low else ""
    rose = f"rose from {where} {start:.4g} to {end:.4g}".replace("  ", " ")
    signals = [
        Signal(
            "loss_divergence",
            ramp(float(np.log10(factor)), np.log10(th.divergence_factor), 4.0, 0.55, 0.85),
            f"loss_exploded:{name}",
            "metrics",
            f"{name} {rose} ({times}, running medians), past {np.sqrt(start * end):.4g} from step {step}",
            at,
        )
    ]
    lrs = learning_rate_params(ev.info.params)
    context = [{"source": "params", "detail": f"{k} = {v!r}", "at": None} for k, v in list(lrs.items())[:3]]
    lr_text = f" with {', '.join(f'{k}={v!r}' for k, v in list(lrs.items())[:2])}" if lrs else ""
    summary = (
        f"{name} diverged: it {rose} ({times}) from step {step}{lr_text}; "
        "the optimisation ran away instead of converging."
    )
    steps = [
        f"Lower the learning rate{' (' + ', '.join(lrs) + ')' if lrs else ''} or add gradient clipping, "
        f"and replay from a checkpoint before step {step}."
    ]
    return Finding("loss_divergence", summary, signals, steps, kind="software", context=context)


#: a rise from the low must climb back this share of the way down from the start to count
_RISE_SHARE = 0.25


def _runaway(values: np.ndarray, factor_needed: float) -> tuple[float, float, float, int, bool] | None:
    """``(factor, from, end, take-off index, from its low)`` of a loss that ran away, or None."""
    n = values.size
    w = max(1, min(25, n // 8)) if n >= 24 else max(1, min(3, n // 5))
    smooth = np.median(np.lib.stride_tricks.sliding_window_view(values, w), axis=1) if w > 1 else values
    start, end = float(smooth[0]), float(smooth[-1])
    if start <= 0 or end <= 0:
        return None  # a factor needs positive values (a negative log-likelihood is judged by plateau and regression)
    low_i = int(np.argmin(smooth[:-1])) if smooth.size > 1 else 0
    low = float(smooth[low_i])
    candidates = [(end / start, start, False)]
    if 0 < low < start and end - low >= _RISE_SHARE * (start - low):
        candidates.append((end / low, low, True))
    factor, base, from_low = max(candidates)
    if factor < factor_needed:
        return None
    # where it took off: the first point past the geometric middle of the base and the end
    threshold = float(np.sqrt(base * end))
    after = low_i if from_low else 0
    rising = np.flatnonzero(smooth[after:] > threshold)
    i = min(n - 1, after + int(rising[0]) + w - 1) if rising.size else n - 1
    return factor, base, end, i, from_low


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
    if _rising(v, best, best_i, noise, float(abs(v[0] - best))):
        return None  # a metric that got worse after its best is diverging or overfitting, not flat
    at_best = float(values[best_i])
    tail = values[best_i + 1 :]
    lo, hi = float(tail.min()), float(tail.max())
    spread = hi - lo
    progress = float(abs(values[0] - at_best))
    signals = [
        Signal(
            "loss_plateau",
            ramp(share, 0.3, 0.8, 0.35, 0.65),
            "evaluations_without_improvement",
            "metrics",
            f"{name} reached {at_best:.4g} at step {int(steps[best_i])}; the {stall} evaluations since (to step {int(steps[-1])}) "
            f"stayed within {lo:.4g}–{hi:.4g} and did not improve on it by {th.plateau_min_delta:.0%}",
            float(times[best_i]),
        ),
    ]
    if progress > 0 and spread <= 0.5 * progress:
        signals.append(
            Signal(
                "loss_plateau",
                0.2,
                "a_flat_tail",
                "metrics",
                f"since then {name} moved within {spread:.3g}, against {progress:.3g} of progress before it",
                float(times[-1]),
            )
        )
    summary = (
        f"{name} stopped improving after step {int(steps[best_i])} ({at_best:.4g}): the last {stall} of {n} "
        f"evaluations ({share:.0%}) stayed within {lo:.4g}–{hi:.4g}."
    )
    return Finding("loss_plateau", summary, signals, kind="software")


def _rising(v: np.ndarray, best: float, best_i: int, noise: float, progress: float) -> bool:
    """Whether the (smoothed, lower-is-better) series ends well above its best: by more than
    its noise, a fifth of the progress made before the best and a fifth of the best itself."""
    tail = v[best_i + 1 :]
    if tail.size == 0:
        return False
    k = max(3, tail.size // 4)
    rise = float(np.median(tail[-k:])) - best
    return rise > max(4 * noise, 0.2 * progress, 0.2 * abs(best), 1e-12)
