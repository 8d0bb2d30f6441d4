"""A rule as data: the fields every kind shares, and where the rule applies.

    - name: gpu-idle                # unique in the file
      kind: threshold               # threshold | no_improvement | non_finite | consecutive_failures
                                    # | stalled | duration | diagnosis | serving_latency
                                    # | serving_error_rate | serving_drift | serving_cohort
      severity: warning             # critical | warning | info (default warning)
      labels: {team: vision}        # added to the alert's identity and payload
      summary: "GPU {labels.gpu} of {run.name} idle"
      project: vision               # or a list; default every project
      filter: "tags.env = 'prod'"   # the run filter language (docs/filters.md)
      send_resolved: true           # default: the notifier's / the file's setting

Kind-specific fields are read by the kind's module (``flightlog.alerts.kinds``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from flightlog.alerts.templates import Template
from flightlog.query import matches, parse_filter
from flightlog.query.ast import Expr

__all__ = ["Rule", "NAME_RE", "RESERVED_LABELS"]

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,99}$")
#: labels flightlog sets itself; a rule's own labels may not use these names
RESERVED_LABELS = ("run", "project", "pipeline", "gpu", "metric", "category", "name", "stage", "alertname")


@dataclass
class Rule:
    name: str
    kind: str
    severity: str
    spec: Any  # the kind's own dataclass
    summary: Template
    labels: dict[str, str] = field(default_factory=dict)
    projects: tuple[str, ...] | None = None
    filter: str | None = None
    send_resolved: bool | None = None
    description: str | None = None
    line: int | None = None
    _expr: Expr | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.filter and self._expr is None:
            self._expr = parse_filter(self.filter)

    def applies(self, run: Mapping[str, Any], *, now: float | None = None) -> bool:
        """Whether this rule watches ``run`` (a :func:`~flightlog.alerts.delta.run_fields` dict)."""
        if self.projects is not None and run.get("project") not in self.projects:
            return False
        if self._expr is not None:
            return matches(self._expr, run, now=now)
        return True

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "severity": self.severity,
            "labels": self.labels,
            "project": list(self.projects) if self.projects else None,
            "filter": self.filter,
            "summary": self.summary.text,
            "line": self.line,
        }
