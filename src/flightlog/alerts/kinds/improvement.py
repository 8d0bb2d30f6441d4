"""``no_improvement``: a metric stopped getting better (early stopping's patience, as an alert).

    - name: val-loss-stalled
      kind: no_improvement
      metric: val_loss
      mode: min              # min: lower is better (default); max: higher is better
      patience: 5            # points (evaluations, epochs) without an improvement
      # patience_steps: 5000 # or: steps since the best value
      min_delta: 0.0         # an improvement must beat the best by more than this

Fires when the patience runs out; resolves when the metric improves again (or the run ends).
Non-finite values are ignored here (``non_finite`` is the rule for them).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from flightlog.alerts.delta import Column, Cycle, Needs, RunDelta
from flightlog.alerts.kinds.base import EvalEnv, Kind, run_labels
from flightlog.alerts.rules import Rule
from flightlog.alerts.schema import Fields
from flightlog.alerts.types import Signal
from flightlog.alerts.windows import Slots

__all__ = ["KIND", "NoImprovementSpec"]


@dataclass(frozen=True)
class NoImprovementSpec:
    metric: str
    mode: str = "min"
    patience: int | None = 5
    patience_steps: int | None = None
    min_delta: float = 0.0


def parse(f: Fields) -> NoImprovementSpec | None:
    metric = f.text("metric", required=True)
    mode = f.choice("mode", ("min", "max"), default="min") or "min"
    patience = f.integer("patience", minimum=1)
    steps = f.integer("patience_steps", minimum=1)
    if patience is not None and steps is not None:
        f.fail("patience_steps", "give patience (points) or patience_steps, not both")
    if patience is None and steps is None and not f.has("patience") and not f.has("patience_steps"):
        patience = 5
    min_delta = f.number("min_delta", default=0.0, minimum=0.0) or 0.0
    if metric is None:
        return None
    return NoImprovementSpec(metric, mode, patience, steps, min_delta)


class NoImprovementEvaluator:
    """Per rule: the best value, its step and the points since, per run, in arrays; a batch that
    neither beats the best nor runs out of patience costs one array operation for every run."""

    def __init__(self, rules: Sequence[Rule]) -> None:
        self.rules = list(rules)
        self.slots = Slots()

    def needs(self) -> Needs:
        return Needs(metrics=frozenset(r.spec.metric for r in self.rules))

    def forget(self, run_id: str) -> None:
        self.slots.release(run_id)

    def evaluate(self, cycle: Cycle, env: EvalEnv) -> list[Signal]:
        out: list[Signal] = []
        slots_of: dict[str, np.ndarray] = {}
        for rule in self.rules:
            spec: NoImprovementSpec = rule.spec
            column = cycle.metrics.get(spec.metric)
            if column is None or not len(column):
                continue
            mask = cycle.applies(column, rule.name)
            if not mask.any():
                continue
            slots = slots_of.get(spec.metric)
            if slots is None:
                slots = slots_of[spec.metric] = self.slots.lookup(
                    [(k[0], (("metric", spec.metric),)) for k in column.keys]
                )
            out.extend(self._rule(rule, cycle, column, slots, mask))
        return out

    def _rule(self, rule: Rule, cycle: Cycle, column: Column, slots: np.ndarray, mask: np.ndarray) -> list[Signal]:
        spec: NoImprovementSpec = rule.spec
        s = self.slots
        best, waited = s.array(f"best:{rule.name}"), s.array(f"waited:{rule.name}", 0, np.int64)
        best_step = s.array(f"best_step:{rule.name}", -1, np.int64)
        firing = s.array(f"firing:{rule.name}", 0, np.int8)
        values, starts = column.values, column.starts
        finite = np.isfinite(values)
        worst = np.inf if spec.mode == "min" else -np.inf
        clean = values if finite.all() else np.where(finite, values, worst)
        counts = np.add.reduceat(finite.astype(np.int64), starts[:-1])
        reduce = np.minimum if spec.mode == "min" else np.maximum
        top = reduce.reduceat(clean, starts[:-1])
        b = best[slots]
        with np.errstate(invalid="ignore"):
            # written as the per-point test is (best - v > min_delta), so that both agree to the last bit
            beaten = (b - top > spec.min_delta) if spec.mode == "min" else (top - b > spec.min_delta)
        if spec.patience_steps is not None:
            assert column.steps is not None
            last_steps = column.steps[starts[1:] - 1]
            runs_out = last_steps - best_step[slots] >= spec.patience_steps
        else:
            runs_out = waited[slots] + counts >= (spec.patience or 0)
        fresh = np.isnan(b)
        calm = firing[slots] == 0
        slow = mask & (fresh | beaten | (calm & runs_out)) & (counts > 0)
        quiet = mask & ~slow
        waited[slots[quiet]] += counts[quiet]
        if spec.min_delta == 0 and spec.patience is not None and slow.any():
            slow &= ~self._improved(
                column,
                slots,
                slow & calm & (fresh | beaten),
                clean,
                spec.mode,
                counts,
                top,
                b,
                fresh,
                spec.patience,
                best,
                best_step,
                waited,
            )
        out: list[Signal] = []
        for i in np.flatnonzero(slow).tolist():
            out.extend(self._points(rule, cycle, column, i, int(slots[i]), best, best_step, waited, firing))
        return out

    @staticmethod
    def _improved(
        column: Column,
        slots: np.ndarray,
        candidates: np.ndarray,
        clean: np.ndarray,
        mode: str,
        counts: np.ndarray,
        top: np.ndarray,
        b: np.ndarray,
        fresh: np.ndarray,
        patience: int,
        best: np.ndarray,
        best_step: np.ndarray,
        waited: np.ndarray,
    ) -> np.ndarray:
        """Segments that improved without any chance of running out of patience in between
        (at most ``patience`` points, all finite, min_delta 0), settled without a loop: the
        best is the segment's extreme, its first occurrence is the last improvement."""
        starts = column.starts
        sizes = np.diff(starts)
        ok = candidates & (counts == sizes) & (sizes <= patience)
        if not ok.any():
            return ok
        rank = np.arange(len(clean)) - np.repeat(starts[:-1], sizes)
        big = np.iinfo(np.int64).max
        arg = np.minimum.reduceat(np.where(clean == np.repeat(top, sizes), rank, big), starts[:-1])
        with np.errstate(invalid="ignore"):
            before = np.repeat(b, sizes)
            better = clean < before if mode == "min" else clean > before
            first = np.minimum.reduceat(np.where(better, rank, big), starts[:-1])
        ok &= fresh | (first < patience - waited[slots])
        idx = np.flatnonzero(ok)
        s = slots[idx]
        assert column.steps is not None
        best[s] = top[idx]
        best_step[s] = column.steps[starts[idx] + arg[idx]]
        waited[s] = sizes[idx] - 1 - arg[idx]
        return ok

    def _points(
        self,
        rule: Rule,
        cycle: Cycle,
        column: Column,
        i: int,
        slot: int,
        best: np.ndarray,
        best_step: np.ndarray,
        waited: np.ndarray,
        firing: np.ndarray,
    ) -> list[Signal]:
        spec: NoImprovementSpec = rule.spec
        times, values, steps = column.segment(i)
        assert steps is not None
        sign = 1.0 if spec.mode == "min" else -1.0
        delta = cycle.runs[column.keys[i][0]]
        out: list[Signal] = []
        for t, v, step in zip(times.tolist(), values.tolist(), steps.tolist(), strict=True):
            if not math.isfinite(v):
                continue
            if math.isnan(best[slot]):
                best[slot], best_step[slot], waited[slot] = v, step, 0
                continue
            if sign * (best[slot] - v) > spec.min_delta:
                best[slot], best_step[slot], waited[slot] = v, step, 0
                if firing[slot]:
                    firing[slot] = 0
                    out.append(
                        self._signal(rule, delta, "clear", t, v, step, slot, best, best_step, waited, "improved")
                    )
                continue
            waited[slot] += 1
            ran_out = (
                (step - best_step[slot] >= spec.patience_steps)
                if spec.patience_steps is not None
                else waited[slot] >= (spec.patience or 0)
            )
            if not firing[slot] and ran_out:
                firing[slot] = 1
                out.append(self._signal(rule, delta, "firing", t, v, step, slot, best, best_step, waited))
        return out

    def _signal(
        self,
        rule: Rule,
        delta: RunDelta,
        state: Any,
        at: float,
        value: float,
        step: int,
        slot: int,
        best: np.ndarray,
        best_step: np.ndarray,
        waited: np.ndarray,
        reason: str | None = None,
    ) -> Signal:
        spec: NoImprovementSpec = rule.spec
        b, bs, w = float(best[slot]), int(best_step[slot]), int(waited[slot])
        fields = {
            "metric": spec.metric,
            "mode": spec.mode,
            "best": b,
            "best_step": bs,
            "patience": spec.patience if spec.patience_steps is None else f"{spec.patience_steps} steps",
            "waited": w,
            "step": step,
        }
        return Signal(
            rule.name,
            run_labels(rule, delta.run, metric=spec.metric),
            state,
            at,
            value,
            run_id=delta.run.id,
            project=delta.run.project,
            fields=fields,
            reason=reason,
            evidence={"metric": spec.metric, "best": b, "best_step": bs, "points_since_best": w, "step": step},
        )


KIND = Kind(
    name="no_improvement",
    doc="a metric stopped improving (min or max mode, patience in points or steps, min_delta)",
    fields=("metric", "mode", "best", "best_step", "patience", "waited", "step"),
    default_summary="{metric} has not improved for {waited} evaluations on run {run.name} ({run.short_id}): "
    "best {best:.4g} at step {best_step}, now {value:.4g}",
    parse=parse,
    evaluators=lambda rules: [NoImprovementEvaluator(rules)] if rules else [],
)
