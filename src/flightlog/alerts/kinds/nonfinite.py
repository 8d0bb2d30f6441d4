"""``non_finite``: a metric became NaN or infinite.

    - name: loss-nan
      kind: non_finite
      metric: loss            # a name, a glob (val/*), or a list; default every metric
      severity: critical

Fires once per run and metric, at the first non-finite point; it stays firing until the run
ends (a NaN loss rarely heals).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from flightlog.alerts.delta import Cycle, Needs
from flightlog.alerts.kinds.base import EvalEnv, Kind, run_labels
from flightlog.alerts.rules import Rule
from flightlog.alerts.schema import Fields
from flightlog.alerts.types import Signal

__all__ = ["KIND", "NonFiniteSpec"]

_GLOB = set("*?[")


@dataclass(frozen=True)
class NonFiniteSpec:
    metrics: tuple[str, ...] = ("*",)

    def covers(self, name: str) -> bool:
        return any(p == name or (_GLOB & set(p) and fnmatch.fnmatchcase(name, p)) for p in self.metrics)

    @property
    def exact(self) -> frozenset[str] | None:
        """The metric names, when no pattern is a glob."""
        if any(_GLOB & set(p) for p in self.metrics):
            return None
        return frozenset(self.metrics)


def parse(f: Fields) -> NonFiniteSpec | None:
    if f.has("metric") and f.has("metrics"):
        f.fail("metrics", "give metric or metrics, not both")
    names = f.text_list("metric") or f.text_list("metrics") or ["*"]
    return NonFiniteSpec(tuple(names))


class NonFiniteEvaluator:
    def __init__(self, rules: Sequence[Rule]) -> None:
        self.rules = list(rules)
        self._fired: set[tuple[str, str, str]] = set()

    def needs(self) -> Needs:
        names: set[str] = set()
        for rule in self.rules:
            exact = rule.spec.exact
            if exact is None:
                return Needs(all_metrics=True)
            names |= exact
        return Needs(metrics=frozenset(names))

    def forget(self, run_id: str) -> None:
        self._fired = {k for k in self._fired if k[1] != run_id}

    def evaluate(self, cycle: Cycle, env: EvalEnv) -> list[Signal]:
        out: list[Signal] = []
        for name, column in cycle.metrics.items():
            if not len(column) or np.isfinite(column.values).all():
                continue  # the common case: one array check for every run
            rules = [r for r in self.rules if r.spec.covers(name)]
            if not rules:
                continue
            finite = np.isfinite(column.values)
            bad = np.flatnonzero(~np.logical_and.reduceat(finite, column.starts[:-1])).tolist()
            for i in bad:
                times, values, steps = column.segment(i)
                first = int(np.flatnonzero(~np.isfinite(values))[0])
                run_id = column.keys[i][0]
                delta = cycle.runs.get(run_id)
                if delta is None:
                    continue
                for rule in rules:
                    key = (rule.name, run_id, name)
                    if key in self._fired or rule.name not in delta.rules:
                        continue
                    self._fired.add(key)
                    value = float(values[first])
                    step = int(steps[first]) if steps is not None else None
                    out.append(
                        Signal(
                            rule.name,
                            run_labels(rule, delta.run, metric=name),
                            "firing",
                            float(times[first]),
                            value,
                            run_id=run_id,
                            project=delta.run.project,
                            fields={"metric": name, "step": step},
                            evidence={"metric": name, "step": step, "value": str(value)},
                        )
                    )
        return out


KIND = Kind(
    name="non_finite",
    doc="a metric became NaN or infinite",
    fields=("metric", "step"),
    default_summary="{metric} became {value} at step {step} on run {run.name} ({run.short_id})",
    parse=parse,
    evaluators=lambda rules: [NonFiniteEvaluator(rules)] if rules else [],
)
