"""Per-run gauges in Prometheus text format: the last value of each metric of every running
run, so an existing Grafana board can plot training next to the cluster.

    flightlog_run_metric{project="vision",run="3f2a…",name="resnet",metric="loss"} 0.25
    flightlog_run_metric_step{project="vision",run="3f2a…",name="resnet",metric="loss"} 1200
    flightlog_run_duration_seconds{project="vision",run="3f2a…",name="resnet"} 812.4

Opt-in (``flightlog server --export-run-metrics``): every series is labelled by run, so the
number of series grows with the runs in flight. It is bounded twice: at most ``max_runs``
running runs (the newest) and ``max_metrics`` metrics per run. A run's series disappear when it
ends, which Prometheus treats as the series going stale.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Any

from flightlog.models import RunInfo
from flightlog.server.prometheus import _esc  # the label escaping of the server's own /metrics

__all__ = ["render_run_gauges", "running_runs", "MAX_RUNS", "MAX_METRICS"]

MAX_RUNS = 500
MAX_METRICS = 100


def running_runs(store: Any, project: str | None = None, max_runs: int = MAX_RUNS) -> list[RunInfo]:
    runs: list[RunInfo] = store.search_runs(
        project=project, filter="status = 'running'", order_by="-created", limit=max_runs
    )
    return runs


def render_run_gauges(runs: Sequence[RunInfo], *, now: float | None = None, max_metrics: int = MAX_METRICS) -> str:
    now = time.time() if now is None else now
    value_lines: list[str] = []
    step_lines: list[str] = []
    duration_lines: list[str] = []
    for run in runs:
        base = f'project="{_esc(run.project)}",run="{_esc(run.id)}",name="{_esc(run.name or "")}"'
        if run.started is not None:
            duration_lines.append(f"flightlog_run_duration_seconds{{{base}}} {max(0.0, now - run.started):.3f}")
        for metric, summary in sorted(run.metrics.items())[:max_metrics]:
            if summary.last is None:
                continue
            labels = f'{base},metric="{_esc(metric)}"'
            value_lines.append(f"flightlog_run_metric{{{labels}}} {_number(summary.last)}")
            if summary.last_step is not None:
                step_lines.append(f"flightlog_run_metric_step{{{labels}}} {summary.last_step}")
    lines = [
        "# HELP flightlog_run_metric The last value of a metric of a running run.",
        "# TYPE flightlog_run_metric gauge",
        *value_lines,
        "# HELP flightlog_run_metric_step The step of that last value.",
        "# TYPE flightlog_run_metric_step gauge",
        *step_lines,
        "# HELP flightlog_run_duration_seconds How long a running run has been running.",
        "# TYPE flightlog_run_duration_seconds gauge",
        *duration_lines,
    ]
    return "\n".join(lines) + "\n"


def _number(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))
