"""``triage``: a new cause of failure, or one that is growing fast.

    - name: new-failure-cause
      kind: triage
      new: true          # fire when a run fails of a cause not seen in the lookback (default true)
      lookback: 7d       # how far back "seen before" looks (default 7d)
      count: 5           # and fire when a cause reaches this many failures ...
      window: 1h         # ... within this window (default 5 in 1h; count: 0 turns it off)

Evaluated when a run ends failed, crashed or killed: its cause signature
(:mod:`flightlog.triage.signature`, the same as ``flightlog triage``'s groups) is compared
with those of the project's other failures in the lookback, read in one query of the runs
listing. The alert is about the cause, not the run (labels ``project`` and ``signature``, the
group's id in ``flightlog triage``); each is one-shot: a new cause fires once, and a growing
one fires when its count in the window reaches ``count`` (not again for every later failure
until it has dropped below and come back).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from flightlog.alerts.delta import RunDelta
from flightlog.alerts.kinds.base import EvalEnv, Kind, PerRun
from flightlog.alerts.schema import Fields
from flightlog.alerts.types import Signal
from flightlog.models import RunInfo
from flightlog.timefmt import format_duration, iso
from flightlog.triage.groups import FAILURE_STATUSES, failure_time, failures_filter, quote, signature_of

__all__ = ["KIND", "TriageSpec", "MAX_HISTORY"]

#: the most earlier failures one evaluation reads (the newest of the lookback)
MAX_HISTORY = 5000


@dataclass(frozen=True)
class TriageSpec:
    new: bool = True
    lookback: float = 7 * 86400.0
    count: int = 5
    window: float = 3600.0


def parse(f: Fields) -> TriageSpec | None:
    new = f.flag("new", default=True)
    lookback = f.duration("lookback", default=7 * 86400.0) or 7 * 86400.0
    count = f.integer("count", default=5, minimum=0)
    window = f.duration("window", default=3600.0) or 3600.0
    if count is None:
        count = 5
    if not new and count == 0:
        f.fail("count", "with new: false, count must be at least 1 (else the rule never fires)")
    return TriageSpec(new, lookback, count, window)


class TriageEvaluator(PerRun):
    def __init__(self, rules: Any) -> None:
        super().__init__(rules)
        self._categories: dict[Any, str] = {}  # the classifier's answers, by the other parts of a signature

    def _history(self, run: RunInfo, env: EvalEnv, lookback: float, at: float) -> list[RunInfo]:
        """The project's failures in the lookback up to this run's end, newest first."""
        clause = failures_filter(at - lookback) + f" and created <= {quote(iso(at + 0.001) or '')}"
        return env.lookup.store.search_runs(project=run.project, filter=clause, order_by="-created", limit=MAX_HISTORY)

    def evaluate_run(self, delta: RunDelta, env: EvalEnv) -> list[Signal]:
        run = delta.run
        if not delta.finished or run.status not in FAILURE_STATUSES:
            return []
        rules = [r for r in self.rules if r.name in delta.rules]
        if not rules:
            return []
        at = failure_time(run) if run.ended is not None else env.now
        sig = signature_of(run, cache=self._categories)
        lookback = max(max(r.spec.lookback, r.spec.window) for r in rules)
        history = [r for r in self._history(run, env, lookback, at) if r.id != run.id and failure_time(r) <= at]
        same = [r for r in history if signature_of(r, cache=self._categories).id == sig.id]
        out: list[Signal] = []
        for rule in rules:
            spec: TriageSpec = rule.spec
            seen = [r for r in same if failure_time(r) >= at - spec.lookback]
            recent = [r for r in same if failure_time(r) >= at - spec.window]
            reason = None
            if spec.new and not seen:
                reason = "new"
            elif spec.count and len(recent) + 1 == spec.count:
                reason = "growing"  # the count reached the threshold with this failure
            if reason is None:
                continue
            runs = [run.id, *(r.id for r in recent)]
            labels = dict(rule.labels)
            labels.update(project=run.project, signature=sig.id)
            out.append(
                Signal(
                    rule.name,
                    labels,
                    "firing",
                    at,
                    float(len(runs)),
                    run_id=run.id,
                    project=run.project,
                    fields={
                        "reason": reason,
                        "signature": sig.text,
                        "signature_id": sig.id,
                        "category": sig.category,
                        "count": len(runs),
                        "window": format_duration(spec.window),
                        "project": run.project,
                    },
                    evidence={"runs": runs, "signature": sig.to_dict()},
                    one_shot=True,
                )
            )
        return out


KIND = Kind(
    name="triage",
    doc="a run failed of a cause not seen in the lookback, or a cause reached N failures in a window",
    fields=("reason", "signature", "signature_id", "category", "count", "window", "project"),
    default_summary="{reason} failure cause in {project}: {signature} ({count} in {window}; latest run {run.short_id})",
    parse=parse,
    evaluators=lambda rules: [TriageEvaluator(rules)] if rules else [],
    run_scoped=False,
)
