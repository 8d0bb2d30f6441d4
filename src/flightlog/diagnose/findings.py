"""A finding: one category, the signals behind it, a summary a person can act on, next steps.

Its confidence is never set by hand. A failure finding carries the ranker's calibrated
probability (``score``, :mod:`.ranker`), its signals the evidence behind it; any other finding's
confidence is :func:`~.signals.combine` over its signals. Two analyzers that find the same
category from different evidence (a traceback and a failed validation) merge into one finding:
the signals of the unscored one count as independent evidence on top of the score (noisy-OR).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from flightlog.diagnose.signals import MAX_CONFIDENCE, Signal, combine
from flightlog.diagnose.taxonomy import KIND_OF, NEXT_STEPS

__all__ = ["Finding", "merge_findings", "REPORT_FLOOR", "LEAD"]

#: findings below this confidence are left out of a report: they are noise, not leads
REPORT_FLOOR = 0.1
#: a finding at this confidence or more leads a report; below it, a hint
LEAD = 0.5


@dataclass
class Finding:
    category: str
    summary: str
    signals: list[Signal]
    next_steps: list[str] = field(default_factory=list)
    kind: str | None = None  # overrides the category's kind (a missing config file is software)
    context: list[dict[str, Any]] = field(default_factory=list)  # evidence that carries no weight
    #: the ranker's calibrated probability, when the finding is a failure it ranked; its signals
    #: are then evidence, and only ``added`` signals (other analyzers') add to it
    score: float | None = None
    added: list[Signal] = field(default_factory=list)
    #: fields the report carries besides the usual ones (a distributed run's ``rank``, ``culprit``,
    #: ``victims``: contract C5); ``origin`` names the analyzer and stays out of the report
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def confidence(self) -> float:
        if self.score is None:
            scores = combine(s for s in self.signals if s.category == self.category)
            return scores[0].confidence if scores else 0.0
        more = combine(s for s in self.added if s.category == self.category)
        other = more[0].confidence if more else 0.0
        return round(min(MAX_CONFIDENCE, 1.0 - (1.0 - self.score) * (1.0 - other)), 2)

    @property
    def problem_kind(self) -> str:
        return self.kind or KIND_OF.get(self.category, "software")

    def to_dict(self) -> dict[str, Any]:
        ordered = sorted(self.signals, key=lambda s: -s.weight)
        evidence = _unique([s.evidence() for s in ordered] + self.context)
        steps = _unique_text([*self.next_steps, *NEXT_STEPS.get(self.category, ())])
        out = {
            "category": self.category,
            "confidence": self.confidence,
            "summary": self.summary,
            "evidence": evidence,
            "next_steps": steps,
        }
        out.update((k, v) for k, v in self.extra.items() if k != "origin")
        return out


def merge_findings(findings: Iterable[Finding]) -> list[Finding]:
    """One finding per category (signals pooled, the strongest summary first), by confidence."""
    by_cat: dict[str, list[Finding]] = {}
    for f in findings:
        by_cat.setdefault(f.category, []).append(f)
    merged: list[Finding] = []
    for category, group in by_cat.items():
        group.sort(key=lambda f: -f.confidence)
        head = group[0]
        if len(group) > 1:
            words = [f.summary for f in group[1:] if f.summary and f.summary not in head.summary]
            scored = [f for f in group if f.score is not None]
            head = Finding(
                category,
                " ".join([head.summary, *words]),
                [s for f in group for s in f.signals],
                [step for f in group for step in f.next_steps],
                head.kind,
                [c for f in group for c in f.context],
                max((f.score for f in scored if f.score is not None), default=None),
                [s for f in group for s in (f.added if f.score is not None else f.signals)] if scored else [],
                next((f.extra for f in group if f.extra), {}),
            )
        merged.append(head)
    merged = [f for f in merged if f.confidence >= REPORT_FLOOR]
    merged.sort(key=lambda f: (-f.confidence, f.category))
    return merged


def _unique(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    seen: set[tuple[Any, ...]] = set()
    out = []
    for item in items:
        key = (item.get("source"), item.get("detail"))
        if key not in seen:
            seen.add(key)
            out.append(item)
    return out


def _unique_text(items: list[str]) -> list[str]:
    seen: set[str] = set()
    return [x for x in items if not (x in seen or seen.add(x))]  # type: ignore[func-returns-value]
