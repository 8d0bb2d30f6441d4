"""``memory_leak``: a steady upward memory trend against steps, with the projected time to the
memory limit.

The trend is a Theil–Sen fit (the median of pairwise slopes: a few spikes or a garbage
collection do not move it) of the tree's RSS — and of the GPU memory the run holds, when there
is any — over the training window. A leak needs a positive slope that is steady (Kendall's
tau, R² of a least-squares line) and large (growth in bytes and relative to the start).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from flightlog.diagnose.evidence import RunEvidence
from flightlog.diagnose.findings import Finding
from flightlog.diagnose.signals import Signal
from flightlog.diagnose.window import ramp, training_window
from flightlog.statuses import ERROR_STATUSES
from flightlog.timefmt import format_duration, format_size

__all__ = ["analyze_memory", "Trend", "fit_trend", "peak_memory", "memory_figure", "MemoryFigure"]

_MAX_POINTS = 400
#: the weight a trend keeps when the run recorded no training steps to measure it against
_NO_STEPS = 0.5
#: the weight a trend keeps when it spans less than ``leak_min_seconds``
_SHORT = 0.5
#: a run that failed before its first step is judged for a leak only when it lived this long
_FAILED_AT_STARTUP_S = 60.0
#: the share of the overall rate each half of the window must rise at to be one steady growth
_HALF_SHARE = 0.25


@dataclass(frozen=True)
class Trend:
    slope: float  # units per second
    intercept: float
    tau: float  # Kendall's tau of value against time, -1..1
    r2: float
    n: int
    start_value: float
    end_value: float


def fit_trend(t: np.ndarray, y: np.ndarray) -> Trend | None:
    """Theil–Sen slope, Kendall's tau and least-squares R² of ``y`` against ``t``."""
    mask = np.isfinite(t) & np.isfinite(y)
    t, y = t[mask].astype(float), y[mask].astype(float)
    if t.size < 3 or np.ptp(t) <= 0:
        return None
    if t.size > _MAX_POINTS:  # pairwise slopes are O(n²): thin evenly
        idx = np.linspace(0, t.size - 1, _MAX_POINTS).astype(int)
        t, y = t[idx], y[idx]
    i, j = np.triu_indices(t.size, k=1)
    dt, dy = t[j] - t[i], y[j] - y[i]
    keep = dt > 0
    slopes = dy[keep] / dt[keep]
    if slopes.size == 0:
        return None
    slope = float(np.median(slopes))
    intercept = float(np.median(y - slope * t))
    signs = np.sign(dy[keep])
    tau = float(signs.sum() / signs.size)
    a, b = np.polyfit(t, y, 1)
    residual = y - (a * t + b)
    total = float(((y - y.mean()) ** 2).sum())
    r2 = 1.0 - float((residual**2).sum()) / total if total > 0 else 0.0
    head = float(np.median(y[: max(1, y.size // 10)]))
    tail = float(np.median(y[-max(1, y.size // 10) :]))
    return Trend(slope, intercept, tau, r2, int(t.size), head, tail)


@dataclass(frozen=True)
class MemoryFigure:
    """How much memory a run took at most, against the limit it ran under: the one figure an
    out-of-memory kill is quoted with, in its diagnosis and in triage's group (CLI, JSON, UI)."""

    peak_bytes: int | None
    limit_bytes: int | None

    def text(self) -> str:
        if self.peak_bytes and self.limit_bytes:
            return f"memory peaked at {format_size(self.peak_bytes)} against a limit of {format_size(self.limit_bytes)}"
        if self.limit_bytes:
            return f"the limit was {format_size(self.limit_bytes)}"
        if self.peak_bytes:
            return f"memory peaked at {format_size(self.peak_bytes)} (no limit recorded)"
        return "no memory figures recorded"


def memory_figure(ev: RunEvidence) -> MemoryFigure:
    """The run's memory peak (its samples, its resource summaries, the cgroup's own peak when
    the runner read one) and its limit (:attr:`RunEvidence.memory_limit`)."""
    peak, _ = peak_memory(ev)
    oom_peak = ((ev.info.failure or {}).get("oom") or {}).get("peak_bytes")
    if isinstance(oom_peak, (int, float)) and oom_peak > 0:
        peak = max(peak or 0, int(oom_peak))
    return MemoryFigure(peak or None, ev.memory_limit)


def peak_memory(ev: RunEvidence) -> tuple[int | None, float | None]:
    """``(bytes, time)``: the most memory the run's tree (or its limited cgroup) held."""
    best, at = None, None
    for s in ev.resources:
        for key in ("rss_bytes", "cgroup_memory_usage"):
            v = s.get(key)
            if key == "cgroup_memory_usage" and not s.get("cgroup_memory_limit"):
                continue  # the usage of an unlimited cgroup is the whole host's business
            if isinstance(v, (int, float)) and (best is None or v > best):
                best, at = int(v), s.get("time")
    for summary in ev.resource_summaries:
        for key in ("rss_bytes_max", "cgroup_memory_max"):
            v = summary.get(key)
            if key == "cgroup_memory_max" and not summary.get("cgroup_memory_limit"):
                continue
            if isinstance(v, (int, float)) and (best is None or v > best):
                best, at = int(v), summary.get("end")
    return best, at


def analyze_memory(ev: RunEvidence) -> list[Finding]:
    out = []
    for label, series in (("RSS", _rss(ev)), ("GPU memory", _gpu_memory(ev))):
        finding = _leak(ev, label, *series)
        if finding is not None:
            out.append(finding)
    return out


def _rss(ev: RunEvidence) -> tuple[np.ndarray, np.ndarray]:
    rows = [
        (s["time"], s["rss_bytes"])
        for s in ev.resources
        if isinstance(s.get("time"), (int, float)) and isinstance(s.get("rss_bytes"), (int, float))
    ]
    arr = np.array(rows, dtype=float).reshape(-1, 2)
    return arr[:, 0], arr[:, 1]


def _gpu_memory(ev: RunEvidence) -> tuple[np.ndarray, np.ndarray]:
    rows = []
    for s in ev.resources:
        gpus = s.get("gpus") or []
        used = [g.get("process_memory_bytes") for g in gpus if isinstance(g.get("process_memory_bytes"), (int, float))]
        if isinstance(s.get("time"), (int, float)) and used and sum(used) > 0:
            rows.append((s["time"], float(sum(used))))
    arr = np.array(rows, dtype=float).reshape(-1, 2)
    return arr[:, 0], arr[:, 1]


def _leak(ev: RunEvidence, label: str, t: np.ndarray, y: np.ndarray) -> Finding | None:
    th = ev.thresholds
    window = training_window(ev)
    stepped = spoke = False
    if window is not None and window.duration > 0:
        inside = (t >= window.start - 0.05) & (t <= window.end + 0.05)
        if inside.sum() < th.leak_min_samples:
            # steps were recorded, over too short a time for the sampler to follow: what grew
            # before the first one is start-up (imports, data read in), loaded once, and what
            # grew after the last one is not training; a leak grows with the steps
            return None
        t, y, stepped = t[inside], y[inside], True
    else:
        before = t.size
        t, y = _after_start_up(ev, t, y)
        spoke = t.size < before
    if t.size < th.leak_min_samples:
        return None
    if not stepped and ev.info.status in ERROR_STATUSES and float(t[-1] - t[0]) < _FAILED_AT_STARTUP_S:
        # it failed before its first step: the memory it gained is its imports and set-up
        # (torch alone is hundreds of MiB), loaded once; a leak needs a process that lived
        return None
    trend = fit_trend(t, y)
    if trend is None or trend.slope <= 0:
        return None
    span = float(t[-1] - t[0])
    growth = trend.end_value - trend.start_value
    relative = growth / max(1.0, trend.start_value)
    if growth < th.leak_min_growth_bytes or relative < th.leak_min_growth or trend.tau < 0.5:
        return None
    if not _grows_throughout(t, y, trend):
        return None
    signals = [
        Signal(
            "memory_leak",
            ramp(trend.tau, 0.5, 0.95, 0.2, 0.45),
            "a_steady_upward_trend",
            "resources",
            f"{label} rose from {format_size(trend.start_value)} to {format_size(trend.end_value)} over "
            f"{format_duration(span)}: {format_size(trend.slope)}/s (Theil–Sen), Kendall's tau {trend.tau:.2f}, "
            f"R² {trend.r2:.2f}, {trend.n} samples",
            float(t[0]),
        ),
    ]
    if trend.r2 >= th.leak_min_r2:
        signals.append(
            Signal(
                "memory_leak",
                ramp(trend.r2, th.leak_min_r2, 0.99, 0.15, 0.3),
                "a_straight_line_fit",
                "resources",
                f"a straight line explains {trend.r2:.0%} of the variation: growth is steady, not a one-off load",
                float(t[-1]),
            )
        )
    signals.append(
        Signal(
            "memory_leak",
            ramp(relative, th.leak_min_growth, 2.0, 0.1, 0.3),
            "size_of_the_growth",
            "resources",
            f"{label} grew by {format_size(growth)} ({relative:+.0%}) during training",
            float(t[-1]),
        )
    )
    per_step = _per_step(ev, trend.slope)
    if per_step is not None:
        signals.append(
            Signal(
                "memory_leak",
                0.0,
                "growth_per_step",
                "metrics",
                f"about {format_size(per_step)} more per training step",
                float(t[-1]),
            )
        )
    limit = ev.memory_limit if label == "RSS" else None
    projection = ""
    if limit and trend.end_value < limit:
        seconds = (limit - trend.end_value) / trend.slope
        projection = f"; at this rate it reaches the {format_size(limit)} limit in {format_duration(seconds)}"
        if per_step:
            projection += f" (about {int((limit - trend.end_value) / per_step):,} more steps)"
        signals.append(
            Signal(
                "memory_leak",
                ramp(seconds, 3600 * 24, 60, 0.05, 0.25),
                "time_to_the_memory_limit",
                "resources",
                f"projected to reach the {format_size(limit)} limit in {format_duration(seconds)}",
                float(t[-1]),
            )
        )
    elif limit and trend.end_value >= 0.9 * limit:
        projection = f"; it reached the {format_size(limit)} limit"
        signals.append(
            Signal(
                "memory_leak",
                0.25,
                "reached_the_memory_limit",
                "resources",
                f"memory reached {format_size(trend.end_value)} of the {format_size(limit)} limit",
                float(t[-1]),
            )
        )
    step_text = f", about {format_size(per_step)} per step" if per_step else ""
    summary = (
        f"{label} grows steadily with training: {format_size(trend.start_value)} → {format_size(trend.end_value)} "
        f"in {format_duration(span)}{step_text}{projection}."
    )
    if not stepped:
        # no training steps to grow with: the trend spans the whole run, imports and loading
        # included (a slow start on a busy machine looks like steady growth), so it counts half
        signals = [Signal(x.category, x.weight * _NO_STEPS, x.id, x.source, x.detail, x.at) for x in signals]
        summary = (
            f"{label} grew steadily over the whole run: {format_size(trend.start_value)} → "
            f"{format_size(trend.end_value)} in {format_duration(span)}{projection} (no training steps were "
            + (
                "recorded: judged from its first output on)."
                if spoke
                else "recorded, so start-up is part of the trend)."
            )
        )
    elif span < th.leak_min_seconds:
        # a few samples over a second or two: a load that the sampler caught half-way looks
        # like a steady line; it takes a longer trend to be the lead
        signals = [Signal(x.category, x.weight * _SHORT, x.id, x.source, x.detail, x.at) for x in signals]
        summary = summary[:-1] + f" (only {format_duration(span)} of samples: too short to be sure)."
    return Finding("memory_leak", summary, signals)


def _after_start_up(ev: RunEvidence, t: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The samples from the workload's first line of output on, for a run that recorded no
    training steps to window its trend with.

    Until a script first speaks it is importing and loading (torch and Transformers are
    hundreds of MiB, read in once); on a busy machine that start-up stretches over many
    seconds and many samples and reads as steady growth over the whole run (a healthy
    inference script: a hint of 0.42 under load, nothing at load 3). What grew before the
    first line is start-up, not a trend; a run that never printed keeps its whole life."""
    began = ev.info.timeline.get("first_output")
    if not isinstance(began, (int, float)) or t.size == 0 or began <= t[0]:
        return t, y
    after = t >= began
    return t[after], y[after]


def _grows_throughout(t: np.ndarray, y: np.ndarray, trend: Trend) -> bool:
    """A leak keeps growing: each half of the window rises at a fair share of the overall
    rate. A one-off load (data read in, a cache warmed, a model moved) rises in one half and
    is flat in the other, however straight a line through both looks."""
    middle = (t[0] + t[-1]) / 2
    for half in (t <= middle, t >= middle):
        part = fit_trend(t[half], y[half])
        if part is None or part.slope < _HALF_SHARE * trend.slope:
            return False
    return True


def _per_step(ev: RunEvidence, slope: float) -> float | None:
    series = [
        m
        for m in ev.info.metrics.values()
        if m.count >= 5 and m.first_time and m.last_time and m.last_time > m.first_time
    ]
    if not series:
        return None
    m = max(series, key=lambda s: s.count)
    steps = (m.last_step or 0) - (m.first_step or 0)
    if steps <= 0 or m.last_time is None or m.first_time is None:
        return None
    rate = steps / (m.last_time - m.first_time)
    return slope / rate if rate > 0 else None
