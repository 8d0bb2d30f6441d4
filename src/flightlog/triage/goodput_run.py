"""Where one run's time went: queued, starting up, stepping, stalled, idle on a GPU, checkpointing, retried.

A run's time runs from its submission (``queued``, when a scheduler said) to its end, and is
cut in order:

- **queued**: from submission to the first attempt's start;
- **retried**: every attempt before the last (its time and the back-off after it); a pipeline
  step's run that the pipeline later ran again is retried as a whole;
- of the last attempt, **startup** up to its first training step (the first point of its
  busiest metric series, else its first compute span), **wind_down** after its last step;
- the steps' window is **productive** less what its stage spans and resource samples show
  was not: **data_stall** (data stages: loading, fetching, waiting on a queue),
  **checkpoint** (stages named checkpoint / ckpt / save, wherever they fall), **gpu_idle**
  (samples where a GPU held the process's memory at under 5% utilization, beyond what data
  stalls and checkpoints already explain);
- a run that failed, was killed or crashed and was not retried threw its steps away:
  its productive time counts as **thrown_away**.

GPU-hours: each category's seconds times the GPUs the run held (every one that held its
memory in any sample), except the queue, when it held none.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from flightlog.diagnose.window import STEP_SERIES_MIN, is_compute_stage, is_data_stage, is_runner_stage, stage_in
from flightlog.models import RunInfo, StageSummary
from flightlog.statuses import ACTIVE_STATUSES, UNSUCCESSFUL_STATUSES

__all__ = ["CATEGORIES", "LABELS", "WASTE", "RunTime", "measure_run"]

#: in the order a run lives them
CATEGORIES = (
    "queued",
    "startup",
    "productive",
    "data_stall",
    "gpu_idle",
    "checkpoint",
    "wind_down",
    "retried",
    "thrown_away",
)
LABELS = {
    "queued": "queued",
    "startup": "startup",
    "productive": "productive",
    "data_stall": "data stalls",
    "gpu_idle": "idle GPU",
    "checkpoint": "checkpointing",
    "wind_down": "wind-down",
    "retried": "retried",
    "thrown_away": "thrown away",
}
#: what is not goodput
WASTE = tuple(c for c in CATEGORIES if c != "productive")
_CHECKPOINT = re.compile(r"checkpoint|ckpt|\bsave", re.I)
_IDLE_GPU_PERCENT = 5.0
_FAILED = frozenset(UNSUCCESSFUL_STATUSES)


@dataclass
class RunTime:
    """Seconds per category of one run, and the GPUs it held."""

    run: RunInfo
    seconds: dict[str, float] = field(default_factory=lambda: dict.fromkeys(CATEGORIES, 0.0))
    gpus: int = 0
    attempts: int = 1

    @property
    def total(self) -> float:
        return sum(self.seconds.values())

    @property
    def wasted(self) -> float:
        return sum(self.seconds[c] for c in WASTE)

    def gpu_seconds(self) -> dict[str, float]:
        return {c: (0.0 if c == "queued" else s * self.gpus) for c, s in self.seconds.items()}


def _end(info: RunInfo, samples: list[dict[str, Any]]) -> float | None:
    end = info.timeline.get("process_end") or info.ended
    if end is None and info.status in ACTIVE_STATUSES:
        end = info.updated
    if end is None and samples:
        end = samples[-1].get("time")
    return end


def _attempt_starts(stages: list[StageSummary]) -> list[float]:
    """When each attempt of the runner began (its ``attempt N`` spans), oldest first."""
    starts = []
    for stage in stages:
        if is_runner_stage(stage.name):
            if stage.spans:
                starts += [s.start for s in stage.spans]
            elif stage.first_start is not None:
                starts.append(stage.first_start)
    return sorted(starts)


def _window(client: Any, info: RunInfo, stages: list[StageSummary], since: float) -> tuple[float, float] | None:
    """The last attempt's training steps: its busiest metric's points after ``since``, else its compute spans."""
    series = [m for m in info.metrics.values() if m.count >= STEP_SERIES_MIN]
    if series:
        name = max(series, key=lambda m: m.count).name
        times = sorted(float(t) for t in client.metric_history(info, name).times.tolist() if t >= since - 1e-3)
        if len(times) >= 2:
            # a step is logged after it ran: the first step's own spans belong to the window
            batches = [
                s.start
                for st in stages
                if st.count >= STEP_SERIES_MIN and (is_compute_stage(st.name) or is_data_stage(st.name))
                for s in st.spans
                if since - 1e-3 <= s.start <= times[0]
            ]
            return min([times[0], *batches]), times[-1]
    spans = [s for st in stages if is_compute_stage(st.name) for s in st.spans if s.start >= since - 1e-3]
    if spans:
        return min(s.start for s in spans), max(s.end for s in spans)
    return None


def _gpu_idle(samples: list[dict[str, Any]], start: float, end: float) -> tuple[float, int]:
    """Seconds in [start, end] a GPU held the process's memory while nearly idle; the GPUs held."""
    idle, held = 0.0, set[Any]()
    timed = [s for s in samples if isinstance(s.get("time"), (int, float))]
    for sample, after in zip(timed, timed[1:], strict=False):
        gpus = [g for g in sample.get("gpus") or [] if (g.get("process_memory_bytes") or 0) > 0]
        held.update(g.get("index") for g in gpus)
        lo, hi = max(start, sample["time"]), min(end, after["time"])
        if hi <= lo or not gpus:
            continue
        if all((g.get("utilization_percent") or 0.0) < _IDLE_GPU_PERCENT for g in gpus):
            idle += hi - lo
    for sample in timed[-1:]:
        held.update(g.get("index") for g in sample.get("gpus") or [] if (g.get("process_memory_bytes") or 0) > 0)
    return idle, len(held)


