"""``consecutive_failures``: the same job failed N times in a row.

    - name: keeps-failing
      kind: consecutive_failures
      count: 3
      group_by: name          # name (same project and name) | pipeline (top-level runs of a
                              # name: a pipeline and its steps count once) | project
      statuses: [failed, crashed, killed]   # what counts as a failure (default)

Evaluated when a run ends. The alert is about the group, not one run (labels ``project`` and,
unless grouped by project, ``name``): it fires once when the streak reaches ``count`` and
resolves when a run of the group succeeds. Runs that were stopped (Ctrl-C) neither extend
nor break a streak.
"""

from __future__ import annotations

from dataclasses import dataclass

from flightlog.alerts.delta import RunDelta
from flightlog.alerts.kinds.base import EvalEnv, Kind, PerRun
from flightlog.alerts.lookup import FAILED_STATUSES
from flightlog.alerts.schema import Fields
from flightlog.alerts.types import Signal
from flightlog.statuses import UNSUCCESSFUL_STATUSES

__all__ = ["KIND", "FailuresSpec", "GROUPS"]

GROUPS = ("name", "pipeline", "project")


@dataclass(frozen=True)
class FailuresSpec:
    count: int = 3
    group_by: str = "name"
    statuses: tuple[str, ...] = FAILED_STATUSES


def parse(f: Fields) -> FailuresSpec | None:
    count = f.integer("count", default=3, minimum=1) or 3
    group_by = f.choice("group_by", GROUPS, default="name") or "name"
    statuses = f.text_list("statuses", choices=UNSUCCESSFUL_STATUSES) or list(FAILED_STATUSES)
    return FailuresSpec(count, group_by, tuple(statuses))


class FailuresEvaluator(PerRun):
    def evaluate_run(self, delta: RunDelta, env: EvalEnv) -> list[Signal]:
        if not delta.finished:
            return []
        run = delta.run
        out: list[Signal] = []
        for rule in self.rules:
            spec: FailuresSpec = rule.spec
            if rule.name not in delta.rules or (spec.group_by == "pipeline" and run.parent_id):
                continue
            if run.status not in spec.statuses and run.status != "succeeded":
                continue
            labels = dict(rule.labels)
            labels["project"] = run.project
            group = run.project
            if spec.group_by != "project":
                labels["name"] = run.name or ""
                group = f"{run.project}/{run.name or ''}"
            at = run.ended or env.now
            if run.status == "succeeded":
                out.append(
                    Signal(
                        rule.name,
                        labels,
                        "clear",
                        at,
                        0.0,
                        run_id=run.id,
                        project=run.project,
                        reason="succeeded",
                        fields={"count": 0, "group": group, "group_by": spec.group_by},
                    )
                )
                continue
            window = max(spec.count, 20)
            recent = env.lookup.recent(
                run, spec.group_by, (*spec.statuses, "succeeded"), limit=window, until=run.ended
            )  # the streak as of this run's end
            if not any(r.id == run.id for r in recent):
                recent = [run, *recent][:window]  # the store may not have caught up with this run's end
            streak = []
            for r in recent:
                if r.status == "succeeded":
                    break
                streak.append(r)
            if len(streak) < spec.count:
                continue
            ids = [r.id for r in streak]
            out.append(
                Signal(
                    rule.name,
                    labels,
                    "firing",
                    at,
                    float(len(streak)),
                    run_id=run.id,
                    project=run.project,
                    fields={"count": len(streak), "group": group, "group_by": spec.group_by},
                    evidence={
                        "runs": ids,
                        "statuses": [r.status for r in streak],
                        "failures": [(r.failure or {}).get("category") for r in streak],
                    },
                )
            )
        return out


KIND = Kind(
    name="consecutive_failures",
    doc="runs of the same name, pipeline or project failed N times in a row",
    fields=("count", "group", "group_by"),
    default_summary="{group} failed {count} times in a row (latest: run {run.short_id}, {run.status})",
    parse=parse,
    evaluators=lambda rules: [FailuresEvaluator(rules)] if rules else [],
    run_scoped=False,
)
