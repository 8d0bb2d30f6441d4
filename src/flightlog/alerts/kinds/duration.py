"""``duration``: a run (or one of its stages) slower than k × the median of its last successes.

    - name: slow-run
      kind: duration
      factor: 2            # k
      baseline: 10         # the last N successful runs of the same project and name
      min_runs: 3          # fewer successful runs than this: no baseline, no alert
      stage: train         # optional: compare one stage's total time instead of the run's

Live, a run fires as soon as its elapsed time passes k × median (it need not end first); a
stage is checked every ``stage_check`` (default 30s) while running, and at the end. A run
that ends slow without having been watched fires once at its end.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from flightlog.alerts.delta import RunDelta
from flightlog.alerts.kinds.base import EvalEnv, Kind, PerRun, run_labels
from flightlog.alerts.lookup import median
from flightlog.alerts.rules import Rule
from flightlog.alerts.schema import Fields
from flightlog.alerts.types import Signal
from flightlog.timefmt import format_duration

__all__ = ["KIND", "DurationSpec"]


@dataclass(frozen=True)
class DurationSpec:
    factor: float = 2.0
    baseline: int = 10
    min_runs: int = 3
    stage: str | None = None
    stage_check: float = 30.0


def parse(f: Fields) -> DurationSpec | None:
    factor = f.number("factor", default=2.0, above=0.0) or 2.0
    baseline = f.integer("baseline", default=10, minimum=1) or 10
    min_runs = f.integer("min_runs", default=3, minimum=1) or 3
    if min_runs > baseline:
        f.fail("min_runs", f"must not be more than baseline ({baseline})")
    stage = f.text("stage")
    check = f.duration("stage_check", default=30.0) or 30.0
    return DurationSpec(factor, baseline, min_runs, stage, check)


class DurationEvaluator(PerRun):
    def __init__(self, rules: Sequence[Rule]) -> None:
        super().__init__(rules)
        self._fired: set[tuple[str, str]] = set()
        self._checked: dict[tuple[str, str], float] = {}

    def forget(self, run_id: str) -> None:
        self._fired = {k for k in self._fired if k[1] != run_id}
        self._checked = {k: v for k, v in self._checked.items() if k[1] != run_id}

    def evaluate_run(self, delta: RunDelta, env: EvalEnv) -> list[Signal]:
        run = delta.run
        if run.started is None or not (delta.finished or run.status == "running"):
            return []
        out: list[Signal] = []
        for rule in self.rules:
            key = (rule.name, run.id)
            if rule.name not in delta.rules or key in self._fired:
                continue
            spec: DurationSpec = rule.spec
            if spec.stage is not None and not delta.finished:
                last = self._checked.get(key)
                if last is not None and env.now - last < spec.stage_check:
                    continue
                self._checked[key] = env.now
            history = env.lookup.baseline(run, spec.stage, spec.baseline, until=run.created if env.replay else None)
            if len(history) < spec.min_runs:
                continue
            mid = median(history)
            limit = spec.factor * mid
            if spec.stage is None:
                took = (run.ended if delta.finished and run.ended else env.now) - run.started
                at = run.started + limit
            else:
                total = env.lookup.stage_total(run.id, spec.stage)
                if total is None:
                    continue
                took, at = total, env.now if not delta.finished else (run.ended or env.now)
            if took <= limit:
                continue
            self._fired.add(key)
            out.append(
                Signal(
                    rule.name,
                    run_labels(rule, run, **({"stage": spec.stage} if spec.stage else {})),
                    "firing",
                    min(at, env.now),
                    took,
                    run_id=run.id,
                    project=run.project,
                    one_shot=delta.finished,
                    fields={
                        "median": format_duration(mid),
                        "factor": spec.factor,
                        "duration": format_duration(took),
                        "stage": spec.stage or "run",
                        "baseline_runs": len(history),
                    },
                    evidence={
                        "seconds": took,
                        "median_seconds": mid,
                        "factor": spec.factor,
                        "baseline": history,
                        "stage": spec.stage,
                    },
                )
            )
        return out


KIND = Kind(
    name="duration",
    doc="a run or a stage slower than k × the median of its last successful runs",
    fields=("median", "factor", "duration", "stage", "baseline_runs"),
    default_summary="{stage} of run {run.name} ({run.short_id}) took {duration}, over {factor}× the median "
    "{median} of its last {baseline_runs} successful runs",
    parse=parse,
    evaluators=lambda rules: [DurationEvaluator(rules)] if rules else [],
)