def measure_run(client: Any, info: RunInfo, *, superseded: bool = False) -> RunTime:
    """The time of ``info`` by category; ``superseded``: a pipeline ran this step again after it."""
    out = RunTime(info)
    samples = sorted(client.resources(info), key=lambda s: s.get("time") or 0.0)
    stages = client.stages(info)
    starts = _attempt_starts(stages)
    first = starts[0] if starts else info.timeline.get("process_start") or info.started
    end = _end(info, samples)
    out.attempts = max(1, len(starts), info.attempt)
    if first is None or end is None or end <= first:
        return out
    if info.queued is not None and info.queued < first:
        out.seconds["queued"] = first - info.queued
    _, out.gpus = _gpu_idle(samples, first, end)
    if superseded:
        out.seconds["retried"] = end - first
        return out
    last = starts[-1] if starts else first
    out.seconds["retried"] = max(0.0, last - first)
    window = _window(client, info, stages, last)
    w_start, w_end = window if window is not None else (last, end)
    w_start, w_end = max(last, w_start), min(end, max(w_start, w_end))
    out.seconds["startup"] = w_start - last
    out.seconds["wind_down"] = max(0.0, end - w_end)
    steps = w_end - w_start
    checkpoint_in, checkpoint_tail, stall = 0.0, 0.0, 0.0
    for stage in stages:
        if is_runner_stage(stage.name):
            continue
        if _CHECKPOINT.search(stage.name):
            checkpoint_in += stage_in(stage, w_start, w_end)
            checkpoint_tail += stage_in(stage, w_end, end)
        elif is_data_stage(stage.name):
            stall += stage_in(stage, w_start, w_end)
    checkpoint_tail = min(checkpoint_tail, out.seconds["wind_down"])
    out.seconds["wind_down"] -= checkpoint_tail
    idle, _ = _gpu_idle(samples, w_start, w_end)
    stall = min(stall, steps)
    checkpoint_in = min(checkpoint_in, steps - stall)
    idle = min(max(0.0, idle - stall - checkpoint_in), steps - stall - checkpoint_in)
    out.seconds["data_stall"] = stall
    out.seconds["checkpoint"] = checkpoint_in + checkpoint_tail
    out.seconds["gpu_idle"] = idle
    productive = max(0.0, steps - stall - checkpoint_in - idle)
    if info.status in _FAILED:
        out.seconds["thrown_away"] = productive
    else:
        out.seconds["productive"] = productive
    return out
