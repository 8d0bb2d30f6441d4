"""Alerts of a flightlog server, read (and silenced) through its API: what the CLI uses when
``FLIGHTLOG_URL`` is set. The server evaluates; this side only reads and manages silences."""

from __future__ import annotations

import time
from typing import Any

from flightlog.alerts.silences import Silence
from flightlog.alerts.types import Alert
from flightlog.errors import InvalidInput, NotFound
from flightlog.timefmt import parse_time

__all__ = ["HttpAlertStore"]


def _t(value: Any) -> float | None:
    return None if value is None else parse_time(str(value))


def _alert(d: dict[str, Any]) -> Alert:
    value = d.get("value")
    return Alert(
        id=d["id"],
        fingerprint=d["fingerprint"],
        rule=d["rule"],
        kind=d["kind"],
        severity=d["severity"],
        labels=d.get("labels") or {},
        state=d["state"],
        run_id=d.get("run_id"),
        project=d.get("project"),
        value=float(value) if value is not None else None,
        summary=d.get("summary") or "",
        evidence=d.get("evidence") or {},
        active_since=_t(d.get("active_since")),
        fired_at=_t(d.get("fired_at")),
        resolved_at=_t(d.get("resolved_at")),
        resolved_reason=d.get("resolved_reason"),
        notified_at=_t(d.get("notified_at")),
        silenced_by=d.get("silenced_by"),
    )


def _silence(d: dict[str, Any]) -> Silence:
    return Silence(
        d["id"],
        d["rule"],
        d.get("labels") or {},
        _t(d.get("starts_at")) or 0.0,
        _t(d.get("ends_at")) or 0.0,
        _t(d.get("created")) or 0.0,
        d.get("author"),
        d.get("comment"),
    )


class HttpAlertStore:
    def __init__(self, store: Any) -> None:
        self.http = store.http

    def _readonly(self, *args: Any, **kwargs: Any) -> Any:
        raise InvalidInput("alerts of a server are evaluated by the server; this client only reads them")

    create = update = delete = get_open = has_episode = open_alerts = claim = add_events = _readonly

    def alerts(
        self,
        *,
        state: str | None = None,
        run_id: str | None = None,
        project: str | None = None,
        rule: str | None = None,
        limit: int | None = None,
    ) -> list[Alert]:
        params = {
            k: v
            for k, v in {"state": state, "run": run_id, "project": project, "rule": rule, "limit": limit}.items()
            if v is not None
        }
        return [_alert(a) for a in self.http.json("GET", "/alerts", params=params)["alerts"]]

    def events(
        self, *, run_id: str | None = None, alert_id: str | None = None, limit: int | None = None
    ) -> list[dict[str, Any]]:
        params = {k: v for k, v in {"run": run_id, "limit": limit}.items() if v is not None}
        events: list[dict[str, Any]] = self.http.json("GET", "/alerts/history", params=params)["events"]
        return [e for e in events if alert_id is None or e.get("alert_id") == alert_id]

    def add_silence(self, silence: Silence) -> None:
        body = {
            "rule": silence.rule,
            "for": max(0.001, silence.ends - time.time()),
            "labels": silence.matchers,
            "comment": silence.comment,
            "author": silence.author,
        }
        created = self.http.json("POST", "/alerts/silences", json=body)
        silence.id = created["id"]

    def silences(self, *, include_expired: bool = False, now: float | None = None) -> list[Silence]:
        data = self.http.json("GET", "/alerts/silences", params={"all": "true" if include_expired else "false"})
        return [_silence(s) for s in data["silences"]]

    def expire_silence(self, silence_id: str, now: float | None = None) -> bool:
        try:
            self.http.json("DELETE", f"/alerts/silences/{silence_id}")
        except NotFound:
            return False
        return True
