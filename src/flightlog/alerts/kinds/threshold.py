"""``threshold``: a metric or resource series compared with a value, held for a while.

    - name: gpu-idle
      kind: threshold
      series: gpu.utilization     # a resource series (docs/alerting.md), or metric: NAME
      op: "<"
      value: 10
      aggregate: mean             # last (default) | mean | min | max over the window
      window: 5m                  # a duration, or "20 points"
      for: 30m                    # pending until the condition held this long

Evaluated at each evaluation on the newest point of each series; rules that share a series,
an aggregate and a window share one incremental window.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from flightlog.alerts.delta import Column, Cycle, Labels, Needs, RunDelta
from flightlog.alerts.kinds.base import CMP, NP_CMP, EvalEnv, Evaluator, Kind, run_labels
from flightlog.alerts.rules import Rule
from flightlog.alerts.schema import Fields
from flightlog.alerts.series import RESOURCE_SERIES, is_resource_series
from flightlog.alerts.types import Signal
from flightlog.alerts.windows import AGGREGATES, RingWindows, Slots, last_finite
from flightlog.errors import InvalidInput
from flightlog.timefmt import format_duration, parse_duration

__all__ = ["KIND", "ThresholdSpec"]

_POINTS = re.compile(r"^\s*(\d+)\s*(points?|steps?|samples?)\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class ThresholdSpec:
    series: str
    source: str  # metric | resource
    op: str
    value: float
    aggregate: str = "last"
    window_seconds: float | None = None
    window_points: int | None = None
    for_seconds: float = 0.0

    @property
    def window_text(self) -> str | None:
        if self.window_points is not None:
            return f"{self.window_points} points"
        return None if self.window_seconds is None else format_duration(self.window_seconds)


def _window(value: Any) -> tuple[float | None, int | None]:
    if isinstance(value, str) and (m := _POINTS.match(value)):
        n = int(m.group(1))
        if n < 1:
            raise InvalidInput("a window needs at least 1 point")
        return None, n
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise InvalidInput('must be a duration (5m) or a number of points ("20 points")')
    seconds = parse_duration(str(value), what="window")
    if seconds <= 0:
        raise InvalidInput("must be longer than 0s")
    return seconds, None


def parse(f: Fields) -> ThresholdSpec | None:
    series, metric = f.text("series"), f.text("metric")
    if series and metric:
        f.fail("metric", "give series or metric, not both")
    name = metric or series
    if name is None:
        f.fail(
            (),
            f"needs the field 'series' (a resource series: {', '.join(RESOURCE_SERIES)}; or a metric name) or 'metric'",
        )
    source = "resource" if series and is_resource_series(series) else "metric"
    op = f.choice("op", tuple(CMP), required=True)
    value = f.number("value", required=True)
    aggregate = f.choice("aggregate", AGGREGATES, default="last") or "last"
    window: tuple[float | None, int | None] = f.check("window", _window) or (None, None)
    seconds, points = window
    if aggregate != "last" and seconds is None and points is None and not f.has("window"):
        f.fail((), f'aggregate {aggregate} needs a window: a duration (window: 5m) or points (window: "20 points")')
    if aggregate == "last" and f.has("window"):
        f.fail("window", "a window needs an aggregate: mean, min or max (last looks at the newest point only)")
    for_seconds = f.duration("for", default=0.0, allow_zero=True) or 0.0
    if name is None or op is None or value is None:
        return None
    return ThresholdSpec(name, source, op, value, aggregate, seconds, points, for_seconds)


_CLEAR, _PENDING, _FIRING = 0, 1, 2


class ThresholdEvaluator:
    """Rules sharing one (series, aggregate, window): one window per run and series labels,
    updated for every run at once; Python runs only where a rule's state changes."""

    def __init__(self, rules: Sequence[Rule]) -> None:
        self.rules = list(rules)
        self.spec: ThresholdSpec = rules[0].spec
        self.slots = Slots()
        spec = self.spec
        self.window = (
            None
            if spec.aggregate == "last"
            else RingWindows(self.slots, "w", spec.aggregate, seconds=spec.window_seconds, points=spec.window_points)
        )

    def needs(self) -> Needs:
        if self.spec.source == "resource":
            return Needs(resources=frozenset({self.spec.series}))
        return Needs(metrics=frozenset({self.spec.series}))

    def forget(self, run_id: str) -> None:
        self.slots.release(run_id)

    def evaluate(self, cycle: Cycle, env: EvalEnv) -> list[Signal]:
        spec = self.spec
        column = (cycle.resources if spec.source == "resource" else cycle.metrics).get(spec.series)
        if column is None or not len(column):
            return []
        masks = [(rule, cycle.applies(column, rule.name)) for rule in self.rules]
        if not any(m.any() for _, m in masks):
            return []
        slots = self.slots.lookup(column.keys)
        newest = column.last_times()
        agg = last_finite(column)[0] if self.window is None else self.window.update(slots, column)
        known = ~np.isnan(agg)
        out: list[Signal] = []
        for rule, mask in masks:
            state = self.slots.array(f"state:{rule.name}", _CLEAR, np.int8)
            since = self.slots.array(f"since:{rule.name}")
            st = state[slots]
            with np.errstate(invalid="ignore"):
                holds = NP_CMP[rule.spec.op](agg, rule.spec.value) & known & mask
            due = (st == _PENDING) & (newest - since[slots] >= rule.spec.for_seconds)
            act = (holds & ((st == _CLEAR) | due)) | (~holds & (st != _CLEAR) & (known | ~mask))
            for i in np.flatnonzero(act).tolist():
                out.extend(
                    self._step(rule, cycle, column, i, int(slots[i]), bool(holds[i]), float(agg[i]), state, since)
                )
        return out

    def _step(
        self,
        rule: Rule,
        cycle: Cycle,
        column: Column,
        i: int,
        slot: int,
        holds: bool,
        agg: float,
        state: np.ndarray,
        since: np.ndarray,
    ) -> list[Signal]:
        spec: ThresholdSpec = rule.spec
        times, values, steps = column.segment(i)
        t = float(times[-1])
        test = CMP[spec.op]
        run_id, labels = column.keys[i]
        delta = cycle.runs[run_id]
        extra: dict[str, Any] = {} if steps is None else {"step": int(steps[-1])}
        if not holds:
            at = _first(times, values, lambda v: not test(v, spec.value)) if spec.aggregate == "last" else t
            state[slot] = _CLEAR
            return [self._signal(rule, delta, labels, "clear", at, agg, float(since[slot]), extra, "condition_cleared")]
        out: list[Signal] = []
        if state[slot] == _CLEAR:
            onset = _onset(times, values, lambda v: test(v, spec.value)) if spec.aggregate == "last" else t
            since[slot] = onset
            state[slot] = _PENDING
            if spec.for_seconds > 0:
                out.append(self._signal(rule, delta, labels, "pending", onset, agg, onset, extra))
        began = float(since[slot])
        if state[slot] == _PENDING and t - began >= spec.for_seconds:
            state[slot] = _FIRING
            out.append(
                self._signal(rule, delta, labels, "firing", began if spec.for_seconds == 0 else t, agg, began, extra)
            )
        return out

    def _signal(
        self,
        rule: Rule,
        delta: RunDelta,
        labels: Labels,
        state: Any,
        at: float,
        value: float,
        since: float,
        extra: dict[str, Any],
        reason: str | None = None,
    ) -> Signal:
        spec: ThresholdSpec = rule.spec
        fields = {
            "threshold": spec.value,
            "op": spec.op,
            "series": spec.series,
            "aggregate": spec.aggregate,
            "window": spec.window_text,
            "for": format_duration(spec.for_seconds) if spec.for_seconds else "0s",
            **extra,
        }
        return Signal(
            rule.name,
            run_labels(rule, delta.run, **dict(labels)),
            state,
            at,
            value,
            since=since,
            run_id=delta.run.id,
            project=delta.run.project,
            fields=fields,
            reason=reason,
            evidence={
                "series": spec.series,
                "aggregate": spec.aggregate,
                "value": value,
                "threshold": f"{spec.op} {spec.value:g}",
                **dict(labels),
            },
        )


def _onset(times: Any, values: Any, holds: Any) -> float:
    """When the condition began to hold without a break up to the newest point."""
    i = len(values) - 1
    while i > 0 and holds(values[i - 1]):
        i -= 1
    return float(times[i])


def _first(times: Any, values: Any, test: Any) -> float:
    for t, v in zip(times.tolist(), values.tolist(), strict=True):
        if test(v):
            return float(t)
    return float(times[-1])


def _evaluators(rules: Sequence[Rule]) -> list[Evaluator]:
    groups: dict[tuple[Any, ...], list[Rule]] = {}
    for rule in rules:
        s: ThresholdSpec = rule.spec
        groups.setdefault((s.source, s.series, s.aggregate, s.window_seconds, s.window_points), []).append(rule)
    return [ThresholdEvaluator(group) for group in groups.values()]


KIND = Kind(
    name="threshold",
    doc="a metric or resource series compared with a value (window aggregate, for:)",
    fields=("threshold", "op", "series", "aggregate", "window", "for", "step"),
    default_summary="{series} {aggregate} is {value:.4g} ({op} {threshold}) on run {run.name} ({run.short_id})",
    parse=parse,
    evaluators=_evaluators,
)
