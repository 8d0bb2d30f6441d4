"""``flightlog alerts test FILE --run RUN``: what the rules would have done on a past run.

The run's recorded evidence is replayed through the same engine as live evaluation, one
evaluation every ``settings.interval`` of the run's own time (at most 20,000 evaluations; the
step grows for longer runs), the last one at its end. Alerts are kept in memory: a test never
touches the real alert history and never notifies.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from flightlog.alerts.config import AlertConfig
from flightlog.alerts.delta import ColumnBuilder, Cycle, Needs, RunDelta
from flightlog.alerts.engine import AlertEngine
from flightlog.alerts.lookup import Lookup
from flightlog.alerts.series import SampleTable, fields_of, resource_columns
from flightlog.alerts.stores.memory import MemoryAlertStore
from flightlog.alerts.types import Alert, json_number
from flightlog.models import RunInfo
from flightlog.timefmt import iso

__all__ = ["replay_run", "ReplayResult", "MAX_EVALUATIONS"]

MAX_EVALUATIONS = 20_000


@dataclass
class ReplayResult:
    run: RunInfo
    rules: list[str]
    alerts: list[Alert]
    events: list[dict[str, Any]]
    evaluations: int
    interval: float
    errors: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "run": self.run.id,
            "project": self.run.project,
            "name": self.run.name,
            "status": self.run.status,
            "rules": self.rules,
            "evaluations": self.evaluations,
            "interval": self.interval,
            "alerts": [_alert(a) for a in self.alerts],
            "events": self.events,
            "errors": self.errors,
        }


def _alert(a: Alert) -> dict[str, Any]:
    return {
        "rule": a.rule,
        "kind": a.kind,
        "severity": a.severity,
        "state": a.state,
        "labels": a.labels,
        "pending_at": iso(a.active_since),
        "fired_at": iso(a.fired_at),
        "resolved_at": iso(a.resolved_at),
        "resolved_reason": a.resolved_reason,
        "value": json_number(a.value),
        "summary": a.summary,
        "evidence": a.evidence,
    }


class _NoFeed:
    def poll(self, now: float, needs_for: Any, wanted: Any = None) -> Cycle:
        return Cycle()

    def close(self) -> None:
        pass


def replay_run(
    client: Any, config: AlertConfig, run_ref: str, *, now: float | None = None, interval: float | None = None
) -> ReplayResult:
    run = client.run(run_ref)
    now = time.time() if now is None else now
    store = MemoryAlertStore()
    errors: list[str] = []
    lookup = Lookup(client.store, diagnose=client.diagnose, cache_seconds=0.0)
    engine = AlertEngine(config, _NoFeed(), store, lookup, None, replay=True, on_error=errors.append, load_run=False)
    rules, needs = engine.scope(run)
    start = run.started or run.created or now
    end = run.ended if run.is_finished and run.ended is not None else now
    every = interval if interval is not None else config.settings.interval
    interval = max(every, (end - start) / MAX_EVALUATIONS if end > start else 0.0)
    ticks = max(1, math.ceil((end - start) / interval)) if interval > 0 else 1
    sources = _Sources(client, run, needs) if rules else None
    live = dataclasses.replace(run, status="running", ended=None, end_reason=None, exit_code=None, signal=None)
    for k in range(1, ticks + 1):
        t = end if k == ticks else start + k * interval
        final = k == ticks and run.is_finished
        delta = RunDelta(run if final else live, frozenset(), finished=final)
        cycle = Cycle(runs={run.id: delta})
        if sources is not None:
            sources.fill(cycle, delta, t)
        engine.cycle(now=t, data=cycle)
    alerts = sorted(store.alerts(), key=lambda a: (a.fired_at or a.active_since or 0.0, a.rule))
    return ReplayResult(run, sorted(rules), alerts, store.events(), ticks, interval, errors)


class _Sources:
    """The run's points, cut into the slices each evaluation would have seen."""

    def __init__(self, client: Any, run: RunInfo, needs: Needs) -> None:
        self.run_id = run.id
        self.metrics: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self.cursor: dict[str, int] = {}
        names = list(run.metrics) if needs.all_metrics else [n for n in needs.metrics if n in run.metrics]
        for name in names:
            h = client.metric_history(run.id, name)
            order = np.argsort(h.times, kind="stable")
            self.metrics[name] = (h.steps[order], h.times[order], h.values[order])
            self.cursor[name] = 0
        self.names = sorted(needs.resources)
        self.host_fields, self.gpu_fields = fields_of(self.names)
        self.resources: dict[str, list[tuple[Any, np.ndarray, np.ndarray]]] = {}
        if self.names:
            samples = sorted(client.resources(run.id), key=lambda s: s.get("time") or 0.0)
            table = SampleTable.from_samples(samples, run.id, self.host_fields, self.gpu_fields)
            for name, column in resource_columns(self.names, table).items():
                self.resources[name] = [(key, *column.segment(i)[:2]) for i, key in enumerate(column.keys)]
        self.res_cursor = {(name, k): 0 for name, segs in self.resources.items() for k in range(len(segs))}
        self.logs: list[float] = sorted(e.time for e in client.logs(run.id)) if needs.activity else []
        self.log_at = 0
        heartbeat = run.timeline.get("heartbeat")
        self.heartbeat = float(heartbeat) if isinstance(heartbeat, (int, float)) else None

    def fill(self, cycle: Cycle, delta: RunDelta, t: float) -> None:
        for name, (steps, times, values) in self.metrics.items():
            i = self.cursor[name]
            j = int(np.searchsorted(times, t, side="right"))
            if j > i:
                b = ColumnBuilder()
                b.add((self.run_id, ()), times[i:j], values[i:j], steps[i:j])
                cycle.metrics[name] = b.build(with_steps=True)
                self.cursor[name] = j
        for name, segments in self.resources.items():
            b = ColumnBuilder()
            for k, (key, times, values) in enumerate(segments):
                i = self.res_cursor[(name, k)]
                j = int(np.searchsorted(times, t, side="right"))
                if j > i:
                    b.add(key, times[i:j], values[i:j])
                    self.res_cursor[(name, k)] = j
            if b.parts:
                cycle.resources[name] = b.build(with_steps=False)
        j = self.log_at
        while j < len(self.logs) and self.logs[j] <= t:
            j += 1
        if j > self.log_at:
            delta.last_log = self.logs[j - 1]
        self.log_at = j
        if self.heartbeat is not None and self.heartbeat <= t:
            delta.heartbeat = self.heartbeat
