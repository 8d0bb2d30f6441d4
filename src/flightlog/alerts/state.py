"""From signals to alert episodes: the pending → firing → resolved state machine.

Each signal is about one identity (rule + labels). The tracker keeps the open episode of every
identity it watches, and writes each transition to the alert store as a compare-and-set: when
another evaluator got there first, the tracker adopts the stored state instead of repeating
the transition, so nothing fires (or notifies) twice.
"""

from __future__ import annotations

import copy
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from flightlog.alerts.kinds.base import template_run
from flightlog.alerts.rules import Rule
from flightlog.alerts.stores.base import AlertEvent, AlertStore
from flightlog.alerts.types import Alert, Signal, fingerprint
from flightlog.models import RunInfo

__all__ = ["Change", "EndIncomplete", "Tracker"]


@dataclass
class Change:
    alert: Alert  # the alert after the change
    old: str | None  # None: a new episode
    new: str  # pending | firing | resolved | dropped (a pending one whose condition cleared)
    at: float


class EndIncomplete(Exception):
    """Some of an ended run's alerts could not be ended: ``changes`` are the ones that were."""

    def __init__(self, changes: list[Change], error: Exception) -> None:
        super().__init__(f"{type(error).__name__}: {error}")
        self.changes = changes
        self.error = error


class Tracker:
    def __init__(self, store: AlertStore, rules: Mapping[str, Rule]) -> None:
        self.store = store
        self.rules = dict(rules)
        self.open: dict[str, Alert] = {}
        self.events: list[AlertEvent] = []

    def load(self, run_id: str | None = None) -> None:
        """Adopt the open episodes already stored (after a restart, or another evaluator's)."""
        for alert in self.store.open_alerts(run_id):
            if alert.rule in self.rules:
                self.open[alert.fingerprint] = alert

    def take_events(self) -> list[AlertEvent]:
        events, self.events = self.events, []
        return events

    def apply(self, signal: Signal, run: RunInfo | None, *, late: bool = False) -> list[Change]:
        """Apply one signal. ``late``: the run had ended before it was first seen — an identity
        that already has an episode is not opened again (a re-run of ``alerts watch``)."""
        rule = self.rules.get(signal.rule)
        if rule is None:
            return []
        fp = fingerprint(rule.name, signal.labels)
        current = self.open.get(fp)
        if signal.state == "clear":
            if current is None:
                current = self.store.get_open(fp)  # opened by another evaluator (an earlier run's)
                if current is None:
                    return []
                self.open[fp] = current
            return self._clear(current, signal, run)
        if current is None:
            if (signal.one_shot or late) and self.store.has_episode(fp):
                return []
            alert = self._new(fp, rule, signal, run)
            if self.store.create(alert):
                self.open[fp] = alert
                self._event(alert, alert.state, signal.at)
                changes = [Change(alert, None, alert.state, signal.at)]
                if signal.one_shot and alert.state == "firing":
                    changes += self._clear(
                        alert,
                        Signal(rule.name, signal.labels, "clear", signal.at, signal.value, reason="one_shot"),
                        run,
                    )
                return changes
            current = self.store.get_open(fp)  # another evaluator opened it first
            if current is None:
                return []
            self.open[fp] = current
        if current.state == "pending" and signal.state == "firing":
            updated = copy.copy(current)
            updated.state, updated.fired_at, updated.updated = "firing", signal.at, time.time()
            self._facts(updated, rule, signal, run)
            if self.store.update(updated, "pending"):
                self.open[fp] = updated
                self._event(updated, "firing", signal.at)
                return [Change(updated, "pending", "firing", signal.at)]
            return self._adopt(fp)
        return []

    def end_run(self, run: RunInfo, at: float) -> list[Change]:
        """The run ended: its run-scoped alerts end with it. An alert the store would not end is
        left open and the others are still ended; then :class:`EndIncomplete` carries the changes
        made, and a later call ends only what is left."""
        changes: list[Change] = []
        error: Exception | None = None
        for alert in [a for a in self.open.values() if a.labels.get("run") == run.id]:
            try:
                changes += self._clear(
                    alert, Signal(alert.rule, alert.labels, "clear", at, alert.value, reason="run_ended"), run
                )
            except Exception as exc:  # noqa: BLE001 - the store refused this one: the caller tries again
                error = exc
        if error is not None:
            raise EndIncomplete(changes, error)
        return changes

    # ── internals ───────────────────────────────────────────────────────────
    def _new(self, fp: str, rule: Rule, signal: Signal, run: RunInfo | None) -> Alert:
        alert = Alert(
            id=secrets.token_hex(8),
            fingerprint=fp,
            rule=rule.name,
            kind=rule.kind,
            severity=rule.severity,
            labels=dict(signal.labels),
            state="firing" if signal.state == "firing" else "pending",
            run_id=signal.run_id,
            project=signal.project,
            active_since=signal.since if signal.since is not None else signal.at,
            fired_at=signal.at if signal.state == "firing" else None,
            updated=time.time(),
        )
        self._facts(alert, rule, signal, run)
        return alert

    def _facts(self, alert: Alert, rule: Rule, signal: Signal, run: RunInfo | None) -> None:
        alert.value = signal.value
        if signal.run_id:
            alert.run_id = signal.run_id
        alert.evidence = dict(signal.evidence)
        alert.summary = rule.summary.render(self._template_values(rule, signal, run))

    def _template_values(self, rule: Rule, signal: Signal, run: RunInfo | None) -> dict[str, Any]:
        values: dict[str, Any] = {
            "value": signal.value,
            "rule": rule.name,
            "severity": rule.severity,
            "kind": rule.kind,
            "labels": signal.labels,
            **signal.fields,
        }
        if run is not None:
            values.update(run=template_run(run), params=run.params, tags=run.tags)
        return values

    def _clear(self, alert: Alert, signal: Signal, run: RunInfo | None) -> list[Change]:
        fp = alert.fingerprint
        if alert.state == "pending":
            if self.store.delete(alert.id, "pending"):
                self.open.pop(fp, None)
                return [Change(alert, "pending", "dropped", signal.at)]
            return self._adopt(fp)
        if alert.state != "firing":
            self.open.pop(fp, None)
            return []
        resolved = copy.copy(alert)
        resolved.state, resolved.resolved_at = "resolved", signal.at
        resolved.resolved_reason = signal.reason or "condition_cleared"
        resolved.updated = time.time()
        if signal.value is not None and signal.reason not in ("run_ended", "one_shot"):
            resolved.value = signal.value
        if self.store.update(resolved, "firing"):
            self.open.pop(fp, None)
            self._event(resolved, "resolved", signal.at, reason=resolved.resolved_reason)
            return [Change(resolved, "firing", "resolved", signal.at)]
        return self._adopt(fp)

    def _adopt(self, fp: str) -> list[Change]:
        stored = self.store.get_open(fp)
        if stored is None:
            self.open.pop(fp, None)
        else:
            self.open[fp] = stored
        return []

    def _event(self, alert: Alert, event: str, at: float, **detail: Any) -> None:
        info: dict[str, Any] = {"value": alert.value, **detail}
        if event in ("firing", "pending"):
            info["summary"] = alert.summary
        self.events.append(AlertEvent(alert.id, at, event, info))
