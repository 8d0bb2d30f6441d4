"""The shared vocabulary of alerting: severities, states, signals and alerts.

A rule's evaluator looks at a run's new evidence and emits :class:`Signal`\\ s — "this series
is now pending / firing / clear, at this time, with this value". The tracker
(:mod:`flightlog.alerts.state`) turns signals into stored :class:`Alert` episodes with
Prometheus/Alertmanager states, and the router turns state changes into notifications.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from flightlog.timefmt import iso

__all__ = [
    "SEVERITIES",
    "STATES",
    "Severity",
    "AlertState",
    "SignalState",
    "Signal",
    "Alert",
    "fingerprint",
    "severity_rank",
    "json_number",
]

SEVERITIES = ("critical", "warning", "info")
STATES = ("pending", "firing", "resolved")
Severity = Literal["critical", "warning", "info"]
AlertState = Literal["pending", "firing", "resolved"]
SignalState = Literal["pending", "firing", "clear"]


def severity_rank(severity: str) -> int:
    """critical 3, warning 2, info 1 (so ``>=`` reads as 'at least as severe')."""
    return {"critical": 3, "warning": 2, "info": 1}.get(severity, 0)


def fingerprint(rule: str, labels: Mapping[str, str]) -> str:
    """The identity of an alert: its rule and its labels (order does not matter)."""
    text = json.dumps([rule, sorted(labels.items())], separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def json_number(value: float | None) -> float | str | None:
    """JSON has no NaN/inf: they become "NaN", "Infinity", "-Infinity" (as everywhere in flightlog)."""
    if value is None or math.isfinite(value):
        return value
    if math.isnan(value):
        return "NaN"
    return "Infinity" if value > 0 else "-Infinity"


@dataclass
class Signal:
    """What an evaluator saw for one identity (rule + labels) at one instant.

    ``state`` is ``pending`` (the condition holds, ``for:`` has not elapsed), ``firing`` or
    ``clear``. ``at`` is the time the state began (data time: a point's or a sample's time).
    ``since`` is when the condition started to hold (the start of pending).
    """

    rule: str
    labels: dict[str, str]
    state: SignalState
    at: float
    value: float | None = None
    since: float | None = None
    run_id: str | None = None
    project: str | None = None
    fields: dict[str, Any] = field(default_factory=dict)  # extra template fields: step, best, median, ...
    evidence: dict[str, Any] = field(default_factory=dict)
    reason: str | None = None  # for clear: why (condition_cleared, run_ended, ...)
    one_shot: bool = False  # fires once and is resolved at once, without a resolved notification


@dataclass
class Alert:
    """One episode of an alert: pending → firing → resolved (a later return is a new episode)."""

    id: str
    fingerprint: str
    rule: str
    kind: str
    severity: str
    labels: dict[str, str]
    state: AlertState
    run_id: str | None = None
    project: str | None = None
    value: float | None = None
    summary: str = ""
    evidence: dict[str, Any] = field(default_factory=dict)
    active_since: float | None = None
    fired_at: float | None = None
    resolved_at: float | None = None
    resolved_reason: str | None = None
    updated: float | None = None
    notified_at: float | None = None  # last successful claim of a firing notification (for repeats)
    resolved_notified_at: float | None = None
    silenced_by: str | None = None

    @property
    def is_open(self) -> bool:
        return self.state in ("pending", "firing")

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "fingerprint": self.fingerprint,
            "rule": self.rule,
            "kind": self.kind,
            "severity": self.severity,
            "state": self.state,
            "labels": dict(self.labels),
            "run_id": self.run_id,
            "project": self.project,
            "value": json_number(self.value),
            "summary": self.summary,
            "active_since": iso(self.active_since),
            "fired_at": iso(self.fired_at),
            "resolved_at": iso(self.resolved_at),
            "resolved_reason": self.resolved_reason,
            "notified_at": iso(self.notified_at),
            "silenced_by": self.silenced_by,
            "evidence": self.evidence,
        }
