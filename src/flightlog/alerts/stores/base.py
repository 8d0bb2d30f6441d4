"""Where alerts live: episodes, their history, and silences, behind one small protocol.

Every state change is a compare-and-set (``update(alert, expected_state)``), so when two
evaluators watch the same store (a runner and a server on one FLIGHTLOG_HOME), exactly one of
them wins each transition — and only the winner notifies. That is how an alert is delivered
once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from flightlog.alerts.silences import Silence
from flightlog.alerts.types import Alert

__all__ = ["AlertStore", "AlertEvent", "CLAIMS"]

#: the notification marks a claim may set
CLAIMS = ("notified_at", "resolved_notified_at")


@dataclass
class AlertEvent:
    alert_id: str
    time: float
    event: str  # pending | firing | resolved | notified | notify_failed | silenced
    detail: dict[str, Any] = field(default_factory=dict)


class AlertStore(Protocol):
    def create(self, alert: Alert) -> bool:
        """Store a new open episode; False when the identity already has one open."""
        ...

    def update(self, alert: Alert, expected_state: str) -> bool:
        """Write the alert's state and facts if its stored state is still ``expected_state``."""
        ...

    def delete(self, alert_id: str, expected_state: str) -> bool: ...
    def get_open(self, fingerprint: str) -> Alert | None: ...
    def has_episode(self, fingerprint: str) -> bool: ...
    def open_alerts(self, run_id: str | None = None) -> list[Alert]: ...

    def claim(self, alert_id: str, column: str, expected: float | None, value: float) -> bool:
        """Set a notification mark (``CLAIMS``) if it still holds ``expected``: who notifies."""
        ...

    def add_events(self, events: Sequence[AlertEvent]) -> None: ...
    def alerts(
        self,
        *,
        state: str | None = None,
        run_id: str | None = None,
        project: str | None = None,
        rule: str | None = None,
        limit: int | None = None,
    ) -> list[Alert]: ...
    def events(
        self, *, run_id: str | None = None, alert_id: str | None = None, limit: int | None = None
    ) -> list[dict[str, Any]]: ...
    def add_silence(self, silence: Silence) -> None: ...
    def silences(self, *, include_expired: bool = False, now: float | None = None) -> list[Silence]: ...
    def expire_silence(self, silence_id: str, now: float | None = None) -> bool: ...
