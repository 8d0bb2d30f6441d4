"""What a notification says: the generic JSON payload (documented in docs/alerting.md) and the
plain-text renderings that Slack, email and command hooks build on.

One notification carries one group of alerts (by default: the alerts of one run) that changed
together: newly firing, still firing at a repeat, or resolved.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from flightlog.alerts.types import Alert, json_number
from flightlog.timefmt import iso

__all__ = ["Notification", "AlertView", "PAYLOAD_VERSION", "webhook_payload", "title", "text_lines"]

PAYLOAD_VERSION = "1"


@dataclass
class AlertView:
    """An alert as a notification shows it: the stored episode plus its run and a link."""

    alert: Alert
    run: dict[str, Any] | None = None  # id, name, project, status
    link: str | None = None
    status: str = "firing"  # what this notification says of it: firing | resolved

    def to_dict(self) -> dict[str, Any]:
        a = self.alert
        return {
            "id": a.id,
            "fingerprint": a.fingerprint,
            "status": self.status,
            "rule": a.rule,
            "kind": a.kind,
            "severity": a.severity,
            "labels": dict(a.labels),
            "summary": a.summary,
            "value": json_number(a.value),
            "starts_at": iso(a.fired_at),
            "ends_at": iso(a.resolved_at),
            "resolved_reason": a.resolved_reason,
            "run": self.run,
            "link": self.link,
            "evidence": a.evidence,
        }


@dataclass
class Notification:
    reason: str  # new | repeat | resolved | mixed
    group_key: str
    group_labels: dict[str, str]
    alerts: list[AlertView]
    external_url: str | None = None
    sent_at: float = field(default_factory=time.time)

    @property
    def status(self) -> str:
        return "firing" if any(v.status == "firing" for v in self.alerts) else "resolved"

    @property
    def firing(self) -> list[AlertView]:
        return [v for v in self.alerts if v.status == "firing"]

    @property
    def resolved(self) -> list[AlertView]:
        return [v for v in self.alerts if v.status == "resolved"]


def webhook_payload(n: Notification) -> dict[str, Any]:
    return {
        "version": PAYLOAD_VERSION,
        "source": "flightlog",
        "status": n.status,
        "reason": n.reason,
        "group_key": n.group_key,
        "group_labels": n.group_labels,
        "title": title(n),
        "alerts": [v.to_dict() for v in n.alerts],
        "external_url": n.external_url,
        "sent_at": iso(n.sent_at),
    }


def title(n: Notification) -> str:
    """``[FIRING:2] gpu-idle, loss-nan · vision/train.py`` (the subject line of every notifier)."""
    firing = n.firing
    shown = firing or n.resolved
    rules = list(dict.fromkeys(v.alert.rule for v in shown))
    head = f"[FIRING:{len(firing)}]" if firing else f"[RESOLVED:{len(shown)}]"
    if n.reason == "repeat":
        head += " (still firing)"
    where = ""
    run = next((v.run for v in shown if v.run), None)
    if run:
        where = f" · {run.get('project')}/{run.get('name') or run.get('id', '')[:8]}"
    elif "project" in n.group_labels:
        where = f" · {n.group_labels['project']}"
    names = ", ".join(rules[:3]) + (f" +{len(rules) - 3}" if len(rules) > 3 else "")
    return f"{head} {names}{where}"


def text_lines(n: Notification) -> list[str]:
    """One line per alert, then where to look."""
    lines = []
    for v in n.alerts:
        a = v.alert
        mark = "RESOLVED" if v.status == "resolved" else a.severity.upper()
        when = iso(a.resolved_at if v.status == "resolved" else a.fired_at)
        lines.append(f"{mark} {a.rule}: {a.summary} (since {when})")
        if v.link:
            lines.append(f"  {v.link}")
        elif v.run:
            lines.append(f"  flightlog runs show {v.run.get('id')}  ·  flightlog alerts ls --run {v.run.get('id')}")
    return lines
