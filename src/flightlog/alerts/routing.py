"""From state changes to notifications: silences, claims, repeats, grouping, notifier routes.

Per evaluation cycle:

1. an alert that started firing is notified (unless silenced) — claimed in the store first,
   so with two evaluators on one store only one sends it;
2. an alert still firing is notified again once ``repeat_interval`` has passed since its last
   notification, and for the first time when a silence that held it back has ended;
3. a resolved alert is notified as resolved only if its firing was notified in an earlier
   notification (an alert that fires and ends between two evaluations, or a one-shot alert
   such as a diagnosis, is sent once, as firing, with its end time);
4. what each notifier takes (severity, labels, rules, send_resolved) is grouped by the labels
   of ``settings.group_by`` (default: the run) into one notification per group.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from flightlog.alerts.config import AlertConfig
from flightlog.alerts.notifiers import Notifier
from flightlog.alerts.payload import AlertView, Notification
from flightlog.alerts.silences import Silence, first_match
from flightlog.alerts.state import Change
from flightlog.alerts.stores.base import AlertEvent, AlertStore
from flightlog.alerts.types import Alert

__all__ = ["Router", "Pending"]


@dataclass
class Pending:
    """A notification ready for one notifier."""

    notifier: Notifier
    notification: Notification


class Router:
    def __init__(
        self, config: AlertConfig, store: AlertStore, run_info: Callable[[str], dict[str, object] | None]
    ) -> None:
        self.config = config
        self.store = store
        self.run_info = run_info
        self.events: list[AlertEvent] = []

    def route(self, changes: Sequence[Change], open_alerts: Sequence[Alert], now: float) -> list[Pending]:
        settings = self.config.settings
        silences = self.store.silences(now=now) if (changes or open_alerts) else []
        items: list[tuple[Alert, str, str]] = []  # (alert, status, reason)
        fired_now: set[str] = set()
        for change in changes:
            alert = change.alert
            if change.new == "firing":
                if self._silenced(alert, silences, now):
                    continue
                if self.store.claim(alert.id, "notified_at", None, now):
                    alert.notified_at = now
                    fired_now.add(alert.id)
                    items.append((alert, "firing", "new"))
            elif change.new == "resolved":
                if alert.id in fired_now:
                    continue  # fired and ended in one cycle: its firing item carries the end time
                if alert.notified_at is None or self._silenced(alert, silences, now):
                    continue
                if self.store.claim(alert.id, "resolved_notified_at", None, now):
                    items.append((alert, "resolved", "resolved"))
        for alert in open_alerts:
            if alert.state != "firing" or alert.id in fired_now:
                continue
            if alert.notified_at is not None and now - alert.notified_at < settings.repeat_interval:
                continue
            if self._silenced(alert, silences, now):
                continue
            reason = "new" if alert.notified_at is None else "repeat"
            if self.store.claim(alert.id, "notified_at", alert.notified_at, now):
                alert.notified_at = now
                items.append((alert, "firing", reason))
            else:
                stored = self.store.get_open(alert.fingerprint)
                if stored is not None:
                    alert.notified_at = stored.notified_at
        return self._group(items, now)

    def _silenced(self, alert: Alert, silences: Sequence[Silence], now: float) -> bool:
        silence = first_match(alert, silences, now)
        if silence is None:
            return False
        if alert.silenced_by != silence.id:
            alert.silenced_by = silence.id
            self.store.update(alert, alert.state)
            self.events.append(AlertEvent(alert.id, now, "silenced", {"silence": silence.id}))
        return True

    def _send_resolved(self, alert: Alert, notifier: Notifier) -> bool:
        rule = self.config.rule(alert.rule)
        wanted = (
            rule.send_resolved
            if rule is not None and rule.send_resolved is not None
            else self.config.settings.send_resolved
        )
        return wanted and notifier.route.send_resolved

    def _group(self, items: list[tuple[Alert, str, str]], now: float) -> list[Pending]:
        if not items:
            return []
        out: list[Pending] = []
        group_by = self.config.settings.group_by
        external = self.config.settings.external_url
        for notifier in self.config.notifiers:
            groups: dict[str, tuple[dict[str, str], list[AlertView], set[str]]] = {}
            for alert, status, reason in items:
                if not notifier.route.takes(alert):
                    continue
                if status == "resolved" and not self._send_resolved(alert, notifier):
                    continue
                labels = {k: alert.labels[k] for k in group_by if k in alert.labels} or {"rule": alert.rule}
                key = ",".join(f"{k}={v}" for k, v in sorted(labels.items()))
                entry = groups.setdefault(key, (labels, [], set()))
                run = self.run_info(alert.run_id) if alert.run_id else None
                link = f"{external}/runs/{alert.run_id}" if external and alert.run_id else None
                entry[1].append(AlertView(alert, run, link, status))
                entry[2].add(reason)
            for key, (labels, views, reasons) in groups.items():
                reason = reasons.pop() if len(reasons) == 1 else "mixed"
                out.append(Pending(notifier, Notification(reason, key, labels, views, external, now)))
        return out
