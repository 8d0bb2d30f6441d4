"""Where a run's time went: the training window (first to last step), stage classification,
and CPU/GPU use over any interval from the resource samples."""

from __future__ import annotations

import re
from dataclasses import dataclass

from flightlog.diagnose.evidence import RunEvidence
from flightlog.models import StageSummary

__all__ = [
    "Window",
    "training_window",
    "ramp",
    "is_data_stage",
    "is_compute_stage",
    "is_runner_stage",
    "cpu_percent_between",
    "gpu_percent_between",
    "stage_in",
    "STEP_SERIES_MIN",
]

#: a metric needs this many points to mark training steps (one final score is not a loop)
STEP_SERIES_MIN = 3
_DATA = re.compile(
    r"data|load|fetch|read|batch|input|prefetch|decod|preprocess|augment|\bio\b|next|wait|queue|download|shuffle", re.I
)
_COMPUTE = re.compile(r"train|step|forward|backward|compute|optim|fit|model|update|infer|predict|epoch", re.I)
_RUNNER = re.compile(r"^attempt \d+$")


@dataclass(frozen=True)
class Window:
    start: float
    end: float
    source: str  # "metrics" | "stages"

    @property
    def duration(self) -> float:
        return max(0.0, self.end - self.start)


def ramp(x: float, x0: float, x1: float, w0: float, w1: float) -> float:
    """A weight rising linearly from ``w0`` at ``x0`` to ``w1`` at ``x1``, flat outside."""
    if x <= x0:
        return w0
    if x >= x1:
        return w1
    return w0 + (w1 - w0) * (x - x0) / (x1 - x0)


def is_runner_stage(name: str) -> bool:
    return bool(_RUNNER.match(name))


def is_data_stage(name: str) -> bool:
    return not is_runner_stage(name) and bool(_DATA.search(name)) and not _COMPUTE.fullmatch(name)


def is_compute_stage(name: str) -> bool:
    return not is_runner_stage(name) and not is_data_stage(name) and bool(_COMPUTE.search(name))


def training_window(ev: RunEvidence) -> Window | None:
    """From the first to the last training step: metric series with several points, else
    the spans of compute stages."""
    series = [m for m in ev.info.metrics.values() if m.count >= STEP_SERIES_MIN and m.first_time is not None]
    if series:
        start = min(m.first_time for m in series if m.first_time is not None)
        end = max(m.last_time for m in series if m.last_time is not None)
        # a step is logged after it ran: the first batch's own stages (a framework's
        # train_step, its data_loading) are training, not start-up
        batches = [
            s.first_start
            for s in ev.stages
            if s.count >= STEP_SERIES_MIN
            and s.first_start is not None
            and (is_compute_stage(s.name) or is_data_stage(s.name))
            and s.first_start <= start
        ]
        return Window(min([start, *batches]), end, "metrics")
    compute = [s for s in ev.stages if is_compute_stage(s.name) and s.count >= STEP_SERIES_MIN]
    if compute:
        starts = [s.first_start for s in compute if s.first_start is not None]
        ends = [s.last_end for s in compute if s.last_end is not None]
        if starts and ends:
            return Window(min(starts), max(ends), "stages")
    return None


def stage_in(stage: StageSummary, start: float, end: float) -> float:
    """Seconds of ``stage`` that fall inside [start, end] (from its kept spans, else its bounds)."""
    if stage.spans:
        kept = sum(s.duration for s in stage.spans)
        inside = sum(max(0.0, min(s.end, end) - max(s.start, start)) for s in stage.spans)
        # past the first spans only a sample is kept: scale what the sample shows to the total
        return inside * (stage.total / kept) if kept > 0 and len(stage.spans) < stage.count else inside
    if stage.first_start is None or stage.last_end is None:
        return 0.0
    overlap = max(0.0, min(stage.last_end, end) - max(stage.first_start, start))
    span = max(1e-9, stage.last_end - stage.first_start)
    return stage.total * min(1.0, overlap / span)


def cpu_percent_between(ev: RunEvidence, start: float, end: float) -> tuple[float | None, int]:
    """Average CPU of the tree over [start, end] in % of one core, and the samples it rests on.

    From the cumulative ``cpu_seconds`` of the samples nearest the interval when there are
    two; else the mean of the ``cpu_percent`` readings inside it."""
    pct, n = _rate_between(ev, "cpu_seconds", start, end)
    if pct is not None:
        return pct, n
    inside = [s for s in ev.resources if s.get("time") is not None and start <= s["time"] <= end]
    readings = [s["cpu_percent"] for s in inside if isinstance(s.get("cpu_percent"), (int, float))]
    if readings:
        return sum(readings) / len(readings), len(readings)
    return None, 0


def cpu_wait_percent_between(ev: RunEvidence, start: float, end: float) -> float | None:
    """How long the tree waited for a CPU over [start, end] (ready to run, the CPUs busy with
    other work), in % of one core as ``cpu_percent_between`` counts its use; None where the
    samples do not say (``cpu_wait_seconds``, docs/resources.md)."""
    return _rate_between(ev, "cpu_wait_seconds", start, end)[0]


def _rate_between(ev: RunEvidence, field: str, start: float, end: float) -> tuple[float | None, int]:
    """A cumulative seconds ``field`` of the samples as % of one core over [start, end], from
    the samples nearest the interval, and how many samples it rests on."""
    counted = [s for s in ev.resources if s.get("time") is not None and isinstance(s.get(field), (int, float))]
    if len(counted) < 2:
        return None, 0
    before = [s for s in counted if s["time"] <= start + 0.05]
    after = [s for s in counted if s["time"] >= start]
    a = before[-1] if before else after[0] if after else None
    later = [s for s in counted if a is not None and s["time"] > a["time"] and s["time"] <= end + 0.5]
    b = later[-1] if later else None
    if a is None or b is None or b["time"] - a["time"] < 0.2:
        return None, 0
    return max(0.0, 100.0 * (b[field] - a[field]) / (b["time"] - a["time"])), len(later) + 1


def gpu_percent_between(ev: RunEvidence, start: float, end: float) -> tuple[float | None, int]:
    """Average utilization of the busiest GPU over [start, end]; None without GPU samples."""
    values: list[float] = []
    for s in ev.resources:
        t = s.get("time")
        gpus = s.get("gpus") or []
        if t is None or not gpus or not start <= t <= end:
            continue
        util = [g.get("utilization_percent") for g in gpus if isinstance(g.get("utilization_percent"), (int, float))]
        if util:
            values.append(max(util))
    return (sum(values) / len(values), len(values)) if values else (None, 0)
