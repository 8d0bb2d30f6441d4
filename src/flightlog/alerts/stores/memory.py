"""Alerts kept in memory: for ``alerts test`` (a replay must not touch the real history) and
for tests of the state machine."""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Sequence
from typing import Any

from flightlog.alerts.silences import Silence
from flightlog.alerts.stores.base import CLAIMS, AlertEvent
from flightlog.alerts.types import Alert
from flightlog.timefmt import iso

__all__ = ["MemoryAlertStore"]


class MemoryAlertStore:
    def __init__(self) -> None:
        self._alerts: dict[str, Alert] = {}
        self._events: list[AlertEvent] = []
        self._silences: dict[str, Silence] = {}
        self._lock = threading.Lock()

    def create(self, alert: Alert) -> bool:
        with self._lock:
            if any(a.fingerprint == alert.fingerprint and a.is_open for a in self._alerts.values()):
                return False
            self._alerts[alert.id] = copy.deepcopy(alert)
            return True

    def update(self, alert: Alert, expected_state: str) -> bool:
        with self._lock:
            current = self._alerts.get(alert.id)
            if current is None or current.state != expected_state:
                return False
            keep = {c: getattr(current, c) for c in CLAIMS}
            self._alerts[alert.id] = copy.deepcopy(alert)
            for c, v in keep.items():
                setattr(self._alerts[alert.id], c, v)
            return True

    def delete(self, alert_id: str, expected_state: str) -> bool:
        with self._lock:
            current = self._alerts.get(alert_id)
            if current is None or current.state != expected_state:
                return False
            del self._alerts[alert_id]
            return True

    def get_open(self, fingerprint: str) -> Alert | None:
        with self._lock:
            for a in self._alerts.values():
                if a.fingerprint == fingerprint and a.is_open:
                    return copy.deepcopy(a)
        return None

    def has_episode(self, fingerprint: str) -> bool:
        with self._lock:
            return any(a.fingerprint == fingerprint for a in self._alerts.values())

    def open_alerts(self, run_id: str | None = None) -> list[Alert]:
        return [a for a in self.alerts(run_id=run_id) if a.is_open]

    def claim(self, alert_id: str, column: str, expected: float | None, value: float) -> bool:
        if column not in CLAIMS:
            raise ValueError(column)
        with self._lock:
            current = self._alerts.get(alert_id)
            if current is None or getattr(current, column) != expected:
                return False
            setattr(current, column, value)
            return True

    def add_events(self, events: Sequence[AlertEvent]) -> None:
        with self._lock:
            self._events.extend(events)

    def alerts(
        self,
        *,
        state: str | None = None,
        run_id: str | None = None,
        project: str | None = None,
        rule: str | None = None,
        limit: int | None = None,
    ) -> list[Alert]:
        with self._lock:
            out = [
                copy.deepcopy(a)
                for a in self._alerts.values()
                if (state is None or a.state == state)
                and (run_id is None or a.run_id == run_id)
                and (project is None or a.project == project)
                and (rule is None or a.rule == rule)
            ]
        out.sort(key=lambda a: -(a.updated or 0.0))
        return out[:limit] if limit is not None else out

    def events(
        self, *, run_id: str | None = None, alert_id: str | None = None, limit: int | None = None
    ) -> list[dict[str, Any]]:
        with self._lock:
            rows = []
            for e in self._events:
                a = self._alerts.get(e.alert_id)
                if alert_id is not None and e.alert_id != alert_id:
                    continue
                if run_id is not None and (a is None or a.run_id != run_id):
                    continue
                rows.append(
                    {
                        "alert_id": e.alert_id,
                        "time": iso(e.time),
                        "event": e.event,
                        "detail": e.detail,
                        "rule": a.rule if a else None,
                        "run_id": a.run_id if a else None,
                        "labels": dict(a.labels) if a else {},
                    }
                )
        return rows[-limit:] if limit else rows

    def add_silence(self, silence: Silence) -> None:
        with self._lock:
            self._silences[silence.id] = copy.deepcopy(silence)

    def silences(self, *, include_expired: bool = False, now: float | None = None) -> list[Silence]:
        now = time.time() if now is None else now
        with self._lock:
            return [copy.deepcopy(s) for s in self._silences.values() if include_expired or s.ends > now]

    def expire_silence(self, silence_id: str, now: float | None = None) -> bool:
        now = time.time() if now is None else now
        with self._lock:
            s = self._silences.get(silence_id)
            if s is None:
                return False
            s.ends = min(s.ends, now)
            return True
