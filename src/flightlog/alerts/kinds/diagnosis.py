"""``diagnosis``: when a run ends, a diagnosis finding of given categories (flightlog diagnose).

    - name: oom
      kind: diagnosis
      categories: [oom_killed, memory_leak]   # default: any category
      min_confidence: 0.7                     # default 0.5 (a lead, not a hint)

One alert per run and category, fired once at the run's end (it is about a finished run, so
it is resolved at once and never sends a "resolved" notification). The finding's summary,
evidence and next steps travel in the alert's evidence.
"""

from __future__ import annotations

from dataclasses import dataclass

from flightlog.alerts.delta import RunDelta
from flightlog.alerts.kinds.base import EvalEnv, Kind, PerRun, run_labels
from flightlog.alerts.schema import Fields
from flightlog.alerts.types import Signal

__all__ = ["KIND", "DiagnosisSpec", "CATEGORIES"]


def _categories() -> tuple[str, ...]:
    try:
        from flightlog.diagnose.taxonomy import CATEGORIES as names
    except ImportError:  # diagnosis not installed in this build
        return ()
    return tuple(names)


CATEGORIES = _categories()


@dataclass(frozen=True)
class DiagnosisSpec:
    categories: tuple[str, ...] | None = None
    min_confidence: float = 0.5


def parse(f: Fields) -> DiagnosisSpec | None:
    cats = f.text_list("categories", choices=CATEGORIES or None)
    if f.has("category"):
        cats = (cats or []) + (f.text_list("category", choices=CATEGORIES or None) or [])
    confidence = f.number("min_confidence", default=0.5, minimum=0.0)
    if confidence is not None and confidence > 1:
        f.fail("min_confidence", "must be from 0 to 1")
        confidence = 0.5
    return DiagnosisSpec(tuple(cats) if cats else None, confidence if confidence is not None else 0.5)


class DiagnosisEvaluator(PerRun):
    def evaluate_run(self, delta: RunDelta, env: EvalEnv) -> list[Signal]:
        rules = [r for r in self.rules if r.name in delta.rules]
        if not delta.finished or not rules:
            return []
        report = env.lookup.diagnose(delta.run.id)
        if not report:
            return []
        run = delta.run
        out: list[Signal] = []
        for finding in report.get("findings") or []:
            category, confidence = finding.get("category"), finding.get("confidence") or 0.0
            for rule in rules:
                spec: DiagnosisSpec = rule.spec
                if spec.categories is not None and category not in spec.categories:
                    continue
                if confidence < spec.min_confidence:
                    continue
                out.append(
                    Signal(
                        rule.name,
                        run_labels(rule, run, category=str(category)),
                        "firing",
                        run.ended or env.now,
                        float(confidence),
                        run_id=run.id,
                        project=run.project,
                        one_shot=True,
                        fields={
                            "category": category,
                            "confidence": confidence,
                            "finding": finding.get("summary") or "",
                        },
                        evidence={"finding": finding, "kind": report.get("kind")},
                    )
                )
        return out


KIND = Kind(
    name="diagnosis",
    doc="a diagnosis finding of given categories at or above a confidence, when a run ends",
    fields=("category", "confidence", "finding"),
    default_summary="run {run.name} ({run.short_id}) {run.status}: {category} ({confidence:.0%}): {finding}",
    parse=parse,
    evaluators=lambda rules: [DiagnosisEvaluator(rules)] if rules else [],
)
